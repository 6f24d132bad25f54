"""Figures finq does not store but the question asks for, computed in code from the
figures it fetched, with the arithmetic shown: a year-to-date total ("the nine months
ended June 29, 2024" is Q1 + Q2 + Q3), a quarter's growth against the same quarter a year
earlier, the change of a figure between two fiscal years named, and a ratio asked in words
that the catalog does not hold ("what percentage of Apple's revenue was cost of sales").

Each is a derived fact whose inputs are the fetched figures, so the validator checks the
result and its terms like any other figure.
"""

from __future__ import annotations

from collections import defaultdict

from services.answerer.intent_answers import fiscal_period
from shared.contracts import Fact, FormulaInput, Understood
from shared.english import possessive
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.value_formatting import format_value

_MONTH_WORDS = {3: "three", 6: "six", 9: "nine", 12: "twelve"}


def _input(term: str, fact: Fact) -> FormulaInput:
    return FormulaInput(
        term=term,
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


def computed_figures(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """Every figure the question asks for that is computed from the fetched ones, with the
    sentences that show its arithmetic."""
    derived: list[Fact] = []
    sentences: list[str] = []
    for compute in (year_to_date, same_quarter_growth, change_between_years, ratio_figures):
        found, said = compute(facts, understood)
        derived.extend(found)
        sentences.extend(said)
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


def year_to_date(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """The year-to-date totals a "six/nine months ended" question asks for, and their
    sentences; nothing when a quarter of the span was not fetched or the figure is not a
    flow."""
    months = understood.periods.months_to_date
    if not months:
        return [], []
    wanted = list(range(1, months // 3 + 1))
    totals: list[Fact] = []
    sentences: list[str] = []
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
        terms = " + ".join(format_value(part.value, part.unit) for part in parts)
        sentences.append(
            f"{possessive(last.company)} {mid_sentence(last.metric_label)} for the {label} "
            f"(Q1 to Q{last.fiscal_quarter} of fiscal {year}) was "
            f"{format_value(total.value, total.unit)}: {terms}."
        )
    return totals, sentences


def same_quarter_growth(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """A quarter's growth against the same quarter a year earlier, when both were fetched."""
    if not understood.periods.same_quarter_last_year:
        return [], []
    series = _quarters(facts)
    growths: list[Fact] = []
    sentences: list[str] = []
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


def change_between_years(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """How a figure changed between the two fiscal years a question names ("how did
    revenue change between fiscal 2022 and fiscal 2023"), in percent of the earlier one."""
    periods = understood.periods
    if not understood.growth or periods.same_quarter_last_year or len(periods.fiscal_years) != 2:
        return [], []
    first_year, last_year = sorted(periods.fiscal_years)
    annual = {
        (fact.symbol, fact.metric, fact.fiscal_year): fact
        for fact in facts
        if fact.period_type == "annual" and fact.metric in METRICS_BY_ID
    }
    changes: list[Fact] = []
    sentences: list[str] = []
    for (symbol, metric, year), last in sorted(annual.items()):
        first = annual.get((symbol, metric, first_year))
        if year != last_year or first is None or first.value <= 0:
            continue
        change, sentence = _percent_change(
            last,
            first,
            label=f"{last.metric_label} change since fiscal {first_year}",
            source_id=f"derived:{symbol}:{metric}:change:FY{first_year}-FY{last_year}",
            terms=("later", "earlier"),
            opening=(
                f"From fiscal {first_year} to fiscal {last_year}, {possessive(last.company)} "
                f"{mid_sentence(last.metric_label)}"
            ),
        )
        changes.append(change)
        sentences.append(sentence)
    return changes, sentences


def _percent_change(
    later: Fact,
    earlier: Fact,
    *,
    label: str,
    source_id: str,
    terms: tuple[str, str],
    opening: str,
) -> tuple[Fact, str]:
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
    sentence = (
        f"{opening} changed by {format_value(value, '%')}: "
        f"({format_value(later.value, later.unit)} / {format_value(earlier.value, earlier.unit)}"
        " - 1) × 100."
    )
    return fact, sentence


def ratio_figures(facts: list[Fact], understood: Understood) -> tuple[list[Fact], list[str]]:
    """One ratio per company and period that both figures were fetched for."""
    ratio = understood.ratio
    if ratio is None:
        return [], []
    by_key = {(f.symbol, f.metric, f.period): f for f in facts if not f.formula}
    ratios: list[Fact] = []
    sentences: list[str] = []
    for (symbol, metric, period), part in by_key.items():
        if metric != ratio.numerator:
            continue
        whole = by_key.get((symbol, ratio.denominator, period))
        if whole is None or whole.value == 0:
            continue
        value = part.value / whole.value * 100
        part_label, whole_label = mid_sentence(part.metric_label), mid_sentence(whole.metric_label)
        label = f"{part_label} as a share of {whole_label}"
        ratios.append(
            _derived(
                part,
                metric_label=label,
                value=value,
                unit="%",
                source_id=f"derived:{symbol}:{part.metric}/{whole.metric}:{period}",
                formula="part / whole * 100",
                inputs=[_input("part", part), _input("whole", whole)],
            )
        )
        sentences.append(
            f"In {fiscal_period(part)}, {possessive(part.company)} {part_label} was "
            f"{format_value(value, '%')} of its {whole_label}: "
            f"{format_value(part.value, part.unit)} / {format_value(whole.value, whole.unit)} "
            "× 100."
        )
    return ratios, sentences
