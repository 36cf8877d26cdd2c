"""Several text fields as one text (``--text instruction,input``) in scan and leak, and dotted field
names (nested objects, keys with a dot in their name) as the text, on real GSM8K and MBPP rows.

Alpaca-like data shares one instruction across thousands of records that differ by their input:
read alone, the instruction made every such record an exact duplicate of the others. Every figure
below is checked against a reference computed here with plain Python: each record's text is its
present fields joined by a newline, exact groups are equal texts after lowercasing and collapsing
whitespace, and near duplicates come from tests/ground_truth.py (exact all-pairs Jaccard of word
3-shingles).
"""
from __future__ import annotations

import csv
import io
import json
import unicodedata
from pathlib import Path

import pytest

import auditor
import real_data
from auditor.errors import AuditorError
from auditor.io.table import Table
from ground_truth import Reference, engine_record_pairs, shingle_sets


MATH = "Solve the following grade-school math problem. Show your reasoning and give the final answer."
CODE = "Write a Python function that solves the task below."
OTHER = "Answer the question below."
THRESHOLDS = (0.9, 0.7, 0.5, 0.3)


def joined(row: dict, fields) -> str | None:
    """The record's text as the tool defines it: its present (non-null) fields joined by a newline."""
    parts = [row[f] for f in fields if row.get(f) is not None]
    return "\n".join(parts) if parts else None


def norm(text: str | None) -> str | None:
    """The default normaliser, written out: NFC, lowercase, whitespace collapsed; blank is missing."""
    if text is None or not text.strip():
        return None
    return " ".join(unicodedata.normalize("NFC", text).lower().split())


def exact_groups(texts: list) -> list:
    """Rows of every normalised text held by two or more records, largest first, ties by first row."""
    rows: dict = {}
    for i, t in enumerate(texts):
        key = norm(t)
        if key is not None:
            rows.setdefault(key, []).append(i)
    return sorted((r for r in rows.values() if len(r) >= 2), key=lambda r: (-len(r), r[0]))


def reaches(a: frozenset, b: frozenset, threshold: float) -> bool:
    """Jaccard(a, b) >= threshold, decided in integers (threshold has one decimal here)."""
    union = len(a | b)
    return bool(union) and 10 * len(a & b) >= round(10 * threshold) * union


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def gsm():
    return real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")


@pytest.fixture(scope="module")
def alpaca(gsm):
    """An Alpaca-like file from real rows: 300 GSM8K and 150 MBPP tasks under two instructions,
    plus planted copies, variants and instruction-only records."""
    train, _ = gsm
    mbpp = real_data.rows("mbpp/mbpp.jsonl")
    rows = [{"instruction": MATH, "input": r["question"], "output": r["answer"]} for r in train[:300]]
    rows += [{"instruction": CODE, "input": r["text"], "output": r["code"]} for r in mbpp[:150]]
    q = [r["question"] for r in train]
    rows += [
        dict(rows[5]),                                                      # the same record again
        {"instruction": MATH, "input": q[17], "output": train[18]["answer"]},   # same task, another answer
        {"instruction": MATH.upper(), "input": "  " + q[40].upper().replace(" ", "   "),
         "output": train[40]["answer"]},                                    # case and spacing only
        {"instruction": OTHER, "input": q[60], "output": train[60]["answer"]},  # same input, other instruction
        {"instruction": MATH, "input": q[80].replace(q[80].split()[0], "Yesterday", 1),
         "output": train[80]["answer"]},                                    # one word changed
        {"instruction": MATH, "input": q[90].rsplit(".", 1)[0] + ".", "output": train[90]["answer"]},
        {"instruction": CODE, "input": mbpp[10]["text"].replace("function", "python function"),
         "output": mbpp[10]["code"]},
        {"instruction": mbpp[200]["text"], "input": "", "output": mbpp[200]["code"]},   # no input ...
        {"instruction": mbpp[200]["text"], "output": mbpp[200]["code"]},    # ... and none at all
        {"instruction": mbpp[200]["text"].lower(), "input": None, "output": mbpp[200]["code"]},
        {"input": q[100], "output": train[100]["answer"]},                  # no instruction
    ]
    return rows


@pytest.fixture(scope="module")
def alpaca_file(alpaca, tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("alpaca") / "alpaca.jsonl", alpaca)


@pytest.fixture(scope="module")
def leak_sides(gsm, tmp_path_factory):
    """A: 300 GSM8K training tasks under one instruction; B: 60 test tasks under it, plus copies of
    A tasks (whole, with another answer, under another instruction, with a word changed)."""
    train, test = gsm
    a = [{"instruction": MATH, "input": r["question"], "output": r["answer"]} for r in train[:300]]
    b = [{"instruction": MATH, "input": r["question"], "output": r["answer"]} for r in test[:60]]
    b += [dict(a[3]), dict(a[7]),
          dict(a[21], output=test[0]["answer"]),
          dict(a[11], instruction=OTHER),
          dict(a[20], input=a[20]["input"].replace(a[20]["input"].split()[0], "Yesterday", 1)),
          {"input": a[30]["input"], "output": a[30]["output"]}]
    d = tmp_path_factory.mktemp("leak")
    return a, b, write_jsonl(d / "train.jsonl", a), write_jsonl(d / "eval.jsonl", b)


def leak_truth(a, b, fields, threshold=0.7) -> dict:
    ta, tb = [joined(r, fields) for r in a], [joined(r, fields) for r in b]
    na, nb = [norm(t) for t in ta], [norm(t) for t in tb]
    xa, xb = [norm(r["output"]) for r in a], [norm(r["output"]) for r in b]
    texts, answers, both = set(na) - {None}, set(xa) - {None}, set(zip(na, xa))
    sa, sb = shingle_sets(ta, "word", 3), shingle_sets(tb, "word", 3)
    out = {"identical_text": {i for i, t in enumerate(nb) if t in texts},
           "identical_answer": {i for i, x in enumerate(xb) if x in answers},
           "identical_both": {i for i, p in enumerate(zip(nb, xb)) if None not in p and p in both},
           "near_duplicate": {i for i, s in enumerate(sb) if s and any(reaches(s, x, threshold) for x in sa)}}
    out["any_leak"] = set().union(*out.values())
    return out


def questions(gsm, n=80):
    return [r["question"] for r in gsm[0][:n]], [r["answer"] for r in gsm[0][:n]]


def test_several_text_fields_give_the_reference_duplicates(alpaca, alpaca_file):
    fields = ("instruction", "input")
    texts = [joined(r, fields) for r in alpaca]
    result = auditor.scan(alpaca_file, text="instruction,input")
    assert result.roles.text == "instruction,input" and result.roles.text_fields == fields
    assert result.fields.text == texts
    # exact duplicates on the joined text, every group (there are fewer than the 5 examples shown)
    truth = exact_groups(texts)
    got = result.exact_by_normalizer["text"]["default"]
    assert (got.groups, got.records) == (len(truth), sum(map(len, truth)))
    assert len(truth) <= 5 and got.examples == [g[:10] for g in truth]
    assert len(truth) == 4        # the copy, the other answer, case/spacing, the instruction-only three
    # near duplicates: every record pair and cluster at each threshold, against exact all-pairs Jaccard
    ref = Reference(shingle_sets(texts, "word", 3), min_threshold=0.3)
    for t in THRESHOLDS:
        assert set(engine_record_pairs(result.pairs, t)) == set(ref.record_pairs(t)), t
        point = next(p for p in result.curve if abs(p.threshold - t) < 1e-9)
        assert (point.pairs, point.clusters) == (ref.pair_count(t), ref.cluster_count(t)), t
    # the planted variants are found, and two tasks under one instruction are not duplicates
    pairs = ref.record_pairs(0.5)
    assert {(5, 450), (17, 451), (40, 452), (80, 454), (90, 455)} <= set(pairs)
    assert (0, 1) not in ref.record_pairs(0.3) and (300, 301) not in ref.record_pairs(0.3)


def test_the_instruction_alone_makes_every_task_one_duplicate(alpaca, alpaca_file):
    """Why several fields matter: read alone, the shared instruction groups unrelated tasks."""
    alone = auditor.scan(alpaca_file, text="instruction")
    both = auditor.scan(alpaca_file, text="instruction,input")
    big = exact_groups([r.get("instruction") for r in alpaca])[0]
    assert len(big) >= 300 and alone.exact["text"].examples[0] == big[:10]
    assert both.exact["text"].records < 12 and alone.exact["text"].records > 450
    assert alone.fingerprint != both.fingerprint     # the roles are part of the fingerprint


def test_cli_scan_with_several_text_fields(alpaca, alpaca_file, run_cli, tmp_path):
    fields = ("instruction", "input")
    texts = [joined(r, fields) for r in alpaca]
    out = tmp_path / "out"
    code, stdout, err = run_cli("scan", alpaca_file, "--text", "instruction, input", "--out-dir", out, "--quiet")
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert s["roles"]["text"] == "instruction,input" and s["roles"]["text_fields"] == list(fields)
    assert s["roles"]["answer"] == "output" and "text" not in s["roles"]["guessed"]
    truth = exact_groups(texts)
    ex = s["exact_duplicates"]["text"]
    assert (ex["groups"], ex["records"], ex["redundant"]) == (len(truth), sum(map(len, truth)),
                                                              sum(map(len, truth)) - len(truth))
    assert ex["examples"] == [g[:10] for g in truth]
    ref = Reference(shingle_sets(texts, "word", 3), min_threshold=0.3)
    near = s["near_duplicates"]
    assert near["threshold"] == 0.7
    clusters = ref.clusters(0.7)
    assert (near["pairs"], near["clusters"]) == (ref.pair_count(0.7), len(clusters))
    # identical in every evaluated field (text and the guessed answer) vs variants
    identical = sum(len({(norm(texts[i]), norm(alpaca[i].get("output"))) for i in c}) == 1 for c in clusters)
    assert (near["identical_clusters"], near["variant_clusters"]) == (identical, len(clusters) - identical)
    assert identical >= 2 and len(clusters) - identical >= 2      # the copy and case variant; the edits
    for p in s["curve"]:
        assert (p["pairs"], p["clusters"]) == (ref.pair_count(p["threshold"]), ref.cluster_count(p["threshold"]))
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "| text | instruction, input | fields joined as one text |" in report


def test_a_list_of_fields_is_the_same_audit(alpaca):
    table = Table(alpaca, "alpaca")
    by_list = auditor.scan(table, text=["instruction", "input"])
    by_string = auditor.scan(table, text=" instruction , input ")
    assert by_list.fingerprint == by_string.fingerprint and by_list.fields.text == by_string.fields.text
    assert by_list.roles.to_dict() == by_string.roles.to_dict()
    one = auditor.scan(table, text=["input"])          # one field in a list is that field
    assert one.roles.text == "input" and "text_fields" not in one.summary()["roles"]


@pytest.mark.parametrize("spec, message", [
    ("instruction,nope", "The text field 'nope' is in no record."),
    ("instruction,instruction", "The text field 'instruction' is named twice"),
    (",", "name no field"),
    ("instruction,output", "The text and answer roles both name the field 'output'"),
])
def test_bad_text_specs_are_clear_errors(alpaca, spec, message):
    answer = "output" if "output" in spec else None
    with pytest.raises(AuditorError) as info:
        auditor.scan(Table(alpaca, "alpaca"), text=spec, answer=answer)
    assert message in info.value.message
    if "nope" in spec:
        assert "Available fields: instruction, input, output." in info.value.hint


@pytest.mark.slow
def test_cli_bad_spec_exits_2_without_traceback(alpaca_file, run_cli, tmp_path):
    code, out, err = run_cli("scan", alpaca_file, "--text", "instruction,inptu", "--quiet")
    assert code == 2 and "Traceback" not in err
    assert "The text field 'inptu' is in no record." in err and "Available fields: instruction, input, output" in err


@pytest.mark.sweep
def test_ray_leak_reads_several_text_fields_as_the_local_engine(alpaca_file, run_cli, tmp_path):
    """``leak --engine ray --text instruction,input``: A's text is the fields joined, as locally
    (it once read one field, so several read no text at all); the summaries are equal apart from
    the engine block, and the identical-text count is the reference's."""
    pytest.importorskip("ray")
    rows = [json.loads(line) for line in Path(alpaca_file).read_text(encoding="utf-8").splitlines()]
    # 20 records of A, and 20 with A's instructions but inputs A never had
    b_rows = rows[:20] + [{**r, "input": f"{r.get('input') or ''} (variant {i})"} for i, r in enumerate(rows[20:40])]
    b_file = tmp_path / "b.jsonl"
    b_file.write_text("".join(json.dumps(r) + "\n" for r in b_rows), encoding="utf-8")
    summaries = {}
    for engine in ("local", "ray"):
        code, out, err = run_cli("leak", alpaca_file, b_file, "--engine", engine, "--text", "instruction,input",
                                 "--json", tmp_path / f"{engine}.json", "--quiet", timeout=300)
        assert code == 0, err
        summaries[engine] = json.loads((tmp_path / f"{engine}.json").read_text(encoding="utf-8"))
    for summary in summaries.values():
        summary.pop("engine", None)
    assert summaries["ray"] == summaries["local"]
    fields = ("instruction", "input")
    a_texts = {" ".join(t.lower().split()) for t in (joined(r, fields) for r in rows) if t}
    expected = sum(1 for r in b_rows if joined(r, fields) and " ".join(joined(r, fields).lower().split()) in a_texts)
    assert summaries["local"]["identical_text"]["records"] == expected == 20
    # instruction alone would match B's records through A's other inputs too: the joined text is read
    assert summaries["local"]["a"]["roles"]["text_fields"] == list(fields)


def test_a_field_whose_name_has_a_comma_is_that_field(gsm):
    """A present field named with a comma wins over splitting the name (as a key with a dot in its
    name wins over nesting); the name split at a comma that is no field is an error naming the part."""
    train, _ = gsm
    rows = [{"problem, restated": r["question"], "problem": "p", "restated": f"r{i}"}
            for i, r in enumerate(train[:60])]
    rows += [dict(rows[3])]
    result = auditor.scan(Table(rows, "comma"), text="problem, restated")
    assert result.fields.text == [r["problem, restated"] for r in rows]
    assert result.roles.text_fields == ("problem, restated",)
    assert result.summary()["roles"]["text_fields"] == ["problem, restated"]
    assert result.exact["text"].examples == [[3, 60]]
    # "problem,restated" is no field: the two fields, joined
    split = auditor.scan(Table(rows, "comma"), text="problem,restated")
    assert split.fields.text == [f"p\n{r['restated']}" for r in rows]
    with pytest.raises(AuditorError, match="The text field 'restatd' is in no record"):
        auditor.scan(Table(rows, "comma"), text="problem,restatd")
    with pytest.raises(AuditorError, match="has a comma in its name"):
        auditor.scan(Table(rows, "comma"), text=["problem, restated", "problem"])


def test_leak_with_several_text_fields(leak_sides):
    a, b, _, _ = leak_sides
    from auditor.leakage import leak
    fields = ("instruction", "input")
    result = leak(Table(a, "train"), Table(b, "eval"), text=list(fields))
    assert result.answer_normalizer == "default"
    truth = leak_truth(a, b, fields)
    for kind in ("identical_text", "identical_answer", "identical_both", "near_duplicate"):
        assert {i for i, m in result.matches.items() if m.get(kind)} == truth[kind], kind
        assert result.counts[kind] == len(truth[kind]), kind
    assert truth["identical_text"] == {60, 61, 62} and truth["identical_both"] == {60, 61}
    assert {63, 64} <= truth["near_duplicate"] and not truth["any_leak"] & set(range(60))
    # the instruction alone: every B record under it "is in A"
    alone = leak(Table(a, "train"), Table(b, "eval"), text="instruction")
    assert alone.counts["identical_text"] == sum(r.get("instruction") == MATH for r in b) == 64


def test_cli_leak_with_several_text_fields(leak_sides, run_cli, tmp_path):
    a, b, a_file, b_file = leak_sides
    fields = ("instruction", "input")
    out, evidence = tmp_path / "out", tmp_path / "evidence.csv"
    code, stdout, err = run_cli("leak", a_file, b_file, "--text", "instruction,input", "--out-dir", out,
                                "--evidence", evidence, "--quiet")
    assert code == 0, err
    s = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    truth = leak_truth(a, b, fields)
    for kind in ("identical_text", "identical_answer", "identical_both", "near_duplicate", "any_leak"):
        assert s[kind]["records"] == len(truth[kind]), kind
    for side in ("a", "b"):
        assert s[side]["roles"]["text_fields"] == list(fields) and s[side]["roles"]["text"] == "instruction,input"
    assert s["b"]["no_text"] == 0
    report = (out / "REPORT.md").read_text(encoding="utf-8")
    assert "Fields compared: A text `instruction` + `input` (joined)" in report
    rows = list(csv.DictReader(io.StringIO(evidence.read_text(encoding="utf-8"), newline="")))
    assert {int(r["b_row"]) for r in rows} == truth["any_leak"]
    for r in rows:          # both texts as the records' fields joined
        assert r["b_text"] == joined(b[int(r["b_row"])], fields)
        assert r["a_text"] == joined(a[int(r["a_row"])], fields)


@pytest.mark.parametrize("shape, expected_text, expected_answer", [
    # nested, beside a longer plain string not named as text or answer: the text-named field wins
    (lambda q, a, i: {"q": {"text": q}, "a": a}, "q.text", None),
    # beside a short group field (it was guessed as the text)
    (lambda q, a, i: {"q": {"text": q}, "source": "gsm8k"}, "q.text", None),
    # an answer object's text is the answer, not the text
    (lambda q, a, i: {"answer": {"text": a}, "q": {"text": q}}, "q.text", "answer.text"),
    # a key with a dot in its name (it was skipped: no text, or "source" as the text)
    (lambda q, a, i: {"question.text": q}, "question.text", None),
    (lambda q, a, i: {"question.text": q, "source": "gsm8k"}, "question.text", None),
    (lambda q, a, i: {"question.text": q, "answer": a}, "question.text", "answer"),
    (lambda q, a, i: {"id": f"x{i}", "q.body": q}, "q.body", None),
    # two objects deep
    (lambda q, a, i: {"data": {"q": {"text": q}}}, "data.q.text", None),
    # text-named outer names rank the candidates: the question before the context
    (lambda q, a, i: {"context": {"text": a}, "question": {"text": q}}, "question.text", None),
])
def test_dotted_text_is_guessed(gsm, shape, expected_text, expected_answer):
    qs, ans = questions(gsm)
    rows = [shape(q, a, i) for i, (q, a) in enumerate(zip(qs, ans))] + [shape(qs[0], ans[0], 0)]
    result = auditor.scan(Table(rows, "dotted"))
    assert (result.roles.text, result.roles.answer) == (expected_text, expected_answer)
    assert "text" in result.roles.guessed
    assert result.fields.text == [*qs, qs[0]]
    assert result.exact["text"].examples == [[0, len(qs)]]
    # named explicitly, the same field
    named = auditor.scan(Table(rows, "dotted"), text=expected_text)
    assert named.fields.text == result.fields.text and "text" not in named.roles.guessed


@pytest.mark.slow
def test_ambiguous_dotted_names_are_clear_errors(gsm, run_cli, tmp_path):
    qs, ans = questions(gsm)
    # two objects, neither named as text, each holding a "text": which one is the question?
    rows = [{"q": {"text": q}, "p": {"text": a}} for q, a in zip(qs, ans)]
    with pytest.raises(AuditorError) as info:
        auditor.scan(Table(rows, "two"))
    assert "several could be it: q.text, p.text" in info.value.message and "--text q.text" in info.value.hint
    assert auditor.scan(Table(rows, "two"), text="p.text").fields.text == ans
    code, out, err = run_cli("scan", write_jsonl(tmp_path / "two.jsonl", rows), "--quiet")
    assert code == 2 and "several could be it: q.text, p.text" in err and "Traceback" not in err
    # some records hold the key "q.text", others only {"q": {"text": ...}}: two fields mixed
    mixed = [{"q.text": q} if i % 2 else {"q": {"text": q}} for i, q in enumerate(qs)]
    for text in (None, "q.text"):
        with pytest.raises(AuditorError, match="'q.text' is ambiguous: some records hold a field named 'q.text', "
                                               "others only a field 'text' inside 'q'"):
            auditor.scan(Table(mixed, "mixed"), text=text)
    # a record holding both reads the dotted key (as before): not ambiguous
    both = [{"q.text": q, "q": {"text": "nested " + q}} for q in qs]
    assert auditor.scan(Table(both, "both"), text="q.text").fields.text == qs


def test_dotted_fields_joined_with_others(gsm, run_cli, tmp_path):
    """Several fields, some dotted (nested or a dotted key), joined as one text, in a scan and a leak."""
    qs, ans = questions(gsm)
    rows = [{"meta": {"task": "Solve it."}, "question.text": q, "answer": a} for q, a in zip(qs, ans)]
    rows += [dict(rows[4], **{"question.text": qs[5]})]
    fields = ("meta.task", "question.text")
    texts = [f"Solve it.\n{r['question.text']}" for r in rows]
    result = auditor.scan(Table(rows, "d"), text="meta.task,question.text")
    assert result.fields.text == texts and result.exact["text"].examples == [g[:10] for g in exact_groups(texts)]
    assert result.exact["text"].examples == [[5, len(qs)]]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    out = tmp_path / "out"
    code, _, err = run_cli("leak", path, path, "--text", ",".join(fields), "--json", out, "--quiet")
    assert code == 0, err
    s = json.loads(out.read_text(encoding="utf-8"))
    assert s["identical_text"]["records"] == len(rows) and s["a"]["roles"]["text_fields"] == list(fields)
