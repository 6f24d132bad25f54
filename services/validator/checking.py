"""Checks an answer against the facts it was drafted from: every figure, year, date and
citation it shows must be backed by a fetched fact or source.

A figure is matched as a tuple, not a bare value: when its sentence names a fiscal year or
a company, the matching fact must be of that year and company, so a right value under the
wrong year ("fiscal 2024 was $383.3 billion" when that is FY2023's figure) fails.

A derived fact brings its arithmetic's figures along: each input is a fetched figure of its
own period (the opening balance of an average is the previous year's), and the constants of
its formula ("× 100", "× 365", the "4" of a stock split) count as shown bare numbers of the
fact's period. A tampered input matches neither and fails like any other figure.

An answer's table and the workings of its computed figures are shown to the user too, and
checked by the same rules: each cell is read as a line naming its row and its column
("FY2023, Revenue: $27.0 billion"), whose years and companies are its context, and the
caption's where the row and column name none ("NVIDIA, fiscal 2021–2025" names the company
of every cell, not their years). Each working is read as a line after the figure it works
out ("NVIDIA's revenue growth, fiscal 2022: (revenue $26.9 billion / …) × 100 = 61.4%").
"""

from __future__ import annotations

import ast
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from services.validator.numbers import Scan, ShownNumber, scan
from shared.contracts.answers import (
    AnswerTable,
    Citation,
    Severity,
    Validation,
    ValidationIssue,
    Working,
)
from shared.contracts.tool_results import Fact, Source

# A figure may never be looser than this, however few digits it is shown with.
MAX_RELATIVE_TOLERANCE = 0.02
# Float noise allowance for figures shown exactly ("383.3" * 1e9 is not 383.3e9 bit for bit).
_EXACT_RELATIVE = 1e-9

_SEVERITY_RANK: dict[Severity, int] = {"none": 0, "low": 1, "medium": 2, "high": 3, "critical": 4}
_FAIL_AT = _SEVERITY_RANK["medium"]

# Which fact units a figure can stand for, given how it is written.
_UNITS_FOR_KIND: dict[str, frozenset[str] | None] = {
    "money": frozenset({"USD"}),
    "per_share_or_plain": frozenset({"USD", "USD/share"}),
    "percent": frozenset({"%"}),
    "plain": None,  # a bare figure ("383,285 million", "1.8×") may be in any unit
}

# Sentence ends: terminal punctuation (plus closing quotes/brackets) then space, or a line
# break. Decimal points are never followed by space, so "383.3" stays whole.
_SENTENCE_BREAK_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")
# A loss is often written as a positive amount ("a net loss of $1.2 billion").
_LOSS_RE = re.compile(r"\b(?:loss|losses|deficit|negative)\b", re.IGNORECASE)
# Sentences saying a figure is absent claim nothing; the years they name (asked-for and
# held ranges, "fiscal 2031 (held: fiscal 2010 to 2024)") are not fetched periods.
_ABSENCE_RE = re.compile(
    r"\bno (?:figures?|data|values?|passages?|documents?)(?: about “[^”]*”)? (?:is|are|was|were) "
    r"(?:held|found|available)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class _Context:
    """What one sentence names: fiscal years and companies (by symbol)."""

    years: frozenset[int]
    symbols: frozenset[str]
    loss: bool
    absence: bool


@dataclass(frozen=True, slots=True)
class _Figure:
    """A value the answer may show: a fact, an input of a derived fact, or a constant of its
    formula (`unit` None: it may only be shown as a bare number)."""

    symbol: str
    company: str
    label: str
    fiscal_year: int
    value: float
    unit: str | None


def _constants(node: ast.AST) -> tuple[float, ...]:
    if isinstance(node, ast.Subscript):
        return ()  # the n of `x[-n]` is a year offset, never shown as a number
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return (float(node.value),)
    return tuple(c for child in ast.iter_child_nodes(node) for c in _constants(child))


@lru_cache(maxsize=512)
def _formula_constants(formula: str) -> tuple[float, ...]:
    """The numbers a formula writes: "(revenue / revenue[-1] - 1) * 100" → (1.0, 100.0)."""
    try:
        return _constants(ast.parse(formula, mode="eval"))
    except SyntaxError:
        return ()


def _figures(facts: Iterable[Fact]) -> list[_Figure]:
    figures: list[_Figure] = []
    for fact in facts:
        company = (fact.symbol, fact.company)
        # A figure computed across companies (their sum, a difference, a multiple) is the
        # figure of each of them: a sentence naming any of them may show it.
        owners = {item.symbol for item in fact.inputs if item.symbol} - {fact.symbol}
        figures.extend(
            _Figure(
                symbol, fact.company, fact.metric_label, fact.fiscal_year, fact.value, fact.unit
            )
            for symbol in [fact.symbol, *sorted(owners)]
        )
        if fact.differs is not None:
            # The same figure as the other source gives it, which the answer says beside it.
            figures.append(
                _Figure(
                    *company, fact.metric_label, fact.fiscal_year, fact.differs.value, fact.unit
                )
            )
        if not (fact.formula and fact.inputs):
            continue  # no arithmetic is shown for it
        figures.extend(
            _Figure(
                item.symbol or fact.symbol,
                fact.company,
                item.metric_label,
                item.fiscal_year,
                item.value,
                item.unit,
            )
            for item in fact.inputs
        )
        label = f"the formula of {fact.metric_label}"
        figures.extend(
            _Figure(*company, label, fact.fiscal_year, constant, None)
            for constant in _formula_constants(fact.formula)
        )
    return figures


def _sentence_starts(text: str) -> list[int]:
    return [0, *(match.end() for match in _SENTENCE_BREAK_RE.finditer(text))]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, trailing space included, so the spans tile the text."""
    starts = _sentence_starts(text)
    return list(zip(starts, [*starts[1:], len(text)], strict=True))


def _mentions(sentence: str, name: str) -> bool:
    """`name` as a whole word: "Apple's" names Apple, "Metadata" does not name Meta."""
    start = sentence.find(name)
    while start != -1:
        end = start + len(name)
        if (start == 0 or not sentence[start - 1].isalnum()) and (
            end == len(sentence) or not sentence[end].isalnum()
        ):
            return True
        start = sentence.find(name, start + 1)
    return False


def _company_names(facts: Iterable[Fact]) -> dict[str, tuple[str, ...]]:
    """symbol → the names that identify it. One-letter tickers ("A", "T") are left out:
    they read as words, and would tie every sentence starting "A ..." to Agilent."""
    names: dict[str, tuple[str, ...]] = {}
    for fact in facts:
        if fact.symbol not in names:
            names[fact.symbol] = tuple(
                name for name in (fact.company, fact.symbol) if len(name) > 1
            )
    return names


def _tolerance(shown: ShownNumber, value: float) -> float:
    """Half a unit of the last shown digit, capped at 2% of the fact, plus float noise so a
    figure rounded exactly at the half-unit boundary (230.25 shown as "230.2") still counts."""
    noise = _EXACT_RELATIVE * max(abs(value), abs(shown.value), 1e-12)
    return min(shown.half_unit, MAX_RELATIVE_TOLERANCE * abs(value)) + noise


def _value_matches(shown: ShownNumber, fact: _Figure, loss: bool) -> bool:
    units = _UNITS_FOR_KIND[shown.kind]
    if fact.unit is None:
        # A formula's constant is a bare number ("× 100"), never an amount or a percentage.
        if units is not None:
            return False
    elif units is not None and fact.unit not in units:
        return False
    if abs(shown.value - fact.value) <= _tolerance(shown, fact.value):
        return True
    # "net loss of $1.2 billion" states a negative fact by its magnitude.
    return (
        loss
        and fact.value < 0 < shown.value
        and (abs(shown.value + fact.value) <= _tolerance(shown, fact.value))
    )


def _fits(fact: _Figure, context: _Context) -> bool:
    if context.years and fact.fiscal_year not in context.years:
        return False
    return not context.symbols or fact.symbol in context.symbols


def _describe(fact: _Figure) -> str:
    return f"{fact.company}'s {fact.label} in fiscal {fact.fiscal_year}"


def _number_issue(
    shown: ShownNumber,
    context: _Context,
    companies: dict[str, str],
    near: _Figure | None,
    where: str = "",
) -> ValidationIssue:
    scope = ""
    if context.symbols:
        scope += " for " + " or ".join(sorted(companies[s] for s in context.symbols))
    if context.years:
        scope += " in fiscal " + " or ".join(str(year) for year in sorted(context.years))
    message = f"{shown.text} does not match any fetched figure{scope}"
    if near is not None:
        message += f" (it matches {_describe(near)})"
    if where:
        message += f" ({where})"
    return ValidationIssue(kind="number", text=shown.text, message=message, severity="high")


class _Sentences:
    """Each sentence's context (years, companies, loss, absence), read once on demand. With
    a `heading` (a table's caption), a sentence naming no year takes the heading's years,
    and one naming no company the heading's companies."""

    def __init__(
        self, answer: str, shown: Scan, facts: Iterable[Fact], heading: str | None = None
    ) -> None:
        self.answer = answer
        self.shown = shown
        self.starts = _sentence_starts(answer)
        self.names = _company_names(facts)
        self._contexts: dict[int, _Context] = {}
        self.heading = _Sentences(heading, scan(heading), facts).context_at(0) if heading else None

    def span_at(self, offset: int) -> tuple[int, int]:
        index = bisect_right(self.starts, offset) - 1
        end = self.starts[index + 1] if index + 1 < len(self.starts) else len(self.answer)
        return self.starts[index], end

    def context_at(self, offset: int) -> _Context:
        index = bisect_right(self.starts, offset) - 1
        if index not in self._contexts:
            begin, end = self.span_at(offset)
            sentence = self.answer[begin:end]
            years = frozenset(y.year for y in self.shown.years if begin <= y.start < end)
            symbols = frozenset(
                symbol
                for symbol, aliases in self.names.items()
                if any(_mentions(sentence, alias) for alias in aliases)
            )
            if self.heading is not None:
                years = years or self.heading.years
                symbols = symbols or self.heading.symbols
            self._contexts[index] = _Context(
                years=years,
                symbols=symbols,
                loss=_LOSS_RE.search(sentence) is not None,
                absence=_ABSENCE_RE.search(sentence) is not None,
            )
        return self._contexts[index]


@dataclass(frozen=True, slots=True)
class NumberMiss:
    """A shown figure no fetched fact backs in its sentence, with the facts that sentence
    is about: the figures a patch may put in its place."""

    shown: ShownNumber
    sentence: tuple[int, int]
    in_context: tuple[Fact, ...]
    near: _Figure | None


def _unit_fits(shown: ShownNumber, unit: str) -> bool:
    units = _UNITS_FOR_KIND[shown.kind]
    return units is None or unit in units


def number_misses(answer: str, facts: list[Fact], heading: str | None = None) -> list[NumberMiss]:
    """Every figure in `answer` that matches no fact (nor an input or constant of a fact's
    arithmetic) within its shown precision, in its sentence's year and company (or, where
    it names none, `heading`'s)."""
    return _misses(_Sentences(answer, scan(answer), facts, heading), facts)


# --- an answer's table and workings, as the checker reads them ------------------------


def cell_prefix(label: str, column: str) -> str:
    """What a cell's line says before the cell: its row and its column, which name its
    period and company ("FY2023, Revenue: ")."""
    return f"{label}, {column}: "


def table_lines(table: AnswerTable) -> list[tuple[int, int, str]]:
    """(row, cell, line) for each cell that holds a figure, its line read as a sentence.
    A cell past the header's columns is read too, under no column: nothing shown goes
    unchecked."""
    headers = table.columns[1:]
    lines: list[tuple[int, int, str]] = []
    for row_index, row in enumerate(table.rows):
        for index, cell in enumerate(row.cells):
            if cell is not None:
                column = headers[index] if index < len(headers) else ""
                lines.append((row_index, index, cell_prefix(row.label, column) + cell))
    return lines


def working_line(working: Working) -> str:
    """A working as a sentence: the figure it works out names its company and period."""
    return f"{working.figure}: {working.text}"


@dataclass(frozen=True, slots=True)
class _Shown:
    """One part of what the user is shown (the prose, the table, the workings), read as
    sentences, and how its issues say where they are."""

    sentences: _Sentences
    where: str


def _shown_parts(
    answer: str, facts: list[Fact], table: AnswerTable | None, workings: Sequence[Working]
) -> dict[str, _Shown]:
    parts = {"prose": _Shown(_Sentences(answer, scan(answer), facts), "")}
    if table is not None:
        # The caption is a line of its own (its years are checked), and the heading of
        # every cell's line.
        text = "\n".join([table.caption, *(line for _, _, line in table_lines(table))])
        parts["table"] = _Shown(_Sentences(text, scan(text), facts, table.caption), "in the table")
    if workings:
        text = "\n".join(working_line(working) for working in workings)
        parts["workings"] = _Shown(_Sentences(text, scan(text), facts), "in how it was computed")
    return parts


def _misses(sentences: _Sentences, facts: list[Fact]) -> list[NumberMiss]:
    figures = _figures(facts)
    misses: list[NumberMiss] = []
    for number in sentences.shown.numbers:
        context = sentences.context_at(number.start)
        by_value = [fact for fact in figures if _value_matches(number, fact, context.loss)]
        if any(_fits(fact, context) for fact in by_value):
            continue
        in_context = tuple(
            fact
            for fact in facts
            if _unit_fits(number, fact.unit)
            and (not context.years or fact.fiscal_year in context.years)
            and (not context.symbols or fact.symbol in context.symbols)
        )
        near = by_value[0] if by_value else None
        misses.append(NumberMiss(number, sentences.span_at(number.start), in_context, near))
    return misses


_SHOWN_DIGITS_RE = re.compile(r"\d[\d,]*(?:\.\d+)?")
# A whole number as a passage writes it: "164,000", "3.5", "2022".
_PASSAGE_NUMBER_RE = re.compile(r"(?<![\d,.])\d[\d,]*(?:\.\d+)?(?<=\d)")


def passage_numbers(passages: Sequence[str]) -> frozenset[str]:
    """Every number the passages write, read once per answer."""
    return frozenset(
        m.group() for passage in passages for m in _PASSAGE_NUMBER_RE.finditer(passage)
    )


def quoted_in(shown: ShownNumber, quoted: frozenset[str]) -> bool:
    """Whether the figure's digits stand, as a whole number, in a passage (`quoted`, from
    `passage_numbers`): a quote from a filing is grounded by the filing's own words."""
    digits = _SHOWN_DIGITS_RE.search(shown.text)
    return digits is not None and digits.group() in quoted


def check_answer(
    answer: str,
    facts: list[Fact],
    citations: list[Citation],
    sources: list[Source],
    passages: Sequence[str] = (),
    *,
    table: AnswerTable | None = None,
    workings: Sequence[Working] = (),
) -> Validation:
    """Every figure, year, date, citation and accession in `answer`, its `table` and its
    `workings` must be backed by `facts`, `sources` or (for quotes) `passages`. Figures off
    or under the wrong year/company are "high", unknown years and dates "medium", unknown
    citations, `[n]` markers past the citations and accessions "critical"; the answer
    passes when nothing reaches "medium". `numbers_checked` counts the figures of all
    three."""
    checked = check_parts(answer, facts, citations, sources, passages, table, workings)
    validation = grade(issue for issues in checked.issues.values() for issue in issues)
    validation.numbers_checked = checked.numbers_checked
    return validation


@dataclass(frozen=True)
class CheckedParts:
    """The issues of each part of an answer ("prose", "table", "workings"), so a repair can
    mend each where it is, and how many figures the parts show."""

    issues: dict[str, list[ValidationIssue]]
    numbers_checked: int


def check_parts(
    answer: str,
    facts: list[Fact],
    citations: list[Citation],
    sources: list[Source],
    passages: Sequence[str] = (),
    table: AnswerTable | None = None,
    workings: Sequence[Working] = (),
) -> CheckedParts:
    """`check_answer`'s findings, part by part; citations belong to the prose."""
    display = {fact.symbol: fact.company for fact in facts}
    quoted = passage_numbers(passages)
    known_years, known_dates = _known_periods(facts, sources, passages)
    parts = _shown_parts(answer, facts, table, workings)
    found: dict[str, list[ValidationIssue]] = {}
    for name, part in parts.items():
        sentences, where = part.sentences, part.where
        shown, context_at = sentences.shown, sentences.context_at
        issues: list[ValidationIssue] = []
        # a, b: each figure matches a fact's value (or an input or constant of its
        # arithmetic) within its shown precision, in its sentence's year and company.
        for miss in _misses(sentences, facts):
            if quoted_in(miss.shown, quoted):
                continue
            context = context_at(miss.shown.start)
            issues.append(_number_issue(miss.shown, context, display, miss.near, where))
        # c: years and dates must be periods (or filing dates) of what was fetched.
        for year in shown.years:
            if year.year not in known_years and not context_at(year.start).absence:
                issues.append(
                    ValidationIssue(
                        kind="year",
                        text=year.text,
                        message=f"{year.text} is not a fiscal year of any fetched figure"
                        + (f" ({where})" if where else ""),
                        severity="medium",
                    )
                )
        for shown_date in shown.dates:
            if shown_date.value not in known_dates and not context_at(shown_date.start).absence:
                issues.append(
                    ValidationIssue(
                        kind="date",
                        text=shown_date.text,
                        message=(
                            f"{shown_date.text} is not a period end, period start or filing "
                            "date of any fetched figure" + (f" ({where})" if where else "")
                        ),
                        severity="medium",
                    )
                )
        issues.extend(_citation_issues(shown, citations if name == "prose" else [], sources))
        found[name] = issues
    numbers = sum(len(part.sentences.shown.numbers) for part in parts.values())
    return CheckedParts(found, numbers)


def _known_periods(
    facts: list[Fact], sources: list[Source], passages: Sequence[str]
) -> tuple[set[int], set[date]]:
    """The years and dates an answer may name: of the fetched figures, sources and quotes."""
    known_years: set[int] = set()
    known_dates: set[date] = set()
    for source in sources:
        for day in (source.filed, source.period_end):
            if day is not None:
                known_dates.add(day)
                known_years.add(day.year)
        if source.fiscal_year is not None:
            known_years.add(source.fiscal_year)
    for passage in passages:
        quoted = scan(passage)
        known_years.update(year.year for year in quoted.years)
        known_dates.update(day.value for day in quoted.dates)
    for fact in facts:
        known_years.add(fact.fiscal_year)
        # The arithmetic names its inputs' periods ("$50.7 billion when fiscal 2022 closed").
        known_years.update(item.fiscal_year for item in fact.inputs)
        known_years.add(fact.period_end.year)
        known_dates.add(fact.period_end)
        if fact.period_start is not None:
            known_years.add(fact.period_start.year)
            known_dates.add(fact.period_start)
    return known_years, known_dates


def _citation_issues(
    shown: Scan, citations: list[Citation], sources: list[Source]
) -> list[ValidationIssue]:
    """d: citations, `[n]` markers and accession numbers must name fetched sources."""
    issues: list[ValidationIssue] = []
    by_id = {source.source_id: source for source in sources}
    for citation in citations:
        source = by_id.get(citation.source_id)
        if source is None:
            message = f"citation {citation.source_id} is not one of the fetched sources"
        elif citation.accession and citation.accession != source.accession:
            message = (
                f"citation {citation.source_id} gives accession {citation.accession}, "
                f"but its source's is {source.accession or 'not recorded'}"
            )
        else:
            continue
        issues.append(
            ValidationIssue(
                kind="citation", text=citation.source_id, message=message, severity="critical"
            )
        )
    for marker in dict.fromkeys(shown.markers):
        if not 1 <= marker <= len(citations):
            issues.append(
                ValidationIssue(
                    kind="citation",
                    text=f"[{marker}]",
                    message=f"[{marker}] cites nothing: the answer has {len(citations)} citations",
                    severity="critical",
                )
            )
    held = {source.accession.replace("-", "") for source in sources if source.accession}
    for accession in shown.accessions:
        if accession.digits not in held:
            issues.append(
                ValidationIssue(
                    kind="citation",
                    text=accession.text,
                    message=f"accession {accession.text} does not belong to any fetched source",
                    severity="critical",
                )
            )
    return issues


def grade(issues: Iterable[ValidationIssue]) -> Validation:
    """The verdict on a list of issues: the worst severity, passing below "medium"."""
    # The same mistake repeated is one issue to the reader.
    unique = list({(i.kind, i.text, i.message): i for i in issues}.values())
    severity: Severity = max(
        (issue.severity for issue in unique), key=_SEVERITY_RANK.__getitem__, default="none"
    )
    return Validation(passed=_SEVERITY_RANK[severity] < _FAIL_AT, severity=severity, issues=unique)
