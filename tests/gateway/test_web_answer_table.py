"""The web app shows an answer of several years and figures as what it is: a short lead, the
figures in an HTML table under it, and how each computed figure was reached behind a
"How it was computed" disclosure. Real headless Chromium (tests/headless_browser.py)
against the session's pipeline; screenshots are saved under the test's tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import RunningFinq
from tests.headless_browser import headless_chromium, shot

pytestmark = pytest.mark.e2e

ANSWER_SECONDS = 60
ANSWERED = ".turn.answer:not(.pending):not(.failed)"
QUESTION = "How did NVIDIA's revenue and net income change from fiscal 2021 to 2025?"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path) as driver:
        yield driver


def ask(driver: WebDriver, finq: RunningFinq, question: str) -> WebElement:
    """Open the app, type the question and press Enter; the answer it gets."""
    driver.get(f"{finq.url}/")
    wait = WebDriverWait(driver, ANSWER_SECONDS, poll_frequency=0.1)
    wait.until(lambda d: d.find_element(By.ID, "question").is_enabled())
    box = driver.find_element(By.ID, "question")
    box.send_keys(question)
    box.send_keys(Keys.ENTER)

    def answered(d: WebDriver) -> list[WebElement]:
        failed = d.find_elements(By.CSS_SELECTOR, ".turn.answer.failed")
        assert not failed, failed[0].text
        return d.find_elements(By.CSS_SELECTOR, ANSWERED)

    return wait.until(answered)[-1]


def test_a_multi_year_answer_is_a_lead_over_a_table_with_its_working_behind_a_disclosure(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    answer = ask(browser, finq, QUESTION)
    lead = answer.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert lead.startswith(
        "NVIDIA's revenue rose from $16.7 billion in fiscal 2021 to $130.5 billion in fiscal "
        "2025, and its net income from $4.3 billion to $72.9 billion"
    ), lead
    assert len(lead) <= 300 and "× 100" not in lead
    assert answer.find_element(By.CSS_SELECTOR, ".validation .badge").text.endswith("Verified")

    table = answer.find_element(By.CSS_SELECTOR, "table.answer-table")
    assert table.find_element(By.TAG_NAME, "caption").text == "NVIDIA, fiscal 2021–2025"
    headers = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert headers == [
        "Fiscal year",
        "Revenue",
        "Revenue growth",
        "Net income",
        "Net income growth",
    ]
    rows = {
        row.find_element(By.CSS_SELECTOR, "th[scope=row]").text: [
            cell.text for cell in row.find_elements(By.TAG_NAME, "td")
        ]
        for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")
    }
    assert list(rows) == ["FY2021", "FY2022", "FY2023", "FY2024", "FY2025"]
    assert rows["FY2021"] == ["$16.7 billion", "52.7%", "$4.3 billion", "54.9%"]
    assert rows["FY2024"] == ["$60.9 billion", "125.9%", "$29.8 billion", "581.3%"]
    # The table sits under the lead, before the chart and the sources.
    parts = [
        element.get_attribute("class")
        for element in answer.find_elements(By.XPATH, "./*")
        if element.get_attribute("class")
    ]
    assert parts.index("answer-text") < parts.index("answer-table-wrap") < parts.index("workings")
    shot(browser, tmp_path, "1-lead-and-table")

    disclosure = answer.find_element(By.CSS_SELECTOR, "details.workings")
    assert disclosure.get_attribute("open") is None  # closed until asked for
    summary = disclosure.find_element(By.TAG_NAME, "summary")
    assert summary.text == "How it was computed"
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
    summary.click()
    workings = disclosure.find_elements(By.CSS_SELECTOR, "li.working")
    assert len(workings) == 10
    shown = {
        item.find_element(By.CSS_SELECTOR, ".working-figure").text: item.find_element(
            By.CSS_SELECTOR, ".working-text"
        ).text
        for item in workings
    }
    assert shown["NVIDIA's revenue growth, fiscal 2022"] == (
        "(revenue $26.9 billion / fiscal 2021 revenue $16.7 billion − 1) × 100 = 61.4%"
    )
    shot(browser, tmp_path, "2-how-it-was-computed")


def test_a_single_figure_has_no_table(browser: WebDriver, finq: RunningFinq) -> None:
    answer = ask(browser, finq, "What was Apple's revenue in fiscal 2023?")
    assert "$383.3 billion" in answer.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert not answer.find_elements(By.CSS_SELECTOR, "table.answer-table")
    assert not answer.find_elements(By.CSS_SELECTOR, "details.workings")
