"""Long jobs show where they are in the page: a paraphrase search and the deduplicated file's build
put their stages on screen while they run, not one frozen line (issue 29: "a paraphrase run's
progress sits at 50% for 50 s"). Every text the page shows in the job's status area while it runs
is recorded by a MutationObserver, in a real headless Chromium."""
from __future__ import annotations

import re

import pytest

from auditor import semantic
import real_data

pytest_plugins = ["app_server", "browser_support"]
pytestmark = [pytest.mark.browser, pytest.mark.slow]

texts = real_data.semantic_texts

# Every distinct text shown inside the element (its block, where Gradio draws the job's progress)
# while the job runs, in order.
RECORD = """(sel) => {
  const el = document.querySelector(sel).closest('.block') || document.querySelector(sel);
  window.__seen = [];
  const note = () => {
    const t = (el.innerText || '').replace(/\\s+/g, ' ').trim();
    if (t && window.__seen[window.__seen.length - 1] !== t) window.__seen.push(t);
  };
  new MutationObserver(note).observe(el, {subtree: true, childList: true, characterData: true});
}"""


def percents(seen: list[str]) -> list[float]:
    return [float(m) for t in seen for m in re.findall(r"(\d+(?:\.\d+)?)\s*%", t)]


@pytest.mark.skipif(not semantic.available(), reason="the semantic extra is not installed")
def test_a_paraphrase_search_shows_its_stages_as_it_runs(browser, app_url, tmp_path):
    from playwright.sync_api import expect

    from browser_support import TIMEOUT, new_page, open_app, open_tab, upload_and_run, write_jsonl
    # 120 items (two of the transformer's progress steps of 64 windows) against 120 distinct records:
    # a run of several seconds, so its steps reach the page even on a busy machine.
    a = write_jsonl(tmp_path / "rephrased.jsonl", [{"text": t} for name in ("sociology", "gsm8k")
                                                   for t in texts(f"{name}_rephrased.jsonl.gz", "text")])
    b = write_jsonl(tmp_path / "questions.jsonl", [{"question": q} for name in ("sociology", "gsm8k")
                                                   for q in texts(f"{name}_questions.jsonl.gz", "question")])
    context, pg = new_page(browser, app_url)
    try:
        open_app(pg, app_url)
        upload_and_run(pg, a, 120)
        open_tab(pg, "Leakage")
        pg.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(b))
        expect(pg.locator("#leak-upload")).to_contain_text(b.stem)     # kept: a click before runs without it
        pg.locator("#paraphrases").get_by_text("Paraphrases (semantic search)").click()
        pg.wait_for_selector("#para-status", state="attached")      # the section renders once opened
        pg.evaluate(RECORD, "#para-status")
        pg.locator("#para-run").click()
        expect(pg.locator("#para-status")).to_contain_text("Checked 120 benchmark items", timeout=TIMEOUT * 3)
        seen = pg.evaluate("window.__seen.slice()")
    finally:
        context.close()
    stages = [t for t in seen if "Checked 120" not in t]
    # The library's stage labels reach the page while it runs, the bar moves (another stage, or a
    # larger share of one), and the shares only grow.
    assert any("embedding benchmark" in t for t in stages), seen
    labels = sum(any(label in t for t in stages) for label in ("embedding benchmark", "shortlisting", "re-scoring",
                                                               "scoring"))
    shown = percents(stages)
    assert labels >= 2 or len(set(shown)) >= 2, seen
    assert shown == sorted(shown), seen


def test_the_deduplicated_file_shows_its_steps_as_it_is_built(browser, app_url, tmp_path):
    from playwright.sync_api import expect

    from browser_support import new_page, open_app, open_tab, upload_and_run, write_jsonl
    questions = texts("sociology_questions.jsonl.gz", "question")
    rows = [{"id": i, "text": f"{questions[i % 60]} (version {i // 60})" if i % 3 else questions[i % 60]}
            for i in range(6000)]
    path = write_jsonl(tmp_path / "dup.jsonl", rows)
    context, pg = new_page(browser, app_url)
    try:
        open_app(pg, app_url)
        upload_and_run(pg, path, 6000)
        open_tab(pg, "Downloads")
        pg.wait_for_selector("#dedup-info", state="attached")
        pg.evaluate(RECORD, "#dedup-info")
        pg.locator("#dedup-run").click()
        expect(pg.locator("#dl-dedup")).to_be_enabled()
        seen = pg.evaluate("window.__seen.slice()")
    finally:
        context.close()
    assert any("grouping the clusters" in t or "writing" in t for t in seen), seen
