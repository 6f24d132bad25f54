"""The operators' page (/admin) in headless Chromium: the dead letters with a replay button
that sends a question on its way again, every user's failed validations shown as text
(markup in a question never becomes an element), and a plain user's key turned away."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import asyncpg
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from shared import bus
from shared.dead_letters import DeadLetter
from shared.nats_permissions import OPERATOR
from tests.conftest import RunningFinq
from tests.dead_letters_made import dead_lettered_poison, dead_lettered_question
from tests.gateway.test_web_app import browser, click, new_user_key, shot, wait

__all__ = ["browser"]  # the fixture, used by name below
HOSTILE = "<script>window.pwned = 1</script><img src=x onerror='window.pwned = 2'>"


def make_dead_letters(finq: RunningFinq) -> tuple[DeadLetter, DeadLetter]:
    """A dead-lettered question of the local user and a letter that holds no question."""

    async def make() -> tuple[DeadLetter, DeadLetter]:
        nats = finq.servers.nats
        nc = await bus.connect(nats.url, "admin-page-test", *nats.credentials(OPERATOR))
        try:
            question = await dead_lettered_question(
                nc, finq.servers.postgres.dsn, "local", "What was NVIDIA revenue in fiscal 2024?"
            )
            return question, await dead_lettered_poison(nc)
        finally:
            await nc.close()

    return asyncio.run(make())


def log_failed_question(finq: RunningFinq, question: str) -> str:
    async def write() -> str:
        request_id = uuid.uuid4().hex
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            await conn.execute(
                "INSERT INTO query_log (request_id, conversation_id, user_id, question, "
                "validation, attempts, total_ms) VALUES ($1, $2, 'local', $3, $4, 3, 10.0)",
                request_id,
                uuid.uuid4().hex,
                question,
                json.dumps(
                    {
                        "passed": False,
                        "severity": "high",
                        "issues": [
                            {
                                "kind": "number",
                                "text": "1",
                                "message": HOSTILE,
                                "severity": "high",
                            }
                        ],
                    }
                ),
            )
        finally:
            await conn.close()
        return request_id

    return asyncio.run(write())


def answer_of(finq: RunningFinq, request_id: str) -> str | None:
    async def read() -> str | None:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            found = await conn.fetchval(
                "SELECT answer FROM answers WHERE request_id = $1", request_id
            )
            return None if found is None else str(found)
        finally:
            await conn.close()

    return asyncio.run(read())


def open_admin(driver: WebDriver, finq: RunningFinq) -> None:
    driver.get(f"{finq.url}/admin")
    wait(driver, 30).until(
        lambda d: d.find_element(By.ID, "admin-main").get_attribute("data-loaded") == "true"
    )


def replay_row(driver: WebDriver, letter: DeadLetter) -> tuple[WebElement, WebElement]:
    button = driver.find_element(By.CSS_SELECTOR, f"button.replay[data-seq='{letter.seq}']")
    status = button.find_element(By.XPATH, "following-sibling::span[@role='status']")
    return button, status


def test_an_operator_replays_a_dead_letter_and_sees_failed_validations_as_text(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    question, poison = make_dead_letters(finq)
    failed_id = log_failed_question(finq, HOSTILE)
    open_admin(browser, finq)
    shot(browser, tmp_path, "admin")

    dead = browser.find_element(By.ID, "admin-dead-body").text
    assert question.request_id is not None and question.request_id in dead
    assert "deadline" in dead
    button, status = replay_row(browser, question)
    click(browser, button)
    wait(browser, 30).until(lambda _: "asked again as" in status.text)
    assert question.request_id in status.text

    button, status = replay_row(browser, poison)
    click(browser, button)
    wait(browser, 30).until(lambda _: "finq dead replay" in status.text)

    failed = browser.find_element(By.ID, "admin-failed-body")
    assert HOSTILE in failed.text  # the question and the issue, both as text
    assert failed.find_elements(By.CSS_SELECTOR, "script, img") == []
    assert browser.execute_script("return window.pwned === undefined")
    assert failed_id in browser.page_source or HOSTILE in failed.text

    # The replayed question is answered as its user's (the answer joins their conversation).
    wait(browser, 60).until(lambda _: answer_of(finq, question.request_id or "") is not None)
    assert "billion" in (answer_of(finq, question.request_id or "") or "")


def test_a_plain_users_key_is_turned_away_with_a_way_to_sign_in_as_an_operator(
    browser: WebDriver, finq: RunningFinq
) -> None:
    key = new_user_key(finq, "not-an-operator")
    browser.get(f"{finq.url}/admin")
    browser.execute_script("sessionStorage.setItem('finq.apiKey', arguments[0])", key)
    browser.get(f"{finq.url}/admin")
    wait(browser, 30).until(lambda d: "operators" in d.find_element(By.ID, "admin-error").text)
    assert browser.find_element(By.ID, "admin-sign-in").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "button.replay") == []
