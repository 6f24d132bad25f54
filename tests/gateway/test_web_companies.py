"""The web app's companies view (services/gateway/web/companies.js), in a real browser:
headless Chromium driven by selenium through Debian's chromedriver, against the session's
pipeline, as tests/gateway/test_web_app.py runs it. The view lists the companies GET /v1/companies
gives, in its order, with what finq holds of each; a company's suggested question is asked
in the chat view with one click, and answered.

Without /usr/bin/chromium and /usr/bin/chromedriver the test skips, saying so
(tests/headless_browser.py). Screenshots are saved under its tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

from tests.conftest import RunningFinq
from tests.headless_browser import headless_chromium, shot

pytestmark = pytest.mark.e2e

# An answer takes well under a second once the stages are warm; the first can take longer.
ANSWER_SECONDS = 60
ANSWERED = ".turn.answer:not(.pending):not(.failed)"


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    with headless_chromium(tmp_path) as driver:
        yield driver


def wait(driver: WebDriver, seconds: float = ANSWER_SECONDS) -> WebDriverWait[WebDriver]:
    return WebDriverWait(driver, seconds, poll_frequency=0.1)


def click(driver: WebDriver, element: WebElement) -> None:
    """Click as a user would, with the element scrolled into the middle of the view."""
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
    element.click()


def company_cards(count: int) -> Callable[[WebDriver], list[WebElement]]:
    """Wait condition: the companies view showing `count` companies."""

    def condition(driver: WebDriver) -> list[WebElement]:
        shown = driver.find_elements(By.CSS_SELECTOR, ".company")
        return shown if len(shown) == count else []

    return condition


def first_answer(driver: WebDriver) -> list[WebElement]:
    """Wait condition: the thread's first answer; an answer that failed fails the test."""
    failed = driver.find_elements(By.CSS_SELECTOR, ".turn.answer.failed")
    assert not failed, failed[0].text
    return driver.find_elements(By.CSS_SELECTOR, ANSWERED)


def test_the_companies_are_listed_with_what_is_held_and_a_question_is_asked_with_one_click(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    companies = httpx.get(f"{finq.url}/v1/companies", timeout=30).json()["companies"]
    apple = next(company for company in companies if company["symbol"] == "AAPL")
    last_year = apple["figures"]["annual_fiscal_years"][-1]

    browser.get(f"{finq.url}/")
    wait(browser, 20).until(lambda d: d.find_element(By.ID, "question").is_enabled())
    click(browser, browser.find_element(By.CSS_SELECTOR, '.tab[data-view="companies"]'))
    assert browser.switch_to.active_element.get_attribute("id") == "companies-heading"
    shown = wait(browser, 20).until(company_cards(len(companies)))

    # The API's companies, in its order (by name).
    assert [card.get_attribute("data-symbol") for card in shown] == [
        company["symbol"] for company in companies
    ]
    assert browser.find_element(By.ID, "companies-status").text.startswith(
        f"{len(companies)} companies"
    )
    card = browser.find_element(By.CSS_SELECTOR, '.company[data-symbol="AAPL"]')
    assert card.find_element(By.CSS_SELECTOR, ".company-name").text.startswith("Apple")
    facts = dict(
        zip(
            [dt.text for dt in card.find_elements(By.TAG_NAME, "dt")],
            [dd.text for dd in card.find_elements(By.TAG_NAME, "dd")],
            strict=True,
        )
    )
    assert facts["Tickers"] == "AAPL" and facts["CIK"] == "0000320193"
    assert facts["Fiscal year ends"] == "September 26"
    assert facts["Figures"].startswith(f"FY2007–FY{apple['figures']['last_fiscal_year']}")
    assert facts["Prices"] == f"1980-12-12 to {apple['prices']['last_day']}"
    assert facts["Documents"].endswith("of yours")
    # Held with prices only: no CIK, no fiscal year, and no figure to ask of.
    amazon = browser.find_element(By.CSS_SELECTOR, '.company[data-symbol="AMZN"]')
    assert "CIK" not in [dt.text for dt in amazon.find_elements(By.TAG_NAME, "dt")]
    assert [chip.text for chip in amazon.find_elements(By.CSS_SELECTOR, ".chip")] == [
        f"What did Amazon close at on "
        f"{next(c for c in companies if c['symbol'] == 'AMZN')['prices']['last_day']}?"
    ]
    shot(browser, tmp_path, "1-companies")

    question = f"What was Apple's revenue in fiscal {last_year}?"
    chip = next(c for c in card.find_elements(By.CSS_SELECTOR, ".chip") if c.text == question)
    click(browser, chip)

    answer = wait(browser).until(first_answer)[0]
    assert browser.find_element(By.ID, "view-chat").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, ".turn.question .question-text").text == question
    text = answer.find_element(By.CSS_SELECTOR, ".answer-text").text
    assert "Apple" in text and f"fiscal {last_year}" in text and "billion" in text, text
    assert answer.find_element(By.CSS_SELECTOR, ".validation .badge").text.endswith("Verified")
    shot(browser, tmp_path, "2-asked")
