"""auditor.dedup ("keep one per cluster") against an independent reference on real data.

The reference (tests/ground_truth.py) finds every pair by brute force with Python sets, and the
components with union-find; the keep rules, review marks and written files are checked against
that, never against the engine's own output.
"""
from __future__ import annotations

import csv
import json
from collections import Counter

import pytest

import auditor
import ground_truth as gt
from auditor import normalize
from auditor.dedup import KEEP_RULES, dedup, load_review, ranked_clusters, review_json, write_dedup
from auditor.errors import AuditorError


THRESHOLDS = (0.7, 0.5)


def _rows(path):
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="module")
def spider(real_data):
    """Spider train: 7,000 questions, many reworded and repeated ones (the same question asked of
    different databases), SQL answers, a group field."""
    path = real_data / "spider" / "train_spider.jsonl"
    rows = _rows(path)
    result = auditor.scan(str(path), settings=auditor.ScanSettings(thresholds=(0.9, 0.7, 0.5)))
    ref = gt.reference([r["question"] for r in rows], min_threshold=min(THRESHOLDS))
    return path, rows, result, ref


def _components(n: int, edges) -> list:
    """Components of >= 2 records (union-find), as sorted tuples."""
    parent = list(range(n))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[ra] = rb
    comps: dict = {}
    for i in range(n):
        comps.setdefault(find(i), []).append(i)
    return sorted(tuple(c) for c in comps.values() if len(c) >= 2)


def _expected_keep(rows, comp, keep, answer_norm) -> int:
    if keep == "first":
        return min(comp)
    if keep == "longest":
        return min(comp, key=lambda i: (-len(rows[i]["question"]), i))
    fn = normalize.get(answer_norm)
    answers = {i: fn(rows[i]["query"]) if rows[i]["query"].strip() else None for i in comp}
    counts = Counter(a for a in answers.values() if a is not None)
    return min(comp, key=lambda i: (-counts.get(answers[i], 0), i))


def _evaluated(row) -> tuple:
    return tuple(" ".join(str(row[k]).lower().split()) for k in ("question", "query", "db_id"))


def _marks_for(ref, threshold, rows):
    """Review marks that split clusters: every pair of some clusters' first member (isolating it),
    a pair of identical questions, and marks that join nothing (different clusters)."""
    pairs = ref.record_pairs(threshold)
    comps = ref.clusters(threshold)
    marks = set()
    for comp in comps[::4]:
        head = comp[0]
        marks |= {(head, j) for j in comp[1:] if (head, j) in pairs}
    same_text = [(a, b) for (a, b), j in pairs.items() if rows[a]["question"] == rows[b]["question"]]
    assert same_text
    marks |= set(same_text[:5])
    marks.add((comps[1][0], comps[2][0]))        # in two clusters: nothing to split
    return sorted(marks)


@pytest.fixture(scope="module")
def small_inputs(real_data, tmp_path_factory):
    """The first 1,500 Spider questions as JSONL, JSON, CSV and Parquet files."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    rows = _rows(real_data / "spider" / "train_spider.jsonl")[:1500]
    rows = [{"id": f"q{i:05d}", **r} for i, r in enumerate(rows)]
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "in.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (folder / "in.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    with open(folder / "in.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    with open(folder / "in.tsv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]), delimiter="\t")
        writer.writeheader()
        writer.writerows(rows)
    pq.write_table(pa.Table.from_pylist(rows), folder / "in.parquet")
    return folder, rows


@pytest.mark.parametrize("threshold", THRESHOLDS)
def test_keep_rules_match_brute_force_components(spider, threshold):
    _, rows, result, ref = spider
    comps = ref.clusters(threshold)
    assert len(comps) > 50                                  # real clusters to decide on
    shingles = gt.shingle_sets([r["question"] for r in rows])
    nd = result.near_duplicates(threshold)
    for keep in KEEP_RULES:
        d = dedup(result, threshold, keep)
        expected_kept = set(range(len(rows)))
        expected_drop = {}
        for comp in comps:
            k = _expected_keep(rows, comp, keep, result.answer_normalizer)
            for i in comp:
                if i != k:
                    expected_kept.discard(i)
                    expected_drop[i] = k
        assert d.kept_rows == tuple(sorted(expected_kept)), keep
        assert len(d.kept_rows) == len(rows) - sum(map(len, comps)) + len(comps)
        assert len(d.kept_rows) == result.records - nd.records_in_clusters + nd.clusters
        assert (d.clusters, d.records_in_clusters) == (len(comps), sum(map(len, comps)))
        assert d.exact and not d.not_duplicates
        assert [x["row"] for x in d.dropped] == sorted(expected_drop)
        for x in d.dropped:
            assert x["kept_row"] == expected_drop[x["row"]]
            assert x["reason"] == ("identical" if _evaluated(rows[x["row"]]) == _evaluated(rows[x["kept_row"]])
                                   else "near_duplicate")
            assert x["jaccard"] == pytest.approx(gt.jaccard(shingles[x["row"]], shingles[x["kept_row"]]), abs=1e-6)
            assert x["id"] is None
            mine, theirs = _evaluated(rows[x["row"]]), _evaluated(rows[x["kept_row"]])
            assert x["differs"] == [name for name, a, b in zip(("text", "answer", "group"), mine, theirs) if a != b]
    reasons = Counter(x["reason"] for x in d.dropped)
    assert reasons["identical"] and reasons["near_duplicate"]
    # Spider asks one question of several databases: dropping such a row drops another SQL answer,
    # which the curator is told (the count by field), not left to find.
    conflicting = Counter(name for x in d.dropped for name in x["differs"] if name != "text")
    assert conflicting["answer"] and conflicting["group"]
    notice = next(n for n in d.notices if "dropped row(s) differ from the record kept" in n)
    assert f"answer ({conflicting['answer']:,})" in notice and f"group ({conflicting['group']:,})" in notice
    summary = json.loads(json.dumps(d.summary()))
    assert summary["kept"] == len(d.kept_rows) and summary["dropped"] == len(d.dropped)


def test_ranked_clusters(spider):
    _, rows, result, ref = spider
    ranked = ranked_clusters(result, 0.5, keep="longest")
    comps = ref.clusters(0.5)
    assert sorted(c.rows for c in ranked) == comps
    assert [(-c.size, c.rows[0]) for c in ranked] == sorted((-c.size, c.rows[0]) for c in ranked)
    for c in ranked:
        assert c.kept_row == _expected_keep(rows, c.rows, "longest", result.answer_normalizer)
        assert c.identical == (len({_evaluated(rows[i]) for i in c.rows}) == 1)
    assert any(c.identical for c in ranked) and any(not c.identical for c in ranked)


def test_review_marks_split_exactly_the_brute_force_components(spider):
    _, rows, result, ref = spider
    t = 0.5
    marks = _marks_for(ref, t, rows)
    edges = [p for p in ref.record_pairs(t) if p not in set(marks)]
    expected = _components(len(rows), edges)
    assert expected != ref.clusters(t)                      # the marks really split something
    ranked = ranked_clusters(result, t, not_duplicates=marks)
    assert sorted(c.rows for c in ranked) == expected
    d = dedup(result, t, "first", not_duplicates=[(b, a) for a, b in marks])   # either order
    assert d.kept_rows == tuple(sorted(set(range(len(rows))) - {i for c in expected for i in c[1:]}))
    assert d.exact and d.not_duplicates == len(marks)
    assert any("nothing to split" in n for n in d.notices)
    # A review file round trip gives the same marks; other data is refused by its fingerprint.
    text = review_json(result, marks)
    assert load_review(text, result) == tuple(sorted(marks))
    doc = json.loads(text)
    # (the records and role fields, however the roles were chosen: issue 34's guessed-roles review)
    from auditor.dedup import review_fingerprint
    assert doc["kind"] == "auditor-review" and doc["fingerprint"] == review_fingerprint(result)


def test_marks_between_identical_copies(real_data):
    """Copies of one question (one node of the engine) and edited copies, with random marks, some
    isolating a copy from every other: the components equal brute force's graph minus the marks."""
    import random
    questions = [r["question"] for r in _rows(real_data / "gsm8k" / "test.jsonl")[:40]]
    texts = []
    for k, q in enumerate(questions[:8]):
        texts += [q] * (2 + k % 4) + [q.replace(" the ", " a ", 1)] + [q + " Explain."]
    texts += questions[8:]
    rng = random.Random(5)
    result = auditor.scan(auditor.Table(rows=[{"question": t} for t in texts], source="copies"))
    pairs = sorted(gt.reference(texts, min_threshold=0.7).record_pairs(0.7))
    for trial in range(6):
        marks = set(rng.sample(pairs, k=min(len(pairs), 5 + 8 * trial)))
        if trial % 2:                                # cut one record off from everything it pairs with
            one = rng.choice(pairs)[0]
            marks |= {p for p in pairs if one in p}
        expected = _components(len(texts), [p for p in pairs if p not in marks])
        got = ranked_clusters(result, 0.7, not_duplicates=sorted(marks))
        assert sorted(c.rows for c in got) == expected, trial
        assert dedup(result, 0.7, not_duplicates=marks).kept_rows == tuple(
            sorted(set(range(len(texts))) - {i for c in expected for i in c[1:]}))


def test_review_file_for_other_data_or_rows_is_refused(spider, real_data, tmp_path):
    _, rows, result, ref = spider
    dev = auditor.scan(str(real_data / "spider" / "dev.jsonl"))
    path = tmp_path / "review.json"
    path.write_text(review_json(result, [(0, 1)]))
    assert load_review(str(path), result) == ((0, 1),)
    with pytest.raises(AuditorError) as err:
        load_review(str(path), dev)
    assert err.value.code == "usage" and "other data" in err.value.message
    doc = json.loads(path.read_text())
    doc["not_duplicates"] = [[0, len(rows)]]
    with pytest.raises(AuditorError, match="outside the dataset"):
        load_review(json.dumps(doc), result)
    with pytest.raises(AuditorError, match="Not an auditor review"):
        load_review('{"kind": "something else"}', result)
    with pytest.raises(AuditorError, match="itself"):
        dedup(result, 0.7, not_duplicates=[(3, 3)])
    with pytest.raises(AuditorError, match="Unknown keep rule"):
        dedup(result, 0.7, keep="shortest")
    with pytest.raises(AuditorError, match="outside the searched range"):
        ranked_clusters(result, 0.3)                     # the scan searched down to 0.5


def test_marks_on_a_sampled_cluster_never_drop_more(real_data):
    """A template cluster with more pairs than the sample keeps: marks are applied to the forest
    and the sampled pairs, stated as not exact, and never drop more than the full graph would."""
    rows = _rows(real_data / "gsm8k" / "test.jsonl")[:300]
    base = rows[0]["question"]
    texts = [f"{base} variant{i}" for i in range(210)] + [r["question"] for r in rows[1:40]]
    result = auditor.scan(auditor.Table(rows=[{"question": t} for t in texts], source="template"),
                          settings=auditor.ScanSettings(threshold=0.7, thresholds=(0.7,)))
    assert not result.pairs.complete
    ref = gt.reference(texts, min_threshold=0.7)
    marks = [(0, j) for j in range(1, 40)] + [(1, 2)]
    edges = [p for p in ref.record_pairs(0.7) if p not in set(marks)]
    truth = len(texts) - sum(len(c) - 1 for c in _components(len(texts), edges))
    d = dedup(result, 0.7, not_duplicates=marks)
    assert not d.exact and any("sampled" in n for n in d.notices)
    assert len(d.kept_rows) >= truth
    no_marks = dedup(result, 0.7)
    assert no_marks.exact and len(no_marks.kept_rows) == len(texts) - 210 + 1


@pytest.mark.parametrize("fmt", ["jsonl", "json", "csv", "tsv", "parquet"])
def test_written_records_equal_their_input_records(small_inputs, tmp_path, fmt):
    folder, rows = small_inputs
    source = folder / f"in.{fmt}"
    result = auditor.scan(str(source), id="id")
    d = dedup(result, 0.5, "longest")
    assert d.dropped and d.dropped[0]["id"] == rows[d.dropped[0]["row"]]["id"]
    out, manifest = tmp_path / f"out.{fmt}", tmp_path / "dropped.csv"
    write_dedup(result, d, str(out), str(manifest))
    original = auditor.load(str(source)).rows           # the input as the auditor reads it
    written = auditor.load(str(out)).rows
    assert written == [original[i] for i in d.kept_rows]
    if fmt not in ("csv", "tsv"):                       # CSV values are strings both ways
        assert written == [rows[i] for i in d.kept_rows]
    with open(manifest, newline="", encoding="utf-8") as fh:
        listed = list(csv.DictReader(fh))
    assert [int(x["row"]) for x in listed] == sorted(set(range(len(rows))) - set(d.kept_rows))
    assert [x["id"] for x in listed] == [rows[int(x["row"])]["id"] for x in listed]
    assert all(x["reason"] in ("identical", "near_duplicate") for x in listed)
    assert [x["differs"] for x in listed] == [";".join(x["differs"]) for x in d.dropped]
    assert any(x["differs"] for x in listed) and any(not x["differs"] for x in listed)
    # Another extension: the input's format.
    other = tmp_path / "out.data"
    write_dedup(result, d, str(other), str(tmp_path / "m.json"))
    assert other.read_bytes() == out.read_bytes()
    manifest_doc = json.loads((tmp_path / "m.json").read_text())
    assert manifest_doc["dropped"] == len(d.dropped) == len(rows) - len(d.kept_rows)
    with pytest.raises(AuditorError) as err:
        write_dedup(result, d, str(tmp_path / "same.jsonl"), str(tmp_path / "same.jsonl"))
    assert err.value.code == "output_path"


def test_most_common_answer_needs_an_answer(real_data):
    result = auditor.scan(auditor.Table(rows=[{"text": "a b c d"}, {"text": "a b c d"}], source="t"))
    with pytest.raises(AuditorError, match="answer field"):
        dedup(result, keep="most_common_answer")


@pytest.mark.slow
def test_cli_dedup(small_inputs, tmp_path, run_cli):
    folder, rows = small_inputs
    source = folder / "in.jsonl"
    out, review = tmp_path / "kept.jsonl", tmp_path / "review.json"
    ref = gt.reference([r["question"] for r in rows], min_threshold=0.5)
    comps = ref.clusters(0.5)
    mark = next((c[0], c[1]) for c in comps if len(c) == 2)
    result = auditor.scan(str(source))
    review.write_text(review_json(result, [mark]))
    code, stdout, stderr = run_cli("dedup", source, "--threshold", "0.5", "--keep", "first", "--review", review,
                                   "--out", out, "--json", "-", "--quiet")
    assert code == 0, stderr
    summary = json.loads(stdout)
    expected = len(rows) - sum(map(len, comps)) + len(comps) + 1        # the marked pair is split
    assert summary["kept"] == expected == len(_rows(out))
    assert _rows(out) == [rows[i] for i in range(len(rows)) if i not in
                          {i for c in comps if c != mark for i in c[1:]}]
    assert json.loads((tmp_path / "kept.jsonl.manifest.json").read_text())["dropped"] == len(rows) - expected
    # Refusals: output over the input, unknown keep rule, a review of other data.
    before = source.read_bytes()
    code, _, stderr = run_cli("dedup", source, "--out", source)
    assert code == 2 and "the same file as the input" in stderr and "Traceback" not in stderr
    assert source.read_bytes() == before
    kept_review = review.read_bytes()
    code, _, stderr = run_cli("dedup", source, "--review", review, "--out", tmp_path / "z.jsonl",
                              "--manifest", review)
    assert code == 2 and "--manifest" in stderr and review.read_bytes() == kept_review
    code, _, stderr = run_cli("dedup", source, "--keep", "shortest", "--out", tmp_path / "x.jsonl")
    assert code == 2 and "invalid choice" in stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**json.loads(review.read_text()), "fingerprint": "sha256:0000"}))
    code, _, stderr = run_cli("dedup", source, "--review", other, "--out", tmp_path / "y.jsonl", "--quiet")
    assert code == 2 and "other data" in stderr and not (tmp_path / "y.jsonl").exists()


def test_a_jsonl_input_is_written_line_for_line(real_data, tmp_path, run_cli):
    """Kept records of a local JSONL file are its own lines, byte for byte (number forms, escapes,
    key order), as --decontaminate copies; exact copies of earlier questions are the rows dropped."""
    questions = [r["question"] for r in auditor.load(str(real_data / "gsm8k" / "test.jsonl")).rows[:60]]
    texts = questions + [questions[3], questions[17], questions[3]]          # rows 60-62: copies
    lines = ['{"z": 1.50, "question": %s, "big": 1e5, "name": "caf\\u00e9", "i": %d}' % (json.dumps(t), i)
             for i, t in enumerate(texts)]
    path = tmp_path / "in.jsonl"
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")
    code, _, err = run_cli("dedup", path, "--text", "question", "--threshold", "0.9", "--keep", "first",
                           "--out", tmp_path / "out.jsonl", "--quiet")
    assert code == 0, err
    dropped = {i for i, t in enumerate(texts) if t in texts[:i]}
    assert dropped == {60, 61, 62}
    assert (tmp_path / "out.jsonl").read_bytes() == "".join(      # (CRLF kept, as written)
        line + "\r\n" for i, line in enumerate(lines) if i not in dropped).encode("utf-8")


def test_a_jsonl_input_rewritten_after_its_scan_is_never_copied(real_data, tmp_path):
    """The lines are copied only while the file is the one scanned: rewritten since with as many
    lines, the copy is refused (it would hold records never audited) and nothing is written."""
    from auditor.io.copies import local_stamps
    questions = [r["question"] for r in auditor.load(str(real_data / "gsm8k" / "test.jsonl")).rows[:20]]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"question": q}) + "\n" for q in questions + questions[:2]), encoding="utf-8")
    stamps = local_stamps(str(path), None)
    result = auditor.scan(str(path), text="question")
    deduped = dedup(result, 0.9, "first")
    assert [d["row"] for d in deduped.dropped] == [20, 21]
    path.write_text("".join(json.dumps({"question": f"never audited {i}"}) + "\n" for i in range(22)), encoding="utf-8")
    with pytest.raises(AuditorError, match="changed while it was read"):
        write_dedup(result, deduped, tmp_path / "out.jsonl", source=str(path), stamps=stamps)
    assert not (tmp_path / "out.jsonl").exists()
