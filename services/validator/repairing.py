"""Repairs for answers that failed their check, so that what the user sees has no figure that
failed validation:

- a wrong figure in a template answer is patched with the one fact its sentence is about,
  written the way the answerer writes it;
- what cannot be patched is withheld: the sentence goes, and the answer says one was left out;
  a cell of the answer's table is emptied, a working of a computed figure is dropped, in
  the same way and for the same reasons;
- a claim that no figure is held ("no data for fiscal 2022") is checked against the database
  before it is shown, since a model (or a stale plan) may say so of a period that is there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.validator.checking import (
    NumberMiss,
    cell_prefix,
    number_misses,
    sentence_spans,
    table_lines,
    working_line,
)
from services.validator.numbers import extract_years
from shared.contracts.answers import AnswerTable, AnswerTableRow, Citation, ValidationIssue, Working
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact
from shared.english import possessive
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.tools import GetFinancialMetricsArgs
from shared.value_formatting import format_money_in, format_value

_LOSS_RE = re.compile(r"\b(?:loss|losses|deficit)\b", re.IGNORECASE)
_QUARTER_RE = re.compile(r"\bQ([1-4])\b")
WITHHELD_NOTE = (
    "One statement was left out because its figure could not be checked against the data."
)
TABLE_WITHHELD_NOTE = (
    "Figures that could not be checked against the data were left out of the table."
)
_SCALE_WORDS = {1e3: "thousand", 1e6: "million", 1e9: "billion", 1e12: "trillion"}
NOTHING_LEFT = (
    "I found data for this question but could not check the figures against it, so I have "
    "left them out."
)


def _meant(sentence: str, at: int, miss: NumberMiss) -> Fact | None:
    """The one fact a sentence with a wrong figure is about: of its company and year (by
    construction of `in_context`), of the metric named closest before the figure (`at`, an
    offset in the sentence), and of a quarter it names."""
    lowered = sentence.lower()
    candidates = list(miss.in_context)
    quarters = {int(q) for q in _QUARTER_RE.findall(sentence)}
    if quarters:
        candidates = [f for f in candidates if f.fiscal_quarter in quarters]
    named = {f.metric_label.lower() for f in candidates if f.metric_label.lower() in lowered}
    if named:
        # "revenue was $X and net income was $Y": $Y is about the label just before it.
        before = {label: lowered.rfind(label, 0, at) for label in named}
        closest = max(before, key=before.__getitem__)
        candidates = [f for f in candidates if f.metric_label.lower() == closest]
    distinct = {(f.symbol, f.metric, f.period, f.period_type): f for f in candidates}
    return next(iter(distinct.values())) if len(distinct) == 1 else None


def _describe(fact: Fact) -> str:
    return f"{possessive(fact.company)} {mid_sentence(fact.metric_label)} for {fact.period}"


def patch_numbers(
    answer: str, facts: list[Fact], heading: str | None = None, keep_scale: bool = False
) -> tuple[str, list[str]]:
    """`answer` with each figure that no fact backs replaced by the value of the one fact its
    sentence (or, where it names no period or company, `heading`) is about; figures with no
    single such fact are left for `withhold`. With `keep_scale`, an amount is written in
    the scale it was shown in (a table's column keeps one scale). Returns the text and what
    was patched, in reading order."""
    patched = answer
    repairs: list[str] = []
    for miss in reversed(number_misses(answer, facts, heading)):  # right to left
        begin, end = miss.sentence
        sentence = answer[begin:end]
        fact = _meant(sentence, miss.shown.start - begin, miss)
        if fact is None:
            continue
        value = fact.value
        if value < 0 and _LOSS_RE.search(sentence):
            value = -value  # "a net loss of $1.2 billion" already says the sign
        replacement = format_value(value, fact.unit)
        word = _SCALE_WORDS.get(miss.shown.scale)
        if keep_scale and miss.shown.kind == "money" and fact.unit == "USD" and word:
            replacement = format_money_in(value, (miss.shown.scale, word))
        if miss.shown.kind == "plain" and fact.unit in {"USD", "USD/share"}:
            # "383,285 million" has no "$" before it; keep the sentence's own shape.
            replacement = replacement.lstrip("-$")
            if value < 0:
                replacement = f"-{replacement}"
        start, stop = miss.shown.start, miss.shown.end
        patched = patched[:start] + replacement + patched[stop:]
        repairs.append(f"patched {miss.shown.text} to {replacement} ({_describe(fact)})")
    return patched, repairs[::-1]


def withhold(
    answer: str, citations: list[Citation], issues: Iterable[ValidationIssue]
) -> tuple[str, list[Citation], list[str]]:
    """`answer` without the sentences holding a failed figure, year, date or claim, and
    without the citations that name no fetched source. Returns text, citations, repairs."""
    issues = list(issues)
    bad_texts = [i.text for i in issues if i.kind != "citation" and i.severity != "low"]
    bad_citations = {i.text for i in issues if i.kind == "citation"}
    kept: list[str] = []
    repairs: list[str] = []
    for begin, end in sentence_spans(answer):
        sentence = answer[begin:end]
        if any(text and text in sentence for text in bad_texts):
            repairs.append(f"withheld: {sentence.strip()}")
            continue
        kept.append(sentence)
    text = "".join(kept).strip()
    if repairs:
        text = f"{text} {WITHHELD_NOTE}" if text else NOTHING_LEFT
    for source_id in sorted(bad_citations):
        repairs.append(f"withheld citation {source_id}")
    shown = [c for c in citations if c.source_id not in bad_citations]
    # An accession written in the text is a citation too; a sentence holding one is gone above.
    return text, shown, repairs


def patch_table(
    table: AnswerTable | None, facts: list[Fact]
) -> tuple[AnswerTable | None, list[str]]:
    """`table` with each cell's wrong figure patched as a sentence's would be, the cell's
    row and column (and the caption) naming what it is about."""
    if table is None:
        return None, []
    cells = [list(row.cells) for row in table.rows]
    repairs: list[str] = []
    for row_index, index, line in table_lines(table):
        prefix = line[: len(line) - len(cells[row_index][index] or "")]
        text, patched = patch_numbers(line, facts, table.caption, keep_scale=True)
        # A figure in a row's label is no cell's to patch: that one is withheld instead.
        if patched and text.startswith(prefix):
            cells[row_index][index] = text[len(prefix) :]
            repairs.extend(f"{repair} in the table" for repair in patched)
    return _with_cells(table, cells), repairs


def withhold_cells(
    table: AnswerTable | None, issues: Iterable[ValidationIssue]
) -> tuple[AnswerTable | None, list[str]]:
    """`table` with each cell holding a failed figure, year or date emptied."""
    bad_texts = [i.text for i in issues if i.kind != "citation" and i.text]
    if table is None or not bad_texts:
        return table, []
    cells = [list(row.cells) for row in table.rows]
    repairs: list[str] = []
    headers = table.columns[1:]
    for row_index, index, _ in table_lines(table):
        cell = cells[row_index][index] or ""
        if any(text in cell for text in bad_texts):
            column = headers[index] if index < len(headers) else ""
            label = table.rows[row_index].label
            repairs.append(f"withheld from the table: {cell_prefix(label, column)}{cell}")
            cells[row_index][index] = None
    return _with_cells(table, cells), repairs


def _with_cells(table: AnswerTable, cells: list[list[str | None]]) -> AnswerTable:
    rows = [
        AnswerTableRow(label=row.label, cells=row_cells)
        for row, row_cells in zip(table.rows, cells, strict=True)
    ]
    return table.model_copy(update={"rows": rows})


def patch_workings(workings: list[Working], facts: list[Fact]) -> tuple[list[Working], list[str]]:
    """Each working's wrong figure patched, the figure it works out naming its period."""
    patched_workings: list[Working] = []
    repairs: list[str] = []
    for working in workings:
        line = working_line(working)
        prefix = line[: len(line) - len(working.text)]
        text, patched = patch_numbers(line, facts)
        if patched and text.startswith(prefix):
            working = working.model_copy(update={"text": text[len(prefix) :]})
            repairs.extend(f"{repair} in how {working.figure} was computed" for repair in patched)
        patched_workings.append(working)
    return patched_workings, repairs


def withhold_workings(
    workings: list[Working], issues: Iterable[ValidationIssue]
) -> tuple[list[Working], list[str]]:
    """The workings without those holding a failed figure, year or date."""
    bad_texts = [i.text for i in issues if i.kind != "citation" and i.text]
    kept: list[Working] = []
    repairs: list[str] = []
    for working in workings:
        line = working_line(working)
        if any(text in line for text in bad_texts):
            repairs.append(f"withheld how it was computed: {line}")
            continue
        kept.append(working)
    return kept, repairs


# --- "no data" claims against the database ---------------------------------------------

_ABSENCE_CLAIM_RE = re.compile(
    r"\bno (?:figures?|data|values?|numbers?|information)\b"
    r"|\bnot (?:held|available|reported|found|disclosed|on file)\b"
    r"|\b(?:do|does|did)(?: not|n't) have\b"
    r"|\b(?:is|are|was|were)n't (?:held|available|reported)\b"
    r"|\bunavailable\b",
    re.IGNORECASE,
)
# What a claim says is held instead is not part of the claim: "(held: fiscal 2010 to 2024)",
# "; data runs from 2010", "but fiscal 2023 is" are clauses or asides of their own.
_ASIDE_RE = re.compile(r"\([^()]*\)")
_CLAUSE_BREAK_RE = re.compile(
    r";|,? \b(?:but|however|while|whereas|although)\b"
    r"|\b(?:held|available|reported) (?:from|since)\b|\bdata (?:runs|covers|starts)\b",
    re.IGNORECASE,
)

HELD_FOR_CLAIM_SQL = """
SELECT DISTINCT v.symbol, c.display_name, v.metric, v.fiscal_year, v.fiscal_quarter
FROM metric_values v JOIN companies c ON c.symbol = v.symbol
WHERE v.symbol = ANY($1::text[]) AND v.metric = ANY($2::text[]) AND v.period_type = $3
  AND v.fiscal_year = ANY($4::int[])
  AND ($5::int[] IS NULL OR v.fiscal_quarter = ANY($5::int[]))
ORDER BY v.symbol, v.metric, v.fiscal_year, v.fiscal_quarter
LIMIT 100
"""


class Fetcher(Protocol):
    async def fetch(self, query: str, *args: Any) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class AbsenceClaim:
    """A sentence saying a figure is not held, and what it says is not held."""

    sentence: str
    symbols: tuple[str, ...]
    metrics: tuple[str, ...]
    years: tuple[int, ...]
    quarters: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class HeldAfterAll:
    """A figure an absence claim denies that the database holds."""

    claim: AbsenceClaim
    symbol: str
    company: str
    metric: str
    fiscal_year: int
    fiscal_quarter: int | None


def _named(sentence: str, names: Sequence[tuple[str, Sequence[str]]]) -> tuple[str, ...]:
    lowered = sentence.lower()
    return tuple(key for key, aliases in names if any(a.lower() in lowered for a in aliases))


def absence_claims(answer: str, route: RouteDecided) -> list[AbsenceClaim]:
    """The sentences of `answer` that say a figure of the route's plan is not held, each with
    the companies, figures, fiscal years and quarters it names (all of the plan's when it
    names none). Only plans that fetch financial figures can be checked this way."""
    arguments = next(
        (c.arguments for c in route.tool_calls if isinstance(c.arguments, GetFinancialMetricsArgs)),
        None,
    )
    if arguments is None:
        return []
    symbols, metrics = list(arguments.symbols), list(arguments.metrics)
    companies = {company.symbol: company.name for company in route.understood.companies}
    company_names = [(s, (s, companies.get(s, s))) for s in symbols]
    metric_names = [
        (m, (METRICS_BY_ID[m].label, m.replace("_", " "))) for m in metrics if m in METRICS_BY_ID
    ]
    claims: list[AbsenceClaim] = []
    for begin, end in sentence_spans(answer):
        sentence = answer[begin:end]
        if _ABSENCE_CLAIM_RE.search(sentence) is None:
            continue
        # The clause that says it, without asides on what is held instead.
        claim = next(
            (part for part in _CLAUSE_BREAK_RE.split(_ASIDE_RE.sub(" ", sentence))
             if _ABSENCE_CLAIM_RE.search(part)),
            "",
        )  # fmt: skip
        years = tuple(sorted({y.year for y in extract_years(claim)}))
        if not years:
            continue  # a claim naming no period cannot be checked against a period held
        claims.append(
            AbsenceClaim(
                sentence=sentence.strip(),
                symbols=_named(claim, company_names) or tuple(symbols),
                metrics=_named(claim, metric_names) or tuple(metrics),
                years=years,
                quarters=tuple(sorted({int(q) for q in _QUARTER_RE.findall(claim)})),
            )
        )
    return claims


async def held_after_all(db: Fetcher, claims: Iterable[AbsenceClaim]) -> list[HeldAfterAll]:
    """The figures each claim denies that the database does hold."""
    held: list[HeldAfterAll] = []
    for claim in claims:
        if not claim.symbols or not claim.metrics:
            continue
        rows = await db.fetch(
            HELD_FOR_CLAIM_SQL,
            list(claim.symbols),
            list(claim.metrics),
            "quarterly" if claim.quarters else "annual",
            list(claim.years),
            list(claim.quarters) or None,
        )
        held.extend(
            HeldAfterAll(
                claim,
                row["symbol"],
                row["display_name"],
                row["metric"],
                row["fiscal_year"],
                row["fiscal_quarter"] if claim.quarters else None,
            )
            for row in rows
        )
    return held


def contradiction_issues(held: Iterable[HeldAfterAll]) -> list[ValidationIssue]:
    """One issue per false claim, naming what is held."""
    by_claim: dict[str, list[HeldAfterAll]] = {}
    for item in held:
        by_claim.setdefault(item.claim.sentence, []).append(item)
    issues: list[ValidationIssue] = []
    for sentence, items in by_claim.items():
        periods = ", ".join(
            f"{possessive(i.company)} {mid_sentence(METRICS_BY_ID[i.metric].label)} for "
            + (f"Q{i.fiscal_quarter} " if i.fiscal_quarter else "")
            + f"fiscal {i.fiscal_year}"
            for i in items
            if i.metric in METRICS_BY_ID
        )
        issues.append(
            ValidationIssue(
                kind="absence",
                text=sentence,
                message=f"the answer says a figure is not held, but finq holds {periods}",
                severity="high",
            )
        )
    return issues
