"""Every NATS subject, stream, consumer and dead-letter name finq uses.

Nothing outside this module writes one of these names as a literal. A breaking
change to a payload gets a new version prefix, never an edit in place.
"""

from __future__ import annotations

from enum import StrEnum

# v2: the route is typed (`Understood`), not a free dict of entities.
# v3: a tool call's arguments are the tool's own argument model, not a free dict.
VERSION = "v3"
PREFIX = f"finq.{VERSION}"


class Stage(StrEnum):
    GATEWAY = "gateway"
    ROUTER = "router"
    TOOLS = "tools"
    ANSWERER = "answerer"
    VALIDATOR = "validator"
    # Reads uploaded documents: parses (in a child process with limits), chunks, embeds and
    # stores them. The one process that holds the embedding model for ingest.
    INGEST = "ingest"


# Stage subjects: these live in the work stream and are persisted to disk.
QUESTION_ASKED = f"{PREFIX}.question.asked"
ROUTE_DECIDED = f"{PREFIX}.route.decided"
TOOLS_COMPLETED = f"{PREFIX}.tools.completed"
ANSWER_DRAFTED = f"{PREFIX}.answer.drafted"
# An upload the gateway stored (file and row committed): the ingest stage's work.
DOCUMENT_UPLOADED = f"{PREFIX}.document.uploaded"

STAGE_SUBJECTS: tuple[str, ...] = (
    QUESTION_ASKED,
    ROUTE_DECIDED,
    TOOLS_COMPLETED,
    ANSWER_DRAFTED,
    DOCUMENT_UPLOADED,
)

# Replies to the gateway travel on core NATS, outside the stream: they are
# ephemeral (the answer row in Postgres is the durable copy) and keeping them
# out of the stream spares an fsync per answer.
REPLY_PREFIX = f"{PREFIX}.reply"
ANSWER_VALIDATED = f"{PREFIX}.answer.validated"
STAGE_FAILED = f"{PREFIX}.stage.failed"
# A stage that gives up on a request tells the waiting gateway on a subject of its own,
# not the reply subject: only the validator may publish on reply subjects (nats-server
# enforces it, see shared/nats_permissions.py), so a broken or hostile stage can make a
# request fail but never forge its answer.
FAILURE_PREFIX = STAGE_FAILED

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
    DOCUMENT_UPLOADED: f"{_STREAM_PREFIX}_DOCUMENT_UPLOADED",
}
DEAD_LETTER_STREAM = f"{_STREAM_PREFIX}_DEAD"


def reply_subject(gateway_instance: str) -> str:
    """The core-NATS subject on which one gateway instance receives its answers."""
    return f"{REPLY_PREFIX}.{gateway_instance}"


def failure_subject(gateway_instance: str) -> str:
    """The core-NATS subject on which one gateway instance hears that a request failed."""
    return f"{FAILURE_PREFIX}.{gateway_instance}"


def failure_subject_for(reply_to: str) -> str | None:
    """The failure subject of the gateway instance that waits on `reply_to`; None when
    `reply_to` is no reply subject of finq's."""
    head = f"{REPLY_PREFIX}."
    if not reply_to.startswith(head) or len(reply_to) == len(head):
        return None
    return failure_subject(reply_to[len(head) :])


# What each stage decided about a request, as it happens (`StageEvent`), for a client that
# streams the making of its answer (POST /v1/ask/stream). Core NATS, outside the streams:
# best-effort progress, never the answer. A subject is `<prefix>.<request id>.<stage>`, so
# a gateway hears exactly one request's events (`request_events_subject`) and nats-server
# lets each stage publish under its own name only (`stage_events_of`).
STAGE_EVENTS_PREFIX = f"{PREFIX}.events"
# NATS reads these as separators and wildcards, so none may be inside a subject's token.
_NOT_IN_A_TOKEN = frozenset(".*> \t\r\n")


def is_subject_token(text: str) -> bool:
    """Whether `text` can stand as one token of a subject (request ids finq makes can)."""
    return bool(text) and _NOT_IN_A_TOKEN.isdisjoint(text)


def stage_event_subject(request_id: str, stage: Stage) -> str:
    """Where `stage` tells what it decided about one request."""
    if not is_subject_token(request_id):
        raise ValueError(f"a request id that cannot be a subject token: {request_id!r}")
    return f"{STAGE_EVENTS_PREFIX}.{request_id}.{stage.value}"


def request_events_subject(request_id: str) -> str:
    """Every stage's events about one request: what a streaming gateway subscribes to."""
    if not is_subject_token(request_id):
        raise ValueError(f"a request id that cannot be a subject token: {request_id!r}")
    return f"{STAGE_EVENTS_PREFIX}.{request_id}.*"


def stage_events_of(stage: Stage) -> str:
    """Every event of one stage, about any request: what that stage may publish."""
    return f"{STAGE_EVENTS_PREFIX}.*.{stage.value}"


def everything_under(prefix: str) -> str:
    """The NATS wildcard for every subject below `prefix`."""
    return f"{prefix}.{ALL_SUBJECTS}"


# Embeddings on request (shared/embedding_service.py): the ingest stage holds the one
# embedding model and encodes texts for the router and the tools over core NATS, outside
# the streams (a vector is as ephemeral as the question that wanted it). Requests go to
# EMBED, where the ingest replicas share them in EMBED_QUEUE; each answer goes to the
# requester's own subject under EMBEDDED_PREFIX, never into its `_INBOX` (no stage may
# publish into an inbox: shared/nats_permissions.py).
EMBED = f"{PREFIX}.embed"
EMBED_QUEUE = f"finq-{VERSION}-embedders"
EMBEDDED_PREFIX = f"{PREFIX}.embedded"
# The stages that ask for embeddings; the ingest stage answers them.
EMBEDDING_REQUESTERS: tuple[Stage, ...] = (Stage.ROUTER, Stage.TOOLS)
EMBEDDING_SERVER = Stage.INGEST


def embedded_subject(stage: Stage, instance: str, token: str) -> str:
    """Where one embedding request of one stage's instance is answered."""
    for part in (instance, token):
        if not is_subject_token(part):
            raise ValueError(f"cannot be a subject token: {part!r}")
    return f"{EMBEDDED_PREFIX}.{stage.value}.{instance}.{token}"


def embedded_replies(stage: Stage, instance: str) -> str:
    """Every answer to one instance's embedding requests: what it subscribes to, once."""
    if not is_subject_token(instance):
        raise ValueError(f"an instance that cannot be a subject token: {instance!r}")
    return f"{EMBEDDED_PREFIX}.{stage.value}.{instance}.*"


def embedded_replies_of(stage: Stage) -> str:
    """Every answer to any instance of `stage`: what that stage may subscribe to."""
    return f"{EMBEDDED_PREFIX}.{stage.value}.*.*"


def dead_letter_subject(stage: Stage) -> str:
    return f"{DEAD_LETTER_PREFIX}.{stage.value}"


# What each consuming stage reads, and the durable consumer all its replicas share.
STAGE_INPUT: dict[Stage, str] = {
    Stage.ROUTER: QUESTION_ASKED,
    Stage.TOOLS: ROUTE_DECIDED,
    Stage.ANSWERER: TOOLS_COMPLETED,
    Stage.VALIDATOR: ANSWER_DRAFTED,
    Stage.INGEST: DOCUMENT_UPLOADED,
}


# What each stage publishes to the stage streams. The validator sends a draft back: to the
# answerer to be written again, or to the tools to fetch the periods the answer wanted.
STAGE_OUTPUTS: dict[Stage, tuple[str, ...]] = {
    Stage.GATEWAY: (QUESTION_ASKED, DOCUMENT_UPLOADED),
    Stage.ROUTER: (ROUTE_DECIDED,),
    Stage.TOOLS: (TOOLS_COMPLETED,),
    Stage.ANSWERER: (ANSWER_DRAFTED,),
    Stage.VALIDATOR: (ROUTE_DECIDED, TOOLS_COMPLETED),
    # Its work ends in the database (the document's status); it sends nothing on.
    Stage.INGEST: (),
}

# The stages that publish stage events (shared/stage_events.py): the four a question passes
# through. Ingest works on uploads, which no client streams.
STAGE_EVENT_STAGES: tuple[Stage, ...] = (
    Stage.ROUTER,
    Stage.TOOLS,
    Stage.ANSWERER,
    Stage.VALIDATOR,
)


def input_stream(stage: Stage) -> str:
    """The stream a consuming stage reads from."""
    return STAGE_STREAMS[STAGE_INPUT[stage]]


def durable_name(stage: Stage) -> str:
    return f"finq-{VERSION}-{stage.value}"


# nats-server's own subjects (not finq's, so not versioned), named here so that the bus
# and the permissions in shared/nats_permissions.py share one spelling.
ALL_SUBJECTS = ">"
INBOX_PREFIX = "_INBOX"
JS_API_PREFIX = "$JS.API"
JS_ACK_PREFIX = "$JS.ACK"
JS_STREAM_NAMES = f"{JS_API_PREFIX}.STREAM.NAMES"


def inbox_prefix(user: str) -> str:
    """A NATS user's own inbox prefix: its request replies and pulled messages arrive below
    it, and it may subscribe there only, so no user reads another's inbox."""
    return f"{INBOX_PREFIX}.{user}"


def stream_api(action: str, stream: str) -> str:
    """A JetStream API subject about one stream (`CREATE`, `UPDATE`, `INFO`)."""
    return f"{JS_API_PREFIX}.STREAM.{action}.{stream}"


def consumer_api(action: str, stage: Stage) -> str:
    """A JetStream API subject about a stage's durable consumer (`INFO`, `MSG.NEXT`, …)."""
    return f"{JS_API_PREFIX}.CONSUMER.{action}.{input_stream(stage)}.{durable_name(stage)}"


def pull_subject(stage: Stage) -> str:
    """Where a replica asks its stage's durable consumer for more messages."""
    return consumer_api("MSG.NEXT", stage)


def ack_subjects(stage: Stage) -> str:
    """The wildcard over the ack subjects (ack, nak, in-progress, term) of a stage's
    consumer: a message's reply subject starts with the stream and the consumer."""
    return everything_under(f"{JS_ACK_PREFIX}.{input_stream(stage)}.{durable_name(stage)}")


def message_id(request_id: str, stage: Stage, attempt: int, fresh_start: int = 0) -> str:
    """The Nats-Msg-Id that makes a redelivered stage's output a duplicate, not a second message.
    A request the reconciler started afresh (fresh_start > 0) gets ids of its own: a stream
    remembers an id for its duplicate window even after it dropped the message unread."""
    base = f"{request_id}:{stage.value}:{attempt}"
    return f"{base}:f{fresh_start}" if fresh_start else base
