"""Periods given as dates, months, lists and year-ago comparisons, resolved on each company's
own fiscal calendar, built from real period rows of the bundled dataset."""

from __future__ import annotations

from datetime import date

import pytest

from services.router.fiscal_calendar import FiscalCalendar, PeriodRow, load_fiscal_calendars
from services.router.periods import Periods, find_periods, read_price_window
from shared.db import create_pool
from tests.conftest import Servers


def held(fiscal_year: int, quarter: int | None, start: str | None, end: str) -> list[PeriodRow]:
    """A period as metric_values holds it: a duration and, for balances, the instant at its end."""
    period_type = "annual" if quarter is None else "quarterly"
    rows = [PeriodRow(fiscal_year, quarter, period_type, None, date.fromisoformat(end))]
    if start is not None:
        rows.append(
            PeriodRow(
                fiscal_year,
                quarter,
                period_type,
                date.fromisoformat(start),
                date.fromisoformat(end),
            )
        )
    return rows


# Copied from services/ingest/default_dataset/metric_values.csv.
APPLE = FiscalCalendar.build(
    "AAPL",
    "0926",
    [
        *held(2023, None, "2022-09-25", "2023-09-30"),
        *held(2023, 1, "2022-09-25", "2022-12-31"),
        *held(2023, 2, "2023-01-01", "2023-04-01"),
        *held(2023, 3, "2023-04-02", "2023-07-01"),
        *held(2023, 4, "2023-07-02", "2023-09-30"),
        *held(2024, None, "2023-10-01", "2024-09-28"),
        *held(2024, 1, "2023-10-01", "2023-12-30"),
        *held(2024, 2, "2023-12-31", "2024-03-30"),
        *held(2024, 3, "2024-03-31", "2024-06-29"),
        *held(2024, 4, "2024-06-30", "2024-09-28"),
        *held(2025, None, "2024-09-29", "2025-09-27"),
        *held(2025, 1, "2024-09-29", "2024-12-28"),
    ],
)
NVIDIA = FiscalCalendar.build(
    "NVDA",
    "0131",
    [
        *held(2024, None, "2023-01-30", "2024-01-28"),
        *held(2024, 4, "2023-10-30", "2024-01-28"),
        *held(2025, None, "2024-01-29", "2025-01-26"),
        *held(2025, 1, "2024-01-29", "2024-04-28"),
        *held(2025, 2, "2024-04-29", "2024-07-28"),
        *held(2025, 3, "2024-07-29", "2024-10-27"),
        *held(2025, 4, "2024-10-28", "2025-01-26"),
    ],
)
ALPHABET = FiscalCalendar.build(
    "GOOGL",
    "1231",
    [
        *held(2023, 3, "2023-07-01", "2023-09-30"),
        *held(2023, 4, "2023-10-01", "2023-12-31"),
        *held(2024, None, "2024-01-01", "2024-12-31"),
        *held(2024, 1, "2024-01-01", "2024-03-31"),
        *held(2024, 2, "2024-04-01", "2024-06-30"),
        *held(2024, 3, "2024-07-01", "2024-09-30"),
    ],
)


def selection(periods: Periods) -> tuple[str | None, list[int], list[int]]:
    return periods.period, periods.fiscal_years, periods.fiscal_quarters


def read(question: str, periods: Periods) -> list[str]:
    return [question[start:end] for start, end in periods.spans]


# --- the calendar ----------------------------------------------------------------------


def test_apples_calendar_knows_its_52_53_week_year_and_quarter_ends() -> None:
    assert APPLE.year_ending_on(date(2024, 9, 28)) == 2024
    assert APPLE.year_ending_on(date(2023, 9, 30)) == 2023
    assert APPLE.year_ending_on(date(2024, 6, 29)) is None
    assert APPLE.quarter_ending_on(date(2024, 3, 30)) == (2024, 2)
    assert APPLE.quarter_ending_on(date(2023, 4, 1)) == (2023, 2)
    assert APPLE.quarter_containing(date(2024, 1, 15)) == (2024, 2)
    assert APPLE.quarter_containing(date(2023, 12, 30)) == (2024, 1)
    assert APPLE.quarter_containing(date(2023, 12, 31)) == (2024, 2)


def test_a_fiscal_year_is_labelled_by_the_year_it_ends_in() -> None:
    assert NVIDIA.year_ending_on(date(2025, 1, 26)) == 2025
    assert NVIDIA.quarter_containing(date(2024, 3, 15)) == (2025, 1)


def test_years_nothing_is_held_for_fall_back_to_the_nominal_year_end() -> None:
    assert APPLE.year_ending_on(date(2030, 9, 28)) == 2030
    assert APPLE.quarter_ending_on(date(2030, 3, 26)) == (2030, 2)
    assert NVIDIA.quarter_ending_on(date(2030, 4, 30)) == (2031, 1)
    assert FiscalCalendar.build("MSFT", "0630", []).year_ending_on(date(2024, 6, 30)) == 2024


def test_without_a_nominal_year_end_the_latest_year_held_gives_one() -> None:
    calendar = FiscalCalendar.build("X", None, held(2024, None, "2023-10-01", "2024-09-28"))
    assert calendar.year_end == (9, 28)
    assert FiscalCalendar.build("Y", None, []).year_end == (12, 31)


# --- balances on a day -------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    ["2024-09-28", "9/28/2024", "September 28, 2024", "Sept. 28, 2024", "28 September 2024"],
)
def test_a_balance_as_of_apples_year_end_is_that_fiscal_year_in_every_date_form(
    written: str,
) -> None:
    question = f"Apple's total assets as of {written}"
    periods = find_periods(question, 2025, APPLE)
    assert selection(periods) == ("annual", [2024], [])
    assert [(ref.kind, ref.fiscal_year, ref.day) for ref in periods.asked] == [
        ("instant", 2024, date(2024, 9, 28))
    ]
    assert read(question, periods) == [f"as of {written}"]


def test_a_balance_at_a_quarter_end_is_that_fiscal_quarter() -> None:
    periods = find_periods("Apple cash at March 30, 2024", 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [2])
    assert periods.asked[0].fiscal_quarter == 2


def test_a_day_a_few_days_off_a_period_end_is_that_end() -> None:
    assert selection(find_periods("Apple total assets on September 30, 2024", 2025, APPLE)) == (
        "annual",
        [2024],
        [],
    )


def test_a_balance_inside_a_quarter_is_the_last_balance_sheet_before_it() -> None:
    assert selection(find_periods("Apple total debt as of May 15, 2024", 2025, APPLE)) == (
        "quarterly",
        [2024],
        [2],
    )


def test_a_balance_as_of_a_month_is_the_quarter_ending_in_it() -> None:
    assert selection(find_periods("Apple total assets as of June 2024", 2025, APPLE)) == (
        "quarterly",
        [2024],
        [3],
    )


def test_balances_at_a_year_end_and_a_quarter_end_are_both_quarters() -> None:
    periods = find_periods(
        "Apple total assets as of September 28, 2024 versus March 30, 2024", 2025, APPLE
    )
    assert selection(periods) == ("quarterly", [2024], [4, 2])


# --- durations ended on a day --------------------------------------------------------------


def test_the_fiscal_year_ended_a_day_resolves_on_nvidias_calendar() -> None:
    question = "NVIDIA net income for the fiscal year ended January 26, 2025"
    periods = find_periods(question, 2026, NVIDIA)
    assert selection(periods) == ("annual", [2025], [])
    assert periods.asked[0].kind == "ended"
    assert periods.asked[0].months == 12
    assert read(question, periods) == ["fiscal year ended January 26, 2025"]


def test_the_quarter_ended_a_day_resolves_on_apples_calendar() -> None:
    periods = find_periods("Apple revenue for the quarter ended March 30, 2024", 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [2])
    assert (periods.asked[0].fiscal_quarter, periods.asked[0].months) == (2, 3)


def test_three_months_ended_is_a_quarter_and_thirteen_weeks_too() -> None:
    for question in (
        "Apple revenue for the three months ended June 29, 2024",
        "Apple revenue for the 13 weeks ended June 29, 2024",
    ):
        assert selection(find_periods(question, 2025, APPLE)) == ("quarterly", [2024], [3])


def test_nine_months_ended_sums_the_first_three_quarters() -> None:
    question = "Apple revenue for the nine months ended June 29, 2024"
    periods = find_periods(question, 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [1, 2, 3])
    assert periods.months_to_date == 9
    assert not periods.spans_several
    assert read(question, periods) == ["nine months ended June 29, 2024"]


def test_six_months_ended_sums_the_first_half() -> None:
    periods = find_periods("Apple net income, six months ended March 30, 2024", 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [1, 2])
    assert periods.months_to_date == 6


def test_nine_months_across_a_fiscal_year_end_are_listed_not_summed() -> None:
    periods = find_periods("Alphabet revenue, nine months ended March 31, 2024", 2024, ALPHABET)
    assert selection(periods) == ("quarterly", [2023, 2024], [1, 3, 4])
    assert periods.months_to_date is None
    assert periods.spans_several


def test_twelve_months_ended_a_quarter_end_are_the_trailing_twelve_months_at_it() -> None:
    periods = find_periods("Apple revenue, twelve months ended December 30, 2023", 2025, APPLE)
    assert selection(periods) == ("ttm", [2024], [1])


def test_a_fiscal_year_ended_a_day_that_ends_none_is_the_last_year_ended_by_then() -> None:
    periods = find_periods("Apple revenue, fiscal year ended December 31, 2023", 2025, APPLE)
    assert selection(periods) == ("annual", [2023], [])


# --- quarters named by a month -------------------------------------------------------------


def test_the_march_quarter_is_the_quarter_ending_in_march_on_apples_calendar() -> None:
    question = "Apple revenue in the March quarter of 2024"
    periods = find_periods(question, 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [2])
    assert read(question, periods) == ["the March quarter of 2024"]


def test_the_march_quarter_is_the_quarter_holding_most_of_it_on_nvidias_calendar() -> None:
    assert selection(find_periods("NVIDIA revenue, the March quarter of 2024", 2026, NVIDIA)) == (
        "quarterly",
        [2025],
        [1],
    )


def test_a_thirteen_week_quarter_ending_on_april_first_is_still_the_march_quarter() -> None:
    assert selection(find_periods("Apple revenue, the March quarter of 2023", 2025, APPLE)) == (
        "quarterly",
        [2023],
        [2],
    )


def test_the_december_2023_quarter_and_the_quarter_ending_in_june() -> None:
    assert selection(find_periods("Apple revenue in the December 2023 quarter", 2025, APPLE)) == (
        "quarterly",
        [2024],
        [1],
    )
    assert selection(
        find_periods("Apple revenue for the quarter ending in June 2024", 2025, APPLE)
    ) == ("quarterly", [2024], [3])


def test_a_month_quarter_of_a_fiscal_year_is_that_years_quarter() -> None:
    assert selection(
        find_periods("NVIDIA revenue in the April quarter of fiscal 2025", 2026, NVIDIA)
    ) == ("quarterly", [2025], [1])


# --- without a calendar ----------------------------------------------------------------------


def test_without_a_calendar_fiscal_years_are_calendar_years() -> None:
    assert selection(find_periods("total assets as of June 30, 2024")) == (
        "quarterly",
        [2024],
        [2],
    )
    assert selection(find_periods("revenue for the fiscal year ended June 30, 2024")) == (
        "annual",
        [2024],
        [],
    )
    assert selection(find_periods("revenue for the year ended January 2, 2021")) == (
        "annual",
        [2020],
        [],
    )
    assert selection(find_periods("revenue for the quarter ended September 30, 2024")) == (
        "quarterly",
        [2024],
        [3],
    )


# --- lists and ranges ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "years"),
    [
        ("Apple revenue in fiscal 2021, 2022 and 2023", [2021, 2022, 2023]),
        ("Apple revenue in 2021, 2022, and 2023", [2021, 2022, 2023]),
        ("Apple revenue in FY2021, FY2022 and FY2023", [2021, 2022, 2023]),
        ("Apple revenue in 2022 and 2023", [2022, 2023]),
        ("Apple revenue in 2020 and 2023", [2020, 2023]),
    ],
)
def test_a_list_of_years_is_every_year_it_names(question: str, years: list[int]) -> None:
    periods = find_periods(question, 2025)
    assert periods.fiscal_years == years
    assert periods.spans_several
    assert [ref.fiscal_year for ref in periods.asked] == years
    assert read(question, periods) == [question.split(" in ")[1]]


@pytest.mark.parametrize(
    "question",
    [
        "Apple revenue 2019 through 2023",
        "Apple revenue from 2019 to 2023",
        "Apple revenue between 2019 and 2023",
        "Apple revenue FY2019-FY2023",
    ],
)
def test_a_range_stays_a_range(question: str) -> None:
    periods = find_periods(question, 2025)
    assert periods.fiscal_years == [2019, 2020, 2021, 2022, 2023]
    assert [ref.kind for ref in periods.asked] == ["range"]


def test_a_list_of_quarters_is_every_quarter_it_names() -> None:
    periods = find_periods("Apple revenue in Q1 and Q3 2024", 2025, APPLE)
    assert selection(periods) == ("quarterly", [2024], [1, 3])
    assert periods.spans_several
    assert [(ref.fiscal_year, ref.fiscal_quarter) for ref in periods.asked] == [
        (2024, 1),
        (2024, 3),
    ]


def test_a_range_of_quarters_is_every_quarter_in_it() -> None:
    assert find_periods("Apple revenue Q1 through Q3 2024").fiscal_quarters == [1, 2, 3]


# --- a quarter against the same quarter a year earlier --------------------------------------


@pytest.mark.parametrize(
    "question",
    [
        "Apple Q3 FY2024 revenue growth year over year",
        "Apple Q3 2024 revenue compared with the same quarter a year earlier",
        "Apple revenue in the third quarter of fiscal 2024 versus the year-ago quarter",
        "Apple revenue for the quarter ended June 29, 2024 vs the same quarter last year",
    ],
)
def test_a_quarters_growth_year_over_year_fetches_the_same_quarter_a_year_earlier(
    question: str,
) -> None:
    periods = find_periods(question, 2025, APPLE)
    assert selection(periods) == ("quarterly", [2023, 2024], [3])
    assert periods.same_quarter_last_year
    assert not periods.spans_several
    assert periods.shift == 0


def test_a_years_growth_year_over_year_is_not_a_quarter_comparison() -> None:
    periods = find_periods("Apple revenue growth year over year in 2024", 2025, APPLE)
    assert periods.fiscal_years == [2024]
    assert not periods.same_quarter_last_year


# --- what was read -----------------------------------------------------------------------------


def test_every_expression_read_is_a_span_of_the_question() -> None:
    question = "How did Apple's revenue by quarter last year compare with TTM revenue?"
    assert read(question, find_periods(question, 2025)) == ["by quarter", "last year", "TTM"]
    question = "Apple revenue in fiscal 2023 and the year before"
    assert read(question, find_periods(question, 2025)) == ["fiscal 2023", "the year before"]


def test_each_expression_is_kept_as_written_with_its_resolution() -> None:
    question = "Apple cash as of March 30, 2024 and revenue for the nine months ended June 29, 2024"
    asked = find_periods(question, 2025, APPLE).asked
    assert [(ref.kind, ref.text, ref.fiscal_year, ref.fiscal_quarter) for ref in asked] == [
        ("instant", "as of March 30, 2024", 2024, 2),
        ("ended", "nine months ended June 29, 2024", 2024, 3),
    ]


def test_a_quarter_and_its_year_are_read_as_one_expression() -> None:
    question = "Apple revenue in the third quarter of fiscal 2024"
    periods = find_periods(question, 2025, APPLE)
    assert read(question, periods) == ["third quarter of fiscal 2024"]
    assert [(ref.kind, ref.fiscal_year, ref.fiscal_quarter) for ref in periods.asked] == [
        ("fiscal_quarter", 2024, 3)
    ]


def test_the_day_of_a_filing_is_not_a_period() -> None:
    question = "What was Apple's revenue in the 10-K filed November 1, 2024?"
    periods = find_periods(question, 2025, APPLE)
    assert periods.fiscal_years == []
    assert [ref.kind for ref in periods.asked] == ["calendar"]


def test_the_latest_quarter_against_the_same_quarter_last_year_fetches_five_quarters() -> None:
    periods = find_periods("Apple revenue last quarter vs the same quarter last year", 2025, APPLE)
    assert (periods.period, periods.last, periods.same_quarter_last_year) == ("quarterly", 5, True)


def test_two_days_joined_as_a_window_are_calendar_days_not_balances() -> None:
    question = "AAPL closing price from March 1, 2024 to June 28, 2024"
    periods = find_periods(question, 2025, APPLE)
    assert [ref.kind for ref in periods.asked] == ["calendar"]
    assert periods.fiscal_years == []
    assert read(question, periods) == ["from March 1, 2024 to June 28, 2024"]


def test_a_price_window_reports_what_it_read() -> None:
    question = "AAPL close on March 15, 2024"
    reading = read_price_window(question)
    assert reading.window == {"start": date(2024, 3, 15), "end": date(2024, 3, 15)}
    assert [question[start:end] for start, end in reading.spans] == ["on March 15, 2024"]
    question = "AAPL stock over the last month"
    reading = read_price_window(question, date(2025, 6, 30))
    assert reading.window == {"start": date(2025, 5, 30), "end": date(2025, 6, 30)}
    assert [question[start:end] for start, end in reading.spans] == ["last month"]


# --- the calendars the router loads ------------------------------------------------------------


async def test_the_bundled_database_gives_each_company_its_fiscal_calendar(
    servers: Servers,
) -> None:
    pool = await create_pool(servers.postgres.dsn, min_size=1, max_size=1)
    try:
        calendars = await load_fiscal_calendars(pool)
    finally:
        await pool.close()
    apple, nvidia = calendars["AAPL"], calendars["NVDA"]
    assert apple.year_end == (9, 26)
    assert apple.year_ending_on(date(2024, 9, 28)) == 2024
    assert apple.quarter_ending_on(date(2024, 3, 30)) == (2024, 2)
    assert apple.holds(2024, 2)
    assert nvidia.year_end_of(2025) == date(2025, 1, 26)
    assert nvidia.quarter_of_month(2024, 3) == (2025, 1)
    assert selection(
        find_periods("Alphabet revenue, quarter ended June 30, 2024", None, calendars["GOOGL"])
    ) == (
        "quarterly",
        [2024],
        [2],
    )


def test_balances_between_two_year_ends_are_both_years_not_a_window_of_days() -> None:
    periods = find_periods(
        "long-term debt between December 31, 2023 and December 31, 2024", calendar=ALPHABET
    )
    assert (periods.period, periods.fiscal_years) == ("annual", [2023, 2024])


def test_days_that_end_no_fiscal_year_stay_a_window() -> None:
    periods = find_periods("between March 1, 2024 and June 28, 2024", calendar=ALPHABET)
    assert periods.fiscal_years == []
