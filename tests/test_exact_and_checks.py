"""Exact duplicates under each normaliser, schema and degenerate checks, concentration,
label conflicts, role handling, determinism and invariance to order and repetition."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest

import auditor
from auditor import AuditorError, ScanSettings
from auditor.normalize import code as code_normalizer
from auditor.report import to_json

THRESHOLDS = (0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3)


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def groups_of(dup) -> list:
    """The duplicate groups of a small file, as sorted row lists (all fit in the examples)."""
    assert dup.groups <= 5, "too many groups to list"
    return sorted(sorted(e) for e in dup.examples)


# --------------------------------------------------------------------------- exact duplicates

EXACT_ROWS = [
    {"question": "Hello World", "answer": "SELECT a FROM t -- first"},            # 0
    {"question": "hello   world", "answer": "SELECT a FROM t"},                    # 1
    {"question": "Hello World", "answer": "select a from t"},                      # 2
    {"question": "Other", "answer": "x = '#not a comment'  # real comment"},       # 3
    {"question": "other", "answer": "x = '#not a comment'"},                       # 4
    {"question": "Other ", "answer": "x = '#different'"},                          # 5
    {"question": "", "answer": ""},                                                # 6
    {"question": "unique", "answer": "SELECT a\nFROM   t"},                        # 7
    {"answer": "SELECT a FROM t", "question": "HELLO WORLD"},                      # 8
    {"question": "Case matters", "answer": "X = '#not a comment'"},                # 9
]


@pytest.fixture(scope="module")
def exact_file(tmp_path_factory):
    return write_jsonl(tmp_path_factory.mktemp("exact") / "exact.jsonl", EXACT_ROWS)


@pytest.mark.parametrize("normalizer, groups", [
    ("exact", [[0, 2]]),                               # "Other " != "Other", case differs elsewhere
    ("default", [[0, 1, 2, 8], [3, 4, 5]]),            # case and whitespace folded
    ("code", [[0, 2], [3, 5]]),                        # whitespace folded, case kept
])
def test_text_duplicates_by_normalizer(exact_file, normalizer, groups):
    result = auditor.scan(exact_file, text="question", answer="answer",
                          settings=ScanSettings(normalizer=normalizer))
    dup = result.exact["text"]
    assert dup.normalizer == normalizer
    assert groups_of(dup) == groups
    assert dup.groups == len(groups)
    assert dup.records == sum(map(len, groups))
    assert dup.redundant == dup.records - dup.groups
    assert dup.examples[0] == max(groups, key=len)             # largest group first
    assert result.summary()["exact_duplicates"]["text"]["records"] == dup.records


@pytest.mark.parametrize("normalizer, groups", [
    ("exact", [[1, 8]]),
    # lowercase + whitespace: the commented SQL (0) differs; the two Python lines 4 and 9 meet
    ("default", [[1, 2, 7, 8], [4, 9]]),
    # comments stripped ('#' inside a string kept), SQL case-insensitive, Python case kept
    ("code", [[0, 1, 2, 7, 8], [3, 4]]),
])
def test_answer_duplicates_by_normalizer(exact_file, normalizer, groups):
    result = auditor.scan(exact_file, text="question", answer="answer",
                          settings=ScanSettings(answer_normalizer=normalizer))
    dup = result.exact["answer"]
    assert result.answer_normalizer == normalizer
    assert groups_of(dup) == groups
    assert (dup.groups, dup.records) == (len(groups), sum(map(len, groups)))


def test_answer_normalizer_auto_picks_code_and_text_and_answer(exact_file):
    result = auditor.scan(exact_file, text="question", answer="answer")
    assert result.answer_normalizer == "code"               # most answers are SQL or code
    s = result.summary()
    assert s["settings"]["answer_normalizer"] == "code"
    # text under default x answer under code
    assert groups_of(result.exact["text_and_answer"]) == [[0, 1, 2, 8], [3, 4]]
    assert s["exact_duplicates"]["text_and_answer"]["records"] == 6
    assert s["exact_duplicates"]["text_and_answer"]["redundant"] == 4
    # whole records: canonical JSON (sorted keys) under the default normaliser
    assert groups_of(result.exact["record"]) == [[1, 2, 8]]
    assert result.exact_by_normalizer["record"]["exact"].groups == 0
    # the blank row 6 is degenerate, never a duplicate
    assert all(6 not in g for dup in result.exact.values() for g in dup.examples)
    assert s["degenerate"]["records"] == 1
    assert s["degenerate"]["by_role"] == {"text": 1, "answer": 1}


def test_prose_answers_use_default_normalizer(tmp_path):
    rows = [{"q": "one", "a": "The Answer is 4."}, {"q": "two", "a": "the answer   is 4."},
            {"q": "three", "a": "Something else entirely."}]
    result = auditor.scan(write_jsonl(tmp_path / "p.jsonl", rows), text="q", answer="a")
    assert result.answer_normalizer == "default"
    assert groups_of(result.exact["answer"]) == [[0, 1]]


def test_code_normalizer_on_comments_and_strings():
    assert code_normalizer('x = "a # b"  # c') == 'x = "a # b"'
    assert code_normalizer("x = '#keep'\n# drop\ny = 2") == "x = '#keep' y = 2"
    assert code_normalizer("SELECT name FROM t WHERE c = '--x' -- drop") == \
        code_normalizer("select name from t where c = '--x'")
    assert "'--x'" in code_normalizer("SELECT name FROM t WHERE c = '--x' -- drop")
    assert code_normalizer("x = y--z") == "x = y--z"                  # not SQL: `--` is code
    assert code_normalizer("int a; // note\n/* block */ int b;") == "int a; int b;"
    assert code_normalizer("#include <stdio.h>\nint x;") == "#include <stdio.h> int x;"
    assert code_normalizer("Foo = 1") != code_normalizer("foo = 1")   # case kept in code


def test_python_comment_starting_with_if_is_stripped():
    """A Python comment that begins with an English word like 'if' or 'else' is still a comment.

    The C-preprocessor guard (`^\\s*#\\s*(include|define|if|...)`) fires on `# if x is negative`,
    and then every `#` comment of the value is kept."""
    with_comment = "def f(x):\n    # if x is negative, flip it\n    return abs(x)"
    without = "def f(x):\n    return abs(x)"
    assert code_normalizer(with_comment) == code_normalizer(without)


# --------------------------------------------------------------------------- schema and degenerate

def test_schema_issues_missing_and_type(tmp_path):
    rows = [
        {"q": "alpha beta gamma", "a": "1", "n": 1},
        {"q": "delta epsilon zeta", "a": "2", "n": 2},
        {"q": "eta theta iota", "n": "3"},                 # a missing, n a string
        {"q": "kappa lambda mu", "a": "4", "n": 4},
        {"q": "nu xi omicron", "a": "5", "n": None},       # n null
        {"q": "pi rho sigma", "a": "6", "n": 6},
    ]
    result = auditor.scan(write_jsonl(tmp_path / "s.jsonl", rows), text="q", answer="a")
    s = result.summary()["schema"]
    types = {f["name"]: (f["type"], f["present"]) for f in s["fields"]}
    assert types == {"q": ("string", 6), "a": ("string", 5), "n": ("integer", 6)}
    issues = {(i["field"], i["kind"]): i for i in s["issues"]}
    assert set(issues) == {("a", "missing"), ("n", "type")}
    assert issues[("a", "missing")]["records"] == 1
    assert issues[("a", "missing")]["rows_sample"] == [2]
    assert issues[("n", "type")]["records"] == 2
    assert issues[("n", "type")]["expected"] == "integer"
    assert issues[("n", "type")]["found"] == {"null": 1, "string": 1}
    assert issues[("n", "type")]["rows_sample"] == [2, 4]
    assert "## Schema issues" in result.markdown()


def test_clean_schema_has_no_issues(real_data):
    result = auditor.scan(str(real_data / "gsm8k" / "test.jsonl"), max_rows=200)
    assert result.schema.issues == []
    assert result.summary()["degenerate"]["records"] == 0


def test_degenerate_records(tmp_path):
    rows = [
        {"q": "ok one", "a": "x", "g": "g1"},
        {"q": "", "a": "x", "g": "g1"},           # empty text
        {"q": "   \n", "a": "", "g": "g1"},       # blank text and empty answer
        {"q": "ok two", "a": "y", "g": ""},       # empty group
        {"q": "ok three", "g": "g2"},             # no answer
        {"q": "ok four", "a": "z", "g": "g2"},
    ]
    result = auditor.scan(write_jsonl(tmp_path / "d.jsonl", rows), text="q", answer="a", group="g")
    d = result.summary()["degenerate"]
    assert d["records"] == 4
    assert d["by_role"] == {"text": 2, "answer": 2, "group": 1}
    assert d["rows_sample"] == [1, 2, 3, 4]
    # Blank texts have no shingles: they are never near duplicates of each other.
    assert result.near_duplicates(0.3).pairs == 0
    assert result.exact["text"].groups == 0


# --------------------------------------------------------------------------- concentration

def test_concentration_on_spider_db_id(real_data):
    path = real_data / "spider" / "train_spider.jsonl"
    with open(path, encoding="utf-8") as fh:
        db_ids = [json.loads(line)["db_id"] for line in fh]
    counts = Counter(db_ids)
    total = len(db_ids)
    result = auditor.scan(str(path), settings=ScanSettings(thresholds=(0.9,), threshold=0.9))
    assert result.roles.group == "db_id"
    c = result.summary()["concentration"]
    assert c["field"] == "db_id"
    assert c["groups"] == len(counts) == 140
    assert c["records_without_group"] == 0
    value, records = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
    assert c["largest"] == {"value": value, "records": records, "share": round(records / total, 4)}
    assert c["hhi"] == pytest.approx(sum((n / total) ** 2 for n in counts.values()), abs=1e-6)
    assert c["mean_per_group"] == pytest.approx(total / len(counts), abs=1e-4)
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    assert [(t["value"], t["records"]) for t in c["top"]] == top


def test_concentration_by_hand(tmp_path):
    rows = [{"t": f"text number {i}", "src": s} for i, s in enumerate(["a", "a", "b", "a", "", None])]
    result = auditor.scan(write_jsonl(tmp_path / "c.jsonl", rows), text="t", group="src")
    c = result.summary()["concentration"]
    assert c["groups"] == 2
    assert c["records_without_group"] == 2
    assert c["largest"] == {"value": "a", "records": 3, "share": 0.75}
    assert c["hhi"] == pytest.approx(0.75 ** 2 + 0.25 ** 2)
    assert c["mean_per_group"] == 2.0


# --------------------------------------------------------------------------- label conflicts

def test_label_conflicts(tmp_path):
    rows = [
        {"text": "The movie was great", "label": "pos", "topic": "film"},
        {"text": "the movie   was GREAT", "label": "neg", "topic": "film"},
        {"text": "Bad film", "label": "neg", "topic": "film"},
        {"text": "bad film", "label": "neg", "topic": "film"},
        {"text": "Okay I guess", "label": "pos", "topic": "misc"},
        {"text": "Okay I guess", "label": "neu", "topic": "misc"},
        {"text": "Okay I guess", "label": "pos", "topic": "misc"},
        {"text": "Unique words here", "label": "pos", "topic": "misc"},
        {"text": "Same label, other topic", "label": "pos", "topic": "a"},
        {"text": "same label, other topic", "label": "pos", "topic": "b"},
    ]
    path = write_jsonl(tmp_path / "l.jsonl", rows)
    one = auditor.scan(path, text="text", labels=["label"])
    lc = one.summary()["label_conflicts"]
    assert lc["fields"] == ["label"]
    assert (lc["groups"], lc["records"]) == (2, 5)
    assert sorted(map(sorted, lc["examples"])) == [[0, 1], [4, 5, 6]]
    assert "## Label conflicts" in one.markdown()
    two = auditor.scan(path, text="text", labels="label,topic")       # comma-separated
    lc2 = two.summary()["label_conflicts"]
    assert lc2["fields"] == ["label", "topic"]
    assert (lc2["groups"], lc2["records"]) == (3, 7)
    none = auditor.scan(path, text="text")
    assert none.summary()["label_conflicts"] is None


# --------------------------------------------------------------------------- roles

def test_nested_paths_lists_and_numbers(tmp_path):
    rows = [
        {"question": {"stem": "What is two plus two", "choices": [{"label": "A", "text": "four"},
                                                                   {"label": "B", "text": "five"}]},
         "tags": ["math", "easy"], "score": 3, "ratio": 0.5, "ok": True, "id": 17},
        {"question": {"stem": "Name a primary colour", "choices": [{"label": "A", "text": "red"}]},
         "tags": [], "score": -2, "ratio": 1.25, "ok": False, "id": 18},
    ]
    result = auditor.scan(write_jsonl(tmp_path / "n.jsonl", rows), text="question.stem",
                          answer="question.choices.text", group="score", labels=["tags", "ok"], id="ratio")
    f = result.fields
    assert f.text == ["What is two plus two", "Name a primary colour"]
    assert f.answer == ["four five", "red"]
    assert f.group == ["3", "-2"]
    assert f.labels == {"tags": ["math easy", ""], "ok": ["true", "false"]}
    assert f.ids == ["0.5", "1.25"]
    roles = result.summary()["roles"]
    assert roles["text"] == "question.stem" and roles["guessed"] == []


def test_dict_valued_text_is_bad_value(tmp_path):
    rows = [{"question": "plain text one"}, {"question": "plain text two"},
            {"question": {"stem": "nested", "choices": []}}, {"question": "plain text four"}]
    with pytest.raises(AuditorError) as info:
        auditor.scan(write_jsonl(tmp_path / "bad.jsonl", rows), text="question")
    err = info.value
    assert err.code == "bad_value"
    assert "'question'" in err.message
    assert "record 2" in err.message
    assert "question.stem" in err.hint


def test_dotted_key_literal_wins(tmp_path):
    rows = [{"a.b": "literal key text", "a": {"b": "nested text"}}]
    result = auditor.scan(write_jsonl(tmp_path / "dot.jsonl", rows), text="a.b")
    assert result.fields.text == ["literal key text"]


@pytest.mark.parametrize("rel, expected, guessed", [
    ("gsm8k/train.jsonl", {"text": "question", "answer": "answer", "group": None, "id": None},
     ["text", "answer"]),
    ("spider/train_spider.jsonl", {"text": "question", "answer": "query", "group": "db_id", "id": None},
     ["text", "answer", "group"]),
    ("spider/dev.jsonl", {"text": "question", "answer": "query", "group": "db_id", "id": None},
     ["text", "answer", "group"]),
    ("humaneval/HumanEval.jsonl",
     {"text": "prompt", "answer": "canonical_solution", "group": None, "id": "task_id"},
     ["text", "answer", "id"]),
])
def test_role_guessing(real_data, rel, expected, guessed):
    result = auditor.scan(str(real_data / rel), max_rows=300)
    roles = result.summary()["roles"]
    assert {k: roles[k] for k in expected} == expected
    assert roles["guessed"] == guessed
    assert "guessed" in result.markdown()


def test_guessing_respects_given_roles(real_data):
    result = auditor.scan(str(real_data / "spider" / "train_spider.jsonl"), text="query", max_rows=300)
    roles = result.summary()["roles"]
    assert roles["text"] == "query"
    assert "text" not in roles["guessed"]
    assert roles["answer"] != "query"


def test_guessed_answer_skips_object_valued_fields(real_data):
    """Naming the text of Spider dev as `query` must not fail on a role the user never asked for:
    the answer guess falls through to `sql`, a dict in every record, and the whole scan dies."""
    result = auditor.scan(str(real_data / "spider" / "dev.jsonl"), text="query", max_rows=300)
    assert result.roles.text == "query"
    assert result.roles.answer != "sql"


# --------------------------------------------------------------------------- determinism

def test_summary_json_is_deterministic(real_data, run_cli):
    path = str(real_data / "mbpp" / "mbpp.jsonl")
    first = to_json(auditor.scan(path).summary())
    second = to_json(auditor.scan(path).summary())
    assert first == second
    json.loads(first)
    lsh = [to_json(auditor.scan(path, settings=ScanSettings(method="lsh")).summary()) for _ in range(2)]
    assert lsh[0] == lsh[1]
    outs = []
    for seed in ("1", "4242"):
        rc, out, err = run_cli("scan", path, "--json", "-", "--quiet", env={"PYTHONHASHSEED": seed})
        assert rc == 0, err
        outs.append(out)
    assert outs[0] == outs[1]
    assert outs[0] == first
    rc, out_lsh, err = run_cli("scan", path, "--method", "lsh", "--json", "-", "--quiet",
                               env={"PYTHONHASHSEED": "99"})
    assert rc == 0, err
    assert out_lsh == lsh[0]


def counts(result) -> dict:
    """Everything in a scan that must not depend on record order."""
    s = result.summary()
    return {
        "curve": [(p.threshold, p.pairs, p.clusters) for p in result.curve],
        "near": {t: (n.pairs, n.clusters, n.identical_clusters, n.variant_clusters, n.records_in_clusters,
                     n.largest_cluster) for t in THRESHOLDS for n in [result.near_duplicates(t)]},
        "exact": {k: None if v is None else (v["groups"], v["records"]) for k, v in s["exact_duplicates"].items()},
        "by_norm": {f: {k: (v["groups"], v["records"]) for k, v in t.items()}
                    for f, t in s["exact_duplicates_by_normalizer"].items()},
        "degenerate": (s["degenerate"]["records"], s["degenerate"]["by_role"]),
        "schema": sorted((i["field"], i["kind"], i["records"]) for i in s["schema"]["issues"]),
        "concentration": {k: v for k, v in s["concentration"].items()},
        "roles": s["roles"],
        "distinct_texts": s["method"]["distinct_texts"],
    }


@pytest.fixture(scope="module")
def spider_dev_rows(real_data):
    with open(real_data / "spider" / "dev.jsonl", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@pytest.fixture(scope="module")
def spider_dev_scan(real_data):
    return auditor.scan(str(real_data / "spider" / "dev.jsonl"))


def test_permutation_keeps_counts(tmp_path, spider_dev_rows, spider_dev_scan):
    rows = list(spider_dev_rows)
    random.Random(7).shuffle(rows)
    permuted = auditor.scan(write_jsonl(tmp_path / "perm.jsonl", rows))
    assert counts(permuted) == counts(spider_dev_scan)
    assert permuted.fingerprint != spider_dev_scan.fingerprint       # order is part of the identity


def test_doubling_the_dataset(tmp_path, spider_dev_rows, spider_dev_scan):
    n = len(spider_dev_rows)
    doubled = auditor.scan(write_jsonl(tmp_path / "twice.jsonl", spider_dev_rows + spider_dev_rows))
    once = spider_dev_scan
    assert doubled.records == 2 * n
    for name in ("text", "answer", "text_and_answer", "record"):
        before, after = once.exact[name], doubled.exact[name]
        # every record with a value now sits in a group; each distinct value is one group
        needs = {"text": ("text",), "answer": ("answer",), "text_and_answer": ("text", "answer"),
                 "record": ()}[name]
        with_value = sum(1 for t, a in zip(once.fields.text, once.fields.answer)
                         if all(v is not None and v.strip() for v in [{"text": t, "answer": a}[r] for r in needs]))
        assert after.records == 2 * with_value, name
        assert after.groups == with_value - before.redundant, name
        assert after.redundant == with_value + before.redundant, name
    assert doubled.exact["record"].records == 2 * n
    # near duplicates: each old pair appears 4 times, plus one new pair per record and its copy
    nonempty = sum(1 for t in once.fields.text if t and t.split())
    for p1, p2 in zip(once.curve, doubled.curve):
        assert p2.pairs == 4 * p1.pairs + nonempty
        in_cluster = once.near_duplicates(p1.threshold).records_in_clusters
        assert p2.clusters == p1.clusters + (nonempty - in_cluster)
        assert doubled.near_duplicates(p1.threshold).records_in_clusters == 2 * nonempty
    c1, c2 = once.summary()["concentration"], doubled.summary()["concentration"]
    assert c2["hhi"] == c1["hhi"] and c2["groups"] == c1["groups"]
    assert c2["largest"]["records"] == 2 * c1["largest"]["records"]


def test_scan_reports_progress_in_order_and_times_every_stage():
    seen = []
    result = auditor.scan("example:humaneval", progress=lambda fraction, stage: seen.append((fraction, stage)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[0] == 0.0 and seen[-1] == (1.0, "done")
    stages = [s for _, s in seen]
    for stage in ("loading", "reading fields", "searching near duplicates", "clustering"):
        assert stage in stages
    assert list(result.timings) == ["load", "roles", "exact", "shingles", "near_duplicates", "curve"]
    assert all(seconds >= 0 for seconds in result.timings.values())
