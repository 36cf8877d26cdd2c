"""A contamination run's report: ``summary`` (summary.json) and ``markdown`` (REPORT.md) of a
ContaminationResult."""
from __future__ import annotations

from ..settings import COPIED_COVERAGE
from .common import (
    NO_WORDS,
    PARAPHRASE_CAVEAT,
    SCHEMA_VERSION,
    md_cell,
    md_code,
    md_note,
    side_name,
    unusable_note,
)

LISTED = 50         # contaminated items in REPORT.md's table (summary.json has them all)
SAME_AS_BENCHMARK = ("The corpus holds the benchmark's records (as many records, every item found whole): "
                     "every item matches itself, so these figures say nothing about contamination. Scan the "
                     "training corpus against the benchmark.")


def same_as_benchmark(summary: dict) -> bool:
    """Whether the corpus is the benchmark (the file given twice, or a copy): as many records, and
    every item that can be checked found whole (all its words in n-grams found). A streamed corpus
    has no fingerprint to compare, as leak compares its sides'."""
    corpus, items = summary["corpus"]["records"], summary["benchmark"]["records"]
    checked = items - summary["too_short"]["records"]
    return (corpus == items and checked > 0 and summary["contaminated"]["records"] == checked
            and all(it.get("coverage", 0) >= 1.0 for it in summary["items"]))


def _share(count: int, total: int) -> dict:
    return {"records": count, "fraction": round(count / total, 6) if total else 0.0}


def summary(result) -> dict:
    n_b = result.benchmark["records"]
    copied = sum(it.get("verdict") == "copied" for it in result.items)
    d = {
        "schema_version": SCHEMA_VERSION, "kind": "contamination",
        "corpus": {**result.corpus, "records": result.corpus_records, "tokens": result.corpus_tokens,
                   "no_words": result.corpus_no_words},
        "benchmark": result.benchmark,
        "settings": {"ngram": result.n, "tokenizer": result.tokenizer, "normalization": result.normalization},
        "contaminated": {"records": len(result.items),
                         "fraction": round(len(result.items) / n_b, 6) if n_b else 0.0},
        "too_short": {"records": len(result.too_short), "rows": result.too_short[:100]},
        # Of the contaminated items: copied (at least COPIED_COVERAGE of their words in n-grams found)
        # and those that only share a phrase (additive keys: "contaminated" stays the GPT-3 count).
        "copied": {**_share(copied, n_b), "min_coverage": COPIED_COVERAGE},
        "phrase_only": _share(len(result.items) - copied, n_b),
        "items": result.items,
        "caveat": PARAPHRASE_CAVEAT,
    }
    if same_as_benchmark(d):        # where matrix's same-records note is, for a pipeline reading summary.json
        d["notices"] = [SAME_AS_BENCHMARK]
    # How the scan ran (--engine ray: shards, seconds, MB/s): the one part that differs between
    # engines and runs; absent for the local engine.
    if getattr(result, "engine", None):
        d["engine"] = result.engine
    return d


def markdown(result) -> str:
    d = summary(result)
    b, c = d["benchmark"], d["corpus"]
    lines = [f"# Contamination: {md_cell(b['name'])} in {side_name(c)}", "",
             f"{d['contaminated']['records']:,} of {b['records']:,} benchmark items "
             f"({100 * d['contaminated']['fraction']:.2f}%) share at least one {result.n}-gram with the corpus "
             f"({c['records']:,} records, {c['tokens']:,} tokens). Tokens: {result.tokenizer}, of the text "
             f"normalised ({result.normalization}).", ""]
    if result.items:
        lines += [f"Of these, **{d['copied']['records']:,} look copied** (at least "
                  f"{100 * d['copied']['min_coverage']:.0f}% of the item's words lie in its {result.n}-grams found in "
                  f"the corpus) and **{d['phrase_only']['records']:,} only share a phrase** (a stock sentence or a "
                  "shared setup: read them before calling them contaminated). Coverage is that share of an item's "
                  "words.", ""]
    if c.get("text") and b.get("text"):
        # Only these fields are checked: a corpus whose text sits in another field looks clean.
        fields = ", ".join(md_code(name) for name in c["text"].split(","))
        joined = " (each record's fields joined as one text)" if "," in c["text"] else ""
        lines += [f"Text fields checked: corpus {fields}{joined}, benchmark {md_code(b['text'])} "
                  "(--text and --benchmark-text name others; --text takes several, separated by commas).", ""]
    lines += [line for notice in d.get("notices", ()) for line in (f"> Note: {md_note(notice)}", "")]
    notes = [f"> Note ({side}): {md_note(notice)}" for side, info in (("benchmark", b), ("corpus", c))
             for notice in info.get("notices", ())]
    lines += notes + ([""] if notes else [])
    if c["no_words"]:
        field_ = f" Its text field is {md_cell(repr(c['text']))}: " if c.get("text") else " "
        lines += [unusable_note(c["no_words"], c["records"], "the corpus's", NO_WORDS) + field_
                  + "a shard with other fields, or the wrong field, looks like this.", ""]
    if d["too_short"]["records"]:
        lines += [f"{d['too_short']['records']} items are shorter than {result.n} tokens: **too short to check**, "
                  "not clean.", ""]
    if result.items:
        lines += ["| benchmark row | corpus rows | matched n-grams | longest span (tokens) | coverage | verdict |",
                  "|---|---|---|---|---|---|"]
        for it in result.items[:LISTED]:
            matches = it.get("corpus_matches", len(it["corpus_rows"]))
            rows = ", ".join(map(str, it["corpus_rows"][:5])) + (f" … ({matches:,} rows)" if matches > 5 else "")
            lines.append(f"| {it['benchmark_row']} | {rows} | {it['matched_ngrams']} of {it['item_ngrams']} | "
                         f"{it['longest_span']} | {100 * it.get('coverage', 0):.0f}% | "
                         f"{'copied' if it.get('verdict') == 'copied' else 'shares a phrase'} |")
        if len(result.items) > LISTED:
            # The table is a sample: say so, or a reader takes the 50 rows for every contaminated item.
            lines += ["", f"The first {LISTED} of the {len(result.items):,} contaminated items are listed; "
                      "summary.json lists every one."]
    lines += ["", "---", PARAPHRASE_CAVEAT + " A clean n-gram result is not proof of no contamination.", ""]
    return "\n".join(lines)
