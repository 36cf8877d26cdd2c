"""A leak holds the training side's (A's) digests of its texts and answers (16 bytes a record each)
no longer than its exact stage: they were held through the near search, 70 MB for 100 MB of short
records. What the report reads of them (A's records with no text) is kept and stays right; B's
digests stay, since ``clean`` compares one TEST with every training side, as do those of a side the caller
prepared."""
from __future__ import annotations

import json
import unicodedata

from auditor.leakage import leak


def test_a_leaks_training_digests_are_dropped_and_its_no_text_count_kept(real_data, tmp_path):
    rows = [json.loads(line) for line in (real_data / "gsm8k/test.jsonl").read_text().splitlines()][:400]
    train = [dict(r) for r in rows]
    for i in range(0, 400, 7):                  # blank or hidden-only texts: no text
        train[i]["question"] = ["", "   ", "\u200b\u200d", None][i % 4]
    a, b = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in train))
    b.write_text("".join(json.dumps(r) + "\n" for r in rows[:100]))
    result = leak(str(a), str(b), text="question")
    assert result.a._digests == {}
    assert result.b._digests                    # TEST's kept for the next training side
    # No text: null, blank, or nothing but format characters (category Cf: zero-width marks).
    want = sum(1 for r in train
               if not "".join(c for c in r["question"] or "" if unicodedata.category(c) != "Cf").split())
    assert want == len(range(0, 400, 7))
    assert result.summary()["a"]["no_text"] == want
    assert result.counts["identical_text"] == sum(1 for i in range(100) if i % 7)


def test_a_side_passed_in_prepared_keeps_its_digests(real_data, tmp_path):
    """A side the caller prepared (and may compare again) keeps what it holds, and a second leak
    with it gives the same counts. From a review of this change."""
    from auditor.prepare import prepare

    rows = (real_data / "gsm8k/test.jsonl").read_text().splitlines()[:200]
    a, b = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    a.write_text("\n".join(rows) + "\n")
    b.write_text("\n".join(rows[:50]) + "\n")
    side = prepare(str(a), text="question")
    first = leak(side, str(b), text="question")
    assert side._digests and first.counts["identical_text"] == 50
    again = leak(side, str(b), text="question")
    assert again.counts == first.counts
