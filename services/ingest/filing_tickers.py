"""The ticker of every share class, as a company's inline-XBRL filings list them.

A 10-K or 10-Q cover page lists each class of securities registered under section 12(b)
with its title (`dei:Security12bTitle`) and trading symbol (`dei:TradingSymbol`), both in
the class's context: Alphabet's 10-K lists "Class A Common Stock" GOOGL and "Class C
Capital Stock" GOOG. `services.ingest.html_parsing` keeps the first value of each dei
fact (the document's metadata needs one ticker), so the classes are read here.

Notes, debentures, warrants, rights and units are registered securities too, but not
share classes: a symbol whose title names one of those is left out (Apple's notes have
no symbol anyway; other filers list exchange symbols for their notes).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from services.ingest.block_building import clean_cell
from services.ingest.companyfacts import IngestError, normalize_cik, normalize_symbol

HTML_SUFFIXES: frozenset[str] = frozenset({".htm", ".html"})
_NOT_A_SHARE_CLASS = re.compile(
    r"\b(notes?|debentures?|bonds?|warrants?|rights?|units?)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class FilingTickers:
    """The share-class tickers one filing lists for its registrant, in document order."""

    path: Path
    cik: str
    tickers: tuple[str, ...]


def _text(element: etree._Element) -> str:
    return clean_cell("".join(element.itertext()))


def read_filing_tickers(data: bytes, path: Path) -> FilingTickers | None:
    """The registrant's CIK and share-class tickers of an inline-XBRL document, or None
    when it states no CIK or no ticker (a plain HTML page, a filing of notes only)."""
    try:
        data.decode("utf-8")
        encoding: str | None = "utf-8"
    except UnicodeDecodeError:
        encoding = None  # libxml2 guesses from the document, as for any other HTML
    parser = etree.HTMLParser(remove_comments=True, huge_tree=True, encoding=encoding)
    try:
        root = etree.fromstring(data, parser)
    except (etree.XMLSyntaxError, ValueError):
        return None
    if root is None:
        return None
    cik: str | None = None
    symbols: list[tuple[str, str]] = []  # (context, symbol) in document order
    titles: dict[str, str] = {}  # context → security title
    # The HTML parser keeps "ix:nonNumeric" as one lower-cased name, attributes lower-cased.
    for element in root.iter("ix:nonnumeric"):
        name = element.get("name") or ""
        context = element.get("contextref") or ""
        if name == "dei:EntityCentralIndexKey" and cik is None:
            try:
                cik = normalize_cik(_text(element))
            except IngestError:
                continue
        elif name == "dei:TradingSymbol":
            symbols.append((context, _text(element)))
        elif name == "dei:Security12bTitle":
            titles.setdefault(context, _text(element))
    tickers: list[str] = []
    for context, raw in symbols:
        if _NOT_A_SHARE_CLASS.search(titles.get(context, "")):
            continue
        try:
            symbol = normalize_symbol(raw)
        except IngestError:
            continue  # "N/A", "—": no symbol after all
        if symbol not in tickers:
            tickers.append(symbol)
    if cik is None or not tickers:
        return None
    return FilingTickers(path=path, cik=cik, tickers=tuple(tickers))


def tickers_in_filings(paths: Iterable[Path]) -> dict[str, list[FilingTickers]]:
    """CIK → what each inline-XBRL file among `paths` lists, in path order; other files
    (PDF, Markdown, HTML without dei facts) are passed over."""
    found: dict[str, list[FilingTickers]] = {}
    for path in sorted(paths):
        if path.suffix.lower() not in HTML_SUFFIXES or not path.is_file():
            continue
        listed = read_filing_tickers(path.read_bytes(), path)
        if listed is not None:
            found.setdefault(listed.cik, []).append(listed)
    return found


def tickers_under(directory: Path) -> dict[str, list[FilingTickers]]:
    """`tickers_in_filings` over every file below a directory (../shared/data/filings)."""
    return tickers_in_filings(directory.rglob("*")) if directory.is_dir() else {}


def company_tickers(listings: Iterable[FilingTickers]) -> tuple[str, ...]:
    """Every ticker the filings list, each once, in the order first listed."""
    return tuple(dict.fromkeys(ticker for listing in listings for ticker in listing.tickers))
