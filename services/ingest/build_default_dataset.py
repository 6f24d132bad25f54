"""Rebuild the bundled default dataset from SEC JSON files.

    python -m services.ingest.build_default_dataset [--source ../shared/data/sec] [--output DIR]

Parses every `companyfacts/CIK*.json` under the source directory (with the
matching `submissions/CIK*.json` for ticker, names and fiscal year end) and
writes `services/ingest/default_dataset/`. Only the derived figures and their
provenance are written; the source JSON is never copied.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from services.ingest.companyfacts import (
    CompanyRecord,
    IngestError,
    MetricValueRecord,
    company_for_companyfacts,
    find_submissions,
    normalize_cik,
    parse_companyfacts,
    read_json,
)
from services.ingest.dataset import DEFAULT_DATASET_DIR, sha256_prefix, write_dataset

REPO_ROOT = Path(__file__).resolve().parents[2]

# Companies whose submissions JSON is not among the sources: ../shared/data/sec has no
# Alphabet submissions file, and GOOGL (class A) is the ticker its prices are filed under.
FALLBACK_SYMBOLS: dict[str, str] = {"0001652044": "GOOGL"}


def default_source() -> Path:
    """`../shared/data/sec` beside the checkout, or `$FINQ_SHARED_DATA/sec`."""
    configured = os.environ.get("FINQ_SHARED_DATA")
    base = Path(configured) if configured else REPO_ROOT.parent / "shared" / "data"
    return base / "sec"


def build(source: Path) -> tuple[list[CompanyRecord], list[MetricValueRecord], dict[str, str]]:
    """Companies, values and {source file: sha256 prefix} from a directory of SEC JSON."""
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
        symbol = None if submissions is not None else FALLBACK_SYMBOLS.get(cik)
        company = company_for_companyfacts(path, doc, symbol)
        companies.append(company)
        values.extend(parse_companyfacts(doc, company.symbol))
        for used in (path, submissions):
            if used is not None:
                sources[used.resolve().relative_to(source.resolve()).as_posix()] = sha256_prefix(
                    used.read_bytes()
                )
    return companies, values, sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=default_source())
    parser.add_argument("--output", type=Path, default=DEFAULT_DATASET_DIR)
    args = parser.parse_args(argv)
    try:
        companies, values, sources = build(args.source)
    except IngestError as error:
        print(f"build failed: {error}", file=sys.stderr)
        return 1
    counts = write_dataset(args.output, companies, values, sources=sources)
    print(f"wrote {args.output}: " + ", ".join(f"{name} {rows}" for name, rows in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
