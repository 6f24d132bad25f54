"""A ratio asked in words that the catalog does not hold ("what percentage of Apple's
revenue was cost of sales"), computed from the two fetched figures of each company and
period, with the arithmetic shown; a derived fact, so the validator checks the result and
both of its terms."""

from __future__ import annotations

from shared.contracts import Fact, FormulaInput, Understood
from shared.english import possessive
from shared.metric_catalog import mid_sentence
from shared.value_formatting import format_value


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
            Fact(
                symbol=symbol,
                company=part.company,
                metric=part.metric,
                metric_label=label,
                period=period,
                period_type=part.period_type,
                fiscal_year=part.fiscal_year,
                fiscal_quarter=part.fiscal_quarter,
                period_start=part.period_start,
                period_end=part.period_end,
                value=value,
                unit="%",
                source_id=f"derived:{symbol}:{part.metric}/{whole.metric}:{period}",
                formula="part / whole * 100",
                inputs=[_input("part", part), _input("whole", whole)],
            )
        )
        when = (
            f"Q{part.fiscal_quarter} of fiscal {part.fiscal_year}"
            if part.period_type == "quarterly"
            else f"fiscal {part.fiscal_year}"
        )
        sentences.append(
            f"In {when}, {possessive(part.company)} {part_label} was "
            f"{format_value(value, '%')} of its {whole_label}: "
            f"{format_value(part.value, part.unit)} / {format_value(whole.value, whole.unit)} "
            "× 100."
        )
    return ratios, sentences
