"""Every NATS subject, stream, consumer and dead-letter name finq uses.

Nothing outside this module writes one of these names as a literal. A breaking
change to a payload gets a new version prefix, never an edit in place.
"""

from __future__ import annotations

from enum import StrEnum

# v2: the route is typed (`Understood`), not a free dict of entities.
VERSION = "v2"
PREFIX = f"finq.{VERSION}"


class Stage(StrEnum):
    GATEWAY = "gateway"
    ROUTER = "router"
    TOOLS = "tools"
    ANSWERER = "answerer"
    VALIDATOR = "validator"


# Stage subjects: these live in the work stream and are persisted to disk.
QUESTION_ASKED = f"{PREFIX}.question.asked"
ROUTE_DECIDED = f"{PREFIX}.route.decided"
TOOLS_COMPLETED = f"{PREFIX}.tools.completed"
ANSWER_DRAFTED = f"{PREFIX}.answer.drafted"

STAGE_SUBJECTS: tuple[str, ...] = (
    QUESTION_ASKED,
    ROUTE_DECIDED,
    TOOLS_COMPLETED,
    ANSWER_DRAFTED,
)

# Replies to the gateway travel on core NATS, outside the stream: they are
# ephemeral (the answer row in Postgres is the durable copy) and keeping them
# out of the stream spares an fsync per answer.
REPLY_PREFIX = f"{PREFIX}.reply"
ANSWER_VALIDATED = f"{PREFIX}.answer.validated"
STAGE_FAILED = f"{PREFIX}.stage.failed"

# Dead letters are kept in their own stream with limits retention so that a
# poison message stays inspectable after its consumer terminated it.
DEAD_LETTER_PREFIX = f"{PREFIX}.dead"

# One stream per stage subject: with `sync_interval: always` every stream write is
# fsynced under that stream's lock, so one shared stream serialized all hops behind
# one disk flush at a time; four streams flush in parallel.
_STREAM_PREFIX = f"FINQ_{VERSION.upper()}"
STAGE_STREAMS: dict[str, str] = {
    QUESTION_ASKED: f"{_STREAM_PREFIX}_QUESTION_ASKED",
    ROUTE_DECIDED: f"{_STREAM_PREFIX}_ROUTE_DECIDED",
    TOOLS_COMPLETED: f"{_STREAM_PREFIX}_TOOLS_COMPLETED",
    ANSWER_DRAFTED: f"{_STREAM_PREFIX}_ANSWER_DRAFTED",
}
DEAD_LETTER_STREAM = f"{_STREAM_PREFIX}_DEAD"


def reply_subject(gateway_instance: str) -> str:
    """The core-NATS subject on which one gateway instance receives its answers."""
    return f"{REPLY_PREFIX}.{gateway_instance}"


def dead_letter_subject(stage: Stage) -> str:
    return f"{DEAD_LETTER_PREFIX}.{stage.value}"


# What each consuming stage reads, and the durable consumer all its replicas share.
STAGE_INPUT: dict[Stage, str] = {
    Stage.ROUTER: QUESTION_ASKED,
    Stage.TOOLS: ROUTE_DECIDED,
    Stage.ANSWERER: TOOLS_COMPLETED,
    Stage.VALIDATOR: ANSWER_DRAFTED,
}


def input_stream(stage: Stage) -> str:
    """The stream a consuming stage reads from."""
    return STAGE_STREAMS[STAGE_INPUT[stage]]


def durable_name(stage: Stage) -> str:
    return f"finq-{VERSION}-{stage.value}"


def message_id(request_id: str, stage: Stage, attempt: int) -> str:
    """The Nats-Msg-Id that makes a redelivered stage's output a duplicate, not a second message."""
    return f"{request_id}:{stage.value}:{attempt}"
