"""Figures finq does not store but the question asks for, computed in code from the
figures it fetched, with the arithmetic shown: a year-to-date total ("the nine months
ended June 29, 2024" is Q1 + Q2 + Q3), a quarter's growth on the matching quarter of the
prior year, the change of a figure between two fiscal years named, and a ratio asked in words
that the catalog does not hold ("what percentage of Apple's revenue was cost of sales").

Each is a derived fact whose inputs are the fetched figures, so the validator checks the
result and its terms like any other figure.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from services.answerer.intent_answers import fiscal_period
from shared.contracts.tool_results import Fact, FormulaInput
from shared.contracts.understanding import Understood
from shared.english import possessive
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.value_formatting import format_computed_value, format_fact_value, format_value

_MONTH_WORDS = {3: "three", 6: "six", 9: "nine", 12: "twelve"}


def _input(term: str, fact: Fact) -> FormulaInput:
    return FormulaInput(
        term=term,
        symbol=fact.symbol,
        metric=fact.metric,
        metric_label=fact.metric_label,
        value=fact.value,
        unit=fact.unit,
        period=fact.period,
        period_type="quarterly" if fact.period_type == "quarterly" else "annual",
        fiscal_year=fact.fiscal_year,
        fiscal_quarter=fact.fiscal_quarter,
    )


def _derived(base: Fact, **changes: object) -> Fact:
    """A computed fact: the company, metric and period of `base`, with what was computed
    (value, unit, label, formula, inputs) in place of its own."""
    return base.model_copy(update=changes)


@dataclass(frozen=True)
class Worked:
    """What one computed figure's sentence says (`claim`) and the arithmetic that shows it
    (`working`): said together in a short answer ("… changed by 8.7%: ($307.4 billion /
    $282.8 billion - 1) × 100."), apart beneath a table, where the working goes behind a
    disclosure and the prose keeps the claim alone."""

    claim: str
    working: str | None = None
    fact: Fact | None = None  # the figure computed, None for a sentence that computes none

    @property
    def sentence(self) -> str:
        return f"{self.claim}: {self.working}." if self.working else f"{self.claim}."


Said = tuple[list[Fact], list[Worked]]


@dataclass(frozen=True)
class Computed:
    """The figures computed from the fetched ones, the sentences showing their arithmetic,
    and whether the arithmetic asked for in words (`operation_figures`) could be done."""

    facts: list[Fact]
    said: list[Worked]
    operation_answered: bool
    # How many of `said`, from the first, are the arithmetic the question asked for in words.
    operation_count: int = 0

    @property
    def sentences(self) -> list[str]:
        return [worked.sentence for worked in self.said]


def computed(facts: list[Fact], understood: Understood) -> Computed:
    """Every figure the question asks for that is computed from the fetched ones, with the
    sentences that show its arithmetic; the arithmetic the question asked for in words
    comes first, as the answer."""
    derived: list[Fact] = []
    sentences: list[Worked] = []
    answered = False
    operation_count = 0
    computations = [year_to_date, same_quarter_growth, change_between_years, ratio_figures]
    if understood.operation is not None:
        computations = [operation_figures, *(c for c in computations if c in _BESIDE_OPERATION)]
    for compute in computations:
        found, said = compute(facts, understood)
        if compute is operation_figures:
            answered, operation_count = bool(found), len(said)
        derived.extend(found)
        sentences.extend(said)
    return Computed(derived, sentences, answered, operation_count)


def computed_figures(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """`computed`'s figures and sentences, each with its arithmetic."""
    result = computed(facts, understood)
    return result.facts, result.sentences


def operation_figures(facts: list[Fact], understood: Understood) -> Said:
    """The arithmetic the question asked for in words: a change between two periods, or a
    sum, difference or multiple across companies."""
    changed, said = change_between_years(facts, understood)
    across, told = across_companies(facts, understood)
    added, shown = across_metrics(facts, understood)
    return [*changed, *across, *added], [*said, *told, *shown]


def across_metrics(facts: list[Fact], understood: Understood) -> Said:
    """Several figures of one company for one period added up ("R&D and SG&A combined"), or
    the first less the second, in the order the question names them; for each period that
    holds them all, in one unit."""
    operation = understood.operation
    asked = [m.id for m in understood.metrics]
    if (
        operation is None
        or operation.kind not in ("sum", "difference")
        or len(asked) < 2
        or len(understood.symbols) != 1
    ):
        return [], []
    by_period: dict[tuple[str, str], dict[str, Fact]] = defaultdict(dict)
    for fact in facts:
        if fact.metric in asked:
            by_period[(fact.symbol, fact.period)].setdefault(fact.metric, fact)
    derived: list[Fact] = []
    sentences: list[Worked] = []
    for (symbol, period), of_metric in by_period.items():
        taken = [of_metric[m] for m in asked if m in of_metric]
        if len(taken) < len(asked) or len({f.unit for f in taken}) != 1:
            continue
        first = taken[0]
        if operation.kind == "sum":
            value, joiner = sum(f.value for f in taken), "+"
            label = " and ".join(mid_sentence(f.metric_label) for f in taken) + " combined"
        else:
            value, joiner = first.value - taken[1].value, "-"
            label = f"{mid_sentence(first.metric_label)} less {mid_sentence(taken[1].metric_label)}"
        terms = [f.metric for f in taken]
        written = format_computed_value(value, first.unit, taken)
        shown = f" {'+' if joiner == '+' else '−'} ".join(format_fact_value(f) for f in taken)
        combined = _derived(
            first,
            metric="_".join([operation.kind, *terms]),
            metric_label=label,
            value=value,
            source_id=f"derived:{symbol}:{operation.kind}:{'+'.join(terms)}:{period}",
            formula=f" {joiner} ".join(terms),
            inputs=[_input(term, f) for term, f in zip(terms, taken, strict=True)],
        )
        sentences.append(
            Worked(
                f"{possessive(first.company)} {label} in {fiscal_period(first)} came to {written}",
                shown,
                combined,
            )
        )
        derived.append(combined)
    return derived, sentences


def _is_flow(metric: str) -> bool:
    """Figures over a period add up across quarters; balances and ratios do not."""
    entry = METRICS_BY_ID.get(metric)
    return entry is not None and entry.kind == "flow" and entry.unit == "USD"


def _quarters(facts: list[Fact]) -> dict[tuple[str, str, int], dict[int, Fact]]:
    series: dict[tuple[str, str, int], dict[int, Fact]] = defaultdict(dict)
    for fact in facts:
        if fact.period_type == "quarterly" and fact.fiscal_quarter and not fact.formula:
            series[(fact.symbol, fact.metric, fact.fiscal_year)][fact.fiscal_quarter] = fact
    return series


def year_to_date(facts: list[Fact], understood: Understood) -> Said:
    """The year-to-date totals a "six/nine months ended" question asks for, and their
    sentences; nothing when a quarter of the span was not fetched or the figure is not a
    flow."""
    months = understood.periods.months_to_date
    if not months:
        return [], []
    wanted = list(range(1, months // 3 + 1))
    totals: list[Fact] = []
    sentences: list[Worked] = []
    for (symbol, metric, year), quarters in _quarters(facts).items():
        if not _is_flow(metric) or any(q not in quarters for q in wanted):
            continue
        parts = [quarters[q] for q in wanted]
        last = parts[-1]
        # Dates are written as the templates write them, so the validator reads them.
        label = f"{_MONTH_WORDS.get(months, str(months))} months ended {last.period_end}"
        total = _derived(
            last,
            metric_label=f"{last.metric_label}, {label}",
            period=f"{months}M FY{year}",
            period_start=parts[0].period_start,
            value=sum(part.value for part in parts),
            source_id=f"derived:{symbol}:{metric}:{months}M-FY{year}",
            formula=" + ".join(f"q{q}" for q in wanted),
            inputs=[_input(f"q{q}", quarters[q]) for q in wanted],
        )
        totals.append(total)
        terms = " + ".join(format_fact_value(part) for part in parts)
        sentences.append(
            Worked(
                f"{possessive(last.company)} {mid_sentence(last.metric_label)} for the {label} "
                f"(Q1 to Q{last.fiscal_quarter} of fiscal {year}) was "
                f"{format_value(total.value, total.unit)}",
                terms,
                total,
            )
        )
    return totals, sentences


def same_quarter_growth(facts: list[Fact], understood: Understood) -> Said:
    """A quarter's growth on the matching quarter of the prior year, when both were fetched."""
    if not understood.periods.same_quarter_last_year:
        return [], []
    series = _quarters(facts)
    growths: list[Fact] = []
    sentences: list[Worked] = []
    for (symbol, metric, year), quarters in sorted(series.items()):
        earlier = series.get((symbol, metric, year - 1), {})
        for quarter, current in sorted(quarters.items()):
            before = earlier.get(quarter)
            if before is None or before.value == 0 or metric not in METRICS_BY_ID:
                continue
            growth, sentence = _percent_change(
                current,
                before,
                label=f"{current.metric_label} growth on the year-earlier quarter",
                source_id=f"derived:{symbol}:{metric}:yoy:Q{quarter}-FY{year}",
                terms=("current", "year_ago"),
                opening=(
                    f"Against Q{quarter} of fiscal {year - 1}, {possessive(current.company)} "
                    f"{mid_sentence(current.metric_label)} in Q{quarter} of fiscal {year}"
                ),
            )
            growths.append(growth)
            sentences.append(sentence)
    return growths, sentences


def change_between_years(facts: list[Fact], understood: Understood) -> Said:
    """How a figure changed between the two periods a question names ("how did revenue
    change between fiscal 2022 and fiscal 2023", "Q3 2023 against Q3 2022"): in percent of
    the earlier one, in the figure's own unit, or both, as the question asked
    (`Understood.operation`). Between consecutive fiscal years the percent is the catalog's
    own year-over-year growth of the figure, and is named so."""
    periods = understood.periods
    operation = understood.operation
    # A span of years asked as one change ("the overall increase from 2019 to 2024") is
    # its first year to its last.
    whole_span = operation is not None and operation.kind == "change"
    if (
        not understood.growth
        or periods.same_quarter_last_year
        or len(periods.fiscal_years) < 2
        or (len(periods.fiscal_years) > 2 and not whole_span)
    ):
        return [], []
    if operation is None and periods.fiscal_quarters:
        return [], []  # a quarter's growth is asked as against its year-earlier quarter
    as_percent = operation is None or operation.as_percent
    in_units = operation is not None and operation.in_units
    series: dict[tuple[str, str], list[Fact]] = defaultdict(list)
    for fact in facts:
        # Each year's growth, fetched beside its figure for a span, is no figure to change.
        yearly_growth = whole_span and fact.metric in _GROWTH_METRICS
        in_catalog = fact.metric in METRICS_BY_ID and fact.period_type in ("annual", "quarterly")
        if in_catalog and not yearly_growth:
            series[(fact.symbol, fact.metric)].append(fact)
    changes: list[Fact] = []
    sentences: list[Worked] = []
    for (symbol, metric), held in sorted(series.items()):
        if len(held) < 2 or (len(held) > 2 and not whole_span):
            continue
        ordered = sorted(held, key=lambda f: (f.fiscal_year, f.fiscal_quarter or 0))
        first, last = ordered[0], ordered[-1]
        opening = (
            f"From {fiscal_period(first)} to {fiscal_period(last)}, "
            f"{possessive(last.company)} {mid_sentence(last.metric_label)}"
        )
        span = f"{first.period}-{last.period}".replace(" ", "")
        direction = operation.yes_no_direction if operation is not None else None
        if direction is not None:
            # The yes or no first, the change behind it after.
            moved = (last.value > first.value) - (last.value < first.value)
            went = {1: "rose", -1: "fell", 0: "did not change"}[moved]
            said = "Yes" if moved == (1 if direction == "up" else -1) else "No"
            sentences.append(
                Worked(
                    f"{said}: {possessive(last.company)} {mid_sentence(last.metric_label)} "
                    f"{went} from {fiscal_period(first)} to {fiscal_period(last)}"
                )
            )
        if in_units:
            difference = last.value - first.value
            changed = _derived(
                last,
                metric_label=f"{last.metric_label} change since {fiscal_period(first)}",
                value=difference,
                source_id=f"derived:{symbol}:{metric}:difference:{span}",
                formula="later - earlier",
                inputs=[_input("later", last), _input("earlier", first)],
            )
            changes.append(changed)
            # Signed, as the validator holds the difference: "changed by -$5.2 billion";
            # also in the statement's scale when both are its cells.
            said = format_computed_value(difference, last.unit, [last, first])
            sentences.append(
                Worked(
                    f"{opening} changed by {said}",
                    f"{format_fact_value(last)} − {format_fact_value(first)}",
                    changed,
                )
            )
        if as_percent and first.value > 0:
            consecutive = last.fiscal_year - first.fiscal_year == 1 and last.period_type == "annual"
            growth = yoy_growth_of(metric) if consecutive else None
            change, sentence = _percent_change(
                last,
                first,
                label=(
                    METRICS_BY_ID[growth].label
                    if growth
                    else f"{last.metric_label} change since {fiscal_period(first)}"
                ),
                source_id=f"derived:{symbol}:{metric}:change:{span}",
                terms=("later", "earlier"),
                opening=opening,
            )
            change = change.model_copy(update={"metric": growth}) if growth else change
            changes.append(change)
            sentences.append(Worked(sentence.claim, sentence.working, change))
    return changes, sentences


def yoy_growth_of(metric: str) -> str | None:
    """The catalog's year-over-year growth of `metric`, if it holds one."""
    return _YOY_GROWTH.get(metric)


_YOY_GROWTH: dict[str, str] = {
    entry.inputs[0]: entry.id
    for entry in METRICS_BY_ID.values()
    if len(entry.inputs) == 1
    and entry.formula == f"({entry.inputs[0]} / {entry.inputs[0]}[-1] - 1) * 100"
}
_GROWTH_METRICS = frozenset(_YOY_GROWTH.values())


def across_companies(facts: list[Fact], understood: Understood) -> Said:
    """One figure of several companies for one period, added up, the first less the second,
    or the first as a multiple of the second, as the question asked; in the order the
    question names the companies."""
    operation = understood.operation
    if operation is None or operation.kind == "change" or len(understood.metrics) != 1:
        return [], []
    metric = understood.metrics[0].id
    by_period: dict[str, dict[str, Fact]] = defaultdict(dict)
    for fact in facts:
        if fact.metric == metric:
            by_period[fact.period][fact.symbol] = fact
    order = understood.symbols
    derived: list[Fact] = []
    sentences: list[Worked] = []
    for period, of_company in by_period.items():
        named = [of_company[symbol] for symbol in order if symbol in of_company]
        if len(named) < 2 or len(named) < len(order):
            continue
        first, second = named[0], named[1]
        label, when = mid_sentence(first.metric_label), fiscal_period(first)
        shown = [format_fact_value(f) for f in named]
        if operation.kind == "sum":
            taken, terms, joiner = named, [f"company_{i}" for i in range(len(named))], "+"
            value, unit = sum(f.value for f in named), first.unit
            company, metric_label = " and ".join(f.company for f in named), f"combined {label}"
            said = Worked(
                f"Together, {_and(named)} had {label} of {format_value(value, unit)} in {when}",
                " + ".join(shown),
            )
        elif operation.kind == "difference":
            taken, terms, joiner = [first, second], ["first", "second"], "-"
            value, unit = first.value - second.value, first.unit
            company = f"{first.company} less {second.company}"
            metric_label = f"{label} of {first.company} less {second.company}'s"
            said = Worked(
                f"{possessive(first.company)} {label} in {when} less "
                f"{possessive(second.company)} was {format_value(value, unit)}",
                f"{shown[0]} − {shown[1]}",
            )
        else:  # a multiple
            if second.value == 0:
                continue
            taken, terms, joiner = [first, second], ["first", "second"], "/"
            value, unit = first.value / second.value, "x"
            company = f"{first.company} over {second.company}"
            metric_label = f"{label} of {first.company} as a multiple of {second.company}'s"
            said = Worked(
                f"{possessive(first.company)} {label} in {when} was "
                f"{format_value(value, unit)} {possessive(second.company)}",
                f"{shown[0]} / {shown[1]}",
            )
        symbol = joiner.join(f.symbol for f in taken)
        fact = _derived(
            first,
            symbol=symbol,
            company=company,
            metric_label=metric_label,
            value=value,
            unit=unit,
            source_id=f"derived:{symbol}:{metric}:{operation.kind}:{period}",
            formula=f" {joiner} ".join(terms),
            inputs=[_input(term, f) for term, f in zip(terms, taken, strict=True)],
        )
        sentences.append(Worked(said.claim, said.working, fact))
        derived.append(fact)
    return derived, sentences


def _and(facts: list[Fact]) -> str:
    names = [fact.company for fact in facts]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _percent_change(
    later: Fact,
    earlier: Fact,
    *,
    label: str,
    source_id: str,
    terms: tuple[str, str],
    opening: str,
) -> tuple[Fact, Worked]:
    """`later` against `earlier` in percent, as a derived fact with both as its inputs, and
    the sentence that shows the arithmetic after `opening` ("… changed by -2.8%: …")."""
    value = (later.value / earlier.value - 1) * 100
    fact = _derived(
        later,
        metric_label=label,
        value=value,
        unit="%",
        source_id=source_id,
        formula=f"({terms[0]} / {terms[1]} - 1) * 100",
        inputs=[_input(terms[0], later), _input(terms[1], earlier)],
    )
    sentence = Worked(
        f"{opening} changed by {format_value(value, '%')}",
        f"({format_fact_value(later)} / {format_fact_value(earlier)} - 1) × 100",
        fact,
    )
    return fact, sentence


def ratio_figures(facts: list[Fact], understood: Understood) -> Said:
    """One ratio per company and period that both figures were fetched for."""
    ratio = understood.ratio
    if ratio is None:
        return [], []
    by_key = {(f.symbol, f.metric, f.period): f for f in facts if not f.formula}
    ratios: list[Fact] = []
    sentences: list[Worked] = []
    for (symbol, metric, period), part in by_key.items():
        if metric != ratio.numerator:
            continue
        whole = by_key.get((symbol, ratio.denominator, period))
        if whole is None or whole.value == 0:
            continue
        value = part.value / whole.value * 100
        part_label, whole_label = mid_sentence(part.metric_label), mid_sentence(whole.metric_label)
        label = f"{part_label} as a share of {whole_label}"
        share = _derived(
            part,
            metric_label=label,
            value=value,
            unit="%",
            source_id=f"derived:{symbol}:{part.metric}/{whole.metric}:{period}",
            formula="part / whole * 100",
            inputs=[_input("part", part), _input("whole", whole)],
        )
        ratios.append(share)
        sentences.append(
            Worked(
                f"In {fiscal_period(part)}, {possessive(part.company)} {part_label} was "
                f"{format_value(value, '%')} of its {whole_label}",
                f"{format_fact_value(part)} / {format_fact_value(whole)} × 100",
                share,
            )
        )
    return ratios, sentences


# What is computed beside an asked operation: everything but the change it computes itself.
_BESIDE_OPERATION = (year_to_date, same_quarter_growth, ratio_figures)
