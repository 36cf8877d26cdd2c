"""The contamination tab's field list follows the audited dataset and a shared link; a numeric or
object field searched is a clear message."""
from __future__ import annotations

import csv
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

import real_data
from browser_support import (TIMEOUT, TRAP, dataset_box, download, new_page, open_app, open_tab, share_box,
                             status, upload_and_run, wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


def read_evidence(path) -> tuple[list, list]:
    """(header, rows) of an evidence CSV, after checking every line ends in CRLF."""
    raw = Path(path).read_bytes()
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    # Each CRLF ends a row, but for those inside a (quoted) text; a bare newline is in a text.
    inside = sum(v.count("\r\n") for r in rows for v in r.values())
    assert raw.endswith(b"\r\n") and raw.count(b"\r\n") == len(rows) + 1 + inside, "rows must end in CRLF"
    return reader.fieldnames, rows


def assert_inert(pg):
    time.sleep(0.3)
    assert pg.evaluate("window.__xss_hits.slice()") == []
    assert pg.locator("img[src='x']").count() == 0


def field_choices(pg) -> list:
    pg.locator("#contam-fields input").click()
    names = [t.strip() for t in pg.get_by_role("option").all_inner_texts()]
    pg.keyboard.press("Escape")
    return names


def pick_fields(pg, *names):
    clear = pg.locator("#contam-fields .token-remove.remove-all")
    if clear.count():
        clear.click()
    pg.locator("#contam-fields input").click()
    for name in names:
        pg.get_by_role("option", name=name, exact=True).click()
    pg.keyboard.press("Escape")


def pick_benchmark(pg, name: str):
    pg.locator("#benchmark input").click()
    pg.get_by_role("option", name=name, exact=True).click()


@pytest.mark.slow
def test_contamination_fields_follow_the_audited_dataset_and_a_shared_link(browser, page, app_url):
    """From a demanding curator's review of the Space."""
    open_app(page, app_url)
    open_tab(page, "Leakage")
    assert field_choices(page) == ["question", "answer"]        # GSM8K's
    dataset_box(page).fill("example:mbpp")
    dataset_box(page).press("Enter")
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#split input").fill("test")
    page.locator("#run").click()
    mbpp_test = real_data.rows("mbpp/mbpp.jsonl")[10:510]
    wait_audited(page, f"{len(mbpp_test)}", "example:mbpp")
    assert field_choices(page) == list(mbpp_test[0])             # no stale question / answer
    link = share_box(page).input_value()
    assert link.startswith(app_url) and "dataset=example%3Ambpp" in link

    context, fresh = new_page(browser, app_url, init_script=TRAP)
    try:
        fresh.goto(link)
        wait_audited(fresh, f"{len(mbpp_test)}", "example:mbpp")
        open_tab(fresh, "Leakage")
        assert field_choices(fresh) == list(mbpp_test[0])
        pick_benchmark(fresh, "mbpp")
        pick_fields(fresh, "text", "code")
        fresh.locator("#leak-run").click()
        # (B's box holds A's dataset, its other split: leakage is checked too)
        expect(fresh.locator("#leak-status")).to_contain_text("contamination.", timeout=TIMEOUT)
        expect(fresh.locator("#contam-summary")).to_contain_text(
            "A's fields searched: text, code (each record's joined as one text)")
        header, ev = read_evidence(download(fresh, "dl-contam"))
        assert ev and "corpus_text" in header
        for r in ev[:50]:
            row = mbpp_test[int(r["corpus_row"])]
            assert r["corpus_text"] == row["text"] + "\n" + row["code"]
        assert_inert(fresh)
    finally:
        context.close()


@pytest.mark.slow
def test_a_numeric_or_object_field_searched_is_a_clear_message(page, app_url, tmp_path):
    """From a demanding curator's review of the Space."""
    test = real_data.rows("gsm8k/test.jsonl")
    rows = [{"instruction": "Solve this.", "input": "", "output": f"Worked answer number {i}.", "score": i,
             "meta": {"source": "forum", "votes": i}} for i in range(8)]
    rows[4]["output"] = "Copied: " + test[3]["question"]
    path = write_jsonl(tmp_path / "instruct.jsonl", rows)
    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Leakage")
    assert {"instruction", "output", "score", "meta"} <= set(field_choices(page))
    assert "question" not in field_choices(page)
    pick_benchmark(page, "gsm8k")
    pick_fields(page, "instruction", "output")
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked contamination", timeout=TIMEOUT)
    header, ev = read_evidence(download(page, "dl-contam"))
    assert [(r["benchmark_row"], r["corpus_row"]) for r in ev] == [("3", "4")]
    assert ev[0]["corpus_text"] == "Solve this.\n" + rows[4]["output"]
    for field, word in (("meta", "object"), ("score", "number")):
        pick_fields(page, field)
        page.locator("#leak-run").click()
        leak_status = page.locator("#leak-status")
        expect(leak_status).to_contain_text(field, timeout=TIMEOUT)
        expect(leak_status).to_contain_text(word)
        expect(leak_status).to_have_class(re.compile(r"\berror\b"))
        for bad in ("Traceback", "Something went wrong"):
            expect(leak_status).not_to_contain_text(bad)
        expect(page.locator("#contam-summary")).not_to_contain_text("A's fields searched")
    assert_inert(page)
