"""A leak's report: ``summary`` (summary.json) and ``markdown`` (REPORT.md) of a LeakResult
(evidence.csv: ``auditor.evidence.leak_evidence_csv``).

The Jaccard shown with a match is the near-duplicate score: a B record found only by an identical
answer (its text differing) has none, so the field is null ("–" in REPORT.md; evidence.csv's
text_jaccard is the two texts' own). A contained match carries its containment (|A & B| / |B|).
"""
from __future__ import annotations

from ..settings import CONTAINED_METHOD, CONTAINED_MIN_SHARED
from .common import (
    NO_TEXT,
    PARAPHRASE_CAVEAT,
    SCHEMA_VERSION,
    md_cell,
    md_code,
    md_note,
    side_name,
    unusable_note,
)

PAIRS_SAMPLE = 50
SHARED_GROUPS_SHOWN = 30    # in REPORT.md; summary.json lists SHARED_GROUPS_LISTED
SHARED_GROUPS_LISTED = 100
EVIDENCE_MATCHES = 5        # A rows listed per leaked B record
# How a contained match is decided (auditor.near.contained), as summary.json states it.
CONTAINED_RULE = "|A & B| / |B| >= threshold and |A| >= |B| / threshold (B's shingles inside one longer A text)"
# reworded_both: near or contained text whose A record holds the same answer (``leakage.add_reworded_matches``);
# last, so the kind a pair is shown by, and the evidence's kind strings, stay those of its text match.
MATCH_KINDS = ("identical_both", "identical_text", "identical_answer", "near_duplicate", "contained", "reworded_both")
TEXT_KINDS = ("identical_both", "identical_text", "near_duplicate", "contained")     # a match on the text itself
# The kind a sampled pair is shown by: its text match first, so a question reworded from an A record
# with the same answer never reads as an answer-only match (found in a review on MBPP).
SHOWN_KINDS = TEXT_KINDS + ("identical_answer",)
ANSWER_KINDS = ("identical_answer", "identical_both", "reworded_both", "answer_only")   # need both sides' answers


def group_order(value: str) -> tuple:
    """Shared group values in reading order: whole numbers by value (2 before 11), then the rest."""
    text = str(value)
    digits = text[1:] if text[:1] == "-" else text
    return (0, int(text), text) if digits.isdecimal() and digits.isascii() and len(digits) < 4300 else (1, 0, text)


def _jaccard(match: dict) -> float | None:
    return round(match["jaccard"], 4) if "jaccard" in match else None


def _containment(match: dict) -> float | None:
    return round(match["containment"], 4) if "containment" in match else None


def side_block(side) -> dict:
    """What the report says about one side (a PreparedSide): where it came from, its size and roles."""
    t = side.table
    notices = list(getattr(t, "notices", ()))      # what the reader chose or skipped (a split, a Spark _temporary/)
    revision = getattr(t, "revision", None)      # a Hub dataset's commit read (absent for files)
    return {"source": t.source, "config": t.config, "split": t.split, **({"revision": revision} if revision else {}),
            "records": side.records,
            "no_text": side.no_text, "fingerprint": side.fingerprint, "truncated": t.truncated,
            "roles": side.roles.to_dict(), **({"notices": notices} if notices else {})}


def summary(result) -> dict:
    n_b = len(result.b.table.rows)
    frac = (lambda k: {"records": k, "fraction": round(k / n_b, 6) if n_b else 0.0})
    sample = []
    for b_row in result.leaked_b_rows:
        m = result.matches[b_row]
        kind = next(k for k in SHOWN_KINDS if m.get(k))
        sample.append({"b": b_row, "a": m[kind][0], "jaccard": _jaccard(m), "match": kind,
                       **({"containment": _containment(m)} if kind == "contained" else {})})
        if len(sample) >= PAIRS_SAMPLE:
            break
    near = result.near
    out = {
        "schema_version": SCHEMA_VERSION, "kind": "leak",
        "a": side_block(result.a), "b": side_block(result.b),
        "settings": {"threshold": result.threshold,
                     "shingle": {"unit": result.shingle.unit, "size": result.shingle.size},
                     "text_normalizer": "default", "answer_normalizer": result.answer_normalizer,
                     "normalization": result.normalization},
        "method": {"near_duplicates": near.method if near else None,
                   "contained": {"search": CONTAINED_METHOD, "rule": CONTAINED_RULE,
                                 "min_shared_shingles": CONTAINED_MIN_SHARED} if near else None,
                   "answer_identity": "the whole answer after the answer normaliser, not a final number"},
        "identical_text": frac(result.counts["identical_text"]),
        "identical_answer": frac(result.counts["identical_answer"]),
        "identical_both": frac(result.counts["identical_both"]),
        # Near or contained text, and the same A record's answer identical (not identical both already).
        "reworded_both": frac(result.counts.get("reworded_both", 0)),
        "near_duplicate": frac(result.counts["near_duplicate"]),
        # B texts inside an A text (|A & B| / |B| >= threshold), not identical or near already
        "contained": frac(result.counts.get("contained", 0)),
        "any_leak": frac(len(result.matches)),
        # Of those: a shared answer and no shared text (chance, on short answers), and the records
        # whose text is in A, identical, near or contained (what clean --near drops, --fail-on-overlap fails on).
        "answer_only": frac(sum(1 for m in result.matches.values() if m.get("identical_answer")
                                and not any(m.get(k) for k in TEXT_KINDS))),
        "text_leak": frac(len(result.text_leak_rows)),
        # Distinct values on both sides, and the B records holding one (what a split by group leaks).
        "shared_groups": {"count": len(result.shared_groups), "values": result.shared_groups[:SHARED_GROUPS_LISTED],
                          **frac(result.shared_group_records)},
        "pairs_sample": sample,
    }
    # How the search ran (the Ray engine's shards, timing and candidates scored) differs between
    # engines and runs; everything above is the same for both.
    if getattr(result, "engine", None):
        out["engine"] = result.engine
    return out


SAME_RECORDS = ("A and B hold the same records (the same fingerprint): every record matches itself, so these "
                "figures say nothing about leakage. Compare the training split with the evaluation split.")


def same_records(summary: dict) -> bool:
    """Whether a leak compared a source with itself (the two sides' record fingerprints agree)."""
    a, b = summary["a"].get("fingerprint"), summary["b"].get("fingerprint")
    return a is not None and a == b


def fields_line(roles_a: dict, roles_b: dict) -> str:
    """Which fields were compared, and which were guessed: a wrong guess (an id as the text, a
    multiple-choice letter as the answer) changes every figure."""
    def field(roles: dict, role: str) -> str:
        if role == "text" and len(roles.get("text_fields") or ()) > 1:     # each record's joined as one text
            return " + ".join(md_code(name) for name in roles["text_fields"]) + " (joined)"
        return md_code(roles[role])

    def side(roles: dict) -> str:
        named = [f"{role} {field(roles, role)}" + (" (guessed)" if role in roles.get("guessed", ()) else "")
                 for role in ("text", "answer", "group") if roles.get(role)]
        return ", ".join(named) or "none"
    return (f"Fields compared: A {side(roles_a)}; B {side(roles_b)}. Name them with --text/--answer/--group "
            "(and --text-b ... for B) if a guess is wrong.")


def markdown(result) -> str:
    d = summary(result)
    n_b = d["b"]["records"]
    lines = [f"# Leakage: {side_name(d['a'])} → {side_name(d['b'])}", "",
             f"Every figure counts records of the evaluation side ({side_name(d['b'])}, {n_b:,} records) that also "
             f"occur in {side_name(d['a'])} ({d['a']['records']:,} records).", "",
             fields_line(d["a"]["roles"], d["b"]["roles"]), ""]
    if same_records(d):
        lines += [f"> Note: {SAME_RECORDS}", ""]
    notes = [f"> Note ({side.upper()}): {md_note(notice)}" for side in ("a", "b") for notice in d[side].get("notices", ())]
    lines += notes + ([""] if notes else [])
    lines += ["| check | records | fraction |", "|---|---|---|"]
    no_answer = [side.upper() for side in ("a", "b") if not getattr(result, side).roles.answer]
    for key, label in (("identical_text", "identical text"), ("identical_answer", "identical answer"),
                       ("identical_both", "identical text AND answer (same record): answerable from memory"),
                       ("reworded_both", "near or inside an A text AND that record's answer identical: answerable "
                                         "from memory, reworded or wrapped"),
                       ("near_duplicate", f"near-duplicate text (Jaccard ≥ {result.threshold:g})"),
                       ("contained", f"text inside an A record (≥ {100 * result.threshold:g}% of its shingles; "
                                     "not counted above)"),
                       ("any_leak", "any of the above"),
                       ("answer_only", "of which a shared answer only (the text not identical, near or inside an "
                                       "A text)"),
                       ("text_leak", "**text found in A, identical, near or inside an A text** "
                                     "(what `clean --near` drops; "
                                     "`--fail-on-overlap` fails on it)")):
        if key in ANSWER_KINDS and no_answer:     # a 0 would read as "compared, nothing found"
            lines.append(f"| {label} | not compared: no answer field in {' or '.join(no_answer)} | – |")
            continue
        lines.append(f"| {label} | {d[key]['records']:,} | {100 * d[key]['fraction']:.2f}% |")
    groups = d["shared_groups"]
    if result.b.roles.group and not result.a.roles.group:
        lines.append(f"| group value also in A ({md_cell(result.b.roles.group)}) | not compared: no group field in "
                     "A | – |")
    elif result.b.roles.group:
        lines.append(f"| group value also in A ({md_cell(result.b.roles.group)}: {groups['count']:,} shared "
                     f"value{'s' if groups['count'] != 1 else ''}) | {groups['records']:,} | "
                     f"{100 * groups['fraction']:.2f}% |")
    lines += ["", "**Reading it.** An identical question alone may be a reused stem asked of different data; "
              "an identical answer alone may be a common short answer. *Identical both* is the figure that "
              "means a model could score by memory, and *near or inside … answer identical* the same where the "
              "question was reworded or wrapped (an instruction around it, its worked answer after it): among "
              "each B record's best five near and containing A records. Answers are compared whole, after "
              f"normalisation ({result.answer_normalizer or 'no answer field'}), never by a final number alone. "
              f"Texts are compared normalised: {result.normalization}."]
    for side in ("b", "a"):
        if d[side]["no_text"]:
            lines += ["", unusable_note(d[side]["no_text"], d[side]["records"], f"{side.upper()}'s", NO_TEXT)]
    if groups["count"]:
        shown = groups["values"][:SHARED_GROUPS_SHOWN]
        more = (f" … (the first {len(shown):,} of {groups['count']:,}; summary.json lists "
                f"{len(groups['values']):,})" if groups["count"] > len(shown) else "")
        lines += ["", "Shared groups: " + ", ".join(md_cell(v) for v in shown) + more]
    if d["pairs_sample"]:
        text_a, text_b = result.a.fields.text, result.b.fields.text
        lines += ["", "## Evidence (sample)", "", "| B row | A row | match | Jaccard | B text | A text |",
                  "|---|---|---|---|---|---|"]
        for p in d["pairs_sample"][:20]:
            score = "–" if p["jaccard"] is None else f"{p['jaccard']:.4f}"
            if p.get("containment") is not None:
                score = f"contained {p['containment']:.4f}"
            lines.append(f"| {p['b']} | {p['a']} | {p['match']} | {score} | {md_cell(text_b[p['b']])} | "
                         f"{md_cell(text_a[p['a']])} |")
    lines += ["", "---", PARAPHRASE_CAVEAT, ""]
    return "\n".join(lines)
