"""The argument models of finq's tools.

The router validates a plan against these before sending it and the tools
service validates again before running it: a tool call never reaches SQL
with arguments that did not pass here.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from shared.metric_catalog import METRICS_BY_ID

GET_FINANCIAL_METRICS = "get_financial_metrics"

Symbol = Annotated[str, StringConstraints(pattern=r"^[A-Z][A-Z.\-]{0,9}$")]
FiscalYear = Annotated[int, Field(ge=1900, le=2100)]


class GetFinancialMetricsArgs(BaseModel):
    """Annual figures of companies; no fiscal_years means each figure's latest year held."""

    model_config = ConfigDict(extra="forbid")

    symbols: list[Symbol] = Field(min_length=1, max_length=10)
    metrics: list[str] = Field(min_length=1, max_length=20)
    fiscal_years: list[FiscalYear] | None = Field(default=None, min_length=1, max_length=30)

    @field_validator("metrics")
    @classmethod
    def metrics_are_in_the_catalog(cls, metrics: list[str]) -> list[str]:
        unknown = [metric for metric in metrics if metric not in METRICS_BY_ID]
        if unknown:
            raise ValueError(f"unknown metric ids: {', '.join(unknown)}")
        return metrics


TOOL_ARGUMENTS: dict[str, type[BaseModel]] = {
    GET_FINANCIAL_METRICS: GetFinancialMetricsArgs,
}
