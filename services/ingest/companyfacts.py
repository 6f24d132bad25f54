"""Parse SEC XBRL companyfacts JSON into annual, quarterly and TTM metric values with provenance.

A companyfacts document repeats each fact once per filing that reports it: a
10-K carries its own fiscal year and two or more earlier ones, a 10-Q its
quarter and the matching quarter of the prior year. The rules that turn that into one
value per (metric, period type, fiscal year, fiscal quarter):

- Annual: a flow (income, cash flow) is a 10-K fact lasting 350-380 days; an
  instant (balance sheet) is a 10-K fact dated on a fiscal year end, i.e. on a
  date some annual flow of the company also ends on.
- The fiscal year comes from the period's own end date, never from the `fy`
  label of the filing a value was read from (that label names the filing's
  year, not the comparative years it repeats). See `fiscal_calendar`.
- Quarterly: a flow is a three-month (84-98 day) fact of a 10-Q or 10-K; an
  instant is a 10-Q or 10-K fact dated on a quarter end. The quarter is counted
  in ~13-week steps from the start of the fiscal year containing the period's
  end (`fiscal_years`, `quarter_calendar`), so Apple's quarter ending 2024-12-28
  is Q1 FY2025 and NVIDIA's ending 2024-04-28 is Q1 FY2025.
- Q4 is rarely filed on its own, and 10-Qs file cash flows only year to date:
  a dollar flow's quarter not filed for three months is the difference of two
  year-to-date figures, Q2 = 6M - Q1, Q3 = 9M - 6M, Q4 = FY - 9M (or FY minus
  Q1+Q2+Q3), provenance "derived:FY<year>(<accession>)-9M(<accession>)". The
  two operands are taken as they stood together: a year restated after its
  nine months were last filed is subtracted as filed before the restatement,
  and says so (`_consistent_operands`). A three-month figure that contradicts
  the year-to-date figures of its own filing gives way to them
  (`_discrete_quarter`). An instant's Q4 is the fiscal year end balance.
  Per-share figures are never subtracted (the share counts differ), so EPS has
  a Q4 only where a three-month Q4 was reported.
- TTM: a dollar flow summed over four consecutive quarters, provenance
  "derived:TTM(Q2FY2024+Q3FY2024+Q4FY2024+Q1FY2025)".
- The same (tag, period) in several filings: the value of the latest `filed`
  wins, then the later accession, so restatements replace what they restate;
  the citation is the first filing that reported that value (`_settle`).
- Tags are ordered fallbacks per metric; each period takes the first tag with
  a value for it, so a company that changed tags (Apple: SalesRevenueNet, then
  Revenues, then RevenueFromContractWithCustomerExcludingAssessedTax) keeps an
  unbroken series. For revenue a candidate below `PLAUSIBILITY_FLOOR` of
  another revenue tag's value for the same period is skipped: a "revenue" that
  small is a segment or partial figure (Tesla's SalesRevenueGoodsNet is
  automotive sales only). A dollar flow's quarters follow the tag of their
  fiscal year, so they add up to it (`_additive_quarters`).
- Only where no tag has a value for a period, a few documented derivations
  (`DERIVATIONS`) fill in, with provenance "derived:<Minuend>-<Subtrahend>".
- A share count a thousand times below its neighbours was filed in thousands:
  it is scaled, provenance "xbrl:us-gaap:<Tag>; scaled ×1000 (filed in
  thousands)" (`_unit_slips_scaled`).
- A restated year whose quarters were not restated keeps the quarters as
  filed; its provenance says what they add up to (`_restated_years_marked`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from services.ingest.stock_splits import StockSplit, stock_splits
from shared.metric_catalog import CATALOG, Metric

ANNUAL_MIN_DAYS = 350
ANNUAL_MAX_DAYS = 380
# Mean Gregorian year: 52/53-week fiscal years drift around it but never by half a year.
DAYS_PER_YEAR = 365.2425
DAYS_PER_QUARTER = DAYS_PER_YEAR / 4
# A 13-week quarter lasts 90 days end minus start, a 14-week one (a 53-week year) 97, and
# calendar quarters 89-91; 84-98 takes all of them and no two-month or four-month period.
QUARTER_MIN_DAYS = 84
QUARTER_MAX_DAYS = 98
# Year-to-date periods of 10-Qs (cash flow statements are only filed that way): six months
# are two such quarters, 181 days (188 with a 14-week quarter; calendar halves 180-183); nine
# months are three, 272 days (279).
SIX_MONTH_MIN_DAYS = 172
SIX_MONTH_MAX_DAYS = 196
NINE_MONTH_MIN_DAYS = 262
NINE_MONTH_MAX_DAYS = 286
# How far a quarter end may sit from a whole number of quarters after the fiscal year start:
# a 14-week quarter puts it 7 days late; more than 10 means a period that is no fiscal quarter.
QUARTER_SLACK_DAYS = 10
# The fiscal year after the last 10-K has 10-Qs but no annual period yet; it is given the
# longest a fiscal year runs (53 weeks) so its quarters can be counted.
OPEN_YEAR_DAYS = 371

# Form prefixes: "10-K" also covers 10-K/A and 10-KT, "10-Q" covers 10-Q/A. 8-Ks (earnings
# releases) and proxy statements are not financial statements and are never read.
ANNUAL_FORMS: tuple[str, ...] = ("10-K",)
REPORT_FORMS: tuple[str, ...] = ("10-K", "10-Q")
# Internal period types of the six- and nine-month year-to-date figures: they are only
# operands of the discrete quarters (Q3 = 9M - 6M, Q4 = FY - 9M), never stored.
SIX_MONTHS = "6M"
NINE_MONTHS = "9M"

# companyfacts names per-share units "USD/shares"; the catalog says "USD/share". Share
# counts are "shares" in both.
XBRL_UNITS: dict[str, str] = {"USD": "USD", "USD/share": "USD/shares", "shares": "shares"}

# Only revenue gets the check: its fallback tags are alternative names for one total,
# whereas e.g. NetIncomeLoss may legitimately be far below ProfitLoss (large minority
# interests), so a small value there is not evidence of a partial figure.
PLAUSIBILITY_FLOOR: dict[str, float] = {"revenue": 0.5}

# Share counts slip between shares and thousands of shares (NVIDIA's 2010 filings gave its
# diluted counts in thousands); see `_unit_slips_scaled`.
SHARE_COUNT_UNITS: frozenset[str] = frozenset({"shares"})
UNIT_SLIP_FACTOR = 1000
# How close ×1000 must bring a slipped count to its neighbour: buybacks and issuance move a
# count by a few percent a year; a split moves it by half or more.
UNIT_SLIP_FIT = 0.25
# Figures of one sign this many times apart are of two scales: a units slip between them, as
# no business, split (20-for-1 at most) or restatement moves a figure that far.
SCALE_BREAK = 100.0
# Two figures that should be equal (a three-month figure and the difference of its filing's
# year-to-date figures) may differ by this much besides rounding.
AGREEMENT = 0.01

SUBMISSIONS_DIR = "submissions"
_SYMBOL = re.compile(r"^[A-Z][A-Z.\-]{0,9}$")


class IngestError(Exception):
    """A source file finq cannot turn into metric values; the message says what to do."""


@dataclass(frozen=True)
class Derivation:
    """metric = minuend − subtrahend, both read from the same filing for the same period."""

    minuend: str
    subtrahend: str

    @property
    def provenance(self) -> str:
        return f"derived:{self.minuend}-{self.subtrahend}"


# Used only for fiscal years where none of the metric's tags has a value. NVIDIA's
# balance sheets to FY2014 and Alphabet's for 2014 have no total-liabilities line;
# Alphabet's income statement has no gross-profit line in any year.
DERIVATIONS: dict[str, tuple[Derivation, ...]] = {
    "total_liabilities": (Derivation("LiabilitiesAndStockholdersEquity", "StockholdersEquity"),),
    "gross_profit": (
        Derivation("Revenues", "CostOfRevenue"),
        Derivation("RevenueFromContractWithCustomerExcludingAssessedTax", "CostOfRevenue"),
    ),
}


@dataclass(frozen=True)
class MetricValueRecord:
    """One row of `metric_values`."""

    symbol: str
    metric: str
    period_type: str
    fiscal_year: int
    fiscal_quarter: int
    period_start: date | None
    period_end: date
    value: float
    unit: str
    form: str | None
    accession: str | None
    xbrl_tag: str | None
    filed: date | None
    provenance: str


@dataclass(frozen=True)
class CompanyRecord:
    """One row of `companies`, and the company's stock splits (the bundled dataset's
    companies.json holds them; the table does not, its derived figures are already split-
    adjusted with them)."""

    symbol: str
    cik: str  # 10 digits, zero-padded, as EDGAR file names write it
    name: str  # as SEC registers it: "Apple Inc.", "NVIDIA CORP"
    display_name: str  # what answers say: "Apple", "NVIDIA"
    fiscal_year_end: str | None  # "0926", as SEC writes it
    aliases: tuple[str, ...]  # lowercase names users say: "apple", "google"
    # Every share class's ticker, `symbol` first: ("GOOGL", "GOOG"). Always holds the symbol.
    tickers: tuple[str, ...] = ()
    splits: tuple[StockSplit, ...] = ()  # oldest first

    def __post_init__(self) -> None:
        # The symbol leads, whatever the record was built from (a --symbol override keeps
        # the submissions' tickers after it: they are still the company's).
        tickers = dict.fromkeys(t.upper() for t in (self.symbol, *self.tickers))
        object.__setattr__(self, "tickers", tuple(tickers))


@dataclass(frozen=True)
class _Fact:
    tag: str
    start: date | None
    end: date
    value: float
    accession: str
    fy: int | None
    form: str
    filed: date

    @property
    def days(self) -> int | None:
        return None if self.start is None else (self.end - self.start).days

    @property
    def is_annual_flow(self) -> bool:
        days = self.days
        return days is not None and ANNUAL_MIN_DAYS <= days <= ANNUAL_MAX_DAYS

    @property
    def is_quarter_flow(self) -> bool:
        days = self.days
        return days is not None and QUARTER_MIN_DAYS <= days <= QUARTER_MAX_DAYS

    @property
    def is_six_month_flow(self) -> bool:
        days = self.days
        return days is not None and SIX_MONTH_MIN_DAYS <= days <= SIX_MONTH_MAX_DAYS

    @property
    def is_nine_month_flow(self) -> bool:
        days = self.days
        return days is not None and NINE_MONTH_MIN_DAYS <= days <= NINE_MONTH_MAX_DAYS

    @property
    def in_annual_report(self) -> bool:
        return self.form.startswith(ANNUAL_FORMS)

    @property
    def recency(self) -> tuple[date, date, str, float]:
        # Later end first only matters if two ends ever share a fiscal year (a changed
        # fiscal year end); then latest filed, later accession; the value keeps it total.
        return (self.end, self.filed, self.accession, self.value)


def _parse_date(raw: Any) -> date | None:
    try:
        return date.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _parse_report_facts(
    tag: str, raw_facts: Any, forms: tuple[str, ...] = REPORT_FORMS
) -> Iterator[_Fact]:
    """The facts of one tag and unit that come from the given forms (by prefix), parsed."""
    for raw in raw_facts if isinstance(raw_facts, list) else ():
        form = raw.get("form")
        if not isinstance(form, str) or not form.startswith(forms):
            continue
        end, filed = _parse_date(raw.get("end")), _parse_date(raw.get("filed"))
        value, accession = raw.get("val"), raw.get("accn")
        if end is None or filed is None or not isinstance(accession, str):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        # A filing cannot report actuals for a period that ends after it was filed.
        if end > filed:
            continue
        fy = raw.get("fy")
        yield _Fact(
            tag=tag,
            start=_parse_date(raw.get("start")),
            end=end,
            value=value,
            accession=accession,
            fy=fy if isinstance(fy, int) else None,
            form=form,
            filed=filed,
        )


class _ParsedFacts(list[Any]):
    """One tag and unit's raw facts, with their 10-K and 10-Q facts parsed once: a document
    is read many times over (its calendars, then each catalog metric's series), and parsing
    every fact each time was most of parsing a companyfacts file."""

    def __init__(self, tag: str, raw_facts: list[Any]) -> None:
        super().__init__(raw_facts)
        self.report_facts = tuple(_parse_report_facts(tag, raw_facts, REPORT_FORMS))


def _with_parsed_facts(gaap: Mapping[str, Any]) -> dict[str, Any]:
    """`gaap` with each unit's facts a _ParsedFacts (same rows, parsed once)."""
    parsed: dict[str, Any] = {}
    for tag, body in gaap.items():
        units = body.get("units") if isinstance(body, Mapping) else None
        if not isinstance(units, Mapping):
            parsed[tag] = body
            continue
        parsed[tag] = {
            **body,
            "units": {
                unit: _ParsedFacts(tag, raw) if isinstance(raw, list) else raw
                for unit, raw in units.items()
            },
        }
    return parsed


def _report_facts(
    tag: str, raw_facts: Any, forms: tuple[str, ...] = REPORT_FORMS
) -> Iterator[_Fact]:
    """The facts of one tag and unit that come from the given forms (by prefix)."""
    # Every form the callers ask for is one of REPORT_FORMS's, so the facts parsed for
    # those hold them all.
    if isinstance(raw_facts, _ParsedFacts) and all(f.startswith(REPORT_FORMS) for f in forms):
        return (fact for fact in raw_facts.report_facts if fact.form.startswith(forms))
    return _parse_report_facts(tag, raw_facts, forms)


def _annual_report_facts(tag: str, raw_facts: Any) -> Iterator[_Fact]:
    """The facts of one tag and unit that come from 10-K forms (10-K, 10-K/A, 10-KT)."""
    return _report_facts(tag, raw_facts, ANNUAL_FORMS)


def _all_report_facts(gaap: Mapping[str, Any], forms: tuple[str, ...]) -> Iterator[_Fact]:
    """Every fact of every tag and unit from the given forms."""
    for tag, body in gaap.items():
        units = body.get("units", {}) if isinstance(body, Mapping) else {}
        for raw_facts in units.values():
            yield from _report_facts(tag, raw_facts, forms)


def _us_gaap(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    facts = doc.get("facts")
    if not isinstance(facts, Mapping) or "cik" not in doc:
        raise IngestError("not an SEC companyfacts document (no 'cik' and 'facts')")
    gaap = facts.get("us-gaap", {})
    return gaap if isinstance(gaap, Mapping) else {}


def fiscal_calendar(gaap: Mapping[str, Any]) -> dict[date, int]:
    """Each fiscal year end of the company → the fiscal year it closes.

    Fiscal year ends are the end dates of annual 10-K flows. Each 10-K's own
    period is the latest annual period it reports, and its `fy` names that
    period. Fiscal years are consecutive, so fiscal year = base + whole years
    since the first fiscal year end, with `base` the one most 10-Ks agree on.
    Why not "the fy of the earliest 10-K reporting the end date": the first
    XBRL 10-K in a companyfacts file also reports two earlier years (Apple's
    FY2009 10-K would make FY2007-FY2009 all "2009"), and some filings carry a
    wrong label (NVIDIA's 10-Ks for fiscal 2011-2014 say fy one lower), which
    the majority outvotes. Without any `fy` label, the end date's year is used.
    """
    annual_ends: set[date] = set()
    own_end: dict[str, date] = {}
    filed: dict[str, date] = {}
    labels: dict[str, Counter[int]] = {}
    for tag, body in gaap.items():
        units = body.get("units", {}) if isinstance(body, Mapping) else {}
        for raw_facts in units.values():
            for fact in _annual_report_facts(tag, raw_facts):
                if not fact.is_annual_flow:
                    continue
                annual_ends.add(fact.end)
                own_end[fact.accession] = max(fact.end, own_end.get(fact.accession, fact.end))
                filed[fact.accession] = fact.filed
                if fact.fy is not None:
                    labels.setdefault(fact.accession, Counter())[fact.fy] += 1
    if not annual_ends:
        return {}
    first = min(annual_ends)

    def years_since_first(end: date) -> int:
        return round((end - first).days / DAYS_PER_YEAR)

    votes: Counter[int] = Counter()
    latest_voter: dict[int, tuple[date, str]] = {}
    for accession, end in own_end.items():
        if accession not in labels:
            continue
        base = labels[accession].most_common(1)[0][0] - years_since_first(end)
        votes[base] += 1
        voter = (filed[accession], accession)
        latest_voter[base] = max(latest_voter.get(base, voter), voter)
    if not votes:
        return {end: end.year for end in annual_ends}
    # A tie goes to the convention of the most recent filing.
    base = max(votes, key=lambda b: (votes[b], latest_voter[b]))
    return {end: base + years_since_first(end) for end in annual_ends}


@dataclass(frozen=True)
class FiscalYear:
    """One fiscal year of a company: its number and its first and last day."""

    year: int
    start: date
    end: date


def _most_common(counter: Counter[date]) -> date:
    # Ties go to the earliest date, so the result never depends on the order facts came in.
    return max(sorted(counter), key=counter.__getitem__)


def fiscal_years(gaap: Mapping[str, Any], calendar: Mapping[date, int]) -> list[FiscalYear]:
    """The company's fiscal years, oldest first, for counting quarters.

    A year with a 10-K runs from the start most of its annual flows share to its
    fiscal year end. The year after the last 10-K is still open (its 10-Qs are
    filed before its 10-K): it starts the day after and is given 53 weeks.
    """
    starts: dict[date, Counter[date]] = {}
    for fact in _all_report_facts(gaap, ANNUAL_FORMS):
        if fact.is_annual_flow and fact.start is not None and fact.end in calendar:
            starts.setdefault(fact.end, Counter())[fact.start] += 1
    years = [
        FiscalYear(calendar[end], _most_common(counter), end)
        for end, counter in sorted(starts.items())
    ]
    if years:
        last = years[-1]
        years.append(
            FiscalYear(
                last.year + 1,
                last.end + timedelta(days=1),
                last.end + timedelta(days=OPEN_YEAR_DAYS),
            )
        )
    return years


def fiscal_quarter(end: date, years: Sequence[FiscalYear]) -> tuple[int, int] | None:
    """(fiscal year, quarter 1-4) of a period ending on `end`, or None if it is no quarter end.

    The fiscal year is the one whose [start, end] holds the date; the quarter is the
    number of ~13-week steps from that year's start. Dates before the first 10-K
    year or far from a step (a mid-quarter acquisition date) are no quarter end.
    """
    for year in years:
        if year.start <= end <= year.end:
            elapsed = (end - year.start).days + 1
            quarter = round(elapsed / DAYS_PER_QUARTER)
            off = abs(elapsed - quarter * DAYS_PER_QUARTER)
            return (year.year, quarter) if 1 <= quarter <= 4 and off <= QUARTER_SLACK_DAYS else None
    return None


def quarter_calendar(
    gaap: Mapping[str, Any], years: Sequence[FiscalYear]
) -> dict[date, tuple[int, int]]:
    """Each fiscal quarter end of the company → (fiscal year, quarter 1-4).

    Quarter ends are the end dates of three-month flows in 10-Qs and 10-Ks, like
    fiscal year ends are those of annual flows, so an instant counts as a
    quarter-end balance only when it is dated on a day some quarter really ended.
    """
    quarters: dict[date, tuple[int, int]] = {}
    seen: set[date] = set()
    for fact in _all_report_facts(gaap, REPORT_FORMS):
        if not fact.is_quarter_flow or fact.end in seen:
            continue
        seen.add(fact.end)
        label = fiscal_quarter(fact.end, years)
        if label is not None:
            quarters[fact.end] = label
    return quarters


class _Period(NamedTuple):
    period_type: str  # "annual", "quarterly", SIX_MONTHS or NINE_MONTHS
    fiscal_year: int
    fiscal_quarter: int  # 0 for annual


@dataclass(frozen=True)
class _Calendar:
    year_ends: Mapping[date, int]
    quarter_ends: Mapping[date, tuple[int, int]]

    def period(self, fact: _Fact, metric: Metric) -> _Period | None:
        """The period a fact of the metric reports, or None if it is no period finq keeps."""
        if metric.kind == "flow":
            if fact.is_annual_flow:
                year = self.year_ends.get(fact.end)
                # Only 10-Ks are read for years: a 10-Q's twelve-month figure is no fiscal year.
                if year is None or not fact.in_annual_report:
                    return None
                return _Period("annual", year, 0)
            label = self.quarter_ends.get(fact.end)
            if label is None:
                return None
            if fact.is_quarter_flow:
                return _Period("quarterly", *label)
            if fact.is_six_month_flow and label[1] == 2:
                return _Period(SIX_MONTHS, *label)
            if fact.is_nine_month_flow and label[1] == 3:
                return _Period(NINE_MONTHS, *label)
            return None
        if metric.kind == "instant" and fact.start is None:
            # Instants dated off a fiscal year or quarter end (e.g. a mid-year acquisition
            # date) are skipped.
            if fact.in_annual_report and fact.end in self.year_ends:
                return _Period("annual", self.year_ends[fact.end], 0)
            label = self.quarter_ends.get(fact.end)
            # The Q4 balance is the fiscal year end balance of the 10-K; see _fourth_quarters.
            if label is not None and label[1] < 4:
                return _Period("quarterly", *label)
        return None


def _qualifying_facts(
    gaap: Mapping[str, Any], tag: str, metric: Metric, calendar: _Calendar
) -> Iterator[tuple[_Period, _Fact]]:
    """(period, fact) for the 10-K and 10-Q facts of one tag in the metric's unit."""
    body = gaap.get(tag)
    if not isinstance(body, Mapping):
        return
    raw_facts = body.get("units", {}).get(XBRL_UNITS[metric.unit])
    for fact in _report_facts(tag, raw_facts):
        period = calendar.period(fact, metric)
        if period is not None:
            yield period, fact


def _settle(facts: list[_Fact]) -> _Fact:
    """One figure from the filings that report it: the latest filing's value (restatements
    win), cited from the first filing of the unbroken run of filings that report that same
    value, so a figure a later 10-K merely repeats keeps pointing at the 10-K that first
    reported it (Apple's FY2023 revenue cites the FY2023 10-K, not the FY2025 one)."""
    ordered = sorted(facts, key=lambda fact: fact.recency)
    latest = cited = ordered[-1]
    for fact in reversed(ordered[:-1]):
        if (fact.value, fact.start, fact.end) != (latest.value, latest.start, latest.end):
            break
        cited = fact
    return cited


_Key = TypeVar("_Key", bound=Hashable)


def _scale_apart(a: float, b: float) -> bool:
    """Two figures of one sign at least `SCALE_BREAK` times apart: a units slip between
    them, since nothing a company reports moves that far between neighbouring periods or
    between two filings of one period."""
    if a == 0 or b == 0 or (a < 0) != (b < 0):
        return False
    ratio = abs(a / b)
    return max(ratio, 1 / ratio) >= SCALE_BREAK


def _settle_per_period(
    facts: Iterator[tuple[_Key, _Fact]],
) -> dict[_Key, tuple[_Fact, tuple[_Fact, ...]]]:
    """Per period: the settled figure (`_settle`) and every filing of it, oldest first."""
    by_period: dict[_Key, list[_Fact]] = {}
    for period, fact in facts:
        by_period.setdefault(period, []).append(fact)
    return {
        period: (
            _settle(period_facts),
            tuple(sorted(period_facts, key=lambda fact: (fact.filed, fact.accession))),
        )
        for period, period_facts in by_period.items()
    }


@dataclass(frozen=True)
class _Value:
    """A figure for one period: the fact carries value, period and cited filing."""

    fact: _Fact
    xbrl_tag: str | None
    provenance: str
    # Every filing of the figure, oldest first (restatements included), so a difference
    # can take its operands as they stood at one time (`_consistent_operands`).
    history: tuple[_Fact, ...] = ()


def _choose_plausible(metric_id: str, candidates: list[_Value]) -> _Value | None:
    """The first candidate (in tag order) that is not implausibly small next to the others."""
    floor = PLAUSIBILITY_FLOOR.get(metric_id)
    for index, candidate in enumerate(candidates):
        others = [abs(other.fact.value) for j, other in enumerate(candidates) if j != index]
        if floor is not None and others and abs(candidate.fact.value) < floor * max(others):
            continue
        return candidate
    return None


def _derived(
    gaap: Mapping[str, Any], derivation: Derivation, metric: Metric, calendar: _Calendar
) -> Iterator[tuple[_Period, _Fact]]:
    """(period, minuend fact carrying the difference) for each filing and period that
    reports both operands; operands from different filings are never mixed."""
    subtrahends = {
        (period, fact.accession, fact.start, fact.end): fact
        for period, fact in _qualifying_facts(gaap, derivation.subtrahend, metric, calendar)
    }
    for period, fact in _qualifying_facts(gaap, derivation.minuend, metric, calendar):
        other = subtrahends.get((period, fact.accession, fact.start, fact.end))
        if other is not None:
            yield period, replace(fact, value=fact.value - other.value)


def _sources(metric: Metric) -> list[str]:
    """The provenances a metric's figures can have, in fallback order: its tags, then its
    derivations."""
    return [f"xbrl:us-gaap:{tag}" for tag in metric.xbrl_tags] + [
        derivation.provenance for derivation in DERIVATIONS.get(metric.id, ())
    ]


def _series(
    gaap: Mapping[str, Any], metric: Metric, calendar: _Calendar
) -> tuple[dict[_Period, _Value], dict[_Period, dict[str, _Value]]]:
    """The metric's value per period (tag fallback, plausibility, derivations, unit slips),
    and every period's candidates by provenance, so a quarter can be derived from
    year-to-date figures read the same way as each other and as the fiscal year."""
    chosen: dict[_Period, _Value] = {}
    options: dict[_Period, dict[str, _Value]] = {}
    per_tag = {
        tag: _settle_per_period(_qualifying_facts(gaap, tag, metric, calendar))
        for tag in metric.xbrl_tags
    }
    for tag, settled in per_tag.items():
        for period, (fact, history) in settled.items():
            provenance = f"xbrl:us-gaap:{tag}"
            options.setdefault(period, {})[provenance] = _Value(fact, tag, provenance, history)
    periods: set[_Period] = set().union(*per_tag.values())
    for period in periods:
        candidates = [
            options[period][f"xbrl:us-gaap:{tag}"]
            for tag in metric.xbrl_tags
            if period in per_tag[tag]
        ]
        value = _choose_plausible(metric.id, candidates)
        if value is not None:
            chosen[period] = value
    for derivation in DERIVATIONS.get(metric.id, ()):
        derived = _settle_per_period(_derived(gaap, derivation, metric, calendar))
        for period, (fact, history) in derived.items():
            value = _Value(fact, None, derivation.provenance, history)
            options.setdefault(period, {})[derivation.provenance] = value
            # Only where no tag has a value; the first derivation that has one wins.
            if period not in periods:
                periods.add(period)
                chosen[period] = value
    if metric.unit in SHARE_COUNT_UNITS:
        chosen = _unit_slips_scaled(chosen)
    return chosen, options


def _unit_slips_scaled(values: Mapping[_Period, _Value]) -> dict[_Period, _Value]:
    """Share counts filed in thousands as if in shares, scaled back, with a provenance that
    says so (NVIDIA's 2010 filings gave 548,126 diluted shares for FY2009, Apple's Q2 FY2014
    10-Q 861,745 shares outstanding).

    The company's counts of one metric (years, quarters and year-to-date periods alike: all
    count the same shares) in time order fall into runs of one scale (`_scale_apart`; a
    stock split, 20-for-1 at most, stays within a run). A run is filed in thousands when the
    counts on both sides of it, where there are any, are of the larger scale and some later
    count is: a count that never comes back up could be a reverse split, so a run at the end
    of the series stays as filed. A count of such a run is scaled where ×1000 brings it
    within `UNIT_SLIP_FIT` of the count just before or just after the run (buybacks and
    issuance move a count by a few percent a year, a split moves it by half or more, so only
    one side has to fit: Apple's slipped count sits between its last pre-split and first
    post-split counts). The slip tends to recur in a filing's comparatives, hence runs, and
    the latest filing wins, so a correct earlier filing of the same period does not help.
    """
    timeline = sorted(
        (
            (value.fact.end, value.fact.start or value.fact.end, period)
            for period, value in values.items()
            if value.fact.value > 0
        )
    )
    runs: list[list[_Period]] = []
    for *_, period in timeline:
        if runs and not _scale_apart(values[runs[-1][-1]].fact.value, values[period].fact.value):
            runs[-1].append(period)
        else:
            runs.append([period])
    scaled = dict(values)
    for index, run in enumerate(runs[:-1]):
        after = values[runs[index + 1][0]].fact.value
        before = values[runs[index - 1][-1]].fact.value if index > 0 else None
        if after < values[run[-1]].fact.value or (
            before is not None and before < values[run[0]].fact.value
        ):
            continue
        neighbours = [after] if before is None else [before, after]
        for period in run:
            value = values[period]
            restored = value.fact.value * UNIT_SLIP_FACTOR
            if any(abs(restored / count - 1) <= UNIT_SLIP_FIT for count in neighbours):
                scaled[period] = replace(
                    value,
                    fact=replace(value.fact, value=restored),
                    provenance=f"{value.provenance}; scaled ×1000 (filed in thousands)",
                )
    return scaled


def _is_additive(metric: Metric) -> bool:
    """Dollar flows add up over quarters; per-share figures do not (each quarter divides by
    its own share count) and balances are not sums of anything."""
    return metric.kind == "flow" and metric.unit == "USD"


def _contiguous(values: Sequence[_Value]) -> bool:
    """Each period starts the day after the one before it ends."""
    return all(
        later.fact.start == earlier.fact.end + timedelta(days=1)
        for earlier, later in pairwise(values)
    )


def _rounding_unit(value: float) -> float:
    """The unit a figure was rounded to: the largest power of ten up to a billion that
    divides it (Alphabet files its share-based compensation expense to the hundred million,
    Tesla its 2018 figures to the thousand and its 2019 comparatives of them to the
    million)."""
    unit = 1e9
    while unit > 1 and abs(value / unit - round(value / unit)) > 1e-6:
        unit /= 10
    return unit


def _agree(a: float, b: float, *operands: float, relative: float = AGREEMENT) -> bool:
    """Two figures equal up to `relative` and to rounding: each figure, and each operand of
    one that is a sum or difference, may be off by half its own rounding unit. Filings state
    amounts in millions at the coarsest; a figure that merely looks rounder (3,000,000,000)
    is not taken to be rounded to the billion."""
    allowance = sum(min(_rounding_unit(value), 1e6) for value in (a, b, *operands))
    return abs(a - b) <= max(relative * max(abs(a), abs(b)), allowance)


def _one_figure(earlier: float, later: float) -> bool:
    """Whether a later filing's figure is the earlier one, restated in nothing but form: the
    same, its sign or units slip corrected (NVIDIA's FY2013 10-K gave FY2011 income taxes
    paid as 1,071,000 where its FY2011 10-K had -1,071,000), or rounded to a coarser unit
    (the 10-K NVIDIA filed for FY2016, in millions, repeats FY2014 interest expense of 10,443,000 as
    10,000,000)."""
    if earlier in (later, -later) or _scale_apart(earlier, later):
        return True
    unit = _rounding_unit(later)
    return _rounding_unit(earlier) < unit and abs(round(earlier / unit) * unit - later) < 1


# Each quarter's year-to-date period: Q1 is its own, Q4's is the fiscal year.
_YEAR_TO_DATE: dict[int, str] = {1: "quarterly", 2: SIX_MONTHS, 3: NINE_MONTHS, 4: "annual"}


def _year_to_date_name(year: int, quarter: int) -> str:
    return f"FY{year}" if quarter == 4 else ("Q1", "6M", "9M")[quarter - 1]


def _consistent_operands(
    year: int, quarter: int, minuend: _Value, subtrahend: _Value
) -> tuple[_Fact, _Fact, str]:
    """The two year-to-date figures a quarter is the difference of, as they stood together,
    and what a provenance says when that is not the latest minuend or subtrahend.

    Each figure on its own is the latest filing's (restatements win), but a later 10-K often
    restates the year while no filing restates the nine months again: Apple's FY2017 10-K
    restated FY2015 dividends paid (11,431M to 11,561M), and the FY2015 quarters and nine
    months were never filed again. The restated year minus the nine months as filed would put
    the whole year's restatement into Q4, a quarter no filing supports. So the minuend is
    taken as first filed after the subtrahend's last filing: the nine months and the year the
    company filed next, one basis (a restatement that reached both, like Apple's FY2016
    dividends restated in a 10-Q and then the 10-K, gives the latest of both). Restating
    the quarters instead is not possible (no filing gives them), so that year's quarters add
    up to the year as then filed, and its annual figure says so (`_restated_years_marked`).
    Where the minuend was never filed after the subtrahend, the subtrahend is taken as it
    stood at the minuend's last filing, by the same reasoning. A change that only corrects a
    slip or rounds the figure (`_one_figure`) is no change of basis: the latest stands.
    """
    later_name = _year_to_date_name(year, quarter)
    earlier_name = _year_to_date_name(year, quarter - 1)
    last_subtrahend = max(fact.filed for fact in subtrahend.history)
    after = [fact for fact in minuend.history if fact.filed >= last_subtrahend]
    if after:
        if _one_figure(after[0].value, minuend.fact.value):
            return minuend.fact, subtrahend.fact, ""
        note = (
            f"; {later_name} as filed before its restatement in {minuend.fact.accession} "
            f"(no later {earlier_name} was filed)"
        )
        return _first_of_run(minuend.history, after[0]), subtrahend.fact, note
    last_minuend = max(fact.filed for fact in minuend.history)
    before = [fact for fact in subtrahend.history if fact.filed <= last_minuend]
    if not before or _one_figure(before[-1].value, subtrahend.fact.value):
        return minuend.fact, subtrahend.fact, ""
    note = (
        f"; {earlier_name} as filed before its restatement in {subtrahend.fact.accession} "
        f"(no later {later_name} was filed)"
    )
    return minuend.fact, _first_of_run(subtrahend.history, before[-1]), note


def _first_of_run(history: Sequence[_Fact], fact: _Fact) -> _Fact:
    """The first of the filings just before `fact` that report its value: like `_settle`,
    a figure is cited from the filing that first reported it, not from one that repeated it."""
    first = fact
    for earlier in reversed(history[: history.index(fact)]):
        if earlier.value != fact.value:
            break
        first = earlier
    return first


@dataclass(frozen=True)
class _YearFigures:
    """One source's figures of one fiscal year."""

    year: int
    year_to_date: Mapping[int, _Value]  # quarter → Q1, 6M, 9M, FY
    three_months: Mapping[int, _Value]  # quarter → the three-month figure

    def difference(self, quarter: int) -> _Value | None:
        """Quarter 2-4 as the year-to-date figure minus the one a quarter shorter, both
        from the same start (the fiscal year's first day)."""
        minuend, subtrahend = self.year_to_date.get(quarter), self.year_to_date.get(quarter - 1)
        if minuend is None or subtrahend is None:
            return None
        later, earlier, note = _consistent_operands(self.year, quarter, minuend, subtrahend)
        start = earlier.end + timedelta(days=1)
        if later.start != earlier.start or not (
            QUARTER_MIN_DAYS <= (later.end - start).days <= QUARTER_MAX_DAYS
        ):
            return None
        fact = replace(later, start=start, value=later.value - earlier.value)
        provenance = (
            f"derived:{_year_to_date_name(self.year, quarter)}({later.accession})"
            f"-{_year_to_date_name(self.year, quarter - 1)}({earlier.accession}){note}"
        )
        return _Value(fact, None, provenance)


def _year_figures(
    options: Mapping[_Period, Mapping[str, _Value]], source: str, year: int
) -> _YearFigures:
    def of(period_type: str, quarter: int) -> _Value | None:
        return options.get(_Period(period_type, year, quarter), {}).get(source)

    return _YearFigures(
        year,
        year_to_date={
            q: v
            for q, period_type in _YEAR_TO_DATE.items()
            if (v := of(period_type, 0 if period_type == "annual" else q)) is not None
        },
        three_months={q: v for q in (1, 2, 3, 4) if (v := of("quarterly", q)) is not None},
    )


def _discrete_quarter(figures: _YearFigures, quarter: int, derive: bool) -> _Value | None:
    """A quarter from one source: the three-month figure as reported, else the difference of
    two year-to-date figures (10-Qs file cash flows only year to date; Q4 is rarely filed on
    its own). A three-month figure that disagrees with the year-to-date figures of the very
    filing that reports it gives way to them: the filing contradicts itself, and its
    year-to-date figures are the ones that add up to the audited year (Tesla's Q2 2012 10-Q:
    depreciation of 3.7M for the quarter, but 6.9M for six months after 3.8M in Q1)."""
    reported = figures.three_months.get(quarter)
    derived = figures.difference(quarter) if derive and quarter > 1 else None
    if reported is None or derived is None:
        return reported or derived
    if reported.fact.accession == derived.fact.accession and not _agree(
        reported.fact.value,
        derived.fact.value,
        figures.year_to_date[quarter].fact.value,
        figures.year_to_date[quarter - 1].fact.value,
    ):
        return replace(
            derived,
            provenance=f"{derived.provenance}; the three-month figure filed, "
            f"{reported.fact.value:,.0f}, does not fit the filing's year-to-date figures",
        )
    return reported


def _additive_quarters(
    metric: Metric, chosen: Mapping[_Period, _Value], options: Mapping[_Period, dict[str, _Value]]
) -> dict[tuple[int, int], _Value]:
    """(fiscal year, quarter) → a dollar flow's discrete quarter.

    The tag fallback applies per fiscal year, not per quarter: a year's quarters come from
    the source of its annual figure (the source most of its periods were read from while it
    has none), so they add up to it. Alphabet files share-based compensation for the first
    quarter and the year only as the cash flow add-back; its Q2 and Q3 come from the
    six- and nine-month add-backs, not from the expense line (a different figure) that is
    the only three-month one filed. Only a quarter the year's source cannot give falls back
    to another source's three-month figure; Q4 last to the year minus Q1+Q2+Q3.
    """
    order = _sources(metric)
    quarters: dict[tuple[int, int], _Value] = {}
    for year in sorted({period.fiscal_year for period in chosen}):
        used = Counter(v.provenance for p, v in chosen.items() if p.fiscal_year == year)
        annual = chosen.get(_Period("annual", year, 0))
        ranked = sorted(used, key=order.index)
        primary = annual.provenance if annual is not None else max(ranked, key=used.__getitem__)
        sources = [primary, *(source for source in ranked if source != primary)]
        figures = {source: _year_figures(options, source, year) for source in sources}
        for quarter in (1, 2, 3, 4):
            for source in sources:
                value = _discrete_quarter(figures[source], quarter, derive=source == primary)
                if value is not None:
                    quarters[(year, quarter)] = value
                    break
        if annual is not None and (year, 4) not in quarters:
            fourth = _fourth_quarter_from_three(
                year, figures[primary], [quarters.get((year, q)) for q in (1, 2, 3)]
            )
            if fourth is not None:
                quarters[(year, 4)] = fourth
    return quarters


def _fourth_quarter_from_three(
    year: int, figures: _YearFigures, first_three: Sequence[_Value | None]
) -> _Value | None:
    """Q4 as the fiscal year minus Q1+Q2+Q3, where there are no nine months to subtract;
    cited from the 10-K (the filing that completes the year)."""
    annual_value = figures.year_to_date.get(4)
    quarters = [value for value in first_three if value is not None]
    if annual_value is None or len(quarters) != 3:
        return None
    annual = annual_value.fact
    if quarters[0].fact.start != annual.start or not _contiguous(quarters):
        return None
    start = quarters[-1].fact.end + timedelta(days=1)
    # The remainder must itself be a quarter; otherwise the operands do not fit together.
    if not QUARTER_MIN_DAYS <= (annual.end - start).days <= QUARTER_MAX_DAYS:
        return None
    operands = "-".join(
        f"Q{number}({value.fact.accession})" for number, value in enumerate(quarters, 1)
    )
    fact = replace(annual, start=start, value=annual.value - sum(v.fact.value for v in quarters))
    return _Value(fact, None, f"derived:FY{year}({annual.accession})-{operands}")


def _restated_years_marked(
    chosen: Mapping[_Period, _Value], quarters: Mapping[tuple[int, int], _Value]
) -> dict[_Period, _Value]:
    """Annual figures restated after their quarters were filed, marked where the quarters
    add up to the year as filed earlier but not to the restated year: the quarters stay as
    filed (see `_consistent_operands`), and the provenance tells a reader why they do not
    add up to the year."""
    marked = dict(chosen)
    for period, annual in chosen.items():
        year_quarters = [quarters.get((period.fiscal_year, q)) for q in (1, 2, 3, 4)]
        if period.period_type != "annual" or None in year_quarters:
            continue
        figures = [value.fact.value for value in year_quarters if value is not None]
        total = sum(figures)
        if _agree(total, annual.fact.value):
            continue
        # Up to rounding only: "add up to" is a claim about the filed figures.
        earlier = [fact for fact in annual.history if fact.value != annual.fact.value]
        match = next((f for f in earlier if _agree(total, f.value, *figures, relative=0.0)), None)
        if match is not None:
            marked[period] = replace(
                annual,
                provenance=f"{annual.provenance}; restated from {match.value:,.0f} (filed in "
                f"{match.accession}), which its quarters, not restated, add up to",
            )
    return marked


def _quarters(
    metric: Metric, chosen: Mapping[_Period, _Value], options: Mapping[_Period, dict[str, _Value]]
) -> dict[tuple[int, int], _Value]:
    """(fiscal year, quarter) → value: the discrete quarters as reported, plus Q4 where it
    was not reported (a balance's Q4 is its fiscal year end balance; a per-share figure or
    a share count is never subtracted)."""
    if _is_additive(metric):
        return _additive_quarters(metric, chosen, options)
    quarters = {
        (period.fiscal_year, period.fiscal_quarter): value
        for period, value in chosen.items()
        if period.period_type == "quarterly"
    }
    if metric.kind == "instant":
        for period, annual in chosen.items():
            if period.period_type == "annual":
                quarters.setdefault((period.fiscal_year, 4), annual)
    return quarters


def _previous_quarter(year: int, quarter: int) -> tuple[int, int]:
    return (year, quarter - 1) if quarter > 1 else (year - 1, 4)


def _trailing_twelve_months(
    quarters: Mapping[tuple[int, int], _Value],
) -> dict[tuple[int, int], _Value]:
    """(fiscal year, quarter) → the sum of that quarter and the three before it, where all
    four exist and follow each other without a gap; cited from the latest quarter's filing."""
    trailing: dict[tuple[int, int], _Value] = {}
    for key, last in quarters.items():
        keys = [key]
        for _ in range(3):
            keys.append(_previous_quarter(*keys[-1]))
        keys.reverse()
        window = [quarters.get(k) for k in keys]
        values = [value for value in window if value is not None]
        if len(values) != 4 or not _contiguous(values):
            continue
        first = values[0]
        fact = replace(
            last.fact, start=first.fact.start, value=sum(value.fact.value for value in values)
        )
        names = "+".join(f"Q{quarter}FY{year}" for year, quarter in keys)
        trailing[key] = _Value(fact, None, f"derived:TTM({names})")
    return trailing


def _record(symbol: str, metric: Metric, period: _Period, value: _Value) -> MetricValueRecord:
    fact = value.fact
    return MetricValueRecord(
        symbol=symbol,
        metric=metric.id,
        period_type=period.period_type,
        fiscal_year=period.fiscal_year,
        fiscal_quarter=period.fiscal_quarter,
        period_start=fact.start if metric.kind == "flow" else None,
        period_end=fact.end,
        value=float(fact.value),
        unit=metric.unit,
        form=fact.form,
        accession=fact.accession,
        xbrl_tag=value.xbrl_tag,
        filed=fact.filed,
        provenance=value.provenance,
    )


def parse_companyfacts(doc: Mapping[str, Any], symbol: str) -> list[MetricValueRecord]:
    """The annual, quarterly and TTM values of every catalog metric in a companyfacts
    document, sorted by (symbol, metric, period type, fiscal year, fiscal quarter)."""
    gaap = _with_parsed_facts(_us_gaap(doc))
    year_ends = fiscal_calendar(gaap)
    calendar = _Calendar(year_ends, quarter_calendar(gaap, fiscal_years(gaap, year_ends)))
    records: list[MetricValueRecord] = []
    for metric in CATALOG:
        chosen, options = _series(gaap, metric, calendar)
        quarters = _quarters(metric, chosen, options)
        if _is_additive(metric):
            chosen = _restated_years_marked(chosen, quarters)
        for period, value in chosen.items():
            if period.period_type == "annual":
                records.append(_record(symbol, metric, period, value))
        for (year, quarter), value in quarters.items():
            records.append(_record(symbol, metric, _Period("quarterly", year, quarter), value))
        if _is_additive(metric):
            for (year, quarter), value in _trailing_twelve_months(quarters).items():
                records.append(_record(symbol, metric, _Period("ttm", year, quarter), value))
    return sorted(
        records,
        key=lambda r: (r.symbol, r.metric, r.period_type, r.fiscal_year, r.fiscal_quarter),
    )


# --- companies -------------------------------------------------------------------


@dataclass(frozen=True)
class WellKnownNames:
    display_name: str | None  # when the SEC spelling cannot be cased back ("NVIDIA CORP")
    aliases: tuple[str, ...]


# What users call these companies, keyed by 10-digit CIK: names the SEC name and former
# names ("apple computer") do not yield, plus the obvious ones so they never depend on
# how EDGAR happens to spell the registered name. Duplicates are dropped.
WELL_KNOWN_NAMES: dict[str, WellKnownNames] = {
    "0000320193": WellKnownNames(None, ("apple",)),
    "0001045810": WellKnownNames("NVIDIA", ("nvidia",)),
    "0001652044": WellKnownNames(None, ("google",)),
    "0001318605": WellKnownNames(None, ("tesla", "tesla motors")),
}

# Legal-form words and state or form tags SEC appends: "NVIDIA CORP/CA", "APPLE COMPUTER INC/ FA",
# "TESLA MOTORS INC/DE/", "COSTCO WHOLESALE CORP /NEW".
_STATE_TAG = re.compile(r"\s*/\s*[A-Za-z]{2,3}\s*/?\s*$")
_LEGAL_SUFFIX = re.compile(
    r"[\s,]+(inc|incorporated|corp|corporation|co|company|ltd|limited|llc|plc|lp|l\.p)\.?$",
    re.IGNORECASE,
)


def common_name(sec_name: str) -> str:
    """The SEC name without legal suffixes: "NVIDIA CORP" → "NVIDIA", "Tesla, Inc." → "Tesla"."""
    name = _STATE_TAG.sub("", sec_name.strip())
    while True:
        shorter = _LEGAL_SUFFIX.sub("", name).rstrip(" ,&")
        if shorter == name or not shorter:
            return name
        name = shorter


def display_name(cik: str, sec_name: str) -> str:
    known = WELL_KNOWN_NAMES.get(cik)
    if known is not None and known.display_name:
        return known.display_name
    name = common_name(sec_name)
    # All capitals is how EDGAR stores many names, not how people write them.
    return name.title() if name.isupper() else name


def company_aliases(cik: str, names: list[str]) -> tuple[str, ...]:
    """Lowercase common names from the current and former SEC names plus the well-known ones:
    ["Apple Inc.", "APPLE COMPUTER INC/ FA"] → ("apple", "apple computer"), each once."""
    known = WELL_KNOWN_NAMES.get(cik)
    candidates = [common_name(name).lower() for name in names]
    candidates += list(known.aliases) if known is not None else []
    return tuple(dict.fromkeys(alias for alias in candidates if alias))


def merged_array_sql(first: str, then: str) -> str:
    """SQL for the elements of two text[] expressions, each once, in the order first seen:
    a company row's upserts keep every ticker and name any source gave it, its primary
    symbol first."""
    return (
        f"ARRAY(SELECT e FROM unnest({first} || {then}) WITH ORDINALITY AS u(e, n) "
        "GROUP BY e ORDER BY min(n))"
    )


def normalize_cik(raw: Any) -> str:
    try:
        return f"{int(raw):010d}"
    except (TypeError, ValueError) as error:
        raise IngestError(f"not a CIK: {raw!r}") from error


def normalize_symbol(raw: str) -> str:
    symbol = raw.strip().upper()
    if not _SYMBOL.match(symbol):
        raise IngestError(f"not a ticker symbol: {raw!r} (letters, '.' or '-', up to 10)")
    return symbol


def submissions_tickers(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The `tickers` of a submissions JSON, SEC's order (the main class first), each valid
    one once: ["GOOGL", "GOOG"]."""
    tickers: list[str] = []
    for raw in doc.get("tickers") or []:
        try:
            ticker = normalize_symbol(raw) if isinstance(raw, str) else None
        except IngestError:
            continue
        if ticker is not None and ticker not in tickers:
            tickers.append(ticker)
    return tuple(tickers)


def former_names(doc: Mapping[str, Any]) -> list[str]:
    """The `formerNames` of a submissions JSON as SEC spells them, latest first."""
    return [
        f["name"]
        for f in doc.get("formerNames") or []
        if isinstance(f, Mapping) and isinstance(f.get("name"), str)
    ]


def company_from_submissions(doc: Mapping[str, Any]) -> CompanyRecord:
    """The company an SEC submissions JSON describes: its first ticker is the symbol, all of
    them its tickers, and its former names ("APPLE COMPUTER INC") aliases ("apple computer")."""
    tickers = submissions_tickers(doc)
    name = doc.get("name")
    if not tickers or not isinstance(name, str):
        raise IngestError("the submissions JSON has no ticker or name; pass --symbol")
    cik = normalize_cik(doc.get("cik"))
    return CompanyRecord(
        symbol=tickers[0],
        cik=cik,
        name=name,
        display_name=display_name(cik, name),
        fiscal_year_end=doc.get("fiscalYearEnd") or None,
        aliases=company_aliases(cik, [name, *former_names(doc)]),
        tickers=tickers,
    )


def company_from_companyfacts(doc: Mapping[str, Any], symbol: str) -> CompanyRecord:
    """A company record from companyfacts alone, for when no submissions JSON is at hand."""
    cik = normalize_cik(doc.get("cik"))
    name = str(doc.get("entityName") or symbol)
    year_ends = fiscal_calendar(_us_gaap(doc))
    # SEC's fiscalYearEnd is the month and day of the latest fiscal year end too.
    fiscal_year_end = max(year_ends).strftime("%m%d") if year_ends else None
    return CompanyRecord(
        symbol=normalize_symbol(symbol),
        cik=cik,
        name=name,
        display_name=display_name(cik, name),
        fiscal_year_end=fiscal_year_end,
        aliases=company_aliases(cik, [name]),
        splits=stock_splits(doc),
    )


def read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError) as error:
        raise IngestError(f"cannot read {path}: {error}") from error
    if not isinstance(doc, dict):
        raise IngestError(f"{path} does not hold a JSON object")
    return doc


def find_submissions(companyfacts_path: Path, cik: str) -> Path | None:
    """PATH/../submissions/CIK##########.json beside the companyfacts directory, if present."""
    candidate = companyfacts_path.resolve().parent.parent / SUBMISSIONS_DIR / f"CIK{cik}.json"
    return candidate if candidate.is_file() else None


def company_for_companyfacts(
    path: Path, doc: Mapping[str, Any], symbol: str | None = None
) -> CompanyRecord:
    """The company a companyfacts file is about, with the stock splits its facts state.

    An explicit symbol wins; the name, fiscal year end, tickers and aliases still come
    from a sibling submissions JSON when there is one.
    """
    cik = normalize_cik(doc.get("cik"))
    submissions = find_submissions(path, cik)
    if submissions is not None:
        company = company_from_submissions(read_json(submissions))
        company = replace(company, splits=stock_splits(doc))
        return replace(company, symbol=normalize_symbol(symbol)) if symbol else company
    if symbol:
        return company_from_companyfacts(doc, symbol)
    raise IngestError(
        f"no ticker for CIK {cik} in {path}: there is no "
        f"../{SUBMISSIONS_DIR}/CIK{cik}.json beside it; pass --symbol TICKER"
    )
