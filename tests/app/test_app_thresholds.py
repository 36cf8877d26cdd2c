"""The Space's threshold, in a real headless Chromium: moved after the audit, every view and
download follows it without a rescan; out-of-range values go back to the one shown; pair keys;
one-record and 1 MB-record uploads."""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from urllib.parse import urlencode

import pandas as pd
import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (download, open_app, open_form, open_tab, status, upload_and_run, wait_audited,
                             write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser
FIELDS = ("db_id", "question", "query")


def upload(pg, path: Path, records: int):
    """Upload ``path`` (clearing a previous file first) and run the audit."""
    open_form(pg)             # it folds away after a run
    clear = pg.locator("#upload button[aria-label='Clear']")
    if clear.count() and clear.first.is_visible():
        clear.first.click()
    upload_and_run(pg, path, records)


def set_threshold(pg, value: str):
    open_form(pg)                 # (the threshold sits with the fields, folded after a run)
    box = pg.locator("#threshold input[type=number]")
    box.fill(value)
    box.press("Enter")


def card(pg, label: str) -> str:
    """The value of the overview's stat card whose label starts with ``label``."""
    return pg.locator("#cards .stat", has=pg.locator(".l", has_text=label)).first.locator(".v").inner_text()


def spider_rows() -> list[dict]:
    """Spider dev's first 300 questions, then three exact copies (rows 300-302) of rows 10, 10 and 42."""
    rows = [{k: r[k] for k in FIELDS} for r in real_data.rows("spider/dev.jsonl")[:300]]
    return rows + [dict(rows[10]), dict(rows[10]), dict(rows[42])]


def write_bom_csv(path: Path, rows) -> Path:
    with open(path, "w", encoding="utf-8-sig", newline="") as fh:     # a BOM, as Excel writes
        writer = csv.DictWriter(fh, fieldnames=list(FIELDS))
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.mark.slow
def test_a_new_threshold_moves_every_view_and_download_without_a_rescan(page, app_url, tmp_path):
    """From the third curator's review of the Space."""
    rows = spider_rows()
    frame = pd.DataFrame(rows)
    texts = list(frame["question"])
    ref = ground_truth.reference(texts)
    exact_redundant = int(frame["question"].duplicated().sum())
    assert exact_redundant == 3
    path = write_bom_csv(tmp_path / "spider_dev.csv", rows)
    open_app(page, app_url)
    upload(page, path, len(rows))
    expect(page.locator("#text input").first).to_have_value("question")     # the BOM is not in the header
    assert card(page, "exact-duplicate texts") == f"{exact_redundant:,}"
    assert card(page, "near-duplicate pairs") == f"{ref.pair_count(0.7):,}"

    set_threshold(page, "0.5")     # no rescan: the cached pairs answer every threshold down to 0.3
    expect(page.locator("#cards")).to_contain_text("≥ 0.5")
    expect(status(page)).to_contain_text("spider_dev.csv")
    clusters = ref.clusters(0.5)
    in_clusters = sum(map(len, clusters))
    assert card(page, "near-duplicate pairs") == f"{ref.pair_count(0.5):,}"
    assert card(page, "near-duplicate clusters") == f"{len(clusters):,}"
    assert card(page, "records in clusters").startswith(f"{in_clusters:,} ")
    open_tab(page, "Threshold curve")
    expect(page.locator("#curve-threshold input[type=number]")).to_have_value("0.5")
    expect(page.locator("#curve-plot text", has_text="selected 0.5")).to_have_count(1)
    # the curve table: what dedup does at each threshold (every 0.05, rows kept and dropped, clusters,
    # the largest, pairs), as the exact all-pairs search finds them
    cells = page.locator("#curve-table tbody tr").evaluate_all(
        "rows => rows.map(r => [...r.children].map(c => c.innerText.trim()))")
    table = {row[0]: [x.split(" ")[0].replace(",", "") for x in row[1:]] for row in cells}
    assert list(table)[:2] == ["0.30", "0.35"] and list(table)[-1] == "1.00"     # as the sliders run
    for t in (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3):
        clusters_t = ref.clusters(t)
        dropped_t = sum(len(c) - 1 for c in clusters_t)
        assert table[f"{t:.2f}"] == [str(len(rows) - dropped_t), str(dropped_t), str(len(clusters_t)),
                                     str(max(map(len, clusters_t), default=0)), str(ref.pair_count(t))]
    open_tab(page, "Near-duplicate pairs")
    expect(page.locator("#pairs-info")).to_contain_text(f"{ref.pair_count(0.5)} pairs at Jaccard ≥ 0.5")
    open_tab(page, "Clusters")
    identical = sum(len({texts[r] for r in c}) == 1 for c in clusters)
    expect(page.locator("#clusters-info")).to_contain_text(
        f"{len(clusters)} clusters at Jaccard ≥ 0.5, largest first ({identical} identical")
    expect(page.locator("#clusters-info")).to_contain_text(f"holding {in_clusters} records")

    # summary.json states the threshold its figures are at (it said 0.7 under figures at 0.5)
    open_tab(page, "Downloads")
    summary = json.loads(Path(download(page, "dl-summary")).read_text(encoding="utf-8"))
    assert summary["settings"]["threshold"] == summary["near_duplicates"]["threshold"] == 0.5
    near = summary["near_duplicates"]
    assert (near["pairs"], near["clusters"], near["records_in_clusters"]) == (ref.pair_count(0.5), len(clusters),
                                                                             in_clusters)
    assert summary["exact_duplicates"]["text"]["redundant"] == exact_redundant
    assert "Jaccard ≥ 0.5" in Path(download(page, "dl-report")).read_text(encoding="utf-8")
    with open(download(page, "dl-pairs"), encoding="utf-8", newline="") as fh:
        listed = {(int(r["a"]), int(r["b"])): float(r["jaccard"]) for r in csv.DictReader(fh)}
    expected = ref.record_pairs(0.5)
    assert listed.keys() == expected.keys()
    assert all(abs(listed[p] - expected[p]) < 1e-4 for p in expected)

    # The deduplicated file: the first record of each cluster (the rule stated), every other dropped.
    open_tab(page, "Downloads")      # every file of the audit, the deduplicated one with its row count
    page.locator("#dedup-run").click()
    info = page.locator("#dedup-info")
    kept_rows = sorted(set(range(len(rows))) - {r for c in clusters for r in c[1:]})
    expect(info).to_contain_text(f"kept {len(kept_rows):,} of {len(rows):,} records (one per cluster, rule first)")
    manifest = json.loads(Path(download(page, "dl-manifest")).read_text(encoding="utf-8"))
    assert manifest["threshold"] == 0.5
    assert {d["row"]: d["kept_row"] for d in manifest["dropped_rows"]} == {r: c[0] for c in clusters for r in c[1:]}
    deduped = tmp_path / "spider_dev.dedup.csv"
    deduped.write_bytes(Path(download(page, "dl-dedup")).read_bytes())
    with open(deduped, encoding="utf-8-sig", newline="") as fh:
        assert list(csv.DictReader(fh)) == [rows[r] for r in kept_rows]

    # ... and read back into the tool: no near duplicate left at 0.5, no exact copy.
    upload(page, deduped, len(kept_rows))
    expect(page.locator("#threshold input[type=number]")).to_have_value("0.5")
    assert card(page, "near-duplicate pairs") == "0"
    assert card(page, "exact-duplicate texts") == "0"


def test_an_out_of_range_threshold_in_the_box_goes_back_to_the_one_shown(page, app_url):
    """From the third curator's review of the Space."""
    open_app(page, app_url)
    set_threshold(page, "0.5")
    expect(page.locator("#cards")).to_contain_text("≥ 0.5")
    for typed in ("7", "-1"):
        set_threshold(page, typed)
        expect(page.locator(".toast-body").last).to_contain_text(f"Value {typed} is")
        # the box shows the threshold every view is at again (it kept "7" over figures at 0.5)
        expect(page.locator("#threshold input[type=number]")).to_have_value("0.5")
        expect(page.locator("#cards")).to_contain_text("≥ 0.5")
    open_tab(page, "Threshold curve")
    expect(page.locator("#curve-threshold input[type=number]")).to_have_value("0.5")
    # No reset button: it put 0.7 in the box and fired no event, so every view stayed at 0.5.
    assert page.locator("#threshold button[aria-label='Reset to default value'], "
                        "#curve-threshold button[aria-label='Reset to default value']").count() == 0


def test_pair_keys_leave_page_scrolling_and_table_arrows_alone(page, app_url):
    """From the third curator's review of the Space."""
    page.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "threshold": "0.5"}))
    wait_audited(page, "7,473")
    open_tab(page, "Near-duplicate pairs")
    view = page.locator("#pair-view")
    page.keyboard.press("j")
    expect(view).to_contain_text("pair 1 of ")
    page.keyboard.press("ArrowRight")
    expect(view).to_contain_text("pair 2 of ")
    page.evaluate("window.scrollTo(0, 0); document.activeElement.blur()")
    page.keyboard.press("ArrowDown")                # scrolls the page (it moved to the next pair instead)
    page.wait_for_function("window.scrollY > 0")
    expect(view).to_contain_text("pair 2 of ")
    # In the table the arrows move between cells: down moves to the next pair with the row.
    page.locator("#pairs-table [data-testid='cell-0-3']").click()
    expect(view).to_contain_text("pair 1 of ")
    page.keyboard.press("ArrowDown")
    expect(view).to_contain_text("pair 2 of ")
    page.keyboard.press("ArrowRight")                # a cell to the right: the same pair
    page.wait_for_timeout(500)
    expect(view).to_contain_text("pair 2 of ")


@pytest.mark.slow
def test_one_record_and_a_one_megabyte_record(page, app_url, tmp_path):
    """From the third curator's review of the Space."""
    one = write_jsonl(tmp_path / "one.jsonl", [{"question": "What is two plus two?", "answer": "4"}])
    open_app(page, app_url)
    upload(page, one, 1)
    expect(status(page)).to_contain_text("Audited one.jsonl: 1 record, ")     # not "1 records"
    assert card(page, "near-duplicate pairs") == "0"

    # Exact duplicates of the text under the default normaliser: the card says case and spacing are
    # ignored, so pandas' count of identical strings (0 here) is not mistaken for it (2).
    train = real_data.rows("spider/train_spider.jsonl")
    rows = [{k: train[i][k] for k in FIELDS} for i in list(range(20)) + [3413, 3483, 3998, 6244]]
    frame = pd.DataFrame(rows)
    folded = frame["question"].map(lambda t: " ".join(t.lower().split()))
    assert (int(frame["question"].duplicated().sum()), int(folded.duplicated().sum())) == (0, 2)
    upload(page, write_jsonl(tmp_path / "cases.jsonl", rows), len(rows))
    assert card(page, "exact-duplicate texts (case and spacing ignored)") == "2"

    rnd = random.Random(3)
    words = [f"w{rnd.randrange(50_000)}" for _ in range(170_000)]
    big = " ".join(words)
    rows = [{"question": big, "answer": "1"}, {"question": " ".join(words[:-40] + ["tail"] * 40), "answer": "2"},
            {"question": "A short question about trains?", "answer": "3"}]
    assert len(big) > 1_000_000
    expected = ground_truth.reference([r["question"] for r in rows]).record_pairs(0.7)
    assert list(expected) == [(0, 1)]
    path = write_jsonl(tmp_path / "big.jsonl", rows)
    upload(page, path, 3)
    assert card(page, "near-duplicate pairs") == "1"
    open_tab(page, "Near-duplicate pairs")
    page.keyboard.press("j")
    view = page.locator("#pair-view")
    expect(view).to_contain_text("record 0 vs record 1")
    expect(view.locator(".cut", has_text="(cut)")).to_have_count(2)
    assert len(view.inner_text()) < 40_000         # the page holds a cut, not two megabytes
    assert page.evaluate("1 + 1") == 2
