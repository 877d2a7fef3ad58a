"""Debian's headless Chromium driven by selenium through ``/usr/bin/chromedriver`` (never selenium-manager: nothing is
downloaded). Without them the browser tests skip, except under ``CI=true`` where they fail: CI installs them
(``.ci/run``)."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMEDRIVER = Path("/usr/bin/chromedriver")


def _missing(why: str) -> None:
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"the browser tests must run in CI: {why} (apt-get install chromium chromium-driver)")
    pytest.skip(why)


@contextlib.contextmanager
def chrome(tmp_path: Path) -> Iterator[Any]:
    """A headless Chromium (its profile under ``tmp_path``), quit on exit."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not CHROMEDRIVER.is_file() or browser is None:
        _missing(f"no {CHROMEDRIVER} or chromium")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chrome-profile'}")
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()
