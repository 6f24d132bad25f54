"""The metric catalog: its shape, its formulas, and the phrases users type for each metric."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from dataclasses import asdict

import pytest

from services.ingest.derived import evaluation_order, period_types
from shared.metric_catalog import (
    CATALOG,
    CATEGORIES,
    FORMULA_FUNCTIONS,
    METRICS_BY_ID,
    UNITS,
    Metric,
)
from shared.metric_resolver import MetricResolver, catalog_phrases, normalize_phrase

RESOLVER = MetricResolver.from_catalog()

SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
DERIVED = [metric for metric in CATALOG if metric.derived]
REPORTED = [metric for metric in CATALOG if not metric.derived]
# Read from the price files, not from other metrics: the one derived metric without inputs.
MARKET_DATA = {"period_end_price"}


def test_the_catalog_holds_at_least_140_metrics_in_every_category() -> None:
    assert len(CATALOG) >= 140
    assert len(METRICS_BY_ID) == len(CATALOG), "two metrics share an id"
    assert {metric.category for metric in CATALOG} == set(CATEGORIES)
    # Each category has more than a token entry.
    for category in CATEGORIES:
        assert sum(metric.category == category for metric in CATALOG) >= 5, category


def test_the_first_twelve_metrics_keep_their_order() -> None:
    # The router lists the first few as examples and the dataset keeps catalog order.
    assert [metric.id for metric in CATALOG[:12]] == [
        "revenue",
        "net_income",
        "gross_profit",
        "operating_income",
        "research_and_development",
        "total_assets",
        "total_liabilities",
        "stockholders_equity",
        "operating_cash_flow",
        "capital_expenditures",
        "eps_diluted",
        "cash_and_equivalents",
    ]


@pytest.mark.parametrize("metric", CATALOG, ids=lambda m: m.id)
def test_every_metric_is_well_formed(metric: Metric) -> None:
    assert SNAKE_CASE.match(metric.id), metric.id
    assert metric.unit in UNITS
    assert metric.category in CATEGORIES
    assert metric.kind in {"flow", "instant"}
    assert metric.label and metric.description.endswith(".")
    assert all(alias == alias.lower() and alias.strip() == alias for alias in metric.aliases)
    if metric.derived:
        assert metric.xbrl_tags == ()
        assert metric.formula
    else:
        assert metric.xbrl_tags and metric.formula is None and metric.inputs == ()
        # Reported figures are amounts, per-share amounts or share counts, never ratios.
        assert metric.unit in {"USD", "USD/share", "shares"}


def test_labels_are_distinct() -> None:
    labels = [normalize_phrase(metric.label) for metric in CATALOG]
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("metric", DERIVED, ids=lambda m: m.id)
def test_every_derived_formula_names_its_inputs_and_they_exist(metric: Metric) -> None:
    if metric.id in MARKET_DATA:
        assert metric.inputs == ()
        return
    assert metric.inputs, metric.id
    assert metric.id not in metric.inputs
    formula = metric.formula or ""
    for name in metric.inputs:
        assert name in METRICS_BY_ID, (metric.id, name)
        assert re.search(rf"\b{name}\b", formula), (metric.id, name)
    # Every identifier of the formula is an input or one of the formula functions.
    tree = ast.parse(formula, mode="eval")
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    assert names == set(metric.inputs) | (names & FORMULA_FUNCTIONS)


@pytest.mark.parametrize("metric", [m for m in DERIVED if m.id not in MARKET_DATA], ids=str)
def test_derived_units_match_their_formulas(metric: Metric) -> None:
    formula = metric.formula or ""
    if metric.unit == "%":
        assert formula.endswith("* 100"), formula
    if metric.unit == "days":
        assert "* 365" in formula or all(
            METRICS_BY_ID[name].unit == "days" for name in metric.inputs
        )


def _leaf_kinds(metric: Metric) -> set[str]:
    if not metric.inputs:
        return {metric.kind}
    return set().union(*(_leaf_kinds(METRICS_BY_ID[name]) for name in metric.inputs))


@pytest.mark.parametrize("metric", DERIVED, ids=lambda m: m.id)
def test_a_derived_metric_is_a_flow_exactly_when_it_reads_a_flow(metric: Metric) -> None:
    expected = "flow" if "flow" in _leaf_kinds(metric) else "instant"
    assert metric.kind == expected


def test_formulas_can_be_evaluated_in_order() -> None:
    order = [metric.id for metric in evaluation_order()]
    assert sorted(order) == sorted(metric.id for metric in DERIVED)
    position = {metric_id: index for index, metric_id in enumerate(order)}
    for metric in DERIVED:
        for name in metric.inputs:
            if METRICS_BY_ID[name].derived:
                assert position[name] < position[metric.id], (metric.id, name)


def test_growth_is_annual_and_margins_are_every_period() -> None:
    assert period_types("revenue_growth") == {"annual"}
    assert period_types("revenue_cagr_5y") == {"annual"}
    assert period_types("gross_margin") == {"annual", "quarterly", "ttm"}
    assert period_types("current_ratio") == {"annual", "quarterly"}
    assert period_types("return_on_equity") == {"annual", "ttm"}
    assert period_types("period_end_price") == {"annual", "quarterly"}


def test_a_metric_read_back_from_metrics_json_equals_the_catalog_entry() -> None:
    # metrics.json stores tuples as lists.
    for metric in CATALOG:
        row = {key: list(v) if isinstance(v, tuple) else v for key, v in asdict(metric).items()}
        assert Metric(**row) == metric


def test_no_phrase_names_two_metrics() -> None:
    owners: dict[str, set[str]] = defaultdict(set)
    for metric in CATALOG:
        for phrase in (metric.id, metric.label, *metric.aliases):
            owners[normalize_phrase(phrase)].add(metric.id)
    clashes = {phrase: ids for phrase, ids in owners.items() if len(ids) > 1}
    assert clashes == {}
    assert "" not in owners
    # Every catalog name is kept; the names XBRL tags give come on top (see tag_names).
    assert set(owners) <= set(catalog_phrases())


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("P/E", "pe_ratio"),
        ("pe ratio", "pe_ratio"),
        ("PE", "pe_ratio"),
        ("price earnings ratio", "pe_ratio"),
        ("price to earnings", "pe_ratio"),
        ("Price/Earnings", "pe_ratio"),
        ("ROE", "return_on_equity"),
        ("return on equity", "return_on_equity"),
        ("ROA", "return_on_assets"),
        ("ROIC", "return_on_invested_capital"),
        ("FCF", "free_cash_flow"),
        ("free cash flow", "free_cash_flow"),
        ("EBITDA", "ebitda"),
        ("EBITDA margin", "ebitda_margin"),
        ("gross margin", "gross_margin"),
        ("operating margin", "operating_margin"),
        ("profit margin", "net_margin"),
        ("debt to equity", "debt_to_equity"),
        ("Debt/Equity", "debt_to_equity"),
        ("D/E ratio", "debt_to_equity"),
        ("current ratio", "current_ratio"),
        ("quick ratio", "quick_ratio"),
        ("acid-test ratio", "quick_ratio"),
        ("cash ratio", "cash_ratio"),
        ("DSO", "days_sales_outstanding"),
        ("DIO", "days_inventory_outstanding"),
        ("DPO", "days_payables_outstanding"),
        ("cash conversion cycle", "cash_conversion_cycle"),
        ("dividend yield", "dividend_yield"),
        ("FCF yield", "free_cash_flow_yield"),
        ("earnings yield", "earnings_yield"),
        ("market cap", "market_cap"),
        ("market capitalization", "market_cap"),
        ("enterprise value", "enterprise_value"),
        ("EV/EBITDA", "ev_to_ebitda"),
        ("EV to sales", "ev_to_sales"),
        ("P/S", "price_to_sales"),
        ("P/B", "price_to_book"),
        ("price to book", "price_to_book"),
        ("capex", "capital_expenditures"),
        ("CapEx", "capital_expenditures"),
        ("revenue growth", "revenue_growth"),
        ("EPS growth", "eps_growth"),
        ("5 year revenue CAGR", "revenue_cagr_5y"),
        ("3y EPS CAGR", "eps_cagr_3y"),
        ("interest coverage", "interest_coverage"),
        ("net debt", "net_debt"),
        ("total debt", "total_debt"),
        ("debt", "total_debt"),
        ("asset turnover", "asset_turnover"),
        ("inventory turnover", "inventory_turnover"),
        ("book value per share", "book_value_per_share"),
        ("BVPS", "book_value_per_share"),
        ("cash per share", "cash_per_share"),
        ("revenue per share", "revenue_per_share"),
        ("payout ratio", "payout_ratio"),
        ("buybacks", "share_repurchases"),
        ("share repurchases", "share_repurchases"),
        ("dividends paid", "dividends_paid"),
        ("shareholder yield", "shareholder_yield"),
        ("COGS", "cost_of_revenue"),
        ("SG&A", "selling_general_and_administrative"),
        ("stock-based compensation", "stock_based_compensation"),
        ("D&A", "depreciation_and_amortization"),
        ("shares outstanding", "shares_outstanding"),
        ("PP&E", "property_plant_and_equipment"),
        ("effective tax rate", "effective_tax_rate"),
        ("working capital", "working_capital"),
        # The original phrases still name the original metrics.
        ("EPS", "eps_diluted"),
        ("earnings", "net_income"),
        ("book value", "stockholders_equity"),
        ("cash", "cash_and_equivalents"),
        ("EBIT", "operating_income"),
    ],
)
def test_resolve_common_phrases(phrase: str, metric: str) -> None:
    resolved = RESOLVER.exact(phrase)
    assert resolved is not None, phrase
    assert resolved.metric_id == metric


@pytest.mark.parametrize(
    "phrase",
    # Too vague to name one metric, or (the price words) a question for the price tool.
    ["", "weather", "margin", "growth", "ratio", "yield", "stock price", "share price", "EV"],
)
def test_vague_phrases_name_no_metric(phrase: str) -> None:
    assert RESOLVER.exact(phrase) is None
