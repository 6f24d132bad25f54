"""A follow-up may refer to the turn before instead of naming it: its figure as a part of
another ("that as a share of sales"), its period ("in that quarter"), the matching quarter a
year back, or the year before beside it when the two are compared."""

from __future__ import annotations

from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry, metric_finder
from shared.contracts.questions import ConversationTurn, RouteDecided

DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",), 2025),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",), 2025),
    )
)
FINDER = metric_finder(DIRECTORY)


def conversation(*questions: str) -> list[RouteDecided]:
    history: list[ConversationTurn] = []
    routes = []
    for question in questions:
        route = route_question(question, DIRECTORY, FINDER, history=list(history))
        routes.append(route)
        history.append(
            ConversationTurn(
                question=question,
                intent=route.intent,
                understood=route.understood,
                tool_calls=route.tool_calls,
            )
        )
    return routes


def asked(route: RouteDecided) -> dict[str, object]:
    return route.tool_calls[0].arguments.model_dump(mode="json")


def test_the_figure_before_as_a_part_of_another_is_the_catalogs_ratio_of_the_two() -> None:
    *_, share = conversation("NVIDIA net income in fiscal 2024", "and that relative to revenue?")
    assert asked(share)["metrics"] == ["net_margin"]
    assert asked(share)["fiscal_years"] == [2024]
    *_, part = conversation("apple R&D fiscal 2023", "which proportion of apple's sales was it")
    assert asked(part)["metrics"] == ["research_and_development_to_revenue"]


def test_compared_with_the_year_before_asks_both_years() -> None:
    *_, compared = conversation(
        "NVIDIA net margin fiscal 2024", "how is that against the year before"
    )
    assert compared.intent == "metric_trend"
    assert asked(compared)["fiscal_years"] == [2023, 2024]


def test_a_year_before_alone_still_moves_to_that_year() -> None:
    *_, moved = conversation("Apple revenue 2023", "And the year before?")
    assert asked(moved)["fiscal_years"] == [2022]


def test_the_matching_quarter_a_year_back_and_that_quarter_take_the_quarter_before() -> None:
    _, back, same = conversation(
        "apple revenue Q1 FY2024",
        "how about the same quarter one year before?",
        "what about its gross margin for that period",
    )
    assert (asked(back)["fiscal_years"], asked(back)["fiscal_quarters"]) == ([2023], [1])
    assert asked(same)["metrics"] == ["gross_margin"]
    assert (asked(same)["fiscal_years"], asked(same)["fiscal_quarters"]) == ([2023], [1])
