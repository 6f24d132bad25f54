"""A model's answer told as it is written: the answer's text read out of the streamed JSON
reply however it is split, and the writer telling it piece by piece through the real
`openai` client against the scripted server, its drafted answer, tokens and cost the same
as before streaming."""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field

import pytest
from openai import AsyncOpenAI

from services.answerer.answer_field_reading import AnswerFieldReader
from services.answerer.drafting import draft_answer
from services.answerer.llm_writing import LlmAnswerWriter
from tests.answerer.test_answer_llm import SOURCE, completed, reply
from tests.openai_stand_in import OpenAIStandIn

TRICKY_ANSWERS = [
    "Apple's revenue in fiscal 2023 was $383.3 billion.",
    'It said "net sales" \\ grew;\nsee [1] / [2]\tthen more.',
    "Umlauts ü, a dash – and an emoji 😀, a line separator \u2028 and a control \x01.",
    "",
]


def pieces_of(raw: str, rng: random.Random) -> list[str]:
    cuts = sorted(rng.sample(range(len(raw) + 1), rng.randint(0, min(len(raw), 12))))
    return [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]


@pytest.mark.parametrize("answer", TRICKY_ANSWERS)
@pytest.mark.parametrize("ensure_ascii", [True, False])
@pytest.mark.parametrize("citations_first", [False, True])
def test_the_answer_is_read_out_of_the_json_however_the_reply_is_split(
    answer: str, ensure_ascii: bool, citations_first: bool
) -> None:
    fields = {"answer": answer, "citations": ['a "quoted" id', "x{]"]}
    if citations_first:
        fields = {"citations": fields["citations"], "nested": {"answer": "no"}, "answer": answer}
    raw = json.dumps(fields, ensure_ascii=ensure_ascii)
    rng = random.Random(answer)
    for _ in range(40):
        reader = AnswerFieldReader()
        assert "".join(reader.read(piece) for piece in pieces_of(raw, rng)) == answer


def test_a_reply_that_is_not_the_json_asked_for_reads_as_no_text() -> None:
    reader = AnswerFieldReader()
    assert reader.read("Sorry, I cannot help with that.") == ""
    assert AnswerFieldReader().read('{"citations": ["answer"], "answer": 3}') == ""


@dataclass
class HeardDraft:
    """What a draft's listener heard: each piece, and how many times it was told the end."""

    pieces: list[str] = field(default_factory=list)
    ends: int = 0

    async def wrote(self, text: str) -> None:
        self.pieces.append(text)

    async def finished(self) -> None:
        self.ends += 1


async def test_the_writer_tells_the_answer_as_it_streams_and_drafts_what_it_drafted_before() -> (
    None
):
    text = "Apple's revenue in fiscal 2023 was $383.3 billion."
    heard = HeardDraft()
    async with OpenAIStandIn([reply(text, [f"{SOURCE}:2023"], chunk_chars=5)]) as server:
        client = AsyncOpenAI(api_key="test", base_url=server.base_url, max_retries=0)
        try:
            writer = LlmAnswerWriter(client, "gpt-4o-mini", {"gpt-4o-mini": (0.15, 0.60)}, 5.0)
            tools = completed()
            drafted = await writer.write(tools, draft_answer(tools), draft_text=heard)
        finally:
            await client.close()
    [request] = server.requests
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert "".join(heard.pieces) == text
    assert len([piece for piece in heard.pieces if piece]) > 3
    assert heard.ends == 1
    assert drafted.answer == text
    assert [c.source_id for c in drafted.citations] == [f"{SOURCE}:2023"]
    generation = drafted.generation
    assert (generation.mode, generation.prompt_tokens, generation.completion_tokens) == (
        "llm",
        400,
        60,
    )
    assert generation.cost_usd == pytest.approx((400 * 0.15 + 60 * 0.60) / 1e6)


async def test_a_model_that_writes_past_the_writers_bound_falls_back_as_a_timeout() -> None:
    slow = reply("Apple's revenue in fiscal 2023 was $383.3 billion.", [], chunk_delay_seconds=0.2)
    async with OpenAIStandIn([slow]) as server:
        # Each chunk comes well within the client's timeout; the whole reply does not come
        # within the writer's bound.
        client = AsyncOpenAI(api_key="test", base_url=server.base_url, timeout=5, max_retries=0)
        try:
            writer = LlmAnswerWriter(client, "gpt-4o-mini", timeout_seconds=0.5)
            tools = completed()
            reference = draft_answer(tools)
            drafted = await writer.write(tools, reference)
        finally:
            await client.close()
    assert drafted.answer == reference.answer
    assert drafted.generation.fallback_reason == "timeout"
