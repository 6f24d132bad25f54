"""Derived metrics: exact values and provenance on synthetic figures, then checks computed by
hand from the SEC companyfacts JSON (skipped without ../shared/data)."""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from datetime import date
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from services.ingest.companyfacts import MetricValueRecord, parse_companyfacts, read_json
from services.ingest.dataset import DEFAULT_DATASET_DIR, read_dataset
from services.ingest.derived import DerivedValueRecord, derive_metrics
from services.ingest.prices import parse_price_csv
from services.ingest.stock_splits import StockSplit, stock_splits
from shared.metric_catalog import METRICS_BY_ID
from tests.helpers import require_shared_data

Key = tuple[str, str, int, int]  # metric, period type, fiscal year, fiscal quarter


# --- builders -----------------------------------------------------------------------


def fy_end(year: int) -> date:
    return date(year, 12, 31)


def reported(
    metric: str,
    value: float,
    year: int = 2023,
    *,
    period_type: str = "annual",
    quarter: int = 0,
    end: date | None = None,
    start: date | None = None,
    filed: date | None = None,
    symbol: str = "EX",
) -> MetricValueRecord:
    """A reported figure as parse_companyfacts returns it: calendar fiscal years by default."""
    catalog = METRICS_BY_ID[metric]
    end = end or fy_end(year)
    if catalog.kind == "flow" and start is None:
        start = date(year, 1, 1)
    return MetricValueRecord(
        symbol=symbol,
        metric=metric,
        period_type=period_type,
        fiscal_year=year,
        fiscal_quarter=quarter,
        period_start=start if catalog.kind == "flow" else None,
        period_end=end,
        value=float(value),
        unit=catalog.unit,
        form="10-K",
        accession=f"k-{year}",
        xbrl_tag="Tag",
        filed=filed or date(year + 1, 2, 1),
        provenance="xbrl:us-gaap:Tag",
    )


def by_key(records: list[MetricValueRecord]) -> dict[Key, MetricValueRecord]:
    keyed = {(r.metric, r.period_type, r.fiscal_year, r.fiscal_quarter): r for r in records}
    assert len(keyed) == len(records), "two derived values for one key"
    return keyed


def annual(records: list[MetricValueRecord], metric: str, year: int = 2023) -> MetricValueRecord:
    return by_key(records)[(metric, "annual", year, 0)]


def has(records: list[MetricValueRecord], metric: str, year: int = 2023) -> bool:
    return (metric, "annual", year, 0) in by_key(records)


# --- synthetic: values and provenance ---------------------------------------------------


def test_a_margin_is_exact_and_cites_its_formula() -> None:
    derived = derive_metrics([reported("revenue", 400), reported("gross_profit", 100)])
    margin = annual(derived, "gross_margin")
    assert margin.value == 25.0
    assert margin.provenance == "derived:gross_profit / revenue * 100"
    assert (margin.unit, margin.period_start, margin.period_end) == (
        "%",
        date(2023, 1, 1),
        date(2023, 12, 31),
    )
    assert (margin.form, margin.accession, margin.xbrl_tag) == (None, None, None)
    assert margin.filed == date(2024, 2, 1)


def test_no_value_when_an_input_is_missing() -> None:
    derived = derive_metrics([reported("revenue", 400), reported("operating_income", 80)])
    assert annual(derived, "operating_margin").value == 20.0
    for metric in ("gross_margin", "net_margin", "free_cash_flow", "ebitda", "revenue_growth"):
        assert not has(derived, metric), metric


def test_free_cash_flow_and_its_margin() -> None:
    derived = derive_metrics(
        [
            reported("revenue", 1000),
            reported("operating_cash_flow", 300),
            reported("capital_expenditures", 120),
        ]
    )
    fcf = annual(derived, "free_cash_flow")
    assert (fcf.value, fcf.provenance) == (
        180.0,
        "derived:operating_cash_flow - capital_expenditures",
    )
    # A derived input is read like a reported one.
    assert annual(derived, "free_cash_flow_margin").value == 18.0


def test_return_on_equity_averages_opening_and_closing_equity_when_it_can() -> None:
    derived = derive_metrics(
        [
            reported("net_income", 30, 2022),
            reported("stockholders_equity", 100, 2022),
            reported("net_income", 45, 2023),
            reported("stockholders_equity", 200, 2023),
        ]
    )
    with_opening = annual(derived, "return_on_equity", 2023)
    assert with_opening.value == 30.0  # 45 / ((200 + 100) / 2) * 100
    assert with_opening.provenance == (
        "derived:net_income / ((stockholders_equity + stockholders_equity[-1]) / 2) * 100"
    )
    # No 2021 balance: the closing one alone, and the provenance says so.
    closing_only = annual(derived, "return_on_equity", 2022)
    assert closing_only.value == 30.0
    assert closing_only.provenance == "derived:net_income / stockholders_equity * 100"


def test_growth_and_cagr() -> None:
    revenue = [reported("revenue", value, year) for year, value in ((2018, 100), (2021, 133.1))]
    revenue += [reported("revenue", 121, 2020), reported("revenue", 110, 2019)]
    derived = derive_metrics(revenue)
    growth = annual(derived, "revenue_growth", 2021)
    assert growth.value == pytest.approx(10.0)
    assert growth.provenance == "derived:(revenue / revenue[-1] - 1) * 100"
    cagr = annual(derived, "revenue_cagr_3y", 2021)
    assert cagr.value == pytest.approx(10.0)
    assert cagr.provenance == "derived:((revenue / revenue[-3]) ** (1 / 3) - 1) * 100"
    assert not has(derived, "revenue_cagr_5y", 2021)
    assert not has(derived, "revenue_growth", 2018)


def test_no_growth_from_a_negative_base() -> None:
    derived = derive_metrics([reported("net_income", -50, 2022), reported("net_income", 20, 2023)])
    assert not has(derived, "net_income_growth", 2023)


def test_pe_is_skipped_for_negative_eps_but_earnings_yield_is_not() -> None:
    values = [reported("eps_diluted", -2.0), reported("shares_outstanding", 1000)]
    prices = {"EX": [(date(2023, 12, 29), 50.0)]}
    derived = derive_metrics(values, prices)
    assert not has(derived, "pe_ratio")
    assert annual(derived, "earnings_yield").value == -4.0
    assert annual(derived, "market_cap").value == 50_000.0


def test_no_division_by_zero() -> None:
    derived = derive_metrics([reported("operating_income", 50), reported("interest_expense", 0)])
    assert not has(derived, "interest_coverage")


def test_optional_components_are_left_out_of_the_provenance() -> None:
    derived = derive_metrics(
        [
            reported("long_term_debt", 900),
            reported("current_debt", 100),
            reported("cash_and_equivalents", 300),
            reported("current_assets", 500),
            reported("current_liabilities", 250),
        ]
    )
    debt = annual(derived, "total_debt")
    assert (debt.value, debt.provenance) == (1000.0, "derived:long_term_debt + current_debt")
    assert annual(derived, "net_debt").value == 700.0
    quick = annual(derived, "quick_ratio")
    assert (quick.value, quick.provenance) == (
        2.0,
        "derived:current_assets / current_liabilities",
    )
    with_paper = derive_metrics([reported("long_term_debt", 900), reported("commercial_paper", 50)])
    assert annual(with_paper, "total_debt").provenance == (
        "derived:long_term_debt + commercial_paper"
    )


def test_valuation_uses_the_last_close_on_or_before_the_period_end() -> None:
    values = [
        reported("shares_outstanding", 1_000),
        reported("eps_diluted", 2.0),
        reported("net_income", 2_000),
        reported("revenue", 10_000),
        reported("stockholders_equity", 5_000),
        reported("long_term_debt", 3_000),
        reported("cash_and_equivalents", 1_000),
    ]
    # 2023-12-31 is a Sunday: Friday's close is the period-end price; January's is not.
    closes = [(date(2023, 12, 28), 39.0), (date(2023, 12, 29), 40.0), (date(2024, 1, 2), 99.0)]
    prices = {"EX": closes}
    derived = derive_metrics(values, prices)
    price = annual(derived, "period_end_price")
    assert (price.value, price.provenance, price.period_end) == (
        40.0,
        "derived:close(2023-12-29)",
        date(2023, 12, 31),
    )
    market_cap = annual(derived, "market_cap")
    assert market_cap.value == 40_000.0
    assert market_cap.provenance == "derived:period_end_price * shares_outstanding"
    assert annual(derived, "pe_ratio").value == 20.0
    assert annual(derived, "price_to_sales").value == 4.0
    assert annual(derived, "price_to_book").value == 8.0
    assert annual(derived, "enterprise_value").value == 42_000.0  # 40,000 + 3,000 - 1,000
    assert annual(derived, "earnings_yield").value == 5.0


def test_no_valuation_without_a_recent_price() -> None:
    values = [reported("shares_outstanding", 1_000), reported("eps_diluted", 2.0)]
    assert not has(derive_metrics(values), "market_cap")
    # The price file ends months before the period does.
    stale = {"EX": [(date(2023, 6, 30), 40.0)]}
    derived = derive_metrics(values, stale)
    assert not has(derived, "period_end_price")
    assert not has(derived, "pe_ratio")


RATIO_TAG = "us-gaap:StockholdersEquityNoteStockSplitConversionRatio1"
SPLIT = {"EX": (StockSplit(date(2022, 6, 1), Fraction(4), "q-2022", date(2022, 8, 1), RATIO_TAG),)}


def test_eps_growth_brings_both_years_to_one_split_basis() -> None:
    # FY2021 EPS as the FY2021 10-K reported it (before the 4-for-1 split), FY2022 after it.
    values = [
        reported("eps_diluted", 8.0, 2021, filed=date(2022, 2, 1)),
        reported("eps_diluted", 2.2, 2022, filed=date(2023, 2, 1)),
    ]
    growth = annual(derive_metrics(values, splits=SPLIT), "eps_growth", 2022)
    assert growth.value == pytest.approx(10.0)
    assert growth.provenance == "derived:(eps_diluted / (eps_diluted[-1] / 4) - 1) * 100"
    # Without the split the "growth" is the split itself.
    unsplit = annual(derive_metrics(values, splits={}), "eps_growth", 2022)
    assert unsplit.value == pytest.approx(-72.5)


def test_market_cap_brings_shares_to_the_price_files_split_basis() -> None:
    # FY2021 shares as reported before the split; the price file was downloaded after it.
    values = [reported("shares_outstanding", 1_000, 2021, filed=date(2022, 2, 1))]
    prices = {"EX": [(date(2021, 12, 31), 25.0), (date(2023, 3, 1), 30.0)]}
    market_cap = annual(derive_metrics(values, prices, splits=SPLIT), "market_cap", 2021)
    assert market_cap.value == 100_000.0  # 25 × (1,000 × 4): the pre-split price was 100
    assert market_cap.provenance == "derived:period_end_price * (shares_outstanding * 4)"
    # Per-share metrics without a price go to the latest basis.
    values.append(reported("stockholders_equity", 8_000, 2021))
    bvps = annual(derive_metrics(values, splits=SPLIT), "book_value_per_share", 2021)
    assert bvps.value == 2.0
    assert bvps.provenance == "derived:stockholders_equity / (shares_outstanding * 4)"


def test_quarters_get_margins_but_not_returns_and_ttm_reads_the_quarters_balance() -> None:
    end = date(2024, 3, 31)
    quarter: dict[str, Any] = {"period_type": "quarterly", "quarter": 1, "end": end}
    ttm: dict[str, Any] = {**quarter, "period_type": "ttm", "start": date(2023, 4, 1)}
    values = [
        reported("revenue", 100, 2024, start=date(2024, 1, 1), **quarter),
        reported("net_income", 10, 2024, start=date(2024, 1, 1), **quarter),
        reported("revenue", 380, 2024, **ttm),
        reported("net_income", 38, 2024, **ttm),
        reported("stockholders_equity", 200, 2024, **quarter),
        reported("stockholders_equity", 180, 2023, **{**quarter, "end": date(2023, 3, 31)}),
    ]
    derived = by_key(derive_metrics(values))
    assert derived[("net_margin", "quarterly", 2024, 1)].value == 10.0
    assert derived[("net_margin", "ttm", 2024, 1)].value == 10.0
    assert ("return_on_equity", "quarterly", 2024, 1) not in derived
    roe = derived[("return_on_equity", "ttm", 2024, 1)]
    assert roe.value == 20.0  # 38 / ((200 + 180) / 2) * 100
    assert (roe.period_start, roe.period_end) == (date(2023, 4, 1), end)


def test_derived_rows_among_the_inputs_are_recomputed_not_duplicated() -> None:
    values = [reported("revenue", 400), reported("gross_profit", 100)]
    first = derive_metrics(values)
    assert derive_metrics([*values, *first]) == first


def inputs_of(record: MetricValueRecord) -> dict[str, float]:
    assert isinstance(record, DerivedValueRecord), record
    return dict(record.inputs)


def test_a_derived_value_records_the_stored_figures_its_formula_read() -> None:
    derived = derive_metrics([reported("revenue", 400), reported("gross_profit", 100)])
    assert inputs_of(annual(derived, "gross_margin")) == {"gross_profit": 100.0, "revenue": 400.0}
    # In the order the formula reads them, so an answer can show them in that order.
    assert [term for term, _ in annual(derived, "gross_margin").inputs] == [
        "gross_profit",
        "revenue",
    ]


def test_an_average_records_the_opening_balance_under_its_earlier_year_term() -> None:
    derived = derive_metrics(
        [
            reported("net_income", 30, 2022),
            reported("stockholders_equity", 100, 2022),
            reported("net_income", 45, 2023),
            reported("stockholders_equity", 200, 2023),
        ]
    )
    assert inputs_of(annual(derived, "return_on_equity", 2023)) == {
        "net_income": 45.0,
        "stockholders_equity": 200.0,
        "stockholders_equity[-1]": 100.0,
    }
    # No 2021 balance: only what the provenance's formula names.
    assert inputs_of(annual(derived, "return_on_equity", 2022)) == {
        "net_income": 30.0,
        "stockholders_equity": 100.0,
    }


def test_an_optional_component_left_out_is_not_an_input() -> None:
    derived = derive_metrics([reported("long_term_debt", 900), reported("current_debt", 100)])
    assert inputs_of(annual(derived, "total_debt")) == {
        "long_term_debt": 900.0,
        "current_debt": 100.0,
    }


def test_valuation_inputs_hold_the_close_and_the_shares_as_stored_before_the_split() -> None:
    values = [reported("shares_outstanding", 1_000, 2021, filed=date(2022, 2, 1))]
    prices = {"EX": [(date(2021, 12, 31), 25.0), (date(2023, 3, 1), 30.0)]}
    market_cap = annual(derive_metrics(values, prices, splits=SPLIT), "market_cap", 2021)
    # The split factor stays in the provenance, so the inputs are figures the filing shows.
    assert market_cap.provenance == "derived:period_end_price * (shares_outstanding * 4)"
    assert inputs_of(market_cap) == {"period_end_price": 25.0, "shares_outstanding": 1_000.0}


# --- real SEC figures ----------------------------------------------------------------------

CIKS = {"AAPL": "0000320193", "NVDA": "0001045810", "GOOGL": "0001652044", "TSLA": "0001318605"}


# The first trading day on the split-adjusted basis, as the companies announced their
# splits (and Alphabet's 2014 class C dividend), for checking the dates the filings give.
ANNOUNCED_SPLITS: dict[str, tuple[tuple[date, Fraction], ...]] = {
    "AAPL": ((date(2014, 6, 9), Fraction(7)), (date(2020, 8, 31), Fraction(4))),
    "NVDA": ((date(2021, 7, 20), Fraction(4)), (date(2024, 6, 10), Fraction(10))),
    "GOOGL": ((date(2014, 4, 3), Fraction(2)), (date(2022, 7, 18), Fraction(20))),
    "TSLA": ((date(2020, 8, 31), Fraction(5)), (date(2022, 8, 25), Fraction(3))),
}


@cache
def real_inputs() -> tuple[
    list[MetricValueRecord],
    dict[str, list[tuple[date, float]]],
    dict[str, tuple[StockSplit, ...]],
]:
    """The four companies' reported figures, the prices ../shared/data holds, and the splits
    each companyfacts file states."""
    values: list[MetricValueRecord] = []
    splits: dict[str, tuple[StockSplit, ...]] = {}
    for symbol, cik in CIKS.items():
        doc = read_json(require_shared_data("sec", "companyfacts", f"CIK{cik}.json"))
        values += parse_companyfacts(doc, symbol)
        splits[symbol] = stock_splits(doc)
    prices: dict[str, list[tuple[date, float]]] = {}
    for symbol in ("AAPL", "NVDA", "GOOGL"):
        path: Path = require_shared_data("prices", f"{symbol}.csv")
        parse = parse_price_csv(path.read_text("utf-8"), symbol, path.name)
        prices[symbol] = [(row.day, row.close) for row in parse.rows]
    return values, prices, splits


@cache
def real() -> dict[tuple[str, str, int], MetricValueRecord]:
    """Annual derived values of the four companies, across the splits their filings state."""
    values, prices, splits = real_inputs()
    return {
        (r.symbol, r.metric, r.fiscal_year): r
        for r in derive_metrics(values, prices, splits=splits)
        if r.period_type == "annual"
    }


def value(symbol: str, metric: str, year: int) -> float:
    return real()[(symbol, metric, year)].value


def test_apple_fy2023_gross_margin() -> None:
    assert value("AAPL", "gross_margin", 2023) == pytest.approx(169_148 / 383_285 * 100)
    assert round(value("AAPL", "gross_margin", 2023), 2) == 44.13


def test_apple_fy2023_free_cash_flow() -> None:
    fcf = real()[("AAPL", "free_cash_flow", 2023)]
    assert fcf.value == 110_543_000_000 - 10_959_000_000 == 99_584_000_000
    assert fcf.period_end == date(2023, 9, 30)
    assert fcf.filed == date(2023, 11, 3)


def test_apple_fy2023_revenue_growth() -> None:
    growth = value("AAPL", "revenue_growth", 2023)
    assert growth == pytest.approx((383_285 / 394_328 - 1) * 100)
    assert round(growth, 2) == -2.80


@pytest.mark.parametrize(
    ("symbol", "metric", "year", "expected"),
    [
        # Apple FY2023 10-K: operating income 114,301, net income 96,995, revenue 383,285.
        ("AAPL", "operating_margin", 2023, 114_301 / 383_285 * 100),
        ("AAPL", "net_margin", 2023, 96_995 / 383_285 * 100),
        # Current assets 143,566 over current liabilities 145,308.
        ("AAPL", "current_ratio", 2023, 143_566 / 145_308),
        # Term debt 95,281 + current term debt 9,822 + commercial paper 5,985.
        ("AAPL", "total_debt", 2023, (95_281 + 9_822 + 5_985) * 1e6),
        # Equity 62,146 (FY2023) and 50,672 (FY2022).
        ("AAPL", "return_on_equity", 2023, 96_995 / ((62_146 + 50_672) / 2) * 100),
        # Tax 16,741 on pretax income 113,736.
        ("AAPL", "effective_tax_rate", 2023, 16_741 / 113_736 * 100),
        # Operating income plus D&A 11,519.
        ("AAPL", "ebitda", 2023, (114_301 + 11_519) * 1e6),
        # Receivables 29,508 and 28,184.
        ("AAPL", "days_sales_outstanding", 2023, (29_508 + 28_184) / 2 / 383_285 * 365),
        # Dividends 15,025 and buybacks 77,550.
        ("AAPL", "capital_returned", 2023, (15_025 + 77_550) * 1e6),
        ("AAPL", "payout_ratio", 2023, 15_025 / 96_995 * 100),
        # FY2018 revenue 265,595: five years of compound growth to 383,285.
        ("AAPL", "revenue_cagr_5y", 2023, ((383_285 / 265_595) ** (1 / 5) - 1) * 100),
        # FY2017 EPS 9.21 was reported before the 2020 4-for-1 split, FY2018's 2.98 after.
        ("AAPL", "eps_growth", 2018, (2.98 / (9.21 / 4) - 1) * 100),
        # FY2022: close 150.43 on 2022-09-23 times 15,943,425,000 shares; EPS 6.11.
        ("AAPL", "market_cap", 2022, 150.42999267578125 * 15_943_425_000),
        ("AAPL", "pe_ratio", 2022, 150.42999267578125 / 6.11),
        # NVIDIA FY2025: net income 72,880 on revenue 130,497; FY2024 revenue 60,922.
        ("NVDA", "net_margin", 2025, 72_880 / 130_497 * 100),
        ("NVDA", "revenue_growth", 2025, (130_497 / 60_922 - 1) * 100),
        # Alphabet 2023: operating income 84,293 on revenue 307,394; no inventory line, so the
        # quick ratio is current assets 171,530 over current liabilities 81,814.
        ("GOOGL", "operating_margin", 2023, 84_293 / 307_394 * 100),
        ("GOOGL", "quick_ratio", 2023, 171_530 / 81_814),
        # Alphabet 2021: 13,242 M shares as re-presented after the 2022 20-for-1 split, at
        # the pre-split close 2,897.04 of the price file; EPS 5.61 after the split.
        ("GOOGL", "market_cap", 2021, 2_897.040039 * 13_242_000_000 / 20),
        ("GOOGL", "pe_ratio", 2021, 2_897.040039 / (5.61 * 20)),
        # Tesla: 2021 gross profit 13,606 on revenue 53,823; 2019 net loss 862 on 24,578.
        ("TSLA", "gross_margin", 2021, 13_606 / 53_823 * 100),
        ("TSLA", "net_margin", 2019, -862 / 24_578 * 100),
    ],
)
def test_real_figures_computed_by_hand(
    symbol: str, metric: str, year: int, expected: float
) -> None:
    assert value(symbol, metric, year) == pytest.approx(expected, rel=1e-12)


def test_real_provenance_spells_out_the_split_adjustment() -> None:
    assert real()[("AAPL", "eps_growth", 2018)].provenance == (
        "derived:(eps_diluted / (eps_diluted[-1] / 4) - 1) * 100"
    )
    assert real()[("GOOGL", "market_cap", 2021)].provenance == (
        "derived:period_end_price * (shares_outstanding / 20)"
    )


def test_the_filings_split_dates_give_the_figures_the_announced_first_trading_days_give() -> None:
    values, prices, splits = real_inputs()
    announced = {
        symbol: tuple(
            StockSplit(day, ratio, "announcement", day, RATIO_TAG) for day, ratio in dated
        )
        for symbol, dated in ANNOUNCED_SPLITS.items()
    }
    assert {s: [x.ratio for x in v] for s, v in splits.items()} == {
        s: [ratio for _, ratio in v] for s, v in ANNOUNCED_SPLITS.items()
    }
    from_filings = derive_metrics(values, prices, splits=splits)
    # Every period type, every per-share and valuation figure, bit for bit.
    assert from_filings == derive_metrics(values, prices, splits=announced)
    # And the splits matter: without them the per-share history would not compare.
    assert from_filings != derive_metrics(values, prices)


def test_real_gaps_stay_gaps() -> None:
    # Tesla: no price file, so no valuation; its 2019 loss gives no P/E-like ratios either.
    assert ("TSLA", "market_cap", 2021) not in real()
    assert ("TSLA", "payout_ratio", 2019) not in real()
    # Apple's price file ends 2023-04-14: no FY2023 (September) price.
    assert ("AAPL", "market_cap", 2023) not in real()
    # NVIDIA's FY2009 and FY2010 losses: no P/E.
    assert ("NVDA", "pe_ratio", 2010) not in real()
    assert value("NVDA", "earnings_yield", 2010) < 0


# --- the bundled dataset's recorded inputs ----------------------------------------------------

_OPERATORS: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}


def evaluate(node: ast.expr, inputs: Mapping[str, float]) -> float:
    """A provenance's formula with each term replaced by its recorded input."""
    if isinstance(node, ast.Name | ast.Subscript):
        return inputs[ast.unparse(node)]
    if isinstance(node, ast.Constant):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -evaluate(node.operand, inputs)
    assert isinstance(node, ast.BinOp), ast.unparse(node)
    return _OPERATORS[type(node.op)](evaluate(node.left, inputs), evaluate(node.right, inputs))


def stored_key(record: MetricValueRecord, term: str) -> tuple[str, str, str, int, int]:
    """Where the figure a term stands for is stored: `x[-n]` is n fiscal years back, and a
    TTM period reads a balance at its last quarter's end."""
    name, _, back = term.partition("[-")
    years_back = int(back.rstrip("]")) if back else 0
    period_type = record.period_type
    if period_type == "ttm" and METRICS_BY_ID[name].kind == "instant":
        period_type = "quarterly"
    return (
        record.symbol,
        name,
        period_type,
        record.fiscal_year - years_back,
        record.fiscal_quarter,
    )


@cache
def bundled() -> dict[tuple[str, str, str, int, int], MetricValueRecord]:
    return {
        (v.symbol, v.metric, v.period_type, v.fiscal_year, v.fiscal_quarter): v
        for v in read_dataset(DEFAULT_DATASET_DIR).values
    }


def test_bundled_apple_fy2023_gross_margin_inputs_are_its_gross_profit_and_revenue() -> None:
    margin = bundled()[("AAPL", "gross_margin", "annual", 2023, 0)]
    assert inputs_of(margin) == {"gross_profit": 169_148_000_000.0, "revenue": 383_285_000_000.0}
    roe = bundled()[("AAPL", "return_on_equity", "annual", 2023, 0)]
    assert inputs_of(roe) == {
        "net_income": 96_995_000_000.0,
        "stockholders_equity": 62_146_000_000.0,
        "stockholders_equity[-1]": 50_672_000_000.0,
    }


def test_every_bundled_input_is_the_stored_figure_and_gives_the_value_back() -> None:
    values = bundled()
    # Catalog formulas only: a reported metric's "derived:" row (Q4 as the year less nine
    # months) is the companyfacts ingest's arithmetic over XBRL tags, not over metrics.
    derived = [v for v in values.values() if METRICS_BY_ID[v.metric].derived]
    with_inputs = [v for v in derived if isinstance(v, DerivedValueRecord)]
    # Only the period-end close is derived without arithmetic.
    assert {v.metric for v in derived} - {v.metric for v in with_inputs} == {"period_end_price"}
    for record in with_inputs:
        inputs = dict(record.inputs)
        for term, figure in inputs.items():
            assert values[stored_key(record, term)].value == figure, (record, term)
        formula = ast.parse(record.provenance.removeprefix("derived:"), mode="eval").body
        # Bit for bit: the same operations on the same doubles the ingest used.
        assert evaluate(formula, inputs) == record.value, record
