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


def test_an_upload_made_while_the_opening_audit_waits_is_not_replaced_by_it(browser, one_slot_server, tmp_path):
    """From a browser review (session 52): a share link's audit that ended after the visitor uploaded a
    file wrote the link's dataset back into the form (the upload button still naming the upload), and
    *Run audit* audited the link's data. Here the link's audit waits behind another visitor's long
    job, the visitor uploads meanwhile; when the link's audit ends, the upload stays and is audited."""
    url = one_slot_server.url
    long_one = real_data.edited_gsm8k(tmp_path / "long_three.jsonl", RECORDS, 3)
    small = tmp_path / "small.jsonl"
    small.write_text("".join(json.dumps(r) + "\n" for r in real_data.rows("gsm8k/test.jsonl")[:300]),
                     encoding="utf-8")
    pages = [new_page(browser, url) for _ in range(2)]
    try:
        (_, p1), (_, p2) = pages
        p1.goto(url + "/")
        wait_audited(p1, "7,473")
        upload_and_start(p1, long_one)
        expect(status(p1)).to_contain_text(re.compile(r"loading|reading|hashing|checking|searching|clustering"),
                                           timeout=60_000)
        # A link the cache does not hold: its audit waits for the slot p1's job holds.
        p2.goto(url + "/?dataset=example:gsm8k&config=main&split=test&text=question&answer=answer&max_rows=1000")
        expect(status(p2)).to_contain_text("Waiting for a free worker", timeout=60_000)
        p2.locator("input[type=file]:has(+ #upload)").set_input_files(str(small))
        expect(dataset_box(p2)).to_have_value("upload:small.jsonl")
        wait_audited(p1, "120,000", "long_three.jsonl")
        expect(status(p2)).to_contain_text("ended after you chose another dataset: it is not shown",
                                           timeout=300_000)
        expect(dataset_box(p2)).to_have_value("upload:small.jsonl")
        p2.locator("#run").click()
        wait_audited(p2, "300", "small.jsonl")
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
