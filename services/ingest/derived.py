"""Derived metrics: every catalog metric with a formula, computed from the reported values.

`derive_metrics` evaluates each derived metric's formula (see `shared.metric_catalog`
for the notation) for every company and period whose inputs exist, and returns one
`MetricValueRecord` per value with provenance "derived:<the formula as evaluated>":
`avg(x)` is spelled out as the mean it was, or as the closing balance alone; an
`opt(x)` the company does not report is left out; a stock-split adjustment shows
as the factor it applied ("shares_outstanding * 4").

Which periods a metric gets follows from its formula:

- a formula reading an earlier year (`x[-1]`, growth and CAGR) is annual only;
- flows only (margins, free cash flow): annual, quarterly and trailing twelve months;
- balances only (current ratio, market cap): annual and quarterly (a TTM period
  ends on a quarter end, so its balance is that quarter's);
- flows against balances (ROE, turnover, P/E): annual and TTM, never one quarter's
  flow against a balance, which would need annualising.

A value is left out, never guessed, where an input is missing, a denominator is zero
or negative, or a fractional power would take a negative base.

Stock splits. Filings report share counts and per-share amounts on the share basis of
their filing date, and later filings re-present only the years they repeat, so the
stored EPS of Apple's FY2017 is pre-2020-split while FY2018's is post-split. Before a
formula combines share-based figures they are brought to one basis with the company's
splits as its own XBRL facts state them (`services.ingest.stock_splits`, passed in as
`splits`): each figure's basis is the date of the filing it is cited from (a restated
figure is cited from the restating filing); the target basis is the price file's (splits
up to its last day) when the formula reads `period_end_price`, else all known splits, so
per-share metrics and growth rates compare across years. Only the order of a split's
date among filing dates matters, so a date a few weeks off the first split-adjusted
trading day (the filer's) gives the same figures. A company without splits is taken
never to have split.

Inputs. Each formula-derived value is a `DerivedValueRecord` carrying the figures its
formula read, keyed by each term as the provenance writes it ("revenue",
"stockholders_equity[-1]", "period_end_price"), each the value as stored: a split
adjustment stays in the provenance ("shares_outstanding * 4"), so putting the inputs
into the provenance's formula gives the value back, and an answer can show that
arithmetic with figures a reader can find in the filings.
"""

from __future__ import annotations

import ast
import math
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from fractions import Fraction
from functools import cache

from services.ingest.companyfacts import MetricValueRecord
from services.ingest.stock_splits import StockSplit
from shared.metric_catalog import CATALOG, METRICS_BY_ID, Metric

PERIOD_END_PRICE = "period_end_price"
ANNUAL, QUARTERLY, TTM = "annual", "quarterly", "ttm"

# A close more than a week before the period end is a gap in the price file (or the file
# ends earlier: Apple's ends 2023-04-14), not the period-end price.
MAX_PRICE_AGE = timedelta(days=7)

SHARE_UNITS: frozenset[str] = frozenset({"shares"})
PER_SHARE_UNITS: frozenset[str] = frozenset({"USD/share"})

PriceSeries = Sequence[tuple[date, float]]
_Key = tuple[str, str, str, int, int]  # symbol, metric, period type, fiscal year, quarter
_Group = tuple[str, str, int, int]  # symbol, period type, fiscal year, quarter


# --- formulas ---------------------------------------------------------------------


@cache
def _tree(metric_id: str) -> ast.expr:
    return _parsed(METRICS_BY_ID[metric_id].formula or "")


@cache
def _parsed(formula: str) -> ast.expr:
    return ast.parse(formula, mode="eval").body


def _lags(node: ast.AST) -> bool:
    return any(isinstance(sub, ast.Subscript) for sub in ast.walk(node))


@cache
def _leaf_kinds(metric_id: str) -> frozenset[str]:
    """The kinds (flow, instant) of the reported metrics a metric is computed from."""
    metric = METRICS_BY_ID[metric_id]
    if not metric.inputs:
        return frozenset({metric.kind})
    return frozenset().union(*(_leaf_kinds(name) for name in metric.inputs))


@cache
def period_types(metric_id: str) -> frozenset[str]:
    """The period types a derived metric is computed for (see the module docstring)."""
    if metric_id == PERIOD_END_PRICE:
        return frozenset({ANNUAL, QUARTERLY})
    if _lags(_tree(metric_id)):
        return frozenset({ANNUAL})
    kinds = _leaf_kinds(metric_id)
    if kinds == {"flow"}:
        return frozenset({ANNUAL, QUARTERLY, TTM})
    if kinds == {"instant"}:
        return frozenset({ANNUAL, QUARTERLY})
    return frozenset({ANNUAL, TTM})


def evaluation_order(metrics: Iterable[Metric] = CATALOG) -> list[Metric]:
    """The derived metrics, each after the derived metrics it reads."""
    ordered: list[Metric] = []
    done: set[str] = set()
    visiting: set[str] = set()

    def visit(metric: Metric) -> None:
        if metric.id in done:
            return
        if metric.id in visiting:
            raise ValueError(f"the formula of {metric.id} depends on itself")
        visiting.add(metric.id)
        for name in metric.inputs:
            visit(METRICS_BY_ID[name])
        visiting.discard(metric.id)
        done.add(metric.id)
        if metric.derived:
            ordered.append(metric)

    for metric in metrics:
        visit(metric)
    return ordered


# --- stock splits -------------------------------------------------------------------


def _split_multiple(splits: Sequence[StockSplit], basis: date) -> Fraction:
    """New shares per original share after every split effective on or before `basis`."""
    multiple = Fraction(1)
    for split in splits:
        if split.effective <= basis:
            multiple *= split.ratio
    return multiple


def _number(value: Fraction) -> ast.Constant:
    # 4, not 4.0 or Fraction(4, 1), in a provenance; 1.5 for a 3-for-2 split.
    return ast.Constant(int(value) if value.denominator == 1 else float(value))


def _rebased(name: ast.expr, unit: str, factor: Fraction) -> ast.expr:
    """`name` as written after multiplying a share count by `factor` (a per-share amount is
    divided by it), always with a constant of at least 1 so it reads as a split ratio."""
    if factor == 1:
        return name
    grows = (factor > 1) == (unit in SHARE_UNITS)
    op: ast.operator = ast.Mult() if grows else ast.Div()
    return ast.BinOp(name, op, _number(factor if factor > 1 else 1 / factor))


# (metric, lookup outcomes) → its provenance text: a few thousand shapes however many
# companies are derived, and ast.unparse per value was most of deriving a company's metrics.
_PROVENANCE: dict[tuple[str, tuple[tuple[str, int, Fraction | None], ...]], str] = {}


@cache
def _term(name: str, years_back: int) -> str:
    """An input as the provenance writes it ("revenue", "revenue[-1]"). Cached: unparsing it
    for every lookup was half of deriving a company's metrics."""
    if not years_back:
        return name
    return ast.unparse(
        ast.Subscript(ast.Name(name), ast.UnaryOp(ast.USub(), ast.Constant(years_back)))
    )


# --- evaluation -----------------------------------------------------------------------


@dataclass(frozen=True)
class DerivedValueRecord(MetricValueRecord):
    """A value computed from a formula, with the stored figures the formula read.

    `inputs` is (term, value) in the order the formula reads them; the terms are those of
    the provenance's formula, so it can be evaluated from them alone. A tuple rather than a
    dict keeps the record hashable like its base.
    """

    inputs: tuple[tuple[str, float], ...] = ()


@dataclass
class _Result:
    value: float
    node: ast.expr


class _Evaluation:
    """One derived metric for one company and period."""

    def __init__(self, deriver: _Deriver, metric: Metric, group: _Group) -> None:
        self.deriver = deriver
        self.metric = metric
        self.symbol, self.period_type, self.fiscal_year, self.fiscal_quarter = group
        self.current: list[MetricValueRecord] = []  # this period's inputs
        self.used: list[MetricValueRecord] = []  # every input, earlier years included
        # term as the provenance writes it → the stored value read for it
        self.inputs: dict[str, float] = {}
        # Each lookup's outcome in order: (name, years back, split factor or None when
        # missing). With the metric it fixes the shape of the result's formula, so the
        # provenance text is written once per shape (_PROVENANCE) rather than per value.
        self.lookups: list[tuple[str, int, Fraction | None]] = []
        # Share-based figures go to the price's basis when a price is read, else the latest.
        target = deriver.price_basis.get(self.symbol) if PERIOD_END_PRICE in metric.inputs else None
        self.target = target or date.max

    def run(self) -> DerivedValueRecord | None:
        result = self._eval(_parsed(self.metric.formula or ""))
        if result is None or not math.isfinite(result.value) or not self.current:
            return None
        ends = {record.period_end for record in self.current}
        # Inputs of one period end on one day; anything else is a mislabelled fact.
        if len(ends) != 1:
            return None
        starts = [r.period_start for r in self.current if r.period_start is not None]
        filed = [r.filed for r in self.used if r.filed is not None]
        return DerivedValueRecord(
            symbol=self.symbol,
            metric=self.metric.id,
            period_type=self.period_type,
            fiscal_year=self.fiscal_year,
            fiscal_quarter=self.fiscal_quarter,
            period_start=min(starts) if self.metric.kind == "flow" and starts else None,
            period_end=ends.pop(),
            value=result.value,
            unit=self.metric.unit,
            form=None,
            accession=None,
            xbrl_tag=None,
            filed=max(filed) if filed else None,
            provenance=self._provenance(result.node),
            inputs=tuple(self.inputs.items()),
        )

    def _provenance(self, node: ast.expr) -> str:
        shape = (self.metric.id, tuple(self.lookups))
        text = _PROVENANCE.get(shape)
        if text is None:
            text = _PROVENANCE[shape] = f"derived:{ast.unparse(node)}"
        return text

    def _lookup(self, name: str, years_back: int) -> _Result | None:
        metric = METRICS_BY_ID[name]
        period_type = self.period_type
        # A TTM period's balance is the balance at the end of its last quarter.
        if period_type == TTM and metric.kind == "instant":
            period_type = QUARTERLY
        key = (self.symbol, name, period_type, self.fiscal_year - years_back, self.fiscal_quarter)
        record = self.deriver.values.get(key)
        if record is None:
            self.lookups.append((name, years_back, None))
            return None
        node: ast.expr = ast.Name(name)
        if years_back:
            node = ast.Subscript(node, ast.UnaryOp(ast.USub(), ast.Constant(years_back)))
        value = record.value
        term = _term(name, years_back)
        if metric.unit in SHARE_UNITS | PER_SHARE_UNITS:
            basis = self.deriver.basis.get(key)
            if basis is None:
                self.lookups.append((name, years_back, None))
                return None
            splits = self.deriver.splits.get(self.symbol, ())
            factor = _split_multiple(splits, self.target) / _split_multiple(splits, basis)
            if metric.unit in SHARE_UNITS:
                value = value * factor.numerator / factor.denominator
            else:
                value = value * factor.denominator / factor.numerator
            node = _rebased(node, metric.unit, factor)
        else:
            factor = Fraction(1)
        self.lookups.append((name, years_back, factor))
        if not years_back:
            self.current.append(record)
        self.used.append(record)
        # The stored value, not the split-adjusted one: the factor is in the provenance.
        self.inputs[term] = record.value
        return _Result(value, node)

    def _eval(self, node: ast.expr) -> _Result | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return _Result(float(node.value), node)
        if isinstance(node, ast.Name):
            return self._lookup(node.id, 0)
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            back = node.slice
            if (
                isinstance(back, ast.UnaryOp)
                and isinstance(back.op, ast.USub)
                and isinstance(back.operand, ast.Constant)
                and isinstance(back.operand.value, int)
            ):
                return self._lookup(node.value.id, back.operand.value)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            [arg] = node.args
            if isinstance(arg, ast.Name) and node.func.id == "avg":
                return self._average(arg.id)
            if isinstance(arg, ast.Name) and node.func.id == "opt":
                return self._lookup(arg.id, 0) or _Result(0.0, ast.Constant(0))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand = self._eval(node.operand)
            return (
                None
                if operand is None
                else _Result(-operand.value, ast.UnaryOp(node.op, operand.node))
            )
        if isinstance(node, ast.BinOp):
            return self._binary(node)
        raise ValueError(f"{self.metric.id}: cannot evaluate {ast.unparse(node)!r}")

    def _average(self, name: str) -> _Result | None:
        closing = self._lookup(name, 0)
        if closing is None:
            return None
        opening = self._lookup(name, 1)
        if opening is None:
            return closing
        total = ast.BinOp(closing.node, ast.Add(), opening.node)
        return _Result(
            (closing.value + opening.value) / 2, ast.BinOp(total, ast.Div(), ast.Constant(2))
        )

    def _binary(self, node: ast.BinOp) -> _Result | None:
        left = self._eval(node.left)
        right = self._eval(node.right)
        if left is None or right is None:
            return None
        a, b = left.value, right.value
        if isinstance(node.op, ast.Add | ast.Sub) and _is_zero(right.node):
            return left  # opt(x) left out: "x + 0" reads "x"
        if isinstance(node.op, ast.Add) and _is_zero(left.node):
            return right
        if isinstance(node.op, ast.Add):
            value = a + b
        elif isinstance(node.op, ast.Sub):
            value = a - b
        elif isinstance(node.op, ast.Mult):
            value = a * b
        elif isinstance(node.op, ast.Div):
            # A ratio to nothing or to a negative amount (a loss, negative equity) means nothing.
            if b <= 0:
                return None
            value = a / b
        elif isinstance(node.op, ast.Pow):
            if a < 0 or (a == 0 and b < 0):
                return None
            value = a**b
        else:
            raise ValueError(f"{self.metric.id}: unsupported operator in {ast.unparse(node)!r}")
        return _Result(value, ast.BinOp(left.node, node.op, right.node))


def _is_zero(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 0


# --- prices ---------------------------------------------------------------------------


def close_at(series: PriceSeries, period_end: date) -> tuple[date, float] | None:
    """The last (day, close) on or before `period_end`, if it is at most a week old."""
    index = bisect_right(series, period_end, key=lambda item: item[0])
    if index == 0:
        return None
    day, close = series[index - 1]
    if period_end - day > MAX_PRICE_AGE or close <= 0:
        return None
    return day, close


def _period_end(records: Sequence[MetricValueRecord]) -> date:
    # The day most of a period's figures end on; the latest on a tie, for determinism.
    counts = Counter(record.period_end for record in records)
    return max(counts, key=lambda end: (counts[end], end))


# --- the deriver ----------------------------------------------------------------------


class _Deriver:
    def __init__(
        self,
        values: Sequence[MetricValueRecord],
        prices: Mapping[str, PriceSeries],
        splits: Mapping[str, Sequence[StockSplit]],
    ) -> None:
        self.values: dict[_Key, MetricValueRecord] = {}
        # The share basis (split-adjusted up to this day) of each share-based figure.
        self.basis: dict[_Key, date | None] = {}
        self.groups: dict[_Group, list[MetricValueRecord]] = {}
        for record in values:
            if METRICS_BY_ID.get(record.metric) is None or METRICS_BY_ID[record.metric].derived:
                continue
            key = _key(record)
            self.values[key] = record
            self.basis[key] = record.filed
            group = (record.symbol, record.period_type, record.fiscal_year, record.fiscal_quarter)
            self.groups.setdefault(group, []).append(record)
        self.prices = prices
        self.splits = splits
        self.price_basis = {symbol: series[-1][0] for symbol, series in prices.items() if series}
        self.order = sorted(self.groups)

    def add(self, record: MetricValueRecord, basis: date | None) -> None:
        key = _key(record)
        self.values[key] = record
        self.basis[key] = basis

    def period_end_price(self, group: _Group) -> MetricValueRecord | None:
        symbol, period_type, fiscal_year, fiscal_quarter = group
        series = self.prices.get(symbol)
        if not series:
            return None
        period_end = _period_end(self.groups[group])
        found = close_at(series, period_end)
        if found is None:
            return None
        day, close = found
        return MetricValueRecord(
            symbol=symbol,
            metric=PERIOD_END_PRICE,
            period_type=period_type,
            fiscal_year=fiscal_year,
            fiscal_quarter=fiscal_quarter,
            period_start=None,
            period_end=period_end,
            value=float(close),
            unit=METRICS_BY_ID[PERIOD_END_PRICE].unit,
            form=None,
            accession=None,
            xbrl_tag=None,
            filed=None,
            provenance=f"derived:close({day.isoformat()})",
        )

    def run(self) -> list[MetricValueRecord]:
        derived: list[MetricValueRecord] = []
        for metric in evaluation_order():
            allowed = period_types(metric.id)
            for group in self.order:
                if group[1] not in allowed:
                    continue
                if metric.id == PERIOD_END_PRICE:
                    record = self.period_end_price(group)
                    basis = self.price_basis.get(group[0])
                else:
                    evaluation = _Evaluation(self, metric, group)
                    record = evaluation.run()
                    basis = evaluation.target
                if record is not None:
                    self.add(record, basis)
                    derived.append(record)
        return sorted(derived, key=_key)


def _key(record: MetricValueRecord) -> _Key:
    return (
        record.symbol,
        record.metric,
        record.period_type,
        record.fiscal_year,
        record.fiscal_quarter,
    )


def derive_metrics(
    values: list[MetricValueRecord],
    prices: Mapping[str, Sequence[tuple[date, float]]] | None = None,
    *,
    splits: Mapping[str, Sequence[StockSplit]] | None = None,
) -> list[MetricValueRecord]:
    """The derived catalog metrics for the companies and periods of `values`.

    `values` are reported figures (as `parse_companyfacts` returns them; derived rows
    among them are ignored and recomputed). `prices` maps a symbol to its daily
    (day, close), sorted by day, closes split-adjusted as of the last day; without
    prices for a symbol its share price and valuation metrics are skipped. `splits`
    maps a symbol to its stock splits (`CompanyRecord.splits`); a symbol without any is
    taken never to have split. Returns only the derived records, sorted by (symbol,
    metric, period type, fiscal year, fiscal quarter).
    """
    return _Deriver(values, prices or {}, splits or {}).run()


def derive_by_formula(values: list[MetricValueRecord], metric: Metric) -> list[DerivedValueRecord]:
    """`metric` computed by its own formula (a question's definition of it, over reported
    catalog metrics) for every company and annual period `values` hold its inputs for."""
    deriver = _Deriver(values, {}, {})
    found: list[DerivedValueRecord] = []
    for group in deriver.order:
        if group[1] != ANNUAL:
            continue
        record = _Evaluation(deriver, metric, group).run()
        if record is not None:
            found.append(record)
    return found
