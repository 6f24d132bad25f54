"""The web app the gateway serves at / (services/gateway/web), in a real browser: headless
Chromium driven by selenium through Debian's chromedriver, against the session's pipeline.

A question is answered with its citation, a follow-up continues the conversation, a
suggestion chip asks the next question and its chart is drawn; the "how this was answered"
panel shows the route, the tool calls and the stages; an upload shows its progress until
it is ready; stored text holding markup is shown as text; the metric catalog searches;
the portfolio view asks with one click; a 401 asks for a key; a phone-width page has no
sideways scroll and the keyboard reaches everything in order.

Without /usr/bin/chromium and /usr/bin/chromedriver (`make test` installs them as root
where apt-get is available) the browser tests skip, saying so (tests/headless_browser.py).
Each test saves screenshots under its tmp_path and prints where."""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from shared.identity import add_user
from shared.portfolio.demo import import_demo_history
from tests.conftest import RunningFinq
from tests.headless_browser import headless_chromium, shot

pytestmark = pytest.mark.e2e

# An answer takes well under a second once the stages are warm; the first can take longer.
ANSWER_SECONDS = 60
# Reading an upload embeds it (the first one loads the model in the ingest stage).
INGEST_SECONDS = 240
ANSWERED = ".turn.answer:not(.pending):not(.failed)"

NOTES = """# Harbor Street Cafe: opening checklist

## Before the doors open

Turn on both espresso machines and run a blank shot through each group head. Count the
cash drawer and write the float on the daily sheet.

## Food safety

Check that the walk-in fridge reads below five degrees and log the reading.
"""


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path) as driver:
        yield driver


def wait(driver: WebDriver, seconds: float = ANSWER_SECONDS) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, seconds, poll_frequency=0.1)


def open_app(driver: WebDriver, finq: RunningFinq) -> None:
    driver.get(f"{finq.url}/")
    wait(driver, 20).until(lambda d: d.find_element(By.ID, "question").is_enabled())


def click(driver: WebDriver, element: WebElement) -> None:
    """Click as a user would, with the element scrolled clear of the sticky question box."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def answered(count: int) -> Callable[[WebDriver], list[WebElement]]:
    """Wait condition: at least `count` answers shown; an answer that failed fails the test."""

    def condition(driver: WebDriver) -> list[WebElement]:
        failed = driver.find_elements(By.CSS_SELECTOR, ".turn.answer.failed")
        assert not failed, failed[0].text
        shown = driver.find_elements(By.CSS_SELECTOR, ANSWERED)
        return shown if len(shown) >= count else []

    return condition


def ask(driver: WebDriver, question: str) -> WebElement:
    """Type the question and press Enter; the answer it gets."""
    before = len(driver.find_elements(By.CSS_SELECTOR, ANSWERED))
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)
    return wait(driver).until(answered(before + 1))[-1]


def api_paths(finq: RunningFinq) -> set[str]:
    return set(httpx.get(f"{finq.url}/openapi.json", timeout=30).json()["paths"])


def requested(driver: WebDriver) -> list[str]:
    """The paths the page fetched (Resource Timing)."""
    names = driver.execute_script(
        "return performance.getEntriesByType('resource').map((entry) => entry.name)"
    )
    return [httpx.URL(name).path for name in names]


def new_user_key(finq: RunningFinq, name: str) -> str:
    async def make() -> str:
        conn = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            return (await add_user(conn, f"{name}-{os.urandom(3).hex()}"))[1]
        finally:
            await conn.close()

    return asyncio.run(make())


def test_the_page_and_its_files_are_served_with_headers_that_allow_no_inline_script(
    finq: RunningFinq,
) -> None:
    page = httpx.get(f"{finq.url}/", timeout=30)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert "frame-ancestors 'none'" in policy
    assert page.headers["x-content-type-options"] == "nosniff"
    # Every script is a file of finq's own: no inline code, nothing from elsewhere.
    scripts = re.findall(r"<script\b[^>]*>", page.text)
    assert scripts and all(re.search(r'src="/static/[a-z]+\.js"', tag) for tag in scripts)
    assert "http://" not in page.text and "https://" not in page.text
    for name, media_type in (("app.js", "javascript"), ("app.css", "text/css")):
        asset = httpx.get(f"{finq.url}/static/{name}", timeout=30)
        assert asset.status_code == 200 and media_type in asset.headers["content-type"]
        assert asset.headers["x-content-type-options"] == "nosniff"
    # Nothing but the listed files: an unknown one is the API's JSON 404.
    missing = httpx.get(f"{finq.url}/static/nothing.js", timeout=30)
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
    paths = api_paths(finq)
    assert "/" not in paths and not any(path.startswith("/static") for path in paths)
    assert "/v1/metrics/catalog" in paths


def test_the_metric_catalog_endpoint_searches_words_and_categories(finq: RunningFinq) -> None:
    everything = httpx.get(f"{finq.url}/v1/metrics/catalog", timeout=30).json()
    assert "valuation" in everything["categories"] and len(everything["metrics"]) > 50
    found = httpx.get(
        f"{finq.url}/v1/metrics/catalog", params={"q": "free cash flow"}, timeout=30
    ).json()["metrics"]
    assert "free_cash_flow" in [metric["id"] for metric in found]
    assert all("free" in str(metric).lower() for metric in found)
    valuation = httpx.get(
        f"{finq.url}/v1/metrics/catalog", params={"category": "valuation"}, timeout=30
    ).json()["metrics"]
    assert valuation and {metric["category"] for metric in valuation} == {"valuation"}
    assert any(metric["formula"] for metric in valuation)
    refused = httpx.get(
        f"{finq.url}/v1/metrics/catalog", params={"category": "astrology"}, timeout=30
    )
    assert refused.status_code == 422 and refused.json()["code"] == "invalid_request"


def test_a_question_is_answered_with_its_citation_and_a_follow_up_continues_it(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    open_app(browser, finq)
    first = ask(browser, "What was Apple's revenue in fiscal 2023?")
    text = first.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert "383.3 billion" in text and "fiscal 2023" in text
    assert first.find_element(By.CSS_SELECTOR, ".validation .badge").text.endswith("Verified")

    click(browser, first.find_element(By.CSS_SELECTOR, ".citations summary"))
    citation = first.find_element(By.CSS_SELECTOR, ".citation")
    assert "10-K" in citation.find_element(By.CSS_SELECTOR, ".citation-label").text
    assert "accession 0000320193-23-000106" in citation.text
    link = citation.find_element(By.CSS_SELECTOR, "a.citation-link")
    assert link.text == "View on EDGAR"
    assert link.get_attribute("href").startswith("https://www.sec.gov/Archives/edgar/")
    assert link.get_attribute("rel") == "noopener noreferrer"
    # The question is listed as the conversation it started, and marked as the open one.
    current = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, '.conversation[aria-current="true"]')
    )[0]
    conversation_id = current.get_attribute("data-id")
    shot(browser, tmp_path, "1-answer-with-citation")

    follow_up = ask(browser, "And in 2022?")
    text = follow_up.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert "Apple" in text and "fiscal 2022" in text and "394.3 billion" in text
    stored = httpx.get(f"{finq.url}/v1/conversations/{conversation_id}", timeout=30).json()
    assert [m["content"] for m in stored["messages"] if m["role"] == "user"] == [
        "What was Apple's revenue in fiscal 2023?",
        "And in 2022?",
    ]
    assert len(browser.find_elements(By.CSS_SELECTOR, ".turn.question")) == 2
    shot(browser, tmp_path, "2-follow-up")

    paths = api_paths(finq)
    fetched = requested(browser)
    if "/v1/ask/stream" in paths:
        # The page watched the stages live, and never needed the plain /v1/ask.
        assert "/v1/ask/stream" in fetched and "/v1/ask" not in fetched
    else:
        assert "/v1/ask" in fetched


def test_a_suggestion_asks_its_question_and_the_chart_and_how_it_was_answered_are_shown(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    open_app(browser, finq)
    first = ask(browser, "What was Apple's revenue in fiscal 2023?")
    # One figure has no chart (services/answerer/extras.py); a trend has a line chart.
    assert not first.find_elements(By.CSS_SELECTOR, "figure.chart")
    chip = next(
        chip
        for chip in first.find_elements(By.CSS_SELECTOR, ".suggestions .chip")
        if "over the last five years" in chip.text
    )
    click(browser, chip)
    trend = wait(browser).until(answered(2))[-1]
    questions = browser.find_elements(By.CSS_SELECTOR, ".turn.question .question-text")
    assert questions[-1].text == "How did Apple's revenue change over the last five years?"

    chart = trend.find_element(By.CSS_SELECTOR, "figure.chart")
    assert "revenue" in chart.find_element(By.TAG_NAME, "figcaption").text
    svg = chart.find_element(By.CSS_SELECTOR, "svg.chart-svg")
    assert svg.get_attribute("role") == "img" and svg.get_attribute("aria-label")
    assert svg.find_elements(By.CSS_SELECTOR, "path.line")
    assert len(chart.find_elements(By.CSS_SELECTOR, "circle.point")) >= 5
    ticks = [tick.text for tick in svg.find_elements(By.CSS_SELECTOR, "text.tick")]
    assert "FY2023" in ticks and any(tick.startswith("$") and "B" in tick for tick in ticks)
    shot(browser, tmp_path, "1-chart")

    click(browser, trend.find_element(By.CSS_SELECTOR, ".how summary"))
    how = trend.find_element(By.CSS_SELECTOR, ".how-body")
    facts = dict(
        zip(
            [dt.text for dt in how.find_elements(By.TAG_NAME, "dt")],
            [dd.text for dd in how.find_elements(By.TAG_NAME, "dd")],
            strict=True,
        )
    )
    assert facts["Intent"] == "metric_trend"
    assert facts["Decided by"] and facts["Confidence"].endswith("%")
    assert how.find_element(By.CSS_SELECTOR, ".tool-name").text == "get_financial_metrics"
    assert '"AAPL"' in how.find_element(By.CSS_SELECTOR, ".tool-args").text
    rows = wait(browser, 20).until(
        lambda d: how.find_elements(By.CSS_SELECTOR, ".waterfall-row .stage-name")
    )
    stages = [row.text for row in rows]
    assert {"router", "tools", "answerer", "validator"} <= {s.split(" ")[0] for s in stages}
    source = how.find_element(By.CSS_SELECTOR, ".waterfall .label").text
    if "/v1/traces/{trace_id}" in api_paths(finq):
        assert "from the trace" in source
        assert how.find_element(By.CSS_SELECTOR, ".explanation").text
    else:
        assert "from the request log" in source
    browser.execute_script("arguments[0].scrollIntoView({block: 'start'})", how)
    shot(browser, tmp_path, "2-how-it-was-answered")


def test_stored_markup_is_shown_as_text_and_never_becomes_an_element(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    question = (
        "What was Apple's revenue in fiscal 2023? <img src=x onerror=alert(1)>"
        "<script>window.pwned = 1</script>"
    )
    asked = httpx.post(f"{finq.url}/v1/ask", json={"question": question}, timeout=60)
    assert asked.status_code == 200, asked.text
    conversation_id = asked.json()["conversation_id"]
    # The title is the question, cut short (with its markup).
    title = httpx.get(f"{finq.url}/v1/conversations/{conversation_id}", timeout=30).json()["title"]
    assert "<img" in title

    open_app(browser, finq)
    listed = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'.conversation[data-id="{conversation_id}"]')
    )[0]
    assert listed.find_element(By.CSS_SELECTOR, ".conversation-title").text == title
    click(browser, listed)
    shown = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, ".turn.question .question-text")
    )
    assert shown[0].text == question
    assert browser.find_element(By.ID, "thread-title").text == title
    wait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".answer-text"))

    # Asked in the page too: the question box's text and the answer are text as well.
    ask(browser, "And in 2022? <b>bold</b> <script>window.pwned = 2</script>")
    assert browser.find_elements(By.CSS_SELECTOR, ".question-text")[-1].text.endswith(
        "<b>bold</b> <script>window.pwned = 2</script>"
    )
    assert browser.find_elements(By.TAG_NAME, "img") == []
    assert browser.find_elements(By.CSS_SELECTOR, "main b, main script") == []
    assert len(browser.find_elements(By.TAG_NAME, "script")) == 1  # the page's own module
    assert browser.execute_script("return window.pwned") is None
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018 (reading it is what raises)
    shot(browser, tmp_path, "markup-as-text")


def test_a_401_asks_for_a_key_and_an_upload_shows_its_progress_until_ready(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    # As a user of its own: the upload is that user's, out of the local user's way.
    key = new_user_key(finq, "web-upload")
    open_app(browser, finq)

    # A key that is not valid: the next request is a 401, and the page asks again.
    click(browser, browser.find_element(By.ID, "sign-in-button"))
    browser.find_element(By.ID, "api-key").send_keys("finq_" + "A" * 43, Keys.ENTER)
    reason = wait(browser, 20).until(
        lambda d: (
            d.find_element(By.ID, "sign-in-dialog").is_displayed()
            and d.find_element(By.ID, "sign-in-reason").text
        )
    )
    assert "not valid" in reason
    shot(browser, tmp_path, "1-sign-in-after-401")
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    wait(browser, 20).until(lambda d: not d.find_element(By.ID, "sign-in-dialog").is_displayed())
    assert browser.find_element(By.ID, "signed-in").text == "Signed in with an API key"
    assert browser.execute_script("return sessionStorage.getItem('finq.apiKey')") == key

    click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="documents"]'))
    notes = tmp_path / "cafe-checklist.md"
    notes.write_text(NOTES)
    browser.find_element(By.ID, "upload-file").send_keys(str(notes))
    browser.find_element(By.ID, "upload-title").send_keys("Cafe opening checklist")
    click(browser, browser.find_element(By.ID, "upload-button"))
    job = wait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".job"))[0]
    assert job.find_element(By.CSS_SELECTOR, ".job-name").text == "cafe-checklist.md"
    progress = job.find_element(By.CSS_SELECTOR, "progress.job-progress")
    assert progress.accessible_name == "cafe-checklist.md"

    seen: list[str] = []

    def finished(_: WebDriver) -> bool:
        status = job.get_attribute("data-status") or "uploading"
        if not seen or seen[-1] != status:
            seen.append(status)
        assert status != "failed", job.text
        return status == "ready"

    wait(browser, INGEST_SECONDS).until(finished)
    assert progress.get_attribute("value") == "1"
    status = job.find_element(By.CSS_SELECTOR, ".job-status").text
    assert status.startswith("Ready: ") and "passage" in status, status
    print(f"statuses seen: {seen}")
    shot(browser, tmp_path, "2-upload-ready")

    document_id = job.get_attribute("data-document-id")
    mine = httpx.get(
        f"{finq.url}/v1/documents/{document_id}",
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    ).json()
    assert mine["status"] == "ready" and mine["title"] == "Cafe opening checklist"
    # Not the local user's: the page acted as the user whose key it was given.
    assert httpx.get(f"{finq.url}/v1/documents/{document_id}", timeout=30).status_code == 404


def test_the_metric_catalog_is_searched_by_words_and_category(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    open_app(browser, finq)
    click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="metrics"]'))
    wait(browser, 20).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".metric")) > 50)
    assert browser.switch_to.active_element.get_attribute("id") == "metric-query"

    browser.find_element(By.ID, "metric-query").send_keys("free cash flow")
    wait(browser, 10).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, ".metric")) < 20)
    metric = browser.find_element(By.CSS_SELECTOR, '.metric[data-id="free_cash_flow"]')
    assert metric.find_element(By.CSS_SELECTOR, ".metric-label").text.startswith("Free cash flow")
    assert metric.find_element(By.CSS_SELECTOR, ".formula code").text
    shot(browser, tmp_path, "1-search")

    browser.execute_script(
        "const q = document.getElementById('metric-query'); q.value = '';"
        "q.dispatchEvent(new Event('input'))"
    )
    Select(browser.find_element(By.ID, "metric-category")).select_by_value("valuation")
    count = browser.find_element(By.ID, "metric-count").text
    shown = browser.find_elements(By.CSS_SELECTOR, ".metric")
    assert shown and count.startswith(f"{len(shown)} of ")
    assert all("Valuation ·" in metric.text for metric in shown)
    shot(browser, tmp_path, "2-category")


def test_the_portfolio_view_lists_accounts_and_asks_with_one_click(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    # A user of its own, holding the demo portfolio.
    async def demo_user() -> str:
        owner = await asyncpg.connect(finq.servers.postgres.dsn)
        try:
            user, key = await add_user(owner, f"web-portfolio-{os.urandom(3).hex()}")
        finally:
            await owner.close()
        pool = await asyncpg.create_pool(finq.servers.postgres.dsn, min_size=1, max_size=2)
        assert pool is not None
        try:
            outcome = await import_demo_history(pool, user.id)
        finally:
            await pool.close()
        assert outcome.errors == [], outcome
        return key

    key = asyncio.run(demo_user())
    headers = {"Authorization": f"Bearer {key}"}
    accounts = httpx.get(f"{finq.url}/v1/portfolio/accounts", headers=headers, timeout=30)
    names = [account["name"] for account in accounts.json()["accounts"]]
    assert names

    open_app(browser, finq)
    click(browser, browser.find_element(By.ID, "sign-in-button"))
    browser.find_element(By.ID, "api-key").send_keys(key, Keys.ENTER)
    click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="portfolio"]'))
    rows = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "#account-rows tr th")
    )
    assert [row.text for row in rows] == names
    assert browser.find_element(By.ID, "portfolio-status").text.startswith(f"{len(names)} account")
    shot(browser, tmp_path, "1-portfolio")

    questions = browser.find_elements(By.CSS_SELECTOR, "#portfolio-questions .chip")
    asked = [chip.text for chip in questions]
    assert "What is my portfolio worth?" in asked and "How did my portfolio do this year?" in asked
    click(browser, questions[asked.index("What is my portfolio worth?")])
    answer = wait(browser).until(answered(1))[0]
    assert browser.find_element(By.ID, "view-chat").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, ".question-text").text == (
        "What is my portfolio worth?"
    )
    assert "$" in answer.find_element(By.CSS_SELECTOR, ".answer-text").text
    # The badge says what was checked, and what the validator repaired, when it did.
    badge = answer.find_element(By.CSS_SELECTOR, ".validation .badge")
    assert "Verified" in badge.text
    click(browser, badge)
    checked = answer.find_element(By.CSS_SELECTOR, ".validation-body").text
    assert "was checked against the data finq fetched" in checked
    assert ("Repairs made" in checked) == badge.text.endswith("with repairs")
    shot(browser, tmp_path, "2-portfolio-answer")


def test_a_phone_width_page_fits_and_the_keyboard_reaches_everything_in_order(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    browser.set_window_size(390, 844)
    open_app(browser, finq)
    width: Any = browser.execute_script("return window.innerWidth")
    assert width <= 420
    ask(browser, "What was Apple's revenue in fiscal 2023?")
    overflow = browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px at {width}px"
    aside = browser.find_element(By.CSS_SELECTOR, ".conversations").rect
    thread = browser.find_element(By.ID, "thread").rect
    assert aside["y"] + aside["height"] <= thread["y"], "one column: the list above the thread"
    shot(browser, tmp_path, "1-phone")

    # Every field has a label.
    unlabelled = browser.execute_script(
        "return [...document.querySelectorAll('input, select, textarea')]"
        ".filter((el) => !el.labels.length && !el.getAttribute('aria-label')).map((el) => el.id)"
    )
    assert unlabelled == []

    # Tab from the top: skip link, the views, sign in, the conversations, then the question
    # box and Send, in that order.
    browser.get(f"{finq.url}/")
    wait(browser, 20).until(lambda d: d.find_element(By.ID, "question").is_enabled())
    reached: list[str] = []
    # The list holds up to 50 of the user's conversations (the suite's other tests ask as
    # this user too): enough tabs to pass them all.
    for _ in range(200):
        browser.switch_to.active_element.send_keys(Keys.TAB)
        element = browser.switch_to.active_element
        reached.append(element.get_attribute("id") or element.text.strip())
        if reached[-1] == "send":
            break
    expected = ["Skip to the question box", "Chat", "Documents", "Metrics", "Portfolio"]
    expected += ["sign-in-button", "new-conversation", "question", "send"]
    assert set(expected) <= set(reached), reached
    positions = [reached.index(name) for name in expected]
    assert positions == sorted(positions), reached

    # Enter on a tab opens its view and puts the focus in it.
    browser.find_element(By.CSS_SELECTOR, '.tab[data-view="documents"]').send_keys(Keys.ENTER)
    assert browser.switch_to.active_element.get_attribute("id") == "upload-file"
    shot(browser, tmp_path, "2-phone-documents")
