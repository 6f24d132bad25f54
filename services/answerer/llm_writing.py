"""The answerer's LLM mode: a model writes the answer's prose from the fetched facts only,
as JSON `{answer, citations}`; on a timeout, an error or output that is not that JSON, the
deterministic answer goes out and `generation.fallback_reason` says why.

The reply is streamed, so the answer's text can be told while it is written (a preview for
POST /v1/ask/stream); the answer drafted is made from the whole reply, as without streaming.

The prompt holds nothing but the facts (each with its source id, period and value already
formatted) and the deterministic answer as a reference; the validator then checks the
model's every number, year and citation like any other answer.

With several years or figures the template's answer is a short lead over a table: the model
writes only the lead, from the same facts written as the table writes them (one scale per
column), and the table and the working of each computed figure stay the template's, checked
by the validator with the model's lead.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import structlog

from services.answerer.answer_field_reading import AnswerFieldReader
from services.answerer.answer_tables import LEAD_CHARACTERS, figure_glance
from services.answerer.formatting import source_citation
from shared.contracts.answers import AnswerDrafted, Citation, Generation, ToolsCompleted
from shared.contracts.envelope import ModelCallBudget
from shared.contracts.tool_results import Fact, Passage, Source
from shared.model_calls import observed_model_call
from shared.value_formatting import format_fact_value, format_value

if TYPE_CHECKING:
    from openai import AsyncOpenAI
    from openai.types import CompletionUsage

log = structlog.get_logger()

# Intents whose answers are figures; the others (refusals, clarifications, definitions)
# stay templates, where prose adds nothing a model should be trusted with.
LLM_INTENTS = frozenset(
    {"metric_lookup", "metric_comparison", "metric_trend", "price", "document_search"}
)

ANSWER_SCHEMA: dict[str, Any] = {
    "name": "finq_answer",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "answer": {"type": "string"},
            "citations": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["answer", "citations"],
        "additionalProperties": False,
    },
}

SYSTEM_PROMPT = (
    "You write short answers for finq, a financial question-answering service. Use ONLY "
    "the facts given: every number you write must be one of them, written as given, with "
    "its company and fiscal period. Do not compute new numbers, do not add knowledge of "
    "your own, do not give advice. If the facts do not answer the question, say what is "
    'missing. Reply with JSON: {"answer": the answer in plain sentences, "citations": '
    "the source ids of the facts you used}."
)


# Added to SYSTEM_PROMPT when the answer has a table: the model writes the lead above it.
TABLE_PROMPT = (
    " A table of every fact (`table`) is shown under your answer, and how each computed "
    "figure was reached beside it: write only a short lead of one or two sentences, at most "
    f"{LEAD_CHARACTERS} characters, that answers the question (where the figures started "
    "and ended, where they peaked, which company led), not every figure, and no arithmetic."
)


PASSAGES_PROMPT = (
    "You answer questions about filings and documents for finq. Use ONLY the numbered "
    "passages given. Mark every statement with the number of the passage it comes from, "
    "like [1] or [2][3]. Any number you write must be copied exactly as the passage writes "
    "it. Do not add knowledge of your own and do not give advice. If the passages do not "
    'answer the question, say so. Reply with JSON: {"answer": the answer, "citations": the '
    "source ids of the passages you used}."
)


def _passage_line(number: int, passage: Passage) -> dict[str, Any]:
    return {
        "n": number,
        "source_id": passage.source_id,
        "document": passage.title,
        "form": passage.form,
        "period": passage.period,
        "page": passage.page,
        "text": passage.text,
    }


def _fact_line(fact: Fact, written: str | None = None) -> dict[str, Any]:
    line: dict[str, Any] = {
        "source_id": fact.source_id,
        "company": fact.company,
        "metric": fact.metric_label,
        "period": fact.period,
        "period_end": fact.period_end.isoformat(),
        "value": written or format_fact_value(fact),
    }
    if fact.differs is not None:
        # Another source gives another figure: the model says both, as the template does.
        line["another_source_gives"] = {
            "value": format_value(fact.differs.value, fact.unit),
            "source_id": fact.differs.source_id,
        }
    return line


def prompt_messages(completed: ToolsCompleted, reference: AnswerDrafted) -> list[dict[str, str]]:
    """The facts and the template answer; on a repair, also the rejected answer and what
    the validator found wrong in it."""
    facts = [fact for result in completed.results for fact in result.facts]
    missing = [item for result in completed.results for item in result.missing]
    passages = [p for result in completed.results for p in result.passages]
    context: dict[str, Any] = {"question": completed.route.question}
    system = PASSAGES_PROMPT if passages else SYSTEM_PROMPT
    if passages:
        context["passages"] = [_passage_line(n, p) for n, p in enumerate(passages, start=1)]
    else:
        # Beneath a table, each value as its column writes it, so the lead agrees with it.
        glance = figure_glance(facts) if reference.table is not None else None
        context["facts"] = [
            _fact_line(fact, glance.written(fact) if glance else None) for fact in facts
        ]
        context["not_held"] = missing
        if reference.table is not None:
            context["table"] = reference.table.model_dump()
            system += TABLE_PROMPT
    context["reference_answer"] = reference.answer
    messages = [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(context, ensure_ascii=False)},
    ]
    if completed.repair is not None:
        findings = "; ".join(issue.message for issue in completed.repair.issues)
        messages.append({"role": "assistant", "content": completed.repair.previous_answer})
        messages.append(
            {
                "role": "user",
                "content": "That answer failed the check against the facts: "
                f"{findings}. Write it again using only the facts given, each number with "
                "its own company and fiscal period.",
            }
        )
    return messages


class DraftTextListener(Protocol):
    """Hears the answer's text while the model writes it (shared.stage_events.DraftTextTeller
    tells it to a streaming client): `wrote` each new piece, `finished` at the end."""

    async def wrote(self, text: str) -> None: ...

    async def finished(self) -> None: ...


@dataclass
class StreamedReply:
    """A streamed reply, put together: its content's pieces and the usage it reported."""

    pieces: list[str] = field(default_factory=list)
    usage: CompletionUsage | None = None

    @property
    def content(self) -> str:
        return "".join(self.pieces)


@dataclass
class LlmAnswerWriter:
    client: AsyncOpenAI
    model: str
    # US dollars per million tokens (input, output) by model.
    prices: dict[str, tuple[float, float]] = field(default_factory=dict)
    # The whole call, streamed to its end; the client's own timeout bounds each wait for
    # bytes, which a model that keeps writing would never hit. None: no bound of its own.
    timeout_seconds: float | None = None

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        price = self.prices.get(self.model)
        if price is None:
            return None
        return round((prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6, 8)

    async def write(
        self,
        completed: ToolsCompleted,
        reference: AnswerDrafted,
        budget: ModelCallBudget | None = None,
        draft_text: DraftTextListener | None = None,
    ) -> AnswerDrafted:
        """The model's answer, or `reference` (the deterministic one) saying why not;
        `draft_text` hears the answer's text as the model writes it."""
        import openai  # loaded already: the client is openai's (see services/answerer/main.py)

        passages = [p for result in completed.results for p in result.passages]
        if completed.route.intent not in LLM_INTENTS or not (reference.facts or passages):
            return reference
        if budget is not None and not budget.take():
            return self._fallback(reference, "model call limit reached for this request")
        with observed_model_call("answerer", self.model) as call:
            try:
                async with asyncio.timeout(self.timeout_seconds):
                    reply = await self._stream_reply(
                        prompt_messages(completed, reference), draft_text
                    )
            except (openai.APITimeoutError, httpx.TimeoutException, TimeoutError) as error:
                call.failed(error)
                return self._fallback(reference, "timeout")
            except (openai.APIError, httpx.HTTPError) as error:
                call.failed(error)
                log.warning("LLM answer failed", error=repr(error)[:300])
                return self._fallback(reference, f"error: {type(error).__name__}")
            usage = reply.usage
            prompt_tokens = usage.prompt_tokens if usage else 0
            completion_tokens = usage.completion_tokens if usage else 0
            call.answered(usage, self.cost(prompt_tokens, completion_tokens))
        generation = Generation(
            mode="llm",
            model=self.model,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=self.cost(prompt_tokens, completion_tokens),
        )
        try:
            output = json.loads(reply.content)
            text = str(output["answer"]).strip()
            cited = [str(source_id) for source_id in output["citations"]]
        except (json.JSONDecodeError, KeyError, TypeError):
            return self._fallback(reference, "invalid output", generation)
        if not text:
            return self._fallback(reference, "empty answer", generation)
        sources = {s.source_id: s for r in completed.results for s in r.sources}
        if passages:
            # "[n]" is the n-th passage the model was given, so the citations are all of
            # them, in that order; a made-up id among the model's own list is still checked.
            cited = [p.source_id for p in passages] + [c for c in cited if c not in sources]
        return reference.model_copy(
            update={
                "answer": text,
                "citations": [_citation(source_id, sources) for source_id in dict.fromkeys(cited)],
                "generation": generation,
                "template_answer": reference.answer,
                "template_citations": reference.citations,
            }
        )

    async def _stream_reply(
        self, messages: list[dict[str, str]], draft_text: DraftTextListener | None
    ) -> StreamedReply:
        """The model's whole reply, read as it streams: the answer's text goes to
        `draft_text` piece by piece, the usage comes in the last chunk."""
        stream = await self.client.chat.completions.create(
            model=self.model,
            messages=messages,  # type: ignore[arg-type]
            response_format={"type": "json_schema", "json_schema": ANSWER_SCHEMA},  # type: ignore[typeddict-item]
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        reply = StreamedReply()
        answer_field = AnswerFieldReader()
        async with stream:
            async for chunk in stream:
                if chunk.usage is not None:
                    reply.usage = chunk.usage
                piece = chunk.choices[0].delta.content if chunk.choices else None
                if not piece:
                    continue
                reply.pieces.append(piece)
                if draft_text is not None:
                    await draft_text.wrote(answer_field.read(piece))
        if draft_text is not None:
            await draft_text.finished()
        return reply

    def _fallback(
        self, reference: AnswerDrafted, reason: str, spent: Generation | None = None
    ) -> AnswerDrafted:
        generation = (spent or Generation(model=self.model)).model_copy(
            update={"mode": "deterministic", "fallback_reason": reason}
        )
        return reference.model_copy(update={"generation": generation})


def _citation(source_id: str, sources: dict[str, Source]) -> Citation:
    """A cited id as a citation; one the model made up stays as written, for the validator
    to reject."""
    source = sources.get(source_id)
    if source is None:
        return Citation(source_id=source_id, label="cited by the model")
    return source_citation(source)
