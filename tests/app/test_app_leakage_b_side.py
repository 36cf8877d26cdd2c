"""The leakage tab's B, in a real headless Chromium: typed or pasted after an uploaded or a
bundled A, read at its own config, split and text field (the evaluation split offered by default)."""
from __future__ import annotations

import csv
import gzip
import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TIMEOUT, TRAP, download, new_page, open_app, open_tab, upload_and_run,
                             wait_audited)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


def norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def leak_box(pg):
    return pg.locator("#leak-dataset input, #leak-dataset textarea").first


def check_leakage(pg):
    pg.locator("#leak-run").click()
    expect(pg.locator("#leak-status")).to_contain_text(re.compile(r"Checked|Could not"), timeout=TIMEOUT)


@pytest.mark.slow
def test_a_bundled_b_typed_after_an_uploaded_a_is_read_at_its_own_test_split(page, app_url, tmp_path):
    """From the fourth curator's review of the Space: An uploaded A filled B's split with the file's name
    ("train_a"): B typed next was read at it
    ("example:gsm8k has no split 'train_a'")."""
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    changed = []
    for r in test[15:20]:      # one word changed: near duplicates, not copies
        words = r["question"].split()
        words[len(words) // 2] = "banana"
        changed.append({"question": " ".join(words), "answer": r["answer"]})
    a_rows = [{"question": r["question"], "answer": r["answer"]} for r in train[:400] + test[:15]] + changed
    path = tmp_path / "train_a.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["question", "answer"])
        writer.writeheader()
        writer.writerows(a_rows)
    a_texts, b_texts = [r["question"] for r in a_rows], [r["question"] for r in test]
    keys = {norm(t) for t in a_texts}
    identical = sum(norm(t) in keys for t in b_texts)
    near = ground_truth.near_leak_count(a_texts, b_texts, 0.7)
    assert (identical, near) == (15, 20)

    open_app(page, app_url)
    upload_and_run(page, path, len(a_rows))
    open_tab(page, "Leakage")
    assert leak_box(page).input_value() == ""
    assert page.locator("#leak-split input").input_value() == ""         # it was "train_a"
    leak_box(page).click()
    page.keyboard.type("example:gsm8k")
    check_leakage(page)
    expect(page.locator("#leak-status")).to_contain_text("Checked leakage")
    summary = page.locator("#leak-summary")
    expect(summary).to_contain_text(f"B = example:gsm8k (main / test, {len(test):,} records)")
    expect(summary).to_contain_text(f"repeat an A text exactly {identical} (")
    expect(summary).to_contain_text(f"are near duplicates of an A text (Jaccard ≥ 0.7) {near} (")
    rows = list(csv.DictReader(open(download(page, "dl-evidence"), encoding="utf-8", newline="")))
    assert len(rows) == near
    assert all(r["b_text"] == test[int(r["b_row"])]["question"] and r["a_text"] == a_texts[int(r["a_row"])]
               for r in rows)


@pytest.mark.slow
def test_a_pasted_b_of_another_layout_is_read_with_its_own_config_and_fields(browser, app_url):
    """From the fourth curator's review of the Space: GSM8K train audited: B's boxes hold its config 'main'
    and split 'test'. HumanEval pasted as B
    (a paste fires no input event) was read at config 'main' ("has no config 'main'"), then with
    A's text field ("The text field 'question' is in no record")."""
    humaneval = real_data.rows("humaneval/HumanEval.jsonl")
    gsm8k = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    prompts = [r["prompt"] for r in humaneval]
    keys = {norm(t) for t in gsm8k}
    identical, near = sum(norm(t) in keys for t in prompts), ground_truth.near_leak_count(gsm8k, prompts, 0.7)

    context, pg = new_page(browser, app_url, init_script=TRAP, permissions=["clipboard-read", "clipboard-write"])
    try:
        open_app(pg, app_url)
        open_tab(pg, "Leakage")
        expect(pg.locator("#leak-config input")).to_have_value("main")
        expect(pg.locator("#leak-split input")).to_have_value("test")
        pg.evaluate("navigator.clipboard.writeText('example:humaneval')")
        leak_box(pg).click()
        leak_box(pg).press("Control+a")
        pg.keyboard.press("Control+v")
        expect(leak_box(pg)).to_have_value("example:humaneval")
        check_leakage(pg)
        assert "Could not" not in pg.locator("#leak-status").inner_text()
        # ... and the page says B was read at its own config, not the one its box held
        expect(pg.locator("#leak-status")).to_contain_text("B has no config 'main': read at its own config 'default'")
        summary = pg.locator("#leak-summary")
        expect(summary).to_contain_text(f"B = example:humaneval (default / test, {len(humaneval)} records)")
        expect(summary).to_contain_text("B's fields differ from A's: text prompt")
        expect(summary).to_contain_text(f"repeat an A text exactly {identical} (")
        expect(summary).to_contain_text(f"are near duplicates of an A text (Jaccard ≥ 0.7) {near} (")

        # Typed (not pasted): the boxes empty at once, and a config chosen after it is kept.
        leak_box(pg).click()
        leak_box(pg).press("Control+a")
        pg.keyboard.type("example:mbpp")
        expect(pg.locator("#leak-config input")).to_have_value("")
        expect(pg.locator("#leak-split input")).to_have_value("")
        pg.locator("#leak-config input").fill("sanitized")
        pg.locator("#leak-config input").press("Enter")
        check_leakage(pg)
        with gzip.open(real_data.EXAMPLES / "mbpp/sanitized/test.jsonl.gz", "rt", encoding="utf-8") as fh:
            sanitized_test = sum(1 for line in fh if line.strip())
        expect(summary).to_contain_text(f"B = example:mbpp (sanitized / test, {sanitized_test} records)")
        # A config B has not got, typed on purpose, is an error naming it (never silently replaced).
        pg.locator("#leak-config input").fill("nosuch")
        pg.locator("#leak-config input").press("Enter")
        check_leakage(pg)
        expect(pg.locator("#leak-status")).to_contain_text("example:mbpp has no config 'nosuch'")
        assert pg.evaluate("window.__xss_hits.slice()") == []
    finally:
        context.close()


def test_b_is_offered_at_the_evaluation_split_not_the_first_other_one(page, app_url):
    """From the fourth curator's review of the Space: MBPP full / train: B was offered the split 'prompt'
    (the first other one), not 'test'."""
    page.goto(app_url + "/?" + urlencode({"dataset": "example:mbpp", "config": "full", "split": "train"}))
    train = [r for r in real_data.rows("mbpp/mbpp.jsonl") if 601 <= r["task_id"] <= 974]
    wait_audited(page, f"{len(train):,}", "example:mbpp")
    open_tab(page, "Leakage")
    expect(page.locator("#leak-split input")).to_have_value("test")
    expect(page.locator("#leak-config input")).to_have_value("full")
