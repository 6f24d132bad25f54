"""Stage events without a broker: what each stage's result tells, on which subject, and
that telling one never fails or holds up the stage's work."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from shared import bus, subjects
from shared.contracts.answers import (
    AnswerDrafted,
    AnswerValidated,
    Generation,
    ToolsCompleted,
    Validation,
)
from shared.contracts.documents import DocumentUploaded
from shared.contracts.envelope import Envelope, new_deadline
from shared.contracts.events import RoutedSummary, StageEvent
from shared.contracts.failures import StageFailed
from shared.contracts.questions import QuestionAsked, RouteDecided
from shared.contracts.tool_results import Passage, ToolCall, ToolError, ToolResult
from shared.nats_permissions import may_publish, may_subscribe, subject_matches
from shared.runtime import failure_reporter
from shared.stage_events import (
    DraftTextTeller,
    StageEventPublisher,
    failure_event,
    stage_event,
    telling_stage_events,
)
from shared.subjects import Stage
from tests.helpers import make_fact

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
METRICS_CALL = ToolCall(
    tool="get_financial_metrics",
    arguments={"symbols": ["AAPL"], "metrics": ["revenue"], "fiscal_years": [2023]},
)


def envelope_of(payload: BaseModel, request_id: str = "r1", attempt: int = 0) -> Envelope[Any]:
    return Envelope[type(payload)](  # type: ignore[misc]
        request_id=request_id,
        conversation_id="c1",
        user_id="u1",
        attempt=attempt,
        deadline=new_deadline(60),
        payload=payload,
    )


def route() -> RouteDecided:
    return RouteDecided(
        question="What was Apple's revenue in fiscal 2023?",
        intent="metric_lookup",
        tool_calls=[METRICS_CALL],
        decided_by="rules",
        confidence=0.8,
    )


def passage(index: int) -> Passage:
    return Passage(
        source_id=f"doc:d1:{index}",
        document_id="d1",
        title="Apple 10-K 2023",
        collection="filings",
        chunk_index=index,
        text="Net sales grew.",
        score=0.5,
    )


def draft(needs_clarification: bool = False) -> AnswerDrafted:
    return AnswerDrafted(
        route=route(),
        answer="Apple's revenue in fiscal 2023 was $383.3 billion.",
        needs_clarification=needs_clarification,
        generation=Generation(mode="llm", model="a-model"),
    )


def answer() -> AnswerValidated:
    return AnswerValidated(
        answer="Apple's revenue in fiscal 2023 was $383.3 billion.",
        validation=Validation(
            passed=True, severity="low", attempts=2, repairs=["patched 383.2 to 383.3"]
        ),
    )


# --- what each stage's result tells ----------------------------------------------------


def test_the_router_tells_its_intent_who_decided_it_and_the_tool_calls() -> None:
    event = stage_event(Stage.ROUTER, envelope_of(route(), attempt=1), 12.34567, AT)
    assert event is not None
    assert (event.request_id, event.stage, event.kind, event.attempt) == (
        "r1",
        Stage.ROUTER,
        "routed",
        1,
    )
    assert (event.at, event.elapsed_ms) == (AT, 12.346)
    assert event.summary == RoutedSummary(
        intent="metric_lookup", decided_by="rules", confidence=0.8, tool_calls=[METRICS_CALL]
    )


def test_the_tools_tell_each_tool_with_its_arguments_counts_and_error_code() -> None:
    found = ToolResult(
        tool="get_financial_metrics",
        arguments=METRICS_CALL.arguments,
        facts=[make_fact(383_285_000_000.0), make_fact(394_328_000_000.0, year=2022)],
    )
    searched = ToolResult(
        tool="search_documents", arguments={"query": "growth"}, passages=[passage(0), passage(1)]
    )
    failed = ToolResult(
        tool="get_prices",
        arguments={"symbol": "AAPL"},
        error=ToolError(code="no_prices", message="no prices held for AAPL"),
    )
    completed = ToolsCompleted(route=route(), results=[found, searched, failed])
    event = stage_event(Stage.TOOLS, envelope_of(completed), 3.0, AT)
    assert event is not None and event.kind == "tools_done"
    dumped = event.summary.model_dump()
    assert dumped == {
        "kind": "tools_done",
        "tools": [
            {
                "tool": "get_financial_metrics",
                "arguments": {
                    "symbols": ["AAPL"],
                    "metrics": ["revenue"],
                    "period": "annual",
                    "fiscal_years": [2023],
                },
                "facts": 2,
                "passages": 0,
                "error_code": None,
            },
            {
                "tool": "search_documents",
                "arguments": {"query": "growth", "limit": 5},
                "facts": 0,
                "passages": 2,
                "error_code": None,
            },
            {
                "tool": "get_prices",
                "arguments": {"symbol": "AAPL"},
                "facts": 0,
                "passages": 0,
                "error_code": "no_prices",
            },
        ],
    }


def test_the_answerer_tells_how_it_wrote_and_whether_it_asks_back() -> None:
    event = stage_event(Stage.ANSWERER, envelope_of(draft(needs_clarification=True)), 1.0, AT)
    assert event is not None and event.kind == "drafted"
    assert event.summary.model_dump() == {
        "kind": "drafted",
        "mode": "llm",
        "needs_clarification": True,
    }


def test_the_validator_tells_its_verdict_attempts_and_how_many_repairs() -> None:
    event = stage_event(Stage.VALIDATOR, envelope_of(answer()), 2.0, AT)
    assert event is not None and event.kind == "validated"
    assert event.summary.model_dump() == {
        "kind": "validated",
        "passed": True,
        "severity": "low",
        "attempts": 2,
        "repairs": 1,
    }


@pytest.mark.parametrize(
    ("stage", "payload"),
    [
        # The validator sending a draft back: the stages that redo it tell their own events.
        (Stage.VALIDATOR, route()),
        (Stage.VALIDATOR, ToolsCompleted(route=route())),
        # Uploads are read with no one streaming them.
        (Stage.INGEST, DocumentUploaded(document_id="d1", file_name="a.pdf")),
        # A payload that is not the stage's result of record.
        (Stage.ROUTER, QuestionAsked(question="Apple revenue")),
    ],
)
def test_a_result_that_is_no_step_of_its_own_tells_nothing(
    stage: Stage, payload: BaseModel
) -> None:
    assert stage_event(stage, envelope_of(payload), 1.0, AT) is None


def test_giving_up_tells_a_failed_event_with_the_code_and_no_elapsed_time() -> None:
    failed = StageFailed(stage=Stage.TOOLS, code="stage_failed", message="failed 5 times")
    event = failure_event(Stage.TOOLS, envelope_of(route(), attempt=2), failed, AT)
    assert (event.kind, event.stage, event.attempt, event.elapsed_ms) == (
        "failed",
        Stage.TOOLS,
        2,
        None,
    )
    assert event.summary.model_dump() == {
        "kind": "failed",
        "code": "stage_failed",
        "message": "failed 5 times",
    }


def test_an_event_reads_back_from_its_json_and_its_kind_must_be_its_summarys() -> None:
    event = stage_event(Stage.ROUTER, envelope_of(route()), 1.0, AT)
    assert event is not None
    assert StageEvent.model_validate_json(event.model_dump_json()) == event
    mismatched = event.model_dump(mode="json") | {"kind": "validated"}
    with pytest.raises(ValidationError, match="a validated event with a routed summary"):
        StageEvent.model_validate(mismatched)


# --- subjects and who may use them ----------------------------------------------------


def test_one_requests_events_are_one_subscription_and_each_stage_publishes_its_own() -> None:
    listening = subjects.request_events_subject("r1")
    for stage in subjects.STAGE_EVENT_STAGES:
        told = subjects.stage_event_subject("r1", stage)
        assert subject_matches(listening, told)
        assert not subject_matches(listening, subjects.stage_event_subject("r2", stage))
        assert may_publish(stage, told)
        assert may_subscribe(Stage.GATEWAY, told)
        assert not may_subscribe(stage, told)
        for other in Stage:
            if other is not stage:
                assert not may_publish(other, told), (other, told)
    assert not may_publish(Stage.GATEWAY, subjects.stage_event_subject("r1", Stage.GATEWAY))


@pytest.mark.parametrize("request_id", ["", "a.b", "a*", ">", "a b"])
def test_a_request_id_that_is_no_subject_token_gets_no_subject(request_id: str) -> None:
    with pytest.raises(ValueError, match="subject token"):
        subjects.stage_event_subject(request_id, Stage.ROUTER)
    with pytest.raises(ValueError, match="subject token"):
        subjects.request_events_subject(request_id)


# --- publishing: best effort ----------------------------------------------------------


@dataclass
class RecordingConnection:
    """Stands in for nats-py's client: what was published, or the error publishing raises."""

    is_connected: bool = True
    error: Exception | None = None
    published: list[tuple[str, bytes]] = field(default_factory=list)

    async def publish(
        self, subject: str, payload: bytes, headers: dict[str, str] | None = None
    ) -> None:
        if self.error is not None:
            raise self.error
        self.published.append((subject, payload))


def publisher_on(connection: RecordingConnection, stage: Stage) -> StageEventPublisher:
    return StageEventPublisher(connection, stage)  # type: ignore[arg-type]


async def test_an_event_is_published_on_its_requests_subject_under_the_stages_name() -> None:
    connection = RecordingConnection()
    event = stage_event(Stage.ROUTER, envelope_of(route()), 1.0, AT)
    assert event is not None
    await publisher_on(connection, Stage.ROUTER).publish(event)
    [(subject, payload)] = connection.published
    assert subject == "finq.v3.events.r1.router"
    assert StageEvent.model_validate_json(payload) == event


async def test_nothing_is_published_while_the_connection_is_down() -> None:
    connection = RecordingConnection(is_connected=False)
    output = bus.Forward(subjects.ROUTE_DECIDED, envelope_of(route()))
    await publisher_on(connection, Stage.ROUTER).tell_result(output, 1.0)
    assert connection.published == []


@pytest.mark.parametrize(
    "error", [ConnectionError("lost"), RuntimeError("buffer full"), ValueError("bad subject")]
)
async def test_a_publish_that_fails_is_swallowed(error: Exception) -> None:
    connection = RecordingConnection(error=error)
    output = bus.Forward(subjects.ROUTE_DECIDED, envelope_of(route()))
    await publisher_on(connection, Stage.ROUTER).tell_result(output, 1.0)
    failed = StageFailed(stage=Stage.ROUTER, code="stage_failed", message="gave up")
    await publisher_on(connection, Stage.ROUTER).tell_failure(envelope_of(route()), failed)


async def test_a_request_id_no_subject_can_carry_is_skipped_not_raised() -> None:
    connection = RecordingConnection()
    output = bus.Forward(subjects.ROUTE_DECIDED, envelope_of(route(), request_id="a.b"))
    await publisher_on(connection, Stage.ROUTER).tell_result(output, 1.0)
    assert connection.published == []


def watched(envelope: Envelope[Any]) -> Envelope[Any]:
    return envelope.model_copy(update={"watched": True})


async def test_a_handlers_result_is_told_before_it_goes_on_and_returned_unchanged() -> None:
    connection = RecordingConnection()
    forwarded = bus.Forward(subjects.ROUTE_DECIDED, watched(envelope_of(route())))

    async def route_it(_: Envelope[Any]) -> bus.StageOutput:
        assert connection.published == []
        return forwarded

    handler = telling_stage_events(route_it, publisher_on(connection, Stage.ROUTER))
    # Told by the time the result is handed to the bus, which then forwards it.
    asked = watched(envelope_of(QuestionAsked(question="Apple revenue")))
    assert await handler(asked) is forwarded
    [(_, payload)] = connection.published
    event = StageEvent.model_validate_json(payload)
    assert event.kind == "routed" and event.elapsed_ms is not None and event.elapsed_ms >= 0


async def test_a_request_no_client_watches_tells_no_event_and_gives_up_with_a_notice_only() -> None:
    connection = RecordingConnection()
    forwarded = bus.Forward(subjects.ROUTE_DECIDED, envelope_of(route()))

    async def route_it(_: Envelope[Any]) -> bus.StageOutput:
        return forwarded

    handler = telling_stage_events(route_it, publisher_on(connection, Stage.ROUTER))
    assert await handler(envelope_of(QuestionAsked(question="Apple revenue"))) is forwarded
    assert connection.published == []
    publisher = bus.Publisher(connection, None, Stage.TOOLS)  # type: ignore[arg-type]
    report = failure_reporter(Stage.TOOLS, publisher, publisher_on(connection, Stage.TOOLS))
    asked = envelope_of(route()).model_copy(update={"reply_to": subjects.reply_subject("g1")})
    await report(asked, "failed 5 times: boom")
    [(notice, _)] = connection.published
    assert notice == subjects.failure_subject("g1")


async def test_a_stage_that_gives_up_tells_failed_before_the_gateway_hears_it() -> None:
    connection = RecordingConnection()
    publisher = bus.Publisher(connection, None, Stage.TOOLS)  # type: ignore[arg-type]
    report = failure_reporter(Stage.TOOLS, publisher, publisher_on(connection, Stage.TOOLS))
    asked = envelope_of(route()).model_copy(
        update={"reply_to": subjects.reply_subject("g1"), "watched": True}
    )
    await report(asked, "failed 5 times: boom")
    [(told, event), (notice, _)] = connection.published
    assert told == subjects.stage_event_subject("r1", Stage.TOOLS)
    assert notice == subjects.failure_subject("g1")
    summary = StageEvent.model_validate_json(event).summary
    assert summary.model_dump() == {
        "kind": "failed",
        "code": "stage_failed",
        "message": "failed 5 times: boom",
    }


async def test_a_handler_that_raises_tells_nothing_and_its_error_goes_on() -> None:
    connection = RecordingConnection()

    async def fail(_: Envelope[Any]) -> bus.StageOutput:
        raise bus.PoisonMessage("no route")

    handler = telling_stage_events(fail, publisher_on(connection, Stage.ROUTER))
    with pytest.raises(bus.PoisonMessage):
        await handler(envelope_of(QuestionAsked(question="Apple revenue")))
    assert connection.published == []


# --- a model's draft text, as it is written -------------------------------------------


def draft_texts(connection: RecordingConnection) -> list[StageEvent]:
    events = [StageEvent.model_validate_json(payload) for _, payload in connection.published]
    assert {subject for subject, _ in connection.published} <= {"finq.v3.events.r1.answerer"}
    assert all(event.kind == "draft_text" and event.elapsed_ms is None for event in events)
    return events


async def test_draft_text_is_told_piece_by_piece_in_order_under_the_answerers_name() -> None:
    connection = RecordingConnection()
    teller = DraftTextTeller(publisher_on(connection, Stage.ANSWERER), "r1", 1, 0.0)
    for piece in ["Apple's ", "", "revenue ", "was $383.3 billion."]:
        await teller.wrote(piece)
    await teller.finished()
    events = draft_texts(connection)
    assert [(e.summary.seq, e.summary.text) for e in events] == [  # type: ignore[union-attr]
        (0, "Apple's "),
        (1, "revenue "),
        (2, "was $383.3 billion."),
    ]
    assert {event.attempt for event in events} == {1}


async def test_pieces_written_within_the_interval_are_told_together_and_the_rest_at_the_end() -> (
    None
):
    connection = RecordingConnection()
    teller = DraftTextTeller(publisher_on(connection, Stage.ANSWERER), "r1", 0, 3600.0)
    for piece in ["Apple's ", "revenue ", "was ", "$383.3 billion."]:
        await teller.wrote(piece)
    assert len(connection.published) == 1  # the first piece goes at once
    await teller.finished()
    texts = [event.summary.text for event in draft_texts(connection)]  # type: ignore[union-attr]
    assert texts == ["Apple's ", "revenue was $383.3 billion."]


async def test_a_draft_with_no_text_tells_nothing_and_a_failing_publish_is_swallowed() -> None:
    quiet = RecordingConnection()
    await DraftTextTeller(publisher_on(quiet, Stage.ANSWERER), "r1", 0).finished()
    assert quiet.published == []
    failing = RecordingConnection(error=ConnectionError("lost"))
    teller = DraftTextTeller(publisher_on(failing, Stage.ANSWERER), "r1", 0, 0.0)
    await teller.wrote("Apple's revenue")
    await teller.finished()
    assert failing.published == []
