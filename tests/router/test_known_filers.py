"""A company SEC lists and finq holds no data for is answered with which company that is and
the command that loads it; a name that fits several such companies is answered with all of
them to choose from. Questions about held companies, the user's own holdings, advice and
ordinary sentences are routed as before."""

from __future__ import annotations

import pytest

from services.router.filer_directory import FilerDirectory, english_words
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.questions import ConversationTurn, RouteDecided
from shared.sec_filers import filers_from_sec_tickers

HELD = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",)),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",)),
    )
)
FINDER = metric_finder(HELD)
APPLE, NVIDIA, COSTCO, TORO_CO, TORO_CORP = 320193, 1045810, 909832, 737758, 1951137

SEC_ROWS = {
    "0": {"cik_str": NVIDIA, "ticker": "NVDA", "title": "NVIDIA CORP"},
    "1": {"cik_str": APPLE, "ticker": "AAPL", "title": "Apple Inc."},
    "2": {"cik_str": COSTCO, "ticker": "COST", "title": "COSTCO WHOLESALE CORP /NEW"},
    # Far down SEC's list, as small filers are.
    **{
        str(3 + n): {"cik_str": 100 + n, "ticker": f"ZZ{n}", "title": f"Filler {n} Corp"}
        for n in range(1000)
    },
    "1003": {"cik_str": TORO_CO, "ticker": "TTC", "title": "TORO CO"},
    "1004": {"cik_str": TORO_CORP, "ticker": "TORO", "title": "Toro Corp."},
}


@pytest.fixture(scope="module")
def filers() -> FilerDirectory:
    return FilerDirectory(filers_from_sec_tickers(SEC_ROWS), english_words())


def route(
    question: str, filers: FilerDirectory | None, history: list[ConversationTurn] | None = None
) -> RouteDecided:
    return route_question(question, HELD, FINDER, history=history or [], filers=filers)


def test_a_company_finq_knows_of_but_does_not_hold_is_named_with_the_command_that_loads_it(
    filers: FilerDirectory,
) -> None:
    reply = route("What was Costco's revenue in fiscal 2023?", filers)

    assert reply.intent == "clarify" and not reply.tool_calls
    assert reply.clarifying_question is not None
    assert "COSTCO WHOLESALE CORP (COST)" in reply.clarifying_question
    assert "`finq ingest sec COST`" in reply.clarifying_question
    [ref] = reply.understood.filers_not_held
    assert (ref.cik, ref.tickers, ref.text) == (COSTCO, ["COST"], "Costco")


def test_without_the_directory_the_same_question_asks_which_company(
    filers: FilerDirectory,
) -> None:
    reply = route("What was Costco's revenue in fiscal 2023?", None)

    assert reply.intent == "clarify"
    assert "finq ingest sec" not in (reply.clarifying_question or "")
    assert reply.understood.filers_not_held == []


def test_a_ticker_written_as_a_ticker_is_known_too(filers: FilerDirectory) -> None:
    reply = route("$COST gross margin last year", filers)

    assert [ref.cik for ref in reply.understood.filers_not_held] == [COSTCO]


def test_a_name_that_fits_several_companies_asks_which_and_lists_them(
    filers: FilerDirectory,
) -> None:
    reply = route("Toro revenue for the last fiscal year", filers)

    assert reply.intent == "clarify"
    assert {ref.cik for ref in reply.understood.filers_not_held} == {TORO_CO, TORO_CORP}
    text = reply.clarifying_question or ""
    assert "Which do you mean?" in text
    assert "TORO CO (TTC)" in text and "Toro Corp. (TORO)" in text


def test_a_follow_up_about_a_company_not_held_does_not_borrow_the_last_company(
    filers: FilerDirectory,
) -> None:
    first = route("What was Apple's revenue in fiscal 2023?", filers)
    assert first.understood.symbols == ["AAPL"]
    turn = ConversationTurn(
        question="What was Apple's revenue in fiscal 2023?",
        intent=first.intent,
        understood=first.understood,
        tool_calls=first.tool_calls,
    )

    reply = route("And Costco?", filers, [turn])

    assert reply.intent == "clarify" and not reply.tool_calls
    assert [ref.cik for ref in reply.understood.filers_not_held] == [COSTCO]


@pytest.mark.parametrize(
    "question",
    [
        "What was Apple's revenue in fiscal 2023?",  # held
        "What does the cost of revenue include?",  # an ordinary sentence
        "Compare Apple and NVIDIA net income in 2024",
    ],
)
def test_questions_about_held_companies_and_ordinary_sentences_are_routed_as_before(
    filers: FilerDirectory, question: str
) -> None:
    with_directory, without = route(question, filers), route(question, None)

    assert with_directory.understood.filers_not_held == []
    assert with_directory.intent == without.intent
    assert with_directory.tool_calls == without.tool_calls


def test_advice_about_a_company_not_held_is_still_refused(filers: FilerDirectory) -> None:
    assert route("Should I buy Costco stock?", filers).intent == "out_of_scope"


def test_a_reply_names_a_few_of_thousands_of_companies_held_and_no_count() -> None:
    many = CompanyDirectory(
        tuple(CompanyEntry(f"C{n:04d}", f"Company {n:04d}", ()) for n in range(5000))
    )

    described = many.describe()

    assert described.startswith("Company 0000 (C0000), Company 0001 (C0001)")
    assert described.endswith("and many other companies, by name or ticker")
    assert "Company 0010" not in described
    assert HELD.describe() == "Apple (AAPL), NVIDIA (NVDA)"
