"""Parse SEC XBRL companyfacts JSON into annual, quarterly and TTM metric values with provenance.

A companyfacts document repeats each fact once per filing that reports it: a
10-K carries its own fiscal year and two or more earlier ones, a 10-Q its
quarter and the same quarter a year earlier. The rules that turn that into one
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
- Q4 is rarely filed on its own: a dollar flow's Q4 is the fiscal year minus
  the 10-Q nine-month year-to-date (or minus Q1+Q2+Q3), provenance
  "derived:FY<year>(<accession>)-9M(<accession>)"; an instant's Q4 is the
  fiscal year end balance. Per-share figures are never subtracted (the share
  counts differ), so EPS has a Q4 only where a three-month Q4 was reported.
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
  automotive sales only).
- Only where no tag has a value for a period, a few documented derivations
  (`DERIVATIONS`) fill in, with provenance "derived:<Minuend>-<Subtrahend>".
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
# A nine-month year-to-date is three such quarters: 272 days, 279 with a 14-week quarter.
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
# The internal period type of a nine-month year-to-date; it is only an operand of Q4.
NINE_MONTHS = "9M"

# companyfacts names per-share units "USD/shares"; the catalog says "USD/share". Share
# counts are "shares" in both.
XBRL_UNITS: dict[str, str] = {"USD": "USD", "USD/share": "USD/shares", "shares": "shares"}

# Only revenue gets the check: its fallback tags are alternative names for one total,
# whereas e.g. NetIncomeLoss may legitimately be far below ProfitLoss (large minority
# interests), so a small value there is not evidence of a partial figure.
PLAUSIBILITY_FLOOR: dict[str, float] = {"revenue": 0.5}

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
    """One row of `companies`."""

    symbol: str
    cik: str  # 10 digits, zero-padded, as EDGAR file names write it
    name: str  # as SEC registers it: "Apple Inc.", "NVIDIA CORP"
    display_name: str  # what answers say: "Apple", "NVIDIA"
    fiscal_year_end: str | None  # "0926", as SEC writes it
    aliases: tuple[str, ...]  # lowercase names users say: "apple", "google"


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


def _report_facts(
    tag: str, raw_facts: Any, forms: tuple[str, ...] = REPORT_FORMS
) -> Iterator[_Fact]:
    """The facts of one tag and unit that come from the given forms (by prefix)."""
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
    period_type: str  # "annual", "quarterly" or NINE_MONTHS
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


def _settle_per_period(facts: Iterator[tuple[_Key, _Fact]]) -> dict[_Key, _Fact]:
    by_period: dict[_Key, list[_Fact]] = {}
    for period, fact in facts:
        by_period.setdefault(period, []).append(fact)
    return {period: _settle(period_facts) for period, period_facts in by_period.items()}


def _choose_plausible(metric_id: str, candidates: list[_Fact]) -> _Fact | None:
    """The first candidate (in tag order) that is not implausibly small next to the others."""
    floor = PLAUSIBILITY_FLOOR.get(metric_id)
    for index, fact in enumerate(candidates):
        others = [abs(other.value) for j, other in enumerate(candidates) if j != index]
        if floor is not None and others and abs(fact.value) < floor * max(others):
            continue
        return fact
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


@dataclass(frozen=True)
class _Value:
    """A figure for one period: the fact carries value, period and cited filing."""

    fact: _Fact
    xbrl_tag: str | None
    provenance: str


def _series(
    gaap: Mapping[str, Any], metric: Metric, calendar: _Calendar
) -> tuple[dict[_Period, _Value], dict[_Period, dict[str, _Value]]]:
    """The metric's value per period (tag fallback, plausibility, derivations), and every
    period's candidates by provenance, so Q4 can subtract a nine-month figure read the same
    way as the fiscal year it is subtracted from."""
    chosen: dict[_Period, _Value] = {}
    options: dict[_Period, dict[str, _Value]] = {}
    per_tag = {
        tag: _settle_per_period(_qualifying_facts(gaap, tag, metric, calendar))
        for tag in metric.xbrl_tags
    }
    for tag, settled in per_tag.items():
        for period, fact in settled.items():
            options.setdefault(period, {})[f"xbrl:us-gaap:{tag}"] = _Value(
                fact, tag, f"xbrl:us-gaap:{tag}"
            )
    periods: set[_Period] = set().union(*per_tag.values())
    for period in periods:
        candidates = [per_tag[tag][period] for tag in metric.xbrl_tags if period in per_tag[tag]]
        fact = _choose_plausible(metric.id, candidates)
        if fact is not None:
            chosen[period] = _Value(fact, fact.tag, f"xbrl:us-gaap:{fact.tag}")
    for derivation in DERIVATIONS.get(metric.id, ()):
        derived = _settle_per_period(_derived(gaap, derivation, metric, calendar))
        for period, fact in derived.items():
            value = _Value(fact, None, derivation.provenance)
            options.setdefault(period, {})[derivation.provenance] = value
            # Only where no tag has a value; the first derivation that has one wins.
            if period not in periods:
                periods.add(period)
                chosen[period] = value
    return chosen, options


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


def _derived_fourth_quarter(
    year: int,
    annual: _Value,
    nine_months: _Value | None,
    first_three: Sequence[_Value | None],
) -> _Value | None:
    """Q4 of a dollar flow: the fiscal year minus its nine-month year-to-date, else minus
    Q1+Q2+Q3; cited from the 10-K (the filing that completes the year)."""
    fiscal_year = f"FY{year}({annual.fact.accession})"
    quarters = [value for value in first_three if value is not None]
    if nine_months is not None and nine_months.fact.start == annual.fact.start:
        subtrahend = nine_months.fact.value
        start = nine_months.fact.end + timedelta(days=1)
        provenance = f"derived:{fiscal_year}-9M({nine_months.fact.accession})"
    elif (
        len(quarters) == 3 and quarters[0].fact.start == annual.fact.start and _contiguous(quarters)
    ):
        subtrahend = sum(value.fact.value for value in quarters)
        start = quarters[-1].fact.end + timedelta(days=1)
        operands = "-".join(
            f"Q{number}({value.fact.accession})" for number, value in enumerate(quarters, 1)
        )
        provenance = f"derived:{fiscal_year}-{operands}"
    else:
        return None
    # The remainder must itself be a quarter; otherwise the operands do not fit together.
    if not QUARTER_MIN_DAYS <= (annual.fact.end - start).days <= QUARTER_MAX_DAYS:
        return None
    fact = replace(annual.fact, start=start, value=annual.fact.value - subtrahend)
    return _Value(fact, None, provenance)


def _quarters(
    metric: Metric, chosen: Mapping[_Period, _Value], options: Mapping[_Period, dict[str, _Value]]
) -> dict[tuple[int, int], _Value]:
    """(fiscal year, quarter) → value: the discrete quarters as reported, plus Q4 where it
    was not reported."""
    quarters = {
        (period.fiscal_year, period.fiscal_quarter): value
        for period, value in chosen.items()
        if period.period_type == "quarterly"
    }
    for period, annual in chosen.items():
        if period.period_type != "annual" or (period.fiscal_year, 4) in quarters:
            continue
        year = period.fiscal_year
        if metric.kind == "instant":
            quarters[(year, 4)] = annual
        elif _is_additive(metric):
            # The nine months read the way the year was (same tag or derivation), so
            # the difference is never a difference of two definitions.
            nine = options.get(_Period(NINE_MONTHS, year, 3), {}).get(annual.provenance)
            first_three = [quarters.get((year, number)) for number in (1, 2, 3)]
            fourth = _derived_fourth_quarter(year, annual, nine, first_three)
            if fourth is not None:
                quarters[(year, 4)] = fourth
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
    gaap = _us_gaap(doc)
    year_ends = fiscal_calendar(gaap)
    calendar = _Calendar(year_ends, quarter_calendar(gaap, fiscal_years(gaap, year_ends)))
    records: list[MetricValueRecord] = []
    for metric in CATALOG:
        chosen, options = _series(gaap, metric, calendar)
        for period, value in chosen.items():
            if period.period_type == "annual":
                records.append(_record(symbol, metric, period, value))
        quarters = _quarters(metric, chosen, options)
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

# Legal-form words and state tags SEC appends: "NVIDIA CORP/CA", "APPLE COMPUTER INC/ FA".
_STATE_TAG = re.compile(r"\s*/\s*[A-Za-z]{2}\s*$")
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
    """Lowercase common names from the current and former SEC names plus the well-known ones."""
    known = WELL_KNOWN_NAMES.get(cik)
    candidates = [common_name(name).lower() for name in names]
    candidates += list(known.aliases) if known is not None else []
    return tuple(dict.fromkeys(alias for alias in candidates if alias))


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


def company_from_submissions(doc: Mapping[str, Any]) -> CompanyRecord:
    """The company an SEC submissions JSON describes; its first ticker is the symbol."""
    tickers = doc.get("tickers") or []
    name = doc.get("name")
    if not tickers or not isinstance(name, str):
        raise IngestError("the submissions JSON has no ticker or name; pass --symbol")
    cik = normalize_cik(doc.get("cik"))
    former = [f["name"] for f in doc.get("formerNames") or [] if isinstance(f.get("name"), str)]
    return CompanyRecord(
        symbol=normalize_symbol(tickers[0]),
        cik=cik,
        name=name,
        display_name=display_name(cik, name),
        fiscal_year_end=doc.get("fiscalYearEnd") or None,
        aliases=company_aliases(cik, [name, *former]),
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
    """The company a companyfacts file is about.

    An explicit symbol wins; the name, fiscal year end and aliases still come
    from a sibling submissions JSON when there is one.
    """
    cik = normalize_cik(doc.get("cik"))
    submissions = find_submissions(path, cik)
    if submissions is not None:
        company = company_from_submissions(read_json(submissions))
        return replace(company, symbol=normalize_symbol(symbol)) if symbol else company
    if symbol:
        return company_from_companyfacts(doc, symbol)
    raise IngestError(
        f"no ticker for CIK {cik} in {path}: there is no "
        f"../{SUBMISSIONS_DIR}/CIK{cik}.json beside it; pass --symbol TICKER"
    )
