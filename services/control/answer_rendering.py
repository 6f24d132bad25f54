"""How `finq ask` shows an answer on a terminal: the lead, the table of several years or
figures beneath it (drawn with rich), how each computed figure was reached, the sources and
the check's verdict.

Every piece of text is printed as text, never as rich markup: an answer, a label or a
citation may hold square brackets ("[1]", "[Apple 10-K]") that markup would swallow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

# A cell that holds no figure.
NO_FIGURE = "—"


def answer_table(table: Mapping[str, Any]) -> Table:
    """The answer's table as rich draws it: the row labels on the left, the figures right
    aligned so their digits line up."""
    columns: Sequence[str] = table.get("columns") or []
    drawn = Table(
        title=Text(str(table.get("caption") or "")),
        title_justify="left",
        header_style="bold",
    )
    for index, column in enumerate(columns or [""]):
        drawn.add_column(Text(str(column)), justify="left" if index == 0 else "right")
    rows: Sequence[Mapping[str, Any]] = table.get("rows") or []
    width = max(len(columns) - 1, *(len(row.get("cells") or []) for row in rows))
    for _ in range(max(len(columns) - 1, 0), width):
        drawn.add_column("", justify="right")  # a cell past the header is still shown
    for row in rows:
        cells = [NO_FIGURE if cell is None else str(cell) for cell in row.get("cells") or []]
        cells += [NO_FIGURE] * (width - len(cells))
        drawn.add_row(Text(str(row.get("label", ""))), *(Text(cell) for cell in cells))
    return drawn


def render_answer(data: Mapping[str, Any], console: Console | None = None) -> None:
    """Print an answer (a response body of POST /v1/ask) as `finq ask` shows it."""
    console = console or Console()

    def say(text: str) -> None:
        console.print(Text(text), soft_wrap=True)

    say(str(data.get("answer", "")))
    table = data.get("table")
    if table and table.get("rows"):
        console.print(answer_table(table))
    workings = data.get("workings") or []
    if workings:
        say("How it was computed:")
        for working in workings:
            say(f"  {working['figure']}: {working['text']}")
    for number, citation in enumerate(data.get("citations") or [], start=1):
        url = f" {citation['url']}" if citation.get("url") else ""
        say(f"  [{number}] {citation['label']}{url}")
    validation = data.get("validation") or {}
    verdict = (
        "validated" if validation.get("passed") else f"NOT validated ({validation.get('severity')})"
    )
    say(f"  {verdict}; trace {data.get('trace_id')}")
