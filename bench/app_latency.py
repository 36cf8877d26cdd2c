#!/usr/bin/env python
"""Click to readable result, in a real browser (Debian's Chromium, headless), for each journey of
the Space's three users (issue 29): a researcher checking an SFT file against their eval set and
GSM8K, a maintainer deduplicating a 60,000-row CSV, a colleague opening a shared link on a desktop
and on a 390x844 phone.

    python bench/app_latency.py              # 5 repeats of each step, prints a markdown table
    python bench/app_latency.py --repeats 3

The app (app.py) runs in a subprocess on a free 127.0.0.1 port, exactly as it is served. Each figure
is the wall time from the click (or key press, or the page's address) to the page showing the
result as text (polled on every animation frame), so it includes the request, the queue, the
handler, the transfer of every updated part and the browser's rendering. The steps:

- link, desktop / link, phone: a share link opened in a fresh page, to the verdict readable;
- run, cached / run, fresh: Run audit on GSM8K train, answered by the cache or audited anew (a new
  row cap that keeps every record is a new cache key);
- threshold (curve slider): a new threshold typed on the curve tab, to the counts at it;
- next pair (j), cluster opened, next clusters page: the review's steps;
- record kept apart: a record of a cluster kept, to the status saying what it changed;
- leak + contamination: Check leakage of an uploaded 1,000-record eval file against the uploaded
  SFT file (20,000 records) with GSM8K as the benchmark, to the summary;
- evidence page: the next page of the leak evidence;
- 60,000-row CSV: its upload and audit, to the verdict; the deduplicated file built, to its link.

The median and the worst of the repeats are reported (the CSV steps once each: a fresh audit of
60,000 rows per repeat would dominate the run). The machine may be shared: say so with the numbers.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_app(tmp: Path, extra_env: dict | None = None) -> tuple[subprocess.Popen, str]:
    """app.py in a subprocess on a free 127.0.0.1 port (offline unless ``extra_env`` says otherwise)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update({"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port), "HF_HUB_OFFLINE": "1",
                "HF_HOME": str(tmp / "hf"), "GRADIO_ANALYTICS_ENABLED": "False",
                "AUDITOR_UPLOADS_DIR": str(tmp / "uploads"), **(extra_env or {})})
    proc = subprocess.Popen([sys.executable, "app.py"], cwd=REPO, env=env, stdout=open(tmp / "app.log", "wb"),
                            stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"app.py exited: {(tmp / 'app.log').read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url + "/", timeout=2):
                return proc, url
        except OSError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("app.py did not answer within 180 s")


TEXT = "([s, t]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(t); }"
# For a step whose result reads the same as before (a cached run again): the element's progress
# tracker (in the element WATCH was given before the click) must have shown since the click and be
# hidden again, and the text be there.
WATCH = ("(s) => { window.__ran = false; if (window.__watch) window.__watch.disconnect(); const e ="
         " document.querySelector(s); window.__watch = new MutationObserver(() => { if (e.querySelector("
         "\"[data-testid='status-tracker']:not(.hide)\")) window.__ran = true; }); window.__watch.observe(e,"
         " {subtree: true, childList: true, attributes: true, characterData: true}); }")
RAN = ("([w, s, t]) => { const k = document.querySelector(w + \" [data-testid='status-tracker']\");"
       " const e = document.querySelector(s); return window.__ran && !!k && k.classList.contains('hide')"
       " && !!e && e.innerText.includes(t); }")
SHARE = ("(t) => { const e = document.querySelector('#share textarea, #share input'); "
         "return !!e && e.value.includes(t); }")


TIMEOUT = 180_000           # ms: a step slower than 3 min is a failure, not a figure


def timed(page, action, predicate: str, arg) -> float:
    """Seconds from ``action()`` to the JS ``predicate(arg)`` holding (checked on every frame).
    Each measured step changes what the page shows, so the wait cannot end on the old result."""
    started = time.perf_counter()
    action()
    page.wait_for_function(predicate, arg=arg, polling="raf", timeout=TIMEOUT)
    return time.perf_counter() - started


def step(out: dict, name: str) -> list:
    """The times of the step ``name`` (said on stderr as it starts: a step that hangs shows)."""
    print(f"... {name}", file=sys.stderr, flush=True)
    return out.setdefault(name, [])


def files(folder: Path) -> dict:
    """The researcher's SFT file (20,000 GSM8K-like records, 30 GSM8K test questions planted) and
    eval file (1,000 records, 40 of them from the SFT file), and the maintainer's 60,000-row CSV."""
    sys.path.insert(0, str(REPO))
    import auditor
    train = auditor.load("example:gsm8k", "main", "train").rows
    test = auditor.load("example:gsm8k", "main", "test").rows
    rng = random.Random(5)
    sft = [{"instruction": f"{train[rng.randrange(len(train))]['question']} (set {k})", "output": str(k)}
           for k in range(20_000)]
    for k in range(30):
        sft[500 * k + 7] = {"instruction": test[k]["question"], "output": test[k]["answer"]}
    evals = [{"instruction": f"{test[k % len(test)]['question']} (eval {k})", "output": "x"} for k in range(960)]
    evals += [dict(sft[100 * k + 3]) for k in range(40)]
    out = {"sft": folder / "sft.jsonl", "eval": folder / "eval.jsonl", "csv": folder / "maintainer.csv"}
    for key in ("sft", "eval"):
        out[key].write_text("".join(json.dumps(r) + "\n" for r in (sft if key == "sft" else evals)),
                            encoding="utf-8")
    with open(out["csv"], "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["id", "question", "answer"])
        for k in range(60_000):
            r = train[k % len(train)]
            words = r["question"].split()
            if k >= len(train):                 # later copies: one word changed (near duplicates)
                words[(k * 7) % len(words)] = f"w{k % 97}"
            writer.writerow([k, " ".join(words), r["answer"]])
    return out


def measure(url: str, repeats: int, data: dict) -> dict:
    from playwright.sync_api import sync_playwright
    out: dict = {}
    link = f"{url}/?" + urlencode({"dataset": "example:gsm8k", "config": "main", "split": "train",
                                   "text": "question", "answer": "answer", "threshold": "0.7"})
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        for name, options in (("link, desktop", {"viewport": {"width": 1360, "height": 1000}}), ("link, phone", PHONE)):
            times = step(out, name)
            for _ in range(repeats):
                context = browser.new_context(**options)
                page = context.new_page()
                times.append(timed(page, lambda: page.goto(link), TEXT, ["#headline", "7,473"]))
                context.close()
        page = browser.new_context(viewport={"width": 1360, "height": 1000}).new_page()
        page.set_default_timeout(TIMEOUT)
        page.goto(link)
        page.wait_for_function(TEXT, arg=["#headline", "7,473"])

        def open_form():
            if not page.locator("#max-rows input, #max-rows textarea").first.is_visible():
                page.locator("#form > button, #form .label-wrap").first.click()
                page.locator("#max-rows input, #max-rows textarea").first.wait_for(state="visible")

        times = step(out, "run, cached")
        for _ in range(repeats):
            page.evaluate(WATCH, "#status")
            times.append(timed(page, lambda: page.locator("#run").click(), RAN, ["#status", "#status", "from the cache"]))
        times = step(out, "run, fresh (the whole audit)")
        max_rows = page.locator("#max-rows input, #max-rows textarea").first
        open_form()
        default_cap = max_rows.input_value()
        for k in range(repeats):
            open_form()
            cap = 7473 + k + 1
            max_rows.fill(str(cap))
            times.append(timed(page, lambda: page.locator("#run").click(), SHARE, f"max_rows={cap}"))
        open_form()
        max_rows.fill(default_cap)       # the later uploads are read whole (20,000 and 60,000 rows)
        page.get_by_role("tab", name="Threshold curve", exact=True).click()
        times = step(out, "threshold (curve slider)")
        for k in range(repeats):
            value = (0.55, 0.6, 0.65, 0.63, 0.5)[k % 5]
            box = page.locator("#curve-threshold input[type=number]")
            times.append(timed(page, lambda: (box.fill(str(value)), box.press("Enter")), TEXT,
                               ["#counts", f"At Jaccard ≥ {value:g}:"]))
        page.get_by_role("tab", name="Near-duplicate pairs", exact=True).click()
        page.locator("#pairs-info").click()
        times = step(out, "next pair (j)")
        for k in range(repeats):
            times.append(timed(page, lambda: page.keyboard.press("j"), TEXT, ["#pair-view", f"pair {k + 1} of"]))
        page.get_by_role("tab", name="Clusters", exact=True).click()
        times = step(out, "cluster opened")
        for k in range(repeats):
            row = k % 5
            times.append(timed(page, lambda: page.locator(f"#clusters-table [data-testid='cell-{row}-0']").click(),
                               TEXT, ["#cluster-view", f"(rank {row + 1})"]))
        times = step(out, "record kept apart")
        idle = "() => !document.querySelector(\"#cluster-view [data-testid='status-tracker']:not(.hide)\")"
        for _ in range(repeats):
            # The largest cluster, opened afresh each time: keeping records apart shrinks a cluster, and
            # one of two records kept apart leaves no cluster to keep a record of.
            page.locator("#clusters-table [data-testid='cell-0-0']").click()
            button = page.locator("#cluster-view button", has_text="Keep this record too").first
            button.wait_for(state="visible")
            time.sleep(0.3)
            page.wait_for_function(idle)
            page.evaluate(WATCH, "#cluster-view")          # its progress shows there; the outcome in #status
            times.append(timed(page, lambda: button.click(), RAN, ["#cluster-view", "#status", "is kept apart"]))
        # The researcher: an SFT file as A, the eval file as B, GSM8K as the benchmark.
        page.locator("input[type=file]:has(+ #upload)").set_input_files(str(data["sft"]))
        page.wait_for_function(TEXT, arg=["#status", "Fields of sft.jsonl"])
        page.locator("#run").click()
        page.wait_for_function(TEXT, arg=["#status", "20,000 records"])
        page.get_by_role("tab", name="Leakage", exact=True).click()
        page.locator("input[type=file]:has(+ #leak-upload)").set_input_files(str(data["eval"]))
        page.wait_for_function(TEXT, arg=["#leak-upload", "eval.jsonl"])
        page.locator("#benchmark input").click()
        page.get_by_role("option", name="gsm8k", exact=True).click()
        times = step(out, "leak + contamination (20,000 x 1,000, GSM8K)")
        for k in range(repeats):
            ngram = ("13", "12", "11", "10", "9")[k % 5]           # a new check each time, never a cached one
            page.locator("#ngram input, #ngram textarea").first.fill(ngram)
            times.append(timed(page, lambda: page.locator("#leak-run").click(), TEXT,
                               ["#contam-summary", f"shares a {ngram}-token sequence"]))
        times = step(out, "evidence page")
        for k in range(repeats):
            button = page.locator("#leak-evidence button", has_text="next ›").first
            if not button.count():
                break
            times.append(timed(page, lambda: button.click(), TEXT, ["#leak-evidence", f"Showing {10 * (k + 1) + 1}–"]))
        # The maintainer: a 60,000-row CSV, then its deduplicated file.
        page.get_by_role("tab", name="Overview", exact=True).click()
        page.locator("input[type=file]:has(+ #upload)").set_input_files(str(data["csv"]))
        page.wait_for_function(TEXT, arg=["#status", "Fields of maintainer.csv"])
        out["60,000-row CSV audited"] = [timed(page, lambda: page.locator("#run").click(), TEXT,
                                               ["#headline", "60,000"])]
        page.get_by_role("tab", name="Downloads", exact=True).click()
        out["deduplicated file built (60,000 rows)"] = [timed(page, lambda: page.locator("#dedup-run").click(),
                                                              TEXT, ["#dl-dedup", "maintainer.dedup.csv"])]
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="app-latency-") as tmp:
        data = files(Path(tmp))
        proc, url = start_app(Path(tmp))
        try:
            load = os.getloadavg()[0]
            results = measure(url, args.repeats, data)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(f"Click to readable result in headless Chromium; {os.cpu_count()} cores, load average {load:.1f} at "
          f"start; Python {platform.python_version()}\n")
    print("| step | median s | worst s | runs |")
    print("|---|---|---|---|")
    for name, times in results.items():
        if times:
            print(f"| {name} | {statistics.median(times):.2f} | {max(times):.2f} | {len(times)} |")


if __name__ == "__main__":
    main()
