"""Coverage: a figure is answered only when the route covers the whole question. A segment,
a product line, a region or words nothing read send the question to the filings, and when
no filing text is held the reply names what finq can answer instead, never a wider figure."""

from __future__ import annotations

import typing
from datetime import date

import pytest

from services.answerer.drafting import DRAFTERS, draft_answer
from services.router.coverage import leftovers, meaningful, scope_of
from services.router.planning import PLANNERS
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry
from services.validator.finalizing import validate_draft
from shared.contracts.answers import ToolsCompleted
from shared.contracts.tool_results import ToolResult
from shared.intents import INTENTS, DrafterKind, PlannerKind
from shared.tools import SearchDocumentsArgs

DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",), 2025, date(2025, 6, 30)),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",), 2025, date(2025, 6, 30)),
        CompanyEntry(
            "GOOGL", "Alphabet", ("alphabet", "google"), 2024, date(2025, 6, 30), ("GOOG",)
        ),
        CompanyEntry("TSLA", "Tesla", ("tesla",), 2024, date(2025, 6, 30)),
    )
)


def test_every_intent_names_a_planner_and_a_drafter_that_exist_and_every_kind_is_used() -> None:
    assert {intent.planner for intent in INTENTS} == set(PLANNERS)
    assert {intent.drafter for intent in INTENTS} == set(DRAFTERS)
    assert set(typing.get_args(PlannerKind)) == set(PLANNERS)
    assert set(typing.get_args(DrafterKind)) == set(DRAFTERS)


@pytest.mark.parametrize(
    ("question", "symbol", "scope", "kind"),
    [
        ("What were Apple's iPhone net sales in fiscal 2024?", "AAPL", "iPhone", "product"),
        ("Greater China revenue for Apple in 2024", "AAPL", "Greater China", "geography"),
        ("NVIDIA data center revenue fiscal 2025", "NVDA", "NVIDIA data center", "segment"),
        ("Google Cloud operating income in 2024", "GOOGL", "Google Cloud", "segment"),
        ("Tesla automotive revenue 2023", "TSLA", "Tesla automotive", "segment"),
    ],
)
def test_a_scoped_figure_goes_to_the_filings_not_to_the_company_total(
    question: str, symbol: str, scope: str, kind: str
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "document_search"
    [call] = route.tool_calls
    assert call.tool == "search_documents"
    assert call.arguments.symbols == [symbol]
    scopes = [s for m in route.understood.metrics for s in m.scope]
    assert [(s.text.lower(), s.kind) for s in scopes][:1] == [(scope.lower(), kind)]
    assert not route.understood.covered


def test_words_nothing_read_are_listed_and_keep_the_figure_from_being_answered() -> None:
    route = route_question("Apple revenue from wombats in fiscal 2023", DIRECTORY)
    assert route.intent == "document_search"
    assert [span.text for span in route.understood.not_understood] == ["wombats"]
    span = route.understood.not_understood[0]
    assert route.question[span.start : span.end] == "wombats"


@pytest.mark.parametrize(
    "question",
    [
        "What was Apple's revenue in fiscal 2023?",
        "Tell me NVIDIA's gross margin for FY2025 please",
        "What was Apple revenue in fiscal 2023 according to its 10-K?",
        "how much did Tesla make in 2023",
        "Alphabet total revenue 2024",
    ],
)
def test_a_question_read_whole_is_answered_with_its_figure(question: str) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "metric_lookup"
    assert route.understood.covered, route.understood.not_understood


def test_a_share_class_ticker_names_its_company() -> None:
    route = route_question("GOOG net income 2023", DIRECTORY)
    assert route.intent == "metric_lookup"
    assert route.tool_calls[0].arguments.symbols == ["GOOGL"]
    assert route.understood.companies[0].text == "GOOG"


def test_a_question_the_catalog_has_no_figure_for_searches_the_companys_filings() -> None:
    route = route_question("How many employees did Apple have in fiscal 2024?", DIRECTORY)
    assert route.intent == "document_search"
    assert route.tool_calls[0].arguments == SearchDocumentsArgs(
        query="How many employees did Apple have in fiscal 2024?",
        symbols=["AAPL"],
        fiscal_year=2024,
        limit=5,
    )


def test_with_no_filing_text_held_the_reply_says_what_finq_can_answer_instead() -> None:
    route = route_question("What were Apple's iPhone net sales in fiscal 2024?", DIRECTORY)
    nothing = ToolResult(
        tool="search_documents",
        arguments=route.tool_calls[0].arguments,
        missing=["a passage about iPhone net sales"],
    )
    draft = draft_answer(ToolsCompleted(route=route, results=[nothing]))
    assert draft.facts == []
    assert "finq holds Apple's revenue as a company total, not iPhone revenue" in draft.answer
    assert "product line" in draft.answer
    validated = validate_draft(draft)
    assert validated.validation.passed, validated.validation.issues


def test_filler_is_not_a_qualifier_and_qualifiers_are_told_apart() -> None:
    assert not meaningful("according to its 10 k")
    assert meaningful("wombats")
    assert scope_of("Americas") is not None and scope_of("Americas").kind == "geography"  # type: ignore[union-attr]
    scopes, unread = leftovers(["services", "please"], "Apple services revenue please")
    assert [s.kind for s in scopes] == ["segment"] and unread == []


def test_a_qualifier_that_repeats_the_figures_own_definition_is_read_as_that_figure() -> None:
    # The catalog defines income taxes paid as "cash paid for income taxes, net of refunds".
    route = route_question(
        "Alphabet cash paid for income taxes, net of refunds, in 2023", DIRECTORY
    )
    assert route.intent == "metric_lookup"
    assert route.tool_calls[0].arguments.metrics == ["income_taxes_paid"]
    assert route.understood.covered
    # A basis the definition does not state is not read into it.
    route = route_question(
        "Alphabet cash paid for income taxes, net of credits, in 2023", DIRECTORY
    )
    assert route.intent == "document_search"
    assert [span.text for span in route.understood.not_understood] == ["credits"]


def test_with_no_passage_found_the_reply_names_what_was_looked_for() -> None:
    route = route_question(
        "What did Alphabet disclose about the DOJ antitrust lawsuit in its 2023 10-K?", DIRECTORY
    )
    nothing = ToolResult(tool="search_documents", arguments=route.tool_calls[0].arguments)
    draft = draft_answer(ToolsCompleted(route=route, results=[nothing]))
    assert draft.answer.startswith("No passage about “DOJ antitrust lawsuit” was found")


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        ("What was NVIDIA's inventory balance at the end of fiscal 2024?", "inventory"),
        ("How much did NVIDIA pay out in dividends in fiscal 2024?", "dividends_paid"),
    ],
)
def test_words_that_only_restate_a_figure_leave_it_covered(question: str, metric: str) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "metric_lookup"
    assert route.tool_calls[0].arguments.metrics == [metric]


@pytest.mark.parametrize(
    ("question", "unread"),
    [
        # A flow asked of a balance: the balance is not the answer.
        ("How much did Alphabet spend on goodwill in 2023?", "spend"),
        ("How much cash did Apple generate in fiscal 2024?", "generate"),
        # A count asked of a dollar figure.
        ("How many shares did Apple repurchase in fiscal 2023?", "How many shares"),
        # An adjective of the figure and a forecast are no passing verbs.
        ("Apple's forecasted revenue for fiscal 2024", "forecasted"),
        ("What revenue is Apple expected to report in fiscal 2024?", "expected"),
    ],
)
def test_a_figure_asked_another_way_than_it_is_held_is_not_answered_with_it(
    question: str, unread: str
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "document_search"
    assert unread in [span.text for span in route.understood.not_understood]


def test_a_verb_that_only_says_how_a_balance_is_asked_leaves_it_covered() -> None:
    route = route_question("How much inventory was NVIDIA sitting on in fiscal 2023?", DIRECTORY)
    assert route.intent == "metric_lookup"
    assert route.tool_calls[0].arguments.metrics == ["inventory"]


def test_a_day_the_period_grammar_did_not_read_keeps_the_figure_from_being_answered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stand in for a wording the period grammar does not know: it reads the year, not the day.
    from services.router import rules

    reading = rules.find_periods

    def without_days(text: str, *args: object, **kwargs: object) -> rules.Periods:
        periods = reading(text, *args, **kwargs)  # type: ignore[arg-type]
        periods.spans = [(s, e) for s, e in periods.spans if "March" not in text[s:e]]
        return periods

    monkeypatch.setattr(rules, "find_periods", without_days)
    route = route_question("Apple inventory on its balance sheet at March 30, 2024", DIRECTORY)
    assert route.intent == "document_search"
    assert "March 30, 2024" in [span.text for span in route.understood.not_understood]


def test_a_balance_sheet_dated_a_day_is_the_balance_on_that_day() -> None:
    route = route_question("Apple inventory on its balance sheet dated March 30, 2024", DIRECTORY)
    assert route.intent == "metric_lookup"
    assert route.understood.covered


@pytest.mark.parametrize(
    ("question", "scope"),
    [
        ("How much did Google Cloud bring in during 2024?", "Google Cloud"),
        ("How much did Apple's iPhone business bring in during fiscal 2024?", "iPhone business"),
    ],
)
def test_a_segment_asked_with_a_verb_is_not_answered_with_the_company_total(
    question: str, scope: str
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "document_search"
    assert [s.text for m in route.understood.metrics for s in m.scope] == [scope]


@pytest.mark.parametrize(
    ("question", "metric"),
    [
        # Beside a cash flow figure, "cash" is the money it moved, not the cash balance.
        ("How much cash did Apple spend buying back its own stock in fiscal 2023?",
         "share_repurchases"),
        ("Alphabet stock-based comp expense per the cash flow statement, 2023",
         "stock_based_compensation"),
        # The user's own gloss names the figure their other words describe.
        ("Apple: amount owed to suppliers (accounts payable) at fiscal year-end 2022",
         "accounts_payable"),
        # A multiple a stock trades at; a slip and a joining word before a name.
        ("What price-to-earnings multiple did NVIDIA trade at for fiscal 2022?", "pe_ratio"),
        ("Tesla retrun on assets in 2021", "return_on_assets"),
    ],
)  # fmt: skip
def test_a_figure_described_in_the_users_own_words_is_read_as_that_figure(
    question: str, metric: str
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.intent == "metric_lookup", route.understood.not_understood
    assert route.tool_calls[0].arguments.metrics == [metric]


def test_a_gloss_never_passes_over_a_basis_word_or_a_period() -> None:
    route = route_question("Apple forecasted revenue (revenue) 2024", DIRECTORY)
    assert route.intent == "document_search"
    assert [span.text for span in route.understood.not_understood] == ["forecasted"]


@pytest.mark.parametrize(
    ("question", "metrics"),
    [
        # A figure explained by its inputs, or its inputs glossed by its name, is that figure.
        ("Tesla's free cash flow in 2021 (operating cash flow less capex)?", ["free_cash_flow"]),
        ("For every dollar of 2021 revenue, how many cents did Tesla keep as net profit? "
         "(net margin)", ["net_margin"]),
        # Two figures asked beside a parenthesis are both asked.
        ("Apple's gross margin and revenue (fiscal 2023)", ["gross_margin", "revenue"]),
        # A figure set aside is not asked; a coverage ratio in either order.
        ("Alphabet cash and equivalents at the end of 2021, not the marketable securities",
         ["cash_and_equivalents"]),
        ("How many times over did Apple's operating income cover its interest expense in "
         "fiscal 2022?", ["interest_coverage"]),
        ("Which covered its interest expense more times over with operating income in fiscal "
         "2021, Apple or Tesla?", ["interest_coverage"]),
        ("Alphabet's return on average total assets for 2024", ["return_on_assets"]),
    ],
)  # fmt: skip
def test_what_the_user_explains_sets_aside_or_glosses_is_read_as_they_mean_it(
    question: str, metrics: list[str]
) -> None:
    route = route_question(question, DIRECTORY)
    assert route.understood.covered, route.understood.not_understood
    assert route.tool_calls[0].arguments.metrics == metrics


def test_a_basis_the_user_excludes_is_never_set_aside() -> None:
    route = route_question("Apple net income excluding restructuring in fiscal 2023", DIRECTORY)
    assert route.intent == "document_search"


def test_a_figure_asked_with_a_verb_reads_its_subject() -> None:
    route = route_question("How many Apple shares were outstanding in fiscal 2024?", DIRECTORY)
    assert route.tool_calls[0].arguments.metrics == ["shares_outstanding"]
    route = route_question("what did google cloud make in 2024", DIRECTORY)
    assert route.intent == "document_search"
    assert [s.text for m in route.understood.metrics for s in m.scope] == ["google cloud"]
