"""Review of round 5's changes (readers, Ray read tasks, several text fields, dotted names, the
Space's share links and benchmark upload): each test is a bug found in review, checked against a
reference computed here with plain Python on real GSM8K rows."""
from __future__ import annotations

import json
import os

import pytest

import auditor
import real_data
from auditor.io.table import Table

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


@pytest.fixture(scope="module")
def gsm():
    rows = real_data.rows("gsm8k/train.jsonl")[:60]
    return [r["question"] for r in rows], [r["answer"] for r in rows]


def exact_groups(texts):
    """Groups of row numbers whose texts are equal after lowercasing and collapsing whitespace."""
    seen: dict = {}
    for i, t in enumerate(texts):
        seen.setdefault(" ".join(t.lower().split()), []).append(i)
    return [g for g in seen.values() if len(g) > 1]


# --------------------------------------------------------------------------- dotted text guess

@pytest.mark.parametrize("options", ["choices", "options"])
def test_a_multiple_choice_items_options_are_not_guessed_as_its_text(gsm, options):
    """ARC-like records whose question object holds its stem and its options as columns
    ({"question": {"stem": ..., "choices": {"text": [...], "label": [...]}}}): the text guessed was
    question.choices.text (three levels deep, "text" ranked before "stem"), so every record with the
    same options was one exact duplicate and the questions were never compared."""
    qs, _ = gsm
    stems = qs[:40] + [qs[3]]                 # one real duplicate: rows 3 and 40
    rows = [{"id": f"Mercury_{i}", "answerKey": "A",
             "question": {"stem": stem, options: {"text": ["Mars", "Venus", "Earth"], "label": ["A", "B", "C"]}}}
            for i, stem in enumerate(stems)]
    result = auditor.scan(Table(rows, "arc"))
    assert result.roles.text == "question.stem" and "text" in result.roles.guessed
    assert result.fields.text == stems
    assert result.exact["text"].examples == exact_groups(stems) == [[3, 40]]


def test_openbookqa_layout_guesses_its_question_stem(gsm):
    """OpenBookQA as the Hub serves it ({"id", "question_stem", "choices": {"text": [...], "label":
    [...]}, "answerKey"}): 8badf85 guessed question_stem (the longest string); round 5 guessed
    choices.text, the four options, ranking any dotted "text" before a plain string."""
    qs, _ = gsm
    stems = qs[:30] + [qs[7], qs[7]]
    rows = [{"id": f"7-{i}", "question_stem": stem, "answerKey": "D",
             "choices": {"text": ["puppies learning new tricks", "children growing up", "flowers wilting",
                                  "plants sprouting"], "label": ["A", "B", "C", "D"]}}
            for i, stem in enumerate(stems)]
    result = auditor.scan(Table(rows, "obqa"))
    assert result.roles.text == "question_stem"
    assert result.fields.text == stems
    assert result.exact["text"].examples == exact_groups(stems) == [[7, 30, 31]]


# --------------------------------------------------------------------------- Space: benchmark upload

def test_an_uploaded_benchmark_with_several_text_fields_reads_them_joined(gsm, tmp_path):
    """The Space's benchmark file with its text named as several fields ("question,answer"): the
    scan reads each item's fields joined, but the evidence texts were read as one field named
    "question,answer" (None for every item), and the check failed with "blank in every item"."""
    from ui import handlers
    qs, ans = gsm
    items = [{"question": q, "answer": a} for q, a in zip(qs[:5], ans[:5])] + [{"question": qs[5]}]
    path = tmp_path / "bench.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in items), encoding="utf-8")
    side = handlers.bench_side("", str(path), "question,answer", None)
    expected = ["\n".join(r[f] for f in ("question", "answer") if r.get(f) is not None) for r in items]
    assert side["texts"] == expected and side["text"] == "question,answer" and side["upload"]


# --------------------------------------------------------------------------- notices in REPORT.md

def write_jsonl(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_readers_notice_is_whole_in_the_markdown_reports(gsm, tmp_path):
    """REPORT.md cut every notice at a table cell's 200 characters: the new readers' notices lost
    what to do (a Spark folder's "Check that the job completed.", a JSON of columns' "save it as one
    line of JSONL"), in the scan's and the contamination scan's reports."""
    from auditor.contamination import contamination
    qs, ans = gsm
    folder = tmp_path / "spark"
    write_jsonl(folder / "part-00000.jsonl", [{"question": q, "answer": a} for q, a in zip(qs[:20], ans[:20])])
    write_jsonl(folder / "part-00001.jsonl", [{"question": q, "answer": a} for q, a in zip(qs[20:30], ans[20:30])])
    write_jsonl(folder / "_temporary" / "0" / "task_1" / "part-00002.jsonl", [{"question": qs[40], "answer": ans[40]}])
    result = auditor.scan(str(folder))
    assert len(result.table.rows) == 30 and result.fields.text == qs[:30]     # the committed parts alone
    report = result.markdown()
    note = next(line for line in report.splitlines() if line.startswith("> Note:") and "temporary" in line)
    assert note.endswith("only the committed part files are read. Check that the job completed.")
    # the contamination scan's report of the same corpus
    bench = write_jsonl(tmp_path / "bench.jsonl", [{"question": qs[3]}, {"question": "An unrelated item."}])
    cr = contamination(str(folder), str(bench), ngram=8)
    assert cr.summary()["contaminated"]["records"] == 1      # qs[3] is in a committed part
    note = next(line for line in cr.markdown().splitlines() if line.startswith("> Note (corpus):") and "temporary" in line)
    assert note.endswith("Check that the job completed.")
    # a JSON object of columns beside one value for the whole file
    columns = tmp_path / "columns.json"
    columns.write_text(json.dumps({"question": qs[:12], "answer": ans[:12], "version": "1.0"}), encoding="utf-8")
    result = auditor.scan(str(columns))
    assert result.fields.text == qs[:12]
    assert any(line.startswith("> Note:") and line.endswith("save it as one line of JSONL.")
               for line in result.markdown().splitlines())
