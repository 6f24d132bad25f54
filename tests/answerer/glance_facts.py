"""NVIDIA's revenue and net income for fiscal 2021 to 2025, with each year's growth, as the
tools return them for "How did NVIDIA's revenue and net income change from fiscal 2021 to
2025?" (the bundled dataset's figures): the answer that is a lead over a table."""

from __future__ import annotations

from datetime import date

from shared.contracts.answers import ToolsCompleted
from shared.contracts.questions import RouteDecided
from shared.contracts.tool_results import Fact, FormulaInput, Source, ToolCall, ToolResult
from shared.contracts.understanding import PeriodSelection
from shared.tools import GetFinancialMetricsArgs
from tests.helpers import understanding

QUESTION = "How did NVIDIA's revenue and net income change from fiscal 2021 to 2025?"
YEARS = [2021, 2022, 2023, 2024, 2025]
YEAR_ENDS = {
    2020: date(2020, 1, 26),
    2021: date(2021, 1, 31),
    2022: date(2022, 1, 30),
    2023: date(2023, 1, 29),
    2024: date(2024, 1, 28),
    2025: date(2025, 1, 26),
}
REVENUE = {
    2020: 10_918e6,
    2021: 16_675e6,
    2022: 26_914e6,
    2023: 26_974e6,
    2024: 60_922e6,
    2025: 130_497e6,
}
NET_INCOME = {
    2020: 2_796e6,
    2021: 4_332e6,
    2022: 9_752e6,
    2023: 4_368e6,
    2024: 29_760e6,
    2025: 72_880e6,
}
ACCESSIONS = {
    2021: "0001045810-21-000010",
    2022: "0001045810-22-000036",
    2023: "0001045810-23-000017",
    2024: "0001045810-24-000029",
    2025: "0001045810-25-000023",
}
LABELS = {"revenue": "Revenue", "net_income": "Net income"}
METRICS = ["revenue", "revenue_growth", "net_income", "net_income_growth"]


def figure(metric: str, year: int, value: float) -> Fact:
    return Fact(
        symbol="NVDA",
        company="NVIDIA",
        metric=metric,
        metric_label=LABELS[metric],
        period=f"FY{year}",
        fiscal_year=year,
        period_end=YEAR_ENDS[year],
        value=value,
        unit="USD",
        source_id=f"sec:{ACCESSIONS[year]}:{metric}",
    )


def growth(metric: str, year: int, values: dict[int, float]) -> Fact:
    """The catalog's year-over-year growth of `metric`, as the tools derive it."""
    terms = [(metric, year), (f"{metric}[-1]", year - 1)]
    return Fact(
        symbol="NVDA",
        company="NVIDIA",
        metric=f"{metric}_growth",
        metric_label=f"{LABELS[metric]} growth",
        period=f"FY{year}",
        fiscal_year=year,
        period_end=YEAR_ENDS[year],
        value=(values[year] / values[year - 1] - 1) * 100,
        unit="%",
        source_id=f"derived:NVDA:{metric}_growth:FY{year}",
        formula=f"({metric} / {metric}[-1] - 1) * 100",
        inputs=[
            FormulaInput(
                term=term,
                metric=metric,
                metric_label=LABELS[metric],
                value=values[when],
                unit="USD",
                period=f"FY{when}",
                fiscal_year=when,
            )
            for term, when in terms
        ],
    )


def nvidia_facts() -> list[Fact]:
    return [
        *(figure("revenue", year, REVENUE[year]) for year in YEARS),
        *(growth("revenue", year, REVENUE) for year in YEARS),
        *(figure("net_income", year, NET_INCOME[year]) for year in YEARS),
        *(growth("net_income", year, NET_INCOME) for year in YEARS),
    ]


def nvidia_sources() -> list[Source]:
    return [
        Source(
            source_id=f"sec:{ACCESSIONS[year]}:{metric}",
            label=f"NVIDIA 10-K FY{year}, accession {ACCESSIONS[year]}",
            form="10-K",
            accession=ACCESSIONS[year],
        )
        for year in YEARS
        for metric in ("revenue", "net_income")
    ]


def nvidia_completed() -> ToolsCompleted:
    arguments = GetFinancialMetricsArgs(
        symbols=["NVDA"], metrics=METRICS, period="annual", fiscal_years=YEARS
    )
    route = RouteDecided(
        question=QUESTION,
        intent="metric_trend",
        tool_calls=[ToolCall.of(arguments)],
        understood=understanding(
            {"NVDA": "NVIDIA"},
            METRICS,
            periods=PeriodSelection(fiscal_years=YEARS, spans_several=True),
            growth=True,
        ),
    )
    result = ToolResult(
        tool="get_financial_metrics",
        arguments=arguments,
        facts=nvidia_facts(),
        sources=nvidia_sources(),
    )
    return ToolsCompleted(route=route, results=[result])
