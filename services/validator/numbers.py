"""Finds the figures, years, dates and accession numbers an answer shows.

One precompiled scanner reads the text left to right. At each position the alternatives are
tried in order, so things that merely contain digits (URLs, XBRL tags, footnote markers,
accession numbers, ISO dates) are consumed first and never surface as figures, and a year
is taken as a year before it could be read as a plain number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date
from typing import Literal

NumberKind = Literal["money", "per_share_or_plain", "percent", "plain"]

_SCALE_WORDS: dict[str, float] = {
    "thousand": 1e3,
    "million": 1e6,
    "billion": 1e9,
    "trillion": 1e12,
}
# Letter suffixes count only after "$": "$383.3B" is money, while "3M" is a company.
_SCALE_LETTERS: dict[str, float] = {
    "k": 1e3,
    "K": 1e3,
    "M": 1e6,
    "mn": 1e6,
    "B": 1e9,
    "bn": 1e9,
    "T": 1e12,
}

_TOKEN_RE = re.compile(
    r"""
      (?P<url>\bhttps?://[^\s)>\]]+)
    | (?P<tag>\b[a-z][a-z0-9-]*:[A-Z][A-Za-z0-9_]*)
    | (?P<footnote>\[\d{1,3}\])
    # "the S&P 500", "the Russell 2000": a market index's name, not a figure.
    | (?P<index_name>\b(?:S&P|Nasdaq|NASDAQ|Russell|Wilshire|FTSE|Nikkei)[ \u00a0-]?\d{2,4}(?!\w))
    # "page 12", "pages 40-41": where a quoted passage sits, not a figure.
    | (?P<page>\b(?:[Pp]ages?|p\.)[ \u00a0]?\d{1,4}(?:[ \u00a0]?[-–][ \u00a0]?\d{1,4})?(?![\w.,]\d))
    | (?P<accession>(?<![\w-])\d{10}-?\d{2}-?\d{6}(?![\w-]))
    | (?P<date>(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-]))
    | (?P<year>
          # "FY2023", "FY 2023", or a free-standing 2023 not glued to another number.
          (?:\b(?:FY|fy)[ \u00a0]?|(?<![\w.,$/])(?<!\w[-−]))
          (?P<year_digits>19\d\d|20\d\d|2100)
          # ...and not the start of a figure: "2023 million", "2023%", "2023.5", "2023,456".
          (?![\w%×]|[.,/]\d|[-−][A-Za-z0-9]
             |\s?(?:thousand|million|billion|trillion|percent|per\ cent)\b|\s%)
      )
    | (?P<number>
          (?<![\w.,])(?<!\w[-−/])
          # "$(1.2) billion": the currency may stand outside an accounting bracket.
          (?P<lead_dollar>\$(?=\())?
          (?P<open>\(\s?)?
          (?P<sign>[-−])?
          (?P<dollar>\$)?
          (?P<int>\d{1,3}(?:,\d{3})+|\d+)
          (?:\.(?P<frac>\d+))?
          # "(1.2) billion": an accounting bracket closed before the scale word.
          (?(open)(?P<close_early>\)(?=\s?(?:thousand|million|billion|trillion)\b))?)
          # Atomic: once a scale or unit is read, never retry the figure without it.
          (?>
              \s?(?P<word>thousand|million|billion|trillion)\b
            | (?(dollar)(?P<letter>[kKMBT]|bn|mn)(?!\w)|(?!))
            | \s?(?P<pct>%|percent\b|per\ cent\b)
            | (?P<times>\s?×|x(?!\w))
          )?
          (?P<close>\s?\))?
          # Not part of a word or a longer figure; "10-K" and "8-K" are form names, and
          # "401(k)" and "403(b)" the names of accounts.
          (?!\w|[.,/]\d|[-−][A-Za-z0-9]|\([a-z]\))
      )
    """,
    re.VERBOSE,
)


@dataclass(frozen=True, slots=True)
class ShownNumber:
    """A figure as the answer shows it; `value` is in base units (USD, not billions)."""

    text: str
    value: float
    decimals: int
    kind: NumberKind
    start: int
    end: int
    # The multiplier the shown digits carry ("billion" → 1e9), which sets their precision.
    scale: float = 1.0

    @property
    def half_unit(self) -> float:
        """Half a unit of the last shown digit: "$383.3 billion" → 0.05e9."""
        return 0.5 * 10.0**-self.decimals * self.scale


@dataclass(frozen=True, slots=True)
class ShownYear:
    text: str
    year: int
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ShownDate:
    text: str
    value: date
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class ShownAccession:
    text: str
    start: int
    end: int

    @property
    def digits(self) -> str:
        """The accession without dashes, so "0000320193-23-000106" and its bare form compare."""
        return self.text.replace("-", "")


@dataclass(frozen=True, slots=True)
class Scan:
    numbers: list[ShownNumber]
    years: list[ShownYear]
    dates: list[ShownDate]
    accessions: list[ShownAccession]
    # "[n]" citation markers, by number.
    markers: list[int]


def _number(match: re.Match[str]) -> ShownNumber:
    start, end = match.span("number")
    opened = match.group("open") is not None
    closed = match.group("close") is not None or match.group("close_early") is not None
    # A lone bracket is punctuation around the figure, not accounting-style negation.
    if (match.group("lead_dollar") is not None and not closed) or (opened and not closed):
        start = match.end("open")
    elif closed and not opened:
        end = match.start("close")
    frac = match.group("frac") or ""
    magnitude = float(f"{match.group('int').replace(',', '')}.{frac or '0'}")
    dollar = match.group("dollar") is not None or match.group("lead_dollar") is not None
    scale = 1.0
    if word := match.group("word"):
        scale = _SCALE_WORDS[word]
    elif letter := match.group("letter"):
        scale = _SCALE_LETTERS[letter]
    kind: NumberKind
    if match.group("pct"):
        kind = "percent"
    elif dollar:
        kind = "money" if scale > 1 else "per_share_or_plain"
    else:
        kind = "plain"
    negative = match.group("sign") is not None or (opened and closed)
    return ShownNumber(
        text=match.string[start:end],
        value=-magnitude * scale if negative else magnitude * scale,
        decimals=len(frac),
        kind=kind,
        start=start,
        end=end,
        scale=scale,
    )


def scan(text: str) -> Scan:
    """Everything in one pass; the validator uses this rather than the four extractors."""
    numbers: list[ShownNumber] = []
    years: list[ShownYear] = []
    dates: list[ShownDate] = []
    accessions: list[ShownAccession] = []
    markers: list[int] = []
    for match in _TOKEN_RE.finditer(text):
        group = match.lastgroup
        if group == "number":
            numbers.append(_number(match))
        elif group == "year":
            years.append(ShownYear(match.group(), int(match.group("year_digits")), *match.span()))
        elif group == "date":
            try:
                value = date.fromisoformat(match.group())
            except ValueError:
                continue  # date-shaped but impossible (2023-13-45): neither date nor figure
            dates.append(ShownDate(match.group(), value, *match.span()))
        elif group == "accession":
            accessions.append(ShownAccession(match.group(), *match.span()))
        elif group == "footnote":
            markers.append(int(match.group()[1:-1]))
    return Scan(numbers, years, dates, accessions, markers)


def extract_numbers(text: str) -> list[ShownNumber]:
    return scan(text).numbers


def extract_years(text: str) -> list[ShownYear]:
    return scan(text).years


def extract_dates(text: str) -> list[ShownDate]:
    return scan(text).dates


def extract_accessions(text: str) -> list[ShownAccession]:
    return scan(text).accessions
