"""Reading a question about the user's own portfolio: the days it covers, the account it
names, an asset class, kinds of activity, how holdings are to be ranked (by gain, size or
weight), whether realized gains alone are asked, a market index it compares with, the
condition a screen of the holdings asks for, and which holdings' filings to search.

Pure functions over precompiled patterns. Relative words ("this year", "last month", "over
the past 6 months", "since March") are resolved against `today`, the last day finq holds
prices for (the latest `latest_price_day` of the company directory), never against the
calendar: finq's bundled prices end on 2023-04-14, so "this year" there is January 1 to
April 14, 2023, and a portfolio is valued on the last close held anyway. The metric a
screen is on is read by the router's metric finder and passed in (and the forms a filing
search names, and the companies, are the router's own reading), so a portfolio question
reads figures and companies as every other question does.

Each expression read is blanked (to the same length, so offsets hold) before the next is
looked for: "since I bought it" is a timeframe, not a purchase asked about, and the 2000 of
"the Russell 2000" is an index's name, not a year.

The words are the word classes of shared/portfolio/words.py, which the portfolio intents'
cues are built from too.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

from shared.contracts.questions import ConversationTurn
from shared.contracts.understanding import PortfolioReading
from shared.intents import INTENTS
from shared.portfolio.words import (
    ACCOUNT,
    COMPARING,
    HOLDING,
    INDEX,
    LARGEST,
    MONEY_IN,
    MONEY_OUT,
    OWNERSHIP,
    OWNING,
    PAID_TO_HOLDERS,
    RANK_END,
    REALIZED,
    SMALLEST,
    VALUE,
    WEIGHT,
)
from shared.tools import ActivityKindName, AssetClassName, RankByName

# The intents a portfolio reading serves: the ones planned as the user's portfolio.
PORTFOLIO_INTENTS: frozenset[str] = frozenset(
    intent.name for intent in INTENTS if intent.planner == "portfolio"
)

RankOrder = Literal["best", "worst"]
RankBy = RankByName
ScreenCondition = Literal["above", "below", "falling", "rising"]

# --- numbers, months and days -------------------------------------------------------------

_NUMBER_WORDS: dict[str, int] = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_COUNT = r"(?:\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"
_MONTHS: dict[str, int] = {
    name.lower(): number for number, name in enumerate(calendar.month_name) if name
}
_MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name}
_MONTHS["sept"] = 9
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?:19|20)\d{2}"
# A day as people write one: 2021-03-01, 3/1/2021, March 1, 2021, 1 March 2021.
_DAY = (
    rf"(?:{_YEAR}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}/\d{{1,2}}/{_YEAR}"
    rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+{_YEAR}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+{_YEAR})"
)
_ISO_DAY = re.compile(r"^((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})$")
_US_DAY = re.compile(r"^(\d{1,2})/(\d{1,2})/((?:19|20)\d{2})$")
_MONTH_FIRST_DAY = re.compile(rf"^({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+({_YEAR})$", re.I)
_DAY_FIRST_DAY = re.compile(
    rf"^(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH}),?\s+({_YEAR})$", re.I
)


def count_of(word: str) -> int:
    """ "3" or "three" as a number."""
    return int(word) if word.isdigit() else _NUMBER_WORDS[word.lower()]


def month_of(word: str) -> int:
    return _MONTHS[word.lower().rstrip(".")]


def day_of(text: str) -> date | None:
    """The day `text` (one match of `_DAY`) names, if it is a real one."""
    text = " ".join(text.split())
    parts: tuple[int, int, int] | None = None
    if match := _ISO_DAY.match(text):
        parts = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
    elif match := _US_DAY.match(text):
        parts = (int(match.group(3)), int(match.group(1)), int(match.group(2)))
    elif match := _MONTH_FIRST_DAY.match(text):
        parts = (int(match.group(3)), month_of(match.group(1)), int(match.group(2)))
    elif match := _DAY_FIRST_DAY.match(text):
        parts = (int(match.group(3)), month_of(match.group(2)), int(match.group(1)))
    if parts is None:
        return None
    try:
        return date(*parts)
    except ValueError:
        return None


def today_of(latest_price_days: Iterable[date | None]) -> date:
    """What "today" is in a portfolio question: the last day finq holds prices for (the
    latest of the companies' last price days), not the calendar's, since holdings are
    valued on the last close held; the bundled prices end on 2023-04-14. With no prices
    held at all there is no such day, and the calendar's is the only one left."""
    days = [day for day in latest_price_days if day is not None]
    return max(days) if days else date.today()


def month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def months_before(day: date, months: int) -> date:
    """The same day `months` earlier, kept inside a shorter month (March 31 → February 28)."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    return date(year, month + 1, min(day.day, calendar.monthrange(year, month + 1)[1]))


def latest_month(month: int, today: date) -> int:
    """The year of the latest `month` that has begun by `today`: "since March" in April is
    this March, "since May" in April last May."""
    return today.year if month <= today.month else today.year - 1


def quarter_start(day: date) -> date:
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


# --- timeframes ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Timeframe:
    """The days a question covers (both ends included), or the day it values holdings on."""

    start: date | None
    end: date | None
    text: str
    span: tuple[int, int]
    since_purchase: bool = False
    as_of: date | None = None


_SINCE_PURCHASE = re.compile(
    r"\bsince\s+(?:i|we)\s+(?:first\s+)?(?:bought|purchased|acquired|got|opened)"
    r"(?:\s+(?:it|them|each(?:\s+one)?|those|these|the\s+(?:shares|stock|position)s?))?"
    r"|\bsince\s+(?:the\s+)?(?:purchase|buying|inception|i\s+got\s+in)\b"
    r"|\b(?:since|from)\s+(?:the\s+)?(?:day|date|time)\s+(?:i|we)\s+bought(?:\s+(?:it|them))?",
    re.IGNORECASE,
)
_CONNECT = r"\s*(?:-|–|to|and|through|thru|until|till)\s*"
_DAY_RANGE = re.compile(rf"\b(?:from|between)\s+(?P<a>{_DAY}){_CONNECT}(?P<b>{_DAY})", re.I)
_MONTH_RANGE = re.compile(
    rf"\b(?:from|between)\s+(?P<m1>{_MONTH})(?:\s+(?:of\s+)?(?P<y1>{_YEAR}))?{_CONNECT}"
    rf"(?P<m2>{_MONTH})(?:\s+(?:of\s+)?(?P<y2>{_YEAR}))?\b",
    re.IGNORECASE,
)
_YEAR_RANGE = re.compile(
    rf"\b(?:from|between)\s+(?:calendar\s+)?(?P<y1>{_YEAR}){_CONNECT}(?P<y2>{_YEAR})\b"
    rf"|\b(?P<y3>{_YEAR})\s*(?:-|–|to|through|thru)\s*(?P<y4>{_YEAR})\b",
    re.IGNORECASE,
)
_SINCE_DAY = re.compile(rf"\b(?:since|starting|from|after)\s+(?:on\s+)?(?P<day>{_DAY})", re.I)
# "Since March", "starting in 2022", "from the start of March", "from March on": from then to
# the last day held. "From March" alone is March: "my trades from March" are March's trades.
_UP_TO_NOW = (
    r"(?P<open>\s+(?:on|onwards?|forward|until\s+now|till\s+now|to\s+(?:date|now|today)"
    r"|through\s+today)\b)?"
)
_SINCE_MONTH = re.compile(
    rf"\b(?P<lead>since|starting(?:\s+in)?|from)\s+(?P<start_of>the\s+(?:start|beginning)\s+of\s+)?"
    rf"(?P<month>{_MONTH})(?:\s+(?:of\s+)?(?P<year>{_YEAR}))?\b{_UP_TO_NOW}",
    re.IGNORECASE,
)
_SINCE_YEAR = re.compile(
    rf"\b(?P<lead>since|starting(?:\s+in)?|from)\s+(?P<start_of>the\s+(?:start|beginning)\s+of\s+)?"
    rf"(?:calendar\s+)?(?P<year>{_YEAR})\b{_UP_TO_NOW}",
    re.IGNORECASE,
)
_QUARTER_OF_YEAR = re.compile(
    rf"\bq(?P<q1>[1-4])\s*(?:of\s+)?(?:'(?P<yy1>\d{{2}})|(?P<y1>{_YEAR}))\b"
    rf"|\b(?P<y2>{_YEAR})\s*q(?P<q2>[1-4])\b"
    rf"|\b(?:the\s+)?(?P<ordinal>first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\s+"
    rf"(?:of\s+)?(?P<y3>{_YEAR})\b",
    re.IGNORECASE,
)
_QUARTER_ALONE = re.compile(r"\bq(?P<q>[1-4])\b", re.IGNORECASE)
_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3}
_ORDINALS |= {"fourth": 4, "4th": 4}
_HALF_OF_YEAR = re.compile(
    rf"\b(?:the\s+)?(?P<half>first|second)\s+half\s+of\s+(?P<y1>{_YEAR})\b"
    rf"|\bh(?P<h>[12])\s*(?P<y2>{_YEAR})\b",
    re.IGNORECASE,
)
_MONTH_OF_YEAR = re.compile(rf"\b(?P<month>{_MONTH})\s+(?:of\s+)?(?P<year>{_YEAR})\b", re.I)
# "over the past 6 months", "last 90 days", "past two weeks", "in the last 3 years", "the
# past year", "trailing twelve months": a window of days ending on the last day held.
_ROLLING = re.compile(
    rf"\b(?:(?:over|in|during|for|within)\s+)?(?:the\s+)?"
    rf"(?:(?:last|past|previous|prior|trailing)\s+(?P<n>{_COUNT})"
    r"|(?:the\s+)?(?:past|trailing)|the\s+(?:last|previous))"
    r"\s+(?P<unit>days?|weeks?|months?|quarters?|years?)\b",
    re.IGNORECASE,
)
_TO_DATE = re.compile(
    r"\b(?:so\s+far\s+)?this\s+(?P<this>year|quarter|month|week)(?:\s+so\s+far)?\b"
    r"|\b(?:the\s+)?(?:current|present)\s+(?P<current>year|quarter|month)\b"
    r"|\b(?P<ytd>ytd|year[\s-]+to[\s-]+date)\b|\b(?P<qtd>qtd|quarter[\s-]+to[\s-]+date)\b"
    r"|\b(?P<mtd>mtd|month[\s-]+to[\s-]+date)\b",
    re.IGNORECASE,
)
_LAST_CALENDAR = re.compile(
    r"\b(?:last|previous|prior)\s+(?:calendar\s+)?(?P<unit>year|quarter|month|week)\b",
    re.IGNORECASE,
)
_YEARS_AGO = re.compile(rf"\b(?P<n>{_COUNT})\s+years?\s+ago\b", re.IGNORECASE)
# A year, not an amount: "$2000", "2000 shares" and "2020%" are no years.
_YEAR_ALONE = re.compile(
    rf"\b(?:(?:in|during|for|over|throughout)\s+)?(?:(?:calendar|fiscal)\s+(?:year\s+)?"
    rf"|fy\s?)?(?<![$\d.,])(?P<year>{_YEAR})\b(?!\s*(?:%|percent|shares|dollars|usd)\b)",
    re.IGNORECASE,
)
_MONTH_ALONE = re.compile(
    rf"\b(?:in|during|for|over|throughout)\s+(?P<month>{_MONTH})(?!\s*\d)\b", re.IGNORECASE
)
# A day holdings are valued on: "as of 2022-12-31", "on March 31, 2023".
_AS_OF_DAY = re.compile(rf"\b(?:as\s+of|on|at)\s+(?P<day>{_DAY})", re.IGNORECASE)
# "at the end of 2022", "end of last month": the end of the period named after it.
_END_OF = re.compile(
    r"\b(?:(?:as\s+of|at)\s+)?(?:the\s+)?(?:end|close)\s+of\s+(?:the\s+)?$", re.IGNORECASE
)
_YEAR_END = re.compile(rf"\b(?:at\s+)?(?:year[\s-]end|end\s+of\s+year)\s+(?P<year>{_YEAR})\b", re.I)


def _found(match: re.Match[str], start: date | None, end: date | None, today: date) -> Timeframe:
    """A timeframe ending no later than the last day held (no prices lie past it); one that
    begins after it is kept as written, so the answer says nothing is held for it rather
    than quietly answering for another span."""
    if end is not None and end > today and (start is None or start <= today):
        end = today
    return Timeframe(start, end, match.group(0).strip(), match.span())


def _rolling(match: re.Match[str], today: date) -> Timeframe:
    count = count_of(match.group("n")) if match.group("n") else 1
    unit = match.group("unit").lower().rstrip("s")
    if unit == "day":
        start = today - timedelta(days=count)
    elif unit == "week":
        start = today - timedelta(weeks=count)
    elif unit == "month":
        start = months_before(today, count)
    elif unit == "quarter":
        start = months_before(today, 3 * count)
    else:
        start = months_before(today, 12 * count)
    return _found(match, start, today, today)


def _to_date(match: re.Match[str], today: date) -> Timeframe:
    unit = (
        match.group("this")
        or match.group("current")
        or ("year" if match.group("ytd") else "quarter" if match.group("qtd") else "month")
    ).lower()
    if unit == "year":
        start = date(today.year, 1, 1)
    elif unit == "quarter":
        start = quarter_start(today)
    elif unit == "month":
        start = date(today.year, today.month, 1)
    else:
        start = today - timedelta(days=today.weekday())
    return _found(match, start, today, today)


def _last_calendar(match: re.Match[str], today: date) -> Timeframe:
    unit = match.group("unit").lower()
    if unit == "year":
        return _found(match, date(today.year - 1, 1, 1), date(today.year - 1, 12, 31), today)
    if unit == "quarter":
        end = quarter_start(today) - timedelta(days=1)
        return _found(match, quarter_start(end), end, today)
    if unit == "month":
        end = date(today.year, today.month, 1) - timedelta(days=1)
        return _found(match, date(end.year, end.month, 1), end, today)
    monday = today - timedelta(days=today.weekday())
    return _found(match, monday - timedelta(days=7), monday - timedelta(days=1), today)


def _only_the_period(match: re.Match[str]) -> bool:
    """ "From March" is March alone; "since March", "from the start of March" and "from
    March on" run to the last day held."""
    return (
        match.group("lead").lower() == "from"
        and not match.group("start_of")
        and not match.group("open")
    )


def _first_match(text: str, today: date) -> Timeframe | None:
    """The first timeframe expression of the text, most specific kind first."""
    if match := _SINCE_PURCHASE.search(text):
        return Timeframe(None, None, match.group(0).strip(), match.span(), since_purchase=True)
    if (match := _DAY_RANGE.search(text)) and (
        (first := day_of(match.group("a"))) and (last := day_of(match.group("b")))
    ):
        return _found(match, first, last, today)
    if match := _MONTH_RANGE.search(text):
        first_month, last_month = month_of(match.group("m1")), month_of(match.group("m2"))
        last_year = int(match.group("y2") or 0) or latest_month(last_month, today)
        first_year = int(match.group("y1") or 0) or (
            last_year if first_month <= last_month else last_year - 1
        )
        return _found(
            match, date(first_year, first_month, 1), month_end(last_year, last_month), today
        )
    if match := _YEAR_RANGE.search(text):
        first_year = int(match.group("y1") or match.group("y3"))
        last_year = int(match.group("y2") or match.group("y4"))
        return _found(match, date(first_year, 1, 1), date(last_year, 12, 31), today)
    if (match := _SINCE_DAY.search(text)) and (day := day_of(match.group("day"))):
        return _found(match, day, today, today)
    if match := _SINCE_MONTH.search(text):
        month = month_of(match.group("month"))
        year = int(match.group("year") or 0) or latest_month(month, today)
        end = month_end(year, month) if _only_the_period(match) else today
        return _found(match, date(year, month, 1), end, today)
    if match := _SINCE_YEAR.search(text):
        year = int(match.group("year"))
        end = date(year, 12, 31) if _only_the_period(match) else today
        return _found(match, date(year, 1, 1), end, today)
    if match := _QUARTER_OF_YEAR.search(text):
        quarter = (
            int(match.group("q1") or match.group("q2") or 0)
            or _ORDINALS[match.group("ordinal").lower()]
        )
        if match.group("yy1"):
            year = 2000 + int(match.group("yy1"))
        else:
            year = int(match.group("y1") or match.group("y2") or match.group("y3"))
        start = date(year, 3 * quarter - 2, 1)
        return _found(match, start, month_end(year, 3 * quarter), today)
    if match := _HALF_OF_YEAR.search(text):
        year = int(match.group("y1") or match.group("y2"))
        first_half = (match.group("half") or "").lower() == "first" or match.group("h") == "1"
        months = (1, 6) if first_half else (7, 12)
        return _found(match, date(year, months[0], 1), month_end(year, months[1]), today)
    if match := _MONTH_OF_YEAR.search(text):
        year, month = int(match.group("year")), month_of(match.group("month"))
        return _found(match, date(year, month, 1), month_end(year, month), today)
    if match := _ROLLING.search(text):
        return _rolling(match, today)
    if match := _TO_DATE.search(text):
        return _to_date(match, today)
    if match := _LAST_CALENDAR.search(text):
        return _last_calendar(match, today)
    if match := _YEARS_AGO.search(text):
        year = today.year - count_of(match.group("n"))
        return _found(match, date(year, 1, 1), date(year, 12, 31), today)
    if match := _QUARTER_ALONE.search(text):
        quarter = int(match.group("q"))
        year = today.year if 3 * quarter - 2 <= today.month else today.year - 1
        start = date(year, 3 * quarter - 2, 1)
        return _found(match, start, month_end(year, 3 * quarter), today)
    if match := _YEAR_ALONE.search(text):
        year = int(match.group("year"))
        return _found(match, date(year, 1, 1), date(year, 12, 31), today)
    if match := _MONTH_ALONE.search(text):
        month = month_of(match.group("month"))
        year = latest_month(month, today)
        return _found(match, date(year, month, 1), month_end(year, month), today)
    return None


def read_timeframe(text: str, today: date) -> Timeframe | None:
    """The days a portfolio question covers, or the one day it values holdings on."""
    if match := _AS_OF_DAY.search(text):
        day = day_of(match.group("day"))
        if day is not None:
            return Timeframe(None, None, match.group(0).strip(), match.span(), as_of=day)
    if match := _YEAR_END.search(text):
        day = date(int(match.group("year")), 12, 31)
        return Timeframe(None, None, match.group(0).strip(), match.span(), as_of=day)
    found = _first_match(text, today)
    if found is None:
        return None
    if not found.since_purchase and (ending := _END_OF.search(text[: found.span[0]])):
        # "At the end of 2022", "the close of last month": holdings on the period's last day.
        span = (ending.start(), found.span[1])
        return Timeframe(None, None, text[span[0] : span[1]].strip(), span, as_of=found.end)
    return found


# --- accounts ------------------------------------------------------------------------------

# Account kinds, in the words the tools match (services.tools.portfolio.match_account):
# "IRA" is a traditional IRA, never the Roth, so the Roth is read first.
_ACCOUNT_KINDS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\broth(?:\s+ira)?\b", re.IGNORECASE), "Roth IRA"),
    (re.compile(r"\b(?:traditional\s+|rollover\s+)?ira\b", re.IGNORECASE), "IRA"),
    (re.compile(r"\b401\s?\(?k\)?(?![\w(])", re.IGNORECASE), "401(k)"),
    (re.compile(r"\bcash[\s-]+management\b", re.IGNORECASE), "cash management"),
    (re.compile(r"\b(?:brokerage|taxable)\b", re.IGNORECASE), "brokerage"),
    # Kinds the tools know by the account's own name only.
    (re.compile(r"\bhsa\b", re.IGNORECASE), "HSA"),
    (re.compile(r"\b403\s?\(?b\)?(?![\w(])", re.IGNORECASE), "403(b)"),
)
# "my Fidelity account", "my joint account": an account named by the user's own name for it.
_NAMED_ACCOUNT = re.compile(
    r"\b(?:my|our)\s+(?P<name>(?:[A-Za-z][\w&'.-]*\s+){0,2}?[A-Za-z][\w&'.-]*)\s+"
    r"(?:account|acct)\b",
    re.IGNORECASE,
)
# "in my Schwab": a capitalized name after "in my" that is no holding ("in my AAPL position").
_IN_MY_NAME = re.compile(
    r"\bin\s+(?:my|our)\s+(?P<name>[A-Z][\w&'.-]*(?:\s+[A-Z][\w&'.-]*)?)\b"
    r"(?!\s+(?:position|shares|stock|stake|holding|lot|trade)s?\b)(?!\s*'s)"
)
# Words before "account" that say which accounts, not what one is called.
_NOT_ACCOUNT_NAMES = frozenset(
    str.split(
        "entire whole total overall own other every each all investment investments "
        "investing retirement cash portfolio stock stocks share shares"
    )
)
# Words after "in my" that are what is held or asked about, not an account's name.
_HOLDING_WORDS = frozenset(
    str.split(
        "portfolio portfolios holdings holding positions position account accounts "
        "investments stocks shares etfs etf bonds crypto cash"
    )
)


def read_account(text: str, taken: Sequence[tuple[int, int]] = ()) -> str | None:
    """The account a question names, as the phrase to pass the tools: a kind ("Roth IRA",
    "401(k)") or the user's own name for one ("Fidelity"); None for all accounts. Spans in
    `taken` (companies named) are never an account's name."""
    found: list[tuple[int, str]] = []
    rest = text
    for pattern, phrase in _ACCOUNT_KINDS:
        for match in pattern.finditer(rest):
            found.append((match.start(), phrase))
            rest = _blank(rest, match.span())
    if found:
        return min(found)[1]
    for match in _NAMED_ACCOUNT.finditer(text):
        name = match.group("name")
        if not _overlaps(match.span("name"), taken) and not (
            set(name.lower().split()) & _NOT_ACCOUNT_NAMES
        ):
            return name
    for match in _IN_MY_NAME.finditer(text):
        name = match.group("name")
        if not _overlaps(match.span("name"), taken) and name.lower() not in _HOLDING_WORDS:
            return name
    return None


# --- asset classes and activity -------------------------------------------------------------

_ASSET_CLASSES: tuple[tuple[re.Pattern[str], AssetClassName], ...] = (
    (re.compile(r"\betfs?\b|\bexchange[\s-]traded\s+funds?\b|\bindex\s+funds?\b", re.I), "etf"),
    (re.compile(r"\bbonds?\b|\bfixed[\s-]income\b|\btreasur(?:y|ies)\b", re.I), "bond"),
    (re.compile(r"\bcrypto\w*\b|\bbitcoin\b|\bethereum\b", re.I), "crypto"),
    (re.compile(r"\bequit(?:y|ies)\b|\bstocks\b", re.I), "equity"),
    # Cash as what holdings are in, not a cash balance asked for ("how much cash…").
    (re.compile(r"\b(?:in|into|as)\s+cash\b|\bcash\s+(?:holdings|positions)\b", re.I), "cash"),
)


def read_asset_class(text: str) -> AssetClassName | None:
    """The asset class a question narrows the holdings to, the first one named."""
    found = [
        (match.start(), asset_class)
        for pattern, asset_class in _ASSET_CLASSES
        if (match := pattern.search(text)) is not None
    ]
    return min(found)[1] if found else None


_ACTIVITY_KINDS: tuple[tuple[re.Pattern[str], tuple[ActivityKindName, ...]], ...] = (
    (re.compile(r"\btrad(?:es|ed|ing)\b", re.I), ("buy", "sell")),
    (re.compile(r"\b(?:buy|buys|bought|buying|purchas\w*)\b", re.I), ("buy",)),
    (re.compile(r"\b(?:sell|sells|sold|selling|sales?)\b", re.I), ("sell",)),
    (re.compile(r"\bdividends?\b|\bdistributions?\b", re.I), ("dividend",)),
    (re.compile(r"\binterest\b", re.I), ("interest",)),
    (re.compile(rf"\b{MONEY_IN}\b|\b(?:put|added)\s+in\b", re.I), ("deposit",)),
    (re.compile(rf"\b{MONEY_OUT}\b", re.I), ("withdrawal",)),
    (re.compile(r"\btransfer\w*\b|\bmoved?\s+(?:money|cash|funds)\b", re.I), ("transfer",)),
    (re.compile(r"\bfees?\b|\bcommissions?\b", re.I), ("fee",)),
)


def read_activity_kinds(text: str) -> list[ActivityKindName]:
    """The kinds of activity asked about, in the order the tool lists them; none named: all."""
    kinds: set[ActivityKindName] = set()
    for pattern, named in _ACTIVITY_KINDS:
        if pattern.search(text):
            kinds.update(named)
    order: tuple[ActivityKindName, ...] = (
        "buy",
        "sell",
        "dividend",
        "interest",
        "deposit",
        "withdrawal",
        "transfer",
        "fee",
    )
    return [kind for kind in order if kind in kinds]


# --- rankings -------------------------------------------------------------------------------

# An order said outright, its first end first: "worst first", "from largest to smallest".
_ORDER = re.compile(
    rf"\b(?P<first>{RANK_END})\s+(?:first|to\s+(?:the\s+)?{RANK_END})\b"
    rf"|\bfrom\s+(?:the\s+)?(?P<from>{RANK_END})\b",
    re.IGNORECASE,
)
_LOW_END = re.compile(rf"^(?:worst|lowest|{SMALLEST})$", re.IGNORECASE)
_WORST = re.compile(
    r"\b(?:worst|losers?|(?:biggest|largest|greatest)\s+loss(?:es)?|weakest|poorest"
    r"|underperform\w*|lagg\w*|bottom|lowest|(?<!at\s)least"
    r"|(?:down|los[te]|losing|fell|dropped|declined|sank|slid|went\s+down)\s+(?:the\s+)?most"
    r"|(?:gain(?:ed|ing)?|rose|grew|up|returned|made|make|went\s+up)\s+(?:the\s+)?least)\b"
    rf"|\b{SMALLEST}\b",
    re.IGNORECASE,
)
_BEST = re.compile(
    r"\b(?:best|top|winners?|gainers?|strongest|outperform\w*|highest"
    r"|(?:gain(?:ed|ing)?|rose|grew|up|returned|made|make|went\s+up)\s+(?:the\s+)?most)\b"
    rf"|\b{LARGEST}\b",
    re.IGNORECASE,
)
_IN_DOLLARS = re.compile(
    r"\bin\s+(?:dollars|usd|\$)|\bdollars?\b|\$(?!\w)|\bby\s+\$|\bmoney\b", re.I
)
_IN_PERCENT = re.compile(r"\bin\s+percent|\bpercent(?:age)?\b|%", re.IGNORECASE)
# Ranked by weight: "the heaviest weighting", "what % of the portfolio each one is".
_BY_WEIGHT = re.compile(WEIGHT, re.IGNORECASE)
# Ranked by size: "by value", "worth the most", a holding called largest or smallest ("my
# biggest positions"), or an order of sizes ("largest to smallest"), when no gain or loss is
# asked ("my biggest losers" are losses).
_SIZE = rf"(?:{LARGEST}|{SMALLEST})"
_BY_VALUE = re.compile(
    rf"\b(?:by|in\s+order\s+of)\s+{VALUE}\b|\bworth\s+the\s+(?:most|least)\b"
    rf"|\b{_SIZE}\s+(?:[\w-]+\s+){{0,2}}?{HOLDING}\b|\b{_SIZE}\s+(?:first|to)\b"
    rf"|\bfrom\s+(?:the\s+)?{_SIZE}\b",
    re.IGNORECASE,
)
_GAIN_ASKED = re.compile(
    r"\b(?:gain\w*|return\w*|loss(?:es)?|los[te]\w*|perform\w*|winners?|losers?|up|down"
    r"|rose|fell|grew|dropped|declined|best|worst)\b",
    re.IGNORECASE,
)
_RANK_WORDS = rf"(?:best|worst|top|bottom|{LARGEST}|{SMALLEST})"
_RANK_COUNT = re.compile(
    rf"\b(?P<a>{_COUNT})\s+(?:{_RANK_WORDS}|(?:best|worst)[\s-]performing)\b"
    rf"|\b{_RANK_WORDS}\s+(?P<b>{_COUNT})\b",
    re.IGNORECASE,
)
_ONE_HOLDING = re.compile(
    rf"\b(?:the\s+|my\s+){_RANK_WORDS}(?:[\s-]performing)?\s+(?:\w+\s+)?"
    r"(?:holding|position|stock|investment|performer|winner|loser|gainer|one)\b(?!s)"
    r"|\bwhich\s+(?:one|holding|position|stock|investment)\b(?!s)"
    r"|\bwhich\s+of\s+(?:my|our)\s+\w+\s+(?:is|was|has)\b",
    re.IGNORECASE,
)
# Every holding, in order: "each holding", "sorted by value", "worst first".
_EVERY_HOLDING = re.compile(r"\b(?:each|every|sorted|ordered)\b", re.IGNORECASE)
# The most a ranking lists (RankHoldingsArgs.limit).
RANK_ALL = 20


def read_ranking(text: str) -> tuple[RankOrder | None, RankBy | None, int | None]:
    """(order, by, limit) of a ranking of the holdings, each None when no word says it:
    "worst" or "best" first (for a size or weight, smallest or largest first); by "usd" or
    "percent" for a gain, "value" for a size, "weight" for a share of the holdings' value;
    and how many (all of them, for "each" or an order said outright)."""
    order: RankOrder | None = None
    if match := _ORDER.search(text):
        first = match.group("first") or match.group("from")
        order = "worst" if _LOW_END.match(first) else "best"
    elif _WORST.search(text):
        order = "worst"
    elif _BEST.search(text):
        order = "best"
    by: RankBy | None = None
    if _BY_WEIGHT.search(text):
        by = "weight"
    elif _BY_VALUE.search(text) and not _GAIN_ASKED.search(text):
        by = "value"
    elif _IN_DOLLARS.search(text):
        by = "usd"
    elif _IN_PERCENT.search(text):
        by = "percent"
    limit: int | None = None
    if match := _RANK_COUNT.search(text):
        limit = count_of(match.group("a") or match.group("b"))
    elif _ONE_HOLDING.search(text):
        limit = 1
    elif _EVERY_HOLDING.search(text) or _ORDER.search(text):
        limit = RANK_ALL
    return order, by, limit


# --- screens of the holdings and their filings ------------------------------------------------

_FALLING = re.compile(
    r"\b(?:falling|fell|declin\w*|shrink\w*|shrank|shrunk|decreas\w*|dropp\w*|lower"
    r"|negative\s+growth|worsening)\b",
    re.IGNORECASE,
)
_RISING = re.compile(
    r"\b(?:growing|grew|rising|rose|increas\w*|higher|improving|expanding|positive\s+growth)\b",
    re.IGNORECASE,
)
_NUMBER = r"(?P<number>-?\d+(?:[.,]\d+)?)\s*(?P<scale>%|percent|billion|bn|b|million|mn|m)?\b"
_ABOVE = re.compile(
    rf"(?:\babove|\bover|\bgreater\s+than|\bmore\s+than|\bhigher\s+than|\bexceeding|\bat\s+least"
    rf"|>=?)\s*\$?{_NUMBER}",
    re.IGNORECASE,
)
_BELOW = re.compile(
    rf"(?:\bbelow|\bunder|\bless\s+than|\blower\s+than|\bat\s+most|<=?)\s*\$?{_NUMBER}",
    re.IGNORECASE,
)
_SCALES = {"billion": 1e9, "bn": 1e9, "b": 1e9, "million": 1e6, "mn": 1e6, "m": 1e6}
_FISCAL_YEAR = re.compile(
    rf"\b(?:fiscal(?:\s+year)?\s*|fy\s?'?)(?P<year>{_YEAR}|\d{{2}})\b"
    rf"|\b(?:in|for|during)\s+(?P<plain>{_YEAR})\b"
    rf"|\b(?P<filed>{_YEAR})\s+(?:10-?[kq]s?|annual\s+reports?|filings?)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Screen:
    """A condition on a figure of the companies held, and its threshold when it has one."""

    condition: ScreenCondition | None
    threshold: float | None


def read_screen(text: str) -> Screen:
    """The condition a screen of the holdings asks of a figure: above or below a threshold
    (in the figure's unit: 20 for "above 20%"; dollars for "above $10 billion"), or falling
    or rising from the fiscal year before."""
    bounds: tuple[tuple[ScreenCondition, re.Pattern[str]], ...] = (
        ("above", _ABOVE),
        ("below", _BELOW),
    )
    for condition, pattern in bounds:
        if match := pattern.search(text):
            number = float(match.group("number").replace(",", "."))
            scale = (match.group("scale") or "").lower()
            return Screen(condition, number * _SCALES.get(scale, 1.0))
    if _FALLING.search(text):
        return Screen("falling", None)
    if _RISING.search(text):
        return Screen("rising", None)
    return Screen(None, None)


def read_fiscal_year(text: str) -> int | None:
    """A fiscal year written out ("in fiscal 2022", "FY22", "in 2022", "their 2022 10-Ks");
    "last fiscal year"
    is each company's latest one held, which the tools take when none is given."""
    match = _FISCAL_YEAR.search(text)
    if match is None:
        return None
    written = match.group("year") or match.group("plain") or match.group("filed")
    return 2000 + int(written) if len(written) == 2 else int(written)


_LARGEST = re.compile(
    rf"\b(?:(?P<a>{_COUNT})\s+)?(?:largest|biggest|top|main|major|heaviest)\s+(?:(?P<b>{_COUNT})\s+)?"
    r"(?:(?P<plural>holdings|positions|stocks|investments|companies|names)"
    r"|holding|position|stock|investment|company|name)\b",
    re.IGNORECASE,
)
# What the filings are searched for: the words after "about" (or "on", "regarding"), with
# where to look ("in their 10-Ks") left out.
_TOPIC = re.compile(
    r"\b(?:about|regarding|concerning|on|re)\s+(?P<topic>.+?)\s*"
    r"(?:\b(?:in|from)\s+(?:their|the|its|those|these)\b.*)?[?.!\s]*$",
    re.IGNORECASE,
)


def read_largest(text: str) -> int | None:
    """How many of the largest holdings a question asks about: "my two largest positions" is
    2, "my largest holding" 1; None when it names no largest holdings."""
    match = _LARGEST.search(text)
    if match is None:
        return None
    if written := match.group("a") or match.group("b"):
        return count_of(written)
    return 2 if match.group("plural") else 1


def read_topic(text: str) -> str | None:
    match = _TOPIC.search(text)
    if match is None:
        return None
    topic = match.group("topic").strip(" ?.!,;:")
    return topic or None


# --- the whole reading ----------------------------------------------------------------------

_INCLUDE_CLOSED = re.compile(
    r"\brealized\b|\bclosed\b|\bsold\b|\bno\s+longer\s+(?:own|hold)\b|\bused\s+to\s+(?:own|hold)\b"
    r"|\bformer\b",
    re.IGNORECASE,
)
_HOLDINGS_ASKED = re.compile(
    r"\bholdings?\b|\bpositions\b|\ballocat\w*\b|\bdiversif\w*\b|\bbreak\s?down\b|\bexposure\b"
    r"|\bweigh\w*"
    r"|\bwhat\s+(?:do|did)\s+(?:i|we)\s+(?:own|hold|have)\b|\binvested\s+in\b|\betfs\b|\bstocks\b"
    r"|\bbonds\b|\bcrypto\w*\b"
    # What an account contains, or everything owned: "what's inside my 401(k)", "what is in my
    # Roth", "everything I hold".
    r"|\bwhat(?:'s|\s+is|\s+are)?\s+(?:in|inside)\s+(?:my|our)\b|\bcontains?\b|\binside\b"
    rf"|\beverything\b|\b(?:i|we)\s+(?:(?:still|currently|now|also)\s+)?{OWNING}"
    r"|\b(?:do|does|did)\s+(?:my|our|the)\s+(?:[\w()'’-]+\s+){0,3}?(?:hold|own|have|contain)\b"
    r"|\b(?:my|our|the)\s+(?:[\w()'’-]+\s+){0,3}?(?:holds|held|owns|contains|contained)\b"
    rf"|\b(?:every|each|all)\s+(?:of\s+)?(?:(?:my|our|the)\s+)?{HOLDING}\b",
    re.IGNORECASE,
)
# Realized gains, the gains of the shares sold, asked alone: not beside unrealized ones.
_REALIZED = re.compile(rf"\b{REALIZED}\b", re.IGNORECASE)
_UNREALIZED = re.compile(rf"\bun{REALIZED}\b", re.IGNORECASE)
# A market index compared with: "has my IRA outpaced the Dow", "my return vs the Nasdaq".
_COMPARED = re.compile(rf"\b{COMPARING}(?!\w)", re.IGNORECASE)
_INDEX = re.compile(rf"\b(?:the\s+)?{INDEX}", re.IGNORECASE)
# An index as the answer names it: its family's name and its number ("the S&P 500"), which
# the validator reads as a name (services/validator/numbers.py), not an amount or a year.
_INDEX_FAMILIES: tuple[tuple[re.Pattern[str], str, str | None], ...] = (
    (re.compile(r"spx\b", re.I), "S&P", "500"),
    (re.compile(r"s\s?&\s?p", re.I), "S&P", None),
    (re.compile(r"ndx\b", re.I), "Nasdaq", "100"),
    (re.compile(r"nasdaq\s+composite", re.I), "Nasdaq Composite", None),
    (re.compile(r"nasdaq", re.I), "Nasdaq", None),
    (re.compile(r"dow|djia", re.I), "Dow Jones Industrial Average", None),
    (re.compile(r"russell", re.I), "Russell", None),
    (re.compile(r"wilshire", re.I), "Wilshire", None),
    (re.compile(r"msci\s+emerging", re.I), "MSCI Emerging Markets", None),
    (re.compile(r"msci\s+(?P<region>\w+)", re.I), "MSCI", None),
    (re.compile(r"msci", re.I), "MSCI", None),
    (re.compile(r"ftse", re.I), "FTSE", None),
    (re.compile(r"nikkei", re.I), "Nikkei", None),
)
# The market, an index or a benchmark named by no name.
ANY_INDEX = "a market index"


@dataclass(frozen=True)
class Benchmark:
    """A market index a question compares the portfolio with, as the answer names it."""

    name: str
    span: tuple[int, int]


def read_benchmark(text: str) -> Benchmark | None:
    """The market index a question compares with ("has my 401(k) kept pace with the Dow"), or
    None when it compares with none."""
    if not _COMPARED.search(text) or (match := _INDEX.search(text)) is None:
        return None
    written = re.sub(r"^the\s+", "", " ".join(match.group(0).split()), flags=re.IGNORECASE)
    number = re.search(r"\d+", written)
    for pattern, family, implied in _INDEX_FAMILIES:
        if found := pattern.match(written):
            name = family
            if region := found.groupdict().get("region"):
                name += " " + (region.upper() if len(region) <= 4 else region.title())
            if number or implied:
                name += " " + (number.group(0) if number else str(implied))
            return Benchmark(f"the {name}", match.span())
    return Benchmark(ANY_INDEX, match.span())


def read_portfolio(
    question: str,
    today: date,
    *,
    metrics: Sequence[str] = (),
    company_spans: Sequence[tuple[int, int]] = (),
) -> PortfolioReading:
    """Everything a portfolio question names, relative days resolved against `today` (the
    last day finq holds prices for). `metrics` are the catalog ids the router's metric
    finder read in it (the first one is what a screen is on); `company_spans` where it names
    companies, which are never an account."""
    # An index's name is read first: the 2000 of "the Russell 2000" is no year.
    benchmark = read_benchmark(question)
    rest = _blank(question, benchmark.span) if benchmark is not None else question
    timeframe = read_timeframe(rest, today)
    if timeframe is not None:
        rest = _blank(rest, timeframe.span)
    for span in company_spans:
        rest = _blank(rest, span)
    order, by, limit = read_ranking(rest)
    screen = read_screen(rest)
    largest = read_largest(rest)
    return PortfolioReading(
        account=read_account(rest, company_spans),
        asset_class=read_asset_class(rest),
        start=timeframe.start if timeframe else None,
        end=timeframe.end if timeframe else None,
        as_of=timeframe.as_of if timeframe else None,
        since_purchase=timeframe.since_purchase if timeframe else False,
        timeframe_text=timeframe.text if timeframe else None,
        kinds=read_activity_kinds(rest),
        order=order,
        by=by,
        limit=limit,
        condition=screen.condition,
        threshold=screen.threshold,
        metric=metrics[0] if metrics else None,
        fiscal_year=read_fiscal_year(question),
        largest=largest,
        query=read_topic(question) if largest is not None else None,
        include_closed=bool(_INCLUDE_CLOSED.search(rest)),
        holdings_asked=bool(_HOLDINGS_ASKED.search(rest)),
        realized=bool(_REALIZED.search(rest)) and not _UNREALIZED.search(rest),
        benchmark=benchmark.name if benchmark is not None else None,
    )


# What names a timeframe, as one unit: a follow-up naming any of it replaces all of it.
_TIMEFRAME_FIELDS = ("start", "end", "as_of", "since_purchase", "timeframe_text")
# Read one by one: "and in dollars?" after "my three worst holdings" keeps worst and three.
_OWN_FIELDS = (
    "account",
    "asset_class",
    "kinds",
    "order",
    "by",
    "limit",
    "condition",
    "threshold",
    "metric",
    "fiscal_year",
    "largest",
    "query",
    "benchmark",
)


def followed_up(before: PortfolioReading, now: PortfolioReading) -> PortfolioReading:
    """A follow-up's reading ("and in my IRA?", "what about last year?"): what it names
    replaces the portfolio question's before it; the rest is kept, and said to be."""
    merged = before.model_copy(deep=True)
    merged.inherited = []
    named = now.model_dump(exclude_defaults=True)
    if any(name in named for name in _TIMEFRAME_FIELDS):
        for name in _TIMEFRAME_FIELDS:
            setattr(merged, name, getattr(now, name))
    elif before.timeframe_text is not None:
        merged.inherited.append("timeframe")
    for name in _OWN_FIELDS:
        if name in named:
            setattr(merged, name, getattr(now, name))
        elif getattr(before, name) not in (None, []):
            merged.inherited.append(name)
    # A flag says what this question asks ("realized", "holdings") or what the one before did.
    merged.include_closed = now.include_closed or before.include_closed
    merged.holdings_asked = now.holdings_asked or before.holdings_asked
    merged.realized = now.realized or before.realized
    return merged


# --- the conversation and the scoring ---------------------------------------------------------

# The user speaking of what they own or did with it: "my AAPL position", "my Roth IRA", "which
# of my holdings", "I bought", "did I sell", "I received"; and dividends received, which only
# a holder does ("total dividends received in 2022": a company pays them).
_OWNED = re.compile(
    r"\b(?:my|our)\s+(?:[\w$&().'’-]+\s+){0,2}?(?:portfolio|holdings?|positions?|investments?"
    r"|shares|stake|lots?|trades|transactions|purchases|sales|dividends|deposits|withdrawals"
    r"|contributions|cash|stocks?|etfs?|bonds|crypto|gains?|loss(?:es)?|returns?|performance"
    rf"|cost\s+basis|{ACCOUNT})(?![\w(-])"
    rf"|{OWNERSHIP}"
    r"|\b(?:i|we)\s+(?:bought|sold|paid|invested|deposited|withdrew|contributed|received"
    r"|collected|earned|got|realized)\b"
    r"|\b(?:do|did|have)\s+(?:i|we)\s+(?:still\s+)?(?:own|hold|buy|sell|pay|invest|deposit"
    r"|withdraw|contribute|receive|get|earn|have|collect|reali[sz]e|lose|make|gain)\b"
    r"|\bam\s+i\s+(?:up|down)\b"
    rf"|\b{PAID_TO_HOLDERS}(?:\s+income)?\s+(?:\w+\s+)?(?:received|collected|earned)\b(?!\s+by)"
    rf"|\b(?:received|collected|earned)\s+(?:[\w$]+\s+){{0,2}}?(?:in\s+)?{PAID_TO_HOLDERS}\b",
    re.IGNORECASE,
)
# What a short follow-up may name alone and still be about the portfolio question before it.
_PORTFOLIO_SLOTS = {
    "account", "asset_class", "start", "as_of", "since_purchase", "kinds", "order", "by", "limit",
    "benchmark",
}  # fmt: skip


def speaks_of_own_holdings(question: str) -> bool:
    """Whether the user speaks of their own holdings, accounts or activity."""
    return _OWNED.search(question) is not None


def portfolio_reading_before(previous: ConversationTurn) -> PortfolioReading | None:
    """The reading of the turn before, when it was a portfolio question (or a clarifying
    question about one)."""
    before = previous.understood
    if before is None or before.portfolio is None:
        return None
    asked = previous.intent if previous.intent in PORTFOLIO_INTENTS else before.pending_intent
    return before.portfolio if asked in PORTFOLIO_INTENTS else None


def names_only_portfolio_slots(reading: PortfolioReading, question: str) -> bool:
    """ "Last year?", "in my Roth?", "in dollars?": a question naming a timeframe, an account,
    an asset class, kinds of activity or a ranking, and no intent of its own (metric_lookup's
    cues, "what was", "how much", are in most questions and say nothing of the kind; nor
    does the cue every portfolio intent shares, "my Roth")."""
    named = reading.model_dump(exclude_defaults=True, include=_PORTFOLIO_SLOTS)
    own_cue = any(
        cue.pattern.search(question)
        for intent in INTENTS
        if intent.name != "metric_lookup"
        for cue in intent.cues
        # "My IRA" says the question is the user's, not which kind of question it is.
        if cue.pattern.pattern != OWNERSHIP
    )
    return bool(named) and not own_cue


def _blank(text: str, span: tuple[int, int]) -> str:
    start, end = span
    return text[:start] + " " * (end - start) + text[end:]


def _overlaps(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)
