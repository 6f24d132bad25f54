"""The metric resolver: normalization, exact and learned names, fuzzy and embedding
fallbacks with their thresholds, and the error an unknown phrase gets."""

from __future__ import annotations

import pytest

from shared.metric_catalog import CATALOG, METRICS_BY_ID, Metric
from shared.metric_resolver import (
    MetricResolver,
    UnknownMetricPhrase,
    catalog_phrases,
    normalize_phrase,
    tag_names,
)


@pytest.fixture(scope="module")
def resolver() -> MetricResolver:
    return MetricResolver.from_catalog()


@pytest.mark.parametrize(
    ("written", "normalized"),
    [
        ("P/E", "pe"),
        ("p.e. ratio", "pe ratio"),
        ("P E ratio", "pe ratio"),
        ("R&D", "rd"),
        ("r and d", "rd"),
        ("SG&A", "sga"),
        ("s.g.&a.", "sga"),
        ("Net-Income", "net income"),
        ("shareholders' equity", "shareholder equity"),
        ("Research & Development", "research and development"),
        ("EV/EBITDA", "ev to ebitda"),
        ("price/earnings ratios", "price to earnings ratio"),
        ("liabilities", "liability"),
        ("income taxes", "income tax"),
        ("gross losses", "gross loss"),
        ("the company's revenues", "revenue"),
        ("sales", "sales"),
        ("earnings", "earnings"),
        ("what is a P/E ratio", "what is pe ratio"),
    ],
)
def test_phrases_are_normalized_so_spellings_of_one_name_meet(
    written: str, normalized: str
) -> None:
    assert normalize_phrase(written) == normalized


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("Revenue", "revenue"),
        ("P/E", "pe_ratio"),
        ("p.e. ratio", "pe_ratio"),
        ("price-earnings ratios", "pe_ratio"),
        ("ROE", "return_on_equity"),
        ("capex", "capital_expenditures"),
        ("R and D", "research_and_development"),
        ("top line", "revenue"),
        ("Net-Income", "net_income"),
        ("net_income", "net_income"),
    ],
)
def test_catalog_names_resolve_exactly_with_full_confidence(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method, resolution.confidence) == (
        metric,
        "exact",
        1.0,
    )


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("reveune", "revenue"),
        ("gross margn", "gross_margin"),
        ("opearting margin", "operating_margin"),
        ("net incme", "net_income"),
        ("dividnd yield", "dividend_yield"),
        ("free cash flwo", "free_cash_flow"),
    ],
)
def test_typing_slips_resolve_by_fuzzy_match_with_lower_confidence(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method) == (metric, "fuzzy")
    assert 0.8 <= resolution.confidence < 1.0
    assert resolution.by_fallback


@pytest.mark.parametrize("phrase", ["roa", "marine", "incom", "weather", "margins"])
def test_fuzzy_match_refuses_short_acronyms_and_other_words(
    resolver: MetricResolver, phrase: str
) -> None:
    # "roa" is exact (ROA); a one-letter slip of a three-letter acronym is another acronym.
    if phrase == "roa":
        assert resolver.resolve(phrase).method == "exact"
        assert resolver.fuzzy("roz") is None
        return
    assert resolver.fuzzy(phrase) is None


def test_a_phrase_longer_than_every_length_bound_is_matched_like_any_other(
    resolver: MetricResolver,
) -> None:
    # A 2,000-character question of one word reaches the fuzzy match whole.
    assert resolver.fuzzy("x" * 2000) is None
    assert resolver.fuzzy("revenue" * 200) is None


def test_unknown_metric_suggests_closest_names(resolver: MetricResolver) -> None:
    with pytest.raises(UnknownMetricPhrase) as caught:
        resolver.resolve("margins of safety")
    error = caught.value
    assert error.phrase == "margins of safety"
    assert len(error.closest) == 3
    assert all(metric in METRICS_BY_ID for metric in error.closest)
    assert "margin" in error.closest[0]
    message = str(error)
    assert "'margins of safety'" in message
    for metric in error.closest:
        assert METRICS_BY_ID[metric].label in message


def test_a_learned_alias_resolves_as_learned_and_never_shadows_the_catalog() -> None:
    resolver = MetricResolver.from_catalog()
    resolver.learn("cash pile", "cash_and_equivalents")
    resolver.learn("revenue", "net_income")  # the catalog's own name wins
    assert resolver.resolve("Cash piles").method == "learned"
    assert resolver.resolve("Cash piles").metric_id == "cash_and_equivalents"
    assert resolver.resolve("revenue").metric_id == "revenue"
    with pytest.raises(ValueError, match="unknown metric id"):
        resolver.learn("widgets", "widget_count")


def test_a_phrase_naming_two_metrics_after_normalizing_is_refused() -> None:
    first = METRICS_BY_ID["revenue"]
    clash = Metric(**{**first.__dict__, "id": "revenue_copy", "aliases": ("Revenues",)})
    with pytest.raises(ValueError, match="names both revenue and revenue_copy"):
        catalog_phrases([*CATALOG, clash])


def test_resolution_without_fallbacks_refuses_a_typo(resolver: MetricResolver) -> None:
    with pytest.raises(UnknownMetricPhrase):
        resolver.resolve("reveune", fallbacks=False)


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("money spent on research", "research_and_development"),
        ("how much revenue grew from last year", "revenue_growth"),
        ("debt load", "total_debt"),
    ],
)
def test_paraphrases_resolve_by_embedding_similarity(
    minilm_resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolver = minilm_resolver
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method) == (metric, "embedding")
    assert resolution.confidence >= resolver.embedding_threshold


@pytest.mark.parametrize("phrase", ["weather", "favorite color", "market share", "headcount"])
def test_embedding_fallback_refuses_phrases_that_are_no_metric(
    minilm_resolver: MetricResolver, phrase: str
) -> None:
    resolver = minilm_resolver
    with pytest.raises(UnknownMetricPhrase) as caught:
        resolver.resolve(phrase)
    assert len(caught.value.closest) == 3


def test_embedding_needs_a_clear_lead_over_the_next_metric(
    minilm_resolver: MetricResolver, monkeypatch: pytest.MonkeyPatch
) -> None:
    resolver = minilm_resolver
    assert resolver.embedding("debt load") is not None
    # No paraphrase leads its runner-up by that much (set back after the test: it is shared).
    monkeypatch.setattr(resolver, "embedding_min_lead", 0.5)
    assert resolver.embedding("debt load") is None


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("net cash provided by (used in) operating activities", "operating_cash_flow"),
        ("cash generated by operating activities", "operating_cash_flow"),
        ("Cash generated from operations", "operating_cash_flow"),
        ("cash from ops", "operating_cash_flow"),
        ("cash generated by the business operations", "operating_cash_flow"),
        ("net cash used in operating activities", "operating_cash_flow"),
        ("cash flows from operating activities", "operating_cash_flow"),
        ("net cash provided by (used in) investing activities", "investing_cash_flow"),
        ("cash used for investing", "investing_cash_flow"),
        ("net cash outflow from investing activities", "investing_cash_flow"),
        ("net cash provided by (used in) financing activities", "financing_cash_flow"),
        ("cash used for financing activities", "financing_cash_flow"),
    ],
)
def test_the_cash_flow_statements_totals_resolve_exactly_however_a_filing_words_them(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method) == (metric, "exact")


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("cash flow from operations margin", "operating_cash_flow_margin"),
        ("price to cash flow from operations", "price_to_operating_cash_flow"),
        ("growth in cash generated by operating activities", "operating_cash_flow_growth"),
    ],
)
def test_a_cash_flow_wording_composes_with_the_words_around_it(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    assert resolver.resolve(phrase).metric_id == metric


def test_free_cash_flow_and_cash_on_hand_are_not_read_as_the_cash_flow_totals() -> None:
    assert normalize_phrase("free cash flow from operations") == "free cash flow from operation"
    assert normalize_phrase("cash on hand") == "cash on hand"
    assert normalize_phrase("cash operating") == "cash operating"


def test_a_slip_in_a_filings_cash_flow_wording_still_resolves_by_fuzzy_match(
    resolver: MetricResolver,
) -> None:
    resolution = resolver.resolve("net cash provded by operating activities")
    assert (resolution.metric_id, resolution.method) == ("operating_cash_flow", "fuzzy")


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("what share of revenue went to R&D", "research_and_development_to_revenue"),
        ("percentage of revenue spent on R&D", "research_and_development_to_revenue"),
        ("how much of its revenue did it spend on R&D", "research_and_development_to_revenue"),
        ("R&D relative to revenue", "research_and_development_to_revenue"),
        ("R&D as a share of sales", "research_and_development_to_revenue"),
        ("R&D's share of revenue", "research_and_development_to_revenue"),
        ("the ratio of R&D to revenue", "research_and_development_to_revenue"),
        ("portion of revenue spent on SG&A", "sga_to_revenue"),
        ("SG&A to revenue ratio", "sga_to_revenue"),
        ("capex divided by revenue", "capex_to_revenue"),
        ("what fraction of revenue went to operating expenses", "operating_expense_ratio"),
        ("stock comp relative to revenue", "stock_based_compensation_to_revenue"),
        ("proportion of net income paid out as dividends", "payout_ratio"),
        ("dividends divided by net income", "payout_ratio"),
        ("what share of free cash flow went to dividends", "dividend_to_free_cash_flow"),
        ("gross profit as a % of revenue", "gross_margin"),
        ("income taxes as a percentage of pretax income", "effective_tax_rate"),
        ("ratio of current assets to current liabilities", "current_ratio"),
        ("revenue divided by shares outstanding", "revenue_per_share"),
        ("how much debt relative to equity", "debt_to_equity"),
    ],
)
def test_a_ratio_asked_in_words_resolves_to_the_catalog_metric_of_that_formula(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method) == (metric, "composed")
    ratio = resolver.ratio(phrase)
    assert ratio is not None and ratio.metric_id == metric


@pytest.mark.parametrize(
    "phrase",
    [
        "share of revenue from services",
        "what share of the market went to apple",
        "ratio of engineers to revenue",
        "revenue relative to net income",  # no catalog metric divides revenue by net income
    ],
)
def test_a_ratio_the_catalog_does_not_hold_is_not_read_as_one(
    resolver: MetricResolver, phrase: str
) -> None:
    assert resolver.ratio(phrase) is None


@pytest.mark.parametrize(
    ("phrase", "metric"),
    [
        ("payments to acquire property, plant and equipment", "capital_expenditures"),
        ("pay to acquire property plant and equipment", "capital_expenditures"),
        ("cash outflow for repurchasing its common stock", "share_repurchases"),
        ("cash spent on repurchasing shares", "share_repurchases"),
        ("payments for repurchase of common stock", "share_repurchases"),
        ("interest payments", "interest_paid"),
        ("income taxes paid, net", "income_taxes_paid"),
        ("payments of dividends", "dividends_paid"),
        ("payments for the acquisition of property, plant and equipment", "capital_expenditures"),
        ("payments for repurchases of capital stock", "share_repurchases"),
    ],
)
def test_a_payment_is_named_as_its_xbrl_tag_says_it_with_the_verbs_people_use(
    resolver: MetricResolver, phrase: str, metric: str
) -> None:
    resolution = resolver.resolve(phrase)
    assert (resolution.metric_id, resolution.method) == (metric, "exact")


def test_tag_names_never_take_a_catalog_name_nor_name_two_metrics() -> None:
    written = {
        normalize_phrase(name): metric.id
        for metric in CATALOG
        for name in (metric.id, metric.label, *metric.aliases)
    }
    phrases = catalog_phrases()
    assert all(phrases[key] == metric for key, metric in written.items())
    generated = {
        normalize_phrase(name): metric.id for metric in CATALOG for name in tag_names(metric)
    }
    assert generated["payment to acquire property plant and equipment"] == "capital_expenditures"
    # A per-share "cash paid" tag names no payment in dollars.
    assert tag_names(METRICS_BY_ID["dividends_per_share"]) == ()


def test_a_negated_name_is_not_a_slip_of_the_name_it_negates(resolver: MetricResolver) -> None:
    # "noncurrent liabilities" is three letters from "current liabilities" and the opposite.
    with pytest.raises(UnknownMetricPhrase):
        resolver.resolve("non-current liabilities")
    assert resolver.resolve("current liabilites").metric_id == "current_liabilities"


def test_pre_tax_is_one_word_however_it_is_written(resolver: MetricResolver) -> None:
    assert normalize_phrase("pre-tax profit") == normalize_phrase("pretax profit")
    assert resolver.resolve("pre tax profit").metric_id == "pretax_income"


def test_a_cash_flow_total_asked_with_its_activity_as_the_subject_is_read() -> None:
    assert normalize_phrase("how much cash did alphabet's operations generate") == (
        "how much did alphabet operating cash flow"
    )
