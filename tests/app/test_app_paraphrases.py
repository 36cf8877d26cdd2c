"""The leakage tab's Paraphrases view (ui.handlers.paraphrases): the semantic pass of B against the
audited A, on the vendored rephrase slices (tests/data/semantic: MMLU sociology questions and their
LLM rephrasings, row i rephrases row i). The view's flagged pairs, histogram and CSV are checked
against the library called directly on the texts read from the files (not through the app), and
against the files themselves; then one journey in a real headless Chromium."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from auditor import semantic  # noqa: E402
from ui import evidence, handlers, state  # noqa: E402
import real_data  # noqa: E402

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.skipif(not semantic.available(), reason="the semantic extra is not installed")

DATA = Path(__file__).resolve().parents[1] / "data" / "semantic"
texts = real_data.semantic_texts
BASE = "http://space.example/"
XSS = '<img src=x onerror="window.__xss=1"> '


def read_csv(path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [{"benchmark_row": int(r["benchmark_row"]), "corpus_row": int(r["corpus_row"]),
                 "score": float(r["score"]), "benchmark_text": r["benchmark_text"], "corpus_text": r["corpus_text"]}
                for r in csv.DictReader(fh)]


def shown_pairs(html_: str) -> list[tuple[int, int]]:
    return [(int(b), int(c)) for b, c in re.findall(r"benchmark row <b>(\d+)</b> ↔ A row <b>(\d+)</b>", html_)]


@pytest.fixture(scope="module")
def sets():
    return texts("sociology_questions.jsonl.gz", "question"), texts("sociology_rephrased.jsonl.gz", "text")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The two files as a visitor uploads them (copies: Gradio hands the app its own temp files)."""
    folder = tmp_path_factory.mktemp("uploads")
    for name in ("sociology_questions.jsonl.gz", "sociology_rephrased.jsonl.gz"):
        shutil.copy(DATA / name, folder / name)
    return folder / "sociology_questions.jsonl.gz", folder / "sociology_rephrased.jsonl.gz"


@pytest.fixture(scope="module")
def audited(files):
    """A = the rephrases (the training side), audited as the page does it."""
    _, rephrased = files
    view = handlers.run("upload:sociology_rephrased.jsonl.gz", "", "", "", "", "", [], 0.7, None, str(rephrased),
                        None, "upload:sociology_rephrased.jsonl.gz", BASE)
    assert view["state"] is not None, view["status"]
    return view["state"]


@pytest.fixture(scope="module")
def found(audited, files):
    """The view run with B = the original questions (uploaded in B's slot), at the default threshold."""
    questions, _ = files
    stages = []
    view = handlers.paraphrases(audited, "", "", "", "", str(questions), False, "", semantic.DEFAULT_THRESHOLD, "",
                                progress=lambda f, s: stages.append((f, s)))
    assert view["para_status"]["elem_classes"] == ["ok"], view["para_status"]
    return view, stages


@pytest.fixture(scope="module")
def library(sets):
    """The library on the same texts, read from the files here."""
    questions, rephrases = sets
    return semantic.semantic_search(questions, rephrases, k=state.SEMANTIC_K, candidates=state.SEMANTIC_CANDIDATES)


def test_flagged_pairs_equal_the_librarys_with_both_texts(found, library, sets):
    view, stages = found
    questions, rephrases = sets
    t = semantic.DEFAULT_THRESHOLD
    expected = library.flagged(t)
    assert len(expected) >= 40                    # the rephrases are found (the rest of the check is equality)
    rows = read_csv(view["dl_para"]["value"])     # the CSV parses back to the flagged rows
    keys = ("benchmark_row", "corpus_row", "score")
    assert [{k: r[k] for k in keys} for r in rows] == [{k: it[k] for k in keys} for it in expected]
    for r in rows:                                # both texts, as they are in the files
        assert r["benchmark_text"] == questions[r["benchmark_row"]]
        assert r["corpus_text"] == rephrases[r["corpus_row"]]
    page = evidence.PAGE                          # drawn side by side, best first, a page at a time
    assert shown_pairs(view["para_evidence"]) == [(it["benchmark_row"], it["corpus_row"]) for it in expected][:page]
    assert f"Showing 1–{min(page, len(expected))} of {len(expected)} flagged benchmark items" in view["para_evidence"]
    assert f"**{len(expected)} of {len(questions)} benchmark items**" in view["para_md"]
    assert "evidence for review, not verdicts" in view["para_md"]
    assert stages and stages[-1][0] == 1.0        # progress was reported while embedding


def test_the_flagged_list_pages_through_every_pair_and_searches_both_texts(found, library, sets):
    """Issue 29 (the Space as people meet it): the paraphrase list showed its first 50 items and no
    more; it is paged and searchable like the other evidence lists, and nothing is lost between pages."""
    view, _ = found
    questions, rephrases = sets
    expected = [(it["benchmark_row"], it["corpus_row"]) for it in library.flagged(semantic.DEFAULT_THRESHOLD)]
    assert len(expected) > evidence.PAGE                    # more than one page, or paging proves nothing
    pst, seen, page = view["para_state"], [], 0
    while True:
        moved = handlers.paraphrase_list_event(pst, "page", page)
        pst = moved["para_state"]
        seen += shown_pairs(moved["para_evidence"])
        if "next ›" not in moved["para_evidence"]:
            break
        page += 1
    assert seen == expected and page == -(-len(expected) // evidence.PAGE) - 1
    # Beyond the last page: the last page again, never an empty list.
    assert shown_pairs(handlers.paraphrase_list_event(pst, "page", 10 ** 6)["para_evidence"]) == \
        expected[page * evidence.PAGE:]
    # Search: a word of one flagged item's rephrase (A's side) finds exactly the pairs whose texts hold it.
    b_row, c_row = expected[-1]
    word = max(re.findall(r"[A-Za-z]{6,}", rephrases[c_row]), key=len).lower()
    hits = [(b, c) for b, c in expected if word in questions[b].lower() or word in rephrases[c].lower()]
    searched = handlers.paraphrase_list_event(view["para_state"], search=word.upper())
    assert (b_row, c_row) in hits
    assert shown_pairs(searched["para_evidence"]) == hits[:evidence.PAGE]
    assert f"of {len(hits)} flagged benchmark items" in searched["para_evidence"]
    assert f"{len(expected)} in all" in searched["para_evidence"]
    nothing = handlers.paraphrase_list_event(view["para_state"], search="zzqqxxnotaword")
    assert shown_pairs(nothing["para_evidence"]) == [] and "No flagged benchmark items" in nothing["para_evidence"]
    # "show all" clears the search (the box too); a new threshold starts on the first page.
    cleared = handlers.paraphrase_list_event(searched["para_state"], "kind", "")
    assert cleared["para_search"] == "" and shown_pairs(cleared["para_evidence"]) == expected[:evidence.PAGE]
    later = handlers.paraphrase_list_event(cleared["para_state"], "page", 1)
    assert handlers.paraphrase_threshold(later["para_state"], 0.8)["para_state"]["page"] == 0
    assert handlers.paraphrase_list_event(None, "page", 1) == {}
    assert handlers.paraphrase_list_event(pst, "page", "x") == {}


def test_histogram_counts_are_the_score_distribution(found, library, sets):
    view, _ = found
    fig = view["para_plot"]["value"]
    bars = fig.data[0]
    dist = library.distribution()
    assert list(bars.y) == dist["counts"]
    best = [m for m in library.margin if m is not None]
    assert list(bars.y) == np.histogram(np.clip(best, 0, 1), bins=np.linspace(0, 1, 21))[0].tolist()
    assert sum(bars.y) == sum(1 for q in sets[0] if q.strip())      # every item with text, once
    line, = [s for s in fig.layout.shapes if s.type == "line"]
    assert line.x0 == line.x1 == semantic.DEFAULT_THRESHOLD


def test_the_slider_refilters_the_cached_result_without_embedding(found, library, monkeypatch):
    view, _ = found

    def no_embedding(*_, **__):
        raise AssertionError("the threshold slider embedded again")

    monkeypatch.setattr(semantic, "semantic_search", no_embedding)
    monkeypatch.setattr(semantic, "load_model", no_embedding)
    before = len(library.flagged())
    for t in (0.8, 0.65):
        moved = handlers.paraphrase_threshold(view["para_state"], t)
        expected = library.flagged(t)
        assert len(expected) != before
        assert [{k: r[k] for k in ("benchmark_row", "corpus_row", "score")}
                for r in read_csv(moved["dl_para"]["value"])] == [{k: it[k] for k in ("benchmark_row", "corpus_row",
                                                                                      "score")} for it in expected]
        assert f"**{len(expected)} of 60 benchmark items** ({100 * len(expected) / 60:.2f}%) have an A record at " \
               f"margin score ≥ {t:g}" in moved["para_md"]
        line, = [s for s in moved["para_plot"]["value"].layout.shapes if s.type == "line"]
        assert line.x0 == t
    bad = handlers.paraphrase_threshold(view["para_state"], "nan")
    assert bad["para_status"]["elem_classes"] == ["error"]


def test_the_run_is_capped_with_a_notice(audited, files, sets, monkeypatch):
    questions_file, _ = files
    questions, rephrases = sets
    monkeypatch.setattr(state, "SEMANTIC_ITEMS", 25)
    view = handlers.paraphrases(audited, "", "", "", "", str(questions_file), False, "", 0.6, "")
    assert "Only the first 25 benchmark items were checked" in view["para_md"]
    expected = semantic.semantic_search(questions[:25], rephrases, k=state.SEMANTIC_K,
                                        candidates=state.SEMANTIC_CANDIDATES).flagged(0.6)
    assert [{k: r[k] for k in ("benchmark_row", "corpus_row", "score")}
            for r in read_csv(view["dl_para"]["value"])] == [{k: it[k] for k in ("benchmark_row", "corpus_row",
                                                                                  "score")} for it in expected]


def test_errors_are_messages(audited, files):
    _, rephrased = files
    none = handlers.paraphrases(audited, "", "", "", "", None, False, "", 0.67, "")
    assert "No benchmark side chosen" in none["para_status"]["value"] and none["dl_para"]["value"] is None
    same = handlers.paraphrases(audited, "", "", "", "", str(rephrased), False, "", 0.67, "")
    assert "same data as A" in same["para_status"]["value"]
    no_audit = handlers.paraphrases(None, "", "", "", "", str(rephrased), False, "", 0.67, "")
    assert "Run an audit first" in no_audit["para_status"]["value"]
    assert handlers.paraphrase_threshold(None, 0.5) == {}


# --------------------------------------------------------------------------- in a browser

@pytest.mark.slow
@pytest.mark.browser
def test_paraphrases_journey_in_a_browser(browser, app_url, tmp_path, sets):
    from playwright.sync_api import expect

    from browser_support import TIMEOUT, new_page, open_app, open_tab, status, wait_audited
    questions, rephrases = sets
    a_rows = [{"text": t} for t in rephrases]
    a_rows[5] = {"text": XSS + rephrases[5]}                         # markup in the data, still a rephrase
    a = tmp_path / "rephrased.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in a_rows), encoding="utf-8")
    b = tmp_path / "questions.jsonl"
    b.write_text("".join(json.dumps({"question": q}) + "\n" for q in questions), encoding="utf-8")
    trap = ("Object.defineProperty(window, '__xss_hits', {value: [], writable: false});"
            "Object.defineProperty(window, '__xss', {get() { return undefined; }, "
            "set(v) { window.__xss_hits.push(v); }});")
    context, pg = new_page(browser, app_url, init_script=trap)
    try:
        open_app(pg, app_url)
        pg.locator("input[type=file]:has(+ #upload)").set_input_files(str(a))
        expect(status(pg)).to_contain_text("Fields of")
        pg.locator("#run").click()
        wait_audited(pg, "60", "rephrased.jsonl")
        open_tab(pg, "Leakage")
        pg.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(b))
        expect(pg.locator("#leak-upload")).to_contain_text(b.stem)     # kept: a click before runs without it
        pg.locator("#paraphrases").get_by_text("Paraphrases (semantic search)").click()
        pg.locator("#para-run").click()
        expect(pg.locator("#para-status")).to_contain_text("Checked 60 benchmark items", timeout=TIMEOUT * 3)
        summary = pg.locator("#para-summary")
        expect(summary).to_contain_text("evidence for review, not verdicts")
        first = re.search(r"(\d+) of 60 benchmark items", summary.inner_text())
        assert first and int(first.group(1)) >= 1
        evidence = pg.locator("#para-evidence")
        expect(evidence.locator(".evidence").first).to_be_visible()
        recs = evidence.locator(".evidence").first.locator(".rec")
        head = evidence.locator(".ev-head").first.inner_text()
        found = re.search(r"benchmark row\s*(\d+)\s*↔\s*A row\s*(\d+)", head)
        assert found, head
        brow, crow = map(int, found.groups())
        expect(recs.nth(0)).to_contain_text(questions[brow][:40])      # both texts side by side
        expect(recs.nth(1)).to_contain_text(rephrases[crow][:40])
        expect(pg.locator("#para-plot .js-plotly-plot")).to_be_visible()
        # The list is paged: the next page shows other pairs, and a search narrows it.
        flagged_n = int(first.group(1))
        expect(evidence.locator(".pager").first).to_contain_text(
            f"Showing 1–{min(10, flagged_n)} of {flagged_n} flagged benchmark items")
        if flagged_n > 10:
            evidence.locator(".pager").first.get_by_role("button", name="next ›").click()
            expect(evidence.locator(".pager").first).to_contain_text(f"Showing 11–{min(20, flagged_n)} of")
            search = pg.locator("#para-search textarea, #para-search input").first
            search.fill(max(re.findall(r"[A-Za-z]{6,}", rephrases[crow]), key=len))
            search.press("Enter")
            expect(evidence.locator(".pager").first).to_contain_text("containing")
            evidence.locator(".pager").first.get_by_role("button", name="show all").click()
            expect(evidence.locator(".pager").first).to_contain_text(f"Showing 1–10 of {flagged_n} flagged")
            expect(search).to_have_value("")
        # The planted markup's record (a rephrase, so flagged), found by searching for the markup.
        search = pg.locator("#para-search textarea, #para-search input").first
        search.fill("onerror")
        search.press("Enter")
        expect(evidence.locator(".pager").first).to_contain_text("Showing 1–1 of 1 flagged")
        expect(evidence).to_contain_text(XSS.strip())                  # the markup is shown as text
        assert pg.locator("#para-evidence img").count() == 0
        # The slider re-filters: a higher threshold flags fewer items.
        box = pg.locator("#para-threshold input[type=number]")
        box.fill("0.9")
        box.press("Enter")
        expect(summary).to_contain_text("at margin score ≥ 0.9")
        second = int(re.search(r"(\d+) of 60 benchmark items", summary.inner_text()).group(1))
        assert second < int(first.group(1))
        # A value out of range is refused, and the box goes back to the threshold the views show.
        box.fill("7")
        box.press("Enter")
        expect(pg.locator(".toast-body").last).to_contain_text("Value 7 is")
        expect(box).to_have_value("0.9")
        expect(summary).to_contain_text("at margin score ≥ 0.9")
        time.sleep(0.3)
        assert pg.evaluate("window.__xss_hits.slice()") == []
    finally:
        context.close()

