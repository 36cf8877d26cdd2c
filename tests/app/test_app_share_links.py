"""Share links, in a real headless Chromium: a link carries the whole audit (B, its split and
threshold, the benchmark, its n-gram size, the fields searched); uploaded sides cannot travel;
bad or oversized values give a clear message and are never poured into the form."""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (TIMEOUT, TRAP, dataset_box, download, new_page, open_form, share_box, status,
                             wait_audited, write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
REPO = "acme/r5share"


def norm(text: str) -> str:
    return " ".join(str(text).lower().split())


def tokens(text: str) -> list:
    """The documented tokenizer: lowercased, every character that is neither a word character nor
    whitespace (and underscores) deleted, split on whitespace."""
    return re.sub(r"[^\w\s]|_", "", text.lower()).split()


def ngram_hits(items, corpus, n: int) -> set:
    """Benchmark items (their row numbers) sharing an n-word sequence with any corpus text."""
    grams = {tuple(t[i:i + n]) for t in map(tokens, corpus) for i in range(len(t) - n + 1)}
    return {j for j, x in enumerate(items)
            if any(tuple(tokens(x)[i:i + n]) in grams for i in range(len(tokens(x)) - n + 1))}


def box(pg, elem_id: str):
    return pg.locator(f"#{elem_id} input, #{elem_id} textarea").first


def check(pg, expected: str = r"Checked|Could not"):
    pg.locator("#leak-run").click()
    expect(pg.locator("#leak-status")).to_contain_text(re.compile(expected), timeout=TIMEOUT)


def pick(pg, elem_id: str, option: str):
    pg.locator(f"#{elem_id} input").click()
    pg.locator(f"#{elem_id}").get_by_role("option", name=option, exact=True).click()
    pg.keyboard.press("Escape")


def upload(pg, elem_id: str, path: Path):
    """A file into the upload slot ``elem_id`` (the one it holds, if any, cleared first)."""
    clear = pg.locator(f"#{elem_id} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    pg.locator(f"input[type=file]:has(+ #{elem_id})").set_input_files(str(path))
    expect(pg.locator(f"#{elem_id}")).to_contain_text(path.stem)     # (the page breaks the name at its suffix)


def csv_rows(path) -> list:
    return list(csv.DictReader(open(path, encoding="utf-8", newline="")))


def query(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


@pytest.fixture(scope="module")
def shared(app_server):
    """A hub dataset of GSM8K questions (train: 400 of GSM8K train, 12 GSM8K test questions copied and
    8 with one word changed; test: the first 60 of GSM8K test), served by the fake hub."""
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    changed = []
    for r in test[12:20]:
        words = r["question"].split()
        words[len(words) // 2] = "banana"
        changed.append({"question": " ".join(words), "answer": r["answer"]})
    a_rows = [{"question": r["question"], "answer": r["answer"]} for r in train[:400] + test[:12]] + changed
    b_rows = [{"question": r["question"], "answer": r["answer"]} for r in test[:60]]
    app_server.hub.add_repo(REPO, {"data/train.jsonl": "".join(json.dumps(r) + "\n" for r in a_rows).encode(),
                                   "data/test.jsonl": "".join(json.dumps(r) + "\n" for r in b_rows).encode()})
    return {"a": a_rows, "b": b_rows, "test": test}


@pytest.fixture
def plain_page(browser, app_url):
    context, pg = new_page(browser, app_url)
    yield pg
    context.close()


@pytest.mark.slow
@pytest.mark.browser
def test_a_link_carrying_b_and_the_benchmark_reproduces_both_views(browser, app_url, shared):
    """From the round-5 review of share links and benchmark uploads."""
    a_texts, b_texts = [r["question"] for r in shared["a"]], [r["question"] for r in shared["b"]]
    keys = {norm(t) for t in a_texts}
    identical, near = sum(norm(t) in keys for t in b_texts), ground_truth.near_leak_count(a_texts, b_texts, 0.7)
    bench = [r["question"] for r in shared["test"]]            # the bundled gsm8k: GSM8K test
    contaminated = ngram_hits(bench, a_texts, 13)
    assert identical == 12 and near >= 12 and set(range(12)) <= contaminated

    ctx, pg = new_page(browser, app_url, init_script=TRAP)
    ctx2 = None
    try:
        pg.goto(app_url + "/?" + urlencode({"dataset": REPO}))
        wait_audited(pg, f"{len(a_texts):,}", REPO)
        pg.get_by_role("tab", name="Leakage", exact=True).click()
        expect(box(pg, "leak-dataset")).to_have_value(REPO)
        expect(box(pg, "leak-split")).to_have_value("test")
        pick(pg, "benchmark", "gsm8k")
        pick(pg, "contam-fields", "question")
        box(pg, "ngram").fill("13")
        check(pg)
        expect(pg.locator("#leak-status")).to_contain_text("Checked leakage and contamination")
        summary, contam = pg.locator("#leak-summary"), pg.locator("#contam-summary")
        expect(summary).to_contain_text(f"repeat an A text exactly {identical} (")
        expect(summary).to_contain_text(f"are near duplicates of an A text (Jaccard ≥ 0.7) {near} (")
        expect(contam).to_contain_text(f"share an n-gram with A (contaminated) {len(contaminated)} (")
        expect(contam).to_contain_text("shares a 13-token sequence with A")
        leak_csv = Path(download(pg, "dl-evidence")).read_text(encoding="utf-8")
        contam_csv = Path(download(pg, "dl-contam")).read_text(encoding="utf-8")
        assert {int(r["benchmark_row"]) for r in csv_rows(download(pg, "dl-contam"))} == contaminated
        # The page's threshold moves on after the check: B stays compared at 0.7, and the link says so.
        open_form(pg)
        number = pg.locator("#threshold input[type=number]")
        number.fill("0.8")
        number.press("Enter")
        expect(share_box(pg)).to_have_value(re.compile(r"threshold=0\.8"))
        link = share_box(pg).input_value()
        q = query(link)
        assert {k: q.get(k) for k in ("dataset", "threshold", "b", "b_split", "b_threshold", "bench", "ngram",
                                      "cfields", "tab")} == {
            "dataset": REPO, "threshold": "0.8", "b": REPO, "b_split": "test", "b_threshold": "0.7",
            "bench": "gsm8k", "ngram": "13", "cfields": "question", "tab": "leakage"}
        assert "token" not in link
        before = {"leak": summary.inner_text(), "contam": contam.inner_text(),
                  "heads": pg.locator("#contam-evidence .ev-head").all_inner_texts()}

        # A collaborator's fresh page (another browser context: nothing shared but the link)
        ctx2, pg2 = new_page(browser, app_url, init_script=TRAP)
        pg2.goto(link)
        wait_audited(pg2, f"{len(a_texts):,}", REPO)
        expect(pg2.locator("#leak-status")).to_contain_text("Checked leakage and contamination", timeout=TIMEOUT)
        expect(pg2.locator("#contam-summary")).to_contain_text(
            f"share an n-gram with A (contaminated) {len(contaminated)} (")
        assert pg2.locator("#leak-summary").inner_text() == before["leak"]
        assert pg2.locator("#contam-summary").inner_text() == before["contam"]
        assert pg2.locator("#contam-evidence .ev-head").all_inner_texts() == before["heads"]
        expect(pg2.locator("#leak-summary")).to_contain_text(f"(Jaccard ≥ 0.7) {near} (")
        assert Path(download(pg2, "dl-evidence")).read_text(encoding="utf-8") == leak_csv
        assert Path(download(pg2, "dl-contam")).read_text(encoding="utf-8") == contam_csv
        # ... with the form as the curator left it, and the same link
        expect(box(pg2, "leak-dataset")).to_have_value(REPO)
        expect(box(pg2, "ngram")).to_have_value("13")
        expect(pg2.locator("#benchmark input")).to_have_value("gsm8k")
        open_form(pg2)
        expect(pg2.locator("#threshold input[type=number]")).to_have_value("0.8")
        assert query(share_box(pg2).input_value()) == q
        assert pg.evaluate("window.__xss_hits.slice()") == [] and pg2.evaluate("window.__xss_hits.slice()") == []
    finally:
        ctx.close()
        if ctx2 is not None:
            ctx2.close()


@pytest.mark.slow
@pytest.mark.browser
def test_a_link_carries_uploaded_sides_and_checks_nothing_in_their_place_once_gone(browser, app_url, shared,
                                                                                  tmp_path):
    """Uploaded files travel in a link by their id in the upload store (issue 29): a colleague's page
    checks the same B and benchmark files; a link whose id this server does not keep says so and
    checks nothing in their place (A's own test split was B's default)."""
    b_rows = shared["b"][:30]
    b_path = write_jsonl(tmp_path / "my_b.jsonl", b_rows)
    he = real_data.rows("humaneval/HumanEval.jsonl")[:10]
    bench_path = write_jsonl(tmp_path / "my bench.jsonl", [{"prompt": r["prompt"]} for r in he])
    ctx, pg = new_page(browser, app_url, init_script=TRAP)
    ctx2 = None
    try:
        pg.goto(app_url + "/?" + urlencode({"dataset": REPO}))
        wait_audited(pg, f"{len(shared['a']):,}", REPO)
        pg.get_by_role("tab", name="Leakage", exact=True).click()
        upload(pg, "leak-upload", b_path)
        expect(box(pg, "leak-dataset")).to_have_value("upload:my_b.jsonl")
        upload(pg, "bench-upload", bench_path)
        check(pg)
        expect(pg.locator("#leak-status")).to_contain_text("Checked leakage and contamination")
        keys = {norm(r["question"]) for r in shared["a"]}
        expect(pg.locator("#leak-summary")).to_contain_text(
            f"repeat an A text exactly {sum(norm(r['question']) in keys for r in b_rows)} (")
        link = share_box(pg).input_value()
        q = query(link)
        assert q["b"] == "upload:my_b.jsonl" and q["bench"] == "upload:my bench.jsonl"
        assert re.fullmatch(r"[0-9a-f]{32}", q["b_upload"]) and re.fullmatch(r"[0-9a-f]{32}", q["bench_upload"])
        assert "b_split" not in q and "gradio" not in link and str(tmp_path) not in link
        before = {"leak": pg.locator("#leak-summary").inner_text(), "contam": pg.locator("#contam-summary").inner_text()}

        ctx2, pg2 = new_page(browser, app_url, init_script=TRAP)
        pg2.goto(link)
        wait_audited(pg2, f"{len(shared['a']):,}", REPO)
        expect(pg2.locator("#leak-status")).to_contain_text("Checked leakage and contamination", timeout=TIMEOUT)
        assert pg2.locator("#leak-summary").inner_text() == before["leak"]
        assert pg2.locator("#contam-summary").inner_text() == before["contam"]
        expect(box(pg2, "leak-dataset")).to_have_value("upload:my_b.jsonl")
        assert query(share_box(pg2).input_value()) == q

        # An id this server does not keep (changed by hand): said, and nothing checked in its place.
        gone = link.replace(q["b_upload"], "0" * 32).replace(q["bench_upload"], "f" * 32)
        pg2.goto(gone)
        wait_audited(pg2, f"{len(shared['a']):,}", REPO)
        expect(pg2.locator("#status")).to_contain_text(
            "This link's B and contamination benchmark were uploaded files that this server no longer keeps")
        status = pg2.locator("#leak-status")
        expect(status).to_contain_text("This link's B was an uploaded file (my_b.jsonl) that cannot be opened")
        expect(status).to_contain_text("not on this server")
        expect(pg2.locator("#leak-summary")).to_have_text("")
        expect(pg2.locator("#contam-summary")).to_have_text("")
        expect(box(pg2, "leak-dataset")).to_have_value("")
        assert "b_upload" not in query(share_box(pg2).input_value())
    finally:
        ctx.close()
        if ctx2 is not None:
            ctx2.close()


@pytest.mark.browser
@pytest.mark.parametrize("params, message", [
    ({"b": '<img src=x onerror="window.__xss=1">', "bench": "gsm8k"}, "is not a Hugging Face dataset id"),
    ({"bench": "gsm8k", "ngram": "0"}, "N-gram size '0' is not a whole number from 1 to 64"),
    ({"bench": "<b>nope</b>"}, "is not a bundled benchmark"),
    ({"b": "example:gsm8k", "b_threshold": "7"}, "Threshold 7 is outside"),
    ({"b": "acme/gated"}, "acme/gated"),
])
@pytest.mark.sweep
def test_bad_link_values_give_a_clear_message_and_nothing_else(page, app_url, params, message):
    """From the round-5 review of share links and benchmark uploads."""
    page.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "zzz_unknown": "1", **params}))
    wait_audited(page, "7,473", "example:gsm8k")
    page.get_by_role("tab", name="Leakage", exact=True).click()
    status = page.locator("#leak-status")
    expect(status).to_contain_text("Could not check", timeout=TIMEOUT)
    expect(status).to_contain_text(message)
    expect(page.locator("#leak-summary")).to_have_text("")
    expect(page.locator("#contam-summary")).to_have_text("")
    assert page.locator("#leak-status img, #leak-status b").count() == 0     # text, never markup
    assert page.evaluate("window.__xss_hits.slice()") == []
    assert "zzz_unknown" not in share_box(page).input_value()


@pytest.mark.browser
def test_share_link_with_an_oversized_value_is_refused_and_never_poured_into_the_form(plain_page, app_url):
    """From a curator's review of the Space."""
    plain_page.goto(app_url + "/?" + urlencode({"dataset": "acme/" + "a" * 5000, "threshold": "0.5"}))
    expect(status(plain_page)).to_contain_text("over 1,000 characters long", timeout=30_000)
    assert len(status(plain_page).inner_text()) < 400          # the value is not quoted back
    assert dataset_box(plain_page).input_value() == ""
    # A long id typed in the box (no Hub id is this long) is refused before any Hub call, quoted short.
    box = dataset_box(plain_page)
    box.fill("b" * 300)
    plain_page.locator("#run").click()
    expect(status(plain_page)).to_contain_text("is not a Hugging Face dataset id")
    assert len(status(plain_page).inner_text()) < 400
    # ... and the page stays usable.
    humaneval = len(real_data.rows("humaneval/HumanEval.jsonl"))
    box.fill("example:humaneval")
    plain_page.locator("#run").click()
    wait_audited(plain_page, f"{humaneval:,}", "example:humaneval")
