"""Parse SEC XBRL companyfacts JSON into annual metric values with provenance (no database).

A companyfacts document repeats each fact once per filing that reports it: a
10-K carries its own fiscal year and two or more earlier ones. The rules that
turn that into one value per (metric, fiscal year):

- Annual only. A flow (income, cash flow) is a 10-K fact lasting 350-380 days;
  an instant (balance sheet) is a 10-K fact dated on a fiscal year end, i.e. on
  a date some annual flow of the company also ends on.
- The fiscal year comes from the period's own end date, never from the `fy`
  label of the filing a value was read from (that label names the filing's
  year, not the comparative years it repeats). See `fiscal_calendar`.
- The same (tag, fiscal year) in several filings: the value of the latest
  `filed` wins, then the later accession, so restatements replace what they
  restate; the citation is the first filing that reported that value (`_settle`).
- Tags are ordered fallbacks per metric; each fiscal year takes the first tag
  with a value for it, so a company that changed tags (Apple: SalesRevenueNet,
  then Revenues, then RevenueFromContractWithCustomerExcludingAssessedTax) keeps
  an unbroken series. For revenue a candidate below `PLAUSIBILITY_FLOOR` of
  another revenue tag's value for the same year is skipped: a "revenue" that
  small is a segment or partial figure (Tesla's SalesRevenueGoodsNet is
  automotive sales only).
- Only where no tag has a value for a year, a few documented derivations
  (`DERIVATIONS`) fill in, with provenance "derived:<Minuend>-<Subtrahend>".
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import date
from pathlib import Path
from typing import Any

from shared.metric_catalog import CATALOG, Metric

ANNUAL_MIN_DAYS = 350
ANNUAL_MAX_DAYS = 380
# Mean Gregorian year: 52/53-week fiscal years drift around it but never by half a year.
DAYS_PER_YEAR = 365.2425

# companyfacts names per-share units "USD/shares"; the catalog says "USD/share".
XBRL_UNITS: dict[str, str] = {"USD": "USD", "USD/share": "USD/shares"}

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
    def recency(self) -> tuple[date, date, str, float]:
        # Later end first only matters if two ends ever share a fiscal year (a changed
        # fiscal year end); then latest filed, later accession; the value keeps it total.
        return (self.end, self.filed, self.accession, self.value)


def _parse_date(raw: Any) -> date | None:
    try:
        return date.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _annual_report_facts(tag: str, raw_facts: Any) -> Iterator[_Fact]:
    """The facts of one tag and unit that come from 10-K forms (10-K, 10-K/A, 10-KT)."""
    for raw in raw_facts if isinstance(raw_facts, list) else ():
        form = raw.get("form")
        if not isinstance(form, str) or not form.startswith("10-K"):
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


def _qualifying_facts(
    gaap: Mapping[str, Any], tag: str, metric: Metric, calendar: Mapping[date, int]
) -> Iterator[tuple[int, _Fact]]:
    """(fiscal year, fact) for the annual facts of one tag in the metric's unit."""
    body = gaap.get(tag)
    if not isinstance(body, Mapping):
        return
    raw_facts = body.get("units", {}).get(XBRL_UNITS[metric.unit])
    for fact in _annual_report_facts(tag, raw_facts):
        if metric.kind == "flow" and not fact.is_annual_flow:
            continue
        if metric.kind == "instant" and fact.start is not None:
            continue
        fiscal_year = calendar.get(fact.end)
        # Instants dated off a fiscal year end (e.g. a mid-year acquisition date) are skipped.
        if fiscal_year is not None:
            yield fiscal_year, fact


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


def _settle_per_year(facts: Iterator[tuple[int, _Fact]]) -> dict[int, _Fact]:
    by_year: dict[int, list[_Fact]] = {}
    for fiscal_year, fact in facts:
        by_year.setdefault(fiscal_year, []).append(fact)
    return {year: _settle(year_facts) for year, year_facts in by_year.items()}


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
    gaap: Mapping[str, Any], derivation: Derivation, metric: Metric, calendar: Mapping[date, int]
) -> Iterator[tuple[int, _Fact]]:
    """(fiscal year, minuend fact carrying the difference) for each filing and period that
    reports both operands; operands from different filings are never mixed."""
    subtrahends = {
        (year, fact.accession, fact.start, fact.end): fact
        for year, fact in _qualifying_facts(gaap, derivation.subtrahend, metric, calendar)
    }
    for year, fact in _qualifying_facts(gaap, derivation.minuend, metric, calendar):
        other = subtrahends.get((year, fact.accession, fact.start, fact.end))
        if other is not None:
            yield year, replace(fact, value=fact.value - other.value)


def _record(
    symbol: str,
    metric: Metric,
    fiscal_year: int,
    fact: _Fact,
    xbrl_tag: str | None,
    provenance: str,
) -> MetricValueRecord:
    return MetricValueRecord(
        symbol=symbol,
        metric=metric.id,
        period_type="annual",
        fiscal_year=fiscal_year,
        fiscal_quarter=0,
        period_start=fact.start if metric.kind == "flow" else None,
        period_end=fact.end,
        value=float(fact.value),
        unit=metric.unit,
        form=fact.form,
        accession=fact.accession,
        xbrl_tag=xbrl_tag,
        filed=fact.filed,
        provenance=provenance,
    )


def parse_companyfacts(doc: Mapping[str, Any], symbol: str) -> list[MetricValueRecord]:
    """The annual values of every catalog metric in a companyfacts document, sorted."""
    gaap = _us_gaap(doc)
    calendar = fiscal_calendar(gaap)
    records: list[MetricValueRecord] = []
    for metric in CATALOG:
        per_tag = {
            tag: _settle_per_year(_qualifying_facts(gaap, tag, metric, calendar))
            for tag in metric.xbrl_tags
        }
        years: set[int] = set().union(*per_tag.values())
        for year in sorted(years):
            candidates = [per_tag[tag][year] for tag in metric.xbrl_tags if year in per_tag[tag]]
            fact = _choose_plausible(metric.id, candidates)
            if fact is not None:
                provenance = f"xbrl:us-gaap:{fact.tag}"
                records.append(_record(symbol, metric, year, fact, fact.tag, provenance))
        for derivation in DERIVATIONS.get(metric.id, ()):
            derived = _settle_per_year(_derived(gaap, derivation, metric, calendar))
            for year, fact in sorted(derived.items()):
                if year in years:
                    continue
                years.add(year)
                records.append(_record(symbol, metric, year, fact, None, derivation.provenance))
    return sorted(records, key=lambda r: (r.symbol, r.metric, r.fiscal_year))


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
