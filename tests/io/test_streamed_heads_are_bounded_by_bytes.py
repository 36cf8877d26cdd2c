"""The head a streamed source's roles are guessed from (contamination's corpus, evidence,
decontaminate; on Ray the shards' first records) is at most 1,000 records and about 16 MiB of them
as held in memory, but at least 20: 200 records of 500 KB each ending in an emoji (a Python string
of such a text stores 4 bytes a character) were all read ahead, 400 MB, before one was scanned. The
stream after the head still yields every record, in order."""
from __future__ import annotations

import json

from auditor.io.shards import head_records, list_shards
from auditor.io.sources import peek_records
from auditor.io.table import HEAD_BYTES, HEAD_LEAST, HEAD_MOST, head_of, held_bytes


def write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def long_records(n, chars, tail=""):
    return [{"text": f"{i} " + "word " * (chars // 5) + tail, "answer": str(i)} for i in range(n)]


def test_a_head_of_long_records_stops_at_the_byte_bound_and_the_stream_keeps_every_record(tmp_path):
    records = long_records(80, 100_000, "\U0001F600")         # about 400 KB each as Python strings
    path = write(tmp_path / "long.jsonl", records)
    head, stream = peek_records(str(path))
    sizes = [held_bytes(r) for r in head]
    assert HEAD_LEAST < len(head) < 80
    assert sum(sizes[:-1]) < HEAD_BYTES <= sum(sizes)          # the record that crossed it is the last
    assert [r["answer"] for r in stream] == [str(i) for i in range(80)]


def test_short_records_give_the_whole_thousand(tmp_path):
    path = write(tmp_path / "short.jsonl", [{"text": f"question {i}", "answer": str(i)} for i in range(2500)])
    head, stream = peek_records(str(path))
    assert len(head) == HEAD_MOST
    assert sum(1 for _ in stream) == 2500


def test_one_huge_record_first_does_not_decide_alone(tmp_path):
    records = long_records(1, HEAD_BYTES + 1_000_000) + [{"text": f"q {i}", "answer": str(i)} for i in range(100)]
    head, _ = peek_records(str(write(tmp_path / "mixed.jsonl", records)))
    assert len(head) == HEAD_LEAST


def test_shard_heads_read_across_shards_within_the_same_bounds(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    write(folder / "part-0.jsonl", long_records(15, 400_000, "\U0001F600"))
    write(folder / "part-1.jsonl", long_records(15, 400_000, "\U0001F600"))
    write(folder / "part-2.jsonl", [{"text": f"q {i}", "answer": str(i)} for i in range(50)])
    filesystem, shards = list_shards(str(folder))
    head = head_records(filesystem, shards)
    assert HEAD_LEAST <= len(head) < 30                        # into the second shard, not past it
    assert [r["answer"] for r in head] == [str(i) for i in range(15)] + [str(i) for i in range(len(head) - 15)]


def test_held_bytes_counts_astral_text_at_four_bytes_a_character_and_walks_nesting():
    ascii_text, astral_text = "a" * 10_000, "a" * 9_999 + "\U0001F600"
    assert held_bytes({"t": astral_text}) > 3.5 * held_bytes({"t": ascii_text})
    nested = {"messages": [{"content": ascii_text}] * 3}
    assert held_bytes(nested) >= 3 * 10_000
    deep: list = []
    for _ in range(100_000):                                   # no recursion limit reached
        deep = [deep]
    assert held_bytes(deep) > 0
    assert head_of(iter([nested] * 5), most=3) == [nested] * 3
