"""A demanding curator's review, in a real headless Chromium (one app server and one browser for the
module), of the leakage tab's summary, its evidence and clean downloads, the contamination check's
field list, and conversation uploads. Every expected figure is computed here from the files
(tests/ground_truth.py for Jaccard), never read from the auditor's output."""
from __future__ import annotations

import csv
import gzip
import json
import re
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TIMEOUT, TRAP, XSS, dataset_box, download, new_page, open_app, open_tab, read_jsonl,
                             share_box, status, upload_and_run, wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parent / "data"
THRESHOLD = 0.7             # the page's default
LEAK_COLUMNS = ["b_row", "a_row", "a_rows", "kind", "b_kinds", "text_jaccard", "b_text", "a_text", "b_answer",
                "a_answer"]


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


def share(block_records: int, total: int) -> str:
    return f"{block_records:,} ({100 * block_records / total:.2f}%)"


def assert_inert(pg):
    time.sleep(0.3)
    assert pg.evaluate("window.__xss_hits.slice()") == []
    assert pg.locator("img[src='x']").count() == 0


def leak_journey(pg, app_url, folder: Path, name: str, a_rows, b_rows) -> int:
    """A and B written as NAME_train/NAME_test uploads, A audited, B checked; returns B's size."""
    a = write_jsonl(folder / f"{name}_train.jsonl", a_rows)
    b = write_jsonl(folder / f"{name}_test.jsonl", b_rows)
    open_app(pg, app_url)
    upload_and_run(pg, a, len(a_rows))
    check_b(pg, b)
    return len(b_rows)


def check_b(pg, path: Path):
    open_tab(pg, "Leakage")
    pg.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(path))
    pg.locator("#leak-run").click()
    expect(pg.locator("#leak-status")).to_contain_text("Checked leakage", timeout=TIMEOUT)


def summary_row(pg, label_start: str) -> str:
    """The count cell of the leak summary's row whose label starts with ``label_start``."""
    row = pg.locator("#leak-summary tr", has_text=label_start).first
    return row.locator("td").last.inner_text().strip()


def expected_leak(a_rows, b_rows, text="question", answer="answer"):
    """Independent figures: the B rows whose text is an A text or has Jaccard >= THRESHOLD with one
    (word 3-grams, tests/ground_truth.py), and the B rows sharing an answer (stripped) with an A row."""
    a_sets = ground_truth.shingle_sets([r[text] for r in a_rows])
    b_sets = ground_truth.shingle_sets([r[text] for r in b_rows])
    a_texts = {" ".join(r[text].split()).lower() for r in a_rows}
    text_leak = {i for i, (r, s) in enumerate(zip(b_rows, b_sets))
                 if " ".join(r[text].split()).lower() in a_texts
                 or max(ground_truth.jaccard(s, t) for t in a_sets) >= THRESHOLD}
    a_answers = {str(r[answer]).strip() for r in a_rows}
    answer_rows = {i for i, r in enumerate(b_rows) if str(r[answer]).strip() in a_answers}
    return text_leak, answer_rows


# --------------------------------------------------------------------------- 1 + 4: summary, evidence, clean B

def sociology():
    with gzip.open(DATA / "semantic" / "sociology_questions.jsonl.gz", "rt", encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    # MMLU's shape: a question, a subject and the letter of the right choice.
    return [{"question": q, "subject": "sociology", "answer": "ABCD"[(7 * i) % 4]} for i, q in enumerate(questions)]


def test_mmlu_letters_shared_answers_only_stay_in_the_clean_split(page, app_url, tmp_path):
    rows = sociology()
    a_rows, b_rows = rows[:40], rows[40:]
    text_leak, answer_rows = expected_leak(a_rows, b_rows)
    assert text_leak == set() and len(answer_rows) == len(b_rows)        # letters only: every B row, by chance
    n = leak_journey(page, app_url, tmp_path, "mmlu", a_rows, b_rows)
    expect(page.locator("#leak-summary")).to_contain_text("leak in any of these ways")
    assert summary_row(page, "leak in any of these ways") == share(len(answer_rows), n)
    assert summary_row(page, "repeat an A text, exactly or nearly") == share(0, n)
    assert summary_row(page, "repeat an A text exactly") == share(0, n)
    header, ev = read_evidence(download(page, "dl-evidence"))
    assert header == LEAK_COLUMNS
    assert sorted(int(r["b_row"]) for r in ev) == sorted(answer_rows)
    for r in ev:
        b_row, a_row = int(r["b_row"]), int(r["a_row"])
        assert r["kind"] == "identical_answer" and r["b_kinds"] == "identical_answer"
        assert (r["b_text"], r["b_answer"]) == (b_rows[b_row]["question"], b_rows[b_row]["answer"])
        assert (r["a_text"], r["a_answer"]) == (a_rows[a_row]["question"], a_rows[a_row]["answer"])
        assert r["a_answer"] == r["b_answer"]
        assert int(r["a_rows"].split()[0]) == a_row
        expected_j = ground_truth.jaccard(*ground_truth.shingle_sets([r["b_text"], r["a_text"]]))
        assert abs(float(r["text_jaccard"]) - expected_j) < 1e-3
    assert read_jsonl(download(page, "dl-clean")) == b_rows          # nothing dropped, nothing changed
    assert_inert(page)


def gsm8k_planted():
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = train[:300]
    near = [{"question": r["question"] + " Show your work.", "answer": r["answer"]} for r in train[20:23]]
    b_rows = test[:40] + train[10:15] + near + [{"question": XSS + test[41]["question"], "answer": "<b>7</b>"}]
    return a_rows, b_rows


def test_planted_copies_figures_agree_with_evidence_and_clean_split(page, app_url, tmp_path):
    a_rows, b_rows = gsm8k_planted()
    text_leak, answer_rows = expected_leak(a_rows, b_rows)
    assert set(range(40, 48)) <= text_leak                     # the 5 copies and 3 edited copies
    any_leak = text_leak | answer_rows
    n = leak_journey(page, app_url, tmp_path, "gsm", a_rows, b_rows)
    assert summary_row(page, "leak in any of these ways") == share(len(any_leak), n)
    assert summary_row(page, "repeat an A text, exactly or nearly") == share(len(text_leak), n)
    expect(page.locator("#leak-summary strong", has_text=share(len(text_leak), n))).to_be_visible()
    header, ev = read_evidence(download(page, "dl-evidence"))
    assert header == LEAK_COLUMNS
    assert sorted(int(r["b_row"]) for r in ev) == sorted(any_leak)
    for r in ev:
        b_row, a_row = int(r["b_row"]), int(r["a_row"])
        assert (r["b_text"], r["b_answer"]) == (b_rows[b_row]["question"], b_rows[b_row]["answer"])
        assert (r["a_text"], r["a_answer"]) == (a_rows[a_row]["question"], a_rows[a_row]["answer"])
        expected_j = ground_truth.jaccard(*ground_truth.shingle_sets([r["b_text"], r["a_text"]]))
        assert abs(float(r["text_jaccard"]) - expected_j) < 1e-3
        text_kind = any(k in r["kind"].split("+") for k in ("identical_text", "identical_both", "near_duplicate"))
        assert text_kind == (b_row in text_leak), r
    clean = read_jsonl(download(page, "dl-clean"))
    assert clean == [r for i, r in enumerate(b_rows) if i not in text_leak]
    assert_inert(page)


# --------------------------------------------------------------------------- 2: A's fields searched

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


def test_contamination_fields_follow_the_audited_dataset_and_a_shared_link(browser, page, app_url):
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


def test_a_numeric_or_object_field_searched_is_a_clear_message(page, app_url, tmp_path):
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


# --------------------------------------------------------------------------- 3: conversation uploads

def conversations(shape: str) -> tuple[list, int]:
    """GSM8K question/answer pairs as conversations of ``shape``; rows 1 and 2 repeat row 0 with its last
    words added (a near-duplicate cluster), and row 5 too with markup before it."""
    train = real_data.rows("gsm8k/train.jsonl")[:20]
    qa = [(r["question"], r["answer"]) for r in train]
    qa[1] = (qa[0][0] + " Please.", qa[0][1])
    qa[2] = (qa[0][0] + " Thanks.", qa[0][1])
    qa[5] = (XSS + qa[0][0], qa[0][1])          # in the cluster too
    out = []
    for q, a in qa:
        if shape == "openai":
            out.append({"id": f"conv-{len(out)}", "messages": [{"role": "system", "content": "You are helpful."},
                                                               {"role": "user", "content": q},
                                                               {"role": "assistant", "content": a}]})
        elif shape == "sharegpt":
            out.append({"id": f"conv-{len(out)}", "conversations": [{"from": "human", "value": q},
                                                                    {"from": "gpt", "value": a}]})
        else:
            out.append({"id": f"conv-{len(out)}", "messages": [
                {"role": "user", "content": [{"type": "text", "text": q}]},
                {"role": "assistant", "content": [{"type": "text", "text": a}]}]})
    return out, len(out)


@pytest.mark.parametrize("shape, role", [("openai", "messages.content"), ("sharegpt", "conversations.value"),
                                         ("parts", "messages.content.text")])
def test_conversation_upload_is_read_as_its_turns_and_shown_as_text(page, app_url, tmp_path, shape, role):
    rows, n = conversations(shape)
    path = write_jsonl(tmp_path / f"chat_{shape}.jsonl", rows)
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of")
    expect(page.locator("#text input")).to_have_value(role)
    page.locator("#run").click()
    wait_audited(page, f"{n}", path.name)
    question = real_data.rows("gsm8k/train.jsonl")[0]["question"]
    open_tab(page, "Near-duplicate pairs")
    expect(page.locator("#pairs-table")).to_contain_text(question[:30])
    page.locator("#pair-next").click()
    view = page.locator("#pair-view")
    expect(view).to_contain_text(question[:60])
    for raw in ("'role'", '"role"', "'from'", "'type'", "[{"):
        expect(view).not_to_contain_text(raw)
    open_tab(page, "Clusters")
    clusters = page.locator("#clusters-table")
    expect(clusters).to_contain_text(question[:30])
    expect(clusters).not_to_contain_text("[{")
    # The turn with markup: in the pair table as text, never an element.
    open_tab(page, "Near-duplicate pairs")
    assert_inert(page)


def test_a_system_prompt_shared_by_every_conversation_does_not_make_them_duplicates(page, app_url, tmp_path):
    """OpenAI-format data repeats one system prompt in every record: read as part of each record's
    text, it alone makes unrelated tasks near duplicates (MBPP's 200 first tasks, one cluster)."""
    tasks = real_data.rows("mbpp/mbpp.jsonl")[:200]
    system = ("You are a careful Python programming assistant. Answer with a single self-contained function, "
              "follow the naming in the task exactly, do not print anything, do not read input, and keep the "
              "code short, readable and correct. Explain nothing unless asked.")
    rows = [{"id": f"c{i}", "messages": [{"role": "system", "content": system}, {"role": "user", "content": r["text"]},
                                         {"role": "assistant", "content": "ok"}]} for i, r in enumerate(tasks)]
    # The conversations' own content (user and assistant turns), the duplicates a curator looks for.
    ref = ground_truth.reference([r["text"] + "\nok" for r in tasks])
    expected_pairs = ref.pair_count(THRESHOLD)
    path = write_jsonl(tmp_path / "chat_system.jsonl", rows)
    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Threshold curve")
    counts = page.locator("#counts")
    expect(counts).to_contain_text(f"At Jaccard ≥ {THRESHOLD:g}:")
    shown = re.search(r"([\d,]+) near-duplicate pair", counts.inner_text())
    assert shown and int(shown.group(1).replace(",", "")) == expected_pairs, (counts.inner_text(), expected_pairs)
