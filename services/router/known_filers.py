"""Companies finq knows of but holds no data for: a question that names one of SEC's filers
(`finq ingest directory`) and no company finq holds is answered with which company that is
and the command that loads it, not with "which company do you mean?". A name that fits
several filers alike is answered with all of them, to choose from.

Only a question naming no held company is answered so: beside a held company, a word the
SEC directory reads as a name ("Greater China", a segment) must not turn a figure question
into a refusal."""

from __future__ import annotations

from collections.abc import Sequence

from services.router.filer_directory import FilerDirectory, FilerMention, display_name
from services.router.rules import METRIC_INTENTS, CompanyDirectory
from shared.contracts.questions import RouteDecided
from shared.contracts.understanding import FilerRef, Intent, Understood

# What a question naming a company asks of it: a figure, a price, its filings, or a
# clarification of one of those. Portfolio questions name the user's own holdings, which
# finq answers for any ticker; a refusal stays a refusal.
ASKS_OF_A_COMPANY: frozenset[str] = frozenset(
    {*METRIC_INTENTS, "price", "filings", "document_search", "clarify"}
)


def filers_not_held(
    question: str, filers: FilerDirectory, held: CompanyDirectory
) -> list[FilerMention]:
    """The filers the question names that finq holds no data for. A mention that could be a
    held company (one of several alike) is left to the held directory."""
    return [
        mention
        for mention in filers.mentions(question)
        if not any(
            held.holds_ticker(ticker)
            for cik in mention.ciks
            for ticker in filers.filers[cik].tickers
        )
    ]


def refs(mentions: Sequence[FilerMention], filers: FilerDirectory) -> list[FilerRef]:
    return [
        FilerRef(
            cik=cik,
            name=display_name(filers.filers[cik].name),
            tickers=list(filers.filers[cik].tickers),
            text=mention.text,
        )
        for mention in mentions
        for cik in mention.ciks
    ]


def _described(ref: FilerRef) -> str:
    # No CIK in words: a reply holds no number that no fetched figure backs (the validator
    # checks every one); the route carries the CIK.
    return f"{ref.name} ({', '.join(ref.tickers)})" if ref.tickers else ref.name


def _load_command(ref: FilerRef) -> str:
    return (
        f"`finq ingest sec {ref.tickers[0]}`" if ref.tickers else "`finq ingest sec` with its CIK"
    )


def not_held_reply(mentions: Sequence[FilerMention], filers: FilerDirectory) -> str:
    """What finq says of companies it knows of and holds nothing for: which company each
    name is, or the companies it may be; and how to load one."""
    sentences: list[str] = []
    for mention in mentions:
        named = refs([mention], filers)
        if len(named) == 1:
            ref = named[0]
            sentences.append(
                f"finq knows {ref.text} as {_described(ref)} from SEC's list of filers, "
                f"but holds no data for it yet. Load its figures with {_load_command(ref)}, "
                "then ask again."
            )
        else:
            listed = "; ".join(_described(ref) for ref in named)
            sentences.append(
                f'"{mention.text}" fits several companies in SEC\'s list of filers: {listed}. '
                "Which do you mean? finq holds data for none of them yet; load one with "
                f"`finq ingest sec` and its ticker, e.g. {_load_command(named[0])}."
            )
    return " ".join(sentences)


def answer_not_held(
    route: RouteDecided,
    own_symbols: Sequence[str],
    question: str,
    filers: FilerDirectory | None,
    directory: CompanyDirectory,
) -> RouteDecided | None:
    """The route that names the filers finq lacks, when the question named no held company
    of its own (not even by the conversation's inheritance) and asks something of one."""
    if filers is None or own_symbols or route.intent not in ASKS_OF_A_COMPANY:
        return None
    mentions = filers_not_held(question, filers, directory)
    if not mentions:
        return None
    understood: Understood = route.understood.model_copy(
        update={"filers_not_held": refs(mentions, filers), "companies": [], "inherited": []}
    )
    intent: Intent = "clarify"
    return RouteDecided(
        question=route.question,
        intent=intent,
        clarifying_question=not_held_reply(mentions, filers),
        understood=understood,
        decided_by=route.decided_by,
        confidence=route.confidence,
    )
