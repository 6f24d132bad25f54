"""Parse SEC submissions JSON into the `filings` table: which reports a company filed, when,
for which fiscal period, and where the document is on EDGAR.

A submissions file (`CIK##########.json`) has the company header and the latest
~1,000 filings under `filings.recent` as parallel column arrays; older filings
sit in page files (`CIK##########-submissions-001.json`, listed in
`filings.files`) that hold the same arrays at top level and no header, so a
page is read with its main file's CIK and fiscal year end.

Forms kept (`KEPT_FORMS`, each with its `/A` amendment): the ones people ask
about by name, i.e. annual and quarterly reports (10-K, 10-KT, 10-Q, 20-F, 40-F),
current reports (8-K, 6-K), the proxy statement (DEF 14A) and IPO/merger
registration statements (S-1, S-4, F-1). Everything else is counted per form
and skipped: insider and holder forms (3, 4, 5, 144, SC 13G) are filed about
the company by others and are most of the volume (Apple: 596 of 1,005 recent
filings are Form 4s) with nothing in the submissions index that says what they
report; shelf registrations and their pricing supplements (S-3ASR, 424B2, FWP)
are debt-issuance plumbing; SEC correspondence, proxy soliciting material and
the like are not what "the company's filings" means to a reader.

Fiscal periods. Only periodic reports get one, because only their report date
is a period end. The fiscal year is the one whose end falls on or after the
report date, with the year named after the calendar year it ends in (NVIDIA's
year ended 2025-01-26 is fiscal 2025). SEC's `fiscalYearEnd` (MMDD) is a
nominal day: 52/53-week years end on a weekday near it, a few days either side
(Apple's "0926" year ended 2023-09-30), so a report date up to
`YEAR_END_GRACE` after the nominal day still closes the year that just ended.
A 10-Q's quarter is the whole number of quarters since the previous year end.
"""

from __future__ import annotations

import calendar
import csv
import io
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from services.ingest.companyfacts import (
    DAYS_PER_YEAR,
    CompanyRecord,
    IngestError,
    company_from_submissions,
    merged_array_sql,
    normalize_cik,
    normalize_symbol,
    read_json,
)

ANNUAL_FORMS = frozenset({"10-K", "10-KT", "20-F", "40-F"})
QUARTERLY_FORMS = frozenset({"10-Q"})
OTHER_FORMS = frozenset({"8-K", "6-K", "DEF 14A", "S-1", "S-4", "F-1"})
_BASE_FORMS = ANNUAL_FORMS | QUARTERLY_FORMS | OTHER_FORMS
KEPT_FORMS = _BASE_FORMS | frozenset(f"{form}/A" for form in _BASE_FORMS)

# Far more than a 52/53-week year drifts from its nominal day (at most a week), far less
# than the 13 weeks to the next quarter end, so no quarter end is ever taken for a year end.
YEAR_END_GRACE = timedelta(days=14)
DAYS_PER_QUARTER = DAYS_PER_YEAR / 4

EDGAR_ARCHIVES = "https://www.sec.gov/Archives/edgar/data"

# An 8-K's primary document description is just "8-K"; its items say what it reports
# (2.02 is an earnings release). Titles as the form names them, shortened where long.
EIGHT_K_ITEMS: dict[str, str] = {
    "1.01": "Entry into a Material Definitive Agreement",
    "1.02": "Termination of a Material Definitive Agreement",
    "1.03": "Bankruptcy or Receivership",
    "1.04": "Mine Safety",
    "1.05": "Material Cybersecurity Incidents",
    "2.01": "Completion of Acquisition or Disposition of Assets",
    "2.02": "Results of Operations and Financial Condition",
    "2.03": "Creation of a Direct Financial Obligation",
    "2.04": "Triggering Events That Accelerate a Financial Obligation",
    "2.05": "Costs Associated with Exit or Disposal Activities",
    "2.06": "Material Impairments",
    "3.01": "Notice of Delisting or Transfer of Listing",
    "3.02": "Unregistered Sales of Equity Securities",
    "3.03": "Material Modification to Rights of Security Holders",
    "4.01": "Changes in Registrant's Certifying Accountant",
    "4.02": "Non-Reliance on Previously Issued Financial Statements",
    "5.01": "Changes in Control of Registrant",
    "5.02": "Departure or Appointment of Directors or Officers",
    "5.03": "Amendments to Articles of Incorporation or Bylaws; Change in Fiscal Year",
    "5.04": "Temporary Suspension of Trading Under Employee Benefit Plans",
    "5.05": "Amendments to or Waiver of the Code of Ethics",
    "5.06": "Change in Shell Company Status",
    "5.07": "Submission of Matters to a Vote of Security Holders",
    "5.08": "Shareholder Director Nominations",
    "7.01": "Regulation FD Disclosure",
    "8.01": "Other Events",
    "9.01": "Financial Statements and Exhibits",
}

_FISCAL_YEAR_END = re.compile(r"^(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])$")
_MAIN_FILE = re.compile(r"^CIK(\d{10})\.json$")
_PAGE_FILE = re.compile(r"^CIK(\d{10})-submissions-\d+\.json$")


@dataclass(frozen=True)
class FilingRecord:
    """One row of `filings`, in column order."""

    accession: str
    symbol: str
    cik: str  # 10 digits, zero-padded
    form: str
    filed: date
    report_date: date | None
    fiscal_year: int | None  # periodic reports only
    fiscal_quarter: int | None  # 0 annual, 1-3 a 10-Q; None for other forms
    primary_document: str | None
    description: str | None
    url: str


FILING_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(FilingRecord))


@dataclass(frozen=True)
class ParsedSubmissions:
    filings: list[FilingRecord]
    skipped: Counter[str]  # form → filings not kept, so nothing is dropped unseen


# --- fiscal periods -----------------------------------------------------------------


def nominal_year_end(year: int, fiscal_year_end: str) -> date:
    """The MMDD day in `year`; a day past the month's end ("0229") is the month's last day."""
    month, day = int(fiscal_year_end[:2]), int(fiscal_year_end[2:])
    return date(year, month, min(day, calendar.monthrange(year, month)[1]))


def fiscal_year_of(period_end: date, fiscal_year_end: str) -> int:
    """The fiscal year a period ending on `period_end` belongs to (see the module doc)."""
    # The previous calendar year counts too: a 53-week year with a nominal end of "1231"
    # can end on 2 January.
    return next(
        year
        for year in (period_end.year - 1, period_end.year, period_end.year + 1)
        if period_end <= nominal_year_end(year, fiscal_year_end) + YEAR_END_GRACE
    )


def fiscal_period(
    form: str, report_date: date | None, fiscal_year_end: str | None
) -> tuple[int | None, int | None]:
    """(fiscal year, fiscal quarter) of a filing: (2023, 0) for a 10-K, (2025, 1) for a
    first-quarter 10-Q, (None, None) for forms with no period or when a date is missing."""
    base = form.removesuffix("/A")
    periodic = base in ANNUAL_FORMS or base in QUARTERLY_FORMS
    if not periodic or report_date is None or not fiscal_year_end:
        return None, None
    year = fiscal_year_of(report_date, fiscal_year_end)
    if base in ANNUAL_FORMS:
        return year, 0
    elapsed = (report_date - nominal_year_end(year - 1, fiscal_year_end)).days
    quarter = round(elapsed / DAYS_PER_QUARTER)
    # A 10-Q more than the grace off a quarter end (a transition period) gets no quarter
    # rather than a guessed one.
    on_a_quarter_end = abs(elapsed - quarter * DAYS_PER_QUARTER) <= YEAR_END_GRACE.days
    return year, quarter if 1 <= quarter <= 3 and on_a_quarter_end else None


# --- parsing ------------------------------------------------------------------------


def filing_url(cik: str, accession: str, primary_document: str | None) -> str:
    """The primary document on EDGAR; without one, the filing's folder."""
    folder = f"{EDGAR_ARCHIVES}/{int(cik)}/{accession.replace('-', '')}"
    return f"{folder}/{primary_document}" if primary_document else f"{folder}/"


def _description(form: str, document_description: str, items: str) -> str | None:
    if form.removesuffix("/A") == "8-K" and items.strip():
        return "; ".join(
            f"Item {item} {EIGHT_K_ITEMS[item]}" if item in EIGHT_K_ITEMS else f"Item {item}"
            for item in (part.strip() for part in items.split(","))
            if item
        )
    return document_description.strip() or None


def _columns(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The column arrays: `filings.recent` of a main file, the top level of a page file."""
    filings = doc.get("filings")
    if isinstance(filings, Mapping):
        recent = filings.get("recent")
        if isinstance(recent, Mapping):
            return recent
    if "accessionNumber" in doc:
        return doc
    raise IngestError("not an SEC submissions document (no filings.recent or accessionNumber)")


def _optional_date(raw: Any) -> date | None:
    try:
        return date.fromisoformat(raw) if isinstance(raw, str) and raw else None
    except ValueError:
        return None


def parse_submissions_page(
    doc: Mapping[str, Any],
    symbol: str,
    *,
    cik: str | None = None,
    fiscal_year_end: str | None = None,
) -> ParsedSubmissions:
    """The kept filings of one submissions file and a count of the skipped ones.

    A page file has no header: pass the `cik` and `fiscal_year_end` of its main file.
    """
    columns = _columns(doc)
    cik = normalize_cik(cik if cik is not None else doc.get("cik"))
    if fiscal_year_end is None:
        fiscal_year_end = doc.get("fiscalYearEnd") or None
    if fiscal_year_end is not None and not _FISCAL_YEAR_END.match(fiscal_year_end):
        raise IngestError(f"not a fiscal year end (MMDD): {fiscal_year_end!r}")
    accessions = columns.get("accessionNumber")
    if not isinstance(accessions, list):
        raise IngestError("the submissions columns have no accessionNumber array")
    count = len(accessions)

    def column(name: str) -> list[Any]:
        values = columns.get(name)
        if values is None:
            return [""] * count
        if not isinstance(values, list) or len(values) != count:
            raise IngestError(f"the submissions column {name!r} does not have {count} entries")
        return values

    forms, filed_dates, report_dates = column("form"), column("filingDate"), column("reportDate")
    documents, descriptions = column("primaryDocument"), column("primaryDocDescription")
    items = column("items")
    filings: list[FilingRecord] = []
    skipped: Counter[str] = Counter()
    for i, accession in enumerate(accessions):
        form = str(forms[i] or "").strip()
        filed = _optional_date(filed_dates[i])
        if form not in KEPT_FORMS:
            skipped[form or "(no form)"] += 1
            continue
        if filed is None or not isinstance(accession, str) or not accession:
            skipped[f"{form} (no accession or filing date)"] += 1
            continue
        report_date = _optional_date(report_dates[i])
        fiscal_year, fiscal_quarter = fiscal_period(form, report_date, fiscal_year_end)
        document = str(documents[i] or "").strip() or None
        filings.append(
            FilingRecord(
                accession=accession,
                symbol=symbol,
                cik=cik,
                form=form,
                filed=filed,
                report_date=report_date,
                fiscal_year=fiscal_year,
                fiscal_quarter=fiscal_quarter,
                primary_document=document,
                description=_description(form, str(descriptions[i] or ""), str(items[i] or "")),
                url=filing_url(cik, accession, document),
            )
        )
    return ParsedSubmissions(filings=sort_filings(filings), skipped=skipped)


def parse_submissions(
    doc: Mapping[str, Any],
    symbol: str,
    *,
    cik: str | None = None,
    fiscal_year_end: str | None = None,
) -> list[FilingRecord]:
    """The kept filings of a main submissions file or (with `cik`) of a page file, sorted."""
    return parse_submissions_page(doc, symbol, cik=cik, fiscal_year_end=fiscal_year_end).filings


def sort_filings(filings: Iterable[FilingRecord]) -> list[FilingRecord]:
    return sorted(filings, key=lambda f: (f.symbol, f.filed, f.accession))


def check_unique_filings(filings: Iterable[FilingRecord]) -> list[FilingRecord]:
    """The filings with exact repeats dropped (a page passed twice); two different
    records for one accession are an error, since the upsert would keep either."""
    by_accession: dict[str, FilingRecord] = {}
    for filing in filings:
        seen = by_accession.setdefault(filing.accession, filing)
        if seen != filing:
            raise IngestError(
                f"accession {filing.accession} is listed for {seen.symbol} and {filing.symbol}"
                if seen.symbol != filing.symbol
                else f"accession {filing.accession} is listed twice with different details"
            )
    return sort_filings(by_accession.values())


# --- files --------------------------------------------------------------------------


@dataclass(frozen=True)
class SubmissionsFiles:
    companies: list[CompanyRecord]
    filings: list[FilingRecord]
    skipped: Counter[str]
    read: list[Path]  # every file parsed, pages included
    pages_absent: list[str]  # pages a main file lists that are not beside it


def _cik_of(path: Path) -> tuple[str, bool]:
    """(CIK, is a page file) from an EDGAR submissions file name."""
    for pattern, is_page in ((_MAIN_FILE, False), (_PAGE_FILE, True)):
        match = pattern.match(path.name)
        if match:
            return match.group(1), is_page
    raise IngestError(
        f"{path}: not an EDGAR submissions file name (CIK##########.json or "
        "CIK##########-submissions-NNN.json)"
    )


def read_submissions_files(paths: Sequence[Path], symbol: str | None = None) -> SubmissionsFiles:
    """Companies and filings of submissions files, each main file with its page files.

    A main file brings the pages it lists that sit beside it; a page file needs its main
    file (passed too, or beside it) for the company and its fiscal year end. `symbol`
    overrides the ticker and is only allowed for one company.
    """
    main: dict[str, Path] = {}
    pages: dict[str, set[Path]] = {}
    for path in paths:
        cik, is_page = _cik_of(path)
        if is_page:
            pages.setdefault(cik, set()).add(path.resolve())
            main.setdefault(cik, path.resolve().parent / f"CIK{cik}.json")
        else:
            main[cik] = path.resolve()
    if symbol and len(main) != 1:
        raise IngestError("--symbol names one company: pass the files of exactly one CIK with it")
    companies: list[CompanyRecord] = []
    filings: list[FilingRecord] = []
    skipped: Counter[str] = Counter()
    read: list[Path] = []
    absent: list[str] = []
    for cik, main_path in sorted(main.items()):
        if not main_path.is_file():
            raise IngestError(
                f"{main_path.name} is needed for the page files of CIK {cik} "
                "(a page has no company or fiscal year end of its own); pass it too"
            )
        doc = read_json(main_path)
        company = company_from_submissions(doc)
        if symbol:
            company = replace(company, symbol=normalize_symbol(symbol))
        if company.cik != cik:
            raise IngestError(f"{main_path} is about CIK {company.cik}, not {cik}")
        company_pages = set(pages.get(cik, ()))
        for listed in (doc.get("filings") or {}).get("files") or []:
            name = listed.get("name") if isinstance(listed, Mapping) else None
            if not isinstance(name, str):
                continue
            beside = main_path.parent / name
            if beside.is_file():
                company_pages.add(beside.resolve())
            elif name not in {page.name for page in company_pages}:
                absent.append(name)
        for path in [main_path, *sorted(company_pages)]:
            parsed = parse_submissions_page(
                doc if path == main_path else read_json(path),
                company.symbol,
                cik=cik,
                fiscal_year_end=company.fiscal_year_end,
            )
            filings.extend(parsed.filings)
            skipped.update(parsed.skipped)
            read.append(path)
        companies.append(company)
    return SubmissionsFiles(
        companies=companies,
        filings=check_unique_filings(filings),
        skipped=skipped,
        read=read,
        pages_absent=sorted(absent),
    )


# --- the dataset's filings.csv ----------------------------------------------------------


def filings_csv(filings: Iterable[FilingRecord]) -> bytes:
    """filings.csv: sorted by symbol, filing date, accession; ISO dates; empty for None."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FILING_COLUMNS)
    for filing in sort_filings(filings):
        writer.writerow(
            [
                "" if value is None else value.isoformat() if isinstance(value, date) else value
                for value in (getattr(filing, column) for column in FILING_COLUMNS)
            ]
        )
    return buffer.getvalue().encode("utf-8")


def read_filings_csv(path: Path) -> tuple[FilingRecord, ...]:
    def optional_int(text: str) -> int | None:
        return int(text) if text else None

    with path.open(newline="", encoding="utf-8") as handle:
        return tuple(
            FilingRecord(
                accession=row["accession"],
                symbol=row["symbol"],
                cik=row["cik"],
                form=row["form"],
                filed=date.fromisoformat(row["filed"]),
                report_date=_optional_date(row["report_date"]),
                fiscal_year=optional_int(row["fiscal_year"]),
                fiscal_quarter=optional_int(row["fiscal_quarter"]),
                primary_document=row["primary_document"] or None,
                description=row["description"] or None,
                url=row["url"],
            )
            for row in csv.DictReader(handle)
        )


# --- PostgreSQL -----------------------------------------------------------------------

_LOAD_TABLE = "finq_filings_load"
_FILING_UPDATES = FILING_COLUMNS[1:]
_UPSERT_FILINGS = f"""
INSERT INTO filings ({", ".join(FILING_COLUMNS)})
SELECT {", ".join(FILING_COLUMNS)} FROM {_LOAD_TABLE}
ON CONFLICT (accession) DO UPDATE SET
    {", ".join(f"{c} = EXCLUDED.{c}" for c in _FILING_UPDATES)}
WHERE ({", ".join(f"filings.{c}" for c in _FILING_UPDATES)})
    IS DISTINCT FROM ({", ".join(f"EXCLUDED.{c}" for c in _FILING_UPDATES)})
"""

# A missing company is added. A row from companyfacts or the bundled dataset keeps its
# names and CIK, and gains only the tickers and aliases (former names) it lacks, after its
# own, so its primary symbol stays first. `inserted` tells an added row from a gaining one;
# a row that gains nothing is not written (and not returned).
_UPSERT_COMPANY_NAMES = f"""
INSERT INTO companies (symbol, cik, name, display_name, fiscal_year_end, aliases, tickers)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (symbol) DO UPDATE SET
    aliases = {merged_array_sql("companies.aliases", "EXCLUDED.aliases")},
    tickers = {merged_array_sql("companies.tickers", "EXCLUDED.tickers")}
WHERE NOT (companies.aliases @> EXCLUDED.aliases AND companies.tickers @> EXCLUDED.tickers)
RETURNING xmax = 0 AS inserted
"""


async def upsert_filings(conn: asyncpg.Connection, filings: Sequence[FilingRecord]) -> int:
    """Upsert filings; call inside a transaction. Returns how many were inserted or changed."""
    # Same COPY-then-upsert as the metric values: one set-based statement, idempotent on
    # reload. Dropped first in case an outer transaction still holds one from an earlier call.
    await conn.execute(f"DROP TABLE IF EXISTS {_LOAD_TABLE}")
    await conn.execute(
        f"CREATE TEMP TABLE {_LOAD_TABLE} (LIKE filings INCLUDING DEFAULTS) ON COMMIT DROP"
    )
    await conn.copy_records_to_table(
        _LOAD_TABLE,
        records=[tuple(getattr(f, c) for c in FILING_COLUMNS) for f in filings],
        columns=list(FILING_COLUMNS),
    )
    status = await conn.execute(_UPSERT_FILINGS)
    return int(status.split()[-1])


async def ingest_submissions_files(
    conn: asyncpg.Connection, paths: Sequence[Path], symbol: str | None = None
) -> dict[str, Any]:
    """`finq ingest submissions PATH...`: the filings of submissions files, in one transaction.

    The company comes from the main file (`tickers[0]` unless `symbol` is given) and is
    added if the database does not have it yet; if it does, it gains the file's tickers
    (every share class) and former names it lacks (`companies_updated`).
    """
    files = read_submissions_files(paths, symbol)
    async with conn.transaction():
        added = updated = 0
        for c in files.companies:
            inserted = await conn.fetchval(
                _UPSERT_COMPANY_NAMES,
                c.symbol,
                c.cik,
                c.name,
                c.display_name,
                c.fiscal_year_end,
                list(c.aliases),
                list(c.tickers),
            )
            if inserted is True:
                added += 1
            elif inserted is False:
                updated += 1
        changed = await upsert_filings(conn, files.filings)
    return {
        "companies": len(files.companies),
        "companies_added": added,
        "companies_updated": updated,
        "filings": len(files.filings),
        "filings_changed": changed,
        "files_read": len(files.read),
        "skipped_filings": sum(files.skipped.values()),
        "skipped_forms": dict(sorted(files.skipped.items(), key=lambda kv: (-kv[1], kv[0]))),
        "pages_absent": files.pages_absent,
    }
