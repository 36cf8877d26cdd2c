"""The work queue as visitors meet it, on a server of its own with one work slot and at most two jobs
per visitor: while one visitor's long audit runs, another's waits and the page says its place and an
estimate; a third visitor's cached audit answers meanwhile (cheap requests never wait for expensive
ones); the waiting visitor cancels and the page says so; the running one cancels too and its job
stops. An upload larger than the reading budget is refused as it arrives (it used to be kept in
Gradio's cache outside any bound)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import real_data
from app_server import serve
from browser_support import dataset_box, new_page, status, wait_audited

# A long sweep (two app servers of their own, 120,000-record audits: ~90 s): CI and test.sh --all.
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.sweep]
pytest_plugins = ["browser_support"]
RECORDS = 120_000


@pytest.fixture(scope="module")
def one_slot_server():
    # A reading budget the long audits fit in (120,000 records: 31 MB, 73 MB as the budget counts them).
    yield from serve({"AUDITOR_JOB_SLOTS": "1", "AUDITOR_JOBS_PER_VISITOR": "2", "AUDITOR_MAX_BYTES": "128M"})


@pytest.fixture(scope="module")
def small_budget_server(tmp_path_factory):
    """A 16 MiB reading budget; Gradio's upload cache in a folder the test can look into."""
    cache = tmp_path_factory.mktemp("gradio-cache")
    for server in serve({"AUDITOR_MAX_BYTES": "16M", "GRADIO_TEMP_DIR": str(cache)}):
        server.gradio_cache = cache
        yield server


def upload_and_start(pg, path: Path):
    pg.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(dataset_box(pg)).to_have_value(f"upload:{path.name}")
    expect(status(pg)).to_contain_text("Fields of", timeout=60_000)
    pg.locator("#run").click()


def test_cheap_requests_pass_long_jobs_and_visitors_see_their_place_and_can_cancel(browser, one_slot_server,
                                                                                   tmp_path):
    url = one_slot_server.url
    first = real_data.edited_gsm8k(tmp_path / "long_one.jsonl", RECORDS, 1)
    second = real_data.edited_gsm8k(tmp_path / "long_two.jsonl", RECORDS, 2)
    pages = [new_page(browser, url) for _ in range(3)]
    try:
        (_, p1), (_, p2), (_, p3) = pages
        for pg in (p1, p2):
            pg.goto(url + "/")
            wait_audited(pg, "7,473")
        upload_and_start(p1, first)
        expect(status(p1)).to_contain_text(re.compile(r"loading|reading|hashing|checking|searching|clustering"),
                                           timeout=60_000)
        upload_and_start(p2, second)
        # The second visitor waits, and is told where and for how long.
        expect(status(p2)).to_contain_text(re.compile(r"Waiting for a free worker: 1st in line \(1 running\), about "
                                                      r"[\d,]+ s"), timeout=60_000)
        # A third visitor's cached audit (the opening one) answers while the line is held.
        p3.goto(url + "/")
        wait_audited(p3, "7,473")
        expect(status(p3)).to_contain_text("from the cache")
        expect(status(p2)).to_contain_text("Waiting for a free worker")          # still in line meanwhile
        # The waiting visitor cancels: out of the line at once.
        p2.locator("#cancel").click()
        expect(status(p2)).to_contain_text("Cancelled: nothing was changed.", timeout=30_000)
        # The running one cancels: its job stops at its next step, and the slot is free again.
        p1.locator("#cancel").click()
        expect(status(p1)).to_contain_text("Cancelled", timeout=120_000)
        p2.locator("#run").click()                        # now first in line: it runs
        expect(status(p2)).to_contain_text(re.compile(r"Audited long_two\.jsonl.*120,000 records"), timeout=600_000)
    finally:
        for context, _ in pages:
            context.close()


def test_an_upload_over_the_reading_budget_is_refused_as_it_arrives(browser, small_budget_server, tmp_path):
    url = small_budget_server.url
    huge = tmp_path / "huge.jsonl"
    with open(huge, "wb") as fh:                          # 17 MiB: over AUDITOR_MAX_BYTES=16M
        line = (json.dumps({"question": "x" * 1000}) + "\n").encode()
        for _ in range(17 * 1024):
            fh.write(line)
    context, pg = new_page(browser, url)
    try:
        pg.goto(url + "/")
        wait_audited(pg, "7,473")
        pg.locator("input[type=file]:has(+ #upload)").set_input_files(str(huge))
        expect(pg.locator(".toast-body").last).to_contain_text(re.compile(r"exceeds the maximum|too large|16"),
                                                               timeout=60_000)
        expect(dataset_box(pg)).to_have_value("example:gsm8k")          # nothing taken for the dataset
        for kept in (Path(small_budget_server.tmp.name), small_budget_server.gradio_cache):
            assert not list(kept.rglob("huge.jsonl"))                   # nor kept anywhere on the server
    finally:
        context.close()
