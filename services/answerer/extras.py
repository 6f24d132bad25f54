"""What users expect beside the answer: a chart of a series or a comparison (Vega-Lite) and
two or three questions to ask next."""

from __future__ import annotations

from typing import Any

from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact
from shared.english import possessive
from shared.metric_catalog import METRICS_BY_ID, mid_sentence

VEGA_LITE_SCHEMA = "https://vega.github.io/schema/vega-lite/v5.json"
_OTHER_COMPANY = {"AAPL": "Alphabet", "GOOGL": "Apple", "NVDA": "Apple", "TSLA": "Apple"}


def _series_facts(facts: list[Fact]) -> list[Fact]:
    return [f for f in facts if f.period_type in {"annual", "quarterly", "ttm"}]


def chart_spec(route: RouteDecided, facts: list[Fact]) -> dict[str, Any] | None:
    """A line chart over periods for a trend, bars per company for a comparison; none for
    a single figure, where a chart adds nothing."""
    figures = _series_facts(facts)
    if not figures:
        return None
    metrics = sorted({f.metric for f in figures})
    companies = sorted({f.company for f in figures})
    periods = sorted({(f.fiscal_year, f.fiscal_quarter or 0) for f in figures})
    values = [
        {
            "company": f.company,
            "metric": f.metric_label,
            "period": f.period,
            "period_end": f.period_end.isoformat(),
            "value": f.value,
            "unit": f.unit,
        }
        for f in sorted(figures, key=lambda f: (f.company, f.metric, f.period_end))
    ]
    title = " and ".join(
        mid_sentence(METRICS_BY_ID[m].label) if m in METRICS_BY_ID else m for m in metrics
    )
    if len(periods) >= 2:
        return {
            "$schema": VEGA_LITE_SCHEMA,
            "title": f"{', '.join(companies)}: {title}",
            "data": {"values": values},
            "mark": {"type": "line", "point": True},
            "encoding": {
                "x": {"field": "period_end", "type": "temporal", "title": "Period end"},
                "y": {"field": "value", "type": "quantitative", "title": title},
                "color": {
                    "field": "company" if len(companies) > 1 else "metric",
                    "type": "nominal",
                },
                "tooltip": [{"field": "period"}, {"field": "value", "format": ",.4~g"}],
            },
        }
    if len(companies) >= 2 or len(metrics) >= 2:
        encoding: dict[str, Any] = {
            "x": {"field": "company", "type": "nominal", "title": None},
            "y": {"field": "value", "type": "quantitative", "title": title},
            "color": {"field": "metric", "type": "nominal"},
        }
        if len(metrics) > 1:
            encoding["xOffset"] = {"field": "metric"}
        return {
            "$schema": VEGA_LITE_SCHEMA,
            "title": f"{title}, {figures[0].period}",
            "data": {"values": values},
            "mark": "bar",
            "encoding": encoding,
        }
    return None


def suggestions(route: RouteDecided) -> list[str]:
    """Two or three natural next questions, built from what this one was about."""
    understood = route.understood
    companies = [company.name for company in understood.companies]
    metrics = [m for m in understood.metric_ids if m in METRICS_BY_ID]
    company = companies[0] if companies else "Apple"
    label = mid_sentence(METRICS_BY_ID[metrics[0]].label) if metrics else "revenue"
    symbol = (understood.symbols or ["AAPL"])[0]
    other = _OTHER_COMPANY.get(symbol, "Apple")
    if route.intent in {"metric_lookup", "metric_comparison", "metric_trend"}:
        return [
            "And the year before?",
            f"How did {possessive(company)} {label} change over the last five years?",
            f"Compare {possessive(company)} {label} with {possessive(other)}.",
        ][: 3 if route.intent == "metric_lookup" else 2]
    if route.intent == "price":
        return [f"What was {possessive(company)} revenue last year?", "And over the last month?"]
    if route.intent == "filings":
        return [f"What was {possessive(company)} net income last year?", "Show only 10-Q filings."]
    if route.intent in {"definition", "list_metrics"}:
        return [f"What was Apple's {label} last year?", "Which valuation metrics do you have?"]
    if route.intent == "clarify":
        return []
    if route.intent.startswith("portfolio_"):
        return [
            "How did my portfolio do this year?",
            "Which of my holdings did worst this year?",
            "What did I buy last month?",
        ]
    return ["What was Apple's revenue last fiscal year?", "Which metrics can I ask about?"]
