"""The web app's own-data controls, in a real browser (headless Chromium, as in
tests/gateway/test_web_app.py): the Documents view lists the user's uploads and the chat lists
their conversations, each with a delete button that asks first, in the page's own dialog;
Cancel keeps it, Delete deletes it (the API no longer finds it) and the list is drawn
again without it. Without /usr/bin/chromium and /usr/bin/chromedriver the test skips,
saying so (tests/headless_browser.py); its screenshots are left under its tmp_path."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from shared.identity import add_user
from tests.conftest import RunningFinq
from tests.headless_browser import headless_chromium, shot

pytestmark = pytest.mark.e2e

PAGE_SECONDS = 20
ANSWER_SECONDS = 60


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path) as driver:
        yield driver


def wait(driver: WebDriver, seconds: float = PAGE_SECONDS) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, seconds, poll_frequency=0.1)


def click(driver: WebDriver, element: WebElement) -> None:
    """Click as a user would, with the element scrolled into view."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def new_user_key(finq: RunningFinq) -> str:
    async def make() -> str:
        owner = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            return (await add_user(owner, f"web-your-data-{os.urandom(3).hex()}"))[1]
        finally:
            await owner.close()

    return asyncio.run(make())


def listed_ids(driver: WebDriver, selector: str) -> list[str]:
    return [
        item.get_attribute("data-id") or ""
        for item in driver.find_elements(By.CSS_SELECTOR, selector)
    ]


def answer_the_dialog(driver: WebDriver, button: str, asks: str) -> None:
    """The page's own dialog is open and asks about `asks`; press `button` in it."""
    dialog = wait(driver).until(
        lambda d: (
            d.find_element(By.ID, "confirm-dialog").is_displayed()
            and d.find_element(By.ID, "confirm-dialog")
        )
    )
    assert asks in dialog.find_element(By.ID, "confirm-text").text
    # The safe choice has the focus: Enter alone deletes nothing.
    assert driver.switch_to.active_element.get_attribute("id") == "confirm-cancel"
    dialog.find_element(By.ID, button).click()
    wait(driver).until(lambda d: not d.find_element(By.ID, "confirm-dialog").is_displayed())


def test_my_uploads_and_conversations_are_listed_and_deleted_after_asking(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    key = new_user_key(finq)
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=finq.url, headers=headers, timeout=ANSWER_SECONDS) as api:
        uploads = {}
        for name in ("harbor-checklist.md", "garden-notes.md"):
            sent = api.post(
                "/v1/documents",
                files={
                    "file": (
                        name,
                        f"# {name}\n\nWritten for this test.\n".encode(),
                        "text/markdown",
                    )
                },
            )
            assert sent.status_code == 202, sent.text
            uploads[name] = sent.json()["id"]
        asked = [
            api.post("/v1/ask", json={"question": question}).json()["conversation_id"]
            for question in (
                "What was Apple's revenue in fiscal 2023?",
                "What was NVIDIA's revenue in fiscal 2024?",
            )
        ]

        browser.get(f"{finq.url}/")
        wait(browser).until(lambda d: d.find_element(By.ID, "question").is_enabled())
        click(browser, browser.find_element(By.ID, "sign-in-button"))
        browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)

        # Documents: both uploads, newest first.
        click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="documents"]'))
        wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".document")) == 2)
        assert listed_ids(browser, ".document") == [
            uploads["garden-notes.md"],
            uploads["harbor-checklist.md"],
        ]
        assert browser.find_element(By.ID, "documents-status").text == "2 documents"
        shot(browser, tmp_path, "1-documents")

        doomed = f'.document[data-id="{uploads["harbor-checklist.md"]}"] .delete-button'
        click(browser, browser.find_element(By.CSS_SELECTOR, doomed))
        shot(browser, tmp_path, "2-asked-before-deleting")
        answer_the_dialog(browser, "confirm-cancel", "harbor-checklist.md")
        assert len(browser.find_elements(By.CSS_SELECTOR, ".document")) == 2
        assert api.get(f"/v1/documents/{uploads['harbor-checklist.md']}").status_code == 200

        click(browser, browser.find_element(By.CSS_SELECTOR, doomed))
        answer_the_dialog(browser, "confirm-delete", "harbor-checklist.md")
        wait(browser).until(lambda d: listed_ids(d, ".document") == [uploads["garden-notes.md"]])
        assert browser.find_element(By.ID, "documents-status").text == "1 document"
        assert api.get(f"/v1/documents/{uploads['harbor-checklist.md']}").status_code == 404
        assert api.get(f"/v1/documents/{uploads['garden-notes.md']}").status_code == 200
        shot(browser, tmp_path, "3-document-deleted")

        # Conversations: the open one is deleted, and its thread goes with it.
        click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="chat"]'))
        conversation = f'.conversation[data-id="{asked[0]}"]'
        click(browser, wait(browser).until(lambda d: d.find_element(By.CSS_SELECTOR, conversation)))
        wait(browser, ANSWER_SECONDS).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".answer-text")
        )
        item = browser.find_element(By.CSS_SELECTOR, conversation).find_element(By.XPATH, "..")
        click(browser, item.find_element(By.CSS_SELECTOR, ".delete-button"))
        answer_the_dialog(browser, "confirm-delete", "Apple's revenue in fiscal 2023")
        wait(browser).until(lambda d: not d.find_elements(By.CSS_SELECTOR, conversation))
        assert asked[1] in listed_ids(browser, ".conversation")
        assert browser.find_element(By.ID, "thread-empty").is_displayed()
        assert browser.find_elements(By.CSS_SELECTOR, ".turn") == []
        assert api.get(f"/v1/conversations/{asked[0]}").status_code == 404
        assert api.get(f"/v1/conversations/{asked[1]}").status_code == 200
        shot(browser, tmp_path, "4-conversation-deleted")
