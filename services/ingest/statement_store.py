"""A filing's statements as rows of `statement_figures`: every cell of a line the metric
catalog names (services/ingest/statement_metrics.py), with its period, unit and page, so
the tools can answer from the filing itself where no XBRL figure is held."""

from __future__ import annotations

import uuid
from typing import Any

from services.ingest.document_model import ParsedDocument
from services.ingest.statement_metrics import statement_figures
from services.ingest.statements import read_statements

STATEMENT_COLUMNS = (
    "document_id", "user_id", "symbol", "statement", "label", "metric", "period_end",
    "months", "fiscal_year", "value", "unit", "page", "table_number",
)  # fmt: skip
INSERT_STATEMENT_FIGURE_SQL = (
    f"INSERT INTO statement_figures ({', '.join(STATEMENT_COLUMNS)}) "
    f"VALUES ({', '.join(f'${n}' for n in range(1, len(STATEMENT_COLUMNS) + 1))})"
)
DELETE_STATEMENT_FIGURES_SQL = "DELETE FROM statement_figures WHERE document_id = $1"


def statement_rows(
    document: ParsedDocument, document_id: uuid.UUID, user_id: str | None
) -> list[tuple[Any, ...]]:
    """The rows to store for `document`: none for a document that is no company's filing
    (an upload with no company read from it has no one to answer for)."""
    if document.symbol is None:
        return []
    rows: list[tuple[Any, ...]] = []
    for statement in read_statements(document):
        for figure in statement_figures(statement):
            if figure.page is None:
                continue  # a format without pages: no cell a reader could be sent to
            unit = "USD/share" if figure.per_share else "shares" if figure.share_count else "USD"
            rows.append(
                (
                    document_id, user_id, document.symbol, statement.kind, figure.label,
                    figure.metric_id, figure.column.period_end, figure.column.months,
                    figure.column.fiscal_year, figure.value, unit, figure.page,
                    statement.table_number,
                )
            )  # fmt: skip
    return rows


async def replace_statement_figures(conn: Any, document_id: uuid.UUID, rows: list[tuple]) -> None:
    """The document's statement figures, replaced (a re-ingest reads them again)."""
    await conn.execute(DELETE_STATEMENT_FIGURES_SQL, document_id)
    if rows:
        await conn.executemany(INSERT_STATEMENT_FIGURE_SQL, rows)
