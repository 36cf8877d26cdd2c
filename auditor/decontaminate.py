"""Step 8b, decontaminate: a copy of a training corpus without the records that share an n-gram
with a benchmark — the remedy model reports apply to their training data once contamination is
found (GPT-3 dropped such documents; ``clean`` does the other side, an evaluation split's records
found in training data).

Two passes over the corpus, in memory bounded by its number of records, never by its bytes:

1. the contamination scan (``contamination.scan_corpus``, the same tokens, n and report), which
   also notes, batch by batch, the rows of the records that share an n-gram with any item;
2. the records read again, in the same order, every one not noted written unchanged, streamed
   and atomically (JSONL or a JSON array), with a manifest of the dropped rows beside it. Local
   JSONL files (plain or compressed) are copied line by line, each record's bytes as they were
   (no parse: ten times faster than parsing and writing each record again, and numbers, escapes
   and key order stay as written), also in a folder that mixes formats; other files' and sources'
   records are written as the auditor reads them (``record_line``, ``clean.write_rows``), so a
   folder's copy is the Ray copies of its shards put end to end, byte for byte. A corpus that holds
   another number of records on the second pass, or whose files changed (``io.copies.file_stamp``), is an error,
   never a copy with the wrong rows dropped.

On Ray (``distributed.decontaminate``) the scan's tasks return each shard's matching rows and a
copy task per shard writes that shard's file.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial

import numpy as np

from .contamination import BENCHMARKS, ContaminationResult, scan_corpus
from .errors import AuditorError
from .io.columns import is_text_list
from .io.copies import (
    copy_record_lines,
    kept_items,
    local_source_files,
    local_stamps,
    write_rows,
)
from .io.outputs import check_outputs, retire, write_text, written_together
from .io.sources import peek_records, source_text
from .report import decontaminate as report

WRITE_SUFFIXES = (".jsonl", ".ndjson", ".json")     # written as the records stream by


@dataclass(frozen=True)
class DecontaminationResult:
    contamination: ContaminationResult          # the scan's report, as `auditor contamination` gives it
    dropped_rows: np.ndarray                    # ascending 0-based corpus rows not written
    out: str
    manifest: str
    notices: tuple = ()                         # how the records were read and written (a CSV's renamed columns)

    @property
    def records(self) -> int:
        return self.contamination.corpus_records

    @property
    def kept(self) -> int:
        return self.records - int(self.dropped_rows.size)

    def summary(self) -> dict:
        return report.summary(self)

    def markdown(self) -> str:
        return report.markdown(self)


def decontaminate(corpus, benchmark: str, out, *, manifest=None, corpus_config=None, corpus_split=None,
                  corpus_text=None, benchmark_config=None, benchmark_split=None, benchmark_text=None,
                  ngram="auto", token=None, progress=None) -> DecontaminationResult:
    """Write ``corpus`` to ``out`` without its records that share an n-gram with ``benchmark``
    (every record read; the settings are ``contamination``'s), and the dropped rows to
    ``manifest`` (default: OUT.dropped.json)."""
    if is_text_list(corpus):
        raise AuditorError("usage", "A decontaminated copy needs the corpus as a source (a file, folder or "
                           "dataset id), not a list of texts.", "Pass the corpus's path or id.")
    if not isinstance(out, (str, os.PathLike)):
        raise AuditorError("usage", f"The decontaminated corpus needs a file path, got {type(out).__name__}.",
                           "Give e.g. 'corpus.clean.jsonl' (or call contamination() to only count).")
    corpus, out = source_text(corpus), os.fspath(out)
    if not out.lower().endswith(WRITE_SUFFIXES):
        raise AuditorError("usage", f"Cannot write the decontaminated corpus as {out!r:.80}: it is written as the "
                           "records stream by, as JSON Lines or a JSON array.", "Name it .jsonl (or .json).")
    manifest = os.fspath(manifest) if manifest else f"{out}.dropped.json"
    check_outputs([corpus, BENCHMARKS.get(benchmark, (source_text(benchmark),))[0]],
                  [("the decontaminated corpus", out), ("its manifest", manifest)])
    say = progress or (lambda fraction, stage: None)
    stamps = local_stamps(corpus, corpus_split)
    matched: list = []
    result = scan_corpus(corpus, benchmark, corpus_config=corpus_config, corpus_split=corpus_split,
                         corpus_text=corpus_text, benchmark_config=benchmark_config, benchmark_split=benchmark_split,
                         benchmark_text=benchmark_text, ngram=ngram, token=token, matched_rows=matched,
                         progress=lambda fraction, stage: say(0.6 * fraction, stage if fraction < 1 else "scanned"))
    dropped = np.concatenate(matched) if matched else np.zeros(0, dtype=np.int64)
    say(0.6, "writing the decontaminated corpus")
    as_array = out.lower().endswith(".json")
    files = local_source_files(corpus, corpus_split)
    # The previous run's manifest goes as the new copy takes its place: a run killed between the two
    # writes leaves a copy without a manifest, never one described by another run's.
    retire_manifest = partial(retire, manifest)
    # ... and takes its place only once the manifest is written: a failed manifest leaves neither new
    with written_together([out, manifest]):
        if files is not None:
            read: list = []          # the readers' notices: the copy holds the records as they were read
            copy_record_lines(files, dropped, result.corpus_records, out, as_array=as_array,
                              source=result.corpus["source"], stamps=stamps, before_replace=retire_manifest,
                              notices=read)
            notices = list(dict.fromkeys(read))
        else:
            read = []
            _, records = peek_records(corpus, corpus_config, corpus_split, token=token, notices=read)
            kept = kept_items(records, dropped, result.corpus_records, result.corpus["source"], stamps)
            notices = write_rows(kept, out, fmt="json" if as_array else "jsonl", before_replace=retire_manifest)
            notices = [*dict.fromkeys(read), *notices]
        write_text(manifest, report.manifest(result, dropped, notices=notices), errors="backslashreplace")
    say(1.0, "done")
    return DecontaminationResult(contamination=result, dropped_rows=dropped, out=out, manifest=manifest,
                                 notices=tuple(notices))
