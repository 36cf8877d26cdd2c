"""The ``auditor`` command: parse arguments, call the library, print. No analysis here.

Exit codes: 0 done (and clean, for checks with --fail-on-overlap); 1 overlap found
with --fail-on-overlap; 2 bad input or usage, with the reason on stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time

from .errors import AuditorError


class _Parser(argparse.ArgumentParser):
    """argparse that raises AuditorError instead of exiting, so usage errors share the contract."""

    def error(self, message):
        raise AuditorError("usage", f"{self.prog}: {message}", f"Run '{self.prog} --help' for the options.")


def _threshold(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (0 < t <= 1):
        raise argparse.ArgumentTypeError(f"threshold {value} is outside (0, 1]")
    return t


def _thresholds(value: str) -> tuple:
    parts = [p for p in value.replace(" ", "").split(",") if p]
    if not parts:
        raise argparse.ArgumentTypeError("give thresholds like 0.9,0.8,0.7")
    return tuple(_threshold(p) for p in parts)


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    return n


def _shingle(value: str):
    from .shingles import ShingleSpec
    try:
        return ShingleSpec.parse(value)
    except AuditorError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="dataset config (hub sets and bundled examples)")
    p.add_argument("--split", help="split to read (default: train, or the only one)")
    p.add_argument("--text", help="field holding the text (guessed when left out)")
    p.add_argument("--answer", help="field holding the answer or reference solution")
    p.add_argument("--group", help="field naming the source/database/subject of a record")
    p.add_argument("--label", action="append", dest="labels", metavar="FIELD",
                   help="a label field (repeatable, or comma-separated)")
    p.add_argument("--id", help="field holding a record id")
    p.add_argument("--max-rows", type=_positive_int, help="read at most N rows (stated in the report)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out-dir", help="write summary.json and REPORT.md here")
    p.add_argument("--json", dest="json_path", metavar="PATH|-", help="write summary.json to PATH, or stdout with -")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="auditor", description="Audit datasets for duplicates, near duplicates, "
                     "leakage between splits and benchmark contamination.", allow_abbrev=False)
    from . import __version__
    parser.add_argument("--version", action="version", version=f"auditor {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    scan = sub.add_parser("scan", help="audit one dataset", allow_abbrev=False,
                          description="Schema, degenerate records, exact and near duplicates, threshold "
                          "curve, group concentration.")
    scan.add_argument("source", help="file, directory, glob, Hugging Face id, or example:NAME")
    _add_source_options(scan)
    scan.add_argument("--threshold", type=_threshold, default=0.7, help="near-duplicate Jaccard threshold")
    scan.add_argument("--thresholds", type=_thresholds, help="curve thresholds (default 0.9,...,0.3)")
    scan.add_argument("--shingle", type=_shingle, default=None, help="word:N (default word:3) or char:N")
    scan.add_argument("--normalizer", choices=("exact", "default", "code"), default="default")
    scan.add_argument("--method", choices=("auto", "exact", "lsh"), default="auto",
                      help="near-duplicate search (auto: exact all-pairs when small enough)")
    scan.add_argument("--num-perm", type=_positive_int, default=128, help="MinHash permutations (LSH)")
    scan.add_argument("--seed", type=int, default=1)
    _add_output_options(scan)
    return parser


def _progress(quiet: bool):
    if quiet:
        return None
    last = {"stage": None, "t": time.monotonic()}

    def report(fraction: float, stage: str) -> None:
        if stage != last["stage"]:
            last["stage"] = stage
            print(f"[{100 * fraction:5.1f}%] {stage}", file=sys.stderr, flush=True)
    return report


def _emit(args, summary: dict, markdown: str, extra: dict | None = None) -> None:
    from .report import to_json, write_outputs
    if args.out_dir:
        for path in write_outputs(args.out_dir, summary, markdown, extra):
            if not args.quiet:
                print(f"wrote {path}", file=sys.stderr)
    if args.json_path == "-":
        sys.stdout.write(to_json(summary))
    elif args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            fh.write(to_json(summary))
    if not args.out_dir and args.json_path != "-":
        sys.stdout.write(markdown)


def cmd_scan(args) -> int:
    from .audit import DEFAULT_THRESHOLDS, ScanSettings, scan
    from .shingles import ShingleSpec
    settings = ScanSettings(threshold=args.threshold, thresholds=args.thresholds or DEFAULT_THRESHOLDS,
                            shingle=args.shingle or ShingleSpec(), normalizer=args.normalizer,
                            method=args.method, num_perm=args.num_perm, seed=args.seed)
    result = scan(args.source, config=args.config, split=args.split, text=args.text, answer=args.answer,
                  group=args.group, labels=args.labels, id=args.id, settings=settings, max_rows=args.max_rows,
                  progress=_progress(args.quiet))
    _emit(args, result.summary(), result.markdown())
    return 0


COMMANDS = {"scan": cmd_scan}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    wants_json_errors = "--json" in argv and argv[argv.index("--json") + 1:argv.index("--json") + 2] == ["-"]
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except AuditorError as exc:
        if wants_json_errors:
            sys.stdout.write(json.dumps(exc.to_dict(), indent=2) + "\n")
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("error: out of memory. Hint: cap the rows read with --max-rows.", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
