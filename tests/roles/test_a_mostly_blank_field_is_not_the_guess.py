"""A field that is blank in most records is not guessed over one that holds a value in them.

From the round-9 real-data review: 1,469 GSM8K-shaped records whose "question" was kept in 1 record
of 10 (null in the others) beside a "prompt" holding every question: the guess was "question" (the
first name tried), 1,322 records were degenerate, and the scan found 2 exact duplicate groups where
pandas finds 100 in the prompts. The first field tried that holds a value in half the records or more
is now the guess; a sparse field alone is still guessed (and its blanks reported as degenerate).
"""
from collections import Counter

from auditor import Table, scan
from auditor.normalize import default

QUESTIONS = [f"Tom has {n} apples and buys {n + 3} more at the market. How many apples does Tom have now?"
             for n in range(40)]


def _rows(sparse_every: int = 10):
    rows = []
    for i, q in enumerate(QUESTIONS + QUESTIONS[:10]):          # the first 10 questions twice
        rows.append({"question": q if i % sparse_every == 0 else None, "prompt": q,
                     "answer": None if i % sparse_every else str(i), "output": str(2 * i + 3)})
    return rows


def test_the_field_held_by_most_records_is_the_guess():
    rows = _rows()
    result = scan(Table(rows=rows, source="sparse"))
    summary = result.summary()
    assert summary["roles"]["text"] == "prompt" and summary["roles"]["answer"] == "output"
    assert set(summary["roles"]["guessed"]) >= {"text", "answer"}
    assert summary["degenerate"]["records"] == 0
    # independent: exact duplicates of the prompts under the default normaliser
    counts = Counter(default(r["prompt"]) for r in rows)
    groups = [c for c in counts.values() if c > 1]
    text = summary["exact_duplicates"]["text"]
    assert (text["groups"], text["records"], text["redundant"]) == (len(groups), sum(groups), sum(groups) - len(groups))
    assert text["groups"] == 10


def test_a_sparse_field_alone_is_still_the_guess():
    rows = [{"question": r["question"], "output": r["output"]} for r in _rows()]
    summary = scan(Table(rows=rows, source="sparse")).summary()
    assert summary["roles"]["text"] == "question"
    assert summary["degenerate"]["by_role"]["text"] == sum(r["question"] is None for r in rows) == 45


def test_a_field_held_by_half_the_records_stays_the_guess():
    summary = scan(Table(rows=_rows(sparse_every=2), source="half")).summary()
    assert summary["roles"]["text"] == "question" and summary["roles"]["answer"] == "answer"
