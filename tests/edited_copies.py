"""Endless edited copies of the bundled GSM8K train questions: each question copied 10-50 times,
each copy with 2-50% of its words replaced by words of other questions. Near duplicates everywhere,
the pair-dense shape of augmented or scraped data (6% of the questions hold a non-ASCII character).
Used by the memory-per-byte test and by bench/memory_per_byte.py."""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

GSM8K_TRAIN = Path(__file__).resolve().parents[1] / "auditor" / "examples" / "gsm8k" / "main" / "train.jsonl.gz"


def edited_copies(rng: random.Random):
    with gzip.open(GSM8K_TRAIN, "rt", encoding="utf-8") as f:
        questions = [json.loads(line)["question"].split() for line in f]
    pool = [word for question in questions for word in question]
    while True:
        source = rng.choice(questions)
        for _ in range(rng.randint(10, 50)):
            rate = rng.uniform(0.02, 0.5)
            yield " ".join(rng.choice(pool) if rng.random() < rate else word for word in source)
