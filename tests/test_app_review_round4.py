"""A fourth curator's review of the Space in a real headless Chromium: B typed or pasted in the
leakage tab after an uploaded or a bundled A (read at its own config, split and text field, not
A's), the B split offered by default (the evaluation split), a threshold refused in the box (no
"Error" badge left over the counts), contamination searched in two fields with the decontaminated
file read back line for line, the deduplicated CSV (leading zeros, quoted newlines) read back, the
keep rule (a clear message, the radio in step with the page), a hint naming the page's field
rather than a CLI flag, long and right-to-left field names, and the keyboard alone. Every expected
figure comes from the files here (plain Python, tests/ground_truth.py), never from the app."""
from __future__ import annotations

import csv
import gzip
import io
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TIMEOUT, TRAP, dataset_box, download, new_page, open_app, open_form, open_tab,
                             read_jsonl, status, upload_and_run, wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


def norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def leak_box(pg):
    return pg.locator("#leak-dataset input, #leak-dataset textarea").first


def download_named(pg, elem_id: str) -> tuple[Path, str]:
    """(the file a download button gives, the name the browser is told to save it as); the
    Downloads tab is opened for it, and the tab that was open again after."""
    back = None
    if not pg.locator(f"#{elem_id}").is_visible():
        back = pg.locator("#tabs [role='tab'][aria-selected='true']").first.inner_text().strip()
        open_tab(pg, "Downloads")
    with pg.expect_download() as info:
        pg.locator(f"#{elem_id}").click()
    if back:
        open_tab(pg, back)
    return Path(info.value.path()), info.value.suggested_filename


def check_leakage(pg):
    pg.locator("#leak-run").click()
    expect(pg.locator("#leak-status")).to_contain_text(re.compile(r"Checked|Could not"), timeout=TIMEOUT)


# --------------------------------------------------------------------------- B after an uploaded A

def test_a_bundled_b_typed_after_an_uploaded_a_is_read_at_its_own_test_split(page, app_url, tmp_path):
    """An uploaded A filled B's split with the file's name ("train_a"): B typed next was read at it
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


# --------------------------------------------------------------------------- B pasted over A's defaults

def test_a_pasted_b_of_another_layout_is_read_with_its_own_config_and_fields(browser, app_url):
    """GSM8K train audited: B's boxes hold its config 'main' and split 'test'. HumanEval pasted as B
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
    """MBPP full / train: B was offered the split 'prompt' (the first other one), not 'test'."""
    page.goto(app_url + "/?" + urlencode({"dataset": "example:mbpp", "config": "full", "split": "train"}))
    train = [r for r in real_data.rows("mbpp/mbpp.jsonl") if 601 <= r["task_id"] <= 974]
    wait_audited(page, f"{len(train):,}", "example:mbpp")
    open_tab(page, "Leakage")
    expect(page.locator("#leak-split input")).to_have_value("test")
    expect(page.locator("#leak-config input")).to_have_value("full")


# --------------------------------------------------------------------------- a refused threshold

def test_a_refused_threshold_leaves_the_counts_readable(page, app_url, tmp_path):
    """A value out of range in the curve's box is put back and explained in a toast; Gradio's red
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


# --------------------------------------------------------------------------- contamination, two fields

def test_contamination_in_two_fields_and_the_decontaminated_file(page, app_url, tmp_path):
    """An instruction corpus with GSM8K test questions planted in 'instruction' and HumanEval prompts
    in 'input': each benchmark is found where it is, and the download is the corpus less exactly
    the records holding a 13-gram of it, every other line as written."""
    spider = real_data.rows("spider/train_spider.jsonl")[:300]
    gsm_test = real_data.rows("gsm8k/test.jsonl")
    humaneval = real_data.rows("humaneval/HumanEval.jsonl")
    rows = [{"instruction": r["question"], "input": r["db_id"], "output": r["query"], "weight": 1e5} for r in spider]
    for k, i in enumerate(range(7, 300, 60)):                       # 5 GSM8K questions
        rows[i] = {**rows[i], "instruction": "Please solve: " + gsm_test[200 + k]["question"]}
    for k, i in enumerate(range(31, 300, 100)):                     # 3 HumanEval prompts
        rows[i] = {**rows[i], "input": humaneval[20 + k]["prompt"]}
    path = tmp_path / "corpus.jsonl"       # ASCII escapes (\u2018) and a number written 1e5, as files have them
    path.write_text("".join(json.dumps(r).replace("100000.0", "1e5") + "\n" for r in rows), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert "\\u" in path.read_text(encoding="utf-8") and all('"weight": 1e5}' in line for line in lines)

    def tokens(text):   # lowercased, ASCII punctuation deleted, whitespace-split (the documented tokenizer)
        return "".join(c for c in text.lower() if not (ord(c) < 128 and not (c.isalnum() or c.isspace()))).split()

    def hits(items, texts, n=13):
        grams = {tuple(t[i:i + n]) for t in map(tokens, items) for i in range(len(t) - n + 1)}
        return [j for j, x in enumerate(texts)
                if any(tuple(tokens(x)[i:i + n]) in grams for i in range(len(tokens(x)) - n + 1))]

    gsm_rows = hits([r["question"] for r in gsm_test], [r["instruction"] for r in rows])
    he_rows = hits([r["prompt"] for r in humaneval], [r["instruction"] + "\n" + r["input"] for r in rows])
    assert (len(gsm_rows), len(he_rows)) == (5, 3)

    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Leakage")
    for bench, fields, expected in (("gsm8k", (), gsm_rows), ("humaneval", ("instruction", "input"), he_rows)):
        page.locator("#benchmark input").click()
        page.locator("#benchmark").get_by_role("option", name=bench, exact=True).click()
        for field in fields:
            page.locator("#contam-fields input").click()
            page.locator("#contam-fields").get_by_role("option", name=field, exact=True).click()
        page.keyboard.press("Escape")
        check_leakage(page)
        contam = page.locator("#contam-summary")
        expect(contam).to_contain_text(f"Contamination: is {bench} inside A?")
        expect(contam).to_contain_text(f"share an n-gram with A (contaminated) {len(expected)} (")
        expect(contam).to_contain_text(f"{len(rows) - len(expected):,} of {len(rows):,} records")
        copy, name = download_named(page, "dl-decontam")
        assert name == "corpus.decontaminated.jsonl"
        # Each kept line as written, as the CLI's --decontaminate copies it (the Space wrote the
        # records again: the file's \u2018 escapes came back as the characters, 1e5 as 100000.0).
        assert copy.read_text(encoding="utf-8") == "".join(line for i, line in enumerate(lines) if i not in expected)
    # HumanEval in the instruction alone: nothing (it sits in 'input')
    assert hits([r["prompt"] for r in humaneval], [r["instruction"] for r in rows]) == []


# --------------------------------------------------------------------------- the deduplicated CSV

def test_the_deduplicated_csv_keeps_one_record_per_cluster_as_written(page, app_url, tmp_path):
    """Ids with leading zeros, decimals written '1.50' and quoted newlines come back as written."""
    spider = real_data.rows("spider/train_spider.jsonl")[:250]
    rows = [{"id": f"{i:05d}", "question": r["question"], "query": r["query"], "db_id": r["db_id"],
             "score": "1.50" if i % 2 else "2", "note": 'a, "quoted"\nline' if i % 7 == 0 else ""}
            for i, r in enumerate(spider)]
    for src in (3, 3, 50, 100):
        rows.append({**rows[src], "id": f"copy{len(rows)}"})
    rows[-2]["question"] = rows[-2]["question"].upper()              # a copy in capitals
    path = tmp_path / "spider_a.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    clusters = ground_truth.reference([r["question"] for r in rows]).clusters(0.5)
    dropped = {r for c in clusters for r in sorted(c)[1:]}
    kept = [r for i, r in enumerate(rows) if i not in dropped]

    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_form(page)
    box = page.locator("#threshold input[type=number]")
    box.fill("0.5")
    box.press("Enter")
    expect(page.locator("#cards")).to_contain_text("≥ 0.5")
    open_tab(page, "Clusters")
    expect(page.locator("#clusters-info")).to_contain_text(f"{len(clusters)} clusters at Jaccard ≥ 0.5")
    open_tab(page, "Downloads")
    page.locator("#dedup-run").click()
    expect(page.locator("#dedup-info")).to_contain_text(
        f"kept {len(kept):,} of {len(rows):,} records (one per cluster, rule first), dropped {len(dropped)}")
    got, name = download_named(page, "dl-dedup")
    assert name == "spider_a.dedup.csv"
    assert list(csv.DictReader(io.StringIO(got.read_text(encoding="utf-8"), newline=""))) == kept
    assert got.read_text(encoding="utf-8").splitlines()[0] == "id,question,query,db_id,score,note"


def test_the_form_can_be_used_from_the_keyboard_alone(page, app_url):
    """Tab reaches the dataset box, Run audit and the result tabs; Enter runs and opens them."""
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


# --------------------------------------------------------------------------- the keep rule

def test_the_keep_rule_says_what_it_needs_and_follows_a_new_audit(page, app_url, tmp_path):
    """'most common answer' on data without answers raised in the handler: a bare "Error" badge on
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
    """The library's hint named the CLI's flag ("Name one with --text.") on the page."""
    path = write_jsonl(tmp_path / "numbers.jsonl", [{"a": 1}, {"a": 2}])
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of numbers.jsonl")
    page.locator("#run").click()
    expect(status(page)).to_contain_text("No text field given, and none could be guessed.")
    expect(status(page)).to_contain_text("Pick one as the Text field under Fields and options. Available fields: a.")
    assert "--text" not in status(page).inner_text()


def test_long_and_right_to_left_field_names_are_listed_short_and_visible(page, app_url, tmp_path):
    """A 3,000-character field name filled the open field list; a right-to-left override in a name
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
