"""`finq dead list` and `finq dead replay`: the dead-letter stream, read and sent back.

A stage that gives up on a message (it cannot be decoded, it failed every try, or its
deadline and retry budget passed) copies it to the dead-letter stream with the reason
(shared/bus.py `StageConsumer._dead_letter`): the original bytes, with headers
`Finq-Dead-Reason`, `Finq-Original-Subject`, `Finq-Stage`, `Finq-Deliveries` and
`Finq-Original-Msg-Id`. A dead letter's id is its sequence in that stream.

A replay publishes the original bytes onto the original subject with a message id of its
own (`<original id>:replay-<seq>`, so the stream's duplicate window does not drop it as
the message it once was), then deletes the dead letter: the stream keeps what is still
dead, and a replay that dies again is dead-lettered anew, under a new id, with its new
reason. An envelope whose deadline has passed would be dead-lettered again at once, so
its deadline is moved forward unless told otherwise (`keep_deadline`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from shared import subjects
from shared.bus import MSG_ID_HEADER

REASON_HEADER = "Finq-Dead-Reason"
ORIGINAL_SUBJECT_HEADER = "Finq-Original-Subject"
STAGE_HEADER = "Finq-Stage"
DELIVERIES_HEADER = "Finq-Deliveries"
ORIGINAL_MSG_ID_HEADER = "Finq-Original-Msg-Id"
# Carried over on a replay, so the replayed work joins the trace it was part of.
TRACE_HEADERS = ("traceparent", "tracestate")


class DeadLetterError(Exception):
    """A dead letter that cannot be replayed (unknown id, no original subject)."""


@dataclass(frozen=True)
class DeadLetter:
    seq: int
    stage: str | None
    request_id: str | None
    reason: str
    subject: str | None
    deliveries: int | None
    dead_at: datetime | None
    original_msg_id: str | None

    def to_json(self) -> dict[str, Any]:
        body = asdict(self)
        body["dead_at"] = self.dead_at.isoformat() if self.dead_at else None
        return body


@dataclass(frozen=True)
class Replayed:
    seq: int
    subject: str
    msg_id: str
    # Where the replayed message now is, in its stage stream.
    stream: str
    stream_seq: int
    # The new deadline, when the envelope's had passed and was moved forward.
    new_deadline: datetime | None


def _stage_of(raw: RawStreamMsg, headers: dict[str, str]) -> str | None:
    stage = headers.get(STAGE_HEADER)
    if stage:
        return stage
    head = f"{subjects.DEAD_LETTER_PREFIX}."
    subject = raw.subject or ""
    return subject[len(head) :] if subject.startswith(head) else None


def _request_id(data: bytes, headers: dict[str, str]) -> str | None:
    """From the envelope when it is JSON that names one, else from the original message
    id (`request_id:stage:attempt`)."""
    try:
        body = json.loads(data)
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("request_id"), str):
        return str(body["request_id"])
    original = headers.get(ORIGINAL_MSG_ID_HEADER)
    return original.split(":", 1)[0] if original else None


def _letter(raw: RawStreamMsg) -> DeadLetter:
    headers = {str(k): str(v) for k, v in (raw.headers or {}).items()}
    deliveries = headers.get(DELIVERIES_HEADER)
    assert raw.seq is not None
    return DeadLetter(
        seq=raw.seq,
        stage=_stage_of(raw, headers),
        request_id=_request_id(raw.data or b"", headers),
        reason=headers.get(REASON_HEADER, ""),
        subject=headers.get(ORIGINAL_SUBJECT_HEADER),
        deliveries=int(deliveries) if deliveries and deliveries.isdigit() else None,
        dead_at=raw.time,
        original_msg_id=headers.get(ORIGINAL_MSG_ID_HEADER),
    )


async def list_dead_letters(
    js: JetStreamContext, stage: str | None = None, limit: int = 100
) -> list[DeadLetter]:
    """The newest `limit` dead letters (of one stage, if given), oldest first."""
    try:
        info = await js.stream_info(subjects.DEAD_LETTER_STREAM)
    except NotFoundError:
        return []
    letters: list[DeadLetter] = []
    if info.state.messages == 0:
        return letters
    first = max(1, info.state.first_seq)
    # Newest first, so a limit costs that many reads, not the whole stream's.
    for seq in range(info.state.last_seq, first - 1, -1):
        if len(letters) >= limit:
            break
        try:
            raw = await js.get_msg(subjects.DEAD_LETTER_STREAM, seq)
        except NotFoundError:
            continue  # replayed (deleted) or aged out
        letter = _letter(raw)
        if stage is None or letter.stage == stage:
            letters.append(letter)
    letters.reverse()
    return letters


async def read_dead_letter(js: JetStreamContext, seq: int) -> DeadLetter:
    """Dead letter `seq`; DeadLetterError when there is none (replayed, aged out, never)."""
    try:
        raw = await js.get_msg(subjects.DEAD_LETTER_STREAM, seq)
    except NotFoundError:
        raise DeadLetterError(f"no dead letter {seq} (replayed, aged out, or never)") from None
    return _letter(raw)


async def delete_dead_letter(js: JetStreamContext, seq: int) -> None:
    """Remove dead letter `seq` once what it held is on its way again; gone already is fine."""
    with contextlib.suppress(NotFoundError):
        await js.delete_msg(subjects.DEAD_LETTER_STREAM, seq)


def _with_fresh_deadline(data: bytes, seconds: float) -> tuple[bytes, datetime | None]:
    """The envelope with its deadline moved to `seconds` from now when it has passed; the
    bytes unchanged (and None) when it has not, or when they are no envelope."""
    try:
        body = json.loads(data)
    except ValueError:
        return data, None
    if not isinstance(body, dict) or not isinstance(body.get("deadline"), str):
        return data, None
    try:
        deadline = datetime.fromisoformat(body["deadline"])
    except ValueError:
        return data, None
    now = datetime.now(UTC)
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    if deadline > now:
        return data, None
    fresh = now + timedelta(seconds=seconds)
    body["deadline"] = fresh.isoformat()
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode(), fresh


def replay_msg_id(letter: DeadLetter) -> str:
    """A message id of the replay's own: the original's, marked with the dead letter's id.
    The same dead letter replayed twice within the duplicate window is published once."""
    return f"{letter.original_msg_id or 'dead'}:replay-{letter.seq}"


async def replay_dead_letter(
    js: JetStreamContext,
    seq: int,
    deadline_seconds: float = 60.0,
    keep_deadline: bool = False,
) -> Replayed:
    """Publish dead letter `seq` onto its original subject, then delete it from the
    dead-letter stream (only once the stage stream has acknowledged the replay)."""
    try:
        raw = await js.get_msg(subjects.DEAD_LETTER_STREAM, seq)
    except NotFoundError:
        raise DeadLetterError(f"no dead letter {seq} (replayed, aged out, or never)") from None
    letter = _letter(raw)
    if not letter.subject:
        raise DeadLetterError(f"dead letter {seq} does not say which subject it came from")
    if letter.subject not in subjects.STAGE_SUBJECTS:
        raise DeadLetterError(f"dead letter {seq} came from {letter.subject}, no stage subject")
    data = raw.data or b""
    new_deadline = None
    if not keep_deadline:
        data, new_deadline = _with_fresh_deadline(data, deadline_seconds)
    msg_id = replay_msg_id(letter)
    headers = {MSG_ID_HEADER: msg_id}
    for name in TRACE_HEADERS:
        if raw.headers and name in raw.headers:
            headers[name] = raw.headers[name]
    ack = await js.publish(letter.subject, data, headers=headers)
    await js.delete_msg(subjects.DEAD_LETTER_STREAM, seq)
    return Replayed(seq, letter.subject, msg_id, ack.stream, ack.seq, new_deadline)
