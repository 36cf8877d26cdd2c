"""The app in a real headless Chromium: audit, curve, pair view, download, share link, upload, errors."""
from __future__ import annotations

import csv
import json
import re
import time
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from browser_support import (TIMEOUT, dataset_box, new_page, open_app, open_form, open_tab,  # noqa: E402
                             run_with_token, share_box, status, wait_audited)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser


@pytest.fixture
def page(browser, app_url):
    context, pg = new_page(browser, app_url)
    yield pg
    context.close()


@pytest.mark.slow
def test_opens_on_an_audited_dataset_then_curve_pairs_and_download(page, app_url):
    open_app(page, app_url)
    expect(status(page)).to_contain_text("example:gsm8k")
    expect(page.locator("#cards")).to_contain_text("7,473")

    # Run an audit from the form on another bundled set.
    dataset_box(page).fill("example:gsm8k")
    page.locator("#split input").fill("test")
    page.locator("#split input").press("Enter")
    page.locator("#run").click()
    wait_audited(page, "1,319", "example:gsm8k")

    # Back to the train split, then the curve, the pairs and the side-by-side view.
    page.locator("#split input").fill("train")
    page.locator("#split input").press("Enter")
    page.locator("#run").click()
    wait_audited(page, "7,473")
    open_tab(page, "Threshold curve")
    expect(page.locator("#curve-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#curve-plot")).to_contain_text("rows dedup drops")
    expect(page.locator("#curve-plot")).to_contain_text("Jaccard threshold")
    expect(page.locator("#counts")).to_contain_text("1 near-duplicate pair ")

    # Re-threshold from the cached pairs: the counts and the pairs table follow at once.
    page.locator("#curve-threshold input[type=number]").fill("0.5")
    page.locator("#curve-threshold input[type=number]").press("Enter")
    expect(page.locator("#counts")).to_contain_text("At Jaccard ≥ 0.5: 10 near-duplicate pairs")
    open_tab(page, "Near-duplicate pairs")
    expect(page.locator("#pairs-info")).to_contain_text("10 pairs at Jaccard ≥ 0.5")
    open_tab(page, "Threshold curve")
    page.locator("#curve-threshold input[type=number]").fill("0.7")
    page.locator("#curve-threshold input[type=number]").press("Enter")
    expect(page.locator("#counts")).to_contain_text("At Jaccard ≥ 0.7: 1 near-duplicate pair ")

    open_tab(page, "Near-duplicate pairs")
    page.locator("#pairs-table [data-testid='cell-0-3']").click()
    view = page.locator("#pair-view .pair-view").first
    expect(view).to_be_visible()
    expect(view).to_contain_text("Josie received $50 as a gift")
    expect(view).to_contain_text("Amanda received $50 as a gift")
    expect(page.locator("#pair-view .rec mark.only-a").first).to_have_text("Josie")
    expect(page.locator("#pair-view .rec mark.only-b").first).to_have_text("Amanda")
    # The pair's cluster in the cluster browser: both records, with every role.
    open_tab(page, "Clusters")
    expect(page.locator("#clusters-info")).to_contain_text("1 cluster at Jaccard ≥ 0.7")
    page.locator("#clusters-table [data-testid='cell-0-0']").click()
    expect(page.locator("#cluster-view")).to_contain_text("2 variant records")
    expect(page.locator("#cluster-view")).to_contain_text("Josie received $50 as a gift")
    expect(page.locator("#cluster-view")).to_contain_text("Amanda received $50 as a gift")

    open_tab(page, "Downloads")
    with page.expect_download() as info:
        page.locator("#dl-summary").click()
    download = info.value
    assert download.suggested_filename == "summary.json"
    summary = json.loads(open(download.path(), encoding="utf-8").read())
    assert summary["input"]["records"] == 7473
    assert summary["input"]["split"] == "train"
    assert summary["near_duplicates"]["pairs"] == 1
    assert page.outside_requests == []


def test_share_link_fills_the_form_and_runs(page, app_url):
    query = urlencode({"dataset": "example:humaneval", "split": "test", "text": "prompt", "threshold": "0.5"})
    page.goto(f"{app_url}/?{query}")
    wait_audited(page, "164", "example:humaneval")
    expect(dataset_box(page)).to_have_value("example:humaneval")
    share = share_box(page)
    expect(share).to_have_value(re.compile(r"dataset=example%3Ahumaneval.*threshold=0\.5"))
    assert "token" not in share.input_value()
    expect(page.locator("#overview")).to_contain_text("Jaccard ≥ 0.5")


def test_row_cap_from_a_share_link_is_announced(page, app_url):
    query = urlencode({"dataset": "example:gsm8k", "config": "main", "split": "train", "max_rows": 100})
    page.goto(f"{app_url}/?{query}")
    wait_audited(page, "100")
    expect(status(page)).to_contain_text("Row cap")
    expect(page.locator("#overview")).to_contain_text("only the first 100 records were read")
    expect(share_box(page)).to_have_value(re.compile(r"max_rows=100"))


@pytest.mark.slow
def test_uploaded_file_with_markup_is_shown_as_text(page, app_url, tmp_path):
    img = '<img src=x onerror="window.__xss=1"> Compute the sum of the two numbers and print the result please'
    script = '<script>window.__xss=2</script> Compute the sum of the two numbers and print the result please'
    link = '[click me](javascript:window.__xss=3) an unrelated row about something else entirely'
    # The group ("source") values are markup too: they reach Markdown text and the Plotly chart.
    rows = [{"text": img, "answer": "a", "source": link}, {"text": script, "answer": "b", "source": link},
            {"text": link, "answer": "c", "source": img}, {"text": "plain text four, nothing to see", "answer": "d",
                                                          "source": "plain"}]
    path = tmp_path / "payload.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(dataset_box(page)).to_have_value("upload:payload.jsonl")
    expect(status(page)).to_contain_text("Fields of")
    page.locator("#run").click()
    wait_audited(page, "4", "payload.jsonl")
    for selector in ("#status", "#overview", "#share"):
        shown = page.locator(selector).inner_text()
        assert str(tmp_path) not in shown and "/tmp" not in shown and "gradio/" not in shown, shown

    open_tab(page, "Near-duplicate pairs")
    table = page.locator("#pairs-table")
    expect(table).to_contain_text('<img src=x onerror="window.__xss=1">')
    expect(table).to_contain_text("<script>window.__xss=2</script>")
    page.locator("#pairs-table [data-testid='cell-0-3']").click()
    view = page.locator("#pair-view .pair-view").first
    expect(view).to_contain_text('<img src=x onerror="window.__xss=1">')
    expect(view).to_contain_text("<script>window.__xss=2</script>")
    assert page.locator("#pair-view img, #pairs-table img, #overview img").count() == 0
    assert page.locator("#pair-view script").count() == 0

    open_tab(page, "Concentration")
    expect(page.locator("#conc-text")).to_contain_text("The largest, [click me](javascript:window.__xss=3)")
    expect(page.locator("#conc-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#conc-plot")).to_contain_text("[click me](javascript:window.__xss=3)")
    # (the chart's own toolbar holds a Plotly logo link: look at the drawing only)
    assert page.locator("#conc-text a, #conc-text img, #conc-plot svg a, #conc-plot img").count() == 0

    open_tab(page, "Overview")
    expect(page.locator("#overview")).to_contain_text("payload.jsonl")
    time.sleep(0.5)
    assert page.evaluate("window.__xss") is None


def test_wrong_split_shows_a_clear_error(page, app_url):
    page.goto(f"{app_url}/?{urlencode({'dataset': 'example:gsm8k', 'config': 'main', 'split': 'dev'})}")
    expect(status(page)).to_contain_text("has no split 'dev'")
    expect(status(page)).to_contain_text("Available splits")
    expect(status(page)).to_have_class(re.compile(r"\berror\b"))
    assert "Traceback" not in page.content()


@pytest.mark.slow
def test_hub_dataset_load_fields_then_gated_audit_with_token(page, app_url):
    # Both repos live on the fake Hub of tests/app_server.py.
    from app_server import GATED_TOKEN

    open_app(page, app_url)
    dataset = dataset_box(page)
    dataset.fill("acme/tiny")
    open_form(page)                       # (folded after the opening audit)
    page.locator("#load-fields").click()
    expect(status(page)).to_contain_text("Fields of acme/tiny")
    expect(page.locator("#text input")).to_have_value("question")
    expect(page.locator("#answer input")).to_have_value("answer")
    page.locator("#split input").click()
    expect(page.get_by_role("option", name="test")).to_be_visible()
    page.get_by_role("option", name="test").click()
    page.locator("#run").click()
    wait_audited(page, "3", "acme/tiny")

    dataset.fill("acme/gated")
    page.locator("#split input").fill("train")
    page.locator("#split input").press("Enter")
    page.locator("#run").click()
    expect(status(page)).to_contain_text("gated")
    expect(status(page)).to_have_class(re.compile(r"\berror\b"))

    link = run_with_token(page, GATED_TOKEN, "12", "acme/gated")
    assert "acme%2Fgated" in link
    assert GATED_TOKEN not in link
    open_form(page)
    page.locator("#token input").fill("")
    assert GATED_TOKEN not in page.content()


def test_leakage_and_contamination_with_downloads(page, app_url):
    import auditor
    from auditor.contamination import contamination
    from auditor.leakage import leak

    leaked = leak("example:mbpp", "example:mbpp", config_a="full", split_a="test", config_b="sanitized",
                  split_b="test")
    expected = leaked.summary()
    # The clean split leaves out B records whose text is in A or near one (as `auditor clean --near`),
    # counted here from the two files with ground_truth's pure-Python shingles and Jaccard.
    import ground_truth
    a_texts = [r[expected["a"]["roles"]["text"]] for r in auditor.load("example:mbpp", "full", "test").rows]
    b_texts = [r[expected["b"]["roles"]["text"]] for r in auditor.load("example:mbpp", "sanitized", "test").rows]
    a_sets, a_keys = [ground_truth.word_shingles(t) for t in a_texts], {" ".join(t.lower().split()) for t in a_texts}
    text_leaks = sum(" ".join(t.lower().split()) in a_keys
                     or any(ground_truth.jaccard(ground_truth.word_shingles(t), a) >= leaked.threshold for a in a_sets)
                     for t in b_texts)
    contaminated = contamination("example:mbpp", "mbpp-sanitized", corpus_config="full",
                                 corpus_split="test").summary()["contaminated"]["records"]

    page.goto(f"{app_url}/?{urlencode({'dataset': 'example:mbpp', 'config': 'full', 'split': 'test'})}")
    wait_audited(page, "500")
    open_tab(page, "Leakage")
    expect(page.locator("#leak-dataset input, #leak-dataset textarea").first).to_have_value("example:mbpp")
    page.locator("#leak-config input").fill("sanitized")
    page.locator("#leak-config input").press("Enter")
    page.locator("#leak-split input").fill("test")
    page.locator("#leak-split input").press("Enter")
    page.locator("#benchmark input").click()
    page.get_by_role("option", name="mbpp-sanitized").click()
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked leakage and contamination", timeout=TIMEOUT)

    summary = page.locator("#leak-summary")
    any_leak = expected["any_leak"]["records"]
    expect(summary).to_contain_text(f"leak in any of these ways {any_leak:,}")
    expect(summary).to_contain_text(f"repeat an A text exactly {expected['identical_text']['records']:,}")
    assert expected["text_leak"]["records"] == text_leaks      # the library against ground truth
    expect(summary).to_contain_text(f"repeat an A text, exactly or nearly (what Clean B split drops; a shared "
                                    f"answer alone is often chance) {text_leaks:,}")
    expect(page.locator("#contam-summary")).to_contain_text(f"share an n-gram with A (contaminated) {contaminated:,}")

    open_tab(page, "Downloads")          # every file of the audit is there, with its row count
    with page.expect_download() as info:
        page.locator("#dl-clean").click()
    clean = [json.loads(line) for line in open(info.value.path(), encoding="utf-8") if line.strip()]
    assert len(clean) == expected["b"]["records"] - text_leaks and text_leaks < any_leak   # answer-only stay
    with page.expect_download() as info:
        page.locator("#dl-evidence").click()
    with open(info.value.path(), encoding="utf-8", newline="") as fh:
        evidence = list(csv.DictReader(fh))
    assert len(evidence) == any_leak
    assert {"b_row", "a_row", "kind", "text_jaccard", "b_text", "a_text"} <= set(evidence[0])
    # Each row's texts are the two files' own records (read here, not by the app), and a row
    # claiming identical texts has texts that are equal after case and spacing.
    a_rows = auditor.load("example:mbpp", "full", "test").rows
    b_rows = auditor.load("example:mbpp", "sanitized", "test").rows
    for row in evidence:
        assert row["b_text"] == b_rows[int(row["b_row"])]["prompt"]
        assert row["a_text"] == a_rows[int(row["a_row"])]["text"]
        if "identical_text" in row["kind"]:
            assert " ".join(row["b_text"].lower().split()) == " ".join(row["a_text"].lower().split())
        else:   # near or answer-only: the text Jaccard is the texts' own, not a 1.0 placeholder
            assert float(row["text_jaccard"]) < 1.0
    # Side by side on the page: the first leaking B record and its A record, as text.
    first = evidence[0]
    view = page.locator("#leak-evidence .evidence").first
    expect(view).to_contain_text(" ".join(first["b_text"].split())[:60])
    expect(view).to_contain_text(" ".join(first["a_text"].split())[:60])


def test_leakage_of_a_split_with_itself_is_refused(page, app_url):
    """B = the audited A itself would report every record as leaked: the page says so instead."""
    page.goto(f"{app_url}/?{urlencode({'dataset': 'example:mbpp', 'config': 'full', 'split': 'test'})}")
    wait_audited(page, "500")
    open_tab(page, "Leakage")
    page.locator("#leak-split input").fill("test")
    page.locator("#leak-split input").press("Enter")
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("B is the same data as A", timeout=TIMEOUT)
    expect(page.locator("#leak-summary")).not_to_contain_text("leak in any of these ways")
