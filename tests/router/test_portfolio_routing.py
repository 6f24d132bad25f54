"""The router on questions about the user's own portfolio: the reading grammar (timeframes
against the last price day held, accounts, asset classes, activity kinds, rankings, screens),
the seven portfolio intents and their validated tool calls, follow-ups, and a held-out set
written before the rules were tuned.

"Today" is 2023-04-14, the last day the bundled prices hold: relative words are resolved
against it, never against the calendar."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Any

import pytest
from pydantic import ValidationError

from services.router.intent_classifier import IntentPrediction
from services.router.portfolio_planning import PLANS
from services.router.portfolio_reading import (
    PORTFOLIO_INTENTS,
    read_account,
    read_activity_kinds,
    read_asset_class,
    read_benchmark,
    read_fiscal_year,
    read_largest,
    read_ranking,
    read_screen,
    read_timeframe,
    read_topic,
    speaks_of_own_holdings,
    today_of,
)
from services.router.routing import decide_route, route_question
from services.router.rules import CompanyDirectory, CompanyEntry, RuleThresholds
from shared.contracts.questions import ConversationTurn, RouteDecided
from shared.tools import (
    RANK_HOLDINGS_SPEC,
    TOOL_ARGUMENTS,
    GetPositionsArgs,
    RankHoldingsArgs,
    tool_allowed,
)

TODAY = date(2023, 4, 14)
DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple", "apple computer"), 2022, TODAY),
        CompanyEntry("AMZN", "Amazon", ("amazon", "amazon.com"), 2022, TODAY),
        CompanyEntry("GOOGL", "Alphabet", ("alphabet", "google"), 2022, TODAY, ("GOOG",)),
        CompanyEntry("MSFT", "Microsoft", ("microsoft",), 2022, TODAY),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",), 2023, TODAY),
        # One company's prices ending earlier does not move "today": the latest day counts.
        CompanyEntry("TSLA", "Tesla", ("tesla", "tesla motors"), 2022, date(2023, 4, 12)),
    )
)


def turn(decided: RouteDecided) -> ConversationTurn:
    return ConversationTurn(
        question=decided.question,
        intent=decided.intent,
        understood=decided.understood,
        tool_calls=decided.tool_calls,
        needs_clarification=decided.intent == "clarify",
    )


def route(question: str, *before: str) -> RouteDecided:
    """The route of `question` after the questions `before` it in one conversation."""
    history: list[ConversationTurn] = []
    for earlier in before:
        history.append(turn(route_question(earlier, DIRECTORY, history=list(history))))
    decided = route_question(question, DIRECTORY, history=history)
    for call in decided.tool_calls:
        assert tool_allowed(decided.intent, call.tool)
        schema = TOOL_ARGUMENTS[call.tool]
        assert type(call.arguments) is schema
        assert schema.model_validate(call.arguments.model_dump(mode="json")) == call.arguments
    return decided


def named(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """The arguments a plan names, without the ones left at the schema's default."""
    fields = TOOL_ARGUMENTS[tool].model_fields
    return {
        name: value
        for name, value in arguments.items()
        if name not in fields or value != fields[name].default
    }


def plan_of(decided: RouteDecided) -> dict[str, dict[str, Any]]:
    return {
        call.tool: named(call.tool, call.arguments.model_dump(mode="json"))
        for call in decided.tool_calls
    }


@dataclass(frozen=True)
class Case:
    question: str
    intent: str
    plan: dict[str, dict[str, Any]]
    before: tuple[str, ...] = ()

    def right(self) -> bool:
        decided = route(self.question, *self.before)
        return decided.intent == self.intent and plan_of(decided) == self.plan


def this_year() -> dict[str, str]:
    return {"start": "2023-01-01", "end": "2023-04-14"}


# --- the dev questions: the rules were tuned against these ---------------------------------

DEV: list[Case] = [
    # One holding.
    Case(
        "How is my AAPL position doing?",
        "portfolio_position",
        {"get_positions": {"symbols": ["AAPL"]}},
    ),
    Case(
        "how many shares of Microsoft do I hold in my Roth IRA?",
        "portfolio_position",
        {"get_positions": {"symbols": ["MSFT"], "account": "Roth IRA"}},
    ),
    Case(
        "What's my average cost on my NVDA shares in the 401k?",
        "portfolio_position",
        {"get_positions": {"symbols": ["NVDA"], "account": "401(k)"}},
    ),
    Case(
        "realized gain on my Tesla sales",
        "portfolio_position",
        {"get_positions": {"symbols": ["TSLA"], "include_closed": True}},
    ),
    Case(
        "What was my Amazon stake worth at the end of 2022?",
        "portfolio_position",
        {"get_positions": {"symbols": ["AMZN"], "as_of": "2022-12-31"}},
    ),
    Case("my apple shares", "portfolio_position", {"get_positions": {"symbols": ["AAPL"]}}),
    Case(
        "am I up on my google stock",
        "portfolio_position",
        {"get_positions": {"symbols": ["GOOGL"]}},
    ),
    Case(
        "what's my total gain on Microsoft since I bought it",
        "portfolio_position",
        {"get_positions": {"symbols": ["MSFT"]}},
    ),
    # The portfolio as a whole.
    Case("What is my portfolio worth?", "portfolio_overview", {"get_account_value": {}}),
    Case("what's my IRA worth", "portfolio_overview", {"get_account_value": {"account": "IRA"}}),
    Case(
        "show my holdings in my brokerage account",
        "portfolio_overview",
        {"get_account_value": {"account": "brokerage"}, "get_positions": {"account": "brokerage"}},
    ),
    Case(
        "list my ETFs",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {"asset_class": "etf"}},
    ),
    Case(
        "how much of my portfolio is in bonds",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {"asset_class": "bond"}},
    ),
    Case(
        "What was my account value at the end of last year?",
        "portfolio_overview",
        {"get_account_value": {"as_of": "2022-12-31"}},
    ),
    Case(
        "what's my allocation by asset class",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {}},
    ),
    Case(
        "what crypto do I own",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {"asset_class": "crypto"}},
    ),
    Case(
        "which of my holdings are ETFs",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {"asset_class": "etf"}},
    ),
    # Activity.
    Case(
        "What did I buy last month?",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["buy"], "start": "2023-03-01", "end": "2023-03-31"}},
    ),
    Case(
        "show my trades this year",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["buy", "sell"], **this_year()}},
    ),
    Case(
        "what did I sell in 2022",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["sell"], "start": "2022-01-01", "end": "2022-12-31"}},
    ),
    Case(
        "my dividends last quarter",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["dividend"],
                "start": "2023-01-01",
                "end": "2023-03-31",
            }
        },
    ),
    Case(
        "list my transactions since March",
        "portfolio_activity",
        {"get_portfolio_activity": {"start": "2023-03-01", "end": "2023-04-14"}},
    ),
    Case(
        "when did I buy Nvidia",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["buy"], "symbol": "NVDA"}},
    ),
    Case(
        "how much did I deposit into my Roth this year",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["deposit"], "account": "Roth IRA", **this_year()}},
    ),
    Case(
        "withdrawals from my IRA over the past 6 months",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["withdrawal"],
                "account": "IRA",
                "start": "2022-10-14",
                "end": "2023-04-14",
            }
        },
    ),
    Case(
        "What fees did I pay in the last 90 days?",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["fee"], "start": "2023-01-14", "end": "2023-04-14"}},
    ),
    Case(
        "what interest did my cash management account earn from 2021-03-01 to 2022-06-30",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["interest"],
                "account": "cash management",
                "start": "2021-03-01",
                "end": "2022-06-30",
            }
        },
    ),
    Case(
        "my transfers between January and June 2022",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["transfer"],
                "start": "2022-01-01",
                "end": "2022-06-30",
            }
        },
    ),
    Case(
        "what dividends did I get from Apple in Q3 2022",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["dividend"],
                "symbol": "AAPL",
                "start": "2022-07-01",
                "end": "2022-09-30",
            }
        },
    ),
    Case(
        "What did I buy on March 3, 2023?",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["buy"], "start": "2023-03-03", "end": "2023-03-03"}},
    ),
    Case(
        "how much have I contributed to my 401k since 2021",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["deposit"],
                "account": "401(k)",
                "start": "2021-01-01",
                "end": "2023-04-14",
            }
        },
    ),
    # Performance.
    Case("How is my portfolio doing?", "portfolio_performance", {"get_portfolio_performance": {}}),
    Case(
        "How did my portfolio do this year?",
        "portfolio_performance",
        {"get_portfolio_performance": this_year()},
    ),
    Case(
        "what is my return since March 2022",
        "portfolio_performance",
        {"get_portfolio_performance": {"start": "2022-03-01", "end": "2023-04-14"}},
    ),
    Case(
        "how did my Roth IRA perform in 2022",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "Roth IRA",
                "start": "2022-01-01",
                "end": "2022-12-31",
            }
        },
    ),
    Case(
        "am I up or down year to date",
        "portfolio_performance",
        {"get_portfolio_performance": this_year()},
    ),
    Case(
        "time-weighted return of my 401(k) since 2021",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "401(k)",
                "start": "2021-01-01",
                "end": "2023-04-14",
            }
        },
    ),
    Case(
        "what was my portfolio's performance over the past two weeks",
        "portfolio_performance",
        {"get_portfolio_performance": {"start": "2023-03-31", "end": "2023-04-14"}},
    ),
    Case(
        "How has my brokerage account done in the last 3 years?",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "brokerage",
                "start": "2020-04-14",
                "end": "2023-04-14",
            }
        },
    ),
    Case(
        "how much did my portfolio gain in the first half of 2022",
        "portfolio_performance",
        {"get_portfolio_performance": {"start": "2022-01-01", "end": "2022-06-30"}},
    ),
    # Rankings.
    Case(
        "Which of my holdings did worst this year?",
        "portfolio_ranking",
        {"rank_holdings": {"order": "worst", **this_year()}},
    ),
    Case(
        "what are my two best performers since I bought them",
        "portfolio_ranking",
        {"rank_holdings": {"limit": 2}},
    ),
    Case(
        "my biggest losers in dollars last month",
        "portfolio_ranking",
        {
            "rank_holdings": {
                "order": "worst",
                "by": "usd",
                "start": "2023-03-01",
                "end": "2023-03-31",
            }
        },
    ),
    Case(
        "top 3 holdings by percent gain in my IRA",
        "portfolio_ranking",
        {"rank_holdings": {"account": "IRA"}},
    ),
    Case(
        "which stock in my portfolio gained the most in 2022",
        "portfolio_ranking",
        {"rank_holdings": {"limit": 1, "start": "2022-01-01", "end": "2022-12-31"}},
    ),
    Case(
        "rank my holdings by return over the past year",
        "portfolio_ranking",
        {"rank_holdings": {"start": "2022-04-14", "end": "2023-04-14"}},
    ),
    # Cash.
    Case(
        "how much cash do I have in my Roth IRA",
        "portfolio_cash",
        {"get_cash_balance": {"account": "Roth IRA"}},
    ),
    Case("what's my cash balance", "portfolio_cash", {"get_cash_balance": {}}),
    Case(
        "do I have any unsettled cash in my brokerage account?",
        "portfolio_cash",
        {"get_cash_balance": {"account": "brokerage"}},
    ),
    Case(
        "How much cash is in my Fidelity account?",
        "portfolio_cash",
        {"get_cash_balance": {"account": "Fidelity"}},
    ),
    Case("what's my buying power", "portfolio_cash", {"get_cash_balance": {}}),
    # Screens and the filings of the largest holdings.
    Case(
        "which of my holdings had falling revenue last fiscal year?",
        "portfolio_screen",
        {"screen_holdings": {"metric": "revenue", "condition": "falling"}},
    ),
    Case(
        "what share of my portfolio is in companies with a net margin above 20%?",
        "portfolio_screen",
        {"screen_holdings": {"metric": "net_margin", "condition": "above", "threshold": 20.0}},
    ),
    Case(
        "which of my stocks have growing net income in fiscal 2022",
        "portfolio_screen",
        {"screen_holdings": {"metric": "net_income", "condition": "rising", "fiscal_year": 2022}},
    ),
    Case(
        "which of my positions have a gross margin under 40%",
        "portfolio_screen",
        {"screen_holdings": {"metric": "gross_margin", "condition": "below", "threshold": 40.0}},
    ),
    Case(
        "which of my holdings had declining free cash flow in fiscal 2022",
        "portfolio_screen",
        {
            "screen_holdings": {
                "metric": "free_cash_flow",
                "condition": "falling",
                "fiscal_year": 2022,
            }
        },
    ),
    Case(
        "what did the 10-Ks of my two largest positions say about supply-chain risk?",
        "portfolio_screen",
        {"search_holdings_documents": {"query": "supply-chain risk", "forms": ["10-K"]}},
    ),
    Case(
        "what do the filings of my biggest holding say about competition",
        "portfolio_screen",
        {"search_holdings_documents": {"query": "competition", "largest": 1}},
    ),
]


@pytest.mark.parametrize("case", DEV, ids=[case.question for case in DEV])
def test_a_portfolio_question_is_routed_and_planned(case: Case) -> None:
    decided = route(case.question)
    assert decided.intent == case.intent, decided.understood.scores
    assert plan_of(decided) == case.plan
    assert decided.understood.portfolio is not None


def test_the_dev_questions_cover_every_portfolio_intent() -> None:
    assert len(DEV) >= 40
    assert {case.intent for case in DEV} == PORTFOLIO_INTENTS == set(PLANS)


# --- follow-ups -----------------------------------------------------------------------------


def test_a_follow_up_replaces_the_timeframe_and_keeps_the_intent() -> None:
    decided = route("what about last year?", "How did my portfolio do this year?")
    assert decided.intent == "portfolio_performance"
    assert decided.decided_by == "conversation"
    assert plan_of(decided) == {
        "get_portfolio_performance": {"start": "2022-01-01", "end": "2022-12-31"}
    }


def test_a_follow_up_naming_an_account_keeps_the_timeframe() -> None:
    decided = route("and in my IRA?", "How did my portfolio do this year?")
    assert plan_of(decided) == {"get_portfolio_performance": {"account": "IRA", **this_year()}}
    assert decided.understood.portfolio is not None
    assert decided.understood.portfolio.inherited == ["timeframe"]


def test_a_follow_up_naming_a_company_replaces_the_holding() -> None:
    decided = route("and MSFT?", "How is my AAPL position doing?")
    assert decided.intent == "portfolio_position"
    assert plan_of(decided) == {"get_positions": {"symbols": ["MSFT"]}}


def test_a_follow_up_naming_an_account_keeps_the_holding() -> None:
    decided = route("and in my Roth?", "How is my AAPL position doing?")
    assert plan_of(decided) == {"get_positions": {"symbols": ["AAPL"], "account": "Roth IRA"}}


def test_a_follow_up_naming_other_activity_keeps_the_days() -> None:
    decided = route("and what did I sell?", "What did I buy last month?")
    assert plan_of(decided) == {
        "get_portfolio_activity": {"kinds": ["sell"], "start": "2023-03-01", "end": "2023-03-31"}
    }


def test_a_ranking_follow_up_changes_only_what_it_names() -> None:
    decided = route("and in dollars?", "my three worst holdings this year")
    assert decided.intent == "portfolio_ranking"
    assert plan_of(decided) == {"rank_holdings": {"order": "worst", "by": "usd", **this_year()}}


def test_a_screen_follow_up_naming_another_figure_keeps_the_condition() -> None:
    decided = route("and net income?", "which of my holdings had falling revenue last fiscal year?")
    assert plan_of(decided) == {"screen_holdings": {"metric": "net_income", "condition": "falling"}}


def test_a_reply_completes_a_screen_that_named_no_condition() -> None:
    asked = route("which of my holdings have a good gross margin")
    assert asked.intent == "clarify" and asked.understood.pending_intent == "portfolio_screen"
    decided = route("above 40%", "which of my holdings have a good gross margin")
    assert decided.intent == "portfolio_screen"
    assert plan_of(decided) == {
        "screen_holdings": {"metric": "gross_margin", "condition": "above", "threshold": 40.0}
    }


def test_a_new_portfolio_question_after_another_inherits_nothing() -> None:
    decided = route("How much cash do I have?", "How did my Roth IRA do this year?")
    assert decided.intent == "portfolio_cash"
    assert plan_of(decided) == {"get_cash_balance": {}}


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("What was Apple's revenue in 2022?", "metric_lookup"),
        ("Tell me a joke", "out_of_scope"),
    ],
)
def test_a_question_of_another_kind_after_a_portfolio_question_is_its_own(
    question: str, intent: str
) -> None:
    assert route(question, "How did my portfolio do this year?").intent == intent


# --- what must not become a portfolio question, and what must not stop being one -------------


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        ("What is a Roth IRA?", "definition"),
        ("What was Apple's revenue in fiscal 2022?", "metric_lookup"),
        ("Apple dividends paid in 2022", "metric_lookup"),
        ("AAPL stock price last month", "price"),
        ("What did Apple say about supply-chain risk in its 2022 10-K?", "document_search"),
        ("should I sell my Tesla shares?", "out_of_scope"),
        ("hello, how is my portfolio doing?", "portfolio_performance"),
    ],
)
def test_company_questions_stay_company_questions(question: str, intent: str) -> None:
    assert route(question).intent == intent


@dataclass
class FixedClassifier:
    """A classifier that always says the same: as the shipped one trained before the
    portfolio intents were split, or one whose label nothing registers."""

    intent: str
    probability: float = 0.95

    def predict(self, question: str) -> IntentPrediction:
        return IntentPrediction(self.intent, self.probability, "out_of_scope", 0.01)


def test_an_old_classifier_label_is_sharpened_to_the_portfolio_intent_the_cues_name() -> None:
    decided, _ = decide_route(
        "How did my portfolio do this year?",
        DIRECTORY,
        classifier=FixedClassifier("portfolio_overview"),
        thresholds=RuleThresholds(min_score=100.0),  # the rules are never sure alone
    )
    assert decided.decided_by == "classifier"
    assert decided.intent == "portfolio_performance"
    assert plan_of(decided) == {"get_portfolio_performance": this_year()}


def test_a_classifier_label_nothing_registers_does_not_break_the_router() -> None:
    decided, _ = decide_route("hmm", DIRECTORY, classifier=FixedClassifier("portfolio"))
    assert decided.intent == "clarify"
    assert decided.tool_calls == []


# --- the reading grammar ---------------------------------------------------------------------


def test_today_is_the_last_price_day_held() -> None:
    assert today_of(entry.latest_price_day for entry in DIRECTORY.entries) == TODAY


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("this year", "2023-01-01", "2023-04-14"),
        ("YTD", "2023-01-01", "2023-04-14"),
        ("year to date", "2023-01-01", "2023-04-14"),
        ("last year", "2022-01-01", "2022-12-31"),
        ("in 2022", "2022-01-01", "2022-12-31"),
        ("during 2021", "2021-01-01", "2021-12-31"),
        ("last quarter", "2023-01-01", "2023-03-31"),
        ("this quarter", "2023-04-01", "2023-04-14"),
        ("last month", "2023-03-01", "2023-03-31"),
        ("this month", "2023-04-01", "2023-04-14"),
        ("since March", "2023-03-01", "2023-04-14"),
        ("since May", "2022-05-01", "2023-04-14"),  # May is after April 14: last year's
        ("since March 2022", "2022-03-01", "2023-04-14"),
        ("since 2021", "2021-01-01", "2023-04-14"),
        ("since January 15, 2022", "2022-01-15", "2023-04-14"),
        ("over the past 6 months", "2022-10-14", "2023-04-14"),
        ("last 90 days", "2023-01-14", "2023-04-14"),
        ("past two weeks", "2023-03-31", "2023-04-14"),
        ("in the last 3 years", "2020-04-14", "2023-04-14"),
        ("the past year", "2022-04-14", "2023-04-14"),
        ("from 2021-03-01 to 2022-06-30", "2021-03-01", "2022-06-30"),
        ("between January and June 2022", "2022-01-01", "2022-06-30"),
        ("between November and February", "2022-11-01", "2023-02-28"),
        ("from March 2022 to June 2022", "2022-03-01", "2022-06-30"),
        ("between 2020 and 2022", "2020-01-01", "2022-12-31"),
        ("in Q3 2022", "2022-07-01", "2022-09-30"),
        ("in the third quarter of 2021", "2021-07-01", "2021-09-30"),
        ("in the first half of 2022", "2022-01-01", "2022-06-30"),
        ("in March 2022", "2022-03-01", "2022-03-31"),
        ("in March", "2023-03-01", "2023-03-31"),
        ("two years ago", "2021-01-01", "2021-12-31"),
    ],
)
def test_timeframes_are_resolved_against_the_last_price_day(
    text: str, start: str, end: str
) -> None:
    timeframe = read_timeframe(f"how did my portfolio do {text}", TODAY)
    assert timeframe is not None
    assert (timeframe.start, timeframe.end) == (date.fromisoformat(start), date.fromisoformat(end))


@pytest.mark.parametrize("text", ["since I bought it", "since purchase", "since I bought them"])
def test_since_purchase_has_no_start(text: str) -> None:
    timeframe = read_timeframe(f"my return {text}", TODAY)
    assert timeframe is not None and timeframe.since_purchase
    assert (timeframe.start, timeframe.end) == (None, None)


@pytest.mark.parametrize(
    ("text", "day"),
    [
        ("at the end of 2022", "2022-12-31"),
        ("at the end of last month", "2023-03-31"),
        ("as of March 31, 2023", "2023-03-31"),
    ],
)
def test_a_day_holdings_are_valued_on(text: str, day: str) -> None:
    timeframe = read_timeframe(f"what was my portfolio worth {text}", TODAY)
    assert timeframe is not None and timeframe.as_of == date.fromisoformat(day)


def test_no_timeframe_is_none() -> None:
    assert read_timeframe("what is my portfolio worth", TODAY) is None


@pytest.mark.parametrize(
    ("text", "account"),
    [
        ("cash in my Roth IRA", "Roth IRA"),
        ("my roth", "Roth IRA"),
        ("my IRA", "IRA"),
        ("my traditional IRA", "IRA"),
        ("my 401(k)", "401(k)"),
        ("my 401k", "401(k)"),
        ("my brokerage account", "brokerage"),
        ("my taxable account", "brokerage"),
        ("my cash management account", "cash management"),
        ("my Fidelity account", "Fidelity"),
        ("my joint account", "joint"),
        ("what's in my Schwab", "Schwab"),
        ("my AAPL position", None),
        ("my entire account", None),
        ("all my accounts", None),
    ],
)
def test_accounts_are_read_as_the_tools_match_them(text: str, account: str | None) -> None:
    assert read_account(text) == account


@pytest.mark.parametrize(
    ("text", "asset_class"),
    [
        ("list my ETFs", "etf"),
        ("my stocks", "equity"),
        ("my equities", "equity"),
        ("my bonds", "bond"),
        ("my crypto", "crypto"),
        ("how much is in cash", "cash"),
        ("how much cash do I have", None),
        ("my cash management account", None),
    ],
)
def test_asset_classes(text: str, asset_class: str | None) -> None:
    assert read_asset_class(text) == asset_class


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("what did I buy", ["buy"]),
        ("my purchases", ["buy"]),
        ("what I sold", ["sell"]),
        ("my sales", ["sell"]),
        ("my trades", ["buy", "sell"]),
        ("dividends and interest", ["dividend", "interest"]),
        ("deposits and contributions", ["deposit"]),
        ("withdrawals", ["withdrawal"]),
        ("transfers", ["transfer"]),
        ("fees", ["fee"]),
        ("my activity", []),
    ],
)
def test_activity_kinds(text: str, kinds: list[str]) -> None:
    assert read_activity_kinds(text) == kinds


@pytest.mark.parametrize(
    ("text", "ranking"),
    [
        ("my worst performers", ("worst", None, None)),
        ("my biggest losers", ("worst", None, None)),
        ("which lost the most", ("worst", None, None)),
        ("best performers in dollars", ("best", "usd", None)),
        ("top 3 by $ gain", ("best", "usd", 3)),
        ("my two best holdings", ("best", None, 2)),
        ("my best holding", ("best", None, 1)),
        ("by percent gain", (None, "percent", None)),
    ],
)
def test_rankings(text: str, ranking: tuple[str | None, str | None, int | None]) -> None:
    assert read_ranking(text) == ranking


@pytest.mark.parametrize(
    ("text", "condition", "threshold"),
    [
        ("falling revenue", "falling", None),
        ("declining net income", "falling", None),
        ("shrinking margins", "falling", None),
        ("growing eps", "rising", None),
        ("rising sales", "rising", None),
        ("a net margin above 20%", "above", 20.0),
        ("a margin over 20%", "above", 20.0),
        ("greater than 15.5%", "above", 15.5),
        ("gross margin below 40%", "below", 40.0),
        ("under 10 percent", "below", 10.0),
        ("revenue above $100 billion", "above", 100e9),
    ],
)
def test_screen_conditions(text: str, condition: str, threshold: float | None) -> None:
    screen = read_screen(text)
    assert (screen.condition, screen.threshold) == (condition, threshold)


@pytest.mark.parametrize(
    ("text", "year"),
    [
        ("last fiscal year", None),  # each company's latest held: the tools' default
        ("in fiscal 2022", 2022),
        ("FY22", 2022),
        ("in 2021", 2021),
        ("their 2022 10-Ks", 2022),
    ],
)
def test_fiscal_years_of_screens(text: str, year: int | None) -> None:
    assert read_fiscal_year(text) == year


@pytest.mark.parametrize(
    ("text", "largest"),
    [
        ("my two largest positions", 2),
        ("my largest holding", 1),
        ("my top 3 holdings", 3),
        ("my biggest holdings", 2),
        ("my 5 biggest positions", 5),
        ("my holdings", None),
    ],
)
def test_largest_holdings(text: str, largest: int | None) -> None:
    assert read_largest(text) == largest


def test_the_topic_of_a_filing_search_leaves_out_where_to_look() -> None:
    assert read_topic("what do their filings say about competition in their 2022 10-Ks?") == (
        "competition"
    )
    assert read_topic("what did the 10-Ks say about supply-chain risk?") == "supply-chain risk"


# --- held out: written before any rule was tuned, and never tuned against --------------------

HELD_OUT: list[Case] = [
    Case(
        "What's my IRA worth right now?",
        "portfolio_overview",
        {"get_account_value": {"account": "IRA"}},
    ),
    Case(
        "how much did I get in dividends during 2022",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["dividend"],
                "start": "2022-01-01",
                "end": "2022-12-31",
            }
        },
    ),
    Case(
        "Did I sell any NVDA shares last month?",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["sell"],
                "symbol": "NVDA",
                "start": "2023-03-01",
                "end": "2023-03-31",
            }
        },
    ),
    Case(
        "what's my 401k return year to date",
        "portfolio_performance",
        {"get_portfolio_performance": {"account": "401(k)", **this_year()}},
    ),
    Case(
        "show me my three worst holdings since I bought them",
        "portfolio_ranking",
        {"rank_holdings": {"order": "worst"}},
    ),
    Case(
        "Which of my stocks have an operating margin over 30%?",
        "portfolio_screen",
        {
            "screen_holdings": {
                "metric": "operating_margin",
                "condition": "above",
                "threshold": 30.0,
            }
        },
    ),
    Case(
        "how much uninvested cash is sitting in my brokerage account",
        "portfolio_cash",
        {"get_cash_balance": {"account": "brokerage"}},
    ),
    Case(
        "what do I own in crypto",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {"asset_class": "crypto"}},
    ),
    Case(
        "How did my Roth do in Q4 2022?",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "Roth IRA",
                "start": "2022-10-01",
                "end": "2022-12-31",
            }
        },
    ),
    Case(
        "my realized gains on Tesla",
        "portfolio_position",
        {"get_positions": {"symbols": ["TSLA"], "include_closed": True}},
    ),
    Case(
        "What contributions did I make to my 401(k) this year?",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["deposit"], "account": "401(k)", **this_year()}},
    ),
    Case(
        "what do the 10-Qs of my 3 biggest holdings say about inflation",
        "portfolio_screen",
        {"search_holdings_documents": {"query": "inflation", "largest": 3, "forms": ["10-Q"]}},
    ),
    Case(
        "biggest gainers in my portfolio in dollars over the past 6 months",
        "portfolio_ranking",
        {"rank_holdings": {"by": "usd", "start": "2022-10-14", "end": "2023-04-14"}},
    ),
    Case(
        "list every trade I made between January and March 2023",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["buy", "sell"],
                "start": "2023-01-01",
                "end": "2023-03-31",
            }
        },
    ),
    Case(
        "what about my brokerage account?",
        "portfolio_cash",
        {"get_cash_balance": {"account": "brokerage"}},
        before=("How much cash do I have in my Roth IRA?",),
    ),
]
# Measured when the held-out questions were first run, after the dev tuning: 13 of 15 (the
# misses: "Did I sell any NVDA shares" and "list every trade I made", whose phrasings no cue
# of the activity intent reads). The gate keeps that floor without tuning toward the rest.
HELD_OUT_FLOOR = 13


def test_the_held_out_questions_route_at_least_as_well_as_when_first_measured() -> None:
    assert len(HELD_OUT) == 15
    missed = [case.question for case in HELD_OUT if not case.right()]
    print(f"held out: {len(HELD_OUT) - len(missed)}/{len(HELD_OUT)} right; missed {missed}")
    assert len(HELD_OUT) - len(missed) >= HELD_OUT_FLOOR, missed


# --- the user's own money, however it is asked ----------------------------------------------
# Written for these mechanisms: the first-person ownership signal, rankings by gain, loss, size
# and weight, one account's holdings, realized gains alone, "from <month>" as that month, and
# a market index compared with.

OWN_MONEY: list[Case] = [
    # An account named by the user, or what they own: a portfolio question with no other cue.
    Case(
        "what's sitting inside our 401(k) right now?",
        "portfolio_overview",
        {"get_account_value": {"account": "401(k)"}, "get_positions": {"account": "401(k)"}},
    ),
    Case(
        "does my Roth hold anything?",
        "portfolio_overview",
        {"get_account_value": {"account": "Roth IRA"}, "get_positions": {"account": "Roth IRA"}},
    ),
    Case(
        "everything I currently own, please",
        "portfolio_overview",
        {"get_account_value": {}, "get_positions": {}},
    ),
    Case(
        "so what did the Roth contain at the close of 2022",
        "portfolio_overview",
        {
            "get_account_value": {"account": "Roth IRA", "as_of": "2022-12-31"},
            "get_positions": {"account": "Roth IRA", "as_of": "2022-12-31"},
        },
    ),
    Case(
        "give me every position held in my brokerage account",
        "portfolio_overview",
        {"get_account_value": {"account": "brokerage"}, "get_positions": {"account": "brokerage"}},
    ),
    # Money in and out in a year, and one account's performance over a span.
    Case(
        "was any cash pulled out of my accounts during 2022?",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["withdrawal"],
                "start": "2022-01-01",
                "end": "2022-12-31",
            }
        },
    ),
    Case(
        "the performance of our Roth IRA between 2021 and 2022",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "Roth IRA",
                "start": "2021-01-01",
                "end": "2022-12-31",
            }
        },
    ),
    # Dividends a holder collects, said with no "my": income, not a company's payout.
    Case(
        "sum of dividend income collected during 2021",
        "portfolio_activity",
        {
            "get_portfolio_activity": {
                "kinds": ["dividend"],
                "start": "2021-01-01",
                "end": "2021-12-31",
            }
        },
    ),
    # Rankings by loss, size and weight.
    Case(
        "which of my positions has slid the most this year?",
        "portfolio_ranking",
        {"rank_holdings": {"order": "worst", "limit": 1, **this_year()}},
    ),
    Case(
        "sort my stocks worst first",
        "portfolio_ranking",
        {"rank_holdings": {"order": "worst", "limit": 20}},
    ),
    Case(
        "what are my three largest investments?",
        "portfolio_ranking",
        {"rank_holdings": {"by": "value"}},
    ),
    Case(
        "my tiniest holding",
        "portfolio_ranking",
        {"rank_holdings": {"by": "value", "order": "worst", "limit": 1}},
    ),
    Case(
        "which stock carries the most weight in my portfolio?",
        "portfolio_ranking",
        {"rank_holdings": {"by": "weight", "limit": 1}},
    ),
    Case(
        "which position weighs most in our portfolio?",
        "portfolio_ranking",
        {"rank_holdings": {"by": "weight", "limit": 1}},
    ),
    Case(
        "show what percentage of my portfolio every holding makes up",
        "portfolio_ranking",
        {"rank_holdings": {"by": "weight", "limit": 20}},
    ),
    Case(
        "my biggest positions as of the end of 2022",
        "portfolio_ranking",
        {"rank_holdings": {"by": "value", "end": "2022-12-31"}},
    ),
    # Realized gains alone, over a span when one is named.
    Case(
        "how much profit have I realized so far this year",
        "portfolio_position",
        {"get_positions": {"include_closed": True, "start": "2023-01-01", "as_of": "2023-04-14"}},
    ),
    Case(
        "realised gains and losses on the trades in my IRA",
        "portfolio_position",
        {"get_positions": {"include_closed": True, "account": "IRA"}},
    ),
    # "From <month>" is that month.
    Case(
        "anything I sold from January 2023?",
        "portfolio_activity",
        {"get_portfolio_activity": {"kinds": ["sell"], "start": "2023-01-01", "end": "2023-01-31"}},
    ),
    # A market index compared with: the portfolio's return, the index named in the reading.
    Case(
        "has my portfolio kept up with the Nasdaq this year?",
        "portfolio_performance",
        {"get_portfolio_performance": this_year()},
    ),
    Case(
        "my 401k vs. the S&P 500 since 2021",
        "portfolio_performance",
        {
            "get_portfolio_performance": {
                "account": "401(k)",
                "start": "2021-01-01",
                "end": "2023-04-14",
            }
        },
    ),
]


@pytest.mark.parametrize("case", OWN_MONEY, ids=[case.question for case in OWN_MONEY])
def test_the_users_own_money_is_a_portfolio_question(case: Case) -> None:
    decided = route(case.question)
    assert decided.intent == case.intent, decided.understood.scores
    assert plan_of(decided) == case.plan
    # The rules decide alone: no layer after them is needed, or asked.
    assert decided.understood.unsure_layers == []


@pytest.mark.parametrize(
    ("question", "intent"),
    [
        # Advice about the user's own money is still advice.
        ("should I trim the holdings in my 401(k)?", "out_of_scope"),
        ("what would you advise for my Roth IRA?", "out_of_scope"),
        # A company's dividends, and an account kind asked about in general.
        ("how much did Microsoft pay out in dividends in fiscal 2022", "metric_lookup"),
        ("dividends received by Apple's shareholders in 2022", "metric_lookup"),
        ("What's inside a Roth IRA?", "out_of_scope"),
        ("what can a 401(k) hold?", "out_of_scope"),
        # A company's largest assets are not the user's largest holdings.
        ("What are Apple's biggest assets in 2022?", "metric_lookup"),
    ],
)
def test_what_is_not_the_users_own_money_stays_what_it_was(question: str, intent: str) -> None:
    assert route(question).intent == intent


def test_an_index_named_beside_a_comparison_is_read_for_the_answer() -> None:
    decided = route("did my Roth beat the Russell 2000 during 2022?")
    assert decided.intent == "portfolio_performance"
    assert decided.understood.portfolio is not None
    assert decided.understood.portfolio.benchmark == "the Russell 2000"
    # 2000 is the index's name, not a year: the span is 2022.
    assert plan_of(decided) == {
        "get_portfolio_performance": {
            "account": "Roth IRA",
            "start": "2022-01-01",
            "end": "2022-12-31",
        }
    }


def test_realized_gains_alone_are_read_as_such() -> None:
    alone = route("what have my realized gains been?").understood.portfolio
    assert alone is not None and alone.realized
    both = route("my realized and unrealized gains on Apple").understood.portfolio
    assert both is not None and not both.realized


def test_a_follow_up_asking_for_weight_keeps_the_ranking() -> None:
    decided = route("and by weight?", "what are my four biggest holdings")
    assert decided.intent == "portfolio_ranking"
    assert plan_of(decided) == {"rank_holdings": {"by": "weight", "limit": 4}}


def test_an_account_named_alone_after_a_question_keeps_its_kind() -> None:
    # "My 401(k)" says whose money it is, not which kind of question: the one before stays.
    decided = route("in my 401(k)?", "which of my holdings did worst this year?")
    assert decided.intent == "portfolio_ranking"
    assert plan_of(decided) == {
        "rank_holdings": {"account": "401(k)", "order": "worst", **this_year()}
    }


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("from March", "2023-03-01", "2023-03-31"),
        ("from May", "2022-05-01", "2022-05-31"),  # the latest May that has begun
        ("from February 2022", "2022-02-01", "2022-02-28"),
        ("from 2021", "2021-01-01", "2021-12-31"),
        ("from March onward", "2023-03-01", "2023-04-14"),
        ("from February 2022 to date", "2022-02-01", "2023-04-14"),
        ("from the start of March", "2023-03-01", "2023-04-14"),
        ("from the beginning of 2022", "2022-01-01", "2023-04-14"),
        ("starting in March", "2023-03-01", "2023-04-14"),
    ],
)
def test_from_a_month_or_year_alone_is_that_month_or_year(text: str, start: str, end: str) -> None:
    timeframe = read_timeframe(f"list my trades {text}", TODAY)
    assert timeframe is not None
    assert (timeframe.start, timeframe.end) == (date.fromisoformat(start), date.fromisoformat(end))


@pytest.mark.parametrize(
    ("text", "ranking"),
    [
        ("which one slid the most", ("worst", None, 1)),
        ("the ones I lost the most money on", ("worst", "usd", None)),
        ("gained the least", ("worst", None, None)),
        ("my five biggest positions", ("best", "value", 5)),
        ("my smallest holdings", ("worst", "value", None)),
        ("sorted from largest to smallest", ("best", "value", 20)),
        ("smallest to largest", ("worst", "value", 20)),
        ("the heaviest weighting", ("best", "weight", None)),
        ("what share of my portfolio each stock is", (None, "weight", 20)),
        ("my biggest losers", ("worst", None, None)),
        ("my biggest holdings by percent gain", ("best", "percent", None)),
        ("at least 20%", (None, "percent", None)),
    ],
)
def test_rankings_by_loss_size_and_weight(
    text: str, ranking: tuple[str | None, str | None, int | None]
) -> None:
    assert read_ranking(text) == ranking


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("has my Roth beaten the S&P 500", "the S&P 500"),
        ("my return vs SPX", "the S&P 500"),
        ("compared with the nasdaq composite", "the Nasdaq Composite"),
        ("my IRA against the Dow", "the Dow Jones Industrial Average"),
        ("relative to the MSCI World", "the MSCI World"),
        ("my ETFs against the index funds in my IRA", None),
        ("did I outperform the market", "a market index"),
        ("how did I do against a benchmark", "a market index"),
        ("the S&P 500 this year", None),  # named, but not compared with
        ("my market value against my cost", None),
    ],
)
def test_an_index_compared_with_is_named_as_the_answer_names_it(
    text: str, name: str | None
) -> None:
    benchmark = read_benchmark(text)
    assert (benchmark.name if benchmark else None) == name


@pytest.mark.parametrize(
    ("question", "own"),
    [
        ("what does my HSA contain", True),
        ("everything we hold", True),
        ("total dividends collected in 2022", True),
        ("did I lose money on Amazon", True),
        ("Apple dividends paid in 2022", False),
        ("I have a question about Apple's revenue", False),
        ("dividends received by Microsoft shareholders", False),
    ],
)
def test_the_user_speaking_of_their_own_money(question: str, own: bool) -> None:
    assert speaks_of_own_holdings(question) is own


def test_ranking_by_size_and_weight_is_in_the_tools_schema() -> None:
    schema = RANK_HOLDINGS_SPEC.function_definition()["function"]
    assert "weight" in schema["description"] and "value" in schema["description"]
    by = schema["parameters"]["properties"]["by"]
    named = {value for part in by.get("anyOf", [by]) for value in part.get("enum", [])}
    assert named == {"percent", "usd", "value", "weight"}
    assert RankHoldingsArgs.model_validate({"by": "weight"}).by == "weight"
    with pytest.raises(ValidationError):
        RankHoldingsArgs.model_validate({"by": "size"})
    with pytest.raises(ValidationError):
        GetPositionsArgs(start=date(2023, 2, 1), as_of=date(2023, 1, 31))


@pytest.mark.parametrize(
    ("question", "intent", "tool"),
    [
        # "The" Roth IRA or 401(k) is an account only its holder speaks of so.
        ("how did the 401k do in 2022", "portfolio_performance", "get_portfolio_performance"),
        ("what does the roth ira hold", "portfolio_overview", "get_positions"),
        # Money moved in or out: only the user's accounts have it, "my" or not.
        ("deposits in 2022?", "portfolio_activity", "get_portfolio_activity"),
        ("were there any withdrawals last year", "portfolio_activity", "get_portfolio_activity"),
        # A slip in a word of receiving is put right before the question is read.
        ("dividends recieved in 2022", "portfolio_activity", "get_portfolio_activity"),
    ],
)
def test_a_question_about_the_users_own_money_is_theirs_without_a_my(
    question: str, intent: str, tool: str
) -> None:
    decided = route(question)
    assert decided.intent == intent
    assert tool in [call.tool for call in decided.tool_calls]


def test_an_account_kind_with_an_indefinite_article_is_anyones() -> None:
    assert route("what is a roth ira").intent == "definition"
