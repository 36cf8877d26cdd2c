"""A list in its own scroll box (the leaking B records) turned to its next page opens at that page's
top. From a browser review: scrolled to the end of page 1, "next ›" left the box where it was, so
"Showing 11–20" opened at record 17 and records 11 to 16 were easy to miss."""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

import real_data
from browser_support import TIMEOUT, open_app, open_tab, upload_and_run, write_jsonl

pytest_plugins = ["app_server", "browser_support"]


@pytest.mark.browser
def test_the_next_page_of_leaking_records_opens_at_its_top(page, app_url, tmp_path):
    train = real_data.rows("gsm8k/train.jsonl")
    a_rows = [{"question": r["question"], "answer": r["answer"]} for r in train[:200]]
    a = write_jsonl(tmp_path / "pager_train.jsonl", a_rows)
    b = write_jsonl(tmp_path / "pager_test.jsonl", a_rows[:30])                 # 30 leaking records: 3 pages
    open_app(page, app_url)
    upload_and_run(page, a, len(a_rows))
    open_tab(page, "Leakage")
    page.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(b))
    expect(page.locator("#leak-upload")).to_contain_text(b.name)
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked leakage", timeout=TIMEOUT)
    box = page.locator("#leak-evidence .evidence-list")
    expect(page.locator("#leak-evidence .pager").first).to_contain_text("Showing 1–10 of 30")
    assert box.evaluate("e => e.scrollHeight > e.clientHeight + 100"), "the list scrolls in its own box"
    box.evaluate("e => { e.scrollTop = e.scrollHeight; }")
    page.locator("#leak-evidence .pager").last.get_by_role("button", name="next ›").click()
    expect(page.locator("#leak-evidence .pager").first).to_contain_text("Showing 11–20 of 30")
    expect(box).to_have_js_property("scrollTop", 0)
    first = box.locator(".evidence").first
    expect(first).to_be_in_viewport()
    assert " ".join(first.locator(".ev-head").inner_text().split()).startswith("B row 10 ")   # record 11 (from 0)
