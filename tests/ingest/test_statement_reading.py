"""Reading the income statement, balance sheet and cash flow statement out of a parsed
filing into typed line items, and mapping those lines to the metric catalog.

The synthetic tests build small parsed documents and run anywhere; the ones on real SEC
filings skip without ../shared/data, and parse each filing once per module (a 10-K PDF
takes tens of seconds). Expected figures were read off each filing's own statements.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import date

import pytest

from services.ingest.block_building import render_table
from services.ingest.document_model import Block, ParsedDocument
from services.ingest.statement_metrics import (
    STATEMENT_LABELS,
    StatementFigure,
    metric_for,
    statement_figures,
)
from services.ingest.statements import (
    LineItem,
    Statement,
    StatementColumn,
    StatementKind,
    fiscal_year_of,
    parse_amount,
    read_statements,
    tidy_label,
)
from shared.metric_catalog import METRICS_BY_ID
from tests.helpers import parsed_filing

MILLION = 1e6


# --- building synthetic documents --------------------------------------------------------


class _Blocks:
    """Blocks in reading order, tables numbered from 1 as the parsers number them."""

    def __init__(self) -> None:
        self.blocks: list[Block] = []
        self.tables = 0

    def text(self, text: str, page: int) -> _Blocks:
        self.blocks.append(Block(kind="text", text=text, page=page))
        return self

    def table(self, rows: Sequence[Sequence[str]], page: int) -> _Blocks:
        self.tables += 1
        self.blocks.append(
            Block(
                kind="table",
                text=render_table(rows, self.tables),
                page=page,
                table_number=self.tables,
            )
        )
        return self

    def document(
        self, *, form: str | None = "10-K", period_end: date | None = None
    ) -> ParsedDocument:
        return ParsedDocument(
            title="example.pdf",
            doc_type="pdf",
            blocks=self.blocks,
            form=form,
            period_end=period_end,
        )


_INCOME_ROWS = [
    ["", "Year Ended December 31, 2023", "Year Ended December 31, 2022"],
    ["Net sales:", "", ""],
    ["Products", "$ 7,000", "$ 6,500"],
    ["Services", "1,250", "1,000"],
    ["Total net sales", "8,250", "7,500"],
    ["Cost of sales", "5,000", "4,800"],
    ["Gross margin", "3,250", "2,700"],
    ["Other income/(expense), net", "(125)", "—"],
    ["Net income (1)", "$ 2,100", "$ 1,650"],
    ["Earnings per share:", "", ""],
    ["Basic", "$ 2.10", "$ 1.65"],
    ["Diluted", "$ 2.05", "$ (0.10)"],
    ["Weighted-average shares used in computing earnings per share:", "", ""],
    ["Basic", "1,000", "1,000"],
    ["Diluted", "1,024", "1,010"],
]


def _income_document() -> ParsedDocument:
    return (
        _Blocks()
        .text("Table of Contents", 40)
        .text("CONSOLIDATED STATEMENTS OF OPERATIONS\n\n(In millions, except per share data)", 40)
        .table(_INCOME_ROWS, 40)
        .text("See accompanying notes to consolidated financial statements.", 40)
        .document()
    )


def _only(statements: list[Statement], kind: StatementKind) -> Statement:
    found = [statement for statement in statements if statement.kind == kind]
    assert len(found) == 1, [s.kind for s in statements]
    return found[0]


def _item(statement: Statement, label: str, *, nth: int = 0) -> LineItem:
    items = [item for item in statement.items if item.label == label]
    assert len(items) > nth, f"{label!r} not among {[i.label for i in statement.items]}"
    return items[nth]


# --- amounts and labels ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cell", "amount"),
    [
        ("1,234", 1234.0),
        ("$1,234", 1234.0),
        ("$ 1,234", 1234.0),
        ("(1,234)", -1234.0),
        ("$(241)", -241.0),
        ("$ (0.52)", -0.52),
        ("-75", -75.0),
        ("6.15", 6.15),
        ("1,234 (a)", 1234.0),
        ("12,345 (1)", 12345.0),
        ("(1)", -1.0),
        ("—", 0.0),
        ("–", 0.0),
        ("-", 0.0),
        ("$ —", 0.0),
        ("", None),
        ("n/a", None),
        ("(12", None),
        ("4.5%", None),
    ],
)
def test_amounts_are_read_as_statements_print_them(cell: str, amount: float | None) -> None:
    assert parse_amount(cell) == amount


@pytest.mark.parametrize(
    ("written", "tidied"),
    [
        ("Total revenues(1)", "Total revenues"),
        ("Wearables, Home and Accessories (1)(2)", "Wearables, Home and Accessories"),
        ("Basic net income per share (Note 12)", "Basic net income per share"),
        ("Current liabilities:", "Current liabilities"),
        ("Total stockholders’ equity", "Total stockholders' equity"),
        ("Net income (loss)", "Net income (loss)"),
        ("Basic (in dollars per share)", "Basic"),
        ("Net   income *", "Net income"),
    ],
)
def test_labels_lose_footnote_marks_and_colons_but_not_their_words(
    written: str, tidied: str
) -> None:
    assert tidy_label(written) == tidied


# --- one statement -----------------------------------------------------------------------


def test_an_income_statement_is_read_with_its_periods_page_and_table_number() -> None:
    statement = _only(read_statements(_income_document()), "income")

    assert statement.title == "CONSOLIDATED STATEMENTS OF OPERATIONS"
    assert (statement.page, statement.table_number, statement.pages) == (40, 1, (40,))
    assert [(c.period_end, c.months, c.fiscal_year) for c in statement.columns] == [
        (date(2023, 12, 31), 12, 2023),
        (date(2022, 12, 31), 12, 2022),
    ]
    assert statement.columns[0].header == "Year Ended December 31, 2023"


def test_amounts_are_multiplied_by_the_stated_scale_except_per_share_amounts() -> None:
    statement = _only(read_statements(_income_document()), "income")

    assert statement.scale == MILLION
    assert _item(statement, "Total net sales").values == (8_250 * MILLION, 7_500 * MILLION)
    assert _item(statement, "Net income").values == (2_100 * MILLION, 1_650 * MILLION)
    eps = _item(statement, "Diluted")
    assert (eps.per_share, eps.share_count, eps.values) == (True, False, (2.05, -0.10))
    shares = _item(statement, "Diluted", nth=1)
    assert (shares.per_share, shares.share_count) == (False, True)
    assert shares.values == (1_024 * MILLION, 1_010 * MILLION)


def test_parentheses_are_negative_and_a_dash_is_a_nil_amount() -> None:
    statement = _only(read_statements(_income_document()), "income")

    assert _item(statement, "Other income/(expense), net").values == (-125 * MILLION, 0.0)


def test_rows_know_their_section_and_whether_they_are_totals() -> None:
    statement = _only(read_statements(_income_document()), "income")

    products = _item(statement, "Products")
    total = _item(statement, "Total net sales")
    assert (products.section, products.is_total) == ("Net sales", False)
    assert total.is_total
    # The total closes its section: the lines after it stand outside "Net sales".
    assert _item(statement, "Cost of sales").section is None
    assert _item(statement, "Basic").section == "Earnings per share"


def test_a_label_cell_dates_a_header_of_years_alone() -> None:
    document = (
        _Blocks()
        .text("INCOME STATEMENTS\n\n(In millions, except per share amounts)", 52)
        .table(
            [
                ["Year Ended June 30,", "2016", "2015"],
                ["Total revenue", "85,320", "93,580"],
                ["Net income", "$16,798", "$12,193"],
            ],
            52,
        )
        .document(form=None)
    )

    statement = _only(read_statements(document), "income")

    assert [(c.period_end, c.months, c.fiscal_year) for c in statement.columns] == [
        (date(2016, 6, 30), 12, 2016),
        (date(2015, 6, 30), 12, 2015),
    ]
    assert statement.columns[1].header == "Year Ended June 30, 2015"


def test_years_alone_end_on_the_day_the_cover_page_names() -> None:
    document = (
        _Blocks()
        .text("FORM 10-K\n\nFor the fiscal year ended December 31, 2023", 1)
        .text("CONSOLIDATED STATEMENTS OF CASH FLOWS\n\n(in thousands)", 50)
        .table(
            [
                ["", "2023", "2022"],
                ["Net cash provided by operating activities", "1,500", "1,200"],
                ["Net cash used in investing activities", "(700)", "(650)"],
                ["Net cash used in financing activities", "(300)", "(100)"],
            ],
            50,
        )
        .document(form=None)
    )

    statement = _only(read_statements(document), "cash_flow")

    assert statement.scale == 1_000
    assert [(c.period_end, c.months) for c in statement.columns] == [
        (date(2023, 12, 31), 12),
        (date(2022, 12, 31), 12),
    ]
    assert _item(statement, "Net cash used in investing activities").values == (
        -700_000.0,
        -650_000.0,
    )


def test_a_scale_for_share_numbers_stated_apart_applies_to_share_counts_only() -> None:
    rows = [row[:] for row in _INCOME_ROWS]
    document = (
        _Blocks()
        .text(
            "CONSOLIDATED STATEMENTS OF OPERATIONS\n\n(In millions, except number of shares, "
            "which are reflected in thousands, and per-share amounts)",
            32,
        )
        .table(rows, 32)
        .document()
    )

    statement = _only(read_statements(document), "income")

    assert (statement.scale, statement.share_scale) == (MILLION, 1_000)
    assert _item(statement, "Basic", nth=1).values == (1_000_000.0, 1_000_000.0)
    assert _item(statement, "Total net sales").values[0] == 8_250 * MILLION


def test_a_quarterly_report_reads_period_lengths_and_fiscal_years_of_a_june_year_end() -> None:
    document = (
        _Blocks()
        .text("INCOME STATEMENTS (Unaudited)\n\n(In millions)", 3)
        .table(
            [
                [
                    "",
                    "Three Months Ended December 31, 2022",
                    "Three Months Ended December 31, 2021",
                    "Six Months Ended December 31, 2022",
                ],
                ["Total revenue", "52,747", "51,728", "102,869"],
                ["Net income", "16,425", "18,765", "33,981"],
            ],
            3,
        )
        .text("BALANCE SHEETS (Unaudited)\n\n(In millions)", 4)
        .table(
            [
                ["", "December 31, 2022", "June 30, 2022"],
                ["Total assets", "$ 364,552", "$ 364,840"],
                ["Total liabilities", "191,791", "198,298"],
            ],
            4,
        )
        .document(form="10-Q")
    )

    statements = read_statements(document)

    income = _only(statements, "income")
    assert [(c.months, c.fiscal_year) for c in income.columns] == [(3, 2023), (3, 2022), (6, 2023)]
    balance = _only(statements, "balance")
    assert [(c.period_end, c.months, c.fiscal_year) for c in balance.columns] == [
        (date(2022, 12, 31), None, 2023),
        (date(2022, 6, 30), None, 2022),
    ]


@pytest.mark.parametrize(
    ("period_end", "year_end", "fiscal_year"),
    [
        (date(2017, 12, 31), date(2017, 12, 31), 2017),
        (date(2023, 3, 31), date(2022, 12, 31), 2023),
        (date(2016, 6, 30), date(2016, 6, 30), 2016),
        (date(2022, 12, 31), date(2022, 6, 30), 2023),
        (date(2022, 6, 30), date(2022, 6, 30), 2022),
        # Apple's 52/53-week years end on the last Saturday of September.
        (date(2023, 9, 30), date(2024, 9, 28), 2023),
        (date(2023, 12, 30), date(2024, 9, 28), 2024),
        # A year to the Saturday nearest September 30 can end on October 1.
        (date(2016, 10, 1), date(2017, 9, 30), 2016),
        # NVIDIA's fiscal 2026 runs to late January 2026.
        (date(2025, 7, 27), date(2025, 1, 26), 2026),
        (date(2025, 1, 26), date(2025, 1, 26), 2025),
        (date(2019, 5, 31), None, 2019),
    ],
)
def test_a_fiscal_year_is_named_by_the_calendar_year_it_ends_in(
    period_end: date, year_end: date | None, fiscal_year: int
) -> None:
    assert fiscal_year_of(period_end, year_end) == fiscal_year


# --- which tables are statements ---------------------------------------------------------

_BALANCE_TOP = [
    ["", "December 31, 2023", "December 31, 2022"],
    ["Current assets:", "", ""],
    ["Cash and cash equivalents", "$ 1,000", "$ 900"],
    ["Inventories", "400", "350"],
    ["Total current assets", "1,400", "1,250"],
    ["Total assets", "$ 5,000", "$ 4,600"],
]
_BALANCE_BOTTOM = [
    ["Current liabilities:", "", ""],
    ["Accounts payable", "$ 700", "$ 650"],
    ["Total current liabilities", "700", "650"],
    ["Long-term debt", "1,300", "1,350"],
    ["Total liabilities", "2,000", "2,000"],
    ["Total stockholders’ equity", "3,000", "2,600"],
    ["Total liabilities and stockholders’ equity", "$ 5,000", "$ 4,600"],
]


def test_a_balance_sheet_continued_on_the_next_page_without_a_header_is_one_statement() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED BALANCE SHEETS\n\n(in millions)", 5)
        .table(_BALANCE_TOP, 5)
        .text("Table of Contents", 6)
        .table(_BALANCE_BOTTOM, 6)
        .document()
    )

    statement = _only(read_statements(document), "balance")

    assert (statement.page, statement.table_number, statement.pages) == (5, 1, (5, 6))
    assert _item(statement, "Inventories").page == 5
    payable = _item(statement, "Accounts payable")
    assert (payable.page, payable.section) == (6, "Current liabilities")
    assert payable.values == (700 * MILLION, 650 * MILLION)
    assert _item(statement, "Total stockholders' equity").values == (
        3_000 * MILLION,
        2_600 * MILLION,
    )


def test_a_continuation_that_repeats_the_column_header_is_joined_too() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED BALANCE SHEETS\n\n(in millions)", 5)
        .table(_BALANCE_TOP, 5)
        .text("CONSOLIDATED BALANCE SHEETS (continued)", 6)
        .table([_BALANCE_TOP[0], *_BALANCE_BOTTOM], 6)
        .document()
    )

    statement = _only(read_statements(document), "balance")

    assert statement.pages == (5, 6)
    assert _item(statement, "Long-term debt").values == (1_300 * MILLION, 1_350 * MILLION)


def test_a_table_after_a_statement_is_not_joined_when_a_note_stands_between() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED BALANCE SHEETS\n\n(in millions)", 5)
        .table([*_BALANCE_TOP, *_BALANCE_BOTTOM], 5)
        .text("Note 4 — Inventories", 6)
        .table([["Finished goods", "$ 300", "$ 250"], ["Raw materials", "100", "100"]], 6)
        .document()
    )

    statement = _only(read_statements(document), "balance")

    assert statement.pages == (5,)
    assert statement.item("Finished goods") is None


def test_the_selected_financial_data_summary_is_not_a_statement() -> None:
    document = (
        _Blocks()
        .text("Item 6. Selected Consolidated Financial Data", 18)
        .text(
            "The following selected consolidated financial data should be read in conjunction "
            "with the consolidated financial statements and the notes thereto.",
            18,
        )
        .table(
            [
                ["", "2017", "2016", "2015"],
                ["(in millions, except per share data)", "", "", ""],
                ["Statements of Operations:", "", "", ""],
                ["Net sales", "$177,866", "$135,987", "$107,006"],
                ["Net income", "$3,033", "$2,371", "$596"],
                ["Balance Sheets:", "", "", ""],
                ["Total assets", "$131,310", "$83,402", "$64,747"],
                ["Total long-term obligations", "$45,718", "$20,301", "$17,477"],
            ],
            18,
        )
        .document()
    )

    assert read_statements(document) == []


def test_a_sentence_that_names_a_statement_is_not_its_title() -> None:
    document = (
        _Blocks()
        .text(
            "Cash flow information, which reflects retrospective adjustments to our "
            "consolidated statements of cash flows, is as follows (in millions):",
            22,
        )
        .table(
            [
                ["", "Year Ended December 31, 2017", "Year Ended December 31, 2016"],
                ["Operating activities", "$18,434", "$17,272"],
                ["Investing activities", "(27,819)", "(9,876)"],
                ["Financing activities", "9,860", "(3,740)"],
            ],
            22,
        )
        .document()
    )

    assert read_statements(document) == []


def test_a_titled_table_without_a_statements_required_lines_is_not_that_statement() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED BALANCE SHEETS\n\n(in millions)", 5)
        .table(_BALANCE_TOP, 5)
        .text("See accompanying notes.", 5)
        .document()
    )

    assert read_statements(document) == []


def test_the_statement_of_comprehensive_income_is_not_the_income_statement() -> None:
    document = (
        _Blocks()
        .text("COMPREHENSIVE INCOME STATEMENTS\n\n(In millions)", 53)
        .table(
            [
                ["Year Ended June 30,", "2016", "2015"],
                ["Net income", "$16,798", "$12,193"],
                ["Net change in unrealized gains on sales", "(1,000)", "(200)"],
                ["Comprehensive income", "$15,798", "$11,993"],
            ],
            53,
        )
        .document(form=None)
    )

    assert read_statements(document) == []


# --- mapping lines to the catalog --------------------------------------------------------


def _line(
    label: str,
    *,
    section: str | None = None,
    per_share: bool = False,
    share_count: bool = False,
) -> LineItem:
    return LineItem(
        label=label,
        values=(1.0,),
        per_share=per_share,
        share_count=share_count,
        is_total=label.startswith("Total"),
        section=section,
    )


@pytest.mark.parametrize(
    ("kind", "line", "metric_id"),
    [
        ("income", _line("Total net sales"), "revenue"),
        ("income", _line("Net sales"), "revenue"),
        ("income", _line("Total revenue"), "revenue"),
        ("income", _line("Revenues"), "revenue"),
        ("income", _line("Cost of sales", section="Operating expenses"), "cost_of_revenue"),
        ("income", _line("Total cost of revenue"), "cost_of_revenue"),
        ("income", _line("Total cost of sales"), "cost_of_revenue"),
        ("income", _line("Gross margin"), "gross_profit"),
        ("income", _line("Other income/(expense), net"), "nonoperating_income"),
        ("income", _line("Income before provision for income taxes"), "pretax_income"),
        ("income", _line("Net income"), "net_income"),
        ("income", _line("Net income attributable to Example Corp."), "net_income"),
        ("income", _line("Basic", section="Earnings per share", per_share=True), "eps_basic"),
        ("income", _line("Diluted earnings per share", per_share=True), "eps_diluted"),
        (
            "income",
            _line("Diluted", section="Weighted average shares outstanding", share_count=True),
            "weighted_average_shares_diluted",
        ),
        ("balance", _line("Accounts payable"), "accounts_payable"),
        ("balance", _line("Inventories"), "inventory"),
        ("balance", _line("Total current assets"), "current_assets"),
        ("balance", _line("Current portion of long-term debt"), "current_debt"),
        ("balance", _line("Long-term debt"), "long_term_debt"),
        ("balance", _line("Term debt", section="Current liabilities"), "current_debt"),
        ("balance", _line("Term debt", section="Non-current liabilities"), "long_term_debt"),
        (
            "balance",
            _line("Marketable securities", section="Non-current assets"),
            "marketable_securities_noncurrent",
        ),
        (
            "balance",
            _line("Property and equipment, net of accumulated depreciation of $19,800"),
            "property_plant_and_equipment",
        ),
        ("balance", _line("Total shareholders' equity"), "stockholders_equity"),
        (
            "cash_flow",
            _line("Net cash provided by (used in) operating activities"),
            "operating_cash_flow",
        ),
        ("cash_flow", _line("Net cash used in investing"), "investing_cash_flow"),
        ("cash_flow", _line("Additions to property and equipment"), "capital_expenditures"),
        ("cash_flow", _line("Cash paid for income taxes, net of refunds"), "income_taxes_paid"),
    ],
)
def test_standard_statement_labels_map_to_their_catalog_metric(
    kind: StatementKind, line: LineItem, metric_id: str
) -> None:
    assert metric_for(line, kind) == metric_id


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        # A change in the balance, not the balance.
        ("cash_flow", _line("Accounts payable")),
        ("cash_flow", _line("Inventories")),
        ("cash_flow", _line("Repayments of long-term debt")),
        # The income statement reports net income; the cash flow statement repeats it.
        ("cash_flow", _line("Net income")),
        ("income", _line("Long-term debt")),
        ("balance", _line("Gross margin")),
        ("income", _line("Net income attributable to noncontrolling interests")),
        ("income", _line("Basic")),
        ("income", _line("Basic earnings per share")),
        ("income", _line("Other")),
        ("balance", _line("Accounts receivable, net and other")),
        ("income", _line("Total costs and expenses")),
    ],
)
def test_a_label_that_does_not_name_a_metric_of_its_statement_maps_to_none(
    kind: StatementKind, line: LineItem
) -> None:
    assert metric_for(line, kind) is None


def test_every_statement_label_in_the_table_names_a_reported_catalog_metric() -> None:
    for labels in STATEMENT_LABELS.values():
        for label, metric_id in labels.items():
            assert metric_id in METRICS_BY_ID, label
            assert not METRICS_BY_ID[metric_id].derived, label


def test_statement_figures_give_metric_period_value_label_and_page() -> None:
    statement = _only(read_statements(_income_document()), "income")

    figures = {(f.metric_id, f.column.fiscal_year): f for f in statement_figures(statement)}

    revenue = figures[("revenue", 2023)]
    assert revenue == StatementFigure(
        "revenue", statement.columns[0], 8_250 * MILLION, "Total net sales", 40
    )
    assert figures[("gross_profit", 2022)].value == 2_700 * MILLION
    assert figures[("nonoperating_income", 2022)].value == 0.0
    eps = figures[("eps_diluted", 2022)]
    assert (eps.value, eps.per_share, eps.share_count) == (-0.10, True, False)
    shares = figures[("weighted_average_shares_basic", 2023)]
    assert (shares.value, shares.per_share, shares.share_count) == (1_000 * MILLION, False, True)


def test_payments_are_positive_figures_as_the_catalog_counts_them() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED STATEMENTS OF CASH FLOWS\n\n(in millions)", 37)
        .table(
            [
                ["", "Year Ended December 31, 2023"],
                ["Net cash provided by operating activities", "1,500"],
                ["Purchases of property and equipment", "(600)"],
                ["Net cash used in investing activities", "(700)"],
                ["Repurchases of common stock", "(250)"],
                ["Net cash used in financing activities", "(300)"],
            ],
            37,
        )
        .document()
    )

    figures = {f.metric_id: f.value for f in statement_figures(read_statements(document)[0])}

    assert figures == {
        "operating_cash_flow": 1_500 * MILLION,
        "capital_expenditures": 600 * MILLION,
        "investing_cash_flow": -700 * MILLION,
        "share_repurchases": 250 * MILLION,
        "financing_cash_flow": -300 * MILLION,
    }


def test_operating_expenses_that_include_cost_of_revenue_are_not_the_catalogs() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED STATEMENTS OF OPERATIONS\n\n(in millions)", 38)
        .table(
            [
                ["", "Year Ended December 31, 2017"],
                ["Total net sales", "177,866"],
                ["Operating expenses:", ""],
                ["Cost of sales", "111,934"],
                ["Fulfillment", "25,249"],
                ["Total operating expenses", "173,760"],
                ["Net income", "3,033"],
            ],
            38,
        )
        .document()
    )

    metrics = {f.metric_id for f in statement_figures(read_statements(document)[0])}

    assert metrics == {"revenue", "cost_of_revenue", "net_income"}


def test_the_parents_net_income_wins_over_the_consolidated_line() -> None:
    document = (
        _Blocks()
        .text("CONSOLIDATED STATEMENTS OF INCOME\n\n(in millions)", 60)
        .table(
            [
                ["", "Year Ended December 31, 2023"],
                ["Revenues", "1,000"],
                ["Net income", "110"],
                ["Net income attributable to noncontrolling interests", "10"],
                ["Net income attributable to Example Corp.", "100"],
            ],
            60,
        )
        .document()
    )

    figures = statement_figures(read_statements(document)[0])

    net_income = [f for f in figures if f.metric_id == "net_income"]
    assert [(f.label, f.value) for f in net_income] == [
        ("Net income attributable to Example Corp.", 100 * MILLION)
    ]


def test_two_lines_mapping_to_one_metric_with_different_amounts_give_no_figure() -> None:
    statement = Statement(
        kind="balance",
        title="BALANCE SHEETS",
        page=1,
        table_number=1,
        scale=1.0,
        columns=(
            StatementColumn(date(2023, 12, 31), None, 2023),
            StatementColumn(date(2022, 12, 31), None, 2022),
        ),
        items=(
            LineItem("Inventories", (1.0, 2.0)),
            LineItem("Inventories", (3.0, 4.0)),
            LineItem("Goodwill", (5.0, 6.0)),
        ),
    )

    assert {f.metric_id for f in statement_figures(statement)} == {"goodwill"}


# --- real filings ------------------------------------------------------------------------


def _parsed(symbol: str, name: str) -> ParsedDocument:
    return parsed_filing(symbol, name)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def amazon_fy2017() -> list[Statement]:
    return read_statements(_parsed("AMZN", "AMAZON_2017_10K.pdf"))


@pytest.fixture(scope="module")
def amazon_fy2019() -> list[Statement]:
    return read_statements(_parsed("AMZN", "AMAZON_2019_10K.pdf"))


@pytest.fixture(scope="module")
def microsoft_fy2016() -> list[Statement]:
    return read_statements(_parsed("MSFT", "MICROSOFT_2016_10K.pdf"))


@pytest.fixture(scope="module")
def microsoft_fy2023() -> list[Statement]:
    return read_statements(_parsed("MSFT", "MICROSOFT_2023_10K.pdf"))


@pytest.fixture(scope="module")
def apple_fy2022_pdf() -> list[Statement]:
    return read_statements(_parsed("AAPL", "APPLE_2022_10K.pdf"))


@pytest.fixture(scope="module")
def apple_fy2024_html() -> ParsedDocument:
    return _parsed("AAPL", "aapl-10-k-2024-11-01.html")


def _pages(statements: list[Statement]) -> dict[str, int | None]:
    return {statement.kind: statement.page for statement in statements}


def _figure(statements: list[Statement], metric_id: str, period_end: date) -> StatementFigure:
    found = [
        figure
        for statement in statements
        for figure in statement_figures(statement)
        if figure.metric_id == metric_id and figure.column.period_end == period_end
    ]
    assert len(found) == 1, found
    return found[0]


def test_amazon_2017_10k_has_its_three_statements_on_their_pages(
    amazon_fy2017: list[Statement],
) -> None:
    assert _pages(amazon_fy2017) == {"cash_flow": 37, "income": 38, "balance": 40}
    income = _only(amazon_fy2017, "income")
    assert [(c.fiscal_year, c.months) for c in income.columns] == [
        (2015, 12),
        (2016, 12),
        (2017, 12),
    ]


def test_amazon_2017_10k_income_statement_figures(amazon_fy2017: list[Statement]) -> None:
    income = _only(amazon_fy2017, "income")
    year_2017, year_2016 = date(2017, 12, 31), date(2016, 12, 31)

    assert income.value("Total net sales", year_2017) == 177_866 * MILLION
    assert income.value("Total net sales", year_2016) == 135_987 * MILLION
    assert income.value("Cost of sales", year_2017) == 111_934 * MILLION
    assert income.value("Diluted earnings per share", year_2017) == 6.15
    revenue = _figure(amazon_fy2017, "revenue", year_2017)
    assert (revenue.value, revenue.label, revenue.page) == (
        177_866 * MILLION,
        "Total net sales",
        38,
    )
    assert _figure(amazon_fy2017, "cost_of_revenue", year_2017).value == 111_934 * MILLION
    # Amazon's operating expenses include cost of sales; the catalog's do not.
    assert "operating_expenses" not in {f.metric_id for f in statement_figures(income)}


def test_amazon_2017_10k_balance_sheet_figures(amazon_fy2017: list[Statement]) -> None:
    balance = _only(amazon_fy2017, "balance")
    end_2017, end_2016 = date(2017, 12, 31), date(2016, 12, 31)

    assert [(c.period_end, c.months) for c in balance.columns] == [
        (end_2016, None),
        (end_2017, None),
    ]
    assert balance.value("Accounts payable", end_2017) == 34_616 * MILLION
    assert balance.value("Accounts payable", end_2016) == 25_309 * MILLION
    assert balance.value("Inventories", end_2017) == 16_047 * MILLION
    assert balance.value("Inventories", end_2016) == 11_461 * MILLION
    payable = _figure(amazon_fy2017, "accounts_payable", end_2017)
    assert (payable.value, payable.page) == (34_616 * MILLION, 40)
    assert _figure(amazon_fy2017, "inventory", end_2016).value == 11_461 * MILLION


def test_amazon_2017_10k_cash_flow_figures(amazon_fy2017: list[Statement]) -> None:
    year_2017 = date(2017, 12, 31)

    assert _figure(amazon_fy2017, "operating_cash_flow", year_2017).value == 18_434 * MILLION
    capex = _figure(amazon_fy2017, "capital_expenditures", year_2017)
    assert (capex.value, capex.page) == (11_955 * MILLION, 37)


def test_amazon_2019_10k_net_income(amazon_fy2019: list[Statement]) -> None:
    assert _pages(amazon_fy2019) == {"cash_flow": 37, "income": 38, "balance": 40}
    net_income = _figure(amazon_fy2019, "net_income", date(2019, 12, 31))
    assert (net_income.value, net_income.label, net_income.page) == (
        11_588 * MILLION,
        "Net income",
        38,
    )
    assert net_income.column.fiscal_year == 2019


def test_microsoft_2016_10k_cost_of_revenue_for_the_year_ended_june_30(
    microsoft_fy2016: list[Statement],
) -> None:
    assert _pages(microsoft_fy2016) == {"income": 52, "balance": 54, "cash_flow": 55}
    cost = _figure(microsoft_fy2016, "cost_of_revenue", date(2016, 6, 30))
    assert (cost.value, cost.label, cost.page) == (32_780 * MILLION, "Total cost of revenue", 52)
    assert (cost.column.months, cost.column.fiscal_year) == (12, 2016)
    assert _figure(microsoft_fy2016, "eps_diluted", date(2016, 6, 30)).value == 2.10
    shares = _figure(microsoft_fy2016, "weighted_average_shares_diluted", date(2016, 6, 30))
    assert shares.value == 8_013 * MILLION


def test_microsoft_2023_10k_debt_on_the_balance_sheet(microsoft_fy2023: list[Statement]) -> None:
    assert _pages(microsoft_fy2023) == {"income": 58, "balance": 60, "cash_flow": 61}
    end_2023, end_2022 = date(2023, 6, 30), date(2022, 6, 30)
    current = {d: _figure(microsoft_fy2023, "current_debt", d) for d in (end_2023, end_2022)}
    long_term = {d: _figure(microsoft_fy2023, "long_term_debt", d) for d in (end_2023, end_2022)}

    assert current[end_2023].label == "Current portion of long-term debt"
    assert (current[end_2023].value, current[end_2022].value) == (5_247 * MILLION, 2_749 * MILLION)
    assert (long_term[end_2023].value, long_term[end_2022].value) == (
        41_990 * MILLION,
        47_032 * MILLION,
    )
    assert {figure.page for figure in (*current.values(), *long_term.values())} == {60}
    total_2023 = current[end_2023].value + long_term[end_2023].value
    total_2022 = current[end_2022].value + long_term[end_2022].value
    assert total_2023 - total_2022 == -2_544 * MILLION


def test_apple_2022_10k_pdf_net_sales_and_net_income(apple_fy2022_pdf: list[Statement]) -> None:
    assert _pages(apple_fy2022_pdf) == {"income": 32, "balance": 34, "cash_flow": 36}
    income = _only(apple_fy2022_pdf, "income")
    assert [(c.period_end, c.fiscal_year) for c in income.columns] == [
        (date(2022, 9, 24), 2022),
        (date(2021, 9, 25), 2021),
        (date(2020, 9, 26), 2020),
    ]
    assert _item(income, "Total net sales").values == (
        394_328 * MILLION,
        365_817 * MILLION,
        274_515 * MILLION,
    )
    assert _item(income, "Net income").values == (
        99_803 * MILLION,
        94_680 * MILLION,
        57_411 * MILLION,
    )
    # Share counts are printed in thousands, amounts in millions.
    assert _figure(apple_fy2022_pdf, "weighted_average_shares_basic", date(2022, 9, 24)).value == (
        16_215_963 * 1_000
    )


def test_apple_2024_10k_inline_xbrl_net_sales_net_income_and_term_debt(
    apple_fy2024_html: ParsedDocument,
) -> None:
    statements = read_statements(apple_fy2024_html)

    assert _pages(statements) == {"income": 31, "balance": 33, "cash_flow": 35}
    income = _only(statements, "income")
    assert [c.fiscal_year for c in income.columns] == [2024, 2023, 2022]
    assert _item(income, "Total net sales").values == (
        391_035 * MILLION,
        383_285 * MILLION,
        394_328 * MILLION,
    )
    assert _item(income, "Net income").values == (
        93_736 * MILLION,
        96_995 * MILLION,
        99_803 * MILLION,
    )
    end_2024 = date(2024, 9, 28)
    assert _figure(statements, "current_debt", end_2024).value == 10_912 * MILLION
    assert _figure(statements, "long_term_debt", end_2024).value == 85_750 * MILLION


def test_reading_statements_from_a_parsed_filing_takes_well_under_a_second(
    apple_fy2024_html: ParsedDocument,
) -> None:
    started = time.perf_counter()
    statements = read_statements(apple_fy2024_html)
    figures = [figure for statement in statements for figure in statement_figures(statement)]
    elapsed = time.perf_counter() - started

    assert len(statements) == 3 and figures
    assert elapsed < 0.5
