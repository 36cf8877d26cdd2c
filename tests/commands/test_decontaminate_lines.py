"""``contamination --decontaminate`` on awkward JSONL lines and small Arrow blocks, against an
independent reading of the bytes (split at "\n", blank lines skipped, the n-gram reference of
tests/definitions.py)."""
from __future__ import annotations

import json

import pytest

import auditor.contamination as contamination_module
from auditor import textstream, wordtokens
from auditor.decontaminate import decontaminate
from auditor.errors import AuditorError
from definitions import contamination_reference, read_jsonl


def expected_copy(raw: bytes, fields: list[str], questions: list[str], n: int) -> tuple[list[int], bytes]:
    """(dropped rows, the copy's bytes) read off the corpus's bytes by hand: a record is a line
    (split at "\\n" only, a UTF-8 BOM dropped) that is not blank; its text the fields present,
    joined by a newline; each kept line written as it was, with "\\n"."""
    text = raw.decode("utf-8").removeprefix("\ufeff")
    lines = [line for line in text.split("\n") if line.strip()]
    texts = []
    for line in lines:
        record = json.loads(line)
        parts = [record.get(f) for f in fields]
        parts = [" ".join(map(str, p)) if isinstance(p, list) else str(p) for p in parts if p is not None]
        texts.append("\n".join(parts))
    found = contamination_reference(texts, questions, n)
    dropped = sorted(set().union(*(set(rows) for rows, _, _ in found.values())))
    return dropped, "".join(line + "\n" for i, line in enumerate(lines) if i not in set(dropped)).encode()


@pytest.fixture(scope="module")
def questions(real_data):
    return [r["question"] for r in read_jsonl(real_data / "gsm8k/test.jsonl")]


@pytest.fixture(scope="module")
def awkward(real_data, questions):
    """GSM8K train questions as JSONL with every line shape the readers meet, three test questions
    planted: a BOM, CRLF ends, blank and whitespace-only lines (U+00A0 too), U+2028 and an escaped
    lone surrogate inside texts, texts missing, null, a number and a list, no final newline."""
    train = [r["question"] for r in read_jsonl(real_data / "gsm8k/train.jsonl")[:300]]
    lines = [json.dumps({"id": i, "text": t}, ensure_ascii=i % 2 == 0) for i, t in enumerate(train)]
    lines[10] = json.dumps({"id": 10, "text": "Seen\u2028online: " + questions[5]}, ensure_ascii=False)
    lines[11] = json.dumps({"id": 11, "text": "LONE" + questions[6]}).replace("LONE", "a lone \\ud800 surrogate: ")
    lines[12] = json.dumps({"id": 12})
    lines[13] = json.dumps({"id": 13, "text": None})
    lines[14] = json.dumps({"id": 14, "text": 1234567})
    lines[15] = json.dumps({"id": 15, "text": questions[7].split()})
    lines[16] = json.dumps({"id": 16, "text": "x\u2028y"}, ensure_ascii=False)
    for at in range(20, 300, 37):
        lines[at] += "\r"
    for at, blank in ((3, ""), (50, "   \t"), (51, "\u00a0"), (200, "\r")):
        lines.insert(at, blank)
    return ("\ufeff" + "\n".join(lines)).encode()


@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize("block", [textstream.BLOCK, 2048])
def test_awkward_lines_are_dropped_and_kept_exactly(awkward, questions, tmp_path, monkeypatch, compiled, block):
    # Both scan paths; and Arrow blocks of 2 KiB, so records straddle blocks and the blocks holding
    # a number, a list or a lone surrogate (which Arrow refuses) go to the row reader mid-file.
    """From the review of --decontaminate."""
    monkeypatch.setattr(contamination_module, "COMPILED_MIN_BYTES", 0 if compiled else 1 << 40)
    monkeypatch.setattr(wordtokens, "SMALL_BYTES", 0 if compiled else 1 << 40)
    monkeypatch.setattr(textstream, "BLOCK", block)
    corpus = tmp_path / "awkward.jsonl"
    corpus.write_bytes(awkward)
    out = tmp_path / "clean.jsonl"
    result = decontaminate(str(corpus), "gsm8k", out, corpus_text="text")
    dropped, copy = expected_copy(awkward, ["text"], questions, result.contamination.n)
    assert {10, 11, 15} <= set(dropped)
    assert result.dropped_rows.tolist() == dropped
    assert out.read_bytes() == copy
    manifest = json.loads((tmp_path / "clean.jsonl.dropped.json").read_text(encoding="utf-8"))
    assert manifest["dropped_rows"] == dropped
    assert (manifest["records"], manifest["kept"]) == (300, 300 - len(dropped))


def test_several_fields_and_a_json_array_copy(real_data, questions, tmp_path):
    """From the review of --decontaminate."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:200]
    rows = [{"instruction": r["question"], "output": r["answer"]} for r in train]
    rows[7] = {"instruction": "Solve it.", "output": questions[20]}          # only in the second field
    rows[8] = {"output": questions[21]}                                       # the first one missing
    rows[9] = {"instruction": questions[22][:40], "output": None}            # too short: kept
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    corpus = tmp_path / "pairs.jsonl"
    corpus.write_bytes(raw)
    out = tmp_path / "clean.json"
    result = decontaminate(str(corpus), "gsm8k", out, corpus_text="instruction,output")
    dropped, copy = expected_copy(raw, ["instruction", "output"], questions, result.contamination.n)
    assert {7, 8} <= set(dropped) and 9 not in dropped
    assert result.dropped_rows.tolist() == dropped
    assert json.loads(out.read_text(encoding="utf-8")) == [json.loads(line) for line in copy.decode().splitlines()]


def test_two_objects_on_a_line_balanced_by_one_cut_over_two_is_an_error_not_a_misnumbered_copy(
        real_data, questions, tmp_path):
    """From the review of --decontaminate: Arrow read '{..}{..}' on one line and an object cut over the next
    two as as many rows as
    lines, so the scan numbered the rows after them wrongly: the copy dropped the cut object's
    first line and kept the planted question (exit 0, a broken JSON line written). Now the block
    goes to the row reader, which names the line; no copy is written."""
    train = read_jsonl(real_data / "gsm8k/train.jsonl")
    lines = [json.dumps({"text": r["answer"]}) for r in train]      # past the rows read to guess the field
    lines += [json.dumps({"text": "harmless"}) + json.dumps({"text": questions[3]}),
              '{"text": "more harmless words",', '"id": 1}', json.dumps({"text": "the last one"})]
    corpus = tmp_path / "glued.jsonl"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "clean.jsonl"
    with pytest.raises(AuditorError) as bad:
        decontaminate(str(corpus), "gsm8k", out, corpus_text="text")
    assert bad.value.code == "bad_format" and f"line {len(train) + 1}:" in bad.value.message
    assert not out.exists() and not (tmp_path / "clean.jsonl.dropped.json").exists()


def test_the_copy_says_which_benchmark_items_it_did_not_look_for(real_data, questions, tmp_path):
    """From the review of --decontaminate: Items shorter than n are never looked for: a corpus holding one
    whole kept it with no word in
    the copy's section (only the scan's line above said "too short to check")."""
    from definitions import words
    items = [" ".join(q.split()[:5]) for q in questions[:3]] + [questions[3]]
    bench = tmp_path / "bench.jsonl"
    bench.write_text("".join(json.dumps({"question": q}) + "\n" for q in items), encoding="utf-8")
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:50]
    rows = [{"text": r["question"]} for r in train] + [{"text": items[0]}, {"text": items[3]}]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = decontaminate(str(corpus), str(bench), tmp_path / "clean.jsonl", corpus_text="text")
    short = sum(len(words(q)) < result.contamination.n for q in items)
    assert short == 3 and 51 in result.dropped_rows.tolist() and 50 not in result.dropped_rows.tolist()
    assert f"{short} benchmark item(s) shorter than {result.contamination.n} tokens were not looked for" \
        in result.markdown()
