"""The leakage tab's summary, evidence and clean downloads, in a real headless Chromium, against
figures computed from the files (tests/ground_truth.py), never the app's output."""
from __future__ import annotations

import csv
import gzip
import json
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (new_page, open_app, open_form, open_tab, status, wait_audited, TIMEOUT, XSS,
                             download, read_jsonl, upload_and_run, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]


@pytest.fixture
def plain_page(browser, app_url):
    context, pg = new_page(browser, app_url)
    yield pg
    context.close()


def write_jsonl_unicode(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def upload(pg, elem_id: str, path: Path):
    """``path`` into the upload slot ``elem_id``, until the page has kept it (the button names it): a
    click on a run button before that would run on what the page held before the upload."""
    clear = pg.locator(f"#{elem_id} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    pg.locator(f"input[type=file]:has(+ #{elem_id})").set_input_files(str(path))
    expect(pg.locator(f"#{elem_id}")).to_contain_text(path.stem)     # (the page breaks the name at its suffix)


DATA = Path(__file__).resolve().parents[1] / "data"
THRESHOLD = 0.7             # the page's default


LEAK_COLUMNS = ["b_row", "a_row", "a_rows", "kind", "b_kinds", "text_jaccard", "text_containment", "b_text", "a_text",
                "b_answer", "a_answer"]


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
    expect(pg.locator("#leak-upload")).to_contain_text(path.name)      # kept by the server: B's slot names it
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


def sociology():
    with gzip.open(DATA / "semantic" / "sociology_questions.jsonl.gz", "rt", encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    # MMLU's shape: a question, a subject and the letter of the right choice.
    return [{"question": q, "subject": "sociology", "answer": "ABCD"[(7 * i) % 4]} for i, q in enumerate(questions)]


def gsm8k_planted():
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = train[:300]
    near = [{"question": r["question"] + " Show your work.", "answer": r["answer"]} for r in train[20:23]]
    b_rows = test[:40] + train[10:15] + near + [{"question": XSS + test[41]["question"], "answer": "<b>7</b>"}]
    return a_rows, b_rows


@pytest.mark.browser
def test_leak_without_an_answer_field_says_answers_were_not_checked(plain_page, app_url, tmp_path):
    """From a curator's review of the Space."""
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = [{"question": r["question"]} for r in train[:40]]                 # no answer field
    b_rows = [a_rows[5], a_rows[10], a_rows[20]] + [{"question": r["question"]} for r in test[:4]]
    a_texts = {norm(r["question"]) for r in a_rows}
    copied = sum(norm(r["question"]) in a_texts for r in b_rows)
    assert copied == 3
    a = write_jsonl_unicode(tmp_path / "noanswer_a.jsonl", a_rows)
    b = write_jsonl_unicode(tmp_path / "noanswer_b.jsonl", b_rows)
    open_app(plain_page, app_url)
    open_form(plain_page)
    upload(plain_page, "upload", a)
    expect(status(plain_page)).to_contain_text("Fields of")
    plain_page.locator("#run").click()
    wait_audited(plain_page, str(len(a_rows)), "noanswer_a.jsonl")
    open_tab(plain_page, "Leakage")
    upload(plain_page, "leak-upload", b)
    plain_page.locator("#leak-run").click()
    summary = plain_page.locator("#leak-summary")
    # A job: on a busy machine it may wait for a slot, so the page's long wait, not expect()'s default.
    expect(summary).to_contain_text(f"repeat an A text exactly {copied} (", timeout=TIMEOUT)
    text = summary.inner_text()
    assert f"A = noanswer_a.jsonl ({len(a_rows)} records)" in text
    assert f"B = noanswer_b.jsonl ({len(b_rows)} records)" in text
    assert "(," not in text
    # Never "0 (0.00%)": nothing was compared.
    assert text.count("not checked: no answer field in A or B") == 3       # answer, both, reworded both
    assert "repeat an A answer exactly 0" not in text


@pytest.mark.slow
@pytest.mark.browser
def test_mmlu_letters_shared_answers_only_stay_in_the_clean_split(page, app_url, tmp_path):
    """From a demanding curator's review of the Space."""
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


@pytest.mark.browser
def test_planted_copies_figures_agree_with_evidence_and_clean_split(page, app_url, tmp_path):
    """From a demanding curator's review of the Space."""
    a_rows, b_rows = gsm8k_planted()
    text_leak, answer_rows = expected_leak(a_rows, b_rows)
    assert set(range(40, 48)) <= text_leak                     # the 5 copies and 3 edited copies
    any_leak = text_leak | answer_rows
    n = leak_journey(page, app_url, tmp_path, "gsm", a_rows, b_rows)
    assert summary_row(page, "leak in any of these ways") == share(len(any_leak), n)
    assert summary_row(page, "repeat an A text, exactly or nearly") == share(len(text_leak), n)
    # the row Clean B split acts on stands out (its label in bold), with its count
    label = page.locator("th b", has_text="repeat an A text, exactly or nearly")
    emphasised = page.locator("#leak-summary tr", has=label)
    expect(emphasised.locator("td")).to_have_text(share(len(text_leak), n))
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
