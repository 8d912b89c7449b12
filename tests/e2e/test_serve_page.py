"""The page at `rag serve`'s `/`, asked from a real headless Chromium through its WebDriver.

A question typed on the page is answered from the sample docs, with numbered sources that open the
passage they cite, and the page loads nothing from outside the server.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from rag.serve.page import CONTENT_SECURITY_POLICY
from tests.e2e.serve_helpers import SAMPLE_DOCS, ServeProcess, rag_env, rag_in_process

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SCREENSHOT = os.environ.get("RAG_PAGE_SCREENSHOT")  # set to refresh docs/images/serve-page.png


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    home = tmp_path_factory.mktemp("page") / "home"
    env = rag_env(home)
    ingested = rag_in_process(["ingest", str(SAMPLE_DOCS)], env)
    assert ingested.exit_code == 0, ingested.stderr
    process = ServeProcess([], env)
    yield process
    process.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1100,900",
        f"--user-data-dir={tmp_path_factory.mktemp('chromium')}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_the_page_is_served_with_a_policy_that_allows_only_this_server(server: ServeProcess) -> None:
    page = httpx.get(f"{server.base}/", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert page.headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    assert "default-src 'none'" in CONTENT_SECURITY_POLICY and "http" not in CONTENT_SECURITY_POLICY
    for asset in ("/static/page.js", "/static/page.css"):
        assert httpx.get(f"{server.base}{asset}", timeout=10).status_code == 200
    assert httpx.get(f"{server.base}/static/other.js", timeout=10).status_code == 404


def test_a_question_asked_on_the_page_streams_an_answer_with_numbered_sources(
    server: ServeProcess, browser: Any
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{server.base}/")
    wait = WebDriverWait(browser, 30)
    wait.until(lambda b: "model rag" in b.find_element(By.ID, "home").text)
    assert "/home/" in browser.find_element(By.ID, "home").text  # the home's name, beside the model
    browser.find_element(By.ID, "question").send_keys("Which system user does the verdigrisd service run as?")
    browser.find_element(By.ID, "submit").click()
    wait.until(ready.presence_of_element_located((By.CSS_SELECTOR, "#sources li button")))
    wait.until(lambda b: b.find_element(By.ID, "submit").is_enabled())
    answer = browser.find_element(By.ID, "answer").text
    assert "verdigris" in answer.lower() and "Sources:" not in answer
    sources = browser.find_elements(By.CSS_SELECTOR, "#sources li")
    labels = [item.find_element(By.TAG_NAME, "button").text for item in sources]
    assert labels[0].startswith("[1] ") and all(
        label.startswith(f"[{n}] ") for n, label in enumerate(labels, 1)
    )
    passage = sources[0].find_element(By.TAG_NAME, "blockquote")
    assert not passage.is_displayed()
    sources[0].find_element(By.TAG_NAME, "button").click()
    assert passage.is_displayed() and passage.text.strip()
    if SCREENSHOT:
        browser.save_screenshot(SCREENSHOT)
    loaded = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name).concat([document.location.href])"
    )
    assert loaded and all(url.startswith(server.base) for url in loaded), loaded


def test_a_bad_filter_on_the_page_shows_the_servers_message(server: ServeProcess, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(f"{server.base}/")
    browser.find_element(By.ID, "more").click()
    browser.find_element(By.ID, "filter").send_keys("source ==")
    browser.find_element(By.ID, "question").send_keys("How do I calibrate a probe?")
    browser.find_element(By.ID, "submit").click()
    error = WebDriverWait(browser, 30).until(lambda b: b.find_element(By.ID, "error").text)
    assert "expected a value after '=='" in error
    assert not browser.find_element(By.ID, "result").is_displayed()
