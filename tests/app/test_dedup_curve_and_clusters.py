"""The curve answers "what will dedup do at t" and the cluster browser works like a dataset viewer,
from the page's handlers (no browser): at any threshold (not only 0.1 steps) the rows kept and
dropped, the largest cluster, the clusters and pairs, equal to the exact all-pairs reference; the
axis runs as the sliders do; numbers are formatted; the clusters list pages with counts, searches
and filters by size and kind; each record of a cluster is shown whole beside the record kept; a
record kept apart and a split cluster change the deduplicated file as the page says; every tab
shows one count. Ground truth: tests/ground_truth.py on GSM8K train, and on GSM8K questions with
templated variants (clusters of 7 chained at different strengths)."""
from __future__ import annotations

import json
import re
from pathlib import Path

import plotly.io
import pytest

import ground_truth
import real_data
from ui import clusters as browser, curve_view, handlers

BASE = "http://localhost/"


def read_jsonl(path) -> list:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def dropped_by(clusters) -> int:
    return sum(len(c) - 1 for c in clusters)


@pytest.fixture(scope="module")
def gsm8k():
    rows = real_data.rows("gsm8k/train.jsonl")
    view = handlers.run("example:gsm8k", "main", "train", "question", "answer", "", [], 0.7, None, None, None,
                        "example:gsm8k", BASE)
    assert view["state"] is not None, view["status"]
    return view, rows, ground_truth.reference([r["question"] for r in rows])


@pytest.fixture(scope="module")
def templated(tmp_path_factory):
    rows = [{"question": r["question"], "answer": r["answer"]} for r in real_data.rows("gsm8k/train.jsonl")[:1500]]
    for base in range(0, 300, 10):
        words = rows[base]["question"].split()
        for k in range(1, 7):
            changed = list(words)
            for w in range(k):
                changed[(w * 7 + 3) % len(changed)] = f"zz{base}x{k}x{w}"
            rows.append({"question": " ".join(changed), "answer": rows[base]["answer"]})
    path = tmp_path_factory.mktemp("templated") / "templated.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    view = handlers.run("upload:templated.jsonl", "", "", "question", "answer", "", [], 0.4, None, str(path), None,
                        "upload:templated.jsonl", BASE)
    assert view["state"] is not None, view["status"]
    return view, rows, ground_truth.reference([r["question"] for r in rows])


def test_the_curve_says_what_dedup_does_at_any_threshold(gsm8k):
    view, rows, ref = gsm8k
    result = handlers.CACHE.get(view["state"]["key"])
    points = browser.curve(result, view["state"]["key"])
    assert [p.threshold for p in points] == [round(0.3 + k / 100, 2) for k in range(71)]   # every 0.01, ascending
    for t in (0.3, 0.37, 0.42, 0.5, 0.55, 0.63, 0.7, 0.86, 1.0):
        p = curve_view.at(points, t)
        clusters = ref.clusters(t)
        assert p.threshold == t
        assert (p.rows_dropped, p.rows_kept) == (dropped_by(clusters), len(rows) - dropped_by(clusters))
        assert (p.clusters, p.largest_cluster, p.pairs) == (len(clusters), max(map(len, clusters), default=0),
                                                            ref.pair_count(t))
    # At a threshold between the old 0.1 steps, every view answers from the cache.
    moved = handlers.rethreshold(view["state"], 0.63)
    clusters = ref.clusters(0.63)
    assert f"dedup keeps {len(rows) - dropped_by(clusters):,} of {len(rows):,} rows and drops {dropped_by(clusters)}" \
        in moved["counts"]
    assert f"At Jaccard ≥ 0.63:** {ref.pair_count(0.63)} near-duplicate pair" in moved["counts"]
    fig = plotly.io.from_json(moved["curve_plot"].plot)      # the chart as the page receives it
    xaxis = fig.layout.xaxis
    assert xaxis.autorange in (None, True) and xaxis.range[0] < xaxis.range[1]      # looser left, as the sliders
    assert "looser ← → stricter" in xaxis.title.text and xaxis.tickformat == ".1f"
    assert fig.layout.yaxis.tickformat == ",d"
    hover = fig.data[0].customdata
    assert all(re.fullmatch(r"[\d,]+", c[0]) for c in hover) and hover[0][0] == f"{points[0].rows_kept:,}"
    # The table: every 0.05 and the chosen 0.63, numbers with thousands separators, never 0.1 steps only.
    table = moved["curve_df"]
    shown = re.findall(r"<th scope='row'>([\d.]+)</th> <td>([\d,]+)</td>", table)
    assert [t for t, _ in shown] == [f"{0.3 + k * 0.05:.2f}" for k in range(15)][:7] + ["0.63"] + \
        [f"{0.3 + k * 0.05:.2f}" for k in range(15)][7:]
    assert dict(shown)["0.63"] == f"{len(rows) - dropped_by(clusters):,}" and "aria-current='true'" in table
    # The text describes what the chart shows (no claim about jumps the figures do not show).
    assert "the red area is the rows dropped" in moved["curve_text"] and "jump" not in moved["curve_text"]


def test_the_cluster_list_pages_searches_and_filters_with_its_counts(templated):
    view, rows, ref = templated
    st = view["state"]
    clusters = ref.clusters(0.4)
    caption = view["clusters_info"]
    assert f"**{len(clusters)} clusters at Jaccard ≥ 0.4**" in caption
    assert f"**{len(rows) - dropped_by(clusters):,} of {len(rows):,} rows**" in caption
    assert f"Showing 1–{min(20, len(clusters))}." in caption
    first_page = view["clusters_df"]["value"]
    sizes = sorted((len(c) for c in clusters), reverse=True)
    assert first_page["size"].tolist() == sizes[:20] and first_page["rank"].tolist() == list(range(1, 21))
    # Every cluster is reachable: the pages hold them all, no cap.
    seen, page_st = [], st
    while True:
        frame = handlers.clusters_event(page_st, "next" if seen else "filter", "", 2, None, "all")
        page_st = frame.get("state", page_st)
        current = handlers.clusters_event(page_st, "filter", "", 2, None, "all")["clusters_df"]["value"]
        if seen and current["rank"].tolist()[0] == seen[-1]:
            break
        seen += current["rank"].tolist()
        if len(seen) >= len(clusters):
            break
    assert seen == list(range(1, len(clusters) + 1))
    # Size filter: clusters of 7 only; search: words of one record.
    big = handlers.clusters_event(st, "filter", "", 7, 7, "all")
    assert f"{sum(len(c) == 7 for c in clusters)} of them match the filters" in big["clusters_info"]
    word = rows[10]["question"].split()[4]
    hits = [c for c in clusters if any(word.lower() in rows[r]["question"].lower() for r in c)]
    found = handlers.clusters_event(st, "filter", word, 2, None, "all")
    assert f"{len(hits)} of them match the filters" in found["clusters_info"]
    none = handlers.clusters_event(st, "filter", "no such words anywhere", 2, None, "all")
    assert "none to show" in none["clusters_info"]


def test_a_cluster_shows_every_record_beside_the_kept_one(templated):
    view, rows, ref = templated
    st = view["state"]
    opened = handlers.clusters_event(st, "select", "", 2, None, "all", row=0)
    html = opened["cluster_view"]
    biggest = max(ref.clusters(0.4), key=lambda c: (len(c), -c[0]))
    assert f"{len(biggest)} variant records at Jaccard ≥ 0.4" in html
    assert f"record <b>{biggest[0]}</b>" in html and "badge kept" in html
    long = max(biggest, key=lambda r: len(rows[r]["question"]))
    assert rows[long]["question"][-60:].replace("'", "&#x27;") in html or long == biggest[0]   # whole texts, not 160 chars
    changed = re.findall(r"<mark class='only-b'>(zz[^<]+)</mark>", html)
    assert changed and all(w.startswith("zz") for w in changed)                                # the differences marked
    assert "Split this cluster" in html and "Keep this record too" in html


def test_keeping_a_record_apart_and_splitting_a_cluster_change_the_file_as_said(templated):
    view, rows, ref = templated
    st = view["state"]
    clusters = ref.clusters(0.4)
    base_kept = len(rows) - dropped_by(clusters)
    biggest = max(clusters, key=lambda c: (len(c), -c[0]))
    apart = handlers.cluster_action(st, "apart", biggest[1])
    assert re.search(rf"Record {biggest[1]} is kept apart: the deduplicated file keeps (\d+) more rows? "
                     rf"\(([\d,]+) of {len(rows):,}\)", apart["status"]["value"])
    gained = int(re.search(r"keeps (\d+) more", apart["status"]["value"]).group(1))
    truth = ground_truth_without(ref, 0.4, biggest[1], len(rows))
    assert len(rows) - dropped_by(truth) == base_kept + gained
    built = handlers.build_dedup(apart["state"])
    assert len(read_jsonl(built["dl_dedup"]["value"])) == base_kept + gained
    assert f"· {base_kept + gained:,} records" in built["dl_dedup"]["label"]
    assert f"ka={biggest[1]}" in apart["share"] and "1 decision" in apart["dl_review"]["label"]
    # every tab, one count: the headline, the counts line, the clusters caption, the Downloads line
    clusters_after = len(truth)
    assert f"{clusters_after} clusters" in apart["headline"]
    assert f"After your review:** {clusters_after} clusters, dedup keeps {base_kept + gained:,} rows" in apart["counts"]
    assert f"**{clusters_after} clusters at Jaccard ≥ 0.4**" in apart["clusters_info"]
    assert f"keeps {base_kept + gained:,} of {len(rows):,} records" in apart["dedup_info"]
    undone = handlers.cluster_action(apart["state"], "unapart", biggest[1])
    assert "back in its cluster" in undone["status"]["value"] and "keeps " in undone["status"]["value"]
    # Split the biggest cluster at its weakest link: the page's words, the file and the reference agree.
    split = handlers.cluster_action(st, "split", biggest[0])
    words = split["status"]["value"]
    cut = float(re.search(r"split at Jaccard ≥ ([\d.]+)", words).group(1))
    members = set(biggest)
    pairs = ref.record_pairs(0.4)
    after = components(len(rows), [(a, b) for (a, b), j in pairs.items() if a not in members or j >= cut - 1e-9])
    kept_after = len(rows) - dropped_by(after)
    assert f"keeps {kept_after - base_kept} more row" in words and kept_after > base_kept
    assert len(read_jsonl(handlers.build_dedup(split["state"])["dl_dedup"]["value"])) == kept_after
    assert f"sp={biggest[0]}%40{cut:g}" in split["share"]


def ground_truth_without(ref, t, row, n):
    return components(n, [(a, b) for (a, b) in ref.record_pairs(t) if row not in (a, b)])


def components(n: int, edges) -> list:
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in edges:
        parent[find(a)] = find(b)
    groups: dict = {}
    for x in range(n):
        groups.setdefault(find(x), []).append(x)
    return [tuple(g) for g in groups.values() if len(g) >= 2]
