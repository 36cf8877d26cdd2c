"""The app's handlers (ui.handlers), called directly: no browser, no server.

Every figure is checked against an independent reference: tests/ground_truth.py's pure-Python
all-pairs search, and the data files themselves (tests/real_data.py).
"""
from __future__ import annotations

import csv
import html
import json
import os
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ground_truth  # noqa: E402
import real_data  # noqa: E402
from definitions import contained_hits  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from ui import handlers, layout  # noqa: E402

BASE = "http://space.example/"


def run(dataset, threshold=0.7, upload=None, text="", answer="", config="", split=""):
    return handlers.run(dataset, config, split, text, answer, "", [], threshold, None, upload, None, dataset, BASE)


def frame_rows(update) -> list:
    value = update["value"] if isinstance(update, dict) else update
    if isinstance(value, dict):      # a Dataframe's value as Gradio keeps it
        return value.get("data") or []
    return value.values.tolist() if isinstance(value, pd.DataFrame) else []


def text_of(markup: str) -> str:
    """An HTML part as the page reads: tags dropped, entities decoded, spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split()).replace(" )", ")").replace("( ", "(")


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path) -> list:
    # (split on "\n" only: str.splitlines would also split inside a text holding U+2028)
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


@pytest.fixture(scope="module")
def gsm8k():
    view = run("example:gsm8k", config="main", split="train", text="question", answer="answer")
    assert view["state"] is not None, view["status"]
    return view


@pytest.fixture(scope="module")
def gsm8k_reference():
    rows = real_data.rows("gsm8k/train.jsonl")
    return rows, ground_truth.reference([r["question"] for r in rows])


@pytest.fixture(scope="module")
def spider(tmp_path_factory):
    rows = real_data.rows("spider/train_spider.jsonl")
    path = write_jsonl(tmp_path_factory.mktemp("spider") / "train_spider.jsonl", rows)
    view = run("upload:train_spider.jsonl", threshold=0.5, upload=str(path), text="question", answer="query")
    assert view["state"] is not None, view["status"]
    return view, rows, ground_truth.reference([r["question"] for r in rows])


# --------------------------------------------------------------------------- form and errors

def test_the_placeholder_pick_changes_nothing_and_loads_nothing():
    assert handlers.pick_example("") == {} and handlers.pick_example(None) == {}
    assert handlers.load_fields("", "", None, "") == {}
    names = ["dataset", "config", "split", "text", "answer", "group", "labels"]
    packed = layout.pack({}, names, handlers.pick_example(""))
    assert len(packed) == len(names)                      # one value per output: never "too few"
    assert all(type(v).__name__ == "dict" and v.get("__type__") == "update" and len(v) == 1 for v in packed)
    picked = handlers.pick_example("example:mbpp")
    assert picked["dataset"] == "example:mbpp" and picked["config"]["value"] == ""


def test_an_error_clears_the_previous_results_and_the_share_link(gsm8k):
    assert gsm8k["share"].startswith(BASE) and "dataset=example%3Agsm8k" in gsm8k["share"]
    failed = run("/etc/passwd")
    assert "not a Hugging Face dataset id" in failed["status"]["value"]
    assert failed["status"]["elem_classes"] == ["error"]
    assert failed["share"] == "" and failed["state"] is None
    assert failed["cards"] == "" and failed["overview"] == "" and failed["counts"] == ""
    for part in ("pairs_df", "clusters_df"):
        assert failed[part]["visible"] is False
    assert failed["cluster_view"] == "" and failed["leak_evidence"] == "" and failed["headline"] == ""
    # the form's title no longer names the audit cleared (a browser review: "example:gsm8k" stayed)
    assert gsm8k["form"]["label"].startswith("Fields and options · example:gsm8k")
    assert failed["form"]["label"] == "Fields and options"
    assert failed["para_state"] is None and failed["para_evidence"] == ""     # no paraphrases of the old A
    for part in ("dl_summary", "dl_report", "dl_pairs", "dl_dedup", "dl_evidence", "dl_clean", "dl_para"):
        assert failed[part]["value"] is None and failed[part]["interactive"] is False


# --------------------------------------------------------------------------- one threshold

def test_one_threshold_drives_every_view_the_link_and_the_downloads(gsm8k, gsm8k_reference):
    _, ref = gsm8k_reference
    view = handlers.rethreshold(gsm8k["state"], 0.5)
    pairs = ref.pair_count(0.5)
    assert view["threshold"] == view["curve_threshold"] == 0.5
    assert f"At Jaccard ≥ 0.5:** {pairs} near-duplicate pairs" in view["counts"]
    assert "Near-duplicate pairs at Jaccard ≥ 0.5" in view["overview"]
    assert "threshold=0.5" in view["share"]
    assert f"{ref.cluster_count(0.5)} clusters at Jaccard ≥ 0.5" in view["clusters_info"]
    summary = json.loads(Path(view["dl_summary"]["value"]).read_text(encoding="utf-8"))
    assert summary["near_duplicates"]["threshold"] == 0.5 and summary["near_duplicates"]["pairs"] == pairs
    with open(view["dl_pairs"]["value"], encoding="utf-8", newline="") as fh:
        listed = list(csv.DictReader(fh))
    assert {(int(r["a"]), int(r["b"])) for r in listed} == set(ref.record_pairs(0.5))
    # Run audit keeps the user's threshold (it never falls back to 0.7).
    again = run("example:gsm8k", threshold=0.55, config="main", split="train", text="question", answer="answer")
    assert again["threshold"] == again["curve_threshold"] == 0.55 and "threshold=0.55" in again["share"]


def test_pairs_csv_has_cluster_ids_and_every_role(gsm8k, gsm8k_reference):
    rows, ref = gsm8k_reference
    view = handlers.rethreshold(gsm8k["state"], 0.4)
    with open(view["dl_pairs"]["value"], encoding="utf-8", newline="") as fh:
        listed = list(csv.DictReader(fh))
    assert {"cluster", "text_a", "text_b", "answer_a", "answer_b", "not_duplicate"} <= set(listed[0])
    cluster_of = {}
    for r in listed:
        a, b = int(r["a"]), int(r["b"])
        assert r["text_a"] == rows[a]["question"] and r["answer_b"] == rows[b]["answer"]
        assert cluster_of.setdefault(a, r["cluster"]) == r["cluster"] == cluster_of.setdefault(b, r["cluster"])
    # Records sharing a cluster id are exactly the reference's clusters.
    by_id = {}
    for row, cid in cluster_of.items():
        by_id.setdefault(cid, set()).add(row)
    assert sorted(tuple(sorted(m)) for m in by_id.values()) == ref.clusters(0.4)


# --------------------------------------------------------------------------- pairs review

def test_pages_reach_every_pair_not_the_first_500(spider):
    view, _, ref = spider
    expected = ref.record_pairs(0.5)
    assert len(expected) > 500
    st, seen = view["state"], {}
    for _ in range(len(expected) // handlers.PAGE_SIZE + 2):
        for a, b, j, *_ in frame_rows(view["pairs_df"]):
            seen[(int(a), int(b))] = float(j)
        before = st["cursor"]
        view = handlers.pairs_event(st, "next_page")
        st = view["state"]
        if st["cursor"] == before:
            break
    assert set(seen) == set(expected)
    assert all(abs(seen[p] - expected[p]) < 1e-4 for p in expected)
    assert f"{len(expected):,} pairs at Jaccard ≥ 0.5" in view["pairs_info"]


def test_next_and_previous_walk_the_pairs_in_order(spider):
    view, _, _ = spider
    st = view["state"]
    first = handlers.pairs_event(st, "next")          # the first "next" shows the first pair
    assert "pair 1 of" in first["pair_view"]
    st = first["state"]
    for k in range(2, handlers.PAGE_SIZE + 3):          # across a page boundary
        step = handlers.pairs_event(st, "next")
        st = step["state"]
        assert f"pair {k} of" in step["pair_view"]
    assert f"page 2 of" in step["pairs_info"]
    back = handlers.pairs_event(st, "prev")
    assert f"pair {handlers.PAGE_SIZE + 1} of" in back["pair_view"] and "page 2 of" in back["pairs_info"]
    picked = handlers.pairs_event(back["state"], "select", row=3)
    assert f"pair {handlers.PAGE_SIZE + 4} of" in picked["pair_view"]


def test_filters_jaccard_range_exact_copies_and_search(spider):
    view, rows, ref = spider
    st = view["state"]
    pairs = ref.record_pairs(0.5)

    def walk(**filters):
        out, v = [], handlers.pairs_event(st, "filter", **filters)
        for _ in range(len(pairs) // handlers.PAGE_SIZE + 2):
            out += [(int(r[0]), int(r[1]), float(r[2])) for r in frame_rows(v["pairs_df"])]
            before = v["state"]["cursor"]
            v = handlers.pairs_event(v["state"], "next_page", **filters)
            if v["state"]["cursor"] == before:
                break
        return out, v

    ranged, _ = walk(jmin=0.6, jmax=0.8)
    assert {(a, b) for a, b, _ in ranged} == {p for p, j in pairs.items() if 0.6 - 1e-9 <= j <= 0.8 + 1e-9}
    no_exact, _ = walk(hide_exact=True)
    assert {(a, b) for a, b, _ in no_exact} == {p for p, j in pairs.items() if j < 1.0}
    # a word some pairs have and most do not
    counts = {}
    for a, b in pairs:
        for w in set(rows[a]["question"].lower().split()) | set(rows[b]["question"].lower().split()):
            if len(w) >= 7 and w.isalpha():
                counts[w] = counts.get(w, 0) + 1
    word = min((w for w, c in counts.items() if 5 <= c <= 40), key=lambda w: (counts[w], w))
    found, _ = walk(search=word.upper())
    want = {p for p in pairs if word in rows[p[0]]["question"].lower() or word in rows[p[1]]["question"].lower()}
    assert want and {(a, b) for a, b, _ in found} == want
    none, v = walk(search="zzqx-no-such-words")
    assert none == [] and "No pair matches" in v["pairs_info"] and "zzqx-no-such-words" in v["pairs_info"]
    assert v["pairs_df"]["visible"] is False


def test_records_show_the_files_own_id(tmp_path):
    rows = [{"uid": f"item-{i:03d}", "question": q, "answer": str(i)} for i, q in enumerate(
        ["how many apples does the farmer sell at the market on a sunny day"] * 2
        + [f"completely unrelated question number {i} about {i * 7} stones" for i in range(6)])]
    path = write_jsonl(tmp_path / "ids.jsonl", rows)
    view = run("upload:ids.jsonl", upload=str(path))
    shown = handlers.pairs_event(view["state"], "next")
    assert "id <b>item-000</b>" in shown["pair_view"] and "id <b>item-001</b>" in shown["pair_view"]
    assert frame_rows(view["pairs_df"])[0][5:7] == ["item-000", "item-001"]


# --------------------------------------------------------------------------- marks, review file, dedup

def test_a_not_duplicate_mark_reaches_clusters_link_dedup_and_review_file(gsm8k, gsm8k_reference):
    rows, ref = gsm8k_reference
    (a, b), = [p for p in ref.record_pairs(0.7)]          # GSM8K train has one pair at 0.7
    st = handlers.rethreshold(gsm8k["state"], 0.7)["state"]
    marked = handlers.pairs_event(handlers.pairs_event(st, "next")["state"], "mark")
    st = marked["state"]
    assert st["marks"] == [(a, b)] and f"nd={a}-{b}" in marked["share"]
    assert "No near-duplicate clusters" in marked["clusters_info"]
    built = handlers.build_dedup(st, None)
    kept = read_jsonl(built["dl_dedup"]["value"])
    assert kept == rows                                   # the one cluster was split by the mark
    assert "Not exact" not in built["dedup_info"]         # every pair was known: the split is exact
    # The review file loads back into a fresh session of the same audit.
    review = marked["dl_review"]["value"]
    fresh = handlers.rethreshold(gsm8k["state"], 0.7)["state"]
    loaded = handlers.load_review_file(fresh, review)
    assert loaded["state"]["marks"] == [(a, b)]
    assert "Loaded 1 “not a duplicate” mark from" in loaded["status"]["value"]
    # A share link carrying the mark restores it.
    opened = handlers.page_load({"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question",
                                 "answer": "answer", "threshold": "0.7", "nd": f"{a}-{b},x-1,5-5"}, BASE)
    assert opened["state"]["marks"] == [(a, b)]
    unmarked = handlers.pairs_event(handlers.pairs_event(st, "next")["state"], "mark")
    assert unmarked["state"]["marks"] == [] and "nd=" not in unmarked["share"]


def test_marks_on_a_sampled_cluster_show_the_not_exact_notice_by_the_download(tmp_path):
    """A template cluster with more pairs than the engine samples: a mark inside it splits the
    cluster from the spanning forest and the sample only, and the page says so by the download."""
    test = real_data.rows("gsm8k/test.jsonl")
    texts = [f"{test[0]['question']} variant{i}" for i in range(210)] + [r["question"] for r in test[1:40]]
    path = write_jsonl(tmp_path / "template.jsonl", [{"question": t} for t in texts])
    st = run("upload:template.jsonl", upload=str(path))["state"]
    pairs = ground_truth.reference(texts, min_threshold=0.7).record_pairs(0.7)
    assert len(pairs) > 20_000                            # more than one score stratum of the sample holds
    marked = handlers.pairs_event(handlers.pairs_event(st, "next")["state"], "mark")
    (a, b), = marked["state"]["marks"]
    assert (a, b) in pairs
    built = handlers.build_dedup(marked["state"], None)
    assert "**Not exact:**" in built["dedup_info"] and "only sampled" in built["dedup_info"]
    assert built["dl_dedup"]["interactive"] is True        # the file is still offered, with the notice


def test_dedup_keeps_one_record_per_cluster_unchanged(gsm8k, gsm8k_reference):
    rows, ref = gsm8k_reference
    clusters = ref.clusters(0.4)
    st = handlers.rethreshold(gsm8k["state"], 0.4)["state"]
    for keep, pick in (("first", min), ("longest", None)):
        st = handlers.keep_rule(st, keep)["state"]
        built = handlers.build_dedup(st, None)
        kept = read_jsonl(built["dl_dedup"]["value"])
        redundant = sum(len(c) - 1 for c in clusters)
        assert len(kept) == len(rows) - redundant
        positions = {json.dumps(r, sort_keys=True): i for i, r in enumerate(rows)}
        kept_rows = [positions[json.dumps(r, sort_keys=True)] for r in kept]     # each kept record unchanged
        assert kept_rows == sorted(kept_rows)
        for members in clusters:
            inside = [r for r in kept_rows if r in set(members)]
            assert len(inside) == 1
            if pick is min:
                assert inside == [min(members)]
            else:
                assert len(rows[inside[0]]["question"]) == max(len(rows[m]["question"]) for m in members)
        manifest = json.loads(Path(built["dl_manifest"]["value"]).read_text(encoding="utf-8"))
        assert manifest["dropped"] == redundant and manifest["keep"] == keep


# --------------------------------------------------------------------------- leakage

def test_leakage_between_two_uploaded_files(tmp_path):
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows, b_rows = train[:400], test[:150] + train[:25]          # 25 B records copied from A
    b_rows = b_rows + [{"question": " ", "answer": "#### 99"}]      # and one with no text
    a = write_jsonl(tmp_path / "a.jsonl", a_rows)
    b = write_jsonl(tmp_path / "b.jsonl", b_rows)
    view = run("upload:a.jsonl", upload=str(a))
    st = view["state"]
    got = handlers.leak_check(st, "", "", "", "", str(b), False, "", "")
    assert got["leak_status"]["elem_classes"] == ["ok"], got["leak_status"]
    a_texts = {" ".join(r["question"].lower().split()) for r in a_rows}
    copied = sum(" ".join(r["question"].lower().split()) in a_texts for r in b_rows)
    assert copied == 25
    shown = text_of(got["leak_md"])      # (the summary is a table whose counts are filter buttons)
    assert f"repeat an A text exactly {copied} (" in shown
    assert (f"1 of B's {len(b_rows)} records has no text (missing, null or blank), so text and "
            "near-duplicate matching skipped them.") in shown
    assert "<b>1 of B" in got["leak_md"]           # (bold, as the library marks it)
    assert "of A's" not in shown
    assert "A = a.jsonl" in shown and "B = b.jsonl" in shown
    evidence = list(csv.DictReader(open(got["dl_evidence"]["value"], encoding="utf-8", newline="")))
    assert sum("identical_text" in r["kind"] for r in evidence) == copied
    for r in evidence:
        assert r["b_text"] == b_rows[int(r["b_row"])]["question"] and r["a_text"] == a_rows[int(r["a_row"])]["question"]
    clean = read_jsonl(got["dl_clean"]["value"])
    assert len(clean) == len(b_rows) - len(evidence)
    # The same file as B: refused, unless the box is ticked (then every record matches).
    same = write_jsonl(tmp_path / "a_again.jsonl", a_rows)
    refused = handlers.leak_check(st, "", "", "", "", str(same), False, "", "")
    assert "same" in refused["leak_status"]["value"] and refused["leak_md"] == ""
    allowed = handlers.leak_check(st, "", "", "", "", str(same), True, "", "")
    allowed_text = text_of(allowed["leak_md"])
    assert f"leak in any of these ways {len(a_rows)} (100.00%)" in allowed_text
    assert f"repeat an A text, exactly or nearly (what Clean B split drops; a shared answer alone is often " \
           f"chance) {len(a_rows)} (100.00%)" in allowed_text
    assert ("of which only share an answer (their text not identical, near or inside an A text) 0 (0.00%)"
            in allowed_text)
    # "upload:..." typed as B without a file in B's slot: a clear error, never A compared with itself.
    typed = handlers.leak_check(st, "upload:a.jsonl", "", "", "", None, False, "", "")
    assert "No file in B's upload slot" in typed["leak_status"]["value"]


def test_clean_download_keeps_answer_only_matches_as_auditor_clean_does(tmp_path):
    """Short answers repeat by chance: B records that share only an answer with A stay in the
    clean download; the ones whose question is in A go, the same rows `auditor clean --near` keeps."""
    from auditor.clean import clean
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    a_rows = [{"question": r["question"], "answer": r["answer"].rsplit("####", 1)[-1].strip()} for r in train[:300]]
    b_rows = [{"question": r["question"], "answer": r["answer"].rsplit("####", 1)[-1].strip()} for r in test[:200]]
    b_rows += a_rows[:10]                                          # 10 questions copied from A
    a, b = write_jsonl(tmp_path / "a.jsonl", a_rows), write_jsonl(tmp_path / "b.jsonl", b_rows)
    a_questions = {" ".join(r["question"].lower().split()) for r in a_rows}
    copied = [i for i, r in enumerate(b_rows) if " ".join(r["question"].lower().split()) in a_questions]
    a_answers = {r["answer"] for r in a_rows}
    answer_only = [i for i, r in enumerate(b_rows) if r["answer"] in a_answers and i not in copied]
    assert len(copied) == 10 and len(answer_only) > 50           # final numbers repeat between splits
    st = run("upload:a.jsonl", upload=str(a))["state"]
    got = handlers.leak_check(st, "", "", "", "", str(b), False, "", "")
    kept = read_jsonl(got["dl_clean"]["value"])
    assert kept == [r for i, r in enumerate(b_rows) if i not in copied]
    assert kept == clean(str(b), [str(a)], near=True).kept
    assert "records that only share an answer stay" in got["leak_md"]


def test_contamination_evidence_marks_the_shared_span_as_escaped_text(tmp_path):
    test = real_data.rows("gsm8k/test.jsonl")
    hostile = '<img src=x onerror="alert(1)"> ' + test[7]["question"]
    rows = [{"question": hostile, "answer": "1"}] + [{"question": f"filler record {i} with nothing shared",
                                                     "answer": str(i)} for i in range(5)] + [{"question": "", "answer": "6"}]
    path = write_jsonl(tmp_path / "corpus.jsonl", rows)
    st = run("upload:corpus.jsonl", upload=str(path))["state"]
    got = handlers.leak_check(st, "", "", "", "", None, False, "gsm8k", "")
    assert ("**1 of A's 7 records has no words to check** (missing, null, blank or only punctuation)"
            in got["contam_md"]), got["contam_md"]
    html_ = got["contam_evidence"]
    assert "benchmark row <b>7</b>" in html_ and "A row <b>0</b>" in html_
    assert "<img" not in html_ and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in html_
    marks = [m.split("</mark>")[0] for m in html_.split("<mark class='span'>")[1:]]
    assert marks and all("<" not in m for m in marks)
    assert any(" ".join(test[7]["question"].split()[:6]) in m for m in marks)
    rows_csv = list(csv.DictReader(open(got["dl_contam"]["value"], encoding="utf-8", newline="")))
    assert rows_csv[0]["benchmark_text"] == test[7]["question"] and rows_csv[0]["corpus_text"] == hostile


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_a_without_its_contaminated_records_is_offered_in_its_own_format(tmp_path, fmt):
    """The Space's "A without contaminated records": A's rows less those sharing an n-gram with
    the benchmark (by the n-gram reference), in A's format, each kept row as read."""
    from definitions import contamination_reference
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    rows = [{"question": r["question"], "answer": r["answer"][:40]} for r in train[:400]]
    for at, item in ((3, 11), (150, 12), (399, 13)):
        rows[at]["question"] = "Copied: " + test[item]["question"]
    path = tmp_path / f"a.{fmt}"
    if fmt == "jsonl":
        write_jsonl(path, rows)
    else:
        pd.DataFrame(rows).to_csv(path, index=False)
    st = run(f"upload:a.{fmt}", upload=str(path))["state"]
    got = handlers.leak_check(st, "", "", "", "", None, False, "gsm8k", "")
    n = int(re.search(r"sharing a (\d+)-gram", got["contam_md"])[1])
    found = contamination_reference([r["question"] for r in rows], [r["question"] for r in test], n)
    dropped = set().union(*(set(r) for r, _, _ in found.values()))
    assert {3, 150, 399} <= dropped
    copy = got["dl_decontam"]["value"]
    assert copy.endswith(f".decontaminated.{fmt}")
    import auditor
    assert auditor.load(copy).rows == [r for i, r in enumerate(auditor.load(str(path)).rows) if i not in dropped]
    assert f"{len(rows) - len(dropped):,} of {len(rows):,} records" in got["contam_md"]


def test_a_parquet_a_without_its_contaminated_records_keeps_its_column_types(tmp_path):
    """From the round-7 hostile review: the download of a Parquet upload without its contaminated
    records was rebuilt from Python values (nanosecond timestamps cut to microseconds, uint64 past
    int64 written as JSON text); it is now the upload's rows as stored, less the dropped ones
    (ground truth: pyarrow's take of the upload, the dropped rows from the n-gram reference)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from definitions import contamination_reference
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    questions = [r["question"] for r in train[:200]]
    for at, item in ((3, 11), (150, 12)):
        questions[at] = "Copied: " + test[item]["question"]
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"question": questions,
                             "at": pa.array([1577836800000000001 + i for i in range(200)], pa.timestamp("ns")),
                             "big": pa.array([2**64 - 1 - i for i in range(200)], pa.uint64())}), path)
    st = run("upload:a.parquet", upload=str(path))["state"]
    got = handlers.leak_check(st, "", "", "", "", None, False, "gsm8k", "")
    n = int(re.search(r"sharing a (\d+)-gram", got["contam_md"])[1])
    found = contamination_reference(questions, [r["question"] for r in test], n)
    dropped = set().union(*(set(r) for r, _, _ in found.values()))
    assert {3, 150} <= dropped
    copy = got["dl_decontam"]["value"]
    assert copy.endswith(".decontaminated.parquet")
    assert pq.read_table(copy).equals(pq.read_table(path).take([i for i in range(200) if i not in dropped]))


def test_contamination_of_an_instruction_layout_reads_every_field_as_the_cli_does(tmp_path, run_cli):
    """No fields picked and the text role guessed: an Alpaca-shaped A is checked in instruction,
    input and output joined, as `auditor contamination` guesses (a benchmark question pasted into
    `input` was missed when only the scan's text, instruction, was read)."""
    test = real_data.rows("gsm8k/test.jsonl")
    train = real_data.rows("gsm8k/train.jsonl")
    rows = [{"instruction": f"Solve the word problem number {i} below.", "input": r["question"],
             "output": r["answer"]} for i, r in enumerate(train[:300])]
    for at, item in ((5, 20), (200, 21)):
        rows[at]["input"] = test[item]["question"]
    rows[77]["output"] = "As asked: " + test[22]["question"]
    path = write_jsonl(tmp_path / "sft.jsonl", rows)
    st = run("upload:sft.jsonl", upload=str(path))["state"]
    got = handlers.leak_check(st, "", "", "", "", None, False, "gsm8k", "")
    n = int(re.search(r"sharing a (\d+)-gram", got["contam_md"])[1])
    code, out, err = run_cli("contamination", path, "--benchmark", "gsm8k", "--ngram", str(n), "--json", "-", "--quiet")
    assert code == 0, err
    items = json.loads(out)["items"]
    assert {it["benchmark_row"] for it in items} >= {20, 21, 22}
    with open(got["dl_contam"]["value"], encoding="utf-8", newline="") as fh:
        pairs = {(int(r["benchmark_row"]), int(r["corpus_row"])) for r in csv.DictReader(fh)}
    assert pairs == {(it["benchmark_row"], row) for it in items for row in it["corpus_rows"]}
    kept = read_jsonl_lines(got["dl_decontam"]["value"])
    assert len(kept) == len(rows) - len({r for it in items for r in it["corpus_rows"]})


def read_jsonl_lines(path) -> list:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def test_download_folders_stay_within_their_byte_budget(tmp_path, monkeypatch):
    """Oldest download folders go first once the folders hold more than FILES_BYTES (or number
    more than KEEP_FOLDERS); the folder being made and the newest ones stay."""
    from ui import state
    monkeypatch.setattr(state, "FILES_DIR", tmp_path)
    monkeypatch.setattr(state, "FILES_BYTES", 10_000)
    monkeypatch.setattr(state, "KEEP_FOLDERS", 5)
    for k in range(4):
        folder = state.new_folder(f"f{k}")
        (folder / "pairs.csv").write_bytes(b"x" * 4_000)
        os.utime(folder, (1_000 + k, 1_000 + k))
    # 16,000 bytes in four folders: the two oldest go, leaving 8,000 bytes and the new folder.
    state.new_folder("f4")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f2", "f3", "f4"]
    for k in range(5, 9):                     # small folders: now the count binds
        state.new_folder(f"f{k}")
        os.utime(tmp_path / f"f{k}", (2_000 + k, 2_000 + k))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f4", "f5", "f6", "f7", "f8"]


def test_a_download_folder_removed_meanwhile_does_not_fail_the_next(tmp_path, monkeypatch):
    """Another request may remove a folder between the listing and its stat: new_folder goes on."""
    from ui import state
    monkeypatch.setattr(state, "FILES_DIR", tmp_path)
    for name in ("kept", "gone", "going"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pairs.csv").write_bytes(b"x" * 100)
    real_stat, calls = Path.stat, []

    def stat(self, *args, **kwargs):
        # The folder "gone" and the file going/pairs.csv each answer once, then have vanished.
        if self.name == "gone" or self.parts[-2:] == ("going", "pairs.csv"):
            calls.append(self)
            if calls.count(self) > 1:
                raise FileNotFoundError(2, "No such file or directory", str(self))
        return real_stat(self, *args, **kwargs)
    monkeypatch.setattr(Path, "stat", stat)
    assert state.new_folder("new").is_dir()
    assert (tmp_path / "kept" / "pairs.csv").exists()
    assert {p.name for p in calls if calls.count(p) > 1} == {"gone", "pairs.csv"}     # both vanished mid-way


def test_leakage_b_without_a_split_is_the_evaluation_split_as_in_the_cli(run_cli):
    """B is the evaluation side: A = GSM8K train and B the same dataset with no split named reads
    B's test split, in the Space as in the CLI and the library (before, B was train too: every
    record leaked into itself, or the page refused)."""
    view = run("example:gsm8k", config="main", split="train", text="question", answer="answer")
    got = handlers.leak_check(view["state"], "example:gsm8k", "main", "", "", None, False, "", "")
    assert got["leak_status"]["elem_classes"] == ["ok"], got["leak_status"]
    test_rows = len(real_data.rows("gsm8k/test.jsonl"))
    library = leak("example:gsm8k", "example:gsm8k", config_a="main", config_b="main").summary()
    assert (library["a"]["split"], library["b"]["split"]) == ("train", "test")
    # GSM8K test shares no text or answer with train; the B texts inside a training text by the
    # definition (tests/definitions.py) are its only leaks
    inside = contained_hits([r["question"] for r in real_data.rows("gsm8k/train.jsonl")],
                            [r["question"] for r in real_data.rows("gsm8k/test.jsonl")])
    assert library["b"]["records"] == test_rows and library["any_leak"]["records"] == len(inside)
    code, out, err = run_cli("leak", "example:gsm8k", "example:gsm8k", "--json", "-", "--quiet")
    assert code == 0 and json.loads(out)["b"]["split"] == "test", err
    assert f"B = example:gsm8k (main / test, {test_rows:,} records)" in text_of(got["leak_md"])
    # Named as A's split, it is still refused as the same data.
    same = handlers.leak_check(view["state"], "example:gsm8k", "main", "train", "", None, False, "", "")
    assert "same data as A" in same["leak_status"]["value"]


def test_dedup_names_the_answers_it_drops(tmp_path):
    """Two GSM8K questions each asked twice, once with another answer: the deduplicated file keeps
    one of each, and the note by the download counts the dropped rows whose answer was not the
    kept one's (read from the rows here: the copy of question 1 has another answer, of 0 not)."""
    test = real_data.rows("gsm8k/test.jsonl")
    rows = [dict(q) for q in test[:6]]
    rows += [dict(test[0]), {**test[1], "answer": test[1]["answer"] + " (wrong)"}]
    path = write_jsonl(tmp_path / "conflict.jsonl", [{"question": r["question"], "answer": r["answer"]} for r in rows])
    st = run("upload:conflict.jsonl", upload=str(path))["state"]
    built = handlers.build_dedup(st, None)
    assert read_jsonl(built["dl_dedup"]["value"]) == [{"question": r["question"], "answer": r["answer"]}
                                                      for r in rows[:6]]
    manifest = json.loads(Path(built["dl_manifest"]["value"]).read_text())
    assert [(d["row"], d["kept_row"], d["differs"]) for d in manifest["dropped_rows"]] == [(6, 0, []), (7, 1, ["answer"])]
    assert "1 dropped row(s) differ" in built["dedup_info"] and "answer (1)" in built["dedup_info"]
