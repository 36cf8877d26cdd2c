"""A JSON number beyond a 64-bit float's range (1e400) is valid JSON that Python reads as
infinity, silently: 1e400 and 2e400 became one value ("inf"), so two distinct answers were an
exact duplicate and a leak. Now one clear error naming the file, the line or item, the field and
the number as written, in every JSON reader (the same refusal as an integer too long to read).
Infinity written by name (pandas' and json.dumps' form) is still read as infinity."""
from __future__ import annotations

import io
import json
import math

import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.io.formats import stream_batches

ROWS = [{"question": row["question"], "answer": row["answer"]} for row in real_data.rows("gsm8k/test.jsonl")[:20]]


def _files(tmp_path) -> dict:
    """name -> (path, options, where the error must point, the field it must name)."""
    lines = [json.dumps(r) for r in ROWS]
    lines[7] = lines[7][:-1] + ', "meta": {"scores": [0.5, 1e400]}}'      # record 7 (line 8, item 7)
    (tmp_path / "huge.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "huge_list.json").write_text("[" + ",\n".join(lines) + "]", encoding="utf-8")
    (tmp_path / "huge_doc.json").write_text('{"version": 1, "data": [' + ", ".join(lines) + "]}", encoding="utf-8")
    return {"jsonl": (tmp_path / "huge.jsonl", {}, "huge.jsonl, line 8", "meta.scores[1]"),
            "json list": (tmp_path / "huge_list.json", {}, "huge_list.json", "[7].meta.scores[1]"),
            "json list, row cap (item by item)": (tmp_path / "huge_list.json", {"max_rows": 15},
                                                  "huge_list.json, item 7 of the list", "meta.scores[1]"),
            "json document": (tmp_path / "huge_doc.json", {}, "huge_doc.json", "data[7].meta.scores[1]")}


CASES = ["jsonl", "json list", "json list, row cap (item by item)", "json document"]


@pytest.mark.parametrize("case", CASES)
def test_a_number_beyond_a_float_is_a_clear_error_naming_its_field(tmp_path, case):
    """From the round-6 hostile review: 1e400 read as inf without a word."""
    path, options, where, field = _files(tmp_path)[case]
    with pytest.raises(AuditorError) as info:
        auditor.scan(str(path), **options)
    assert info.value.code == "bad_format"
    assert info.value.message.startswith(f"{where}: the field {field!r} holds the number 1e400, beyond the range")
    assert "string" in info.value.hint


@pytest.mark.parametrize("case", CASES)
def test_a_number_beyond_a_float_is_exit_2_in_the_cli(tmp_path, run_cli, case):
    """From the round-6 hostile review."""
    path, options, where, _ = _files(tmp_path)[case]
    extra = ["--max-rows", str(options["max_rows"])] if options else []
    code, _, err = run_cli("scan", path, *extra, "--quiet")
    assert code == 2, err
    assert "Traceback" not in err and f"error: {where}:" in err


def test_the_ray_engines_stream_reader_refuses_it_too(tmp_path):
    """From the round-6 hostile review: shards are parsed by ``stream_batches``, the same error."""
    path, _, _, _ = _files(tmp_path)["jsonl"]
    with pytest.raises(AuditorError, match=r"huge.jsonl, line 8: the field 'meta.scores\[1\]'"):
        list(stream_batches(io.BytesIO(path.read_bytes()), "huge.jsonl", "jsonl"))


def test_answers_past_the_float_range_are_never_one_value(tmp_path):
    """From the round-6 hostile review: two answers 1e400 and 2e400 both read as "inf" were an exact
    duplicate pair; refused instead, while numbers at the edge of the range still read exactly."""
    rows = [dict(ROWS[0], answer=1e400), dict(ROWS[1], answer=2e400)]
    path = tmp_path / "answers.jsonl"
    path.write_text("".join(json.dumps(r).replace("Infinity", "1e400" if i == 0 else "2e400") + "\n"
                            for i, r in enumerate(rows)), encoding="utf-8")
    with pytest.raises(AuditorError, match="line 1: the field 'answer' holds the number 1e400"):
        auditor.load(str(path))
    edge = tmp_path / "edge.jsonl"
    edge.write_text(json.dumps(dict(ROWS[0], answer=1.7976931348623157e308)) + "\n"
                    + json.dumps(dict(ROWS[1], answer=5e-324)) + "\n", encoding="utf-8")
    assert [r["answer"] for r in auditor.load(str(edge)).rows] == [1.7976931348623157e308, 5e-324]


def test_infinity_written_by_name_is_still_infinity(tmp_path):
    """From the round-6 hostile review: json.dumps and pandas write an infinite float as Infinity,
    which names its value: still read, as before."""
    path = tmp_path / "named.jsonl"
    path.write_text(json.dumps(dict(ROWS[0], score=math.inf)) + "\n" + json.dumps(dict(ROWS[1], score=-math.inf))
                    + "\n", encoding="utf-8")
    assert "Infinity" in path.read_text(encoding="utf-8")
    assert [r["score"] for r in auditor.load(str(path)).rows] == [math.inf, -math.inf]
