"""Planning a question about the user's own portfolio: one portfolio tool call (two for an
overview that lists holdings) from what `portfolio_reading` read and the companies the
router found, or a clarifying question when a screen names no figure or no condition.

The planner of kind "portfolio" (services.router.planning) validates these calls against
the tools' schemas like every other plan.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from services.router.portfolio_reading import PORTFOLIO_INTENTS, read_portfolio, today_of
from services.router.rules import CompanyDirectory, Understanding
from shared.contracts.understanding import Intent, PortfolioReading
from shared.metric_catalog import METRICS_BY_ID, mid_sentence
from shared.tools import (
    GET_ACCOUNT_VALUE,
    GET_CASH_BALANCE,
    GET_PORTFOLIO_ACTIVITY,
    GET_PORTFOLIO_PERFORMANCE,
    GET_POSITIONS,
    RANK_HOLDINGS,
    SCREEN_HOLDINGS,
    SEARCH_HOLDINGS_DOCUMENTS,
)

Calls = list[tuple[str, dict[str, Any]]]


@dataclass
class PortfolioPlan:
    """The calls that answer a portfolio question, or the question to ask back first."""

    intent: Intent
    reading: PortfolioReading
    calls: Calls = field(default_factory=list)
    clarifying: str | None = None


def plan_portfolio_calls(
    intent: Intent, understanding: Understanding, directory: CompanyDirectory
) -> PortfolioPlan:
    """The portfolio tool calls for `intent`, arguments not yet validated."""
    reading = understanding.portfolio or read_portfolio(
        understanding.question,
        today_of(entry.latest_price_day for entry in directory.entries),
        metrics=understanding.matches.metrics,
    )
    plan = PortfolioPlan(intent, reading)
    PLANS[intent](plan, understanding)
    return plan


def sharpest_portfolio_intent(intent: Intent, scores: dict[str, float]) -> Intent:
    """The portfolio intent the rules' cues speak for most, when they speak for one more
    than for `intent`: the classifier was trained before the portfolio was split into seven
    intents and knows only the overview and a position, so "how did my portfolio do this
    year" may come back from it as the overview."""
    best = max(PORTFOLIO_INTENTS, key=lambda name: (scores.get(name, 0.0), name == intent))
    return cast(Intent, best) if scores.get(best, 0.0) > scores.get(intent, 0.0) else intent


def _arguments(**named: Any) -> dict[str, Any]:
    """Arguments without the ones not named: the schema's defaults stand for them."""
    return {
        name: value
        for name, value in named.items()
        if value is not None and value is not False and value != []
    }


def _position(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading, symbols = plan.reading, understanding.symbols
    # Realized gains over a span ("my realized gains in 2022") are those of the sales in it:
    # the positions on its last day, their gains counted from its first.
    realized_span = reading.realized and reading.start is not None
    arguments = _arguments(
        symbols=symbols[:20] or None,
        account=reading.account,
        as_of=(reading.end or reading.as_of) if realized_span else reading.as_of,
        start=reading.start if realized_span else None,
        # A company named is the holding asked about, whatever its class.
        asset_class=None if symbols else reading.asset_class,
        include_closed=reading.include_closed or reading.realized,
    )
    plan.calls.append((GET_POSITIONS, arguments))


def _overview(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading = plan.reading
    plan.calls.append((GET_ACCOUNT_VALUE, _arguments(account=reading.account, as_of=reading.as_of)))
    if reading.holdings_asked or reading.asset_class or understanding.symbols:
        arguments = _arguments(
            account=reading.account,
            as_of=reading.as_of,
            asset_class=reading.asset_class,
            symbols=understanding.symbols[:20] or None,
        )
        plan.calls.append((GET_POSITIONS, arguments))


def _timeframe(reading: PortfolioReading) -> dict[str, Any]:
    """A span of days; a day holdings are valued on ("at the end of 2022") ends it."""
    return _arguments(start=reading.start, end=reading.end or reading.as_of)


def _days(reading: PortfolioReading) -> dict[str, Any]:
    """The days activity is listed for: one day named alone ("on March 3, 2023") is that
    day, not everything up to it."""
    if reading.as_of is not None and reading.start is None and reading.end is None:
        return {"start": reading.as_of, "end": reading.as_of}
    return _timeframe(reading)


def _activity(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading = plan.reading
    arguments = _arguments(
        account=reading.account,
        kinds=reading.kinds or None,
        symbol=understanding.symbols[0] if understanding.symbols else None,
        **_days(reading),
    )
    plan.calls.append((GET_PORTFOLIO_ACTIVITY, arguments))


def _performance(plan: PortfolioPlan, understanding: Understanding) -> None:
    # No timeframe named: `start` absent is since the first activity.
    arguments = _arguments(account=plan.reading.account, **_timeframe(plan.reading))
    plan.calls.append((GET_PORTFOLIO_PERFORMANCE, arguments))


def _ranking(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading = plan.reading
    # A size or a weight is the holdings' on one day: the span's last (the answer says which).
    on_one_day = reading.by in ("value", "weight")
    days = _arguments(end=reading.end or reading.as_of) if on_one_day else _timeframe(reading)
    arguments = _arguments(
        account=reading.account,
        order=reading.order,
        by=reading.by,
        limit=reading.limit,
        **days,
    )
    plan.calls.append((RANK_HOLDINGS, arguments))


def _cash(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading = plan.reading
    plan.calls.append((GET_CASH_BALANCE, _arguments(account=reading.account, as_of=reading.as_of)))


def _screen(plan: PortfolioPlan, understanding: Understanding) -> None:
    reading = plan.reading
    if reading.largest is not None or understanding.forms:
        # What the filings of the largest holdings say: a search of each one's filings.
        arguments = _arguments(
            query=(reading.query or understanding.question)[:500],
            largest=reading.largest,
            forms=understanding.forms or None,
            fiscal_year=reading.fiscal_year,
            account=reading.account,
        )
        plan.calls.append((SEARCH_HOLDINGS_DOCUMENTS, arguments))
        return
    if reading.metric is None:
        plan.clarifying = (
            "Which figure of the companies you hold should I screen on, and how? For "
            'example "which of my holdings had falling revenue last fiscal year" or '
            '"how much of my portfolio is in companies with a net margin above 20%".'
        )
        return
    if reading.condition is None:
        label = mid_sentence(METRICS_BY_ID[reading.metric].label)
        plan.clarifying = (
            f"Which of your holdings' {label} do you mean: above or below a threshold "
            "(for example above 20%), or falling or rising from the year before?"
        )
        return
    arguments = _arguments(
        metric=reading.metric,
        condition=reading.condition,
        threshold=reading.threshold,
        fiscal_year=reading.fiscal_year,
        account=reading.account,
        as_of=reading.as_of,
    )
    plan.calls.append((SCREEN_HOLDINGS, arguments))


PLANS: dict[str, Callable[[PortfolioPlan, Understanding], None]] = {
    "portfolio_position": _position,
    "portfolio_overview": _overview,
    "portfolio_activity": _activity,
    "portfolio_performance": _performance,
    "portfolio_ranking": _ranking,
    "portfolio_cash": _cash,
    "portfolio_screen": _screen,
}
