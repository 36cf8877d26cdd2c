#!/usr/bin/env python
"""The Space under load: 50 visitors at once through gradio_client (and one browser page), loopback
only, the app served exactly as app.py serves it.

    python bench/app_load.py                  # 50 visitors, 4 requests each, prints a markdown table
    python bench/app_load.py --visitors 20

Each visitor (a thread with its own gradio_client) makes requests drawn, with a fixed seed, from:

- page load: GET / and /config, what a browser fetches first;
- cached audit: /audit_json of a bundled set the server has audited (answered from the cache);
- failing hub id: /audit_json of a dataset the Hub refuses (HF_ENDPOINT points at a closed port);
- leak check: /leak_json of a GSM8K split against another (a few seconds of work);
- upload audit: /dedup_file of an uploaded 5-20 MB JSONL file (a fresh audit and a copy written);
- dedup download: /dedup_file of a bundled set (its audit cached, the copy written).

Meanwhile one headless Chromium page changes the threshold on the curve tab (a cheap page event)
and waits for the counts to show it, and one more visitor, in a process of its own, asks for a cached
audit every half second while the crowd is there (the crowd's clients share one interpreter, whose
GIL adds to their own times). The table gives p50 / p95 / max seconds per kind, how many
answered, how many the server refused (and why), and the peak memory of the server, of a job's child
process, and of both at once. All visitors come from 127.0.0.1, one address, so the per-visitor limit is raised for the
run (AUDITOR_JOBS_PER_VISITOR); the work slots, the line's bound and every other setting are the
defaults. Say the load average beside the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
from app_latency import ARGS, CHROMIUM, TEXT, free_port, start_app  # noqa: E402

KINDS = ("page load", "cached audit", "failing hub id", "leak check", "upload audit", "dedup download",
         "threshold change (browser)", "cached audit (own process)")
MIX = ("page load", "page load", "cached audit", "cached audit", "failing hub id", "leak check", "upload audit",
       "dedup download")


def make_uploads(folder: Path, count: int, seed: int) -> list[Path]:
    """JSONL files of 5 to 20 MB: GSM8K train questions, shuffled and numbered so every file differs."""
    sys.path.insert(0, str(REPO))
    import auditor
    rows = auditor.load("example:gsm8k", "main", "train").rows
    rng = random.Random(seed)
    paths = []
    for k in range(count):
        target = rng.randint(5, 20) * 1024 * 1024
        path = folder / f"upload_{k}.jsonl"
        size = 0
        with open(path, "w", encoding="utf-8") as fh:
            i = 0
            while size < target:
                r = rows[rng.randrange(len(rows))]
                line = json.dumps({"question": f"{r['question']} (variant {k}-{i})", "answer": r["answer"]}) + "\n"
                fh.write(line)
                size += len(line.encode())
                i += 1
        paths.append(path)
    return paths


def request(client, url: str, kind: str, upload: Path | None):
    from gradio_client import handle_file
    if kind == "page load":
        for part in ("/", "/config"):
            with urllib.request.urlopen(url + part, timeout=600) as resp:
                resp.read()
    elif kind == "cached audit":
        client.predict("example:gsm8k", "main", "train", "", "", "", 0.7, api_name="/audit_json")
    elif kind == "failing hub id":
        try:
            client.predict("nobody/not-a-dataset", "", "", "", "", "", 0.7, api_name="/audit_json")
        except Exception as exc:  # noqa: BLE001 - the expected answer is an error
            if "Hub" not in str(exc) and "failed" not in str(exc):
                raise
    elif kind == "leak check":
        client.predict("example:gsm8k", "main", "train", None, "example:gsm8k", "socratic", "test", None, "", "",
                       0.7, api_name="/leak_json")
    elif kind == "upload audit":
        client.predict("", "", "", handle_file(str(upload)), "", "", 0.7, "first", api_name="/dedup_file")
    elif kind == "dedup download":
        client.predict("example:mbpp", "full", "train", None, "", "", 0.7, "first", api_name="/dedup_file")


def status_kb(pid: int) -> dict:
    """VmHWM and VmRSS (kB) of a process; {} once it has gone."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: int(v.split()[0]) for k, _, v in (line.partition(":") for line in lines) if k in ("VmHWM", "VmRSS")}


def private_kb(pid: int) -> int:
    """The memory (kB) a process holds alone: a job's child shares the server's pages until it writes."""
    try:
        lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
    except OSError:
        return 0
    return sum(int(line.split()[1]) for line in lines if line.startswith(("Private_Dirty:", "Private_Clean:")))


def peak_memory(pid: int, stop: threading.Event, out: dict) -> None:
    """The server's peak (VmHWM), the largest peak of a job's child process, and the most the server
    and its children held at once (their VmRSS summed: shared pages counted in each, an upper bound)."""
    while not stop.wait(0.2):
        server = status_kb(pid)
        if not server:
            return
        out["VmHWM"] = max(out.get("VmHWM", 0), server["VmHWM"])
        try:
            children = [int(c) for t in Path(f"/proc/{pid}/task").iterdir()
                        for c in (t / "children").read_text().split()]
        except OSError:
            children = []
        kids = [k for k in map(status_kb, children) if k]
        out["child"] = max([out.get("child", 0)] + [k["VmHWM"] for k in kids])
        out["private"] = max([out.get("private", 0)] + [private_kb(c) for c in children])
        out["together"] = max(out.get("together", 0), server["VmRSS"] + sum(k["VmRSS"] for k in kids))


def browser_thresholds(url: str, stop: threading.Event, times: list, errors: list) -> None:
    from playwright.sync_api import sync_playwright
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1360, "height": 1000})
            page.set_default_timeout(600_000)
            page.goto(url + "/?dataset=example%3Agsm8k&config=main&split=train&tab=curve")
            page.wait_for_function(TEXT, arg=["#status", "7,473"])
            k = 0
            while not stop.is_set():
                value = (0.55, 0.65, 0.75, 0.6)[k % 4]
                box = page.locator("#curve-threshold input[type=number]")
                started = time.perf_counter()
                box.fill(str(value))
                box.press("Enter")
                page.wait_for_function(TEXT, arg=["#counts", f"At Jaccard ≥ {value:g}:"], polling="raf")
                times.append(time.perf_counter() - started)
                k += 1
                time.sleep(0.5)
            browser.close()
    except Exception as exc:  # noqa: BLE001 - reported, not raised
        errors.append(repr(exc))


def probe(url: str, folder: str) -> None:
    """One more visitor in a process of its own (``--probe``): from when ``folder``/go exists until
    ``folder``/stop does, a cached audit every half second; then its times as JSON. The crowd's 50
    clients share one interpreter, whose GIL adds to their times; this visitor's are the server's."""
    from gradio_client import Client
    client = Client(url, verbose=False, httpx_kwargs={"timeout": 600})
    times = []
    stop_file = os.path.join(folder, "stop")
    while not os.path.exists(os.path.join(folder, "go")):
        time.sleep(0.05)
    while not os.path.exists(stop_file):
        started = time.perf_counter()
        client.predict("example:gsm8k", "main", "train", "", "", "", 0.7, api_name="/audit_json")
        times.append(time.perf_counter() - started)
        time.sleep(0.5)
    print(json.dumps(times))


def main() -> None:
    if sys.argv[1:2] == ["--probe"]:
        return probe(*sys.argv[2:4])
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--visitors", type=int, default=50)
    ap.add_argument("--requests", type=int, default=4, help="requests per visitor")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    from gradio_client import Client
    with tempfile.TemporaryDirectory(prefix="app-load-") as tmp:
        tmp = Path(tmp)
        uploads = make_uploads(tmp, 6, args.seed)
        closed = free_port()                        # nothing listens there: every hub id fails at once
        proc, url = start_app(tmp, {"AUDITOR_JOBS_PER_VISITOR": str(args.visitors * args.requests),
                                    "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": f"http://127.0.0.1:{closed}",
                                    "AUDITOR_HUB_TIMEOUT": "5"})
        memory: dict = {}
        stop = threading.Event()
        watcher = threading.Thread(target=peak_memory, args=(proc.pid, stop, memory), daemon=True)
        watcher.start()
        results = {k: [] for k in KINDS}
        refused: dict = {}
        failed: dict = {}
        lock = threading.Lock()
        try:
            warm = Client(url, verbose=False)
            warm.predict("example:gsm8k", "main", "train", "", "", "", 0.7, api_name="/audit_json")  # cached
            # The dedup downloads' audit too, as their row says: otherwise each asks for it until one
            # has computed it, and whether that one passed the upload audits in line set their times.
            warm.predict("example:mbpp", "full", "train", "", "", "", 0.7, api_name="/audit_json")
            load = os.getloadavg()[0]
            rng = random.Random(args.seed)
            plans = [[rng.choice(MIX) for _ in range(args.requests)] for _ in range(args.visitors)]
            browser_times, browser_errors = [], []
            browser = threading.Thread(target=browser_thresholds, args=(url, stop, browser_times, browser_errors),
                                       daemon=True)
            browser.start()
            prober = subprocess.Popen([sys.executable, __file__, "--probe", url, str(tmp)], stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
            time.sleep(8)                            # the page and the probe are open before the crowd arrives
            start_gate = threading.Barrier(args.visitors)

            def visitor(k: int) -> None:
                # Each visitor's client is made before the crowd starts (it reads /config and the API's
                # description; httpx's 5 s default is too short while 50 of them do so at once).
                try:
                    client = Client(url, verbose=False, httpx_kwargs={"timeout": 600})
                except Exception as exc:  # noqa: BLE001 - counted, not raised
                    with lock:
                        failed.setdefault("client connect", []).append(str(exc)[:200] or repr(exc))
                    start_gate.abort()
                    return
                try:
                    start_gate.wait()
                except threading.BrokenBarrierError:
                    return
                for n, kind in enumerate(plans[k]):
                    started = time.perf_counter()
                    try:
                        request(client, url, kind, uploads[(k + n) % len(uploads)])
                        with lock:
                            results[kind].append(time.perf_counter() - started)
                    except Exception as exc:  # noqa: BLE001 - counted, not raised
                        text = str(exc)
                        with lock:
                            bucket = refused if "busy" in text or "You already have" in text else failed
                            bucket.setdefault(kind, []).append(text[:200])

            started_all = time.perf_counter()
            (tmp / "go").touch()
            threads = [threading.Thread(target=visitor, args=(k,)) for k in range(args.visitors)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started_all
            (tmp / "stop").touch()
            said, why = prober.communicate(timeout=600)
            if prober.returncode == 0:
                results["cached audit (own process)"] = json.loads(said)
            else:                                    # counted as failed, with its own words
                failed["cached audit (own process)"] = [why.strip().splitlines()[-1][:200] if why.strip() else
                                                        f"the probe exited {prober.returncode}"]
            stop.set()
            browser.join(120)
            results["threshold change (browser)"] = browser_times
        finally:
            stop.set()
            (tmp / "stop").touch()                   # the probe ends even when the crowd failed
            proc.terminate()
            proc.wait(timeout=30)
            log = (tmp / "app.log").read_text(errors="replace")
    print(f"Space under load: {args.visitors} visitors x {args.requests} requests (seed {args.seed}), gradio_client "
          f"on loopback, one browser page changing the threshold; {os.cpu_count()} cores, load average {load:.1f} "
          f"at start; {wall:.0f} s in all.\n")
    print("| request | answered | refused (busy) | failed | p50 s | p95 s | max s |")
    print("|---|---|---|---|---|---|---|")
    for kind in KINDS:
        t = sorted(results[kind])
        if t:
            p95 = t[min(len(t) - 1, int(round(0.95 * (len(t) - 1))))]
            stats = f"{statistics.median(t):.2f} | {p95:.2f} | {t[-1]:.2f}"
        else:
            stats = "– | – | –"
        print(f"| {kind} | {len(t)} | {len(refused.get(kind, []))} | {len(failed.get(kind, []))} | {stats} |")
    print(f"\nServer peak memory (VmHWM): {memory.get('VmHWM', 0) / 1024 ** 2:.2f} GB; a job's child process at "
          f"most {memory.get('child', 0) / 1024 ** 2:.2f} GB resident, {memory.get('private', 0) / 1024 ** 2:.2f} GB "
          f"of it its own (the rest the server's pages, shared); the server and its children at once at most "
          f"{memory.get('together', 0) / 1024 ** 2:.2f} GB (resident, shared pages counted in each).")
    for kind, texts in list(failed.items()) + list(refused.items()):
        print(f"- {kind}: {texts[0]}")
    if browser_errors:
        print(f"- browser: {browser_errors[0]}")
    errors = [block.split("\n\n")[0].strip().splitlines()[-1] for block in log.split("Traceback")[1:]]
    if errors:                                    # the server's side of a failure
        print("\nErrors in the server's log: " + "; ".join(f"{n} x {e[:300]}" for e, n in Counter(errors).items()))


if __name__ == "__main__":
    main()
