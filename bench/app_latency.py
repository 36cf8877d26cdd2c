#!/usr/bin/env python
"""Click-to-result latency of the Space, measured in a real browser (Debian's Chromium, headless).

    python bench/app_latency.py              # 5 repeats of each journey, prints a markdown table
    python bench/app_latency.py --repeats 3

The app (app.py) runs in a subprocess on a free 127.0.0.1 port, exactly as it is served; one
Playwright page drives it. Each figure is the wall time from the click (or key press) to the page
showing the result (the status line, the counts or the pair view changing to the expected text,
polled on every animation frame), so it includes the request, the queue, the handler, the
transfer of every updated part and the browser's rendering. GSM8K train (bundled, 7,473 records):

- run, cached: Run audit on the audited dataset (the opening audit is pre-computed at start);
- run, new threshold: Run audit at another threshold (the cached scan answers it);
- run, fresh: Run audit that must scan again (a new row cap of >= 7,473 keeps every record but
  is a new cache key), i.e. the library's whole audit plus the page;
- curve slider: a new threshold typed into the curve's slider (every view re-counted);
- next pair (j): the keyboard's next pair in the review;
- leakage: Check leakage of GSM8K test (1,319) against the audited train split.

The median and the worst of the repeats are reported. The machine may be shared: say so with
the numbers.
"""
from __future__ import annotations

import argparse
import os
import platform
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
TARGET = 1.5


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


def timed(page, action, predicate: str, arg) -> float:
    """Seconds from ``action()`` to the JS ``predicate(arg)`` holding (checked on every frame).
    Each measured step changes what the page shows, so the wait cannot end on the old result."""
    started = time.perf_counter()
    action()
    page.wait_for_function(predicate, arg=arg, polling="raf", timeout=120_000)
    return time.perf_counter() - started


TEXT = "([s, t]) => { const e = document.querySelector(s); return !!e && e.innerText.includes(t); }"
SHARE = ("(t) => { const e = document.querySelector('#share textarea, #share input'); "
         "return !!e && e.value.includes(t); }")


def measure(url: str, repeats: int) -> dict:
    from playwright.sync_api import sync_playwright
    out: dict = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_context(viewport={"width": 1360, "height": 1000}).new_page()
        page.set_default_timeout(120_000)
        query = {"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question",
                 "answer": "answer", "threshold": "0.7"}
        page.goto(f"{url}/?{urlencode(query)}")
        page.wait_for_function(TEXT, arg=["#status", "7,473 records"])
        split = page.locator("#split input")

        def run_split(name):
            split.fill(name)
            split.press("Enter")
            page.locator("#run").click()

        def run_threshold(value):
            box = page.locator("#threshold input[type=number]")
            box.fill(str(value))
            box.press("Tab")
            page.locator("#run").click()

        run_split("test")                                  # both splits cached before timing
        page.wait_for_function(TEXT, arg=["#status", "1,319 records"])
        times = out.setdefault("run, cached", [])
        for k in range(repeats):
            name, records = (("train", "7,473"), ("test", "1,319"))[k % 2]
            times.append(timed(page, lambda: run_split(name), TEXT, ["#status", f": {records} records"]))
        if repeats % 2:
            run_split("test")
            page.wait_for_function(TEXT, arg=["#status", "1,319 records"])
        run_split("train")
        page.wait_for_function(TEXT, arg=["#status", "7,473 records"])
        times = out.setdefault("run, new threshold", [])
        for k in range(repeats):
            value = (0.55, 0.6, 0.65, 0.75, 0.8)[k % 5]
            times.append(timed(page, lambda: run_threshold(value), SHARE, f"threshold={value:g}"))
        times = out.setdefault("run, fresh (the whole audit)", [])
        for k in range(repeats):
            if not page.locator("#max-rows input, #max-rows textarea").first.is_visible():
                page.locator("#form > button, #form .label-wrap").first.click()    # the folded form
            cap = 7473 + k + 1
            page.locator("#max-rows input, #max-rows textarea").first.fill(str(cap))
            times.append(timed(page, lambda: page.locator("#run").click(), SHARE, f"max_rows={cap}"))
        page.get_by_role("tab", name="Threshold curve", exact=True).click()
        times = out.setdefault("curve slider", [])
        for k in range(repeats):
            value = (0.5, 0.6)[k % 2]
            box = page.locator("#curve-threshold input[type=number]")
            times.append(timed(page, lambda: (box.fill(str(value)), box.press("Enter")), TEXT,
                               ["#counts", f"At Jaccard ≥ {value:g}:"]))
        page.get_by_role("tab", name="Near-duplicate pairs", exact=True).click()
        page.locator("#pairs-info").click()
        times = out.setdefault("next pair (j)", [])
        for k in range(repeats):
            times.append(timed(page, lambda: page.keyboard.press("j"), TEXT, ["#pair-view", f"pair {k + 1} of"]))
        page.get_by_role("tab", name="Leakage", exact=True).click()
        page.locator("#leak-dataset input, #leak-dataset textarea").first.fill("example:gsm8k")
        page.locator("#leak-split input").fill("test")
        page.locator("#leak-split input").press("Enter")
        times = out.setdefault("leakage (B = test, 1,319, or socratic test)", [])
        for k in range(repeats):
            config = ("main", "socratic")[k % 2]
            page.locator("#leak-config input").fill(config)
            page.locator("#leak-config input").press("Enter")
            times.append(timed(page, lambda: page.locator("#leak-run").click(), TEXT,
                               ["#leak-summary", f"({config} / test, 1,319 records)"]))
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="app-latency-") as tmp:
        proc, url = start_app(Path(tmp))
        try:
            load = os.getloadavg()[0]
            results = measure(url, args.repeats)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    print(f"App latency, click to result in headless Chromium, GSM8K train (7,473 records); "
          f"{os.cpu_count()} cores, load average {load:.1f} at start; Python {platform.python_version()}\n")
    print("| journey | median s | worst s | runs | under 1.5 s |")
    print("|---|---|---|---|---|")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"| {name} | {med:.2f} | {max(times):.2f} | {len(times)} | {'yes' if med < TARGET else 'no'} |")


if __name__ == "__main__":
    main()
