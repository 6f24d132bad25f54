"""Stock splits as a company's own XBRL facts state them, read from SEC companyfacts JSON.

Filers tag a split's ratio (new shares per old share) as
`us-gaap:StockholdersEquityNoteStockSplitConversionRatio1`. What the facts look like in
the four companyfacts files of ../shared/data/sec:

- an instant dated on a day of the split: Apple's 4-for-1 on 2020-08-28 (the last day of
  pre-split trading), Alphabet's 20-for-1 on 2022-07-15 (the day the dividend was paid);
- some filings also date the announcement or the approval, before the split took effect:
  Alphabet's 10-Qs of April and July 2022 date its 20-for-1 2022-02-01, the day the board
  approved it; NVIDIA's 10-Qs of 2021 date its 4-for-1 2021-06-03, the day shareholders
  approved the share increase, its later 10-K 2021-07-19;
- a one-month duration around the split: NVIDIA's 10-for-1 of June 2024 is tagged on
  2024-05-01..05-31 in two 10-Qs and on 2024-06-01..06-30 in a later one;
- the ratio restated on every period a statement presents (Tesla tags its 5-for-1 on
  2019's nine months and each 2020 and 2021 period): such a period says which share basis
  its figures are on, not when the split happened.

So a split is the facts of one ratio dated (instant, or a duration of at most a month)
within a year of each other, and its effective date is the latest such date: the
announcement and the approval come before the split itself, and a later filing corrects
an earlier one. The date is the one the filer gives, which is at most a few weeks from
the first trading day on the new basis (Tesla dates its 2020 5-for-1 2020-08-10, the day
the board declared it, three weeks before 2020-08-31); `services.ingest.derived` only
compares it with filing dates, and no 10-K or 10-Q falls in those weeks.

A split before a company's first XBRL filing (2009 at the earliest) is not in
companyfacts, and need not be: every figure in companyfacts is filed after it, so it
multiplies every figure's share basis alike and cancels out of every adjustment.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date
from fractions import Fraction
from typing import Any

SPLIT_RATIO_TAGS: tuple[str, ...] = ("StockholdersEquityNoteStockSplitConversionRatio1",)
RATIO_UNIT = "pure"
# A longer period is a statement period the ratio was restated for, not the split's date.
MAX_DATING_DAYS = 31
# Facts of one ratio this close together are one split (announced, approved, carried out
# within months); a company splitting twice by the same ratio within a year is unheard of.
SAME_SPLIT_DAYS = 366


@dataclass(frozen=True)
class StockSplit:
    """One split: from `effective` on, each old share is `ratio` new shares."""

    effective: date  # the latest date the company's filings tie the split to
    ratio: Fraction  # new shares per old share: 4, 3/2; below 1 for a reverse split
    accession: str  # the first filing that gave that date
    filed: date
    tag: str  # "us-gaap:StockholdersEquityNoteStockSplitConversionRatio1"

    def to_json(self) -> dict[str, str]:
        """As companies.json holds it: ISO dates, the ratio as an exact fraction ("3/2")."""
        return {
            "effective": self.effective.isoformat(),
            "ratio": str(self.ratio),
            "accession": self.accession,
            "filed": self.filed.isoformat(),
            "tag": self.tag,
        }

    @classmethod
    def from_json(cls, row: Mapping[str, str]) -> StockSplit:
        return cls(
            effective=date.fromisoformat(row["effective"]),
            ratio=Fraction(row["ratio"]),
            accession=row["accession"],
            filed=date.fromisoformat(row["filed"]),
            tag=row["tag"],
        )


@dataclass(frozen=True)
class _Dating:
    """One fact dating a split: the day it names, the ratio and the filing it came from."""

    day: date
    ratio: Fraction
    accession: str
    filed: date
    tag: str


def _date(raw: Any) -> date | None:
    try:
        return date.fromisoformat(raw) if isinstance(raw, str) else None
    except ValueError:
        return None


def _ratio(raw: Any) -> Fraction | None:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        # Through str: 1.5 is 3/2, not the binary fraction nearest to it.
        ratio = Fraction(str(raw))
    except (ValueError, ZeroDivisionError):
        return None
    return ratio if ratio > 0 and ratio != 1 else None


def _datings(doc: Mapping[str, Any]) -> Iterator[_Dating]:
    facts = doc.get("facts")
    gaap = facts.get("us-gaap") if isinstance(facts, Mapping) else None
    if not isinstance(gaap, Mapping):
        return
    for tag in SPLIT_RATIO_TAGS:
        entry = gaap.get(tag)
        units = entry.get("units") if isinstance(entry, Mapping) else None
        raw_facts = units.get(RATIO_UNIT) if isinstance(units, Mapping) else None
        for raw in raw_facts if isinstance(raw_facts, list) else ():
            if not isinstance(raw, Mapping):
                continue
            end, filed, ratio = (
                _date(raw.get("end")),
                _date(raw.get("filed")),
                _ratio(raw.get("val")),
            )
            accession = raw.get("accn")
            if end is None or filed is None or ratio is None or not isinstance(accession, str):
                continue
            start = _date(raw.get("start"))
            if start is not None and (end - start).days > MAX_DATING_DAYS:
                continue
            yield _Dating(end, ratio, accession, filed, f"us-gaap:{tag}")


def stock_splits(doc: Mapping[str, Any]) -> tuple[StockSplit, ...]:
    """The splits a companyfacts document states, oldest first (see the module doc)."""
    by_ratio: dict[Fraction, list[_Dating]] = {}
    for dating in _datings(doc):
        by_ratio.setdefault(dating.ratio, []).append(dating)
    splits: list[StockSplit] = []
    for datings in by_ratio.values():
        datings.sort(key=lambda d: d.day)
        groups: list[list[_Dating]] = []
        for dating in datings:
            if groups and (dating.day - groups[-1][-1].day).days <= SAME_SPLIT_DAYS:
                groups[-1].append(dating)
            else:
                groups.append([dating])
        for group in groups:
            effective = group[-1].day
            # Cited like a figure: the first filing that said it (then the lower accession).
            first = min(
                (d for d in group if d.day == effective), key=lambda d: (d.filed, d.accession)
            )
            splits.append(
                StockSplit(effective, first.ratio, first.accession, first.filed, first.tag)
            )
    return tuple(sorted(splits, key=lambda s: (s.effective, s.ratio)))
