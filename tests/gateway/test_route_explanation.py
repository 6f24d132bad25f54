"""The route of a question in plain words (services/gateway/route_explanation.py), as
GET /v1/traces/{trace_id} shows it: what the rules read, which layer decided and why the
others were or were not asked, what the plan called, what the validator checked."""

from __future__ import annotations

from datetime import UTC, datetime

from services.gateway.route_explanation import explain_route
from services.gateway.traces import jaeger_link, stage_runs, traced_stages
from services.router.routing import route_question
from services.router.rules import CompanyDirectory, CompanyEntry
from shared.contracts.answers import Validation, ValidationIssue
from shared.contracts.questions import RouteSummary
from shared.contracts.tool_results import ToolCall
from shared.contracts.understanding import (
    CompanyRef,
    LlmUsage,
    MetricRef,
    PeriodRef,
    PeriodSelection,
    TextSpan,
    Understood,
)
from shared.tools import GetFinancialMetricsArgs

DIRECTORY = CompanyDirectory(
    (
        CompanyEntry("AAPL", "Apple", ("apple",), 2025),
        CompanyEntry("NVDA", "NVIDIA", ("nvidia",), 2025),
    )
)
PASSED = Validation(passed=True, severity="none", numbers_checked=2)
METRICS_CALL = ToolCall.of(GetFinancialMetricsArgs(symbols=["AAPL"], metrics=["revenue"]))


def routed(question: str) -> RouteSummary:
    return RouteSummary.of(route_question(question, DIRECTORY))


def test_a_question_the_rules_decided_alone_says_what_they_read_and_that_nothing_else_was_asked():
    assert explain_route(routed("What was Apple's revenue in fiscal 2023?"), PASSED) == (
        "the rules read 'Apple's' as Apple (AAPL), revenue and 'fiscal 2023' as FY2023; "
        "the rules decided metric_lookup alone (score 4), so the classifier was not needed; "
        "the plan called get_financial_metrics; "
        "the validator checked 2 numbers and passed the answer."
    )


def test_a_misspelt_figure_says_how_it_was_read_and_a_runner_up_intent_is_named():
    explained = explain_route(routed("Apple vs NVIDIA reveune FY23"))
    assert "'reveune' as 'revenue' (a slip)" in explained
    assert "'NVIDIA' as NVIDIA (NVDA)" in explained
    assert "the rules decided metric_comparison alone (score" in explained
    assert " against " in explained and "for metric_lookup" in explained
    assert "validator" not in explained  # no validation given: nothing said of it


def test_unsure_rules_with_no_other_layer_keep_their_reading_and_the_planner_may_change_it():
    explained = explain_route(routed("What was revenue in 2023?"))
    assert "the rules were unsure (metric_lookup scored 1.5) and no other layer was there" in (
        explained
    )
    assert "their best reading stands: metric_lookup, and the planner made it clarify" in (
        explained
    )
    assert "no tool was called: a clarifying question went back" in explained
    assert "not needed" not in explained


def test_unread_words_and_an_out_of_scope_question_are_said():
    explained = explain_route(routed("tell me a joke"))
    assert "the rules read no company, figure or period; nothing read 'joke'" in explained
    assert "no tool was called: the question is outside what finq answers" in explained


def route(decided_by: str, unsure: list[str] | None, **understood: object) -> RouteSummary:
    return RouteSummary(
        intent="metric_trend",
        decided_by=decided_by,  # type: ignore[arg-type]
        confidence=0.87,
        tool_calls=[METRICS_CALL],
        understood=Understood(
            companies=[CompanyRef(symbol="AAPL", name="Apple", text="apple")],
            metrics=[MetricRef(id="net_income", text="profit", method="embedding")],
            periods=PeriodSelection(
                asked=[
                    PeriodRef(
                        kind="fiscal_quarter", text="Q3 FY24", fiscal_year=2024, fiscal_quarter=3
                    )
                ]
            ),
            scores={"metric_lookup": 1.5, "metric_trend": 1.0},
            unsure_layers=unsure,  # type: ignore[arg-type]
            **understood,  # type: ignore[arg-type]
        ),
    )


def test_the_classifier_deciding_says_the_rules_were_unsure_and_how_sure_it_was():
    explained = explain_route(route("classifier", ["rules"]))
    assert explained.startswith(
        "the rules read 'apple' as Apple (AAPL), 'profit' as net income (similar meaning) and "
        "'Q3 FY24' as Q3 FY2024; the rules were unsure (metric_lookup scored 1.5), so the "
        "trained classifier chose metric_trend (probability 0.87); "
    )


def test_the_model_deciding_says_both_layers_before_it_were_unsure_and_what_it_cost():
    usage = LlmUsage(model="gpt-4o-mini", prompt_tokens=300, completion_tokens=20, calls=2)
    explained = explain_route(route("llm", ["rules", "classifier"], llm=usage))
    assert (
        "the rules were unsure (metric_lookup scored 1.5) and so was the classifier, so the "
        "model chose metric_trend (gpt-4o-mini, 2 calls, 320 tokens)"
    ) in explained


def test_when_no_layer_was_sure_the_rules_reading_stands_and_the_others_are_named():
    explained = explain_route(route("rules", ["rules", "classifier", "llm"]))
    assert (
        "the rules were unsure (metric_lookup scored 1.5), and so were the classifier and "
        "the model, so their best reading stands: metric_lookup, and the planner made it "
        "metric_trend"
    ) in explained


def test_a_route_logged_before_the_layers_were_recorded_claims_nothing_about_them():
    explained = explain_route(route("rules", None))
    assert "the rules decided metric_lookup (score 1.5 against 1 for metric_trend)" in explained
    assert "alone" not in explained and "not needed" not in explained


def test_a_conversation_follow_up_a_scope_a_refused_tool_and_unread_words_are_said():
    summary = route(
        "conversation",
        [],
        inherited=["periods"],
        not_understood=[TextSpan(text="wearables", start=0, end=9)],
        refused_tools=["get_prices"],
    )
    explained = explain_route(summary)
    assert "and took the periods from the turn before; nothing read 'wearables'" in explained
    assert "the conversation decided metric_lookup alone" in explained
    assert "the plan named get_prices, outside what metric_trend may call: refused" in explained


def test_the_validators_findings_attempts_and_repairs_are_counted():
    validation = Validation(
        passed=True,
        severity="low",
        numbers_checked=1,
        attempts=2,
        issues=[ValidationIssue(kind="year", text="2020", message="…", severity="low")],
        repairs=["patched $1.0 billion to $1.2 billion (…)"],
    )
    assert explain_route(route("rules", []), validation).endswith(
        "the validator checked 1 number, found 1 issue (worst: low) and passed the answer "
        "after 2 attempts, with 1 repair."
    )
    failed = Validation(passed=False, severity="high", numbers_checked=3)
    assert explain_route(route("rules", []), failed).endswith(
        "the validator checked 3 numbers and did not pass the answer."
    )


def test_the_trace_links_to_jaeger_only_when_it_is_configured():
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    assert jaeger_link(None, trace_id) is None
    assert jaeger_link("http://localhost:16686/", trace_id) == (
        f"http://localhost:16686/trace/{trace_id}"
    )


def test_a_repaired_answer_shows_each_attempts_runs_and_an_old_row_its_durations_alone():
    at = datetime(2024, 1, 1, tzinfo=UTC).isoformat()
    logged = [
        {"stage": stage, "attempt": attempt, "started_at": at, "duration_ms": 1.0}
        for stage, attempt in [
            ("router", 0),
            ("tools", 0),
            ("answerer", 0),
            ("validator", 0),
            ("answerer", 1),
            ("validator", 1),
        ]
    ]
    stages = traced_stages(stage_runs(logged, {}), route("rules", []), [], PASSED, {})
    assert [(s.stage, s.attempt) for s in stages] == [
        ("router", 0),
        ("tools", 0),
        ("answerer", 0),
        ("validator", 0),
        ("answerer", 1),
        ("validator", 1),
    ]
    assert stages[2].decision == "wrote an answer the validator sent back"
    assert stages[3].decision == "sent the answer back to be written again with its findings"
    assert stages[5].decision.startswith("passed (severity none; 2 numbers checked")
    old = stage_runs([], {"router": 2.0, "tools": 3.0, "answerer": 1.0, "validator": 4.0})
    assert [(run.stage, run.started_at, run.duration_ms) for run in old] == [
        ("router", None, 2.0),
        ("tools", None, 3.0),
        ("answerer", None, 1.0),
        ("validator", None, 4.0),
    ]
