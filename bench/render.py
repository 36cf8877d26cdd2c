"""The benchmark's report: measurements (the JSON ``run.py --json`` writes) to Markdown tables."""
from __future__ import annotations

from workers import NUM_PERM, RECALL_AT


def fmt_s(x):
    if x is None:
        return "–"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def fmt_ratio(x, ref):
    if x is None or not ref:
        return "–"
    r = x / ref
    return f"{r:.2f}x" if r < 10 else f"{r:.0f}x"


def truth_for(ds) -> tuple[dict | None, str]:
    runs = ds["runs"]
    pure = runs.get("pure-python@0.3", {})
    if pure.get("status") == "ok" and pure["subset"] >= ds["records"]:
        return pure["pairs"], "pure-python (all records)"
    exact = runs.get("ours-exact@0.3", {})
    if exact.get("status") == "ok":
        return exact["pairs"], "ours-exact"
    return None, "none (exact path not run)"


def render(results) -> str:
    m = results["machine"]
    out = ["# Near-duplicate benchmark", "",
           f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory']} RAM; Python {m['python']}; "
           + ", ".join(f"{k} {v}" for k, v in m["libs"].items()) + f"; auditor at {m['commit']}.",
           f"Run: `python bench/run.py {results['run_line']}`, "
           f"{results['total_seconds']:.0f} s in total; 1-minute load average before each measurement "
           f"{load_range(results)} (other processes share the machine; short measurements are best of up to 3).",
           "",
           "Wall = time from texts to verified pairs (shingling included; data loading and imports "
           "excluded); peak = peak RSS of the measuring process, Δ = peak minus its RSS after loading "
           "the data. Ratios are against `ours-auto` at the same lowest threshold (@0.3 runs the full "
           "curve 0.9-0.3). Recall R@t = pairs found with J >= t / true pairs with J >= t (every method "
           "verifies candidates exactly, so nothing found is false).", ""]
    head = ("| dataset | method | searched | wall s | × ours time | peak MB | Δ MB | × ours Δ | "
            "pairs ≥0.7 | pairs ≥0.3 | R@0.7 | R@0.5 | R@0.3 | notes |")
    out += ["## Results", "", head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    sig_tables, switch_rows, planted_rows, cross_rows, stage_rows = [], [], [], [], []
    for ds in results["datasets"]:
        runs = ds["runs"]
        if ds.get("switch"):
            ex, ls = runs.get("ours-exact@0.3", {}), runs.get("ours-lsh@0.3", {})
            rec = "–"
            if ex.get("status") == "ok" and ls.get("status") == "ok" and ex["pairs"]["0.3"]:
                rec = fmt_recall(ls['pairs']['0.3'] / ex['pairs']['0.3'])
            switch_rows.append(f"| {ds['records']:,} | {fmt_int(ex.get('nodes'))} | {status_or(ex, 'find_pairs')} | "
                               f"{status_or(ls, 'find_pairs')} | {fmt_s(ex.get('wall'))} | {fmt_s(ls.get('wall'))} | "
                               f"{mb(ex)} | {mb(ls)} | {rec} |")
            continue
        truth, source = truth_for(ds)
        label = ds["name"]
        for key, r in runs.items():
            if key in ("signatures",):
                continue
            meth, _, th = key.partition("@")
            ref = runs.get(f"ours-auto@{th or '0.3'}", {})
            if key in ("ours-scan", "auditor-cli"):
                ref = runs.get("ours-auto@0.3", {})
            ok = r.get("status") == "ok"
            wall = r.get("extrapolated_wall") if meth == "pure-python" else r.get("wall")
            wall_txt = ("~" + fmt_s(wall) + " (extrap.)") if meth == "pure-python" and ok and \
                r.get("subset", 0) < ds["records"] else fmt_s(wall)
            if not ok:
                wall_txt = r.get("status", "?")
            delta = (r["peak_rss_mb"] - r["rss_before_mb"]) if ok and r.get("rss_before_mb") else None
            rdelta = (ref["peak_rss_mb"] - ref["rss_before_mb"]) if ref.get("status") == "ok" else None
            pairs = r.get("pairs", {}) if ok else {}
            recs = []
            for t in RECALL_AT:
                if meth == "pure-python" and r.get("subset", 0) < ds["records"]:
                    recs.append("–"); continue
                if truth and str(t) in pairs and truth.get(str(t)):
                    recs.append(fmt_recall(pairs[str(t)] / truth[str(t)]))
                else:
                    recs.append("–")
            notes = []
            if r.get("engine"):
                notes.append(r["engine"])
            if r.get("params"):
                notes.append(r["params"])
            if r.get("candidates"):
                notes.append(f"{r['candidates']:,} candidates")
            if r.get("reused"):
                notes.append("same measurement as ours-auto@0.3 (auto chose LSH)")
            if not ok and r.get("peak_rss_mb"):
                notes.append(f"peak RSS {r['peak_rss_mb']:,.0f} MB when it stopped")
            if r.get("repeats", 1) > 1:
                notes.append(f"best of {r['repeats']}")
            if meth == "pure-python" and ok and r["subset"] < ds["records"]:
                notes.append(f"measured {fmt_s(r['wall'])} s on the first {r['subset']:,} records, "
                             f"× {r['scale']:.1f} (n² pairs) = extrapolated; pair counts are the subset's")
            if meth == "pure-python" and ok:
                cc = r["crosscheck"]
                cross_rows.append(f"| {label} | {cc['records']:,} | {cc['python_pairs']:,} | {cc['ours_pairs']:,} | "
                                  f"{cc['only_python']} | {cc['only_ours']} | {cc['max_jaccard_diff']:.1e} | "
                                  f"{'yes' if cc['identical'] else '**NO**'} |")
            if meth == "ours-exact":
                notes.append(f"truth: {source}")
            if key == "auditor-cli" and ok:
                notes.append(f"median of {r['cli_repeats']}, min {fmt_s(r['wall_min'])} s; target <= 1.5 s")
            if key == "ours-scan" and ok:
                notes.append("full scan: " + ", ".join(f"{k} {v:.2f}" for k, v in r["stages"].items()))
            if ok and r.get("stages") and key != "ours-scan":
                stage_rows.append(f"| {label} | {key} | " + ", ".join(f"{k} {v:.2f}" for k, v in r["stages"].items())
                                  + " |")
            p7, p3 = pairs.get("0.7"), pairs.get("0.3")
            out.append(f"| {label} | {meth} | {'≥' + th if th else '≥0.3'} | {wall_txt} | "
                       f"{fmt_ratio(wall, ref.get('wall')) if ok else '–'} | "
                       f"{fmt_mb(r.get('peak_rss_mb')) if ok else '–'} | {fmt_mb(delta)} | "
                       f"{fmt_ratio(delta, rdelta) if delta is not None and meth != 'pure-python' and key != 'auditor-cli' else '–'} | "
                       f"{fmt_int(p7)} | {fmt_int(p3)} | {' | '.join(recs)} | {'; '.join(notes)} |")
            if r.get("planted"):
                planted_rows.append(f"| {label} | {key} | " + " | ".join(
                    (f"{fmt_recall(r['planted'][str(t)][0] / r['planted'][str(t)][1])} ({r['planted'][str(t)][1]:,})"
                     if str(t) in r["planted"] and r["planted"][str(t)][1] else "–") for t in RECALL_AT) + " |")
        sig = runs.get("signatures", {})
        if sig.get("status") == "ok":
            s = sig["sigs"]
            rows = [f"**{label}**, {s['records']:,} records, {s['shingles_per_record']:.1f} shingles/record, "
                    f"{NUM_PERM} permutations:", "", "| implementation | records | seconds | signatures/s | × ours |",
                    "|---|---|---|---|---|"]
            ours_rate = s["ours (near.minhash_signatures, CSR input)"]["per_second"]
            for k, v in s.items():
                if isinstance(v, dict):
                    rows.append(f"| {k} | {v['records']:,} | {v['seconds']:.3f} | {v['per_second']:,.0f} | "
                                f"{v['per_second'] / ours_rate:.2f}x |")
            sig_tables.append("\n".join(rows))
    if cross_rows:
        out += ["", "## Cross-check: our exact path vs pure-Python nested loops (same records, J >= 0.3)", "",
                "| dataset | records | pure-Python pairs | ours pairs | only Python | only ours | max ΔJ | identical |",
                "|---|---|---|---|---|---|---|---|"] + cross_rows
    if planted_rows:
        out += ["", "## Recall on planted pairs (synthetic; a planted pair counts at t when its J >= t)", "",
                "| dataset | method | R@0.7 (pairs) | R@0.5 (pairs) | R@0.3 (pairs) |", "|---|---|---|---|---|"]
        out += planted_rows
    for ds in results["datasets"]:
        if ds.get("planted_summary") and not ds.get("switch"):
            out += ["", f"Planted copies in {ds['name']}: " + ", ".join(
                f"rate {r}: {c:,} (median J {j:.2f})" for r, (c, j) in ds["planted_summary"].items())
                + f"; template block {ds['template']:,} records."]
    if switch_rows:
        out += ["", "## Exact vs LSH by size (our engine, find_pairs at 0.3 + curve)", "",
                "| records | nodes | exact find_pairs s | lsh find_pairs s | exact wall s | lsh wall s | "
                "exact Δ MB | lsh Δ MB | lsh R@0.3 |", "|---|---|---|---|---|---|---|---|---|"] + switch_rows
    if sig_tables:
        out += ["", "## MinHash signatures per second", ""] + ["\n\n".join(sig_tables)]
    if stage_rows:
        out += ["", "## Stage breakdown (seconds)", "", "| dataset | method | stages |", "|---|---|---|"] + stage_rows
    return "\n".join(out) + "\n"


def load_range(results) -> str:
    loads = [r["loadavg_before"] for ds in results["datasets"] for r in ds["runs"].values()
             if r.get("loadavg_before") is not None]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "unknown"


def fmt_recall(r: float) -> str:
    if r == 1.0:
        return "1.000"
    return f"{int(r * 10000) / 10000:.4f}"          # never rounds up to 1


def status_or(r, stage):
    return fmt_s(r["stages"][stage]) if r.get("status") == "ok" else r.get("status", "–")


def mb(r):
    return fmt_mb(r["peak_rss_mb"] - r["rss_before_mb"]) if r.get("status") == "ok" else "–"


def fmt_mb(x):
    return "–" if x is None else f"{x:,.0f}"


def fmt_int(x):
    return "–" if x is None else f"{x:,}"


def arg_line(args, defaults) -> str:
    """The options of this run that differ from the defaults, as they would be typed
    (--data is left out: it names a directory of this machine)."""
    parts = []
    for key, value in vars(args).items():
        if key in ("worker", "data", "out", "json") or value == getattr(defaults, key):
            continue
        parts.append(f"--{key.replace('_', '-')}" + ("" if value is True else f" {value}"))
    return " ".join(parts)
