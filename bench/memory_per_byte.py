#!/usr/bin/env python
"""Peak memory of every command per byte read, for several shapes of text (issue 34, item 2).

    python bench/memory_per_byte.py                       # 40 MB of each shape, every command
    python bench/memory_per_byte.py --mb 100 --shapes short,long --commands scan,leak

Each measurement is its own process running ``auditor.cli.main``, which reports its OWN peak
(VmHWM of /proc/self/status at exit: a child's rusage would count the parent's memory at the
fork). The fixed base is the same command on a tiny file of the same shape, with the heavy
libraries imported first in both runs (imports, compiled code); the multiple is (peak - base) / bytes read, the bytes read being the input
files' sizes. Shapes:

- ``short``: many short records (8 words each, a 5,000-word vocabulary);
- ``long``: few long records (200 records of ~S/200 bytes of words);
- ``vocab``: a huge vocabulary (records of 60 random 8-letter tokens: nearly every word distinct);
- ``zipf``: a realistic vocabulary (records of 60 words drawn from 200,000 with Zipf's law's
  frequencies, as natural text has them);
- ``wide``: wide objects (500 numeric fields per record beside its text);
- ``astral``: ``long``'s records each ending in one emoji (a character past U+FFFF: a Python string
  of such a text stores every character in 4 bytes);
- ``edited``: near duplicates everywhere: GSM8K train questions (the bundled copy), each copied 10-50
  times with 2-50% of its words replaced, the pair-dense shape of augmented or scraped data;
- ``cjk``: Chinese-like text (80 ideographs a record, Zipf over 5,000 of them): no spaces, so every
  character is a word (``shingles.words``), one token per 3 bytes where English has one per 6;
- ``letters``: the densest text there is: 200 one-letter words a record (a token every 2 bytes, so
  every 3-gram of 26 letters is frequent), every other record one repeated text.

Commands: ``scan``; ``dedup --out``; ``leak`` (A the file, B its first 1,000 records);
``clean`` (TEST the first 1,000 records, --against the file); ``contamination`` (the file as the
corpus, GSM8K's test set as the benchmark). Big runs go under the shared lock:
``flock /tmp/auditor-heavy.lock python bench/memory_per_byte.py``.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from edited_copies import edited_copies  # noqa: E402  (the shape the memory test measures too)
SHAPES = ("short", "long", "vocab", "zipf", "wide", "astral", "edited", "cjk", "letters")
COMMANDS = ("scan", "dedup", "leak", "clean", "contamination")
# The heavy libraries every command may load, imported first in both runs, so the base holds them
# however little the tiny run needs (a tiny scan never loads numba or scipy).
CHILD = """
import json, sys
import numpy, scipy.sparse, pyarrow, pyarrow.compute, pyarrow.json, datasets
import auditor.kernels, auditor.audit, auditor.leakage, auditor.contamination, auditor.dedup, auditor.clean
# Compiled code, loaded once per process (numba's runtime: about 60 MB; the Space pays it once for
# every visitor), is part of the fixed base: the word merge loaded in both runs (a tiny run never
# loads it).
auditor.kernels.load_word_merge()
if sys.argv[1] == "contamination":     # the compiled scan loaded (a small corpus never loads it)
    from auditor.contamination import build_index, scan_batch
    scan_batch(build_index(["one two three four five six seven eight nine ten eleven twelve thirteen"]),
               ["one two \U0001F600"], compiled=True)
from auditor.cli import main
rc = main(sys.argv[1:])
peak = next(int(l.split()[1]) * 1024 for l in open('/proc/self/status') if l.startswith('VmHWM:'))
sys.stderr.write('@@PEAK@@' + json.dumps({'rc': rc, 'peak': peak}) + '\\n')
"""


LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _words(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 9))) for _ in range(n)]


def write_shape(shape: str, path: Path, target_bytes: int, seed: int = 0) -> int:
    """Write ``path`` (JSONL) of about ``target_bytes``; returns its size."""
    rng = random.Random(seed)
    vocab = _words(rng, 5_000)
    if shape == "zipf":
        zipf_words = _words(rng, 200_000)
        zipf_weights = list(itertools.accumulate(1 / rank for rank in range(1, len(zipf_words) + 1)))
    if shape == "edited":
        copies = edited_copies(rng)
    if shape == "letters":
        repeated = " ".join(rng.choices(LETTERS, k=200))
    if shape == "cjk":
        ideographs = [chr(0x4E00 + k) for k in rng.sample(range(20_000), 5_000)]
        cjk_weights = list(itertools.accumulate(1 / rank for rank in range(1, len(ideographs) + 1)))
    written = 0
    with open(path, "w", encoding="utf-8") as out:
        i = 0
        while written < target_bytes:
            if shape == "short":
                record = {"text": " ".join(rng.choices(vocab, k=8)), "answer": str(i % 97)}
            elif shape == "long":
                n_words = max(8, target_bytes // 200 // 7)
                record = {"text": " ".join(rng.choices(vocab, k=n_words)), "answer": str(i)}
            elif shape == "vocab":
                record = {"text": " ".join("".join(rng.choices(LETTERS, k=8)) for _ in range(60)),
                          "answer": str(i)}
            elif shape == "zipf":
                record = {"text": " ".join(rng.choices(zipf_words, cum_weights=zipf_weights, k=60)), "answer": str(i)}
            elif shape == "astral":
                n_words = max(8, target_bytes // 200 // 7)
                record = {"text": " ".join(rng.choices(vocab, k=n_words)) + " \U0001F600", "answer": str(i)}
            elif shape == "wide":
                record = {"text": " ".join(rng.choices(vocab, k=20)), **{f"f{k}": rng.randint(0, 999) for k in range(500)}}
            elif shape == "edited":
                record = {"text": next(copies), "answer": str(i)}
            elif shape == "cjk":
                record = {"text": "".join(rng.choices(ideographs, cum_weights=cjk_weights, k=80)) + "。",
                          "answer": str(i)}
            elif shape == "letters":
                record = {"text": repeated if i % 2 else " ".join(rng.choices(LETTERS, k=200)), "answer": str(i)}
            else:
                raise ValueError(shape)
            line = json.dumps(record, ensure_ascii=False) + "\n"
            out.write(line)
            written += len(line.encode())
            i += 1
    return path.stat().st_size


def head(path: Path, dest: Path, rows: int) -> Path:
    with open(path, encoding="utf-8") as src, open(dest, "w", encoding="utf-8") as out:
        for k, line in enumerate(src):
            if k >= rows:
                break
            out.write(line)
    return dest


def argv_for(command: str, data: Path, small: Path, folder: Path) -> tuple[list, list]:
    """(argv, input files) of one command."""
    quiet = ["--quiet"]
    if command == "scan":
        return ["scan", str(data), "--text", "text", "--json", str(folder / "s.json"), *quiet], [data]
    if command == "dedup":
        return ["dedup", str(data), "--text", "text", "--out", str(folder / "d.jsonl"), *quiet], [data]
    if command == "leak":
        return ["leak", str(data), str(small), "--text", "text", "--json", str(folder / "l.json"), *quiet], [data, small]
    if command == "clean":
        return ["clean", str(small), "--against", str(data), "--text", "text", "--out", str(folder / "c.jsonl"),
                *quiet], [data, small]
    if command == "contamination":
        return ["contamination", str(data), "--benchmark", "gsm8k", "--text", "text", "--json",
                str(folder / "c.json"), *quiet], [data]
    raise ValueError(command)


def measure(argv: list, timeout: float) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], capture_output=True, text=True, env=env,
                          timeout=timeout)
    seconds = time.perf_counter() - start
    lines = [l for l in proc.stderr.splitlines() if l.startswith("@@PEAK@@")]
    if not lines:
        return {"rc": proc.returncode, "peak": None, "seconds": seconds, "error": proc.stderr[-400:]}
    return {**json.loads(lines[-1][8:]), "seconds": seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=40.0, help="size of each shape's file (MB)")
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--commands", default=",".join(COMMANDS))
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="memory-per-byte-") as tmp:
        folder = Path(tmp)
        for shape in args.shapes.split(","):
            data = folder / f"{shape}.jsonl"
            write_shape(shape, data, int(args.mb * 1e6))
            tiny = folder / f"{shape}-tiny.jsonl"
            write_shape(shape, tiny, 20_000 if shape != "wide" else 60_000, seed=1)
            small = head(data, folder / f"{shape}-small.jsonl", 1_000)
            tiny_small = head(tiny, folder / f"{shape}-tiny-small.jsonl", 1_000)
            for command in args.commands.split(","):
                base_argv, _ = argv_for(command, tiny, tiny_small, folder)
                base = measure(base_argv, args.timeout)
                run_argv, inputs = argv_for(command, data, small, folder)
                got = measure(run_argv, args.timeout)
                read = sum(p.stat().st_size for p in inputs)
                multiple = ((got["peak"] - base["peak"]) / read) if got.get("peak") and base.get("peak") else None
                rows.append({"shape": shape, "command": command, "mb_read": read / 1e6, "rc": got["rc"],
                             "seconds": got["seconds"], "peak_mb": (got["peak"] or 0) / 1e6,
                             "base_mb": (base["peak"] or 0) / 1e6, "multiple": multiple,
                             "error": got.get("error")})
                r = rows[-1]
                print(f"| {shape} | {command} | {r['mb_read']:.1f} | {r['base_mb']:.0f} | {r['peak_mb']:.0f} | "
                      f"{'' if multiple is None else f'{multiple:.2f}x'} | {r['seconds']:.1f} | rc {r['rc']} |",
                      flush=True)
    print(json.dumps(rows, indent=1), file=sys.stderr)


if __name__ == "__main__":
    main()
