"""Temporal context of chunks: dates, fiscal periods, months, relative expressions and
years found in text and tables, the embedding prefix and the filter metadata."""

from __future__ import annotations

import json
from datetime import date

import pytest

from services.ingest.temporal import (
    TemporalMention,
    context_prefix,
    extract_temporal,
    temporal_metadata,
)

APPLE_FILING_DAY = date(2023, 11, 3)  # in Q1 FY2024 of a September year end
SEPTEMBER = 9

INCOME_TABLE = """Apple's results for fiscal 2023 follow.
[TABLE 4]
| | September 30, 2023 | September 24, 2022 |
|---|---:|---:|
| Net sales | 383,285 | 394,328 |
| Units shipped | 2023 | 1,500 |
| | 2023 | 2022 |
| 2021 | 1,200 | 1,100 |
[END TABLE]
Prose after the table mentions 2020."""


def labels(
    text: str, document_date: date | None = None, fiscal_year_end_month: int = 12
) -> list[str]:
    found = extract_temporal(text, document_date, fiscal_year_end_month)
    return [mention.label() for mention in found]


def kinds(text: str) -> list[str]:
    return [mention.kind for mention in extract_temporal(text)]


def mention(text: str, words: str) -> TemporalMention:
    return next(found for found in extract_temporal(text) if found.text == words)


def prefix_items(prefix: str) -> list[str]:
    """The labels of a prefix in order, whatever section they are in."""
    body = prefix.removeprefix("[").removesuffix("]")
    sections = [section.split(": ", 1)[1] for section in body.split("; ") if section]
    return [item for section in sections for item in section.split(", ")]


# --- dates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "The period ended 2023-09-30.",
        "The period ended 9/30/2023.",
        "The period ended 09/30/23.",
        "The period ended September 30, 2023.",
        "The period ended 30 September 2023.",
        "The period ended Sept. 30, 2023.",
        "The period ended Sep 30 2023.",
        "The period ended September 30th, 2023.",
        "THE PERIOD ENDED SEPTEMBER 30, 2023",
    ],
)
def test_every_way_of_writing_a_day_reads_as_the_same_date(text: str) -> None:
    [found] = extract_temporal(text)
    assert (found.kind, found.label(), found.day) == ("date", "2023-09-30", date(2023, 9, 30))


@pytest.mark.parametrize("text", ["2023-02-30", "13/45/2023", "February 30, 2023"])
def test_a_day_that_does_not_exist_is_not_a_date(text: str) -> None:
    assert "date" not in kinds(text)


def test_a_date_and_the_year_after_it_are_both_reported() -> None:
    assert labels("As of December 31, 2023 and 2022") == ["2023-12-31", "2022"]


# --- fiscal periods --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Q1 2023", "Q1 2023"),
        ("Q1-2023", "Q1 2023"),
        ("Q4'23", "Q4 2023"),
        ("Q1 FY2023", "Q1 FY2023"),
        ("Q1 FY23", "Q1 FY2023"),
        ("Q2 of fiscal 2023", "Q2 FY2023"),
        ("1Q23", "Q1 2023"),
        ("3Q 2023", "Q3 2023"),
        ("FY2023 Q2", "Q2 FY2023"),
        ("first quarter of fiscal 2023", "Q1 FY2023"),
        ("the fourth fiscal quarter of 2023", "Q4 FY2023"),
        ("the third quarter of 2023", "Q3 2023"),
        ("second quarter 2023", "Q2 2023"),
        ("fiscal 2023 fourth quarter", "Q4 FY2023"),
        ("first quarter of fiscal year 2023", "Q1 FY2023"),
    ],
)
def test_quarters_are_read_in_every_common_form(text: str, label: str) -> None:
    [found] = extract_temporal(f"Revenue in {text} rose.")
    assert (found.kind, found.label()) == ("fiscal_period", label)


@pytest.mark.parametrize(
    "text",
    ["FY2023", "FY 2023", "FY23", "FY 23", "FY'23", "fiscal year 2023", "fiscal 2023",
     "fiscal year 23", "Fiscal Year 2023", "fiscal-year 2023"],
)  # fmt: skip
def test_fiscal_years_are_read_in_every_common_form(text: str) -> None:
    [found] = extract_temporal(f"Net income for {text} was $97.0 billion.")
    assert (found.kind, found.label(), found.fiscal) == ("fiscal_period", "FY2023", True)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("H1 2023", "H1 2023"),
        ("H2 FY2023", "H2 FY2023"),
        ("first half of 2023", "H1 2023"),
        ("the second half of fiscal 2024", "H2 FY2024"),
        ("1H23", "H1 2023"),
        ("2H 2023", "H2 2023"),
        ("FY2023 H1", "H1 FY2023"),
    ],
)
def test_halves_are_read_in_every_common_form(text: str, label: str) -> None:
    [found] = extract_temporal(f"Margins in {text} improved.")
    assert (found.kind, found.label(), found.half) == ("fiscal_period", label, int(label[1]))


def test_a_quarter_is_fiscal_only_when_the_text_says_so() -> None:
    assert [found.fiscal for found in extract_temporal("Q1 2023 and Q1 FY2023")] == [False, True]


def test_a_list_of_fiscal_years_makes_each_year_fiscal() -> None:
    assert labels("for fiscal years 2023, 2022 and 2021") == ["FY2023", "FY2022", "FY2021"]


def test_a_year_inside_a_fiscal_period_is_not_repeated() -> None:
    assert kinds("Revenue for fiscal 2023 and Q1 2024 grew.") == ["fiscal_period"] * 2


# --- months ----------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["September 2023", "Sep 2023", "Sept. 2023", "09/2023"])
def test_a_month_of_a_year_is_read_as_that_month(text: str) -> None:
    [found] = extract_temporal(f"Shipments began in {text}.")
    assert (found.kind, found.label(), found.month) == ("month_year", "2023-09", 9)


def test_a_month_inside_a_full_date_is_not_repeated() -> None:
    assert kinds("on September 30, 2023") == ["date"]


# --- years -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "years"),
    [
        ("Sales grew in 2023.", [2023]),
        ("The plant opens mid-2024.", [2024]),
        ("Over 2021-2023 margins rose.", [2021, 2023]),
        ("In 2023-24 the fiscal year changed.", [2023, 2024]),
        ("Between 2022/2023 we grew.", [2022, 2023]),
        ("(1999)", [1999]),
    ],
)
def test_bare_years_and_year_ranges_are_reported(text: str, years: list[int]) -> None:
    assert [found.year for found in extract_temporal(text)] == years
    assert set(kinds(text)) == {"year"}


@pytest.mark.parametrize(
    "text",
    [
        "Shares outstanding were 2,023 thousand.",
        "Capital spending was $2023 million.",
        "Capital spending was $ 2023 million.",
        "Spending reached 2023 million units.",
        "The ratio was 2023.5 to one.",
        "The ratio was 12.2023.",
        "Margin rose 2023% on a small base.",
        "See Page 2023 of the exhibit.",
        "Refer to No. 2023 in the index.",
        "Adopted ASU 2016-13 and ASU 2023-07.",
        "The code 20234 and v2023 and #2023.",
        "The years 1850 and 2150 are out of range.",
    ],
)
def test_numbers_that_only_look_like_years_are_not_years(text: str) -> None:
    assert extract_temporal(text) == []


def test_a_table_marker_number_is_not_a_year() -> None:
    assert extract_temporal("[TABLE 2023]\n| a | b |\n[END TABLE]") == []


# --- relative expressions ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("last fiscal year", "FY2023"),
        ("the prior year", "FY2023"),
        ("this quarter", "Q1 FY2024"),
        ("the previous quarter", "Q4 FY2023"),
        ("next fiscal year", "FY2025"),
        ("two years ago", "FY2022"),
        ("a quarter ago", "Q4 FY2023"),
        ("the current fiscal year", "FY2024"),
        ("the first quarter of last year", "Q1 FY2023"),
        ("the second half of next fiscal year", "H2 FY2025"),
    ],
)
def test_relative_expressions_count_fiscal_periods_from_the_document_date(
    text: str, label: str
) -> None:
    found = extract_temporal(
        f"Compared with {text}, sales rose.",
        document_date=APPLE_FILING_DAY,
        fiscal_year_end_month=SEPTEMBER,
    )
    assert [(mention.kind, mention.label()) for mention in found] == [("relative", label)]


@pytest.mark.parametrize(
    ("text", "document_date", "label"),
    [
        ("last year", date(2023, 11, 3), "2022"),
        ("prior-year", date(2023, 11, 3), "2022"),
        ("last fiscal year", date(2023, 11, 3), "FY2022"),
        ("this quarter", date(2023, 11, 3), "Q4 2023"),
        ("previous quarter", date(2023, 2, 10), "Q4 2022"),
        ("next quarter", date(2023, 12, 31), "Q1 2024"),
        ("3 years ago", date(2023, 6, 1), "2020"),
    ],
)
def test_on_a_december_year_end_relative_periods_are_calendar_ones_unless_called_fiscal(
    text: str, document_date: date, label: str
) -> None:
    assert labels(text, document_date=document_date) == [label]


def test_a_fiscal_year_ending_in_january_is_named_for_the_year_it_ends_in() -> None:
    assert labels("this fiscal year", document_date=date(2023, 3, 1), fiscal_year_end_month=1) == [
        "FY2024"
    ]


def test_without_a_document_date_relative_expressions_are_reported_unresolved() -> None:
    [found] = extract_temporal("Sales rose from Last  Year.")
    assert (found.kind, found.year, found.resolved, found.label()) == (
        "relative",
        None,
        False,
        "last year",
    )


@pytest.mark.parametrize(
    "text",
    ["Sales grew year-over-year.", "Growth quarter over quarter.", "Up this year-over-year.",
     "As in prior years.", "Over the past few years."],
)  # fmt: skip
def test_comparisons_and_vague_spans_are_not_periods(text: str) -> None:
    assert extract_temporal(text, document_date=APPLE_FILING_DAY) == []


def test_a_fiscal_year_end_month_outside_the_calendar_is_refused() -> None:
    with pytest.raises(ValueError, match="month number from 1 to 12"):
        extract_temporal("last year", fiscal_year_end_month=13)


# --- tables ----------------------------------------------------------------------------


def test_mentions_in_a_table_carry_the_header_of_their_column() -> None:
    found = {
        (mention.label(), mention.column_header)
        for mention in extract_temporal(INCOME_TABLE)
        if mention.in_table
    }
    assert found == {
        ("2023-09-30", "September 30, 2023"),
        ("2022-09-24", "September 24, 2022"),
        ("2023", "September 30, 2023"),
        ("2022", "September 24, 2022"),
        ("2021", None),
    }


def test_a_mention_in_the_header_row_is_its_own_column_header() -> None:
    header_date = mention(INCOME_TABLE, "September 30, 2023")
    assert (header_date.in_table, header_date.column_header) == (True, "September 30, 2023")


def test_mentions_outside_the_table_are_not_tabular() -> None:
    outside = [found for found in extract_temporal(INCOME_TABLE) if not found.in_table]
    assert [(found.label(), found.column_header) for found in outside] == [
        ("FY2023", None),
        ("2020", None),
    ]


def test_a_year_alone_in_a_cell_of_a_data_row_is_an_amount() -> None:
    units_row_start = INCOME_TABLE.index("| Units shipped")
    assert not [
        found
        for found in extract_temporal(INCOME_TABLE)
        if units_row_start <= found.start < INCOME_TABLE.index("\n", units_row_start)
    ]


def test_a_period_in_a_body_cell_takes_the_header_above_it() -> None:
    table = (
        "[TABLE 1]\n| Quarter | Period end |\n| --- | --- |\n"
        "| Q1 FY2023 | December 31, 2022 |\n[END TABLE]"
    )
    assert [(found.label(), found.column_header) for found in extract_temporal(table)] == [
        ("Q1 FY2023", "Quarter"),
        ("2022-12-31", "Period end"),
    ]


def test_a_table_left_open_runs_to_the_end_of_the_text() -> None:
    [found] = extract_temporal("[TABLE 2]\n| Fiscal 2023 |\n| 1 |")
    assert (found.in_table, found.column_header) == (True, "Fiscal 2023")


# --- positions -------------------------------------------------------------------------


def test_every_mention_points_at_its_own_text_in_reading_order() -> None:
    text = INCOME_TABLE + " Q4 FY2023, last year, 1H23, Sep 2023 and 9/30/23."
    found = extract_temporal(text, document_date=APPLE_FILING_DAY)
    assert all(text[mention.start : mention.end] == mention.text for mention in found)
    assert [mention.start for mention in found] == sorted(mention.start for mention in found)


# --- context prefix ---------------------------------------------------------------------


def test_the_prefix_names_periods_dates_months_and_years_most_specific_first() -> None:
    text = "In fiscal 2023 (FY2023), Q4 FY2023 ended September 30, 2023; in August 2022 and 2021."
    assert context_prefix(extract_temporal(text)) == (
        "[Periods: Q4 FY2023, FY2023; Dates: 2023-09-30; Months: 2022-08; Years: 2021]"
    )


def test_the_prefix_leaves_out_a_year_or_month_a_more_specific_label_already_says() -> None:
    text = "Fiscal 2023 ended September 30, 2023; September 2023 was strong; 2023 overall."
    assert context_prefix(extract_temporal(text)) == "[Periods: FY2023; Dates: 2023-09-30]"


def test_the_prefix_of_a_text_without_time_is_empty() -> None:
    assert context_prefix(extract_temporal("Revenue rose on strong demand.")) == ""


def test_unresolved_relative_expressions_stay_out_of_the_prefix() -> None:
    assert context_prefix(extract_temporal("Unlike last year, sales in 2023 rose.")) == (
        "[Years: 2023]"
    )


def test_a_long_prefix_stops_at_an_item_boundary_within_200_characters() -> None:
    text = " ".join(f"On {day:%B %d, %Y}." for day in (date(2000 + n, 3, 31) for n in range(30)))
    found = extract_temporal(text)
    full = context_prefix(found, limit=10_000)
    prefix = context_prefix(found)
    assert len(full) > 200
    assert len(prefix) <= 200
    assert prefix.startswith("[Dates: 2000-03-31, ") and prefix.endswith("]")
    items = prefix_items(prefix)
    assert items == prefix_items(full)[: len(items)]
    assert len(prefix) + len(", 2000-03-31") > 200  # the next item would not have fitted


def test_a_limit_of_exactly_the_full_length_keeps_every_item() -> None:
    found = extract_temporal("Q4 FY2023 ended September 30, 2023, after 2021.")
    full = context_prefix(found, limit=10_000)
    assert context_prefix(found, limit=len(full)) == full
    assert context_prefix(found, limit=len(full) - 1) == "[Periods: Q4 FY2023; Dates: 2023-09-30]"


def test_a_limit_too_small_for_one_item_gives_no_prefix() -> None:
    assert context_prefix(extract_temporal("fiscal 2023"), limit=10) == ""


# --- metadata --------------------------------------------------------------------------


def test_metadata_lists_every_fact_sorted_and_unique() -> None:
    text = (
        "Q4 FY2023 and fiscal 2023 ended September 30, 2023. In H1 2024, August 2022 "
        "and 2021, sales grew; Q4 FY2023 again."
    )
    assert temporal_metadata(extract_temporal(text)) == {
        "years": [2021, 2022, 2023, 2024],
        "fiscal_years": [2023],
        "fiscal_quarters": [[2023, 4]],
        "halves": [[2024, 1]],
        "dates": ["2023-09-30"],
        "months": ["2022-08", "2023-09"],
        "has_tabular_dates": False,
        "has_unresolved_relative": False,
    }


def test_metadata_survives_a_json_round_trip_unchanged() -> None:
    metadata = temporal_metadata(
        extract_temporal(INCOME_TABLE + " Q1 2024, 1H23, last year", document_date=date(2024, 1, 5))
    )
    assert json.loads(json.dumps(metadata)) == metadata


def test_metadata_says_when_dates_come_from_a_table() -> None:
    assert temporal_metadata(extract_temporal(INCOME_TABLE))["has_tabular_dates"] is True
    assert temporal_metadata(extract_temporal("fiscal 2023"))["has_tabular_dates"] is False


def test_metadata_keeps_unresolved_relative_expressions_out_of_the_facts() -> None:
    metadata = temporal_metadata(extract_temporal("Sales rose from last quarter."))
    assert metadata["years"] == [] and metadata["has_unresolved_relative"] is True


def test_metadata_of_resolved_relative_periods_is_fiscal_off_a_december_year_end() -> None:
    found = extract_temporal(
        "Sales rose from the previous quarter.",
        document_date=APPLE_FILING_DAY,
        fiscal_year_end_month=SEPTEMBER,
    )
    metadata = temporal_metadata(found)
    assert (metadata["fiscal_years"], metadata["fiscal_quarters"]) == ([2023], [[2023, 4]])
