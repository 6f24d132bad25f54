"""Quarterly and TTM values from companyfacts: fiscal quarters, derived Q4s, trailing sums.

Every real figure below was read by hand from ../shared/data/sec/companyfacts (the 10-Q or
10-K fact, or the two facts a derived figure subtracts); those tests skip without the data.
"""

from __future__ import annotations

from datetime import date
from functools import cache
from typing import Any

import pytest

from services.ingest.companyfacts import (
    FiscalYear,
    MetricValueRecord,
    fiscal_quarter,
    parse_companyfacts,
    read_json,
)
from tests.helpers import require_shared_data

APPLE, NVIDIA, TESLA, ALPHABET = "0000320193", "0001045810", "0001318605", "0001652044"
M = 1_000_000


@cache
def parsed(cik: str) -> tuple[MetricValueRecord, ...]:
    path = require_shared_data("sec", "companyfacts", f"CIK{cik}.json")
    return tuple(parse_companyfacts(read_json(path), "TEST"))


def by_key(
    records: tuple[MetricValueRecord, ...] | list[MetricValueRecord],
) -> dict[tuple[str, str, int, int], MetricValueRecord]:
    return {(r.metric, r.period_type, r.fiscal_year, r.fiscal_quarter): r for r in records}


def quarter(cik: str, metric: str, year: int, number: int) -> MetricValueRecord:
    return by_key(parsed(cik))[(metric, "quarterly", year, number)]


def ttm(cik: str, metric: str, year: int, number: int) -> MetricValueRecord:
    return by_key(parsed(cik))[(metric, "ttm", year, number)]


# --- real SEC figures: Apple (fiscal year ends late September) ---------------------------


def test_apple_q4_fy2024_revenue_is_the_year_minus_nine_months() -> None:
    q4 = quarter(APPLE, "revenue", 2024, 4)
    # 391,035 (FY2024 10-K) − 296,105 (nine months, Q3 FY2024 10-Q).
    assert q4.value == 94_930 * M
    assert q4.provenance == "derived:FY2024(0000320193-24-000123)-9M(0000320193-24-000081)"
    assert (q4.form, q4.accession, q4.filed) == ("10-K", "0000320193-24-000123", date(2024, 11, 1))
    assert (q4.period_start, q4.period_end) == (date(2024, 6, 30), date(2024, 9, 28))
    assert q4.xbrl_tag is None


def test_apple_q1_fy2024_revenue_is_the_10_q_figure() -> None:
    q1 = quarter(APPLE, "revenue", 2024, 1)
    assert q1.value == 119_575 * M
    assert (q1.period_start, q1.period_end) == (date(2023, 10, 1), date(2023, 12, 30))
    assert (q1.form, q1.accession) == ("10-Q", "0000320193-24-000006")
    assert q1.provenance == "xbrl:us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    assert q1.unit == "USD"


def test_apple_quarters_follow_the_fiscal_calendar() -> None:
    assert quarter(APPLE, "revenue", 2025, 1).period_end == date(2024, 12, 28)
    assert quarter(APPLE, "revenue", 2024, 3).value == 85_777 * M
    # FY2023 had 53 weeks: its Q1 ran 14 of them and is still Q1.
    q1_fy2023 = quarter(APPLE, "revenue", 2023, 1)
    assert q1_fy2023.value == 117_154 * M
    assert (q1_fy2023.period_start, q1_fy2023.period_end) == (date(2022, 9, 25), date(2022, 12, 31))


def test_apple_quarterly_net_income_eps_and_assets() -> None:
    assert quarter(APPLE, "net_income", 2025, 2).value == 24_780 * M
    # 93,736 − 79,000.
    assert quarter(APPLE, "net_income", 2024, 4).value == 14_736 * M
    assert quarter(APPLE, "eps_diluted", 2025, 1).value == 2.40
    assets = quarter(APPLE, "total_assets", 2025, 1)
    assert (assets.value, assets.period_start, assets.period_end) == (
        344_085 * M,
        None,
        date(2024, 12, 28),
    )
    assert assets.accession == "0000320193-25-000008"


def test_apple_ttm_revenue_sums_the_last_four_quarters() -> None:
    trailing = ttm(APPLE, "revenue", 2025, 1)
    # Q2 FY2024 90,753 + Q3 85,777 + Q4 94,930 + Q1 FY2025 124,300.
    assert trailing.value == 395_760 * M
    assert trailing.provenance == "derived:TTM(Q2FY2024+Q3FY2024+Q4FY2024+Q1FY2025)"
    assert (trailing.period_start, trailing.period_end) == (date(2023, 12, 31), date(2024, 12, 28))
    assert trailing.accession == "0000320193-25-000008"
    # Through Q4 the trailing twelve months are the fiscal year.
    assert ttm(APPLE, "revenue", 2024, 4).value == 391_035 * M


def test_apple_reported_q4_comes_from_the_10_k_quarterly_table() -> None:
    # Until FY2020 Apple's 10-K tagged each quarter; a reported Q4 is taken as reported.
    q4 = quarter(APPLE, "revenue", 2019, 4)
    assert q4.value == 64_040 * M
    assert q4.provenance == "xbrl:us-gaap:RevenueFromContractWithCustomerExcludingAssessedTax"
    # That Q4 EPS was 3.03 and re-presented as 0.76 after the 2020 split: the later filing wins.
    eps = quarter(APPLE, "eps_diluted", 2019, 4)
    assert (eps.value, eps.accession) == (0.76, "0000320193-20-000096")


def test_apple_eps_has_no_q4_without_a_reported_one_and_no_ttm() -> None:
    keys = by_key(parsed(APPLE))
    assert ("eps_diluted", "quarterly", 2024, 4) not in keys
    assert not [r for r in parsed(APPLE) if r.metric == "eps_diluted" and r.period_type == "ttm"]


# --- NVIDIA (fiscal year ends late January) ---------------------------------------------------


def test_nvidia_q4_fy2025_revenue() -> None:
    q4 = quarter(NVIDIA, "revenue", 2025, 4)
    # 130,497 − 91,166.
    assert q4.value == 39_331 * M
    assert (q4.period_start, q4.period_end) == (date(2024, 10, 28), date(2025, 1, 26))
    assert q4.provenance == "derived:FY2025(0001045810-25-000023)-9M(0001045810-24-000316)"


def test_nvidia_quarters() -> None:
    q1 = quarter(NVIDIA, "revenue", 2025, 1)
    assert (q1.value, q1.period_end) == (26_044 * M, date(2024, 4, 28))
    # 72,880 − 50,789.
    assert quarter(NVIDIA, "net_income", 2025, 4).value == 22_091 * M
    assert quarter(NVIDIA, "total_liabilities", 2025, 3).value == 30_114 * M
    # Q1 of fiscal 2027, whose 10-K does not exist yet: counted from the day after FY2026.
    q1_fy2027 = quarter(NVIDIA, "revenue", 2027, 1)
    assert (q1_fy2027.value, q1_fy2027.period_end) == (81_615 * M, date(2026, 4, 26))


def test_nvidia_ttm_revenue_spans_two_fiscal_years() -> None:
    trailing = ttm(NVIDIA, "revenue", 2025, 3)
    # Q4 FY2024 (60,922 − 38,819 = 22,103) + 26,044 + 30,040 + 35,082.
    assert trailing.value == 113_269 * M
    assert trailing.provenance == "derived:TTM(Q4FY2024+Q1FY2025+Q2FY2025+Q3FY2025)"


# --- Alphabet and Tesla (calendar years) --------------------------------------------------


def test_alphabet_quarters() -> None:
    q4 = quarter(ALPHABET, "revenue", 2024, 4)
    # 350,018 − 253,549.
    assert q4.value == 96_469 * M
    assert q4.period_start == date(2024, 10, 1)
    assert quarter(ALPHABET, "net_income", 2024, 1).value == 23_662 * M
    # 100,118 − 73,582.
    assert quarter(ALPHABET, "net_income", 2024, 4).value == 26_536 * M
    assert quarter(ALPHABET, "total_assets", 2025, 3).value == 536_469 * M
    # In Q2 2025 Alphabet filed revenue only under Revenues: the fallback tag takes over.
    q2_2025 = quarter(ALPHABET, "revenue", 2025, 2)
    assert (q2_2025.value, q2_2025.xbrl_tag) == (96_428 * M, "Revenues")


def test_alphabet_q4_balance_is_the_10_k_year_end() -> None:
    q4 = quarter(ALPHABET, "total_assets", 2024, 4)
    # Three later 10-Qs repeat the 2024 year end; the Q4 balance cites the 10-K.
    assert (q4.value, q4.period_end) == (450_256 * M, date(2024, 12, 31))
    assert (q4.form, q4.accession) == ("10-K", "0001652044-25-000014")
    assert ("eps_diluted", "quarterly", 2024, 4) not in by_key(parsed(ALPHABET))


def test_alphabet_ttm_revenue_through_q4_is_the_year() -> None:
    # 80,539 + 84,742 + 88,268 + 96,469.
    assert ttm(ALPHABET, "revenue", 2024, 4).value == 350_018 * M


def test_tesla_quarters_and_ttm() -> None:
    # 53,823 − 36,104 and 5,519 − 3,198.
    assert quarter(TESLA, "revenue", 2021, 4).value == 17_719 * M
    assert quarter(TESLA, "net_income", 2021, 4).value == 2_321 * M
    assert quarter(TESLA, "revenue", 2022, 3).value == 21_454 * M
    assert quarter(TESLA, "net_income", 2022, 2).value == 2_259 * M
    assert quarter(TESLA, "total_assets", 2022, 3).value == 74_426 * M
    # 17,719 + 18,756 + 16,934 + 21,454.
    assert ttm(TESLA, "revenue", 2022, 3).value == 74_863 * M


@pytest.mark.parametrize("cik", [APPLE, NVIDIA, ALPHABET, TESLA])
def test_quarters_are_sane(cik: str) -> None:
    records = parsed(cik)
    keys = by_key(records)
    assert len(keys) == len(records)
    for record in records:
        if record.period_type == "annual":
            continue
        assert 1 <= record.fiscal_quarter <= 4
        if record.period_type == "ttm":
            assert record.unit == "USD" and record.period_start is not None
            assert record.provenance.startswith("derived:TTM(")
        if record.metric == "revenue":
            assert record.value > 0
            year = keys.get(("revenue", "annual", record.fiscal_year, 0))
            if record.period_type == "quarterly" and year is not None:
                assert record.value < year.value
        if record.metric == "eps_diluted":
            assert not record.provenance.startswith("derived:")
        if record.period_type == "quarterly" and record.period_start is not None:
            assert 84 <= (record.period_end - record.period_start).days <= 98


# --- real figures the sanity rules repair (see the synthetic tests below) ---------------------


def annual(cik: str, metric: str, year: int) -> MetricValueRecord:
    return by_key(parsed(cik))[(metric, "annual", year, 0)]


def test_nvidia_diluted_share_counts_filed_in_thousands_are_scaled() -> None:
    # NVIDIA's FY2010 10-K gave FY2009 as 548,126; its FY2011 10-K corrected FY2010 itself.
    fy2009 = annual(NVIDIA, "weighted_average_shares_diluted", 2009)
    assert fy2009.value == 548_126_000
    assert fy2009.provenance.endswith("; scaled ×1000 (filed in thousands)")
    fy2010 = annual(NVIDIA, "weighted_average_shares_diluted", 2010)
    assert (fy2010.value, fy2010.provenance) == (
        549_574_000,
        "xbrl:us-gaap:WeightedAverageNumberOfDilutedSharesOutstanding",
    )
    assert quarter(NVIDIA, "weighted_average_shares_diluted", 2010, 2).value == 546_639_000
    assert quarter(NVIDIA, "weighted_average_shares_diluted", 2011, 1).value == 590_997_000


def test_apple_q2_fy2014_shares_outstanding_are_scaled_across_the_split() -> None:
    # 861,745 between 892,447,000 (Q1) and 5,989,171,000 (Q3, after the 7-for-1 split).
    q2 = quarter(APPLE, "shares_outstanding", 2014, 2)
    assert (q2.value, q2.accession) == (861_745_000, "0001193125-14-157311")
    assert "scaled ×1000" in q2.provenance
    assert quarter(APPLE, "shares_outstanding", 2014, 3).value == 5_989_171_000
    assert "scaled" not in quarter(APPLE, "shares_outstanding", 2014, 1).provenance


def test_alphabet_stock_compensation_quarters_add_up_to_their_year() -> None:
    # Q2 and Q3 from the cash flow add-back to date (5,525 - 2,769; 8,149 - 5,525), not from
    # the expense line (2,900; 2,800) that Q1, Q4 and the year do not use.
    quarters = [quarter(ALPHABET, "stock_based_compensation", 2019, q) for q in (1, 2, 3, 4)]
    assert [r.value for r in quarters] == [2_769 * M, 2_756 * M, 2_624 * M, 2_645 * M]
    assert (
        sum(r.value for r in quarters) == annual(ALPHABET, "stock_based_compensation", 2019).value
    )
    assert quarters[1].provenance == "derived:6M(0001652044-19-000023)-Q1(0001652044-19-000015)"


def test_tesla_2012_depreciation_follows_the_year_to_date_figures() -> None:
    # The Q2 10-Q's 3.7M for the quarter contradicts its own 6.9M for six months after 3.8M.
    q2 = quarter(TESLA, "depreciation_and_amortization", 2012, 2)
    assert q2.value == 3_100_000
    assert "does not fit the filing's year-to-date figures" in q2.provenance
    quarters = [quarter(TESLA, "depreciation_and_amortization", 2012, q) for q in (1, 2, 3, 4)]
    assert sum(r.value for r in quarters) == 25_300_000


def test_apple_dividends_restated_after_their_quarters_keep_the_quarters_as_filed() -> None:
    # Apple's FY2017 10-K restated FY2015 dividends paid; the quarters were never refiled.
    fy2015 = annual(APPLE, "dividends_paid", 2015)
    assert (fy2015.value, fy2015.accession) == (11_561 * M, "0000320193-17-000070")
    assert "restated from 11,431,000,000 (filed in 0001193125-15-356351)" in fy2015.provenance
    quarters = [quarter(APPLE, "dividends_paid", 2015, q).value for q in (1, 2, 3, 4)]
    assert quarters == [2_750 * M, 2_734 * M, 2_997 * M, 2_950 * M]


def test_apple_q4_fy2008_revenue_is_on_the_basis_of_its_nine_months() -> None:
    # The 10-K/A of January 2010 restated FY2008 (32,479 M → 37,491 M), not its nine months:
    # the Q4 is the year as first filed minus them, not a Q4 holding the whole restatement.
    q4 = quarter(APPLE, "revenue", 2008, 4)
    assert q4.value == 7_895 * M
    assert q4.provenance.startswith(
        "derived:FY2008(0001193125-09-214859)-9M(0001193125-09-153165); FY2008 as filed "
        "before its restatement in 0001193125-10-012091"
    )


# --- synthetic rules -------------------------------------------------------------------------


def fact(
    value: float,
    end: str,
    accession: str,
    filed: str,
    start: str | None = None,
    form: str = "10-Q",
) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "end": end,
        "val": value,
        "accn": accession,
        "fy": 2021,
        "fp": "Q",
        "form": form,
        "filed": filed,
    }
    if start is not None:
        raw["start"] = start
    return raw


def companyfacts(tags: dict[str, dict[str, list[dict[str, Any]]]]) -> dict[str, Any]:
    return {
        "cik": 1234,
        "entityName": "EXAMPLE CORP",
        "facts": {"us-gaap": {tag: {"units": units} for tag, units in tags.items()}},
    }


def flow_year(
    values: tuple[float, float, float, float], nine: float | None
) -> list[dict[str, Any]]:
    """A calendar 2021 of one flow: three 10-Q quarters, the 10-K year, maybe the nine months."""
    q1, q2, q3, year = values
    facts = [
        fact(q1, "2021-03-31", "q-1", "2021-05-01", start="2021-01-01"),
        fact(q2, "2021-06-30", "q-2", "2021-08-01", start="2021-04-01"),
        fact(q3, "2021-09-30", "q-3", "2021-11-01", start="2021-07-01"),
        fact(year, "2021-12-31", "k-21", "2022-02-01", start="2021-01-01", form="10-K"),
    ]
    if nine is not None:
        facts.append(fact(nine, "2021-09-30", "q-3", "2021-11-01", start="2021-01-01"))
    return facts


def test_q4_is_the_year_minus_the_nine_months() -> None:
    doc = companyfacts({"Revenues": {"USD": flow_year((20, 25, 30, 100), nine=75)}})
    records = by_key(parse_companyfacts(doc, "EX"))
    q4 = records[("revenue", "quarterly", 2021, 4)]
    assert q4.value == 25
    assert q4.provenance == "derived:FY2021(k-21)-9M(q-3)"
    assert (q4.form, q4.accession, q4.xbrl_tag) == ("10-K", "k-21", None)
    assert (q4.period_start, q4.period_end) == (date(2021, 10, 1), date(2021, 12, 31))
    q2 = records[("revenue", "quarterly", 2021, 2)]
    assert (q2.value, q2.accession, q2.provenance) == (25, "q-2", "xbrl:us-gaap:Revenues")
    trailing = records[("revenue", "ttm", 2021, 4)]
    assert trailing.value == 100
    assert trailing.provenance == "derived:TTM(Q1FY2021+Q2FY2021+Q3FY2021+Q4FY2021)"
    assert (trailing.period_start, trailing.period_end) == (date(2021, 1, 1), date(2021, 12, 31))
    # Only Q4 has three quarters before it in the data.
    assert [k for k in records if k[1] == "ttm"] == [("revenue", "ttm", 2021, 4)]


def test_without_nine_months_q4_subtracts_the_three_quarters() -> None:
    doc = companyfacts({"Revenues": {"USD": flow_year((20, 25, 30, 100), nine=None)}})
    q4 = by_key(parse_companyfacts(doc, "EX"))[("revenue", "quarterly", 2021, 4)]
    assert q4.value == 25
    assert q4.provenance == "derived:FY2021(k-21)-Q1(q-1)-Q2(q-2)-Q3(q-3)"


def test_without_nine_months_or_all_three_quarters_there_is_no_q4() -> None:
    facts = [f for f in flow_year((20, 25, 30, 100), nine=None) if f["accn"] != "q-2"]
    records = by_key(parse_companyfacts(companyfacts({"Revenues": {"USD": facts}}), "EX"))
    assert ("revenue", "quarterly", 2021, 4) not in records
    assert not [k for k in records if k[1] == "ttm"]


def test_eps_q4_is_never_subtracted() -> None:
    doc = companyfacts(
        {"EarningsPerShareDiluted": {"USD/shares": flow_year((1.0, 1.1, 1.2, 4.4), nine=3.3)}}
    )
    records = by_key(parse_companyfacts(doc, "EX"))
    assert ("eps_diluted", "quarterly", 2021, 4) not in records
    assert records[("eps_diluted", "quarterly", 2021, 3)].value == 1.2
    assert records[("eps_diluted", "annual", 2021, 0)].value == 4.4
    assert not [k for k in records if k[1] == "ttm"]


def test_a_reported_three_month_q4_is_taken_for_eps_and_flows() -> None:
    # Some 10-Ks tag a quarterly table (Apple and NVIDIA did until 2020), Q4 included.
    eps = flow_year((1.0, 1.1, 1.2, 4.4), nine=3.3)
    eps.append(fact(1.15, "2021-12-31", "k-21", "2022-02-01", start="2021-10-01", form="10-K"))
    revenue = flow_year((20, 25, 30, 100), nine=75)
    revenue.append(fact(26, "2021-12-31", "k-21", "2022-02-01", start="2021-10-01", form="10-K"))
    doc = companyfacts(
        {"EarningsPerShareDiluted": {"USD/shares": eps}, "Revenues": {"USD": revenue}}
    )
    records = by_key(parse_companyfacts(doc, "EX"))
    eps_q4 = records[("eps_diluted", "quarterly", 2021, 4)]
    assert (eps_q4.value, eps_q4.provenance) == (1.15, "xbrl:us-gaap:EarningsPerShareDiluted")
    assert (eps_q4.period_start, eps_q4.period_end) == (date(2021, 10, 1), date(2021, 12, 31))
    # A figure the company reported is taken over arithmetic on two others.
    revenue_q4 = records[("revenue", "quarterly", 2021, 4)]
    assert (revenue_q4.value, revenue_q4.provenance) == (26, "xbrl:us-gaap:Revenues")


def test_instants_take_the_balance_at_each_quarter_end() -> None:
    doc = companyfacts(
        {
            "Revenues": {"USD": flow_year((20, 25, 30, 100), nine=75)},
            "Assets": {
                "USD": [
                    fact(510, "2021-03-31", "q-1", "2021-05-01"),
                    fact(520, "2021-06-30", "q-2", "2021-08-01"),
                    fact(530, "2021-09-30", "q-3", "2021-11-01"),
                    # Not a quarter end (an acquisition date in a note).
                    fact(7, "2021-08-15", "q-3", "2021-11-01"),
                    fact(540, "2021-12-31", "k-21", "2022-02-01", form="10-K"),
                    # A later 10-Q repeating the year end does not replace the 10-K's Q4.
                    fact(540, "2021-12-31", "q-22", "2022-05-01"),
                ]
            },
        }
    )
    records = by_key(parse_companyfacts(doc, "EX"))
    assets = {k[3]: r for k, r in records.items() if k[0] == "total_assets" and k[1] == "quarterly"}
    assert {number: r.value for number, r in assets.items()} == {1: 510, 2: 520, 3: 530, 4: 540}
    assert all(r.period_start is None for r in assets.values())
    assert (assets[4].form, assets[4].accession) == ("10-K", "k-21")
    assert not [k for k in records if k[0] == "total_assets" and k[1] == "ttm"]


def test_a_restated_quarter_takes_the_latest_filing() -> None:
    facts = flow_year((20, 25, 30, 100), nine=75)
    # The next year's Q1 10-Q restates Q1 2021 as a comparative.
    facts.append(fact(21, "2021-03-31", "q-22-1", "2022-05-01", start="2021-01-01"))
    records = by_key(parse_companyfacts(companyfacts({"Revenues": {"USD": facts}}), "EX"))
    q1 = records[("revenue", "quarterly", 2021, 1)]
    assert (q1.value, q1.accession) == (21, "q-22-1")


def test_quarters_after_the_last_10_k_belong_to_the_next_fiscal_year() -> None:
    facts = flow_year((20, 25, 30, 100), nine=75)
    facts.append(fact(33, "2022-03-31", "q-22-1", "2022-05-01", start="2022-01-01"))
    records = by_key(parse_companyfacts(companyfacts({"Revenues": {"USD": facts}}), "EX"))
    assert records[("revenue", "quarterly", 2022, 1)].value == 33
    assert records[("revenue", "ttm", 2022, 1)].value == 25 + 30 + 25 + 33


def test_fiscal_quarter_counts_13_week_steps_from_the_year_start() -> None:
    # Apple's 53-week FY2023 and the 52-week FY2024.
    years = [
        FiscalYear(2023, date(2022, 9, 25), date(2023, 9, 30)),
        FiscalYear(2024, date(2023, 10, 1), date(2024, 9, 28)),
    ]
    assert fiscal_quarter(date(2022, 12, 31), years) == (2023, 1)
    assert fiscal_quarter(date(2023, 7, 1), years) == (2023, 3)
    assert fiscal_quarter(date(2023, 9, 30), years) == (2023, 4)
    assert fiscal_quarter(date(2023, 12, 30), years) == (2024, 1)
    # Mid-quarter and before the first year: no fiscal quarter ends there.
    assert fiscal_quarter(date(2023, 2, 15), years) is None
    assert fiscal_quarter(date(2022, 6, 25), years) is None


# --- sanity rules: share counts filed in thousands ---------------------------------------------

SCALED = "; scaled ×1000 (filed in thousands)"
# Period ends of a calendar 2021 (three 10-Qs, the 10-K) and Q1 2022.
SHARE_DATES = (
    ("2021-03-31", "q-1", "2021-05-01", "10-Q"),
    ("2021-06-30", "q-2", "2021-08-01", "10-Q"),
    ("2021-09-30", "q-3", "2021-11-01", "10-Q"),
    ("2021-12-31", "k-21", "2022-02-01", "10-K"),
    ("2022-03-31", "q-22-1", "2022-05-01", "10-Q"),
)


def shares_outstanding(counts: tuple[float, ...]) -> dict[tuple[int, int], MetricValueRecord]:
    """Shares outstanding at the ends of SHARE_DATES, beside revenue that sets the calendar;
    (fiscal year, quarter) → record, Q4 being the year end."""
    revenue = flow_year((20, 25, 30, 100), nine=75)
    revenue.append(fact(33, "2022-03-31", "q-22-1", "2022-05-01", start="2022-01-01"))
    counts_facts = [
        fact(count, end, accession, filed, form=form)
        for count, (end, accession, filed, form) in zip(counts, SHARE_DATES, strict=True)
    ]
    doc = companyfacts(
        {"Revenues": {"USD": revenue}, "CommonStockSharesOutstanding": {"shares": counts_facts}}
    )
    return {
        (r.fiscal_year, r.fiscal_quarter): r
        for r in parse_companyfacts(doc, "EX")
        if r.metric == "shares_outstanding" and r.period_type == "quarterly"
    }


def test_a_share_count_filed_in_thousands_is_scaled() -> None:
    # Q2: 50,512 "shares" between 50.1 and 50.9 million.
    counts = shares_outstanding((50_100_000, 50_512, 50_900_000, 51_200_000, 51_500_000))
    q2 = counts[(2021, 2)]
    assert q2.value == 50_512_000
    assert q2.provenance == "xbrl:us-gaap:CommonStockSharesOutstanding" + SCALED
    assert (q2.accession, q2.xbrl_tag) == ("q-2", "CommonStockSharesOutstanding")
    assert counts[(2021, 1)].value == 50_100_000
    assert counts[(2021, 3)].provenance == "xbrl:us-gaap:CommonStockSharesOutstanding"


def test_a_run_of_counts_in_thousands_at_the_start_is_scaled() -> None:
    # A filing's slip recurs in its comparatives; NVIDIA's first XBRL years were all slipped.
    counts = shares_outstanding((50_100, 50_512, 50_900_000, 51_200_000, 51_500_000))
    assert [counts[(2021, q)].value for q in (1, 2)] == [50_100_000, 50_512_000]
    assert all(counts[(2021, q)].provenance.endswith(SCALED) for q in (1, 2))


@pytest.mark.parametrize(
    "counts",
    [
        # A 7-for-1 split between Q2 and Q3 (Apple, June 2014): a step, not a slip.
        (50_100_000, 50_512_000, 353_000_000, 352_000_000, 351_000_000),
        # A thousandfold drop that never comes back could be a reverse split.
        (50_100_000, 50_512_000, 50_900_000, 51_200_000, 51_500),
        # ×1000 lands 40% below both neighbours: no thousands slip explains it.
        (50_100_000, 30_000, 50_900_000, 51_200_000, 51_500_000),
    ],
)
def test_share_counts_that_are_not_a_thousands_slip_stay_as_filed(
    counts: tuple[float, ...],
) -> None:
    records = shares_outstanding(counts)
    assert [records[key].value for key in sorted(records)] == list(counts)
    assert not [r for r in records.values() if SCALED in r.provenance]


# --- sanity rules: quarters from year-to-date figures, the year's own tag -------------------


def cash_flow_year(
    q1: float, six: float | None, nine: float, year: float, accession_suffix: str = ""
) -> list[dict[str, Any]]:
    """A calendar 2021 cash flow the way 10-Qs file it: Q1, then six and nine months to date."""
    facts = [
        fact(q1, "2021-03-31", "q-1", "2021-05-01", start="2021-01-01"),
        fact(nine, "2021-09-30", "q-3", "2021-11-01", start="2021-01-01"),
        fact(year, "2021-12-31", "k-21", "2022-02-01", start="2021-01-01", form="10-K"),
    ]
    if six is not None:
        facts.append(fact(six, "2021-06-30", "q-2", "2021-08-01", start="2021-01-01"))
    return facts


def quarters_of(doc: dict[str, Any], metric: str) -> dict[int, MetricValueRecord]:
    return {
        r.fiscal_quarter: r
        for r in parse_companyfacts(doc, "EX")
        if r.metric == metric and r.period_type == "quarterly" and r.fiscal_year == 2021
    }


def test_cash_flow_quarters_are_differences_of_year_to_date_figures() -> None:
    doc = companyfacts(
        {
            "Revenues": {"USD": flow_year((20, 25, 30, 100), nine=75)},
            "NetCashProvidedByUsedInOperatingActivities": {
                "USD": cash_flow_year(20_113_000, 45_326_000, 75_002_000, 100_287_000)
            },
        }
    )
    quarters = quarters_of(doc, "operating_cash_flow")
    assert {q: r.value for q, r in quarters.items()} == {
        1: 20_113_000,
        2: 25_213_000,
        3: 29_676_000,
        4: 25_285_000,
    }
    assert quarters[2].provenance == "derived:6M(q-2)-Q1(q-1)"
    assert quarters[3].provenance == "derived:9M(q-3)-6M(q-2)"
    assert quarters[4].provenance == "derived:FY2021(k-21)-9M(q-3)"
    # Cited from the filing that completes the quarter; the period is the quarter's own.
    assert (quarters[2].form, quarters[2].accession, quarters[2].xbrl_tag) == ("10-Q", "q-2", None)
    assert (quarters[3].period_start, quarters[3].period_end) == (
        date(2021, 7, 1),
        date(2021, 9, 30),
    )


SBC, SBC_EXPENSE = "ShareBasedCompensation", "AllocatedShareBasedCompensationExpense"


def stock_compensation(six: float | None) -> dict[str, Any]:
    """Alphabet 2019: the cash flow add-back (the catalog's first tag) for Q1, six and nine
    months and the year; the expense (a different, larger figure) for each three months."""
    expense = [
        fact(2_900_000_000, "2021-03-31", "q-1", "2021-05-01", start="2021-01-01"),
        fact(2_900_000_000, "2021-06-30", "q-2", "2021-08-01", start="2021-04-01"),
        fact(2_800_000_000, "2021-09-30", "q-3", "2021-11-01", start="2021-07-01"),
        fact(11_700_000_000, "2021-12-31", "k-21", "2022-02-01", start="2021-01-01", form="10-K"),
    ]
    return companyfacts(
        {
            "Revenues": {"USD": flow_year((20, 25, 30, 100), nine=75)},
            SBC: {"USD": cash_flow_year(2_769_000_000, six, 8_149_000_000, 10_794_000_000)},
            SBC_EXPENSE: {"USD": expense},
        }
    )


def test_a_years_quarters_come_from_the_tag_of_its_annual_figure() -> None:
    quarters = quarters_of(stock_compensation(six=5_525_000_000), "stock_based_compensation")
    assert {q: r.value for q, r in quarters.items()} == {
        1: 2_769_000_000,
        2: 2_756_000_000,
        3: 2_624_000_000,
        4: 2_645_000_000,
    }
    # They add up to the year, which per-quarter fallback to the expense tag did not.
    assert sum(r.value for r in quarters.values()) == 10_794_000_000
    assert quarters[1].provenance == f"xbrl:us-gaap:{SBC}"
    assert quarters[2].provenance == "derived:6M(q-2)-Q1(q-1)"


def test_a_quarter_the_years_tag_cannot_give_falls_back_to_another_tag() -> None:
    # Without the six months the add-back has no Q2 or Q3: the expense fills them in.
    quarters = quarters_of(stock_compensation(six=None), "stock_based_compensation")
    assert (quarters[2].value, quarters[2].provenance) == (
        2_900_000_000,
        f"xbrl:us-gaap:{SBC_EXPENSE}",
    )
    assert quarters[3].value == 2_800_000_000
    assert (quarters[4].value, quarters[4].provenance) == (
        2_645_000_000,
        "derived:FY2021(k-21)-9M(q-3)",
    )


def depreciation(q2_three_months: float, six: float) -> dict[str, Any]:
    """Tesla 2012: each 10-Q gives the quarter and the year to date."""
    facts = [
        *cash_flow_year(3_800_000, six, 13_700_000, 25_300_000),
        fact(q2_three_months, "2021-06-30", "q-2", "2021-08-01", start="2021-04-01"),
        fact(6_800_000, "2021-09-30", "q-3", "2021-11-01", start="2021-07-01"),
    ]
    return companyfacts(
        {
            "Revenues": {"USD": flow_year((20, 25, 30, 100), nine=75)},
            "DepreciationDepletionAndAmortization": {"USD": facts},
        }
    )


def test_a_three_month_figure_that_contradicts_its_own_filing_gives_way() -> None:
    # Q2's 10-Q: 3.7M for the quarter, but 6.9M for six months after Q1's 3.8M.
    quarters = quarters_of(depreciation(3_700_000, 6_900_000), "depreciation_and_amortization")
    assert quarters[2].value == 3_100_000
    assert quarters[2].provenance == (
        "derived:6M(q-2)-Q1(q-1); the three-month figure filed, 3,700,000, does not fit the "
        "filing's year-to-date figures"
    )
    assert quarters[3].provenance == "xbrl:us-gaap:DepreciationDepletionAndAmortization"
    assert sum(r.value for r in quarters.values()) == 25_300_000


def test_a_three_month_figure_within_rounding_of_its_filing_stands() -> None:
    # 7.1M - 3.8M = 3.3M against 3.2M filed: each figure rounded to the hundred thousand.
    quarters = quarters_of(depreciation(3_200_000, 7_100_000), "depreciation_and_amortization")
    assert quarters[2].value == 3_200_000
    assert quarters[2].provenance == "xbrl:us-gaap:DepreciationDepletionAndAmortization"


# --- sanity rules: a year restated after its quarters --------------------------------------


def restated_revenue(*later: dict[str, Any]) -> dict[str, Any]:
    """Revenue of 2021 as its 10-Qs and 10-K filed it, plus later filings of it."""
    quarters = (20_113_000, 25_326_000, 29_789_000, 100_455_000)
    return companyfacts({"Revenues": {"USD": [*flow_year(quarters, nine=75_228_000), *later]}})


def fiscal_2021(doc: dict[str, Any]) -> tuple[MetricValueRecord, MetricValueRecord]:
    """(the annual revenue, Q4) of 2021."""
    records = by_key(parse_companyfacts(doc, "EX"))
    return records[("revenue", "annual", 2021, 0)], records[("revenue", "quarterly", 2021, 4)]


def test_a_year_restated_after_its_nine_months_keeps_q4_on_the_basis_of_the_quarters() -> None:
    # Two years on, a 10-K restates 2021; no filing restates its quarters or nine months.
    year, q4 = fiscal_2021(
        restated_revenue(
            fact(104_020_000, "2021-12-31", "k-23", "2024-02-01", start="2021-01-01", form="10-K")
        )
    )
    # 100,455,000 - 75,228,000: not the restated year minus the nine months as filed, which
    # would put the whole year's restatement into Q4.
    assert (q4.value, q4.accession) == (25_227_000, "k-21")
    assert q4.provenance == (
        "derived:FY2021(k-21)-9M(q-3); FY2021 as filed before its restatement in k-23 "
        "(no later 9M was filed)"
    )
    assert (year.value, year.accession) == (104_020_000, "k-23")
    assert year.provenance == (
        "xbrl:us-gaap:Revenues; restated from 100,455,000 (filed in k-21), which its "
        "quarters, not restated, add up to"
    )


def test_a_restatement_that_reached_the_nine_months_too_takes_the_latest_of_both() -> None:
    # The next year's Q3 10-Q restates the nine months, then the next 10-K the year.
    year, q4 = fiscal_2021(
        restated_revenue(
            fact(77_900_000, "2021-09-30", "q-22-3", "2022-11-01", start="2021-01-01"),
            fact(104_020_000, "2021-12-31", "k-22", "2023-02-01", start="2021-01-01", form="10-K"),
        )
    )
    assert (q4.value, q4.provenance) == (26_120_000, "derived:FY2021(k-22)-9M(q-22-3)")
    assert year.provenance == "xbrl:us-gaap:Revenues"


def test_a_year_restated_only_in_form_is_no_restatement_of_basis() -> None:
    # A later 10-K in millions repeats the year rounded: the latest stands, without a note.
    year, q4 = fiscal_2021(
        restated_revenue(
            fact(100_000_000, "2021-12-31", "k-23", "2024-02-01", start="2021-01-01", form="10-K")
        )
    )
    assert (q4.value, q4.provenance) == (24_772_000, "derived:FY2021(k-23)-9M(q-3)")
    assert year.provenance == "xbrl:us-gaap:Revenues"
