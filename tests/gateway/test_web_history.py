"""A conversation reopened in the web app (headless Chromium) shows each answer as it was
first shown: its chart, its sources and its validation badge, not only its text."""

from __future__ import annotations

from pathlib import Path

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from tests.conftest import RunningFinq
from tests.gateway.test_web_app import ask, browser, click, open_app, shot, wait

__all__ = ["browser"]  # the fixture, used by name below


def test_a_reopened_conversation_shows_the_chart_sources_and_badge_it_was_answered_with(
    browser: WebDriver, finq: RunningFinq, tmp_path: Path
) -> None:
    open_app(browser, finq)
    answer = ask(browser, "How did NVIDIA's revenue change over the last five years?")
    assert answer.find_elements(By.CSS_SELECTOR, "figure.chart svg.chart-svg")
    request_id = answer.get_attribute("data-request-id")
    conversation = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, '.conversation[aria-current="true"]')
    )[0]
    conversation_id = conversation.get_attribute("data-id")

    # Away and back: the page draws the conversation from GET /v1/conversations/{id} alone.
    open_app(browser, finq)
    listed = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'.conversation[data-id="{conversation_id}"]')
    )[0]
    click(browser, listed)
    reopened = wait(browser, 20).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, f'.turn.answer[data-request-id="{request_id}"]')
    )[0]
    chart = reopened.find_element(By.CSS_SELECTOR, "figure.chart")
    assert len(chart.find_elements(By.CSS_SELECTOR, "circle.point")) >= 5
    click(browser, reopened.find_element(By.CSS_SELECTOR, ".citations summary"))
    citations = reopened.find_elements(By.CSS_SELECTOR, ".citation")
    assert citations and "10-K" in citations[0].text
    assert "Verified" in reopened.find_element(By.CSS_SELECTOR, ".validation .badge").text
    assert reopened.find_elements(By.CSS_SELECTOR, ".suggestions .chip")
    shot(browser, tmp_path, "reopened")
