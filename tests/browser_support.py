"""What the browser tests share: one headless Chromium per session (Debian's /usr/bin/chromium;
`playwright install` is never needed), a page factory, and locators/waits for the app's parts.
Test modules load it with ``pytest_plugins = ["app_server", "browser_support"]``."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT = 30_000


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def new_page(browser, app_url: str, init_script: str | None = None, **context_options):
    """(context, page) at the app's viewport; ``page.outside_requests`` collects every request
    that leaves the app (the page must make none). Close the context when done."""
    context = browser.new_context(viewport={"width": 1360, "height": 1000}, accept_downloads=True,
                                  **context_options)
    if init_script:
        context.add_init_script(init_script)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.outside_requests = []
    pg.on("request", lambda r: pg.outside_requests.append(r.url)
          if not r.url.startswith((app_url, "data:", "blob:", "about:")) else None)
    return context, pg


def status(pg):
    return pg.locator("#status")


def dataset_box(pg):
    return pg.locator("#dataset input, #dataset textarea").first


def share_box(pg):
    return pg.locator("#share input, #share textarea").first


def run_with_token(pg, token: str, records: str, name: str) -> str:
    """Run audit with ``token`` in its box; once NAME's RECORDS are audited, the share link."""
    pg.locator("#token input").fill(token)
    pg.locator("#run").click()
    wait_audited(pg, records, name)
    return share_box(pg).input_value()


def wait_audited(pg, records: str, name: str = ""):
    """Until the status line says "Audited NAME ...: RECORDS records" (so "3" never matches "7,473")."""
    pattern = re.compile(rf"Audited {re.escape(name)}.*: {re.escape(records)} records")
    expect(status(pg)).to_contain_text(pattern, timeout=TIMEOUT)


def open_app(pg, app_url: str):
    """The app's front page, once its opening audit (GSM8K train) is shown."""
    pg.goto(app_url + "/")
    wait_audited(pg, "7,473")


def open_tab(pg, name: str):
    pg.get_by_role("tab", name=name).click()
