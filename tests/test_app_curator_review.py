"""A curator's review of the Space in a real headless Chromium, and the fixes it led to: share
links with an oversized value, a leak check without an answer field, bidirectional controls in
the data, a JSON Lines file named .csv, and the CLI's leak evidence naming the A record a B text
repeats. Figures are computed here from the data files, never read back from the app."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

import real_data
from browser_support import dataset_box, new_page, open_app, open_form, open_tab, status, wait_audited
from conftest import run_cli

pytest_plugins = ["app_server", "browser_support"]

BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def page(browser, app_url):
    context, pg = new_page(browser, app_url)
    yield pg
    context.close()


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def norm(text: str) -> str:
    return " ".join(text.lower().split())


def upload(pg, elem_id: str, path: Path):
    clear = pg.locator(f"#{elem_id} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    pg.locator(f"input[type=file]:has(+ #{elem_id})").set_input_files(str(path))


def pick(pg, elem_id: str, option: str):
    pg.locator(f"#{elem_id} input").click()
    opt = pg.locator(f"#{elem_id}").get_by_role("option", name=option, exact=True)
    expect(opt).to_be_visible()
    opt.click()


@pytest.mark.browser
def test_share_link_with_an_oversized_value_is_refused_and_never_poured_into_the_form(page, app_url):
    page.goto(app_url + "/?" + urlencode({"dataset": "acme/" + "a" * 5000, "threshold": "0.5"}))
    expect(status(page)).to_contain_text("over 1,000 characters long", timeout=30_000)
    assert len(status(page).inner_text()) < 400          # the value is not quoted back
    assert dataset_box(page).input_value() == ""
    # A long id typed in the box (no Hub id is this long) is refused before any Hub call, quoted short.
    box = dataset_box(page)
    box.fill("b" * 300)
    page.locator("#run").click()
    expect(status(page)).to_contain_text("is not a Hugging Face dataset id")
    assert len(status(page).inner_text()) < 400
    # ... and the page stays usable.
    humaneval = len(real_data.rows("humaneval/HumanEval.jsonl"))
    box.fill("example:humaneval")
    page.locator("#run").click()
    wait_audited(page, f"{humaneval:,}", "example:humaneval")


@pytest.mark.browser
def test_leak_without_an_answer_field_says_answers_were_not_checked(page, app_url, tmp_path):
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = [{"question": r["question"]} for r in train[:40]]                 # no answer field
    b_rows = [a_rows[5], a_rows[10], a_rows[20]] + [{"question": r["question"]} for r in test[:4]]
    a_texts = {norm(r["question"]) for r in a_rows}
    copied = sum(norm(r["question"]) in a_texts for r in b_rows)
    assert copied == 3
    a = write_jsonl(tmp_path / "noanswer_a.jsonl", a_rows)
    b = write_jsonl(tmp_path / "noanswer_b.jsonl", b_rows)
    open_app(page, app_url)
    open_form(page)
    upload(page, "upload", a)
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#run").click()
    wait_audited(page, str(len(a_rows)), "noanswer_a.jsonl")
    open_tab(page, "Leakage")
    upload(page, "leak-upload", b)
    page.locator("#leak-run").click()
    summary = page.locator("#leak-summary")
    expect(summary).to_contain_text(f"repeat an A text exactly {copied} (")
    text = summary.inner_text()
    assert f"A = noanswer_a.jsonl ({len(a_rows)} records)" in text
    assert f"B = noanswer_b.jsonl ({len(b_rows)} records)" in text
    assert "(," not in text
    # Never "0 (0.00%)": nothing was compared.
    assert text.count("not checked: no answer field in A or B") == 2
    assert "repeat an A answer exactly 0" not in text


@pytest.mark.browser
def test_bidi_controls_in_the_data_are_shown_as_code_points(page, app_url, tmp_path):
    train = real_data.rows("gsm8k/train.jsonl")
    rlo, iso = "\u202e", "\u2066"
    rows = [{"question": rlo + train[0]["question"], "source": rlo + "evil"},
            {"question": rlo + train[0]["question"] + " today", "source": rlo + "evil"},
            {"question": iso + train[1]["question"], "source": rlo + "evil"}]
    rows += [{"question": r["question"], "source": "plain"} for r in train[2:7]]
    path = write_jsonl(tmp_path / "bidi.jsonl", rows)
    open_app(page, app_url)
    open_form(page)
    upload(page, "upload", path)
    expect(status(page)).to_contain_text("Fields of")
    pick(page, "group", "source")
    page.locator("#run").click()
    wait_audited(page, str(len(rows)), "bidi.jsonl")

    open_tab(page, "Near-duplicate pairs")
    page.locator("#pairs-table [data-testid='cell-0-3']").click()
    expect(page.locator("#pair-view")).to_contain_text("⟨U+202E⟩")
    open_tab(page, "Concentration")
    # The largest group holds 5 of 8 records ("plain"); the other is shown with its control visible.
    expect(page.locator("#conc-text")).to_contain_text("plain")
    shown = {"pairs table": page.locator("#pairs-table"), "pair view": page.locator("#pair-view"),
             "concentration": page.locator("#conc-text")}
    open_tab(page, "Near-duplicate pairs")
    for name in ("pairs table", "pair view"):
        text = shown[name].inner_text()
        assert "⟨U+202E⟩" in text and not BIDI.search(text), name
    open_tab(page, "Clusters")
    clusters = page.locator("#clusters-table")
    expect(clusters).to_contain_text("⟨U+202E⟩")
    assert not BIDI.search(clusters.inner_text())
    open_tab(page, "Concentration")
    conc = page.locator("#conc-table")
    expect(conc).to_contain_text("⟨U+202E⟩evil")
    assert not BIDI.search(conc.inner_text())
    # The downloads keep the data exactly as it is.
    open_tab(page, "Downloads")
    with page.expect_download() as info:
        page.locator("#dl-pairs").click()
    with open(info.value.path(), encoding="utf-8", newline="") as fh:
        pairs = list(csv.DictReader(fh))
    assert {(p["text_a"], p["text_b"]) for p in pairs} >= {(rows[0]["question"], rows[1]["question"])}


@pytest.mark.browser
def test_json_lines_named_csv_is_refused_then_the_same_rows_audit(page, app_url, tmp_path):
    """A JSONL file named .csv used to pass as CSV columns such as '{"question": ...'."""
    rows = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/test.jsonl")[:30]]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    mislabelled = tmp_path / "rows.csv"
    mislabelled.write_text(body, encoding="utf-8")
    open_app(page, app_url)
    open_form(page)
    upload(page, "upload", mislabelled)
    expect(status(page)).to_contain_text("looks like JSON Lines")
    page.locator("#run").click()
    expect(status(page)).to_contain_text("Could not audit")
    expect(status(page)).to_contain_text("Name it .jsonl")
    right = tmp_path / "rows.jsonl"
    right.write_text(body, encoding="utf-8")
    upload(page, "upload", right)
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#run").click()
    wait_audited(page, str(len(rows)), "rows.jsonl")
    # Another upload's name typed in the box is refused, never audited as this page's file.
    dataset_box(page).fill("upload:someone_else.jsonl")
    page.locator("#run").click()
    expect(status(page)).to_contain_text("names the upload 'someone_else.jsonl'")
    expect(status(page)).to_contain_text("'rows.jsonl'")


def test_cli_leak_evidence_shows_the_a_record_the_b_text_repeats(tmp_path):
    """B's record repeats A row 1 (text and answer); A row 0 shares only the answer. The evidence
    row's a_text must be row 1's text, not the lower-numbered answer-only match."""
    train = real_data.rows("gsm8k/train.jsonl")
    a_rows = [{"question": train[0]["question"], "answer": "#### 42"},
              {"question": train[1]["question"], "answer": "#### 42"}]
    b_rows = [{"question": train[1]["question"], "answer": "#### 42"}]
    a = write_jsonl(tmp_path / "a.jsonl", a_rows)
    b = write_jsonl(tmp_path / "b.jsonl", b_rows)
    evidence = tmp_path / "evidence.csv"
    code, _, err = run_cli("leak", a, b, "--evidence", evidence, "--json", tmp_path / "s.json", "--quiet")
    assert code == 0, err
    with open(evidence, encoding="utf-8", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    assert row["b_text"] == b_rows[0]["question"]
    assert row["a_text"] == a_rows[1]["question"]
    assert row["a_rows"].split() == ["1", "0"]


def test_pairs_csv_is_bounded_in_bytes_and_says_so(tmp_path, monkeypatch):
    """A templated upload (60 copies of one question) has C(60, 2) = 1,770 pairs, each row carrying
    both texts: under a small byte cap pairs.csv holds the first pairs whole and the page says how
    many; without the cap it holds them all."""
    from ui import handlers, state
    questions = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")]
    rows = [{"question": questions[0]}] * 60 + [{"question": q} for q in questions[1:41]]
    path = write_jsonl(tmp_path / "templated.jsonl", rows)
    expected = 60 * 59 // 2
    budget = 40_000
    monkeypatch.setattr(state, "PAIRS_CSV_BYTES", budget)
    view = handlers.run("upload:templated.jsonl", "", "", "question", "", "", [], 0.9, "", str(path), "",
                        "upload:templated.jsonl", "http://127.0.0.1/")
    assert view["state"] is not None, view["status"]
    csv_path = Path(view["dl_pairs"]["value"])
    with open(csv_path, encoding="utf-8", newline="") as fh:
        pairs = list(csv.DictReader(fh))
    assert 0 < len(pairs) < expected
    assert csv_path.stat().st_size <= budget * 1.1
    assert all(p["text_a"] == p["text_b"] == questions[0] for p in pairs)
    assert f"holds the best {len(pairs):,} of the {expected:,} reachable pairs" in view["dl_info"]
    monkeypatch.setattr(state, "PAIRS_CSV_BYTES", 64 * 1024 ** 2)
    full = handlers.rethreshold(view["state"], 0.95)
    with open(full["dl_pairs"]["value"], encoding="utf-8", newline="") as fh:
        assert len(list(csv.DictReader(fh))) == expected
    assert full["dl_info"] == ""
