"""Rebuild the bundled default dataset from SEC JSON files and daily price CSVs.

    python -m services.ingest.build_default_dataset [--source ../shared/data/sec]
        [--prices ../shared/data/prices] [--filings ../shared/data/filings] [--output DIR]

Parses every `companyfacts/CIK*.json` under the source directory (with the
matching `submissions/CIK*.json` for tickers, names, former names and fiscal year
end; the stock splits come from the companyfacts facts themselves) and every
`*.csv` under the prices directory, the filings of every `submissions/CIK*.json`
(older-filings page files included), and the share-class tickers the inline-XBRL
filings under the filings directory list on their cover pages, and writes
`services/ingest/default_dataset/`. Only the derived figures and their provenance
are written; the source JSON is never copied. Price rows are kept as the source
spells them, without the rows the source leaves empty.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from services.ingest.companyfacts import (
    CompanyRecord,
    IngestError,
    MetricValueRecord,
    company_for_companyfacts,
    company_from_submissions,
    find_submissions,
    normalize_cik,
    normalize_symbol,
    parse_companyfacts,
    read_json,
)
from services.ingest.dataset import DEFAULT_DATASET_DIR, sha256_prefix, write_dataset
from services.ingest.derived import derive_metrics
from services.ingest.filing_tickers import FilingTickers, company_tickers, tickers_under
from services.ingest.filings import FilingRecord, read_submissions_files
from services.ingest.prices import (
    PRICE_ONLY_NAMES,
    PriceParse,
    describe_skipped,
    parse_price_csv,
    price_only_company,
)

REPO_ROOT = Path(__file__).resolve().parents[2]

# CIK → what each inline-XBRL filing lists for it (`services.ingest.filing_tickers`).
FilingListings = dict[str, list[FilingTickers]]


def default_source() -> Path:
    """`../shared/data/sec` beside the checkout, or `$FINQ_SHARED_DATA/sec`."""
    configured = os.environ.get("FINQ_SHARED_DATA")
    base = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    return base / "sec"


def default_prices() -> Path:
    """`../shared/data/prices` beside the checkout, or `$FINQ_SHARED_DATA/prices`."""
    return default_source().parent / "prices"


def default_filings() -> Path:
    """`../shared/data/filings` beside the checkout, or `$FINQ_SHARED_DATA/filings`."""
    return default_source().parent / "filings"


def companyfacts_company(
    path: Path, doc: Mapping[str, Any], listings: FilingListings
) -> CompanyRecord:
    """The company of a companyfacts file, with every share class's ticker.

    A submissions file beside it names the company and its tickers; without one (Alphabet's
    is not among the sources) the first ticker its filings list is the symbol (GOOGL, the
    class A ticker its prices are filed under). Either way the filings' tickers are added.
    """
    cik = normalize_cik(doc.get("cik"))
    listed = company_tickers(listings.get(cik, ()))
    symbol = listed[0] if listed and find_submissions(path, cik) is None else None
    return with_filing_tickers(company_for_companyfacts(path, doc, symbol), listings)


def with_filing_tickers(company: CompanyRecord, listings: FilingListings) -> CompanyRecord:
    """The company with the tickers its filings list added after its own (GOOG)."""
    listed = company_tickers(listings.get(company.cik, ())) if company.cik else ()
    return dataclasses.replace(company, tickers=(*company.tickers, *listed))


def filing_sources(
    companies: list[CompanyRecord], listings: FilingListings, filings: Path
) -> dict[str, str]:
    """{"filings/GOOGL/googl-10-k-2025-02-05.html": sha256 prefix} of the filings that gave
    tickers of a held company, named as ../shared/data/SOURCES.md names them."""
    held = {company.cik for company in companies if company.cik}
    return {
        listing.path.resolve().relative_to(filings.resolve().parent).as_posix(): sha256_prefix(
            listing.path.read_bytes()
        )
        for cik in sorted(held & listings.keys())
        for listing in listings[cik]
    }


def build(
    source: Path, listings: FilingListings | None = None
) -> tuple[list[CompanyRecord], list[MetricValueRecord], dict[str, str]]:
    """Companies, values and {source file: sha256 prefix} from a directory of SEC JSON;
    `listings` are the tickers inline-XBRL filings list (`tickers_under`)."""
    paths = sorted((source / "companyfacts").glob("CIK*.json"))
    if not paths:
        raise IngestError(f"no companyfacts/CIK*.json under {source}")
    companies: list[CompanyRecord] = []
    values: list[MetricValueRecord] = []
    sources: dict[str, str] = {}
    for path in paths:
        doc = read_json(path)
        cik = normalize_cik(doc.get("cik"))
        submissions = find_submissions(path, cik)
        company = companyfacts_company(path, doc, listings or {})
        companies.append(company)
        values.extend(parse_companyfacts(doc, company.symbol))
        for used in (path, submissions):
            if used is not None:
                sources[used.resolve().relative_to(source.resolve()).as_posix()] = sha256_prefix(
                    used.read_bytes()
                )
    return companies, values, sources


def submissions_by_symbol(source: Path) -> dict[str, Path]:
    """The submissions files under a directory of SEC JSON, by the ticker each names first."""
    found: dict[str, Path] = {}
    # CIK##########.json only: the "-submissions-001" pages of older filings have no header.
    for path in sorted((source / "submissions").glob("CIK" + "[0-9]" * 10 + ".json")):
        tickers = read_json(path).get("tickers") or []
        if tickers:
            found[normalize_symbol(tickers[0])] = path
    return found


def price_company(symbol: str, submissions: Path | None) -> CompanyRecord:
    """The company of a ticker held with prices but no companyfacts.

    A submissions file naming the ticker gives the CIK, SEC name and fiscal year end
    (../shared/data/sec has one for Microsoft); the names people use come from
    PRICE_ONLY_NAMES either way.
    """
    if submissions is None:
        return price_only_company(symbol)
    company = company_from_submissions(read_json(submissions))
    known = PRICE_ONLY_NAMES.get(symbol)
    if known is None:
        return company
    return dataclasses.replace(
        company,
        display_name=known.display_name,
        aliases=tuple(dict.fromkeys((*company.aliases, *known.aliases))),
    )


def build_prices(
    prices: Path, source: Path, held: set[str]
) -> tuple[dict[str, PriceParse], list[CompanyRecord], dict[str, str]]:
    """Each price file's parse, the companies not in `held`, and {source file: sha256 prefix}.

    Parses are keyed "prices/AAPL.csv", as ../shared/data/SOURCES.md names the files.
    """
    paths = sorted(prices.glob("*.csv"))
    if not paths:
        raise IngestError(f"no *.csv price files under {prices}")
    parses: dict[str, PriceParse] = {}
    companies: list[CompanyRecord] = []
    sources: dict[str, str] = {}
    by_symbol = submissions_by_symbol(source)
    for path in paths:
        symbol = normalize_symbol(path.stem)
        data = path.read_bytes()
        name = f"prices/{path.name}"
        parses[name] = parse_price_csv(data.decode("utf-8"), symbol, path.name)
        sources[name] = sha256_prefix(data)
        if symbol in held:
            continue
        submissions = by_symbol.get(symbol)
        companies.append(price_company(symbol, submissions))
        if submissions is not None:
            sources[submissions.resolve().relative_to(source.resolve()).as_posix()] = sha256_prefix(
                submissions.read_bytes()
            )
    return parses, companies, sources


def build_filings(
    source: Path, held: set[str]
) -> tuple[list[FilingRecord], list[CompanyRecord], dict[str, str]]:
    """The filings of every `submissions/CIK*.json` (page files included), the companies
    not in `held` (Microsoft has submissions but no companyfacts), and their sources."""
    paths = sorted((source / "submissions").glob("CIK*.json"))
    if not paths:
        raise IngestError(f"no submissions/CIK*.json under {source}")
    files = read_submissions_files(paths)
    # Said, not silently dropped: the forms left out and the older pages not staged.
    skipped = ", ".join(f"{form} {n}" for form, n in files.skipped.most_common())
    print(f"filings: skipped forms {skipped}", file=sys.stderr)
    if files.pages_absent:
        print(f"filings: pages not staged {', '.join(files.pages_absent)}", file=sys.stderr)
    sources = {
        path.relative_to(source.resolve()).as_posix(): sha256_prefix(path.read_bytes())
        for path in files.read
    }
    companies = [company for company in files.companies if company.symbol not in held]
    return files.filings, companies, sources


def build_dataset(
    source: Path, prices: Path, output: Path, filings_dir: Path | None = None
) -> dict[str, int]:
    """Build from SEC JSON, price CSVs and the inline-XBRL filings (`filings_dir`, by default
    `filings/` beside the SEC directory) and write the dataset; the row count of each file."""
    filings_dir = filings_dir if filings_dir is not None else source.parent / "filings"
    listings = tickers_under(filings_dir)
    companies, values, sources = build(source, listings)
    price_files, price_companies, price_sources = build_prices(
        prices, source, {company.symbol for company in companies}
    )
    # The derived metrics (margins, growth, ratios) come after the prices: the valuation
    # ones read the close at each fiscal period end. Per-share figures are brought to one
    # share basis across the splits each company's companyfacts state.
    closes = {
        parse.symbol: [(row.day, row.close) for row in parse.rows] for parse in price_files.values()
    }
    splits = {company.symbol: company.splits for company in companies}
    values = [*values, *derive_metrics(values, closes, splits=splits)]
    filings, filing_companies, submissions_sources = build_filings(
        source, {company.symbol for company in [*companies, *price_companies]}
    )
    held = [
        *companies,  # with their filings' tickers already
        *(with_filing_tickers(c, listings) for c in [*price_companies, *filing_companies]),
    ]
    counts = write_dataset(
        output,
        held,
        values,
        sources={
            **sources,
            **price_sources,
            **submissions_sources,
            **filing_sources(held, listings, filings_dir),
        },
        prices=price_files,
        filings=filings,
    )
    for parse in price_files.values():
        for row in parse.skipped:
            print(f"skipped {describe_skipped(parse.source, row)}", file=sys.stderr)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=default_source())
    parser.add_argument("--prices", type=Path, default=default_prices())
    parser.add_argument("--filings", type=Path, default=default_filings())
    parser.add_argument("--output", type=Path, default=DEFAULT_DATASET_DIR)
    args = parser.parse_args(argv)
    try:
        counts = build_dataset(args.source, args.prices, args.output, args.filings)
    except IngestError as error:
        print(f"build failed: {error}", file=sys.stderr)
        return 1
    print(f"wrote {args.output}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
