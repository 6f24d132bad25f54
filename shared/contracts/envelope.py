"""The envelope around every stage message: the request's identity, attempt and deadline."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from shared.contracts.base import utc_now
from shared.contracts.events import StageRun

PayloadT = TypeVar("PayloadT", bound=BaseModel)


class Envelope(BaseModel, Generic[PayloadT]):
    """What every message on the bus is: who asked, which try, until when, and the payload."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    conversation_id: str
    user_id: str
    attempt: int = 0
    deadline: datetime
    created_at: datetime = Field(default_factory=utc_now)
    # The core-NATS subject of the gateway instance waiting for this request.
    reply_to: str | None = None
    # Milliseconds each stage spent on this request so far, for the query log.
    timings_ms: dict[str, float] = Field(default_factory=dict)
    # ...and each stage's run with its start, in order (every attempt's).
    stage_runs: list[StageRun] = Field(default_factory=list)
    # Model calls made for this request so far, by every stage and every attempt: each
    # stage spends from what FINQ_MAX_MODEL_CALLS_PER_REQUEST leaves (see ModelCallBudget).
    model_calls: int = Field(default=0, ge=0)
    # How many times the reconciler has started this request afresh (a stream may have
    # dropped its messages unread): part of every message id (shared/subjects.py), so a
    # fresh start is not taken for a duplicate of what the stream dropped.
    fresh_start: int = Field(default=0, ge=0)
    # A client watches this request being answered (POST /v1/ask/stream): each stage tells
    # its event on core NATS. Nobody listens for the others', so they are not sent.
    watched: bool = False
    payload: PayloadT

    def expired(self, now: datetime | None = None) -> bool:
        return (now or utc_now()) >= self.deadline

    def carry(self, payload: BaseModel) -> Envelope[Any]:
        """The same request moving on to the next hop with a new payload."""
        return Envelope[type(payload)](  # type: ignore[misc]
            request_id=self.request_id,
            conversation_id=self.conversation_id,
            user_id=self.user_id,
            attempt=self.attempt,
            deadline=self.deadline,
            created_at=self.created_at,
            reply_to=self.reply_to,
            timings_ms=dict(self.timings_ms),
            stage_runs=list(self.stage_runs),
            model_calls=self.model_calls,
            fresh_start=self.fresh_start,
            watched=self.watched,
            payload=payload,
        )


@dataclass
class ModelCallBudget:
    """The model calls one request may still make. Every call site takes one before it
    calls; when none is left it answers without the model (the rules' route, the template
    answer), so a loop of redos or a chatty stage cannot run up a bill on one question."""

    left: int
    used: int = 0

    @classmethod
    def of(cls, envelope: Envelope[Any], limit: int) -> ModelCallBudget:
        return cls(max(0, limit - envelope.model_calls))

    def take(self) -> bool:
        if self.left <= 0:
            return False
        self.left -= 1
        self.used += 1
        return True


def new_deadline(seconds: float) -> datetime:
    return utc_now() + timedelta(seconds=seconds)
