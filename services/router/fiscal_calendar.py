"""Each company's fiscal calendar: which fiscal year and quarter a calendar day belongs to.

Questions give periods as dates ("at June 30, 2031", "the quarter ended March 30, 2024",
"the March quarter of 2024"); the figures finq holds are labelled by fiscal year and
quarter. A calendar is built from the periods held for the company (their real start and
end days, which for 52/53-week years fall on a Saturday or Sunday near the nominal year
end) and from its nominal fiscal year end ("0926"), used for years nothing is held for.

A fiscal year is labelled by the calendar year in which it ends (NVIDIA's year that
closed on January 26, 2025 is fiscal 2025); its quarters step back three months at a time from
its end.
"""

from __future__ import annotations

import calendar
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Literal

import asyncpg

# 52/53-week years end on a weekday near the nominal day, quarters of 13 weeks drift a few
# days around month ends: a day this close to a period's end is that end.
END_TOLERANCE = timedelta(days=7)

HeldPeriodType = Literal["annual", "quarterly"]
FiscalQuarter = tuple[int, int]  # (fiscal year, quarter 1-4)


@dataclass(frozen=True)
class PeriodRow:
    """One distinct period held for a company, as metric_values stores it."""

    fiscal_year: int
    fiscal_quarter: int | None  # None (or 0 in the table) for a fiscal year
    period_type: HeldPeriodType
    period_start: date | None  # None for a balance at an instant
    period_end: date


def _month_end(year: int, month: int) -> date:
    return date(year, month, calendar.monthrange(year, month)[1])


def _months_back(day: date, months: int, *, at_month_end: bool) -> date:
    """The day `months` earlier; a month-end stays a month-end (Jan 31 → Oct 31 → Jul 31)."""
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    last = calendar.monthrange(year, month + 1)[1]
    return date(year, month + 1, last if at_month_end else min(day.day, last))


def _parse_year_end(raw: str | None) -> tuple[int, int] | None:
    """ "0926" → (9, 26); None for anything that is not a month and day."""
    if raw is None or len(raw.strip()) != 4 or not raw.strip().isdigit():
        return None
    month, day = int(raw[:2]), int(raw[2:])
    if not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return month, day


def _most_common(days: Iterable[date]) -> date | None:
    counted = Counter(days)
    return max(counted, key=lambda day: (counted[day], day)) if counted else None


@dataclass(frozen=True)
class FiscalCalendar:
    """A company's fiscal periods: the ones held, by their real days, and a nominal year end
    (month, day) for the rest. Built with `FiscalCalendar.build`."""

    symbol: str = ""
    year_end: tuple[int, int] = (12, 31)
    # Held period ends and starts, as ((fiscal_year, quarter), day) pairs; quarter 0 is the
    # whole fiscal year.
    held_ends: tuple[tuple[FiscalQuarter, date], ...] = ()
    held_starts: tuple[tuple[FiscalQuarter, date], ...] = ()
    _ends: dict[FiscalQuarter, date] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )
    _starts: dict[FiscalQuarter, date] = field(
        init=False, repr=False, compare=False, hash=False, default_factory=dict
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ends", dict(self.held_ends))
        object.__setattr__(self, "_starts", dict(self.held_starts))

    @classmethod
    def build(
        cls, symbol: str, fiscal_year_end: str | None, rows: Iterable[PeriodRow]
    ) -> FiscalCalendar:
        """The calendar of a company from its nominal year end ("0926", may be None) and the
        distinct periods held for it. Without a nominal year end, the latest fiscal year
        held gives one; without either, years end on December 31."""
        ends: dict[FiscalQuarter, list[date]] = defaultdict(list)
        starts: dict[FiscalQuarter, list[date]] = defaultdict(list)
        for row in rows:
            quarter = row.fiscal_quarter or 0
            if row.period_type == "annual":
                quarter = 0
            elif row.period_type != "quarterly" or not 1 <= quarter <= 4:
                continue  # trailing twelve months end where a quarter ends; nothing new
            key = (row.fiscal_year, quarter)
            ends[key].append(row.period_end)
            if row.period_start is not None:
                starts[key].append(row.period_start)
        held_ends = {key: _most_common(days) for key, days in ends.items()}
        held_starts = {key: _most_common(days) for key, days in starts.items()}
        year_end = _parse_year_end(fiscal_year_end)
        if year_end is None:
            annual = sorted(
                (fy, day) for (fy, quarter), day in held_ends.items() if quarter == 0 and day
            )
            year_end = (annual[-1][1].month, annual[-1][1].day) if annual else (12, 31)
        return cls(
            symbol=symbol,
            year_end=year_end,
            held_ends=tuple(sorted((k, d) for k, d in held_ends.items() if d is not None)),
            held_starts=tuple(sorted((k, d) for k, d in held_starts.items() if d is not None)),
        )

    # --- the days of a fiscal period -----------------------------------------------------

    def holds(self, fiscal_year: int, fiscal_quarter: int | None = None) -> bool:
        """Whether the period's end day is known from figures held, not from the nominal."""
        return (fiscal_year, fiscal_quarter or 0) in self._ends

    def year_end_of(self, fiscal_year: int) -> date:
        """The last day of a fiscal year: as held, else the nominal year end in the calendar
        year it is labelled by."""
        held = self._ends.get((fiscal_year, 0)) or self._ends.get((fiscal_year, 4))
        if held is not None:
            return held
        month, day = self.year_end
        return date(fiscal_year, month, min(day, calendar.monthrange(fiscal_year, month)[1]))

    def quarter_end_of(self, fiscal_year: int, fiscal_quarter: int) -> date:
        """The last day of a fiscal quarter: as held, else three months a step back from its
        year's end."""
        held = self._ends.get((fiscal_year, fiscal_quarter))
        if held is None and fiscal_quarter == 4:
            held = self._ends.get((fiscal_year, 0))
        if held is not None:
            return held
        year_end = self.year_end_of(fiscal_year)
        at_month_end = year_end.day == calendar.monthrange(year_end.year, year_end.month)[1]
        return _months_back(year_end, 3 * (4 - fiscal_quarter), at_month_end=at_month_end)

    def quarter_start_of(self, fiscal_year: int, fiscal_quarter: int) -> date:
        held = self._starts.get((fiscal_year, fiscal_quarter))
        if held is None and fiscal_quarter == 1:
            held = self._starts.get((fiscal_year, 0))
        if held is not None:
            return held
        before = (fiscal_year, fiscal_quarter - 1) if fiscal_quarter > 1 else (fiscal_year - 1, 4)
        return self.quarter_end_of(*before) + timedelta(days=1)

    def _quarters_around(self, day: date) -> list[tuple[FiscalQuarter, date]]:
        """Fiscal quarters that may end within a year of the day, with their end days: a
        fiscal year is labelled by the year it ends, so it ends at most a year after any of
        its days."""
        return [
            ((fiscal_year, quarter), self.quarter_end_of(fiscal_year, quarter))
            for fiscal_year in range(day.year - 1, day.year + 3)
            for quarter in range(1, 5)
        ]

    # --- which period a day belongs to ----------------------------------------------------

    def year_ending_on(self, day: date, tolerance: timedelta = END_TOLERANCE) -> int | None:
        """The fiscal year whose last day is `day` (within the tolerance), else None."""
        candidates = [
            (abs(self.year_end_of(fiscal_year) - day), fiscal_year)
            for fiscal_year in range(day.year - 1, day.year + 2)
        ]
        distance, fiscal_year = min(candidates)
        return fiscal_year if distance <= tolerance else None

    def quarter_ending_on(
        self, day: date, tolerance: timedelta = END_TOLERANCE
    ) -> FiscalQuarter | None:
        """The fiscal quarter whose last day is `day` (within the tolerance), else None."""
        distance, quarter = min((abs(end - day), key) for key, end in self._quarters_around(day))
        return quarter if distance <= tolerance else None

    def quarter_containing(self, day: date) -> FiscalQuarter:
        """The fiscal quarter a day falls in."""
        after = sorted((end, key) for key, end in self._quarters_around(day) if end >= day)
        for _, key in after:
            if self.quarter_start_of(*key) <= day:
                return key
        return after[0][1]

    def latest_quarter_ended_by(self, day: date) -> FiscalQuarter:
        """The last fiscal quarter ended on or before the day: the balance sheet that stood
        on that day."""
        ended = [(end, key) for key, end in self._quarters_around(day) if end <= day]
        if not ended:
            ended = [((self.quarter_end_of(day.year - 2, 4)), (day.year - 2, 4))]
        return max(ended)[1]

    def latest_year_ended_by(self, day: date) -> int:
        """The last fiscal year ended on or before the day."""
        fiscal_year = day.year + 1
        while self.year_end_of(fiscal_year) > day:
            fiscal_year -= 1
        return fiscal_year

    def quarter_ending_in_month(self, year: int, month: int) -> FiscalQuarter | None:
        """The fiscal quarter that ends in a calendar month (or in the first days after it,
        where 13-week quarters end: Apple's March quarter of 2023 ended on April 1)."""
        first, last = date(year, month, 1), _month_end(year, month)
        inside = [
            (abs(end - last), key)
            for key, end in self._quarters_around(first)
            if first <= end <= last + END_TOLERANCE
        ]
        return min(inside)[1] if inside else None

    def quarter_of_month(self, year: int, month: int) -> FiscalQuarter:
        """ "The March quarter of 2024": the fiscal quarter ending in that month, else the
        one holding most of the three months ending with it (NVIDIA's quarter of February
        through April holds most of January to March)."""
        ending = self.quarter_ending_in_month(year, month)
        if ending is not None:
            return ending
        middle = _months_back(date(year, month, 15), 1, at_month_end=False)
        return self.quarter_containing(middle)

    def quarter_of_fiscal_year_ending_in_month(
        self, fiscal_year: int, month: int
    ) -> FiscalQuarter | None:
        """ "The April quarter of fiscal 2025": the quarter of that fiscal year ending in the
        month."""
        for quarter in range(1, 5):
            end = self.quarter_end_of(fiscal_year, quarter)
            for year in (end.year - 1, end.year):
                if date(year, month, 1) <= end <= _month_end(year, month) + END_TOLERANCE:
                    return fiscal_year, quarter
        return None


# Every company's periods in one query: the nominal year end beside the distinct periods
# held, which migration 024 keeps in metric_periods (a few hundred rows a company, where
# metric_values holds one per figure).
FISCAL_CALENDAR_SQL = """
SELECT c.symbol, c.fiscal_year_end,
       p.fiscal_year, NULLIF(p.fiscal_quarter, 0) AS fiscal_quarter, p.period_type,
       p.period_start, p.period_end
FROM companies c
LEFT JOIN metric_periods p
       ON p.symbol = c.symbol AND p.period_type IN ('annual', 'quarterly')
ORDER BY c.symbol
"""


async def load_fiscal_calendars(
    pool: asyncpg.Pool | asyncpg.Connection,
) -> dict[str, FiscalCalendar]:
    """Each company's fiscal calendar, by symbol, read once at router start."""
    rows = await pool.fetch(FISCAL_CALENDAR_SQL)
    year_ends: dict[str, str | None] = {}
    periods: dict[str, list[PeriodRow]] = defaultdict(list)
    for row in rows:
        year_ends[row["symbol"]] = row["fiscal_year_end"]
        if row["period_end"] is not None:
            periods[row["symbol"]].append(
                PeriodRow(
                    fiscal_year=row["fiscal_year"],
                    fiscal_quarter=row["fiscal_quarter"],
                    period_type=row["period_type"],
                    period_start=row["period_start"],
                    period_end=row["period_end"],
                )
            )
    return {
        symbol: FiscalCalendar.build(symbol, year_end, periods[symbol])
        for symbol, year_end in year_ends.items()
    }
