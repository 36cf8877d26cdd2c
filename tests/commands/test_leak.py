"""``leak``: train/test leakage between real benchmark splits, per-side fields, shared groups,
the CI gate (--fail-on-overlap), settings, and a source compared with itself."""
import csv
import io
import json
import random

import pytest

import auditor
from auditor.leakage import leak
from definitions import contained_hits, read_jsonl


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def _records(summary, key):
    return summary[key]["records"]


def _lines(path):
    return [line for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def test_the_leak_report_names_the_fields_it_compared_and_which_were_guessed(tmp_path):
    """From the hostile-input sweep: A guessed field changes every figure (a multiple-choice letter taken as
    the answer makes
    every record "leak" by its answer): REPORT.md names the fields, and says which were guessed."""
    rows = [{"question": f"which option fits case {i} best", "answer": "ABCD"[i % 4], "id": i} for i in range(40)]
    a = write_jsonl_str(tmp_path / "a.jsonl", rows[:20])
    b = write_jsonl_str(tmp_path / "b.jsonl", rows[20:])
    guessed = leak(a, b).markdown()
    assert ("Fields compared: A text `question` (guessed), answer `answer` (guessed); "
            "B text `question` (guessed), answer `answer` (guessed).") in guessed
    named = leak(a, b, text="question", answer="answer").markdown()
    assert "Fields compared: A text `question`, answer `answer`; B text `question`, answer `answer`." in named


def test_gsm8k_train_vs_test_is_clean(real_data):
    s = leak(str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test.jsonl")).summary()
    assert s["kind"] == "leak"
    assert (_records(s, "identical_text"), _records(s, "identical_answer"), _records(s, "identical_both"),
            _records(s, "near_duplicate")) == (0, 0, 0, 0)
    assert s["a"]["records"] == 7473 and s["b"]["records"] == 1319
    for key in ("schema_version", "a", "b", "settings", "method", "shared_groups", "pairs_sample"):
        assert key in s


def test_three_injected_test_rows_are_found(real_data, tmp_path):
    test_lines = _lines(real_data / "gsm8k/test.jsonl")
    train = tmp_path / "train_plus_3.jsonl"
    train.write_text("\n".join(test_lines[:3] + _lines(real_data / "gsm8k/train.jsonl")) + "\n", encoding="utf-8")
    result = leak(str(train), str(real_data / "gsm8k/test.jsonl"))
    s = result.summary()
    assert _records(s, "identical_both") == 3 and _records(s, "near_duplicate") == 3
    # Besides the three, the B texts inside a longer A text by the definition (tests/definitions.py).
    inside = set(contained_hits([r["question"] for r in read_jsonl(train)],
                                [r["question"] for r in read_jsonl(real_data / "gsm8k/test.jsonl")])) - {0, 1, 2}
    assert result.leaked_b_rows == sorted({0, 1, 2} | inside) and _records(s, "contained") == len(inside)
    assert {(p["b"], p["a"]) for p in s["pairs_sample"] if p["b"] < 3} == {(0, 0), (1, 1), (2, 2)}
    assert all(p["match"] == ("identical_both" if p["b"] < 3 else "contained") for p in s["pairs_sample"])
    evidence = [r for r in csv.DictReader(io.StringIO(result.evidence_csv())) if int(r["b_row"]) < 3]
    assert [int(r["b_row"]) for r in evidence] == [0, 1, 2]
    assert all("identical_both" in r["b_kinds"] and "near_duplicate" in r["b_kinds"] for r in evidence)
    assert all(r["kind"] == r["b_kinds"] and r["a_row"] == r["b_row"] == r["a_rows"] for r in evidence)
    assert len(result.clean_b_rows()) == 1319 - 3 - len(inside)


def test_gsm8k_test_vs_socratic_shares_questions_not_answers(real_data):
    s = leak(str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")).summary()
    assert _records(s, "identical_text") == 1319
    assert s["identical_text"]["fraction"] == 1.0
    assert _records(s, "identical_both") == 0


def test_spider_train_vs_dev(real_data):
    result = leak(str(real_data / "spider/train_spider.jsonl"), str(real_data / "spider/dev.jsonl"),
                  text="question", answer="query", group="db_id")
    s = result.summary()
    assert _records(s, "identical_text") == 6
    assert s["shared_groups"] == {"count": 0, "values": [], "records": 0, "fraction": 0.0}
    # Both sides independently: the identical questions are exactly the shared normalised texts.
    train = {" ".join(json.loads(l)["question"].lower().split()) for l in _lines(real_data / "spider/train_spider.jsonl")}
    dev = [" ".join(json.loads(l)["question"].lower().split()) for l in _lines(real_data / "spider/dev.jsonl")]
    assert _records(s, "identical_text") == sum(q in train for q in dev)
    # Identical both can never exceed either identical count.
    assert _records(s, "identical_both") <= min(_records(s, "identical_text"), _records(s, "identical_answer"))
    assert "answerable from memory" in result.markdown()


def test_per_side_fields_and_shared_groups(tmp_path):
    a = tmp_path / "a.jsonl"
    b = tmp_path / "b.jsonl"
    a.write_text("\n".join(json.dumps({"q": f"question number {i} about apples", "src": f"s{i % 3}"})
                           for i in range(20)) + "\n")
    b.write_text("\n".join(json.dumps({"prompt": f"question number {i} about apples", "origin": f"s{i}"})
                           for i in range(15, 25)) + "\n")
    s = leak(str(a), str(b), text="q", group="src", text_b="prompt", group_b="origin").summary()
    assert _records(s, "identical_text") == 5
    assert s["shared_groups"]["values"] == []   # s15.. vs s0..s2
    s = leak(str(a), str(b), text="q", group="src", text_b="prompt", group_b="origin", threshold=0.5).summary()
    assert s["shared_groups"]["count"] == 0


def test_a_split_by_record_says_how_many_test_records_share_a_group(real_data, tmp_path):
    """From a review (session 52): a random split of Spider train puts nearly every test question on
    a database the training side has; the report gave only the number of shared db_id values. It
    now counts the B records in a shared group too, and their fraction (set arithmetic here)."""
    rows = [json.loads(line) for line in _lines(real_data / "spider/train_spider.jsonl")][:3000]
    random.Random(3).shuffle(rows)
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in rows[:2400]))
    b.write_text("".join(json.dumps(r) + "\n" for r in rows[2400:2500] + [{"question": "q", "query": "x"}]))
    result = leak(str(a), str(b), text="question", answer="query", group="db_id")
    shared = sorted({r["db_id"] for r in rows[:2400]} & {r["db_id"] for r in rows[2400:2500]})
    held = sum(r["db_id"] in shared for r in rows[2400:2500])
    s = result.summary()
    assert s["shared_groups"] == {"count": len(shared), "values": shared, "records": held,
                                  "fraction": round(held / 101, 6)}
    assert 0 < held < 101
    assert f"| group value also in A (db\\_id: {len(shared)} shared values) | {held} | " in result.markdown()


def test_leak_cli_fail_on_overlap(run_cli, real_data, tmp_path):
    rc, out, err = run_cli("leak", str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test.jsonl"),
                           "--fail-on-overlap", "--json", "-", "--quiet")
    # No GSM8K test text is in train identically, nearly or inside a longer text (the definitions:
    # tests/definitions.py contained_hits), so the gate passes.
    inside = contained_hits([r["question"] for r in read_jsonl(real_data / "gsm8k/train.jsonl")],
                            [r["question"] for r in read_jsonl(real_data / "gsm8k/test.jsonl")])
    assert rc == (1 if inside else 0) and json.loads(out)["near_duplicate"]["records"] == 0
    assert json.loads(out)["text_leak"]["records"] == json.loads(out)["contained"]["records"] == len(inside)
    rc, out, err = run_cli("leak", str(real_data / "spider/train_spider.jsonl"),
                           str(real_data / "spider/dev.jsonl"), "--text", "question", "--answer", "query",
                           "--fail-on-overlap", "--out-dir", str(tmp_path / "o"), "--quiet")
    assert rc == 1
    assert (tmp_path / "o/summary.json").exists() and (tmp_path / "o/evidence.csv").exists()
    rc, out, err = run_cli("leak", str(real_data / "gsm8k/train.jsonl"), "missing.jsonl", "--fail-on-overlap")
    assert rc == 2 and "missing.jsonl" in err and "Traceback" not in err


def test_leak_takes_an_audited_side_as_it_is(real_data):
    train, test = str(real_data / "gsm8k/train.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")
    audited = auditor.scan(str(real_data / "gsm8k/test.jsonl"))
    from_side = leak(audited.side, test).summary()
    assert from_side == leak(str(real_data / "gsm8k/test.jsonl"), test).summary()
    assert from_side["a"]["fingerprint"] == audited.fingerprint
    assert from_side["identical_text"]["records"] == 1319          # socratic test repeats every question
    assert leak(train, test).summary()["identical_text"]["records"] == 0


def test_leak_settings_object_and_keywords_agree(real_data):
    from auditor.settings import LeakSettings
    from auditor.settings import NearSettings
    a, b = str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test_socratic.jsonl")
    by_keywords = leak(a, b, threshold=0.8, method="lsh").summary()
    assert by_keywords == leak(a, b, settings=LeakSettings(near=NearSettings(threshold=0.8, method="lsh"))).summary()
    assert by_keywords["settings"]["threshold"] == 0.8 and by_keywords["method"]["near_duplicates"] == "minhash-lsh"
    with pytest.raises(auditor.AuditorError) as info:
        leak(a, b, method="fast")
    assert info.value.code == "usage" and "fast" in info.value.message


def test_leak_rejects_bad_threshold(real_data):
    with pytest.raises(auditor.AuditorError) as info:
        leak(str(real_data / "gsm8k/test.jsonl"), str(real_data / "gsm8k/test.jsonl"), threshold=0)
    assert info.value.code == "usage"


def test_a_source_compared_with_itself_is_said_plainly(run_cli, real_data, tmp_path):
    """HumanEval has only a test split, so A (train by default) falls back to it and B reads it
    too: every record matches itself. The CLI says so on stderr and in REPORT.md; a real pair of
    splits (GSM8K train -> test) carries no such note."""
    code, out, err = run_cli("leak", "example:humaneval", "example:humaneval", "--out-dir", tmp_path / "self", "--quiet")
    assert code == 0 and "warning: A and B hold the same records" in err
    report = (tmp_path / "self/REPORT.md").read_text(encoding="utf-8")
    summary = json.loads((tmp_path / "self/summary.json").read_text(encoding="utf-8"))
    assert "> Note: A and B hold the same records" in report
    assert summary["a"]["fingerprint"] == summary["b"]["fingerprint"] and summary["identical_text"]["fraction"] == 1.0
    # The same rows in a second file are the same records too.
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes((real_data / "gsm8k/test.jsonl").read_bytes())
    code, out, err = run_cli("leak", copy, real_data / "gsm8k/test.jsonl", "--quiet")
    assert code == 0 and "warning: A and B hold the same records" in err
    code, out, err = run_cli("leak", real_data / "gsm8k/train.jsonl", real_data / "gsm8k/test.jsonl", "--quiet")
    assert code == 0 and "same records" not in err + out
