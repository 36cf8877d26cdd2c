"""Leakage between two splits or datasets: how many evaluation records (side B) also
occur in the training side (A).

Every figure is a count of B's records with its fraction of B:
- identical text, identical answer (the whole normalised answer), and identical both
  (text AND answer equal to the SAME A record: answerable from memory);
- near-duplicate text (Jaccard >= threshold, verified), reusing the engine's search;
- shared group values (e.g. databases present on both sides).
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from . import normalize
from .exact import normalized
from .near import CrossPairs, find_cross_pairs
from .report import PARAPHRASE_CAVEAT, SCHEMA_VERSION, md_cell, to_json  # noqa: F401  (to_json re-exported)
from .roles import Fields, Roles, canonical_record, extract, fingerprint, resolve_roles
from .shingles import ShingleSpec, shingle_matrix
from .sources import Table, load

EVIDENCE_MATCHES = 5        # A rows listed per leaked B record
PAIRS_SAMPLE = 50
MATCH_KINDS = ("identical_both", "identical_text", "identical_answer", "near_duplicate")


@dataclass(frozen=True)
class Side:
    table: Table
    roles: Roles
    fields: Fields = field(repr=False)
    fingerprint: str

    def block(self) -> dict:
        t = self.table
        return {"source": t.source, "config": t.config, "split": t.split, "records": len(t.rows),
                "fingerprint": self.fingerprint, "truncated": t.truncated, "roles": self.roles.to_dict()}


def prepare_side(source, config, split, text, answer, group, max_rows, token) -> Side:
    table = source if isinstance(source, Table) else load(source, config, split, max_rows=max_rows, token=token)
    roles = resolve_roles(table.rows, text=text, answer=answer, group=group)
    return Side(table, roles, extract(table.rows, roles),
                fingerprint([canonical_record(r) for r in table.rows], roles))


@dataclass(frozen=True)
class LeakResult:
    a: Side
    b: Side
    threshold: float
    shingle: ShingleSpec
    answer_normalizer: str | None
    matches: dict = field(repr=False)     # b row -> {kind: [a rows]}, plus "jaccard" -> best score
    counts: dict = field(default_factory=dict)
    shared_groups: list = field(default_factory=list)
    near: CrossPairs | None = field(default=None, repr=False)

    @property
    def leaked_b_rows(self) -> list[int]:
        return sorted(self.matches)

    def any_leak(self) -> bool:
        return bool(self.matches)

    def clean_b_rows(self) -> list[dict]:
        """B's original rows that leak in no way."""
        return [row for i, row in enumerate(self.b.table.rows) if i not in self.matches]

    def summary(self) -> dict:
        n_b = len(self.b.table.rows)
        frac = (lambda k: {"records": k, "fraction": round(k / n_b, 6) if n_b else 0.0})
        sample = []
        for b_row in self.leaked_b_rows:
            m = self.matches[b_row]
            kind = next(k for k in MATCH_KINDS if m.get(k))
            sample.append({"b": b_row, "a": m[kind][0], "jaccard": round(m.get("jaccard", 1.0), 4), "match": kind})
            if len(sample) >= PAIRS_SAMPLE:
                break
        near = self.near
        return {
            "schema_version": SCHEMA_VERSION, "kind": "leak",
            "a": self.a.block(), "b": self.b.block(),
            "settings": {"threshold": self.threshold, "shingle": {"unit": self.shingle.unit, "size": self.shingle.size},
                         "text_normalizer": "default", "answer_normalizer": self.answer_normalizer},
            "method": {"near_duplicates": near.method if near else None,
                       "candidates": near.candidates if near else 0,
                       "answer_identity": "the whole answer after the answer normaliser, not a final number"},
            "identical_text": frac(self.counts["identical_text"]),
            "identical_answer": frac(self.counts["identical_answer"]),
            "identical_both": frac(self.counts["identical_both"]),
            "near_duplicate": frac(self.counts["near_duplicate"]),
            "any_leak": frac(len(self.matches)),
            "shared_groups": {"count": len(self.shared_groups), "values": self.shared_groups[:100]},
            "pairs_sample": sample,
        }

    def evidence_rows(self) -> list[dict]:
        rows = []
        text_a, text_b = self.a.fields.text, self.b.fields.text
        for b_row in self.leaked_b_rows:
            m = self.matches[b_row]
            kinds = [k for k in MATCH_KINDS if m.get(k)]
            a_rows = sorted({a for k in kinds for a in m[k]})[:EVIDENCE_MATCHES]
            rows.append({"b_row": b_row, "match": "+".join(kinds), "a_rows": " ".join(map(str, a_rows)),
                         "jaccard": round(m.get("jaccard", 1.0), 4), "b_text": text_b[b_row] or "",
                         "a_text": text_a[a_rows[0]] or "" if a_rows else ""})
        return rows

    def evidence_csv(self) -> str:
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=["b_row", "match", "a_rows", "jaccard", "b_text", "a_text"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.evidence_rows())
        return buf.getvalue()

    def markdown(self) -> str:
        d = self.summary()
        n_b = d["b"]["records"]
        name = (lambda s: md_cell(s["source"] + (f" ({s['split']})" if s["split"] else "")))
        lines = [f"# Leakage: {name(d['a'])} → {name(d['b'])}", "",
                 f"Every figure counts records of the evaluation side ({name(d['b'])}, {n_b:,} records) that also "
                 f"occur in {name(d['a'])} ({d['a']['records']:,} records).", "",
                 "| check | records | fraction |", "|---|---|---|"]
        for key, label in (("identical_text", "identical text"), ("identical_answer", "identical answer"),
                           ("identical_both", "identical text AND answer (same record): answerable from memory"),
                           ("near_duplicate", f"near-duplicate text (Jaccard ≥ {self.threshold:g})"),
                           ("any_leak", "any of the above")):
            lines.append(f"| {label} | {d[key]['records']:,} | {100 * d[key]['fraction']:.2f}% |")
        groups = d["shared_groups"]
        if self.b.roles.group:
            lines.append(f"| shared group values | {groups['count']} | |")
        lines += ["", "**Reading it.** An identical question alone may be a reused stem asked of different data; "
                  "an identical answer alone may be a common short answer. *Identical both* is the figure that "
                  "means a model could score by memory. Answers are compared whole, after normalisation "
                  f"({self.answer_normalizer or 'no answer field'}), never by a final number alone."]
        if groups["count"]:
            lines += ["", "Shared groups: " + ", ".join(md_cell(v) for v in groups["values"][:30])]
        if d["pairs_sample"]:
            text_a, text_b = self.a.fields.text, self.b.fields.text
            lines += ["", "## Evidence (sample)", "", "| B row | A row | match | Jaccard | B text | A text |",
                      "|---|---|---|---|---|---|"]
            for p in d["pairs_sample"][:20]:
                lines.append(f"| {p['b']} | {p['a']} | {p['match']} | {p['jaccard']:.4f} | {md_cell(text_b[p['b']])} | "
                             f"{md_cell(text_a[p['a']])} |")
        lines += ["", "---", PARAPHRASE_CAVEAT, ""]
        return "\n".join(lines)


def _index(keys: list) -> dict:
    out: dict = {}
    for i, k in enumerate(keys):
        if k is not None:
            out.setdefault(k, []).append(i)
    return out


def leak(a, b, *, config_a=None, split_a=None, config_b=None, split_b=None, text=None, answer=None,
         group=None, text_b=None, answer_b=None, group_b=None, threshold: float = 0.7,
         shingle: ShingleSpec | None = None, method: str = "auto", max_rows=None, token=None,
         progress=None) -> LeakResult:
    """Records of B (the evaluation side) that occur in A. Sources as for ``auditor.load``."""
    from .shingles import check_threshold
    from .sources import check_max_rows
    threshold = check_threshold(threshold)
    shingle = ShingleSpec.coerce(shingle)       # None, a ShingleSpec or "word:3"
    check_max_rows(max_rows)
    report = progress or (lambda f, s: None)
    report(0.0, "loading")
    side_a = prepare_side(a, config_a, split_a, text, answer, group, max_rows, token)
    report(0.2, "loading")
    side_b = prepare_side(b, config_b, split_b, text_b or text, answer_b or answer, group_b or group, max_rows, token)
    fa, fb = side_a.fields, side_b.fields
    report(0.4, "comparing exactly")
    matches: dict[int, dict] = {}

    def add(b_row: int, kind: str, a_rows: list) -> None:
        matches.setdefault(b_row, {})[kind] = a_rows[:EVIDENCE_MATCHES]

    text_a, text_b = normalized(fa.text, "default"), normalized(fb.text, "default")
    by_text = _index(text_a)
    counts = dict.fromkeys(MATCH_KINDS, 0)
    for i, key in enumerate(text_b):
        if key is not None and key in by_text:
            add(i, "identical_text", by_text[key])
            counts["identical_text"] += 1
    answer_norm = None
    if fa.answer is not None and fb.answer is not None:
        answer_norm = "code" if normalize.looks_like_code(fa.answer + fb.answer) else "default"
        ans_a, ans_b = normalized(fa.answer, answer_norm), normalized(fb.answer, answer_norm)
        by_answer = _index(ans_a)
        by_both = _index([(t, x) if t is not None and x is not None else None for t, x in zip(text_a, ans_a)])
        for i, (t, x) in enumerate(zip(text_b, ans_b)):
            if x is not None and x in by_answer:
                add(i, "identical_answer", by_answer[x])
                counts["identical_answer"] += 1
            if t is not None and x is not None and (t, x) in by_both:
                add(i, "identical_both", by_both[(t, x)])
                counts["identical_both"] += 1
    report(0.55, "searching near duplicates")
    matrix = shingle_matrix(fa.text + fb.text, shingle)
    n_a = len(fa.text)
    near = find_cross_pairs(matrix[:n_a], matrix[n_a:], threshold, method)
    best: dict[int, float] = {}
    near_rows: dict[int, list] = {}
    for ai, bi, j in zip(near.a.tolist(), near.b.tolist(), near.jaccard.tolist()):
        near_rows.setdefault(bi, []).append(ai)      # sorted by score, so best first
        best.setdefault(bi, j)
    for bi, rows in near_rows.items():
        add(bi, "near_duplicate", rows)
        matches[bi]["jaccard"] = best[bi]
    counts["near_duplicate"] = len(near_rows)
    shared = []
    if fa.group is not None and fb.group is not None:
        shared = sorted({g for g in fa.group if g} & {g for g in fb.group if g})
    report(1.0, "done")
    return LeakResult(a=side_a, b=side_b, threshold=threshold, shingle=shingle, answer_normalizer=answer_norm,
                      matches=matches, counts=counts, shared_groups=shared, near=near)
