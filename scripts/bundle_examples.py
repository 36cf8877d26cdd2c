"""Rebuild auditor/examples/ from the team's copies of the real datasets.

Usage: python scripts/bundle_examples.py [DATA_DIR]   (default: ../shared/data)

Only permissively licensed sets are bundled (GSM8K: MIT, HumanEval: MIT,
MBPP: CC BY 4.0). Files are gzip'd JSONL written with a fixed mtime, so a
rebuild is byte-identical.
"""
import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "auditor" / "examples"

# MBPP's published split ranges by task_id (as in the paper and on the Hub).
MBPP_SPLITS = (("prompt", 1, 10), ("test", 11, 510), ("validation", 511, 600), ("train", 601, 974))


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl_gz(path: Path, rows) -> None:
    """Gzip'd JSONL with a fixed mtime and no file name, so a rebuild is byte-identical."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as fh:
        fh.write(payload)
    print(f"{path.relative_to(ROOT)}: {len(rows)} rows, {path.stat().st_size:,} bytes")


def write(name, config, split, rows):
    write_jsonl_gz(OUT / name / config / f"{split}.jsonl.gz", rows)


def main(data: Path):
    write("gsm8k", "main", "train", read_jsonl(data / "gsm8k/train.jsonl"))
    write("gsm8k", "main", "test", read_jsonl(data / "gsm8k/test.jsonl"))
    write("gsm8k", "socratic", "test", read_jsonl(data / "gsm8k/test_socratic.jsonl"))
    write("humaneval", "default", "test", read_jsonl(data / "humaneval/HumanEval.jsonl"))
    for config, file in (("full", "mbpp.jsonl"), ("sanitized", "sanitized-mbpp.jsonl")):
        rows = read_jsonl(data / "mbpp" / file)
        for split, lo, hi in MBPP_SPLITS:
            write("mbpp", config, split, [r for r in rows if lo <= int(r["task_id"]) <= hi])


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "data")
