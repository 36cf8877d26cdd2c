"""A curator's journeys in a real headless Chromium (one app server and one browser for the
module): leakage between two uploaded files, the placeholder pick, reviewing pairs with the
keyboard, the deduplicated download, a phone's viewport, contamination evidence, and records
whose text is markup. Figures are checked against the data files and tests/ground_truth.py."""
from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TIMEOUT, XSS, dataset_box, download, new_page, open_app, open_form, open_tab, read_jsonl,
                             share_box, status, wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


def assert_inert(pg):
    time.sleep(0.3)
    assert pg.evaluate("window.__xss_hits.slice()") == []
    assert pg.locator("img[src='x']").count() == 0


@pytest.mark.slow
def test_leakage_between_two_uploads_with_evidence_and_the_self_check(page, app_url, tmp_path):
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    hostile = {"question": XSS + train[0]["question"], "answer": "<b>42</b>"}
    a_rows = [hostile] + train[1:200]
    b_rows = test[:50] + train[1:11] + [hostile]
    a = write_jsonl(tmp_path / "train_part.jsonl", a_rows)
    b = write_jsonl(tmp_path / "eval_part.jsonl", b_rows)
    copied = sum(1 for r in b_rows if r in a_rows)
    assert copied == 11

    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(a))
    expect(dataset_box(page)).to_have_value("upload:train_part.jsonl")
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#run").click()
    wait_audited(page, "200", "train_part.jsonl")
    open_tab(page, "Leakage")
    page.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(b))
    expect(page.locator("#leak-upload")).to_contain_text(b.stem)     # kept: a click before runs without it
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked leakage", timeout=TIMEOUT)
    summary = page.locator("#leak-summary")
    expect(summary).to_contain_text("A = train_part.jsonl")
    expect(summary).to_contain_text("B = eval_part.jsonl")
    expect(summary).to_contain_text(f"repeat an A text exactly {copied} (")
    expect(summary).to_contain_text(f"repeat text AND answer of one A record (answerable from memory) {copied} (")
    evidence = page.locator("#leak-evidence")
    expect(evidence).to_contain_text(f"Showing 1–10 of {copied} leaking B records")   # paged, with its total
    evidence.get_by_role("button", name="next ›").first.click()        # the hostile record is the 11th
    expect(evidence).to_contain_text(f"Showing 11–11 of {copied}")
    expect(evidence).to_contain_text(XSS.strip())                     # the record's markup, as text
    expect(evidence).to_contain_text("<b>42</b>")
    assert page.locator("#leak-evidence img, #leak-evidence b:text('42')").count() == 0
    rows = list(csv.DictReader(open(download(page, "dl-evidence"), encoding="utf-8", newline="")))
    assert len(rows) == copied
    assert all(r["b_text"] == b_rows[int(r["b_row"])]["question"] for r in rows)
    assert_inert(page)

    # The same file as B is refused (no 100% figure on screen), unless the box is ticked.
    page.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(a))     # replaces B's file
    expect(page.locator("#leak-upload")).to_contain_text("train_part.jsonl")
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("same", timeout=TIMEOUT)
    expect(page.locator("#leak-status")).to_have_class(re.compile(r"\berror\b"))
    expect(summary).not_to_contain_text("leak in any of these ways")
    page.locator("#leak-self input[type=checkbox]").check()
    page.locator("#leak-run").click()
    expect(summary).to_contain_text(f"leak in any of these ways {len(a_rows)} (100.00%)", timeout=TIMEOUT)


@pytest.mark.slow
def test_the_placeholder_pick_leaves_the_form_as_it_was(page, app_url):
    open_app(page, app_url)
    open_form(page)
    page.locator("#example input").click()
    page.get_by_role("option", name="mbpp", exact=True).click()
    expect(dataset_box(page)).to_have_value("example:mbpp")
    expect(status(page)).to_contain_text("Fields of example:mbpp")
    page.locator("#example input").click()
    page.get_by_role("option", name="— pick a bundled benchmark —").click()
    time.sleep(1.5)
    expect(dataset_box(page)).to_have_value("example:mbpp")
    expect(status(page)).to_contain_text("Fields of example:mbpp")
    assert page.locator("#form").get_by_text("Error", exact=True).count() == 0
    assert page.locator("#form .error, #status.error").count() == 0


@pytest.mark.slow
def test_pairs_review_with_the_keyboard_marks_and_one_threshold(page, app_url):
    rows = real_data.rows("gsm8k/train.jsonl")
    ref = ground_truth.reference([r["question"] for r in rows])
    pairs = sorted(ref.record_pairs(0.5).items(), key=lambda p: (-p[1], p[0]))
    page.goto(f"{app_url}/?" + urlencode({"dataset": "example:gsm8k", "config": "main", "split": "train",
                                          "threshold": "0.5"}))
    wait_audited(page, "7,473")
    # The form folded away (results start above the fold) and the address bar holds the audit.
    expect(page.locator("#config input")).to_be_hidden()
    assert "threshold=0.5" in page.url and "dataset=example%3Agsm8k" in page.url

    open_tab(page, "Near-duplicate pairs")
    expect(page.locator("#pairs-info")).to_contain_text(f"{len(pairs)} pairs at Jaccard ≥ 0.5")
    page.locator("#pairs-info").click()                 # the focus on the tab, not in a text box
    view = page.locator("#pair-view")
    (a0, b0), _ = pairs[0]
    (a1, b1), _ = pairs[1]
    page.keyboard.press("j")
    expect(view).to_contain_text(f"pair 1 of {len(pairs)}")
    expect(view).to_contain_text(f"record {a0}")
    expect(view).to_contain_text(f"record {b0}")
    expect(view).to_contain_text(rows[a0]["question"][:40])
    page.keyboard.press("j")
    expect(view).to_contain_text(f"pair 2 of {len(pairs)}")
    expect(view).to_contain_text(f"record {a1}")
    page.keyboard.press("ArrowLeft")
    expect(view).to_contain_text(f"pair 1 of {len(pairs)}")
    page.keyboard.press("n")
    expect(view).to_contain_text("marked: not a duplicate")
    expect(share_box(page)).to_have_value(re.compile(rf"nd={a0}-{b0}"))
    page.wait_for_function(f"location.search.includes('nd={a0}-{b0}')")
    # Typing in the search box is text, not navigation.
    page.locator("#pairs-search input, #pairs-search textarea").first.fill("jjj")
    expect(view).to_contain_text(f"pair 1 of {len(pairs)}")

    # One threshold: the curve slider moves the top slider, the link and the address bar.
    open_tab(page, "Threshold curve")
    box = page.locator("#curve-threshold input[type=number]")
    counts = page.locator("#counts")
    box.fill("0.6")
    box.press("Enter")
    expect(counts).to_contain_text(f"At Jaccard ≥ 0.6: {ref.pair_count(0.6)} near-duplicate")
    open_form(page)
    expect(page.locator("#threshold input[type=number]")).to_have_value("0.6")
    page.wait_for_function("location.search.includes('threshold=0.6')")
    open_tab(page, "Overview")
    expect(page.locator("#overview")).to_contain_text("Near-duplicate pairs at Jaccard ≥ 0.6")


@pytest.mark.slow
def test_deduplicated_download_keeps_one_unchanged_record_per_cluster(page, app_url):
    rows = real_data.rows("gsm8k/train.jsonl")
    clusters = ground_truth.reference([r["question"] for r in rows]).clusters(0.4)
    page.goto(f"{app_url}/?" + urlencode({"dataset": "example:gsm8k", "config": "main", "split": "train",
                                          "threshold": "0.4"}))
    wait_audited(page, "7,473")
    open_tab(page, "Clusters")
    expect(page.locator("#clusters-info")).to_contain_text(f"{len(clusters)} clusters at Jaccard ≥ 0.4")
    page.locator("#keep-rule").get_by_text("first", exact=True).click()
    open_tab(page, "Downloads")
    page.locator("#dedup-run").click()
    expect(page.locator("#dedup-info")).to_contain_text("Deduplicated file", timeout=TIMEOUT)
    kept = read_jsonl(download(page, "dl-dedup"))
    redundant = sum(len(c) - 1 for c in clusters)
    assert len(kept) == len(rows) - redundant
    dropped = {m for c in clusters for m in c if m != min(c)}
    assert kept == [r for i, r in enumerate(rows) if i not in dropped]
    manifest = json.loads(Path(download(page, "dl-manifest")).read_text(encoding="utf-8"))
    assert {d["row"] for d in manifest["dropped_rows"]} == dropped


@pytest.mark.slow
def test_every_tab_is_reachable_on_a_phone(browser, app_url):
    context, pg = new_page(browser, app_url, viewport={"width": 390, "height": 844}, is_mobile=True,
                           has_touch=True)
    try:
        open_app(pg, app_url)
        for name, part in (("Threshold curve", "#curve-threshold"), ("Near-duplicate pairs", "#pairs-panel"),
                           ("Clusters", "#keep-rule"), ("Concentration", "#conc-text"), ("Leakage", "#leak-run"),
                           ("Downloads", "#dl-summary"), ("Overview", "#cards")):
            pg.evaluate("window.scrollTo(0, 0)")
            open_tab(pg, name)                     # in the strip, or in its "More tabs" menu
            expect(pg.locator(part)).to_be_visible()
            pg.locator(part).scroll_into_view_if_needed()
            box = pg.locator(part).bounding_box()
            assert box and box["x"] >= 0 and box["x"] + box["width"] <= 390, (name, box)   # within the screen
        # A wide table or chart scrolls inside its tab: the page itself never gets wider than the phone.
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390
        expect(pg.locator("#run")).to_be_visible()
    finally:
        context.close()


@pytest.mark.slow
def test_contamination_evidence_highlights_the_shared_span_as_text(page, app_url, tmp_path):
    test = real_data.rows("gsm8k/test.jsonl")
    item = test[11]["question"]
    rows = [{"question": "Unrelated filler number %d about pebbles and rivers in spring." % i, "answer": str(i)}
            for i in range(6)]
    rows.insert(3, {"question": XSS + "Intro words. " + item + " Trailing words.", "answer": "x"})
    rows[5]["answer"] = "Worked from: " + test[12]["question"]     # found once the answer field is searched too
    path = write_jsonl(tmp_path / "corpus.jsonl", rows)
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#run").click()
    wait_audited(page, "7", "corpus.jsonl")
    open_tab(page, "Leakage")
    page.locator("#benchmark input").click()
    page.get_by_role("option", name="gsm8k", exact=True).click()
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked contamination", timeout=TIMEOUT)
    evidence = page.locator("#contam-evidence")
    expect(evidence).to_contain_text("benchmark row 11")
    expect(evidence).to_contain_text("A row 3")
    expect(evidence).to_contain_text(XSS.strip())
    marks = evidence.locator("mark.span")
    expect(marks.first).to_be_visible()
    # The whole item (up to its final punctuation, which is not a token) is the shared span, marked
    # in the benchmark text and in the corpus record.
    whole = " ".join(item.split()).rstrip("?.!")
    for side in range(2):
        shown = [" ".join(t.split()) for t in evidence.locator(".rec").nth(side).locator("mark.span").all_inner_texts()]
        assert whole in shown, (side, shown)
    assert page.locator("#contam-evidence img, #contam-evidence mark *").count() == 0
    rows_csv = list(csv.DictReader(open(download(page, "dl-contam"), encoding="utf-8", newline="")))
    assert [(r["benchmark_row"], r["corpus_row"]) for r in rows_csv] == [("11", "3")]
    # Both fields searched: the item planted in row 5's answer is found too, and the summary says how.
    page.locator("#contam-fields input").click()
    page.get_by_role("option", name="question", exact=True).click()
    page.get_by_role("option", name="answer", exact=True).click()
    page.locator("#leak-run").click()
    expect(page.locator("#contam-summary")).to_contain_text(
        "A's fields searched: question, answer (each record's joined as one text)", timeout=TIMEOUT)
    rows_csv = list(csv.DictReader(open(download(page, "dl-contam"), encoding="utf-8", newline="")))
    assert [(r["benchmark_row"], r["corpus_row"]) for r in rows_csv] == [("11", "3"), ("12", "5")]
    # And A without those two records, to train on.
    assert read_jsonl(download(page, "dl-decontam")) == [r for i, r in enumerate(rows) if i not in (3, 5)]
    assert_inert(page)
