"""The activity CSV (shared/portfolio/csv_format.py): each rule of the documented format, with
the line and column every error names. Pure parsing: no database, no services."""

from __future__ import annotations

import hashlib
from datetime import date
from decimal import Decimal

from shared.portfolio.activity import AccountKind, Activity, ActivityKind, AssetClass
from shared.portfolio.csv_format import (
    MAX_DATA_ROWS,
    ParsedActivity,
    RowError,
    parse_activity_csv,
)

KNOWN_SYMBOLS: dict[str, AssetClass] = {
    "AAPL": AssetClass.EQUITY,
    "MSFT": AssetClass.EQUITY,
    "VTI": AssetClass.ETF,
}
HEADER = "date,account,account_type,action,symbol,quantity,price,fees,amount,settlement_date"


def parse(text: str) -> ParsedActivity:
    return parse_activity_csv(text.encode(), KNOWN_SYMBOLS)


def parse_rows(*rows: str, header: str = HEADER) -> ParsedActivity:
    return parse("\n".join([header, *rows]) + "\n")


def only_activity(*rows: str, header: str = HEADER) -> Activity:
    parsed = parse_rows(*rows, header=header)
    assert parsed.errors == ()
    (activity,) = parsed.activities
    return activity


# --- a well-formed file ----------------------------------------------------------------


def test_a_well_formed_file_becomes_activities_with_signed_amounts_and_settlement_dates() -> None:
    parsed = parse_rows(
        "2024-01-02,Brokerage,brokerage,deposit,,,,,10000,",
        # Friday: settles the next weekday, Monday; amount left empty is computed.
        "2024-01-05,Brokerage,,buy,aapl,10,150,5,,",
        "2024-01-08,Brokerage,,sell,AAPL,4,160,1,,2024-01-10",
        "2024-01-09,Brokerage,,withdrawal,,,,,250,",
        "2024-01-09,Brokerage,,fee,,,,,-3.5,",
        "2024-01-09,Brokerage,,interest,,,,,0.42,",
    )
    assert parsed.errors == ()
    deposit, buy, sell, withdrawal, fee, interest = parsed.activities
    assert (deposit.row, deposit.kind, deposit.amount) == (2, ActivityKind.DEPOSIT, Decimal(10000))
    assert deposit.settlement_date == date(2024, 1, 2)
    assert buy.symbol == "AAPL"
    # -(10 × 150 + 5)
    assert buy.amount == Decimal("-1505")
    assert (buy.quantity, buy.price, buy.fees) == (Decimal(10), Decimal(150), Decimal(5))
    assert (buy.trade_date, buy.settlement_date) == (date(2024, 1, 5), date(2024, 1, 8))
    # 4 × 160 - 1
    assert sell.amount == Decimal("639")
    assert sell.settlement_date == date(2024, 1, 10)
    assert withdrawal.amount == Decimal("-250")
    assert fee.amount == Decimal("-3.5")
    assert interest.amount == Decimal("0.42")
    assert {activity.account_kind for activity in parsed.activities} == {AccountKind.BROKERAGE}
    assert {activity.currency for activity in parsed.activities} == {"USD"}


def test_broker_header_names_broker_words_and_us_dates_are_read_as_finq_columns() -> None:
    header = (
        "Run Date,Account Name,Account Type,Transaction Type,Ticker,Shares,Price ($),"
        "Commission ($),Amount ($),Settle Date"
    )
    parsed = parse_rows(
        "01/03/2024,Roth,Roth IRA,YOU BOUGHT APPLE INC (AAPL) (Cash),AAPL,10,150.00,5.00,"
        '"-1,505.00",01/04/2024',
        "1/9/2024,Roth,,Sold,AAPL,4,$160.00,1.00,639.00,",
        "02/15/2024,Roth,,Qualified Dividend,AAPL,,,,1.20,",
        "02/20/2024,Work,401(k),Contribution,,,,,500.00,",
        "02/21/2024,Work,,Distribution,,,,,100.00,",
        "02/22/2024,Work,,Commission,,,,,(2.00),",
        header=header,
    )
    assert parsed.errors == ()
    buy, sell, dividend, contribution, distribution, commission = parsed.activities
    assert (buy.account, buy.account_kind, buy.kind) == (
        "Roth",
        AccountKind.ROTH_IRA,
        ActivityKind.BUY,
    )
    assert (buy.trade_date, buy.settlement_date) == (date(2024, 1, 3), date(2024, 1, 4))
    assert buy.amount == Decimal("-1505.00")
    assert (sell.kind, sell.trade_date, sell.price, sell.amount) == (
        ActivityKind.SELL,
        date(2024, 1, 9),
        Decimal("160.00"),
        Decimal("639.00"),
    )
    assert sell.account_kind == AccountKind.ROTH_IRA  # said once for the account
    assert (dividend.kind, dividend.amount) == (ActivityKind.DIVIDEND, Decimal("1.20"))
    assert (contribution.kind, contribution.account_kind) == (
        ActivityKind.DEPOSIT,
        AccountKind.K401,
    )
    assert (distribution.kind, distribution.amount) == (ActivityKind.WITHDRAWAL, Decimal(-100))
    assert (commission.kind, commission.amount) == (ActivityKind.FEE, Decimal(-2))


def test_header_names_are_matched_without_regard_to_case_or_spacing() -> None:
    activity = only_activity(
        "2024-01-02,Brokerage,DEPOSIT,100",
        header="  TRADE   date ,Account,ACTION, Net  Amount",
    )
    assert (activity.trade_date, activity.amount) == (date(2024, 1, 2), Decimal(100))


def test_a_byte_order_mark_and_empty_lines_are_tolerated() -> None:
    data = "\ufeffdate,account,action,amount\r\n\r\n2024-01-02,Brokerage,deposit,100\r\n,,,\r\n"
    parsed = parse_activity_csv(data.encode(), KNOWN_SYMBOLS)
    assert parsed.errors == ()
    assert [(activity.row, activity.amount) for activity in parsed.activities] == [
        (3, Decimal(100))
    ]


def test_known_symbols_may_be_a_plain_collection_and_symbols_are_upper_cased() -> None:
    parsed = parse_activity_csv(
        b"date,account,action,symbol,quantity,price\n2024-01-02,B,buy, vti ,1,200\n", {"VTI"}
    )
    assert parsed.errors == ()
    assert parsed.activities[0].symbol == "VTI"


def test_numbers_may_carry_dollars_thousands_commas_and_parentheses_for_negatives() -> None:
    parsed = parse_rows(
        '2024-01-02,B,,buy,AAPL,"1,000","$1,234.50",$0,"($1,234,500.00)",',
        "2024-01-02,B,,buy,AAPL,(10),150,,,",
        "2024-01-02,B,,interest,,,,,-$5.00,",
        "2024-01-02,B,,interest,,,,,$ -5.00,",
        "2024-01-02,B,,buy,AAPL,1,1.2.3,,,",
    )
    (buy,) = parsed.activities
    assert (buy.quantity, buy.price, buy.amount) == (
        Decimal(1000),
        Decimal("1234.50"),
        Decimal("-1234500.00"),
    )
    assert parsed.errors == (
        RowError(3, "quantity", "quantity must be more than 0, not -10"),
        RowError(4, "amount", "interest must be more than 0: a charge is a fee"),
        RowError(5, "amount", "interest must be more than 0: a charge is a fee"),
        RowError(6, "price", "'1.2.3' is not a number"),
    )


# --- the header --------------------------------------------------------------------------


def test_an_unknown_column_is_an_error_naming_it_on_row_1() -> None:
    parsed = parse("date,account,action,amount,Accrued Interest ($)\n2024-01-02,B,deposit,1,0\n")
    assert parsed.activities == ()
    (error,) = parsed.errors
    assert (error.row, error.field) == (1, "Accrued Interest ($)")
    assert error.message.startswith("unknown column 'Accrued Interest ($)': the columns are date,")


def test_a_missing_required_column_is_an_error() -> None:
    parsed = parse("date,action,amount\n2024-01-02,deposit,1\n")
    assert parsed.activities == ()
    assert parsed.errors == (RowError(1, "account", "missing required column 'account'"),)


def test_a_column_without_a_header_name_must_stay_empty() -> None:
    parsed = parse(
        "date,account,action,amount,\n2024-01-02,B,deposit,1,\n2024-01-03,B,deposit,2,lost?\n"
    )
    assert [activity.row for activity in parsed.activities] == [2]
    assert parsed.errors == (RowError(3, None, "a value in a column with no header name"),)


def test_two_columns_meaning_the_same_are_an_error() -> None:
    parsed = parse("date,account,action,Commission,Fees ($)\n")
    assert parsed.errors == (
        RowError(1, "fees", "columns 'Commission' and 'Fees ($)' are both fees"),
    )


# --- rows --------------------------------------------------------------------------------


def test_a_malformed_number_names_its_row_and_field() -> None:
    parsed = parse_rows(
        "2024-01-02,Brokerage,,deposit,,,,,100,",
        "2024-01-03,Brokerage,,buy,AAPL,ten,150,,,",
    )
    assert [activity.row for activity in parsed.activities] == [2]
    assert parsed.errors == (RowError(3, "quantity", "'ten' is not a number"),)


def test_an_unknown_symbol_is_refused_with_the_reason() -> None:
    parsed = parse_rows("2024-01-03,Brokerage,,buy,xyz,1,10,,,")
    assert parsed.errors == (
        RowError(2, "symbol", "unknown symbol 'XYZ': finq holds no instrument of that name"),
    )


def test_a_negative_quantity_is_an_error() -> None:
    parsed = parse_rows("2024-01-03,Brokerage,,sell,AAPL,-5,150,,,")
    assert parsed.errors == (RowError(2, "quantity", "quantity must be more than 0, not -5"),)


def test_an_amount_that_disagrees_with_quantity_times_price_and_fees_is_an_error() -> None:
    parsed = parse_rows(
        # 10 × 150 + 5 = 1505: 1505.01 is within the cent a broker rounds, 1505.02 is not.
        "2024-01-03,Brokerage,,buy,AAPL,10,150,5,1505.01,",
        "2024-01-03,Brokerage,,buy,AAPL,10,150,5,-1505.02,",
        # A sell's fees come off: 10 × 150 - 5 = 1495.
        "2024-01-03,Brokerage,,sell,AAPL,10,150,5,-1495,",
        "2024-01-03,Brokerage,,sell,AAPL,10,150,5,1505,",
    )
    first_buy, sell = parsed.activities
    assert first_buy.amount == Decimal("-1505.01")  # the broker's figure, signed as a buy
    assert sell.amount == Decimal("1495")
    assert parsed.errors == (
        RowError(3, "amount", "amount 1505.02 does not match quantity × price + fees = 1505"),
        RowError(5, "amount", "amount 1505 does not match quantity × price - fees = 1495"),
    )


def test_a_settlement_date_before_the_trade_date_is_an_error() -> None:
    parsed = parse_rows("2024-01-03,Brokerage,,buy,AAPL,1,150,,,2024-01-02")
    assert parsed.errors == (
        RowError(
            2,
            "settlement_date",
            "settlement_date 2024-01-02 is before the trade date 2024-01-03",
        ),
    )


def test_dates_outside_1900_to_2100_or_off_the_calendar_are_errors() -> None:
    parsed = parse_rows(
        "1899-12-31,B,,deposit,,,,,1,",
        "2101-01-01,B,,deposit,,,,,1,",
        "02/30/2024,B,,deposit,,,,,1,",
        "2024/01/02,B,,deposit,,,,,1,",
        "2100-12-31,B,,deposit,,,,,1,",
    )
    assert [activity.trade_date for activity in parsed.activities] == [date(2100, 12, 31)]
    assert parsed.errors == (
        RowError(2, "date", "1899-12-31 is outside the years 1900–2100"),
        RowError(3, "date", "2101-01-01 is outside the years 1900–2100"),
        RowError(4, "date", "'02/30/2024' is not a day of the calendar"),
        RowError(5, "date", "'2024/01/02' is not a date: write YYYY-MM-DD or MM/DD/YYYY"),
    )


def test_required_fields_per_action_are_named() -> None:
    parsed = parse_rows(
        "2024-01-03,,,buy,,,,,,",
        "2024-01-03,B,,dividend,,,,,,",
        "2024-01-03,B,,deposit,,,,,0,",
        "2024-01-03,B,,lend,,,,,5,",
    )
    assert parsed.activities == ()
    assert [(error.row, error.field) for error in parsed.errors] == [
        (2, "account"),
        (2, "symbol"),
        (2, "quantity"),
        (2, "price"),
        (3, "symbol"),
        (3, "amount"),
        (4, "amount"),
        (5, "action"),
    ]
    assert parsed.errors[1].message == "symbol is required for a buy"
    assert parsed.errors[6].message == "amount cannot be 0 for a deposit"
    assert parsed.errors[7].message.startswith("unknown action 'lend': the actions are buy, sell,")


def test_a_dividend_and_a_withdrawal_take_their_sign_from_the_action() -> None:
    parsed = parse_rows(
        "2024-01-03,B,,dividend,AAPL,,,,-1.20,",
        "2024-01-03,B,,withdrawal,,,,,100,",
        "2024-01-03,B,,withdrawal,,,,,-100,",
    )
    assert [activity.amount for activity in parsed.activities] == [
        Decimal("1.20"),
        Decimal(-100),
        Decimal(-100),
    ]


def test_fees_and_transfer_columns_belong_to_their_actions_only() -> None:
    header = "date,account,action,amount,fees,to_account,to_account_type"
    parsed = parse_rows(
        "2024-01-03,B,dividend,1,0.5,,",
        "2024-01-03,B,deposit,1,,Roth,",
        "2024-01-03,B,deposit,1,,,ira",
        header=header,
    )
    assert parsed.errors == (
        RowError(2, "symbol", "symbol is required for a dividend"),
        RowError(2, "fees", "fees belong to a buy or sell: give a fee its own row"),
        RowError(3, "to_account", "to_account belongs to a transfer only"),
        RowError(4, "to_account_type", "to_account_type belongs to a transfer only"),
    )


def test_a_transfer_is_the_giving_leg_and_the_receiving_type_comes_from_that_accounts_rows() -> (
    None
):
    header = "date,account,account_type,action,amount,to_account,to_account_type"
    parsed = parse_rows(
        "2024-02-20,Brokerage,,transfer,2000,Roth IRA,",
        "2024-02-21,Roth IRA,Roth IRA,deposit,10,,",
        "2024-02-22,Brokerage,,transfer,5,Brokerage,",
        "2024-02-22,Brokerage,,transfer,5,,",
        header=header,
    )
    transfer, _ = parsed.activities
    assert (transfer.kind, transfer.amount, transfer.settlement_date) == (
        ActivityKind.TRANSFER,
        Decimal(-2000),
        date(2024, 2, 20),
    )
    assert (transfer.to_account, transfer.to_account_kind) == ("Roth IRA", AccountKind.ROTH_IRA)
    assert parsed.errors == (
        RowError(4, "to_account", "a transfer goes to another account than its own"),
        RowError(5, "to_account", "to_account is required for a transfer"),
    )


def test_an_account_given_two_types_is_an_error_on_the_later_row() -> None:
    parsed = parse_rows(
        "2024-01-02,Savings,ira,deposit,,,,,1,",
        "2024-01-03,Savings,roth_ira,deposit,,,,,1,",
        "2024-01-04,Savings,nest egg,deposit,,,,,1,",
    )
    assert [activity.row for activity in parsed.activities] == [2]
    assert parsed.errors[0] == RowError(
        3, "account_type", "account 'Savings' is roth_ira here but ira on row 2"
    )
    assert (parsed.errors[1].row, parsed.errors[1].field) == (4, "account_type")
    assert parsed.errors[1].message.startswith("unknown account type 'nest egg': the types are")


def test_a_currency_other_than_dollars_is_refused() -> None:
    parsed = parse_rows(
        "2024-01-02,B,deposit,1,usd",
        "2024-01-02,B,deposit,1,EUR",
        "2024-01-02,B,deposit,1,euro",
        header="date,account,action,amount,currency",
    )
    assert [activity.currency for activity in parsed.activities] == ["USD"]
    assert parsed.errors == (
        RowError(3, "currency", "finq keeps portfolios in USD only, not EUR"),
        RowError(4, "currency", "'euro' is not a currency code"),
    )


def test_every_bad_row_is_reported_not_only_the_first() -> None:
    parsed = parse_rows(
        "2024-01-02,B,,deposit,,,,,100,",
        "2024-01-03,B,,buy,XYZ,1,10,,,",
        "2024-01-03,B,,buy,AAPL,0,10,,,",
        # A quoted field may span lines: the rows after it keep their line numbers.
        '2024-01-03,B,,buy,AAPL,1,10,,,"2024-01-02\n"',
        "2024-01-03,B,,sell,AAPL,1,10,,,",
        "not a date,B,,sell,AAPL,1,-10,,,",
        "2024-01-04,B,,buy,AAPL,1,10,,,,extra",
    )
    assert [activity.row for activity in parsed.activities] == [2, 7]
    assert [(error.row, error.field) for error in parsed.errors] == [
        (3, "symbol"),
        (4, "quantity"),
        (5, "settlement_date"),
        (8, "date"),
        (8, "price"),
        (9, None),
    ]
    assert parsed.errors[-1].message == "11 fields but the header has 10"


# --- files that are not an activity CSV ---------------------------------------------------


def test_bytes_that_are_not_utf8_give_one_error_on_row_1() -> None:
    parsed = parse_activity_csv(b"date,account,action\n2024-01-02,Caf\xe9,deposit\n", KNOWN_SYMBOLS)
    assert parsed.activities == ()
    assert parsed.errors == (
        RowError(
            1,
            None,
            "the file is not UTF-8 text (byte 0xe9 on line 2); save it as CSV UTF-8",
        ),
    )
    with_bom = parse_activity_csv(b"\xef\xbb\xbfdate\n\xff", KNOWN_SYMBOLS)
    assert with_bom.errors[0].message.startswith("the file is not UTF-8 text (byte 0xff on line 2)")


def test_text_that_is_not_csv_gives_one_error_on_row_1() -> None:
    for data in (b'date,account,action\n2024-01-02,"B"x,deposit\n', b"PK\x03\x04\x00\x00"):
        parsed = parse_activity_csv(data, KNOWN_SYMBOLS)
        assert parsed.activities == ()
        (error,) = parsed.errors
        assert (error.row, error.field) == (1, None)
        assert error.message.startswith("the file is not")


def test_an_empty_file_is_an_error() -> None:
    assert parse("\n\n").errors == (
        RowError(1, None, "the file is empty: a header row is required"),
    )


def test_a_field_over_1000_characters_is_an_error_not_a_crash() -> None:
    parsed = parse_rows("2024-01-02,B,,deposit,,,,,100," + "9" * 1001)
    assert parsed.errors == (RowError(2, "settlement_date", "longer than 1,000 characters"),)


def test_more_than_50000_rows_is_an_error_not_a_crash() -> None:
    rows = ["2024-01-02,B,,deposit,,,,,1,"] * (MAX_DATA_ROWS + 1)
    parsed = parse_rows(*rows)
    assert len(parsed.activities) == MAX_DATA_ROWS
    assert parsed.errors == (
        RowError(MAX_DATA_ROWS + 2, None, "more than 50,000 rows: split the file"),
    )


def test_the_sha256_is_that_of_the_raw_bytes_whatever_the_file_holds() -> None:
    data = b"date,account,action,amount\n2024-01-02,B,deposit,1\n"
    assert parse_activity_csv(data, KNOWN_SYMBOLS).sha256 == hashlib.sha256(data).hexdigest()
    assert (
        parse_activity_csv(data, KNOWN_SYMBOLS).sha256 == parse_activity_csv(data, ["AAPL"]).sha256
    )
    assert (
        parse_activity_csv(data + b"\n", KNOWN_SYMBOLS).sha256 != hashlib.sha256(data).hexdigest()
    )
    assert parse_activity_csv(b"\xff", KNOWN_SYMBOLS).sha256 == hashlib.sha256(b"\xff").hexdigest()
