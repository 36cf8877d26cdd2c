"""Two visitors at once, and a share link reopened in a fresh browser, in a real headless Chromium."""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TRAP, XSS, download, new_page, open_app, open_form, open_tab, read_jsonl,
                             share_box, status, wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


def set_threshold(pg, value: str):
    open_form(pg)                 # (the threshold sits with the fields, folded after a run)
    box = pg.locator("#threshold input[type=number]")
    box.fill(value)
    box.press("Enter")


def card(pg, label: str) -> str:
    """The value of the overview's stat card whose label starts with ``label``."""
    return pg.locator("#cards .stat", has=pg.locator(".l", has_text=label)).first.locator(".v").inner_text()


@pytest.mark.slow
def test_a_share_link_reopens_the_same_audit_on_the_same_tab_in_a_fresh_browser(browser, page, app_url):
    """From the third curator's review of the Space."""
    open_app(page, app_url)
    set_threshold(page, "0.5")
    expect(page.locator("#cards")).to_contain_text("≥ 0.5")
    open_tab(page, "Clusters")
    expect(share_box(page)).to_have_value(re.compile(r"threshold=0\.5.*&tab=clusters$"))
    page.wait_for_function("location.search.endsWith('tab=clusters')")
    link, caption = share_box(page).input_value(), page.locator("#clusters-info").inner_text()
    cards = page.locator("#cards").inner_text()

    gsm8k = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    context, fresh = new_page(browser, app_url, init_script=TRAP)
    try:
        fresh.goto(link)
        wait_audited(fresh, "7,473", "example:gsm8k")
        expect(fresh.get_by_role("tab", name="Clusters", exact=True)).to_have_attribute("aria-selected", "true")
        expect(fresh.locator("#clusters-info")).to_have_text(caption)
        assert fresh.locator("#cards").inner_text() == cards
        expect(share_box(fresh)).to_have_value(link)      # (the page's last event may still be landing)
        open_form(fresh)
        for key, value in (("text", "question"), ("answer", "answer")):
            assert f"&{key}={value}&" in link
            assert fresh.locator(f"#{key} input").first.input_value() == value

        # A mark on two unrelated records (1-2) is no reviewed pair: only the real one (2483-6691) stays.
        fresh.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "nd": "1-2,2483-6691,99999999-3"}))
        wait_audited(fresh, "7,473", "example:gsm8k")
        assert list(ground_truth.reference([gsm8k[1], gsm8k[2]]).record_pairs(0.3)) == []
        assert ground_truth.jaccard(*ground_truth.shingle_sets([gsm8k[2483], gsm8k[6691]])) >= 0.7
        expect(share_box(fresh)).to_have_value(re.compile(r"&nd=2483-6691$"))
        open_tab(fresh, "Near-duplicate pairs")
        expect(fresh.locator("#pairs-info")).to_contain_text("1 pair marked not a duplicate")   # (it said 2)

        # Hostile or invalid values: a specific message (or the value ignored), never markup.
        base = {"dataset": "example:gsm8k", "config": "main", "split": "train"}
        # (a threshold the slider cannot show is left out, said, and the audit runs at the default)
        for extra, message in (({"threshold": "7"}, "threshold=7 (not a threshold the slider shows"),
                               ({"text": "no_such_field"}, "The text field 'no_such_field' is in no record"),
                               ({"group": XSS}, "is in no record"),
                               ({"tab": XSS, "threshold": "0.6"}, "Audited example:gsm8k")):
            fresh.goto(app_url + "/?" + urlencode({**base, **extra}))
            expect(status(fresh)).to_contain_text(message, timeout=30_000)
            if "tab" in extra:       # an unknown tab: the overview, and the link names none
                expect(fresh.get_by_role("tab", name="Overview", exact=True)).to_have_attribute("aria-selected",
                                                                                                  "true")
                expect(share_box(fresh)).to_have_value(re.compile(r"threshold=0\.6$"))
        assert fresh.evaluate("window.__xss_hits.slice()") == []
        assert fresh.locator("img[src='x']").count() == 0
    finally:
        context.close()


@pytest.mark.slow
def test_two_visitors_at_once_see_only_their_own_data_and_downloads(browser, app_url, tmp_path):
    """From the third curator's review of the Space."""
    rnd = random.Random(7)
    mbpp = [r["text"] for r in real_data.rows("mbpp/mbpp.jsonl")]
    gsm = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    sides = {}
    for name, texts in (("one", mbpp[:60] + mbpp[:5]), ("two", rnd.sample(gsm, 45) + gsm[:2] * 2)):
        folder = tmp_path / name
        folder.mkdir()
        rows = [{"question": t, "answer": f"{name}-{i}"} for i, t in enumerate(texts)]
        dropped = {r for c in ground_truth.reference(texts).clusters(0.7) for r in c[1:]}
        kept = [rows[i]["answer"] for i in range(len(rows)) if i not in dropped]
        sides[name] = (write_jsonl(folder / "data.jsonl", rows), rows, kept)   # the same file name, other data
    pages = {}
    try:
        for name in sides:
            pages[name] = new_page(browser, app_url)
            open_app(pages[name][1], app_url)
        for name, (path, _, _) in sides.items():
            pg = pages[name][1]
            pg.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
            expect(status(pg)).to_contain_text("Fields of data.jsonl")
        for name in sides:                         # both audits in flight together
            pages[name][1].locator("#run").click()
        for name, (path, rows, kept) in sides.items():
            pg = pages[name][1]
            wait_audited(pg, f"{len(rows):,}", "data.jsonl")
            frame = pd.DataFrame(rows)
            assert card(pg, "exact-duplicate texts") == f"{int(frame['question'].duplicated().sum()):,}"
            open_tab(pg, "Downloads")
            summary = json.loads(Path(download(pg, "dl-summary")).read_text(encoding="utf-8"))
            assert summary["input"]["records"] == len(rows)
            open_tab(pg, "Clusters")
            open_tab(pg, "Downloads")
            pg.locator("#dedup-run").click()
            expect(pg.locator("#dedup-info")).to_contain_text("Deduplicated file")
            # this visitor's rows only, the first of each cluster (ground truth at 0.7)
            assert [r["answer"] for r in read_jsonl(download(pg, "dl-dedup"))] == kept
    finally:
        for context, _ in pages.values():
            context.close()
