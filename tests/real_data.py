"""The real benchmark files the tests read, from the repository alone.

GSM8K, HumanEval and MBPP come from the package's bundled examples (auditor/examples/), Spider
from tests/data/ (vendored; see tests/data/README.md). ``materialize(DIR)`` writes them as plain
JSONL in one layout (``gsm8k/train.jsonl``, ``spider/dev.jsonl``, ...), each file checked
against the sha256 of the original it reproduces, so tests and ``bench/*.py --data bundled``
read exactly the files the published figures were measured on.

    python tests/real_data.py DIR        # write the layout into DIR
"""
from __future__ import annotations

import gzip
import hashlib
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "auditor" / "examples"
VENDORED = Path(__file__).resolve().parent / "data"
MBPP_SPLITS = ("prompt", "test", "validation", "train")      # task_id order: 1-10, 11-510, 511-600, 601-974

# relative path -> (gzip'd JSONL parts, concatenated in order; ASCII-escaped JSON like the
# original; first 16 hex digits of the original's sha256)
FILES = {
    "gsm8k/train.jsonl": ([EXAMPLES / "gsm8k/main/train.jsonl.gz"], True, "17f347dc51477c50"),
    "gsm8k/test.jsonl": ([EXAMPLES / "gsm8k/main/test.jsonl.gz"], True, "3730d312f6e34405"),
    "gsm8k/test_socratic.jsonl": ([EXAMPLES / "gsm8k/socratic/test.jsonl.gz"], True, "c96673362fa7a699"),
    "humaneval/HumanEval.jsonl": ([EXAMPLES / "humaneval/default/test.jsonl.gz"], True, "1d49078ba3e2b196"),
    "mbpp/mbpp.jsonl": ([EXAMPLES / f"mbpp/full/{s}.jsonl.gz" for s in MBPP_SPLITS], True, "ccf64ceae9c5403b"),
    "mbpp/sanitized-mbpp.jsonl": ([EXAMPLES / f"mbpp/sanitized/{s}.jsonl.gz" for s in MBPP_SPLITS], False,
                                  "7a76be064e2b9ca2"),
    "spider/train_spider.jsonl": ([VENDORED / "spider/train_spider.jsonl.gz"], False, "d7751dec9973a53b"),
    # dev without its token lists (see scripts/vendor_test_data.py), so not the original's hash
    "spider/dev.jsonl": ([VENDORED / "spider/dev.jsonl.gz"], False, "f203e10f9e121039"),
}


def semantic_texts(name: str, field: str) -> list[str]:
    """One field of a vendored rephrase slice (tests/data/semantic/NAME: MMLU sociology or GSM8K
    questions and their LLM rephrasings, row i rephrasing row i), row by row."""
    with gzip.open(VENDORED / "semantic" / name, "rt", encoding="utf-8") as fh:
        return [json.loads(line)[field] for line in fh]

def edited_gsm8k(path: Path, records: int, seed: int) -> Path:
    """``records`` GSM8K train questions drawn with ``seed``, one word of each changed to one of 50
    tokens, as JSONL at ``path``: many near duplicates, so a long audit (the app's job tests)."""
    train, rng = rows("gsm8k/train.jsonl"), random.Random(seed)
    with open(path, "w", encoding="utf-8") as fh:
        for k in range(records):
            words = train[rng.randrange(len(train))]["question"].split()
            words[rng.randrange(len(words))] = f"w{rng.randrange(50)}"
            fh.write(json.dumps({"question": " ".join(words), "n": k}) + "\n")
    return Path(path)

def edited_copies(texts: list[str], copies: int, rate: float, seed: int) -> list[str]:
    """Each text copied ``copies`` times with about ``rate`` of its words replaced by words of the
    texts (seeded): clusters of near duplicates around each text."""
    import numpy as np
    rng = np.random.default_rng(seed)
    vocab = " ".join(texts).split()
    out = []
    for text in texts:
        words = text.split()
        for _ in range(copies):
            w = list(words)
            for i in np.flatnonzero(rng.random(len(w)) < rate):
                w[i] = vocab[int(rng.integers(len(vocab)))]
            out.append(" ".join(w))
    return out


def rows(rel: str) -> list[dict]:
    """Every row of the file ``rel`` (e.g. ``"gsm8k/train.jsonl"``), read from the repository."""
    out = []
    for part in FILES[rel][0]:
        with gzip.open(part, "rt", encoding="utf-8") as fh:
            out += [json.loads(line) for line in fh if line.strip()]
    return out


def content(rel: str) -> bytes:
    """The file ``rel`` as JSONL bytes, serialised like the original."""
    ascii_only = FILES[rel][1]
    return "".join(json.dumps(r, ensure_ascii=ascii_only) + "\n" for r in rows(rel)).encode("utf-8")


def materialize(dest: Path) -> Path:
    """Write every file of FILES under ``dest``; fails when one differs from its recorded sha256."""
    dest = Path(dest)
    for rel, (_, _, digest) in FILES.items():
        data = content(rel)
        got = hashlib.sha256(data).hexdigest()[:16]
        if got != digest:
            raise AssertionError(f"{rel}: sha256 {got}, expected {digest} (bundled or vendored data changed)")
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    print(materialize(Path(sys.argv[1])))
