"""What the filings of the user's largest holdings say: the holdings from their own rows,
then one search of each company's filings, the passages gathered in one result."""

from __future__ import annotations

from services.tools.portfolio import AccountNotFound, largest_holdings
from services.tools.tool_deps import ToolDeps
from shared.contracts.tool_results import ToolError, ToolResult
from shared.tools import SEARCH_HOLDINGS_DOCUMENTS, SearchDocumentsArgs, SearchHoldingsDocumentsArgs


async def run(args: SearchHoldingsDocumentsArgs, deps: ToolDeps) -> ToolResult:
    try:
        symbols, facts, sources = await largest_holdings(deps.user_book, args)
    except AccountNotFound as problem:
        # An account the user does not have (or none yet) is their answer, as for every
        # portfolio tool, not a failure of the stage to retry.
        return ToolResult(
            tool=SEARCH_HOLDINGS_DOCUMENTS,
            arguments=args,
            error=ToolError(code=problem.code, message=problem.message),
        )
    result = ToolResult(
        tool=SEARCH_HOLDINGS_DOCUMENTS, arguments=args, facts=facts, sources=sources
    )
    if not symbols:
        result.missing.append("you hold no priced positions to look up")
    for symbol in symbols:
        search = SearchDocumentsArgs(
            query=args.query,
            symbols=[symbol],
            forms=args.forms,
            fiscal_year=args.fiscal_year,
            limit=args.limit,
        )
        found = await deps.search.search(deps.db, search, deps.user_id)
        result.passages.extend(found.passages)
        result.sources.extend(found.sources)
        result.missing.extend(found.missing)
        if found.error is not None and result.error is None:
            result.error = found.error
    return result
