"""POST /v1/ask/stream with a model writing the answer: its text streams as `draft_text`
events while it is written, before `drafted`, and the stream still ends with the validated
answer, the body /v1/ask answers, when checking replaces what the model wrote; the web app
shows the draft as it grows, as text, then the checked answer, saying when it was revised.
Real HTTP, NATS, PostgreSQL, five processes and a headless Chromium; only the model is the
scripted stand-in."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from tests.conftest import ModelPipeline
from tests.gateway.test_ask_stream import FIGURE_QUESTION, PER_REQUEST, stream_question
from tests.gateway.test_web_app import ANSWERED, answered, wait
from tests.headless_browser import headless_chromium, shot
from tests.openai_stand_in import ScriptedReply

pytestmark = pytest.mark.e2e

RIGHT = "Apple's revenue in fiscal 2023 was $383.3 billion."
WRONG = "Apple's revenue in fiscal 2023 was $401.2 billion."
TEMPLATE_FIGURE = "$383.3 billion"


def written(text: str, chunk_chars: int = 6, chunk_delay_seconds: float = 0.03) -> ScriptedReply:
    """The model's reply, streamed a few characters at a time, as a model writes."""
    return ScriptedReply(
        content=json.dumps({"answer": text, "citations": []}),
        chunk_chars=chunk_chars,
        chunk_delay_seconds=chunk_delay_seconds,
    )


def drafts_by_attempt(events: list[tuple[str, Any]]) -> dict[int, str]:
    """Each attempt's draft text, its pieces joined in seq order (which must be the order
    they came in, from 0, with none missing)."""
    pieces: dict[int, list[tuple[int, str]]] = {}
    for name, data in events:
        if name == "draft_text":
            assert data["stage"] == "answerer" and data["kind"] == data["summary"]["kind"]
            pieces.setdefault(data["attempt"], []).append(
                (data["summary"]["seq"], data["summary"]["text"])
            )
    for told in pieces.values():
        assert [seq for seq, _ in told] == list(range(len(told)))
    return {attempt: "".join(text for _, text in told) for attempt, told in pieces.items()}


def without_draft_text(events: list[tuple[str, Any]]) -> list[str]:
    return [name for name, _ in events if name != "draft_text"]


async def test_the_models_text_streams_as_it_is_written_before_drafted_and_the_answer(
    model_pipeline: ModelPipeline,
) -> None:
    model, llm_client = model_pipeline.model, model_pipeline.client
    model.replies = [written(RIGHT), written(RIGHT)]
    events = await stream_question(llm_client, FIGURE_QUESTION)
    names = [name for name, _ in events]
    assert without_draft_text(events) == [
        "accepted",
        "routed",
        "tools_done",
        "drafted",
        "validated",
        "answer",
    ]
    # Every piece of the draft comes after the tools and before the answerer's `drafted`.
    drafted_at = names.index("drafted")
    told_at = [n for n, name in enumerate(names) if name == "draft_text"]
    assert len(told_at) >= 2 and names.index("tools_done") < told_at[0]
    assert told_at[-1] < drafted_at
    assert drafts_by_attempt(events) == {0: RIGHT}

    by_kind = dict(events)
    assert by_kind["drafted"]["summary"]["mode"] == "llm"
    streamed = by_kind["answer"]
    assert streamed["answer"] == RIGHT
    assert streamed["generation"]["mode"] == "llm"
    assert streamed["generation"]["prompt_tokens"] == 50  # from the stream's usage chunk

    asked = (await llm_client.post("/v1/ask", json={"question": FIGURE_QUESTION})).json()
    assert set(streamed) == set(asked)
    assert {k: v for k, v in streamed.items() if k not in PER_REQUEST} == {
        k: v for k, v in asked.items() if k not in PER_REQUEST
    }
    assert [request["stream"] for request in model.requests[-2:]] == [True, True]


async def test_a_draft_the_check_rejects_each_time_ends_with_the_validated_template_answer(
    model_pipeline: ModelPipeline,
) -> None:
    model, llm_client = model_pipeline.model, model_pipeline.client
    model.replies = [written(WRONG), written(WRONG), written(WRONG)]
    events = await stream_question(llm_client, FIGURE_QUESTION)
    # Each attempt the validator sends back is written again, with its own draft text.
    assert without_draft_text(events) == [
        "accepted",
        "routed",
        "tools_done",
        "drafted",
        "drafted",
        "drafted",
        "validated",
        "answer",
    ]
    assert drafts_by_attempt(events) == {0: WRONG, 1: WRONG, 2: WRONG}
    name, answer = events[-1]
    assert name == "answer"
    assert TEMPLATE_FIGURE in answer["answer"] and "$401.2" not in answer["answer"]
    assert answer["validation"]["passed"] and answer["validation"]["attempts"] == 3
    assert answer["generation"]["mode"] == "deterministic"
    assert "validation" in answer["generation"]["fallback_reason"]


# --- in the web app ---------------------------------------------------------------------


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path) as driver:
        yield driver


DRAFT = ".turn.answer.pending .draft"


def watch_a_draft_become_the_answer(
    driver: WebDriver, url: str, shots: Path
) -> tuple[str, WebElement]:
    """Ask in the page: the last draft text the pending answer showed, and the answer (with
    a screenshot of the draft being written in `shots`)."""
    driver.get(f"{url}/")
    wait(driver, 20).until(lambda d: d.find_element(By.ID, "question").is_enabled())
    before = len(driver.find_elements(By.CSS_SELECTOR, ANSWERED))
    box = driver.find_element(By.ID, "question")
    box.send_keys(FIGURE_QUESTION)
    box.send_keys(Keys.ENTER)
    marks = wait(driver).until(
        lambda d: [e for e in d.find_elements(By.CSS_SELECTOR, f"{DRAFT} .draft-mark") if e.text]
    )
    assert marks[0].text.startswith("writing")
    shot(driver, shots, f"draft-{before}")
    seen: list[str] = []

    def answered_watching_the_draft(d: WebDriver) -> list[WebElement]:
        for element in d.find_elements(By.CSS_SELECTOR, f"{DRAFT} .draft-text"):
            with contextlib.suppress(StaleElementReferenceException):
                if text := element.text:
                    seen.append(text)
        # The model's text is shown as text: its markup is no element of the page.
        assert not d.find_elements(By.CSS_SELECTOR, f"{DRAFT} b")
        return answered(before + 1)(d)

    answer = wait(driver).until(answered_watching_the_draft)[-1]
    assert seen, "no draft text was seen"
    return seen[-1], answer


async def test_the_page_shows_the_draft_as_it_is_written_then_the_checked_answer(
    model_pipeline: ModelPipeline, browser: WebDriver, tmp_path: Path
) -> None:
    model = model_pipeline.model
    url = str(model_pipeline.client.base_url).rstrip("/")
    slow = {"chunk_chars": 4, "chunk_delay_seconds": 0.08}
    model.replies = [written(RIGHT, **slow)]
    seen, answer = await asyncio.to_thread(watch_a_draft_become_the_answer, browser, url, tmp_path)
    assert RIGHT.startswith(seen) and seen
    assert answer.find_element(By.CSS_SELECTOR, ".answer-text").text == RIGHT
    assert not answer.find_elements(By.CSS_SELECTOR, ".revised")
    await asyncio.to_thread(shot, browser, tmp_path, "1-model-answer")

    marked_up = "Apple's revenue in fiscal 2023 was <b>$401.2 billion</b>."
    model.replies = [written(marked_up, **slow) for _ in range(3)]
    seen, answer = await asyncio.to_thread(watch_a_draft_become_the_answer, browser, url, tmp_path)
    assert "<b>" in seen
    assert TEMPLATE_FIGURE in answer.find_element(By.CSS_SELECTOR, ".answer-text").text
    revised = answer.find_element(By.CSS_SELECTOR, ".revised")
    assert revised.text.startswith("Revised after checking")
    assert not browser.find_elements(By.CSS_SELECTOR, ".turn b")
    await asyncio.to_thread(shot, browser, tmp_path, "2-revised-answer")
