"""Companies' reported and derived figures, and the catalog they are named from."""

from __future__ import annotations

import ast
import functools
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from shared.metric_catalog import CATEGORIES, METRICS_BY_ID
from shared.metric_resolver import MetricResolver, UnknownMetricPhrase
from shared.tools.spec import FiscalYear, Symbol, ToolArguments, ToolSpec

GET_FINANCIAL_METRICS = "get_financial_metrics"
LIST_METRICS = "list_metrics"

# The forms whose statements finq reads into figures.
FilingForm = Literal["10-K", "10-Q"]


class AsFiled(ToolArguments):
    """The filing whose own statements the figures are taken from: its form (None: either)
    and its fiscal year (None: each period's own filing, the one that first reported it)."""

    form: FilingForm | None = None
    fiscal_year: FiscalYear | None = None


def check_question_formula(formula: str) -> None:
    """Raises ValueError unless `formula` is arithmetic (+ − × ÷, numbers, brackets) over
    reported catalog metrics, `avg(x)` and `x[-n]`: nothing else may reach the evaluator."""
    try:
        tree = ast.parse(formula, mode="eval")
    except SyntaxError:
        raise ValueError(f"not a formula: {formula!r}") from None
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            metric = METRICS_BY_ID.get(node.id)
            if node.id != "avg" and (metric is None or metric.derived):
                raise ValueError(f"{node.id!r} is no reported catalog metric")
        elif isinstance(node, ast.Call):
            if not (isinstance(node.func, ast.Name) and node.func.id == "avg"):
                raise ValueError("the only function a formula may call is avg()")
        elif isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float) or isinstance(node.value, bool):
                raise ValueError("a formula's constants are numbers")
        elif not isinstance(node, _FORMULA_NODES):
            raise ValueError(f"a formula may not hold {type(node).__name__}")


_FORMULA_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.Add,
    ast.Sub,
    ast.Mult,
    ast.Div,
    ast.USub,
    ast.Subscript,
    ast.Load,
)


@functools.cache
def _argument_resolver() -> MetricResolver:
    # Exact and fuzzy only: validation runs inside pydantic, where loading a model has no
    # place; the router's embedding fallback has already run by the time a plan gets here.
    return MetricResolver.from_catalog()


def catalog_ids(metrics: list[str]) -> list[str]:
    """Catalog ids pass; other names (an LLM's "P/E", a slip like "gross margn") are
    resolved to ids, and a name nothing resolves fails naming the closest metrics."""
    resolved: list[str] = []
    for metric in metrics:
        if metric not in METRICS_BY_ID:
            try:
                metric = _argument_resolver().resolve(metric).metric_id
            except UnknownMetricPhrase as unknown:
                raise ValueError(str(unknown)) from None
        if metric not in resolved:
            resolved.append(metric)
    return resolved


class GetFinancialMetricsArgs(ToolArguments):
    """Figures of companies for fiscal periods.

    Periods are chosen by `fiscal_years` (and, for quarters, `fiscal_quarters`), or by
    `last` (the latest N periods held of each figure); with neither, each figure's
    latest period held.
    """

    symbols: list[Symbol] = Field(min_length=1, max_length=10)
    metrics: list[str] = Field(min_length=1, max_length=20)
    period: Literal["annual", "quarterly", "ttm"] = "annual"
    fiscal_years: list[FiscalYear] | None = Field(default=None, min_length=1, max_length=30)
    # A span of fiscal years, both ends included ("from": 2019, "to": 2023); becomes
    # `fiscal_years`, so the tool has one way to select years.
    from_year: FiscalYear | None = Field(default=None, alias="from")
    to_year: FiscalYear | None = Field(default=None, alias="to")
    fiscal_quarters: list[Annotated[int, Field(ge=1, le=4)]] | None = Field(
        default=None, min_length=1, max_length=4
    )
    last: int | None = Field(default=None, ge=1, le=40)
    # At most this many periods of each figure of each company, the latest kept.
    limit: int | None = Field(default=None, ge=1, le=200)
    # Figures as a filing's statements state them, each citing its page, where finq holds
    # that filing; otherwise as the XBRL data holds them.
    as_filed: AsFiled | None = None
    # The question's own definition of its one figure, over reported catalog metrics in the
    # catalog's formula language ("365 * avg(accounts_payable) / cost_of_revenue").
    formula: str | None = Field(default=None, max_length=500)

    @field_validator("formula")
    @classmethod
    def formula_reads_reported_figures(cls, formula: str | None) -> str | None:
        if formula is not None:
            check_question_formula(formula)
        return formula

    @model_validator(mode="after")
    def a_formula_defines_one_figure(self) -> GetFinancialMetricsArgs:
        if self.formula is not None and len(self.metrics) != 1:
            raise ValueError("a formula defines one figure: give one metric with it")
        return self

    @model_validator(mode="after")
    def periods_are_chosen_one_way(self) -> GetFinancialMetricsArgs:
        if self.from_year is not None or self.to_year is not None:
            if self.fiscal_years is not None:
                raise ValueError("give fiscal_years or from/to, not both")
            if self.from_year is None or self.to_year is None:
                raise ValueError("from and to go together")
            if self.from_year > self.to_year:
                raise ValueError(f"from {self.from_year} is after to {self.to_year}")
            if self.to_year - self.from_year >= 30:
                raise ValueError("from/to spans more than 30 fiscal years")
            self.fiscal_years = list(range(self.from_year, self.to_year + 1))
            self.from_year = self.to_year = None
        if self.last is not None and self.fiscal_years is not None:
            raise ValueError("give fiscal_years (or from/to) or last, not both")
        if self.fiscal_quarters is not None and self.period == "annual":
            raise ValueError("fiscal_quarters needs period quarterly or ttm")
        return self

    @field_validator("metrics")
    @classmethod
    def metrics_are_in_the_catalog(cls, metrics: list[str]) -> list[str]:
        return catalog_ids(metrics)

    @property
    def several_periods(self) -> bool:
        return len(self.fiscal_years or []) > 1 or (self.last or 1) > 1


def _figures_answer(arguments: GetFinancialMetricsArgs) -> str:
    if len(arguments.symbols) > 1:
        return "metric_comparison"
    return "metric_trend" if arguments.several_periods else "metric_lookup"


GET_FINANCIAL_METRICS_SPEC = ToolSpec(
    name=GET_FINANCIAL_METRICS,
    arguments=GetFinancialMetricsArgs,
    runner="services.tools.financial_metrics:run",
    intents=("metric_lookup", "metric_comparison", "metric_trend"),
    answers=_figures_answer,
)


class ListMetricsArgs(ToolArguments):
    """The metrics finq knows, optionally of one category or only the ones named, with
    unit, description and formula (what a "what is EBITDA?" question is answered from)."""

    category: Literal[CATEGORIES] | None = None  # type: ignore[valid-type]
    metrics: list[str] | None = Field(default=None, min_length=1, max_length=20)

    @field_validator("metrics")
    @classmethod
    def named_metrics_are_in_the_catalog(cls, metrics: list[str] | None) -> list[str] | None:
        return None if metrics is None else catalog_ids(metrics)


LIST_METRICS_SPEC = ToolSpec(
    name=LIST_METRICS,
    arguments=ListMetricsArgs,
    runner="services.tools.metric_listing:run",
    intents=("list_metrics", "definition"),
    answers=lambda arguments: "definition" if arguments.metrics else "list_metrics",
)
