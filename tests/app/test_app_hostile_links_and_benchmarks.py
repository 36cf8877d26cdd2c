"""Hostile input to the leakage and contamination tabs, in a real headless Chromium: share-link
values of the leakage tab (B, the benchmark, the n-gram size, the threshold B was compared at)
written by a hostile visitor, benchmark files uploaded by a careless curator (empty, NUL bytes, a
gzip bomb, a 200 MB line, numbers only, a copy of the dataset itself) and the text box naming
several fields. Each ends in a clear, specific message in the page (never markup, never a local
path read, never the server's own HF token) and the page stays usable. Expected figures come from
the data here (plain Python), never from the app."""
from __future__ import annotations

import csv
import gzip
import json
import re
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlparse

import pytest
from playwright.sync_api import expect

import real_data
from app_server import serve
from browser_support import (TIMEOUT, TRAP, download, new_page, share_box, upload_and_run, wait_audited,
                             write_jsonl)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser
SERVER_TOKEN = "hf_server_own_secret_never_lent"
LINE_MIB = 384 // 16          # one line's limit: 1/16 of the Space's reading budget (app.py: 384 MiB)
DONE = re.compile(r"^\s*(Checked|Could not|No B|A has|This link)")


@pytest.fixture(scope="module")
def app_server():
    """This module's own app, holding an HF_TOKEN of the server's (which no visitor may borrow)."""
    yield from serve({"HF_TOKEN": SERVER_TOKEN})


@pytest.fixture(scope="module")
def app_url(app_server):
    return app_server.url


def box(pg, elem_id: str):
    return pg.locator(f"#{elem_id} input, #{elem_id} textarea").first


def leak_tab(pg):
    pg.get_by_role("tab", name="Leakage", exact=True).click()


def check(pg):
    """Press Check leakage; until the status is a final message (not the progress line)."""
    pg.locator("#leak-run").click()
    time.sleep(0.3)
    expect(pg.locator("#leak-status")).to_contain_text(DONE, timeout=TIMEOUT)
    return pg.locator("#leak-status").inner_text()


def upload(pg, elem_id: str, path: Path):
    clear = pg.locator(f"#{elem_id} button[aria-label='Clear']")
    if clear.count():
        clear.click()
    pg.locator(f"input[type=file]:has(+ #{elem_id})").set_input_files(str(path))
    expect(pg.locator(f"#{elem_id}")).to_contain_text(path.stem[-8:])


def no_markup(pg, elem_id: str):
    assert pg.locator(f"#{elem_id} img, #{elem_id} a, #{elem_id} script, #{elem_id} iframe").count() == 0


def query(url: str) -> dict:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items()}


def tokens(text: str) -> list:
    return re.sub(r"[^\w\s]|_", "", text.lower()).split()


def ngram_pairs(items, corpus, n: int) -> set:
    """(benchmark row, corpus row) pairs sharing an n-word sequence (the documented tokenizer)."""
    index: dict = {}
    for c, t in enumerate(map(tokens, corpus)):
        for i in range(len(t) - n + 1):
            index.setdefault(tuple(t[i:i + n]), set()).add(c)
    out = set()
    for j, t in enumerate(map(tokens, items)):
        for i in range(len(t) - n + 1):
            out |= {(j, c) for c in index.get(tuple(t[i:i + n]), ())}
    return out


class PeakRss:
    """The peak resident memory (MiB) of a process while the block runs, polled from /proc."""
    def __init__(self, pid: int):
        self.pid, self.peak, self.base, self._stop = pid, 0, 0, False

    def now(self) -> int:
        for line in open(f"/proc/{self.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
        return 0

    def _poll(self):
        while not self._stop:
            self.peak = max(self.peak, self.now())
            time.sleep(0.05)

    def __enter__(self):
        self.base = self.peak = self.now()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop = True
        self._thread.join()


LINK_CASES = [
    # (link values, what the leakage status must say, whether a check ran: "none" / "error" / "note")
    ({"b": "/etc"}, "'/etc' is not a Hugging Face dataset id", "error"),
    ({"b": "../"}, "'../' is not a Hugging Face dataset id", "error"),
    ({"b": "javascript:alert(1)"}, "'javascript:alert(1)' is not a Hugging Face dataset id", "error"),
    # (an uploaded side travels by its id in the upload store: a name alone opens nothing)
    ({"b": "upload:../../etc/passwd"}, "This link's B was an uploaded file (../../etc/passwd) that cannot be "
     "opened: This link names an uploaded file, but no upload id this server makes. So it was not checked",
     "note"),
    ({"bench": "upload:../../etc/passwd"}, "This link's contamination benchmark was an uploaded file "
     "(../../etc/passwd) that cannot be opened", "note"),
    ({"bench": "/etc/passwd"}, "'/etc/passwd' is not a bundled benchmark", "error"),
    ({"bench": "gsm8k", "ngram": "1e3"}, "N-gram size '1e3' is not a whole number from 1 to 64", "error"),
    ({"bench": "gsm8k", "ngram": "-1"}, "N-gram size '-1' is not a whole number from 1 to 64", "error"),
    ({"bench": "gsm8k", "ngram": "NaN"}, "N-gram size 'NaN' is not a whole number from 1 to 64", "error"),
    # a superscript digit: str.isdigit() says yes, int() fails ("Something went wrong (ValueError)")
    ({"bench": "gsm8k", "ngram": "\u00b2"}, "N-gram size '\u00b2' is not a whole number from 1 to 64", "error"),
    ({"b": "example:humaneval", "b_threshold": "inf"}, "Threshold inf is outside (0, 1]", "error"),
    ({"b": "acme/tiny\u202eevil\u0000"}, "is not a Hugging Face dataset id", "error"),
    ({"bench": "gsm8k\u200b"}, "'gsm8k\\u200b' is not a bundled benchmark", "error"),
    ({"b": "example:humaneval", "b_text": '<img src=x onerror="window.__xss=2">'},
     "The text field '<img src=x onerror=\"window.__xss=2\">' is in no record", "error"),
    ({"b": 'upload:<img src=x onerror="window.__xss=4">', "bench": "upload:[l](javascript:alert(1))"},
     'This link\'s B was an uploaded file (<img src=x onerror="window.__xss=4">) that cannot be opened', "note"),
]


def zero_bomb(path: Path, gib: int = 4) -> Path:
    """A gzip of ``gib`` GiB of '0' on one line (concatenated gzip members: a few MB on disk)."""
    member = gzip.compress(b"0" * (1 << 24), compresslevel=9)
    with open(path, "wb") as fh:
        fh.write(gzip.compress(b'{"question": "'))
        for _ in range(gib * 64):
            fh.write(member)
    return path


def lines_bomb(path: Path) -> Path:
    """A gzip of ~1.3 GB of short JSON lines (10 million items)."""
    member = gzip.compress(b'{"question": "what is two and two apples"}\n' * 100_000, compresslevel=9)
    with open(path, "wb") as fh:
        for _ in range(300):
            fh.write(member)
    return path


def wide(path: Path) -> Path:
    """A gzip (~60 KB) of 6,000 items of 4,000 characters of words: 23 MiB of benchmark text."""
    member = gzip.compress(('{"question": "' + "apple pear plum " * 250 + '"}\n').encode() * 1000)
    path.write_bytes(member * 6)
    return path


@pytest.mark.sweep
def test_hostile_link_values_say_what_is_wrong_and_the_page_stays_usable(browser, app_url, app_server):
    """From the round-5 hostile review of the Space."""
    ctx, pg = new_page(browser, app_url, init_script=TRAP)
    try:
        for params, message, kind in LINK_CASES:
            pg.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", **params}))
            wait_audited(pg, "7,473", "example:gsm8k")
            leak_tab(pg)
            status = pg.locator("#leak-status")
            expect(status).to_contain_text(message, timeout=TIMEOUT)
            if kind == "error":
                expect(status).to_contain_text("Could not check")
            expect(pg.locator("#leak-summary")).to_have_text("")
            expect(pg.locator("#contam-summary")).to_have_text("")
            no_markup(pg, "leak-status")
            no_markup(pg, "status")
            link = query(share_box(pg).input_value())
            # a failed value is not carried on; an uploaded side stays named (and nothing else)
            assert {k for k in link if k in ("b", "bench", "ngram", "b_threshold", "b_text")} <= (
                {k for k, v in params.items() if v.startswith("upload:")} if kind == "note" else set()), link
        # Repeated keys: which value was meant is not known, so the link is refused, naming the key
        # (tests/app/test_a_link_giving_a_value_twice_is_refused.py has the other keys).
        pg.goto(app_url + "/?dataset=example:gsm8k&b=example:humaneval&b=%2Fetc")
        expect(pg.locator("#status")).to_contain_text("This link gives b twice ('example:humaneval', '/etc')")
        no_markup(pg, "status")
        # A value over the cap is refused whole, not quoted back.
        pg.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "bench": "g" * 5000}))
        expect(pg.locator("#status")).to_contain_text("This link's bench is over 1,000 characters long")
        assert "g" * 200 not in pg.locator("#status").inner_text()
        # The page stays usable: a bundled benchmark checked by hand after a hostile link.
        pg.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "bench": "upload:../../etc/passwd"}))
        wait_audited(pg, "7,473", "example:gsm8k")
        leak_tab(pg)
        expect(pg.locator("#leak-status")).to_contain_text("This link's contamination benchmark was an uploaded")
        pg.locator("#benchmark input").click()
        pg.locator("#benchmark").get_by_role("option", name="gsm8k", exact=True).click()
        pg.keyboard.press("Escape")
        assert "Checked contamination." in check(pg)
        expect(pg.locator("#contam-summary")).to_contain_text("(main / test): 1,319 items")
        assert pg.evaluate("window.__xss_hits.slice()") == []
    finally:
        ctx.close()
    # Never a local path read, never the server's token sent for a visitor's link.
    assert not any(SERVER_TOKEN in (auth or "") for _, _, auth in app_server.hub.authorizations)


@pytest.mark.slow
def test_a_gated_b_in_a_link_is_never_read_with_the_servers_token(browser, app_url, app_server):
    """From the round-5 hostile review of the Space."""
    ctx, pg = new_page(browser, app_url, init_script=TRAP)
    try:
        seen = len(app_server.hub.authorizations)
        pg.goto(app_url + "/?" + urlencode({"dataset": "example:gsm8k", "b": "acme/gated", "b_split": "test"}))
        wait_audited(pg, "7,473", "example:gsm8k")
        leak_tab(pg)
        expect(pg.locator("#leak-status")).to_contain_text("acme/gated is a gated dataset", timeout=TIMEOUT)
        expect(pg.locator("#leak-summary")).to_have_text("")
        asked = [auth for _, path, auth in app_server.hub.authorizations[seen:] if "acme/gated" in path]
        assert asked and all(auth is None for auth in asked), asked
    finally:
        ctx.close()


@pytest.mark.sweep
def test_hostile_benchmark_files_are_refused_clearly_within_the_budget(browser, app_url, app_server, tmp_path):
    """From the round-5 hostile review of the Space."""
    big_line = tmp_path / "bigline.jsonl"
    with open(big_line, "wb") as fh:
        fh.write(b'{"question": "')
        chunk = b"word " * (1 << 20)
        for _ in range(40):                  # a 200 MiB line
            fh.write(chunk)
        fh.write(b'"}\n{"question": "a second item"}\n')
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "zeros.csv").write_bytes(b"question,answer\nwhat is\x00 two plus two,4\n")
    write_jsonl(tmp_path / "blank.jsonl", [{"question": "  "}] * 20)
    cases = [
        (tmp_path / "empty.jsonl", "empty.jsonl: no records found"),
        (tmp_path / "zeros.csv", "byte 23 is a NUL byte: the file is binary or UTF-16/UTF-32 text, not UTF-8"),
        (tmp_path / "blank.jsonl", "blank.jsonl: the text field 'question' is blank in every item"),
        (big_line, f"bigline.jsonl, line 1: longer than {LINE_MIB} MiB, the limit for one line"),
        (zero_bomb(tmp_path / "bomb.jsonl.gz"), f"bomb.jsonl.gz, line 1: longer than {LINE_MIB} MiB, the limit for one line"),
        (lines_bomb(tmp_path / "many.jsonl.gz"), "The benchmark file 'many.jsonl.gz' holds more than 200,000 items"),
        # within the reading budget, but the n-gram index of 23 MiB of words is ~30x that (728 MiB took 21 GB)
        (wide(tmp_path / "wide.jsonl.gz"), "wide.jsonl.gz: the benchmark's texts total 23 MiB, more than the 16 MiB "
         "this page scans"),
    ]
    ctx, pg = new_page(browser, app_url, init_script=TRAP)
    try:
        pg.goto(app_url + "/?dataset=example:gsm8k")
        wait_audited(pg, "7,473", "example:gsm8k")
        leak_tab(pg)
        for path, message in cases:
            upload(pg, "bench-upload", path)
            with PeakRss(app_server.proc.pid) as rss:
                text = check(pg)
            assert "Could not check" in text and message in text, (path.name, text)
            assert "Traceback" not in text
            expect(pg.locator("#contam-summary")).to_have_text("")
            # 4 GiB behind the bomb, 200 MiB on one line: the Space's reading budget (384 MiB, a line 24 MiB) holds
            assert rss.peak - rss.base < 400, (path.name, rss.base, rss.peak)
        # the page stays usable: a good benchmark file right after
        items = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:5]]
        good = write_jsonl(tmp_path / "good.jsonl", [{"question": q} for q in items])
        upload(pg, "bench-upload", good)
        assert re.search(r"Checked (leakage and )?contamination\.", check(pg))
        expect(pg.locator("#contam-summary")).to_contain_text("Benchmark good.jsonl: 5 items")
        expect(pg.locator("#contam-summary")).to_contain_text("share an n-gram with A (contaminated) 5 (")
        assert pg.evaluate("window.__xss_hits.slice()") == []
    finally:
        ctx.close()


@pytest.mark.slow
def test_a_benchmark_of_numbers_or_tiny_items_is_not_passed_as_clean(page, app_url, tmp_path):
    """From the round-5 hostile review of the Space: Items with no words to compare (numbers, one token):
    none can be checked, and the page must
    not let that pass for a clean benchmark."""
    page.goto(app_url + "/?dataset=example:gsm8k")
    wait_audited(page, "7,473", "example:gsm8k")
    leak_tab(page)
    numbers = write_jsonl(tmp_path / "numbers.jsonl", [{"question": i * 7} for i in range(20)])
    upload(page, "bench-upload", numbers)
    box(page, "bench-text").fill("question")
    text = check(page)
    contam = page.locator("#contam-summary")
    expect(contam).to_contain_text("too short to check (not clean)\t20")
    assert "none of the benchmark's 20 items could be checked: each has fewer than" in text, text
    tiny = write_jsonl(tmp_path / "tiny.jsonl", [{"question": f"q{i}"} for i in range(100_000)])
    upload(page, "bench-upload", tiny)
    text = check(page)
    expect(contam).to_contain_text("Benchmark tiny.jsonl: 100,000 items")
    assert "none of the benchmark's 100,000 items could be checked" in text, text


@pytest.mark.slow
def test_a_benchmark_identical_to_the_dataset_is_all_contaminated_and_the_downloads_are_right(page, app_url, tmp_path):
    """From the round-5 hostile review of the Space."""
    rows = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/train.jsonl")[:150]]
    a_path = write_jsonl(tmp_path / "same.jsonl", rows)
    page.goto(app_url + "/")
    wait_audited(page, "7,473")
    upload_and_run(page, a_path, len(rows))
    leak_tab(page)
    bench_copy = tmp_path / "copy_of_same.jsonl"
    bench_copy.write_bytes(a_path.read_bytes())
    upload(page, "bench-upload", bench_copy)
    box(page, "bench-text").fill("question")
    assert "Checked contamination." in check(page)
    contam = page.locator("#contam-summary")
    n = int(re.search(r"shares a (\d+)-token sequence", contam.inner_text()).group(1))
    questions = [r["question"] for r in rows]
    # A's text guessed by the page (question, answer joined? the page says which fields it searched)
    searched = re.search(r"A's fields searched: ([^.\n]+)\.", contam.inner_text()).group(1).split(", ")
    corpus = [" ".join(str(r[f]) for f in searched if r.get(f) not in (None, "")) for r in rows]
    truth = ngram_pairs(questions, corpus, n)
    items = {j for j, _ in truth}
    assert items == {j for j, q in enumerate(questions) if len(tokens(q)) >= n}      # every long one
    expect(contam).to_contain_text(f"share an n-gram with A (contaminated) {len(items)} (")
    evidence = list(csv.DictReader(open(download(page, "dl-contam"), encoding="utf-8", newline="")))
    pairs = {(int(r["benchmark_row"]), int(r["corpus_row"])) for r in evidence}
    assert pairs <= truth and {j for j, _ in pairs} == items
    assert {(j, j) for j in items} <= pairs
    assert all(r["benchmark_text"] == questions[int(r["benchmark_row"])] for r in evidence)
    dropped = {c for _, c in truth}
    kept = [json.loads(x) for x in Path(download(page, "dl-decontam")).read_text("utf-8").splitlines() if x]
    assert kept == [r for i, r in enumerate(rows) if i not in dropped]
    expect(contam).to_contain_text(f"{len(rows) - len(dropped):,} of {len(rows):,} records, the {len(dropped):,} "
                                   f"sharing a {n}-gram")


@pytest.mark.slow
def test_the_text_box_naming_fields_hostile_ways(page, app_url, tmp_path):
    """From the round-5 hostile review of the Space: Records whose instructions repeat in pairs while input,
    a field named 'x,y' and a nested
    meta.prompt tell them apart: the duplicate counts follow the fields named, and bad names are
    refused with the reason."""
    qs = [r["question"] for r in real_data.rows("gsm8k/train.jsonl")[:30]]
    rows = [{"instruction": qs[i // 2], "input": f"case number {i}", "x,y": f"comma field {i} {qs[i // 2]}",
             "meta": {"prompt": qs[i // 2] + (" again" if i % 2 else "")}, "answer": str(i)} for i in range(60)]
    path = write_jsonl(tmp_path / "fields.jsonl", rows)
    page.goto(app_url + "/")
    wait_audited(page, "7,473")
    upload_and_run(page, path, len(rows))

    def audit(text: str) -> str:
        if not page.locator("#text input").is_visible():
            page.locator("#form > button, #form .label-wrap").first.click()
        page.locator("#text input").fill(text)
        page.keyboard.press("Escape")
        page.locator("#run").click()
        time.sleep(0.3)
        expect(page.locator("#status")).to_contain_text(re.compile(r"^\s*(Audited|Could not)"), timeout=TIMEOUT)
        return page.locator("#status").inner_text()

    def exact_groups(texts) -> tuple:
        seen: dict = {}
        for t in texts:
            seen[" ".join(t.lower().split())] = seen.get(" ".join(t.lower().split()), 0) + 1
        dup = [c for c in seen.values() if c > 1]
        return len(dup), sum(dup)

    for text, message in [("instruction,missing", "The text field 'missing' is in no record"),
                          ("instruction,instruction", "The text field 'instruction' is named twice"),
                          (",", "The text fields ',' name no field"),
                          ("x,y,instruction", "The text field 'x' is in no record")]:
        out = audit(text)
        assert "Could not audit" in out and message in out, (text, out)
        no_markup(page, "status")
    for text, texts in [("instruction", [r["instruction"] for r in rows]),
                        ("instruction,input", [r["instruction"] + "\n" + r["input"] for r in rows]),
                        ("x,y", [r["x,y"] for r in rows]),
                        ("meta.prompt", [r["meta"]["prompt"] for r in rows])]:
        out = audit(text)
        assert "Audited fields.jsonl: 60 records" in out, (text, out)
        groups, records = exact_groups(texts)
        expect(page.locator("#overview")).to_contain_text(
            re.compile(rf"Exact duplicates: text[^\n]*\s+{groups} groups?, {records} records?"))
    assert page.evaluate("window.__xss_hits.slice()") == []
