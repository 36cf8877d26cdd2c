"""The bundled benchmark examples (GSM8K, HumanEval, MBPP) load offline, byte for byte the
published files, and audit end to end."""
from __future__ import annotations

import hashlib
import json

import pytest

import auditor
from auditor.contamination import BENCHMARKS, contamination


@pytest.mark.parametrize("config, split, n", [
    (None, None, 7473), ("main", "train", 7473), ("main", "test", 1319), ("socratic", None, 1319),
    ("socratic", "test", 1319),
])
def test_example_gsm8k(config, split, n):
    table = auditor.load("example:gsm8k", config=config, split=split)
    assert len(table.rows) == n
    assert table.source == "example:gsm8k"
    assert set(table.configs) == {"main", "socratic"}
    assert set(table.rows[0]) >= {"question", "answer"}


def test_example_gsm8k_matches_the_real_files():
    """The bundled split, written back as JSONL, is byte for byte the original test.jsonl of
    openai/grade-school-math @3101c7d5 (the first 16 hex digits of its sha256)."""
    rows = auditor.load("example:gsm8k", split="test").rows
    data = "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8")
    assert hashlib.sha256(data).hexdigest()[:16] == "3730d312f6e34405"


def test_example_humaneval():
    table = auditor.load("example:humaneval")
    assert len(table.rows) == 164
    assert table.rows[0]["task_id"] == "HumanEval/0"


def test_example_mbpp_configs():
    full = {s: len(auditor.load("example:mbpp", config="full", split=s).rows)
            for s in ("train", "test", "validation", "prompt")}
    assert full == {"train": 374, "test": 500, "validation": 90, "prompt": 10}
    sanitized = auditor.load("example:mbpp", config="sanitized")
    total = sum(len(auditor.load("example:mbpp", config="sanitized", split=s).rows) for s in sanitized.splits)
    assert total == 427
    assert set(sanitized.splits) == {"train", "test", "validation", "prompt"}


def test_example_scan_end_to_end():
    result = auditor.scan("example:humaneval")
    s = result.summary()
    assert s["input"]["records"] == 164
    assert s["roles"]["text"] == "prompt"
    assert s["input"]["source"] == "example:humaneval"


def test_bundled_benchmarks_load_offline():
    for name in BENCHMARKS:
        s = contamination(["nothing to see here at all today"], name).summary()
        assert s["benchmark"]["records"] > 0 and s["contaminated"]["records"] == 0
