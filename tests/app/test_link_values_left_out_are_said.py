"""A share link's values the page cannot use (a keep rule, a tab, review marks, rows kept apart and
cluster splits that are malformed or not of this audit, b_self, keys no link carries) are said in
the status, each with its key, its value as plain text and why, never dropped without a word nor
rendered as markup. From the round-4 hostile review; row numbers in digit-like characters and values
a source does not take (a revision with an example or upload, an upload's config and split) from the
round-7 one."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ground_truth  # noqa: E402
import real_data  # noqa: E402
from browser_support import TIMEOUT, status, wait_audited  # noqa: E402
from ui import handlers, state  # noqa: E402

pytest_plugins = ["app_server", "browser_support"]
BASE = "http://space.example/"
LINK = {"dataset": "example:gsm8k", "config": "main", "split": "test", "text": "question", "answer": "answer",
        "threshold": "0.7"}


@pytest.fixture(scope="module")
def pairs():
    """(a pair of this audit at Jaccard >= 0.3, a pair of rows that is not one), from the data."""
    texts = [r["question"] for r in real_data.rows("gsm8k/test.jsonl")]
    found = ground_truth.reference(texts, min_threshold=0.3).record_pairs(0.3)
    outside = next((a, a + 1) for a in range(len(texts)) if (a, a + 1) not in found)
    return min(found), outside, len(texts)


def status_text(out) -> str:
    return out["status"]["value"]


def test_a_clean_link_says_nothing_left_out(pairs):
    (a, b), _, _ = pairs
    out = handlers.page_load({**LINK, "nd": f"{a}-{b}", "keep": "longest", "tab": "pairs", "__sign": "x"}, BASE)
    assert out["state"]["marks"] == [(a, b)] and out["state"]["keep"] == "longest"
    assert "left out" not in status_text(out)


def test_each_value_left_out_is_named_with_why(pairs):
    (a, b), (c, d), n = pairs
    out = handlers.page_load({**LINK, "nd": f"{a}-{b},{c}-{d},5-5", "ka": f"2,{n}", "sp": f"3@x,{n}@0.5",
                              "keep": "random", "tab": "nosuch", "b_self": "yes", "threshhold": "0.5"}, BASE)
    st = out["state"]
    assert st["marks"] == [(a, b)] and st["apart"] == [2] and st["splits"] == [] and st["keep"] == "first"
    assert st["tab"] is None
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**")
    assert "**This link's values left out:** keep=random (not a keep rule" in text
    # five quoted, the others counted
    assert text.count("=") >= 5 and "; and 4 more." in text     # keep, 2 nd, ka, sp x2, threshhold, tab, b_self: 9


def test_the_reasons_name_every_value(pairs):
    (a, b), (c, d), n = pairs
    result = handlers.page_load(LINK, BASE)
    ignored: list = []
    params = {**LINK, "nd": f"{a}-{b},{c}-{d},5-5,x", "ka": f"2,{n},-1", "sp": f"3@x,{n}@0.5,4@0.1,7@0.8",
              "keep": "most_common_answer"}
    review = handlers.linked_review(_result(result), params, ignored)
    assert review["marks"] == ((a, b),) and review["apart"] == (2,) and review["splits"] == ((7, 0.8),)
    assert review["keep"] == "most_common_answer"      # gsm8k has an answer: kept
    assert [(k, str(v)) for k, v, _ in ignored] == [
        ("nd", "5-5"), ("nd", "x"), ("nd", f"{c}-{d}"), ("ka", "-1"), ("ka", str(n)), ("sp", "3@x"),
        ("sp", "4@0.1"), ("sp", f"{n}@0.5")]
    assert [why for k, _, why in ignored if k == "sp"][1:] == ["below the lowest threshold searched (0.3)",
                                                             f"beyond this audit's {n:,} records"]
    assert handlers.ignored_link_values({"tab": "pairs", "b_self": "1", "__theme": "dark", "dataset": "x"}) == []


def _result(out):
    """The audit result behind a page_load's state (the page keeps it in the cache by its key)."""
    return handlers.CACHE.get(out["state"]["key"])


# a good value of each key, given beside the bad one: it must survive
GOOD = {"ka": "5", "sp": "5@0.5"}


@pytest.mark.parametrize("key,value", [("nd", "²-3"), ("ka", "²"), ("sp", "²@0.5"), ("ka", "①"), ("nd", "3-2²")])
def test_row_numbers_of_digit_like_characters_are_left_out_with_a_word(pairs, key, value):
    """From the round-7 hostile review: review values holding characters that look like digits but are
    no number (superscripts, circled digits: str.isdigit accepts them, int refuses them) failed the
    whole page load, 'Something went wrong (ValueError)', the audit and the link's good values lost;
    now they are left out as any malformed part is."""
    (a, b), _, _ = pairs
    params = {**LINK, "nd": f"{a}-{b}"}
    params[key] = f"{params.get(key) or GOOD[key]},{value}"
    out = handlers.page_load(params, BASE)
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**"), text
    assert f"{key}={value.replace('@', chr(92) + '@')} (" in text, text      # (Markdown: an @ escaped)
    st = out["state"]
    assert st["marks"] == [(a, b)]
    assert st["apart"] == ([5] if key == "ka" else [])
    assert [tuple(s) for s in st["splits"]] == ([(5, 0.5)] if key == "sp" else [])


def test_digits_of_other_scripts_read_as_their_numbers():
    """From the round-7 hostile review: Arabic-Indic digits are numbers int reads, and stay read."""
    assert state.parse_rows("١٢,٣") == (3, 12)
    assert state.parse_marks("١-٢") == ((1, 2),)
    assert state.parse_splits("٣@0.5") == ((3, 0.5),)
    for parse, value in ((state.parse_rows, "²"), (state.parse_marks, "²-3"), (state.parse_splits, "²@0.5")):
        rejected: list = []
        assert parse(value, rejected) == () and rejected == [value]


def test_a_revision_with_a_bundled_example_is_said():
    """From the round-7 hostile review: ?dataset=example:gsm8k&rev=0123abc audited the bundled set and
    said 'Audited' without a word about the revision (a Hub dataset's commit; the CLI refuses
    --revision for examples and files), so a reader took the figures for that commit's."""
    out = handlers.page_load({**LINK, "rev": "0123abc"}, BASE)
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**"), text
    assert "rev=0123abc (" in text and "Hugging Face datasets only" in text
    assert out["state"]["source"].kind == "example"
    out = handlers.page_load({**LINK, "b": "example:gsm8k", "b_config": "socratic", "b_split": "test",
                              "b_rev": "v2"}, BASE)
    assert "b\\_rev=v2 (" in status_text(out), status_text(out)
    assert not handlers.ignored_link_values({"dataset": "openai/gsm8k", "rev": "abc1234", "config": "main",
                                             "split": "test"})


def test_an_uploads_config_split_and_revision_are_said(tmp_path):
    """From the round-7 hostile review: an uploaded file is read whole (no config or split) and has no
    revision; a link giving them was audited without a word."""
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in real_data.rows("gsm8k/test.jsonl")[:40]),
                    encoding="utf-8")
    kept = state.kept_upload(str(path))
    out = handlers.page_load({"upload": kept.id, "config": "main", "split": "test", "rev": "abc1234",
                              "text": "question"}, BASE)
    text = status_text(out)
    assert text.startswith("Audited **mine.jsonl**: 40 records"), text
    for key, value in (("config", "main"), ("split", "test"), ("rev", "abc1234")):
        assert f"{key}={value} (" in text, (key, text)


@pytest.mark.browser
def test_the_notice_renders_hostile_values_as_text(page, app_url):
    hostile = '<img src=x onerror="window.__xss=1">'
    page.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "keep": hostile, "tab": "**bold**",
                                          "nd": "<b>1</b>-2"}))
    wait_audited(page, "7,473", "example:gsm8k")
    line = status(page)
    expect(line).to_contain_text("This link's values left out", timeout=TIMEOUT)
    shown = line.inner_text()
    assert f"keep={hostile}" in shown and "tab=**bold**" in shown and "nd=<b>1</b>-2" in shown
    assert page.locator("#status img, #status b").count() == 0
    assert page.evaluate("window.__xss_hits.slice()") == []


@pytest.mark.parametrize("threshold", ["NaN", "5", "0", "-0.5", "abc", "1e400"])
def test_a_threshold_the_slider_cannot_show_is_left_out_not_the_audit(threshold):
    """From a browser review (session 52): docs/app.md says such a threshold is not applied, but the
    whole audit was refused and the page left empty. The audit runs at the default threshold and
    the status says which value was left out and why."""
    out = handlers.page_load({**LINK, "threshold": threshold}, BASE)
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**") and "Could not" not in text
    assert out["state"]["threshold"] == state.DEFAULT_THRESHOLD
    assert "threshold=" in text and f"{state.DEFAULT_THRESHOLD:g} is used" in text


def test_a_row_cap_the_page_does_not_read_is_said():
    """A link's max_rows beyond the page's cap was cut to the cap without a word."""
    out = handlers.page_load({**LINK, "max_rows": "99999999999999999999999"}, BASE)
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**") and "rows=99999999999999999999999" in text
    assert "not a row cap the page reads" in text
    out = handlers.page_load({**LINK, "max_rows": "300"}, BASE)
    assert "left out" not in status_text(out) and out["state"]["request"].max_rows == 300


@pytest.mark.parametrize("extra", [{"b": "example:nosuch"}, {"bench": "nosuch"},
                                   {"b": "example:gsm8k", "b_config": "main", "b_split": "test"}])
def test_a_link_whose_leak_check_fails_says_so_at_the_top(extra):
    """From the same review: a link's leakage or contamination check that failed (an unknown B or
    benchmark, B the same records as A) was said only on the Leakage tab."""
    out = handlers.page_load({**LINK, **extra}, BASE)
    text = status_text(out)
    assert text.startswith("Audited **example:gsm8k**")
    assert "check could not be run: the **Leakage** tab says why" in text
    assert "error" in out["leak_status"]["elem_classes"]
