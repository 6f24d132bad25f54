"""`finq data check`: gaps and suspicious values in the figures and prices the database holds.

Each check is a pure function over one company's rows (`ValueRow`s of reported metrics,
the days it has prices for) returning `Finding`s; `check_database` reads every company's
rows in three queries and runs them all.

Levels. An **error** is a figure that cannot be true, contradicts another, or is a hole
the ingest promises not to leave; `finq data check` exits 1 when it finds one. A
**warning** can be true but deserves a look: answers stay right, or there is simply none.

Errors:
- `missing_years`: a core metric (`CORE_METRICS`: revenue, net income, total assets and
  liabilities, equity, operating cash flow, diluted EPS) has no annual value for a fiscal
  year between the first and last it has. Every 10-K reports these lines and the ingest's
  tag fallbacks promise an unbroken series, so the user would get "no data" for a year the
  company plainly reported.
- `quarters_vs_year`: a dollar flow's four quarters sum to more than 1% away from its
  fiscal year (1% of the larger of the year and the quarters' absolute sum, so a year near
  zero does not make every cent an error; and never less than what rounding to the filer's
  unit explains, see `rounding_unit`).
- `balance_sheet`: total assets differ from the reported total of liabilities and equity
  by more than 1% (two sides of one balance sheet), or from total liabilities +
  stockholders' equity when no such total is held.
- `sign`: a negative value of a metric that cannot be negative (`NON_NEGATIVE_METRICS`:
  revenue, assets, liabilities, cash, share counts).
- `jump` by a factor of a thousand or more (`SCALE_SLIP_FACTOR`): the slip between
  units, thousands and millions that XBRL filers make; nothing real moves a revenue, a
  balance or a share count that far in a year.

Warnings:
- `missing_quarters`: a fiscal year of a core metric has some quarters but not all (Q1-Q4;
  Q1-Q3 for per-share figures, whose Q4 the ingest never derives), one finding per run of
  years with the same gap. The year in progress is skipped. This is coverage, not a fault:
  the first 10-Qs in XBRL start mid-year, and 10-Qs report cash flows year-to-date, so a
  cash flow's Q2 and Q3 are missing year after year.
- `balance_sheet`: total assets differ from total liabilities + stockholders' equity by
  more than 1% while the reported total of liabilities and equity agrees with them: the
  rest is equity outside `stockholders_equity` (noncontrolling interests, temporary
  equity), which is real. One finding names all the period ends it shows at.
- `jump` by ×10 or more (below a thousand) for a figure of scale (`SCALE_METRICS`), year
  on year or quarter on the matching quarter of the year before: a stock split not carried through
  looks like this, but so does a start-up's growth. Income lines are left out: a profit ten
  times last year's small one is ordinary.
- `price_gap`: more than `MAX_PRICE_GAP_DAYS` calendar days between consecutive trading
  days. No exchange closes that long (the longest closure in decades, after 11 September
  2001, spans exactly 7), so days are missing; answers for them say what is held instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise
from typing import Any, Literal

import asyncpg

from shared.metric_catalog import CATALOG, METRICS_BY_ID

Level = Literal["error", "warning"]
ERROR: Level = "error"
WARNING: Level = "warning"

# The lines every 10-K has: a year without one is a year the user gets no answer for.
CORE_METRICS: tuple[str, ...] = (
    "revenue",
    "net_income",
    "total_assets",
    "total_liabilities",
    "stockholders_equity",
    "operating_cash_flow",
    "eps_diluted",
)
NON_NEGATIVE_METRICS: frozenset[str] = frozenset(
    {
        "revenue",
        "total_assets",
        "total_liabilities",
        "cash_and_equivalents",
        "shares_outstanding",
        "weighted_average_shares_basic",
        "weighted_average_shares_diluted",
    }
)
# Figures whose size moves with the business, not with one year's luck.
SCALE_METRICS: tuple[str, ...] = (
    "revenue",
    "total_assets",
    "total_liabilities",
    "stockholders_equity",
    "shares_outstanding",
    "weighted_average_shares_diluted",
)
# Dollar flows add up over quarters (per-share figures and share counts do not).
ADDITIVE_METRICS: frozenset[str] = frozenset(
    m.id for m in CATALOG if not m.derived and m.kind == "flow" and m.unit == "USD"
)
REPORTED_METRICS: tuple[str, ...] = tuple(m.id for m in CATALOG if not m.derived)

TOLERANCE = 0.01  # 1%: far above rounding to the million, far below any real mismatch
JUMP_FACTOR = 10.0
# Filers slip between units, thousands and millions; no business or stock split moves a
# figure of scale by a thousand times in one year. A slip on top of a year's real change
# (a tenth either way) reads ×900 or more.
SCALE_SLIP_FACTOR = 900.0
MAX_PRICE_GAP_DAYS = 7


@dataclass(frozen=True)
class ValueRow:
    """One `metric_values` row, the columns the checks read."""

    metric: str
    period_type: str  # "annual" or "quarterly"
    fiscal_year: int
    fiscal_quarter: int  # 0 for annual
    value: float


@dataclass(frozen=True)
class Finding:
    symbol: str
    check: str
    level: Level
    message: str
    metric: str | None = None
    period: str | None = None  # "FY2023", "Q2 FY2023", "FY2012-FY2014", "2001-09-10..2001-09-20"

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "level": self.level,
            "metric": self.metric,
            "period": self.period,
            "message": self.message,
        }


def _period(year: int, quarter: int = 0) -> str:
    return f"Q{quarter} FY{year}" if quarter else f"FY{year}"


def _year_ranges(years: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive years merged: [2012, 2013, 2014, 2017] → [(2012, 2014), (2017, 2017)]."""
    ranges: list[tuple[int, int]] = []
    for year in sorted(years):
        if ranges and ranges[-1][1] == year - 1:
            ranges[-1] = (ranges[-1][0], year)
        else:
            ranges.append((year, year))
    return ranges


def _annual(rows: Iterable[ValueRow]) -> dict[str, dict[int, float]]:
    """metric → fiscal year → value."""
    annual: dict[str, dict[int, float]] = defaultdict(dict)
    for row in rows:
        if row.period_type == "annual":
            annual[row.metric][row.fiscal_year] = row.value
    return annual


def _quarterly(rows: Iterable[ValueRow]) -> dict[str, dict[int, dict[int, float]]]:
    """metric → fiscal year → quarter → value."""
    quarterly: dict[str, dict[int, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for row in rows:
        if row.period_type == "quarterly":
            quarterly[row.metric][row.fiscal_year][row.fiscal_quarter] = row.value
    return quarterly


def rounding_unit(values: Iterable[float]) -> float:
    """The unit the figures were rounded to: the largest power of ten up to a million that
    divides all of them (filings state amounts in millions, thousands or dollars)."""
    unit = 1_000_000.0
    for value in values:
        while unit > 1 and abs(value / unit - round(value / unit)) > 1e-6:
            unit /= 10
    return unit


def _off_by(value: float, expected: float, scale: float, allowance: float = 0.0) -> float | None:
    """The relative difference when it is above TOLERANCE of `scale` and above `allowance`
    (what rounding alone can explain), else None."""
    difference = abs(value - expected)
    if difference <= max(TOLERANCE * scale, allowance):
        return None
    return difference / scale if scale else float("inf")


def _money(value: float) -> str:
    return f"{value / 1e6:,.0f}M" if abs(value) >= 1e6 else f"{value:,.2f}"


def _figure(metric: str, value: float) -> str:
    """A value as its unit reads: dollars in millions, share counts whole, per-share to
    the cent."""
    unit = METRICS_BY_ID[metric].unit if metric in METRICS_BY_ID else "USD"
    if unit == "shares":
        return f"{value:,.0f} shares"
    if unit == "USD":
        return _money(value)
    return f"{value:,.2f} {unit}"


def _factor(ratio: float) -> str:
    return f"×{ratio:,.1f}" if ratio >= 1 else f"÷{1 / ratio:,.1f}"


# --- the checks --------------------------------------------------------------------------


def missing_fiscal_years(
    symbol: str, rows: Iterable[ValueRow], metrics: Sequence[str] = CORE_METRICS
) -> list[Finding]:
    findings = []
    annual = _annual(rows)
    for metric in metrics:
        years = annual.get(metric, {})
        if not years:
            continue
        missing = set(range(min(years), max(years) + 1)) - years.keys()
        for first, last in _year_ranges(missing):
            span = _period(first) if first == last else f"{_period(first)}-{_period(last)}"
            findings.append(
                Finding(
                    symbol,
                    "missing_years",
                    ERROR,
                    f"{metric} has no annual value for {span} "
                    f"(it has FY{min(years)}-FY{max(years)} otherwise)",
                    metric,
                    span,
                )
            )
    return findings


def missing_quarters(
    symbol: str, rows: Sequence[ValueRow], metrics: Sequence[str] = CORE_METRICS
) -> list[Finding]:
    """One finding per run of consecutive fiscal years that lack the same quarters (a cash
    flow's Q2 and Q3 are missing year after year: 10-Qs report cash flows year-to-date)."""
    findings = []
    annual = _annual(rows)
    quarterly = _quarterly(rows)
    for metric in metrics:
        catalog_metric = METRICS_BY_ID.get(metric)
        # Q4 of a per-share flow exists only where a company filed a three-month Q4.
        per_share = catalog_metric is not None and catalog_metric.unit == "USD/share"
        expected = {1, 2, 3} if per_share else {1, 2, 3, 4}
        closed_years = annual.get(metric, {}).keys()
        gaps: dict[tuple[int, ...], list[int]] = defaultdict(list)
        instant = catalog_metric is not None and catalog_metric.kind == "instant"
        for year, quarters in quarterly.get(metric, {}).items():
            # A year with no annual value yet is the one in progress (or before the first
            # 10-K): its later quarters have not been filed. An instant's Q4 is the year-end
            # balance itself, so a year with only that has no quarterly figures at all.
            if year not in closed_years or (instant and quarters.keys() <= {4}):
                continue
            absent = tuple(sorted(expected - quarters.keys()))
            if absent:
                gaps[absent].append(year)
        runs = [
            (first, last, absent)
            for absent, years in gaps.items()
            for first, last in _year_ranges(years)
        ]
        for first, last, absent in sorted(runs):
            span = _period(first) if first == last else f"{_period(first)}-{_period(last)}"
            names = ", ".join(f"Q{q}" for q in absent)
            findings.append(
                Finding(
                    symbol,
                    "missing_quarters",
                    WARNING,
                    f"{metric} has no {names} for {span} (other quarters of "
                    f"{'that year' if first == last else 'those years'} are held)",
                    metric,
                    span,
                )
            )
    return findings


def quarters_not_summing_to_year(symbol: str, rows: Sequence[ValueRow]) -> list[Finding]:
    findings = []
    annual = _annual(rows)
    for metric, years in _quarterly(rows).items():
        if metric not in ADDITIVE_METRICS:
            continue
        for year, quarters in sorted(years.items()):
            if year not in annual.get(metric, {}) or set(quarters) != {1, 2, 3, 4}:
                continue
            year_value = annual[metric][year]
            total = sum(quarters.values())
            scale = max(abs(year_value), sum(abs(v) for v in quarters.values()))
            # Six figures each rounded by up to half a unit: the year, three quarters, and
            # the year and nine months a derived Q4 is the difference of.
            allowance = 3 * rounding_unit([year_value, *quarters.values()])
            off = _off_by(total, year_value, scale, allowance)
            if off is not None:
                findings.append(
                    Finding(
                        symbol,
                        "quarters_vs_year",
                        ERROR,
                        f"{metric} FY{year} is {_money(year_value)} but its quarters sum to "
                        f"{_money(total)} ({off:.1%} apart)",
                        metric,
                        _period(year),
                    )
                )
    return findings


def balance_sheet_off(symbol: str, rows: Sequence[ValueRow]) -> list[Finding]:
    """Total assets against the other side of the balance sheet, at each year and quarter
    end. Equity held outside stockholders' equity is one warning for all the period ends
    it shows at: it is the same fact about the company each time."""
    by_period: dict[tuple[int, int], dict[str, float]] = defaultdict(dict)
    for row in rows:
        # Q4 balances are the fiscal year end's: checked once, as the year.
        if row.period_type == "annual" or row.fiscal_quarter in (1, 2, 3):
            by_period[(row.fiscal_year, row.fiscal_quarter)][row.metric] = row.value
    findings = []
    outside_equity: list[tuple[str, float]] = []  # (period, share of assets)
    # Chronological: a fiscal year's end (quarter 0 here) comes after its Q3.
    for (year, quarter), values in sorted(
        by_period.items(), key=lambda kv: (kv[0][0], kv[0][1] or 4)
    ):
        assets = values.get("total_assets")
        if assets is None:
            continue
        period = _period(year, quarter)
        both_sides = values.get("total_liabilities_and_equity")
        sides_agree = both_sides is not None and _off_by(both_sides, assets, abs(assets)) is None
        if both_sides is not None and not sides_agree:
            off = abs(both_sides - assets) / abs(assets) if assets else float("inf")
            findings.append(
                Finding(
                    symbol,
                    "balance_sheet",
                    ERROR,
                    f"{period}: total assets {_money(assets)} but total liabilities and equity "
                    f"{_money(both_sides)} ({off:.1%} apart)",
                    "total_assets",
                    period,
                )
            )
        liabilities = values.get("total_liabilities")
        equity = values.get("stockholders_equity")
        if liabilities is None or equity is None:
            continue
        off_by = _off_by(liabilities + equity, assets, abs(assets))
        if off_by is None:
            continue
        if sides_agree:
            outside_equity.append((period, abs(assets - liabilities - equity) / abs(assets)))
            continue
        findings.append(
            Finding(
                symbol,
                "balance_sheet",
                ERROR,
                f"{period}: total assets {_money(assets)} but total liabilities "
                f"{_money(liabilities)} + stockholders' equity {_money(equity)} = "
                f"{_money(liabilities + equity)} ({off_by:.1%} apart)",
                "total_assets",
                period,
            )
        )
    if outside_equity:
        first, last = outside_equity[0][0], outside_equity[-1][0]
        shares = [share for _, share in outside_equity]
        span = first if first == last else f"{first}..{last}"
        findings.append(
            Finding(
                symbol,
                "balance_sheet",
                WARNING,
                f"at {len(outside_equity)} period end(s) from {first} to {last}, total "
                f"liabilities + stockholders' equity differ from total assets by "
                f"{min(shares):.1%}-{max(shares):.1%} while the reported total of liabilities "
                "and equity agrees: the rest is equity outside stockholders' equity "
                "(noncontrolling interests, temporary equity)",
                "total_assets",
                span,
            )
        )
    return findings


def impossible_signs(
    symbol: str, rows: Iterable[ValueRow], metrics: frozenset[str] = NON_NEGATIVE_METRICS
) -> list[Finding]:
    return [
        Finding(
            symbol,
            "sign",
            ERROR,
            f"{row.metric} {_period(row.fiscal_year, row.fiscal_quarter)} is negative "
            f"({_figure(row.metric, row.value)})",
            row.metric,
            _period(row.fiscal_year, row.fiscal_quarter),
        )
        for row in rows
        if row.metric in metrics and row.value < 0
    ]


def year_over_year_jumps(
    symbol: str, rows: Iterable[ValueRow], metrics: Sequence[str] = SCALE_METRICS
) -> list[Finding]:
    """Each fiscal year against the one before, and each quarter against its match of the
    year before (a slip in one 10-Q shows only there)."""
    series: dict[str, dict[tuple[int, int], float]] = defaultdict(dict)
    for row in rows:
        catalog_metric = METRICS_BY_ID.get(row.metric)
        # An instant's Q4 is its fiscal year end balance: compared once, as the year.
        year_end_copy = (
            row.fiscal_quarter == 4
            and catalog_metric is not None
            and catalog_metric.kind == "instant"
        )
        if row.metric in metrics and not year_end_copy:
            series[row.metric][(row.fiscal_year, row.fiscal_quarter)] = row.value
    findings = []
    for metric in metrics:
        values = series.get(metric, {})
        for (year, quarter), now in sorted(values.items()):
            before = values.get((year - 1, quarter))
            # A change of sign or a zero has no meaningful ratio.
            if before is None or before == 0 or now == 0 or (before < 0) != (now < 0):
                continue
            ratio = now / before
            factor = max(ratio, 1 / ratio)
            if factor < JUMP_FACTOR:
                continue
            slip = factor >= SCALE_SLIP_FACTOR
            findings.append(
                Finding(
                    symbol,
                    "jump",
                    ERROR if slip else WARNING,
                    f"{metric} went from {_figure(metric, before)} in "
                    f"{_period(year - 1, quarter)} to {_figure(metric, now)} in "
                    f"{_period(year, quarter)} ({_factor(ratio)})"
                    + ("; a factor of a thousand is a units/thousands slip" if slip else ""),
                    metric,
                    _period(year, quarter),
                )
            )
    return findings


def price_gaps(symbol: str, days: Sequence[date]) -> list[Finding]:
    """Days must be sorted."""
    return [
        Finding(
            symbol,
            "price_gap",
            WARNING,
            f"no prices between {before} and {after} ({(after - before).days} days)",
            None,
            f"{before}..{after}",
        )
        for before, after in pairwise(days)
        if (after - before).days > MAX_PRICE_GAP_DAYS
    ]


def check_company(
    symbol: str, rows: Sequence[ValueRow], price_days: Sequence[date] = ()
) -> list[Finding]:
    return [
        *missing_fiscal_years(symbol, rows),
        *missing_quarters(symbol, rows),
        *quarters_not_summing_to_year(symbol, rows),
        *balance_sheet_off(symbol, rows),
        *impossible_signs(symbol, rows),
        *year_over_year_jumps(symbol, rows),
        *price_gaps(symbol, price_days),
    ]


# --- the report ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompanyCheck:
    symbol: str
    values_checked: int
    price_days: int
    findings: list[Finding]

    @property
    def errors(self) -> int:
        return sum(finding.level == ERROR for finding in self.findings)

    @property
    def warnings(self) -> int:
        return sum(finding.level == WARNING for finding in self.findings)


@dataclass(frozen=True)
class CheckReport:
    companies: list[CompanyCheck] = field(default_factory=list)
    prices_table: bool = True

    @property
    def errors(self) -> int:
        return sum(company.errors for company in self.companies)

    @property
    def warnings(self) -> int:
        return sum(company.warnings for company in self.companies)

    def to_json(self) -> dict[str, Any]:
        return {
            "errors": self.errors,
            "warnings": self.warnings,
            "prices_checked": self.prices_table,
            "companies": [
                {
                    "symbol": company.symbol,
                    "values_checked": company.values_checked,
                    "price_days": company.price_days,
                    "errors": company.errors,
                    "warnings": company.warnings,
                    "findings": [finding.to_json() for finding in company.findings],
                }
                for company in self.companies
            ],
        }


def build_report(
    symbols: Sequence[str],
    rows: Mapping[str, Sequence[ValueRow]],
    price_days: Mapping[str, Sequence[date]],
    prices_table: bool = True,
) -> CheckReport:
    return CheckReport(
        companies=[
            CompanyCheck(
                symbol,
                len(rows.get(symbol, ())),
                len(price_days.get(symbol, ())),
                check_company(symbol, rows.get(symbol, ()), price_days.get(symbol, ())),
            )
            for symbol in symbols
        ],
        prices_table=prices_table,
    )


def format_report(report: CheckReport) -> str:
    lines = []
    for company in report.companies:
        held = f"{company.values_checked:,} values, {company.price_days:,} price days"
        if not company.findings:
            lines.append(f"{company.symbol}: ok ({held})")
            continue
        lines.append(
            f"{company.symbol}: {company.errors} error(s), {company.warnings} warning(s) ({held})"
        )
        # Errors first; within a level, in the order the checks ran.
        for finding in sorted(company.findings, key=lambda f: f.level != ERROR):
            lines.append(f"  {finding.level:<7} {finding.check:<16} {finding.message}")
    if not report.prices_table:
        lines.append("(no prices table: price gaps not checked)")
    lines.append(
        f"{len(report.companies)} companies: {report.errors} error(s), {report.warnings} warning(s)"
    )
    return "\n".join(lines)


# --- the database ---------------------------------------------------------------------------


async def check_database(conn: asyncpg.Connection) -> CheckReport:
    """Every company's findings, from three queries (companies, metric values, price days)."""
    companies = await conn.fetch(
        "SELECT symbol, to_regclass('prices') IS NOT NULL AS has_prices "
        "FROM companies ORDER BY symbol"
    )
    symbols = [row["symbol"] for row in companies]
    has_prices = bool(companies[0]["has_prices"]) if companies else False
    value_rows = await conn.fetch(
        "SELECT symbol, metric, period_type, fiscal_year, fiscal_quarter, value "
        "FROM metric_values WHERE period_type IN ('annual', 'quarterly') "
        "AND metric = ANY($1::text[])",
        list(REPORTED_METRICS),
    )
    rows: dict[str, list[ValueRow]] = defaultdict(list)
    for row in value_rows:
        rows[row["symbol"]].append(
            ValueRow(
                row["metric"],
                row["period_type"],
                row["fiscal_year"],
                row["fiscal_quarter"],
                row["value"],
            )
        )
    days: dict[str, list[date]] = defaultdict(list)
    if has_prices:
        for row in await conn.fetch("SELECT symbol, day FROM prices ORDER BY symbol, day"):
            days[row["symbol"]].append(row["day"])
    return build_report(symbols, rows, days, prices_table=has_prices)
