"""The Space's form tells what it needs, in a real headless Chromium: a refused threshold, the keep
rule, a missing text field, long and right-to-left field names, and the keyboard alone."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (dataset_box, download, open_app, open_tab, read_jsonl, status, upload_and_run,
                             wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


@pytest.mark.slow
def test_a_refused_threshold_leaves_the_counts_readable(page, app_url, tmp_path):
    """From the fourth curator's review of the Space: A value out of range in the curve's box is put back and
    explained in a toast; Gradio's red
    "Error" badge stayed over the (valid) counts, hiding part of them."""
    spider = real_data.rows("spider/dev.jsonl")[:200]
    rows = [{"question": r["question"], "query": r["query"]} for r in spider]
    texts = [r["question"] for r in rows]
    ref = ground_truth.reference(texts)
    path = write_jsonl(tmp_path / "spider_dev.jsonl", rows)
    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Threshold curve")
    counts = page.locator("#counts")
    expect(counts).to_contain_text(f"At Jaccard ≥ 0.7: {ref.pair_count(0.7)} near-duplicate pair")
    before = counts.inner_text()
    box = page.locator("#curve-threshold input[type=number]")
    box.fill("2")
    box.press("Enter")
    expect(page.locator(".toast-body", has_text="greater than maximum value")).to_be_visible()
    expect(box).to_have_value("0.7")
    expect(counts.locator(".error")).to_be_hidden()
    assert counts.inner_text() == before
    box.fill("0.5")
    box.press("Enter")
    expect(counts).to_contain_text(f"At Jaccard ≥ 0.5: {ref.pair_count(0.5)} near-duplicate pair")
    expect(counts).to_contain_text(f"{ref.cluster_count(0.5)} cluster")


def test_the_form_can_be_used_from_the_keyboard_alone(page, app_url):
    """From the fourth curator's review of the Space: Tab reaches the dataset box, Run audit and the result
    tabs; Enter runs and opens them."""
    humaneval = len(real_data.rows("humaneval/HumanEval.jsonl"))
    open_app(page, app_url)
    dataset_box(page).focus()
    page.keyboard.press("Control+a")
    page.keyboard.type("example:humaneval")
    for _ in range(12):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.id") == "run":
            break
    page.keyboard.press("Enter")
    wait_audited(page, f"{humaneval:,}", "example:humaneval")
    tab = page.get_by_role("tab", name="Clusters", exact=True)
    for _ in range(40):
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.textContent.trim()") == "Clusters":
            break
    page.keyboard.press("Enter")
    expect(tab).to_have_attribute("aria-selected", "true")
    expect(status(page)).to_have_class(re.compile(r"\bok\b"))


@pytest.mark.slow
def test_the_keep_rule_says_what_it_needs_and_follows_a_new_audit(page, app_url, tmp_path):
    """From the fourth curator's review of the Space: 'most common answer' on data without answers raised in
    the handler: a bare "Error" badge on
    the clusters caption, the radio left on it. After a new audit the radio still showed the old
    rule while the page (caption, file) kept 'first'."""
    spider = real_data.rows("spider/dev.jsonl")[:120]
    rows = [{"question": r["question"]} for r in spider] + [{"question": spider[i]["question"] + " Thanks!"}
                                                              for i in (4, 9)]
    texts = [r["question"] for r in rows]
    clusters = ground_truth.reference(texts).clusters(0.7)
    # the longest text of each cluster (ties: the lowest row) is kept, every other member dropped
    longest_kept = [r for i, r in enumerate(rows)
                    if not any(i in c and i != min(c, key=lambda k: (-len(texts[k]), k)) for c in clusters)]
    assert len(longest_kept) < len(rows)
    path = write_jsonl(tmp_path / "noanswers.jsonl", rows)
    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Clusters")
    # click, not check(): the page puts the radio back (the point of the test), which check() may
    # see before it has looked at the state it set
    page.get_by_label("most common answer").click()
    expect(status(page)).to_contain_text("Could not keep the most common answer: this audit has no answer field")
    expect(status(page)).to_contain_text("Pick one under Fields and options (Answer field)")
    expect(page.get_by_label("first", exact=True)).to_be_checked()
    expect(page.locator("#clusters-info .error")).to_have_count(0)

    page.get_by_label("longest").check()
    expect(page.locator("#clusters-info")).to_contain_text("Kept per cluster: longest")
    open_tab(page, "Downloads")
    page.locator("#dedup-run").click()
    expect(page.locator("#dedup-info")).to_contain_text(f"kept {len(longest_kept):,} of {len(rows):,} records")
    assert [r["question"] for r in read_jsonl(download(page, "dl-dedup"))] == [r["question"] for r in longest_kept]

    page.locator("#run").click()           # the same file again: a new audit keeps 'first', and says so
    wait_audited(page, f"{len(rows):,}", "noanswers.jsonl")
    open_tab(page, "Clusters")
    expect(page.get_by_label("first", exact=True)).to_be_checked()
    expect(page.locator("#clusters-info")).to_contain_text("Kept per cluster: first")


def test_no_text_field_says_where_to_pick_one_on_the_page(page, app_url, tmp_path):
    """From the fourth curator's review of the Space: The library's hint named the CLI's flag ("Name one with
    --text.") on the page."""
    path = write_jsonl(tmp_path / "numbers.jsonl", [{"a": 1}, {"a": 2}])
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of numbers.jsonl")
    page.locator("#run").click()
    expect(status(page)).to_contain_text("No text field given, and none could be guessed.")
    expect(status(page)).to_contain_text("Pick one as the Text field under Fields and options. Available fields: a.")
    assert "--text" not in status(page).inner_text()


@pytest.mark.slow
def test_long_and_right_to_left_field_names_are_listed_short_and_visible(page, app_url, tmp_path):
    """From the fourth curator's review of the Space: A 3,000-character field name filled the open field
    list; a right-to-left override in a name
    reversed the names after it. Listed cut and with the control visible, they are still the field
    the audit reads (the concentration of the group chosen is counted here from the rows)."""
    long_name, rtl_name = "L" * 3000, "\u202eevil_field"
    gsm = real_data.rows("gsm8k/test.jsonl")[:30]
    rows = [{long_name: r["question"], rtl_name: f"grp{i % 4 if i < 20 else 0}"} for i, r in enumerate(gsm)]
    largest = max({r[rtl_name] for r in rows}, key=lambda g: (sum(r[rtl_name] == g for r in rows), g))
    share = sum(r[rtl_name] == largest for r in rows) / len(rows)
    path = write_jsonl(tmp_path / "names.jsonl", rows)
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of names.jsonl")
    page.locator("#group input").click()
    options = [o.inner_text() for o in page.locator("#group").get_by_role("option").all()]
    assert "L" * 80 + "…" in options and "⟨U+202E⟩evil_field" in options
    assert max(map(len, options)) < 100
    page.locator("#group").get_by_role("option", name="⟨U+202E⟩evil_field", exact=True).click()
    page.locator("#run").click()
    wait_audited(page, f"{len(rows)}", "names.jsonl")
    open_tab(page, "Concentration")
    expect(page.locator("#conc-text")).to_contain_text(
        f"4 groups in ⟨U+202E⟩evil_field, {len(rows) / 4:.1f} records per group on average. The largest, "
        f"{largest}, holds {100 * share:.1f}% of the records.")
