"""Rebuild tests/data/ (the real files the tests need beyond auditor/examples/).

Usage: python scripts/vendor_test_data.py [DATA_DIR]   (default: ../shared/data)

Only data whose licence allows redistribution is vendored: Spider (CC BY-SA 4.0), train and
dev, with the fields the tests read. GSM8K, HumanEval and MBPP come from auditor/examples/
(see scripts/bundle_examples.py). Files are gzip'd JSONL written with a fixed mtime, so a
rebuild is byte-identical. tests/real_data.py turns both into the layout the tests read.
"""
import sys
from pathlib import Path

from bundle_examples import read_jsonl, write_jsonl_gz

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "data"

# file -> the fields kept, in the original order (dev's `sql` stays: a dict-valued field the
# role-guessing tests need; its token lists are left out).
SPIDER = {"train_spider.jsonl": ("question", "query", "db_id"), "dev.jsonl": ("db_id", "query", "question", "sql")}


def write(rel, rows):
    write_jsonl_gz(OUT / f"{rel}.gz", rows)


def main(data: Path):
    for name, fields in SPIDER.items():
        write(f"spider/{name}", [{k: r[k] for k in fields} for r in read_jsonl(data / "spider" / name)])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data")
