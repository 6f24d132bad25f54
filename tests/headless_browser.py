"""Headless Chromium for the browser tests, driven by selenium through Debian's
chromedriver. Without /usr/bin/chromium and /usr/bin/chromedriver (`make test` installs
them as root where apt-get is available) a test that asks for one skips, saying so."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def browser_missing() -> str | None:
    missing = [str(path) for path in (CHROMIUM, CHROMEDRIVER) if not os.access(path, os.X_OK)]
    if not missing:
        return None
    return (
        f"needs Debian's chromium and chromium-driver ({' and '.join(missing)} not found): "
        "`apt-get install -y chromium chromium-driver`, which `make test` runs as root"
    )


@contextmanager
def headless_chromium(tmp_path: Path) -> Iterator[WebDriver]:
    """A headless Chromium; its console log and a last screenshot are left in `tmp_path`."""
    if reason := browser_missing():
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--window-size=1280,1000", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    if os.geteuid() == 0:
        # Chromium refuses to run as root inside its sandbox.
        options.add_argument("--no-sandbox")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        # What the page said in its console, with the screenshots, for whoever reads a failure.
        log = tmp_path / "browser-console.log"
        log.write_text("\n".join(str(entry) for entry in driver.get_log("browser")))
        shot(driver, tmp_path, "last")
        driver.quit()


def shot(driver: WebDriver, tmp_path: Path, name: str) -> Path:
    path = tmp_path / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")
    return path
