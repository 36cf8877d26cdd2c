"""Uploads shown as text: bidirectional controls as code points, JSON Lines named .csv refused
before the same rows audit."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

import real_data
from browser_support import dataset_box, new_page, open_app, open_form, open_tab, status, wait_audited

pytest_plugins = ["app_server", "browser_support"]
BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def plain_page(browser, app_url):
    context, pg = new_page(browser, app_url)
    yield pg
    context.close()


def write_jsonl_unicode(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


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


@pytest.mark.slow
@pytest.mark.browser
def test_bidi_controls_in_the_data_are_shown_as_code_points(plain_page, app_url, tmp_path):
    """From a curator's review of the Space."""
    train = real_data.rows("gsm8k/train.jsonl")
    rlo, iso = "\u202e", "\u2066"
    rows = [{"question": rlo + train[0]["question"], "source": rlo + "evil"},
            {"question": rlo + train[0]["question"] + " today", "source": rlo + "evil"},
            {"question": iso + train[1]["question"], "source": rlo + "evil"}]
    rows += [{"question": r["question"], "source": "plain"} for r in train[2:7]]
    path = write_jsonl_unicode(tmp_path / "bidi.jsonl", rows)
    open_app(plain_page, app_url)
    open_form(plain_page)
    upload(plain_page, "upload", path)
    expect(status(plain_page)).to_contain_text("Fields of")
    pick(plain_page, "group", "source")
    plain_page.locator("#run").click()
    wait_audited(plain_page, str(len(rows)), "bidi.jsonl")

    open_tab(plain_page, "Near-duplicate pairs")
    plain_page.locator("#pairs-table [data-testid='cell-0-3']").click()
    expect(plain_page.locator("#pair-view")).to_contain_text("⟨U+202E⟩")
    open_tab(plain_page, "Concentration")
    # The largest group holds 5 of 8 records ("plain"); the other is shown with its control visible.
    expect(plain_page.locator("#conc-text")).to_contain_text("plain")
    shown = {"pairs table": plain_page.locator("#pairs-table"), "pair view": plain_page.locator("#pair-view"),
             "concentration": plain_page.locator("#conc-text")}
    open_tab(plain_page, "Near-duplicate pairs")
    for name in ("pairs table", "pair view"):
        # (the table draws its rows again as its tab is shown: read it once they are there)
        expect(shown[name]).to_contain_text("⟨U+202E⟩")
        text = shown[name].inner_text()
        assert "⟨U+202E⟩" in text and not BIDI.search(text), name
    open_tab(plain_page, "Clusters")
    clusters = plain_page.locator("#clusters-table")
    expect(clusters).to_contain_text("⟨U+202E⟩")
    assert not BIDI.search(clusters.inner_text())
    open_tab(plain_page, "Concentration")
    conc = plain_page.locator("#conc-table")
    expect(conc).to_contain_text("⟨U+202E⟩evil")
    assert not BIDI.search(conc.inner_text())
    # The downloads keep the data exactly as it is.
    open_tab(plain_page, "Downloads")
    with plain_page.expect_download() as info:
        plain_page.locator("#dl-pairs").click()
    with open(info.value.path(), encoding="utf-8", newline="") as fh:
        pairs = list(csv.DictReader(fh))
    assert {(p["text_a"], p["text_b"]) for p in pairs} >= {(rows[0]["question"], rows[1]["question"])}


@pytest.mark.browser
def test_json_lines_named_csv_is_refused_then_the_same_rows_audit(plain_page, app_url, tmp_path):
    """From a curator's review of the Space: A JSONL file named .csv used to pass as CSV columns such as
    '{"question": ...'."""
    rows = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/test.jsonl")[:30]]
    body = "".join(json.dumps(r) + "\n" for r in rows)
    mislabelled = tmp_path / "rows.csv"
    mislabelled.write_text(body, encoding="utf-8")
    open_app(plain_page, app_url)
    open_form(plain_page)
    upload(plain_page, "upload", mislabelled)
    expect(status(plain_page)).to_contain_text("looks like JSON Lines")
    plain_page.locator("#run").click()
    expect(status(plain_page)).to_contain_text("Could not audit")
    expect(status(plain_page)).to_contain_text("Name it .jsonl")
    right = tmp_path / "rows.jsonl"
    right.write_text(body, encoding="utf-8")
    upload(plain_page, "upload", right)
    expect(status(plain_page)).to_contain_text("Fields of")
    plain_page.locator("#run").click()
    wait_audited(plain_page, str(len(rows)), "rows.jsonl")
    # Another upload's name typed in the box is refused, never audited as this page's file.
    dataset_box(plain_page).fill("upload:someone_else.jsonl")
    plain_page.locator("#run").click()
    expect(status(plain_page)).to_contain_text("names the upload 'someone_else.jsonl'")
    expect(status(plain_page)).to_contain_text("'rows.jsonl'")
