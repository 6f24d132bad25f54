"""Several years or several figures at a glance: the table beneath an answer's short lead,
the lead itself, and the working of each computed figure, kept out of the prose.

A series over three or more periods, two or more figures over two or more periods, or
several companies' figures read as a wall of sentences ("…: fiscal 2021 $16.7 billion;
fiscal 2022 …", then each year's growth with its formula). Laid out as a table, each figure
has its place, and one short lead says what the table shows: where each series started and
ended and where it peaked, or which company led. Every cell and every number of the lead
is written by its column's one writer, so a column keeps one scale ("$0.95 billion" beside
"$130.5 billion", never "$950.0 million") and the lead agrees with the table. The validator
checks the cells and the workings like the prose (services/validator/checking.py).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from services.answerer.computed_figures import Worked, yoy_growth_of
from services.answerer.formatting import arithmetic
from services.answerer.intent_answers import fiscal_period
from shared.contracts.answers import AnswerTable, AnswerTableRow, Working
from shared.contracts.tool_results import Fact
from shared.english import possessive
from shared.metric_catalog import mid_sentence
from shared.value_formatting import format_money_in, format_value, money_scale

# The periods a table lays out; prices over a window of days are answered in words.
TABLE_PERIOD_TYPES = frozenset({"annual", "quarterly", "ttm"})
# The lead's length, in characters, past which no optional clause (a second series, a
# peak) joins it: a lead is read at a glance, the table holds the rest.
LEAD_CHARACTERS = 300
# A table earns its place with this many rows, or two rows of two or more columns: a
# figure or two reads better as a sentence.
ROWS_FOR_ONE_COLUMN = 3


@dataclass
class Column:
    """One column of figures: a company's figure by period, or one figure by company."""

    header: str
    cells: dict[Hashable, Fact] = field(default_factory=dict)
    # How this column writes a value, one scale for all its cells (and the lead's figures).
    write: Callable[[Fact], str] = lambda fact: format_value(fact.value, fact.unit)

    @property
    def first(self) -> Fact:
        return next(iter(self.cells.values()))


@dataclass(frozen=True)
class Glance:
    """The table an answer shows, with what the lead and the workings are written from."""

    table: AnswerTable
    by_period: bool  # rows are periods (else companies, for one period)
    row_keys: list[Hashable]
    columns: list[Column]
    # The columns that are a figure's year-over-year growth beside that figure's column.
    growth_of: dict[int, int]  # index of a growth column -> index of its figure's column

    @property
    def facts(self) -> list[Fact]:
        """The figures shown, column by column: a figure's series together."""
        return [
            column.cells[key]
            for column in self.columns
            for key in self.row_keys
            if key in column.cells
        ]

    def written(self, fact: Fact) -> str:
        """`fact` as its column writes it."""
        for column in self.columns:
            if any(cell is fact for cell in column.cells.values()):
                return column.write(fact)
        return format_value(fact.value, fact.unit)

    def series(self, index: int) -> list[Fact]:
        """A column's figures in row order."""
        cells = self.columns[index].cells
        return [cells[key] for key in self.row_keys if key in cells]


def _period_key(fact: Fact) -> tuple[int, int, str]:
    # A fiscal year's row after its quarters' (Q4 FY2023, then FY2023).
    quarter = 5 if fact.period_type == "annual" else fact.fiscal_quarter or 0
    return fact.fiscal_year, quarter, fact.period_type


def _writer(facts: list[Fact]) -> Callable[[Fact], str]:
    """One scale for a column of amounts: its largest figure's."""
    if facts and all(fact.unit == "USD" for fact in facts):
        scale = money_scale(max(abs(fact.value) for fact in facts))
        return lambda fact: format_money_in(fact.value, scale)
    return lambda fact: format_value(fact.value, fact.unit)


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _ordered_metrics(facts: list[Fact]) -> list[str]:
    """The figures in the order they came, each figure's growth right after it."""
    metrics = list(dict.fromkeys(fact.metric for fact in facts))
    # A growth whose figure was fetched too goes beside that figure, not where it came.
    beside = {yoy_growth_of(metric) for metric in metrics}
    ordered: list[str] = []
    for metric in metrics:
        if metric in ordered or metric in beside:
            continue
        ordered.append(metric)
        growth = yoy_growth_of(metric)
        if growth in metrics:
            ordered.append(growth)
    return ordered


def _span(first: Fact, last: Fact) -> str:
    if first.period_type == last.period_type == "annual":
        if first.fiscal_year == last.fiscal_year:
            return f"fiscal {first.fiscal_year}"
        return f"fiscal {first.fiscal_year}–{last.fiscal_year}"
    return f"{first.period} to {last.period}"


def figure_glance(facts: list[Fact]) -> Glance | None:
    """The table of `facts` (fetched figures, not what the answer computes from them), or
    None when they are better said in a sentence or two: fewer than three rows, or two rows
    of one column. Rows are periods when there are several, companies otherwise."""
    if not facts or any(fact.period_type not in TABLE_PERIOD_TYPES for fact in facts):
        return None
    held: dict[tuple[str, str, tuple[int, int, str]], Fact] = {}
    for fact in facts:
        held.setdefault((fact.symbol, fact.metric, _period_key(fact)), fact)
    shown = list(held.values())
    periods = sorted({_period_key(fact) for fact in shown})
    companies = list(dict.fromkeys(fact.symbol for fact in shown))
    names = {fact.symbol: fact.company for fact in shown}
    metrics = _ordered_metrics(shown)
    labels = {fact.metric: fact.metric_label for fact in shown}
    by_period = len(periods) >= 2
    columns: list[Column] = []
    if by_period:
        for symbol in companies:
            for metric in metrics:
                cells: dict[Hashable, Fact] = {
                    _period_key(f): f for f in shown if (f.symbol, f.metric) == (symbol, metric)
                }
                if not cells:
                    continue
                if len(companies) == 1:
                    header = labels[metric]
                elif len(metrics) == 1:
                    header = names[symbol]
                else:
                    header = f"{names[symbol]} {mid_sentence(labels[metric])}"
                columns.append(Column(header, cells))
        row_keys: list[Hashable] = list(periods)
    else:
        for metric in metrics:
            cells = {f.symbol: f for f in shown if f.metric == metric}
            columns.append(Column(labels[metric], cells))
        row_keys = list(companies)
    rows_enough = len(row_keys) >= ROWS_FOR_ONE_COLUMN or (len(row_keys) >= 2 and len(columns) >= 2)
    if not rows_enough:
        return None
    for column in columns:
        column.write = _writer(list(column.cells.values()))
    growth_of = {
        index: base
        for index, column in enumerate(columns)
        for base, other in enumerate(columns)
        if other.first.symbol == column.first.symbol
        and yoy_growth_of(other.first.metric) == column.first.metric
    }
    rows: list[AnswerTableRow] = []
    if by_period:
        kinds = {key[2] for key in periods}
        first_header = {"annual": "Fiscal year", "quarterly": "Quarter"}.get(
            next(iter(kinds)) if len(kinds) == 1 else "", "Period"
        )
        for key in row_keys:
            label = next(c.cells[key].period for c in columns if key in c.cells)
            rows.append(
                AnswerTableRow(
                    label=label,
                    cells=[c.write(c.cells[key]) if key in c.cells else None for c in columns],
                )
            )
        every = sorted(shown, key=_period_key)
        named = _and([names[s] for s in companies]) if len(companies) == 1 else ""
        what = labels[metrics[0]] if len(companies) > 1 and len(metrics) == 1 else named
        caption = ", ".join(part for part in (what, _span(every[0], every[-1])) if part)
        header = [first_header, *(c.header for c in columns)]
    else:
        ends = {fact.symbol: fact.period_end for fact in shown}
        # Companies' fiscal years end on different dates: each row says when its year ended.
        dated = len(set(ends.values())) > 1
        for symbol in companies:
            cells_of = [c.write(c.cells[symbol]) if symbol in c.cells else None for c in columns]
            if dated:
                cells_of.append(ends[symbol].isoformat())
            rows.append(AnswerTableRow(label=names[symbol], cells=cells_of))
        period = shown[0]
        when = fiscal_period(period)
        caption = f"{labels[metrics[0]]}, {when}" if len(metrics) == 1 else when
        header = ["Company", *(c.header for c in columns)]
        if dated:
            header.append("Period ended" if period.period_type != "annual" else "Year ended")
    table = AnswerTable(caption=caption[0].upper() + caption[1:], columns=header, rows=rows)
    return Glance(table, by_period, row_keys, columns, growth_of)


# --- the lead ---------------------------------------------------------------------------


def _moved(first: Fact, last: Fact) -> str:
    return "rose" if last.value > first.value else "fell" if last.value < first.value else "held"


def _peak(points: list[Fact]) -> Fact | None:
    """The highest figure of a series when it is neither its first nor its last: the one
    a reader would not see from where the series started and ended."""
    if len(points) < 3:
        return None
    peak = max(points, key=lambda fact: fact.value)
    return None if peak is points[0] or peak is points[-1] else peak


def _within(parts: list[str], clause: str, joiner: str) -> bool:
    return len(joiner.join([*parts, clause])) + 1 <= LEAD_CHARACTERS


def _trend_lead(glance: Glance) -> str:
    """ "NVIDIA's revenue rose from $16.7 billion in fiscal 2021 to $130.5 billion in fiscal
    2025, and its net income from $4.3 billion to $72.9 billion; revenue growth peaked at
    125.9% in fiscal 2024." Each series (a growth beside its figure is the figure's) from
    its first to its last period, then where a series or its growth peaked, as the lead's
    length allows."""
    several = len({column.first.symbol for column in glance.columns}) > 1
    bases = [i for i in range(len(glance.columns)) if i not in glance.growth_of]
    clauses: list[str] = []
    opening: tuple[Fact, Fact] | None = None  # the first clause's first and last figures
    previous: tuple[Fact, str] | None = None  # the clause before's first figure and verb
    for index in bases:
        points = glance.series(index)
        if len(points) < 2:
            continue
        first, last = points[0], points[-1]
        verb = _moved(first, last)
        written_first, written_last = glance.written(first), glance.written(last)
        label = mid_sentence(first.metric_label)
        if opening is None:
            if verb == "held":
                clause = (
                    f"{possessive(first.company)} {label} held at {written_last} from "
                    f"{fiscal_period(first)} to {fiscal_period(last)}"
                )
            else:
                clause = (
                    f"{possessive(first.company)} {label} {verb} from {written_first} in "
                    f"{fiscal_period(first)} to {written_last} in {fiscal_period(last)}"
                )
            opening = (first, last)
        else:
            assert previous is not None
            was_first, was_last = opening
            before, was_verb = previous
            # What the clause before said is not said again: "its net income from …" after
            # the same company's revenue, "and Apple's from …" after another's same figure,
            # and no verb where the figures moved the same way. The periods are the first
            # clause's, unless this series starts or ends elsewhere.
            same_company = first.symbol == before.symbol
            who = "its" if same_company else possessive(first.company)
            what = "" if not same_company and first.metric == before.metric else f" {label}"
            moved = "" if verb == was_verb else f" {verb}"
            since = "" if first.period == was_first.period else f" in {fiscal_period(first)}"
            until = "" if last.period == was_last.period else f" in {fiscal_period(last)}"
            clause = (
                f"{who}{what} held at {written_last}"
                if verb == "held"
                else f"{who}{what}{moved} from {written_first}{since} to {written_last}{until}"
            )
            if not _within(clauses, clause, ", "):
                continue
        clauses.append(clause)
        previous = (first, verb)
    if not clauses:
        return f"{glance.table.caption}: the figures are in the table."
    lead = clauses[0] if len(clauses) == 1 else f"{', '.join(clauses[:-1])}, and {clauses[-1]}"
    # Each peak as (whose figure, its value, its period), said after the series.
    peaks: list[tuple[str, str, str]] = []
    for index in bases:
        growth = next((g for g, base in glance.growth_of.items() if base == index), None)
        for column in (index, growth):
            if column is None:
                continue
            peak = _peak(glance.series(column))
            if peak is None:
                continue
            if not peaks and len(clauses) == 1 and column == bases[0]:
                said = f"peaking at {glance.written(peak)} in {fiscal_period(peak)}"
                if _within([lead], said, ", "):
                    lead = f"{lead}, {said}"
                continue
            whose = f"{possessive(peak.company)} " if several else ""
            candidate = (
                f"{whose}{mid_sentence(peak.metric_label)}",
                glance.written(peak),
                fiscal_period(peak),
            )
            if len(_with_peaks(lead, [*peaks, candidate])) <= LEAD_CHARACTERS:
                peaks.append(candidate)
    return _with_peaks(lead, peaks)


def _with_peaks(lead: str, peaks: list[tuple[str, str, str]]) -> str:
    """ "…; revenue growth peaked at 125.9% and net income growth at 581.3%, both in fiscal
    2024." — the period once when every peak shares it."""
    if not peaks:
        return f"{lead}."
    shared = len({period for _, _, period in peaks}) == 1 and len(peaks) > 1
    said = [
        f"{whose}{' peaked' if n == 0 else ''} at {value}" + ("" if shared else f" in {period}")
        for n, (whose, value, period) in enumerate(peaks)
    ]
    listed = said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"
    if shared:
        listed += f", {'both' if len(peaks) == 2 else 'all'} in {peaks[0][2]}"
    return f"{lead}; {listed}."


def _ranking_lead(glance: Glance) -> str:
    """ "In fiscal 2023, Apple had the highest net margin, 25.3%, and NVIDIA the lowest,
    16.2%." — or, of two companies, which figure was higher, figure by figure, as the
    lead's length allows."""
    clauses: list[str] = []
    leader: str | None = None
    for column in glance.columns:
        ranked = sorted(column.cells.values(), key=lambda fact: fact.value, reverse=True)
        if len(ranked) < 2:
            continue
        top, bottom = ranked[0], ranked[-1]
        label = mid_sentence(top.metric_label)
        high, low = column.write(top), column.write(bottom)
        if len(ranked) > 2:
            clause = (
                f"{top.company} had the highest {label}, {high}, and {bottom.company} the "
                f"lowest, {low}"
            )
        elif top.value == bottom.value:
            clause = f"{top.company} and {bottom.company} had the same {label}, {high}"
        elif leader == top.symbol:
            clause = f"so was its {label}, {high} against {low}"
        else:
            clause = (
                f"{possessive(top.company)} {label} was higher than "
                f"{possessive(bottom.company)}, {high} against {low}"
            )
        if clauses and not _within(clauses, clause, "; "):
            continue
        clauses.append(clause)
        leader = top.symbol if len(ranked) == 2 else None
    if not clauses:
        return f"{glance.table.caption}: the figures are in the table."
    when = fiscal_period(glance.columns[0].first)
    joined = clauses[0]
    for clause in clauses[1:]:
        joined += f", and {clause}" if clause.startswith("so was") else f"; {clause}"
    return f"In {when}, {joined}."


def glance_lead(glance: Glance) -> str:
    """The one short sentence above the table that answers the question."""
    return _trend_lead(glance) if glance.by_period else _ranking_lead(glance)


# --- the workings -----------------------------------------------------------------------


def _figure_name(fact: Fact) -> str:
    return f"{possessive(fact.company)} {mid_sentence(fact.metric_label)}, {fiscal_period(fact)}"


def glance_workings(glance: Glance, computed: list[Worked]) -> list[Working]:
    """How each computed figure shown was reached: the table's (a growth, a margin) from
    its fact's formula and inputs, then what the answer computed itself. A figure computed
    across companies keeps its own working ("$31.4 billion + $49.3 billion"), since the
    formula's terms would not say whose each figure is."""
    workings: list[Working] = []
    for fact in glance.facts:
        text = arithmetic(fact)
        if text is not None:
            workings.append(Working(figure=_figure_name(fact), text=text, source_id=fact.source_id))
    for worked in computed:
        fact = worked.fact
        if fact is None or worked.working is None:
            continue
        own = all(item.symbol in (None, fact.symbol) for item in fact.inputs)
        text = arithmetic(fact) if own else None
        if text is None:
            text = f"{worked.working} = {format_value(fact.value, fact.unit)}"
        workings.append(Working(figure=_figure_name(fact), text=text, source_id=fact.source_id))
    return workings
