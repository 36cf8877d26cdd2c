"""Step 9, engines: which engine runs a command.

``local`` runs the command in this process (``audit.scan``, ``leakage.leak``, ``clean.clean``,
``contamination.contamination``, ``decontaminate.decontaminate``); ``ray`` maps the same per-batch
steps over a corpus's shards on Ray (``auditor.distributed``, the ``ray`` extra), with the same
report but for its ``engine`` block (which a local scan with a shard folder, searched in resumable
pieces, also gets). This is the one module that chooses: nothing below it imports
the Ray engine (the commands take the step that differs, a pair search or a training-side
comparison, as an argument), and the front ends (CLI, app, the library facade) call these.
"""
from __future__ import annotations

import os
from dataclasses import replace

from . import audit, leakage
from . import clean as clean_command
from . import contamination as contamination_command
from .decontaminate import DecontaminationResult, decontaminate
from .distributed import runtime
from .distributed.contamination import ray_contamination
from .distributed.decontaminate import ray_decontaminate, refuse_outputs_inside  # noqa: F401  (the CLI's check)
from .distributed.leak import ray_leak
from .distributed.near import scan_pairs
from .distributed.runtime import ray_session
from .errors import AuditorError
from .io.outputs import check_shard_dir
from .io.sources import URL_SCHEME
from .near.pieces import find_pairs_in_pieces
from .settings import EngineSettings, LeakSettings, SourceSpec


def scan(source, *, engine=None, **options) -> audit.ScanResult:
    """``audit.scan`` (its options), with the near-duplicate search on ``engine``. With a shard
    folder, the search runs as pieces (``near.pieces``), each kept there as it is finished and
    reused by a re-run: on Ray as tasks (``distributed.near``), locally one after another."""
    engine = EngineSettings.coerce(engine)
    if not engine.on_ray and not engine.shard_dir:
        return audit.scan(source, **options)
    spec = source.source if isinstance(source, SourceSpec) else source
    check_shard_dir(engine.shard_dir, [spec if isinstance(spec, (str, os.PathLike)) else None], "near")
    stats: dict = {}
    if not engine.on_ray:
        def local(matrix, settings, progress):
            return find_pairs_in_pieces(matrix, settings.min_threshold, settings.method, num_perm=settings.num_perm,
                                        seed=settings.seed, shard_dir=engine.shard_dir, stats=stats,
                                        progress=progress)

        result = audit.scan(source, search=local, **options)
        return replace(result, engine={"name": "local", "seconds": result.timings["near_duplicates"], **stats})
    quiet = engine.quiet or options.get("progress") is None     # quiet as the caller is: Ray's log lines too

    def search(matrix, settings, progress):
        return scan_pairs(matrix, settings, engine.ray_address, quiet=quiet, shard_dir=engine.shard_dir, stats=stats)

    result = audit.scan(source, search=search, **options)
    return replace(result, engine={"name": "ray", "seconds": result.timings["near_duplicates"], **stats})


def leak(a, b, *, settings: LeakSettings | None = None, config_a=None, split_a=None, config_b=None, split_b=None,
         max_rows=None, token=None, progress=None, engine=None, **loose) -> leakage.LeakResult:
    """``leakage.leak`` of B (evaluation) against A (training), with its arguments (the roles and the
    search as ``settings`` or as its loose ``text=``, ``threshold=`` ...); on Ray, A's shards are
    mapped as tasks against B's indexes (``distributed.leak``)."""
    engine = EngineSettings.coerce(engine)
    settings = leakage.leak_settings(settings, **loose)
    if not engine.on_ray:
        return leakage.leak(a, b, config_a=config_a, split_a=split_a, config_b=config_b, split_b=split_b,
                            max_rows=max_rows, token=token, progress=progress, settings=settings)
    b_spec = b if isinstance(b, SourceSpec) else SourceSpec(b, config_b, split_b, default_split="test")
    return ray_leak(a, b_spec, settings=settings, split_a=split_a, config_a=config_a, max_rows=max_rows, token=token,
                    progress=progress, address=engine.ray_address, shard_dir=engine.shard_dir, quiet=engine.quiet)


def clean(test, against, *, engine=None, max_rows=None, token=None, **options) -> clean_command.CleanResult:
    """``clean.clean``; on Ray each training side's shards are compared as ``leak`` compares them,
    in one Ray session for all of them."""
    engine = EngineSettings.coerce(engine)
    if not engine.on_ray:
        return clean_command.clean(test, against, max_rows=max_rows, token=token, **options)
    check_shard_dir(engine.shard_dir, [test, *([against] if isinstance(against, (str, os.PathLike)) else against)],
                    "leak")

    def compare(other, side, settings):
        return ray_leak(other, side, settings=settings, max_rows=max_rows, token=token, address=engine.ray_address,
                        shard_dir=engine.shard_dir, quiet=engine.quiet)

    with ray_session(engine.ray_address, quiet=engine.quiet):
        return clean_command.clean(test, against, max_rows=max_rows, token=token, compare=compare, **options)


def contamination(corpus, benchmark: str, *, out=None, manifest=None, engine=None, corpus_config=None,
                  corpus_split=None, corpus_text=None, benchmark_config=None, benchmark_split=None,
                  benchmark_text=None, ngram="auto", max_rows=None, token=None,
                  progress=None) -> tuple[contamination_command.ContaminationResult, DecontaminationResult | None]:
    """(the n-gram contamination scan of ``corpus`` against ``benchmark``, and the decontaminated
    copy when ``out`` is given, else None). Local: ``out`` is one .jsonl / .json file; Ray: a folder
    of one copy per shard, on a local disk or an object store (``distributed.decontaminate``)."""
    engine = EngineSettings.coerce(engine)
    remote = bool(out and URL_SCHEME.match(os.fspath(out)))
    if not engine.on_ray:
        if remote:
            raise AuditorError("usage", "The local engine writes the decontaminated corpus to a local file, not "
                               f"to a {os.fspath(out).partition('://')[0]}:// URI.", "Give a local .jsonl path, or "
                               "add --engine ray to write one copy per shard into a folder of the object store.")
        options = dict(corpus_config=corpus_config, corpus_split=corpus_split, corpus_text=corpus_text,
                       benchmark_config=benchmark_config, benchmark_split=benchmark_split,
                       benchmark_text=benchmark_text, ngram=ngram, token=token, progress=progress)
        if out:
            copy = decontaminate(corpus, benchmark, out, manifest=manifest, **options)
            return copy.contamination, copy
        return contamination_command.contamination(corpus, benchmark, max_rows=max_rows, **options), None
    if corpus_config or max_rows:
        raise AuditorError("usage", "--engine ray reads every row of the corpus's shards: --config and "
                           "--max-rows do not apply.", "Point at the shards (a directory, glob or URI).")
    options = dict(corpus_split=corpus_split, corpus_text=corpus_text, benchmark_config=benchmark_config,
                   benchmark_split=benchmark_split, benchmark_text=benchmark_text, ngram=ngram, token=token,
                   progress=progress, address=engine.ray_address, shard_dir=engine.shard_dir, quiet=engine.quiet)
    if out:
        copy = ray_decontaminate(corpus, benchmark, out, manifest=manifest, **options)
        return copy.contamination, copy
    return ray_contamination(corpus, benchmark, **options), None



def on_join_timeout(handler) -> None:
    """What a Ray join that times out calls (the CLI exits with its clear error; None: raise)."""
    runtime.on_join_timeout = handler


__all__ = ["EngineSettings", "clean", "contamination", "leak", "on_join_timeout", "refuse_outputs_inside", "scan"]
