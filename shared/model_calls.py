"""What every call to the model leaves behind, whichever stage makes it (the router's tool
choice, the answerer's prose): a CLIENT span under the stage's span, with the tokens it
used, and the model metrics (calls by outcome, tokens, cost; shared/metrics.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal, Protocol

import httpx
from opentelemetry.trace import Span, StatusCode

from shared.metrics import record_model_call
from shared.telemetry import model_span

ModelCallOutcome = Literal["ok", "timeout", "error"]


class TokenUsage(Protocol):
    """What an OpenAI-compatible response says it used (`response.usage`)."""

    prompt_tokens: int
    completion_tokens: int


@dataclass
class ModelCall:
    """One call in progress: the caller says how it ended (`answered` or `failed`); a call
    that raised past the block without a word counts as an error."""

    stage: str
    model: str
    span: Span
    outcome: ModelCallOutcome = "error"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None

    def answered(self, usage: TokenUsage | None, cost_usd: float | None = None) -> None:
        self.outcome = "ok"
        self.prompt_tokens = usage.prompt_tokens if usage is not None else 0
        self.completion_tokens = usage.completion_tokens if usage is not None else 0
        self.cost_usd = cost_usd
        self.span.set_attribute("gen_ai.usage.input_tokens", self.prompt_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", self.completion_tokens)
        if cost_usd is not None:
            self.span.set_attribute("finq.cost_usd", cost_usd)

    def failed(self, error: Exception) -> None:
        # A streamed reply can also time out between chunks (httpx's) or as a whole (asyncio's).
        # openai is imported here, not at the top: a stage without a model never loads it.
        import openai

        timed_out = openai.APITimeoutError | httpx.TimeoutException | TimeoutError
        self.outcome = "timeout" if isinstance(error, timed_out) else "error"
        self.span.record_exception(error)
        self.span.set_status(StatusCode.ERROR, type(error).__name__)
        self.span.set_attribute("error.type", type(error).__name__)


@contextmanager
def observed_model_call(stage: str, model: str) -> Iterator[ModelCall]:
    """Wrap one model call: `with observed_model_call("answerer", model) as call:`, then
    `call.answered(response.usage, cost)` or `call.failed(error)`."""
    with model_span(stage, model) as span:
        call = ModelCall(stage, model, span)
        try:
            yield call
        finally:
            record_model_call(
                stage,
                model,
                call.outcome,
                call.prompt_tokens,
                call.completion_tokens,
                call.cost_usd,
            )
