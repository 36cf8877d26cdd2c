"""Leakage between two splits or datasets: how many evaluation records (side B) also
occur in the training side (A).

Every figure is a count of B's records with its fraction of B:
- identical text, identical answer (the whole normalised answer), and identical both
  (text AND answer equal to the SAME A record: answerable from memory);
- near-duplicate text (Jaccard >= threshold, verified), reusing the engine's search;
- contained text: B's shingles mostly inside one A text (|A & B| / |B| >= threshold, B long enough:
  ``near.contained``), counted for B records with no identical-text or near-duplicate match;
- shared group values (e.g. databases present on both sides).

Both sides are prepared once (``auditor.prepare``); either may be given already prepared (the
app passes the dataset it audited as A; ``clean`` passes its TEST as B for every training side).
Formatting is in ``auditor.report.leak``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from .errors import AuditorError
from .exact import combine, digest_ids
from .io.columns import chained
from .io.table import select
from .evidence import leak_evidence, leak_evidence_csv
from .near import CROSS_MATCHES, CrossPairs, find_stacked_cross_pairs
from .near.contained import find_contained
from .normalize import DESCRIPTION as NORMALIZATION
from .normalize import normalized
from .prepare import PreparedSide, answer_normalizer, prepare
from .progress import Progress
from .report import leak as report
from .report import to_json  # noqa: F401  (re-exported: auditor.leakage.to_json)
from .report.leak import EVIDENCE_MATCHES, MATCH_KINDS, PAIRS_SAMPLE, group_order  # noqa: F401  (re-exported)
from .settings import LeakSettings, NearSettings, RoleNames, SourceSpec
from .shingles import ShingleSpec, shingle_matrix

Side = PreparedSide          # the old name of a prepared side

# Leak's stages: (name, what the progress callback says, share of the run).
STAGES = (("load_a", "loading", 0.2), ("load_b", "loading", 0.2), ("exact", "comparing exactly", 0.15),
          ("near_duplicates", "searching near duplicates", 0.45))


def prepare_side(source, config, split, text, answer, group, max_rows, token) -> PreparedSide:
    """The old entry point: ``auditor.prepare.prepare`` with leak's roles."""
    return prepare(source, config=config, split=split, max_rows=max_rows, token=token, text=text,
                   answer=answer, group=group)


@dataclass(frozen=True)
class LeakResult:
    a: PreparedSide
    b: PreparedSide
    threshold: float
    shingle: ShingleSpec
    answer_normalizer: str | None
    matches: dict = field(repr=False)     # b row -> {kind: [a rows]}, plus "jaccard" / "containment" -> best score
    counts: dict = field(default_factory=dict)
    shared_groups: list = field(default_factory=list)
    near: CrossPairs | None = field(default=None, repr=False)
    engine: dict | None = None          # --engine ray: shards, seconds, candidates (summary.json's engine block)
    normalization: str = NORMALIZATION  # the text normalisation (normalize.fold), as the report states it

    @cached_property
    def shared_group_records(self) -> int:
        """B records whose group value is one of the shared values (what a split by group leaks):
        counted once per result over B's distinct values (REPORT.md and summary.json each ask)."""
        if not self.shared_groups or self.b.fields.group is None:
            return 0
        counts = Counter(self.b.fields.group)
        return sum(counts[g] for g in self.shared_groups)

    @property
    def leaked_b_rows(self) -> list[int]:
        return sorted(self.matches)

    def any_leak(self) -> bool:
        return bool(self.matches)

    @property
    def text_leak_rows(self) -> list[int]:
        """B rows whose text is an A text, a near duplicate of one or contained in one: what ``clean --near`` drops and
        ``leak --fail-on-overlap`` fails on. A shared answer alone is not one: on multiple-choice
        letters, labels or short numbers every record shares one by chance (``clean.drop_reason``)."""
        return [i for i in self.leaked_b_rows if drop_reason(self.matches[i], near=True) is not None]

    def clean_b_rows(self, near: bool = True):
        """B's original rows without those ``clean`` would drop (``clean.drop_reason``): texts found
        in A and, with ``near``, near duplicates of A texts or contained in one; rows sharing only an
        answer stay."""
        rows = self.b.table.rows
        return select(rows, [i for i in range(len(rows)) if drop_reason(self.matches.get(i, {}), near) is None])

    def summary(self) -> dict:
        return report.summary(self)

    def evidence_rows(self) -> list[dict]:
        return leak_evidence(self)

    def evidence_csv(self) -> str:
        return leak_evidence_csv(self)

    def markdown(self) -> str:
        return report.markdown(self)


def found_in(keys_a: np.ndarray, keys_b: np.ndarray, limit: int = EVIDENCE_MATCHES):
    """(b row, [a rows]) for each B row whose key (``exact.digest_ids``, or ``combine``: -1 missing)
    some A row holds, in B's row order: the first ``limit`` such A rows, ascending."""
    order = np.argsort(keys_a, kind="stable")             # A rows by key, ascending within a key
    ordered = keys_a[order]
    b_rows = np.flatnonzero(keys_b >= 0)
    lo = np.searchsorted(ordered, keys_b[b_rows], side="left")
    hi = np.searchsorted(ordered, keys_b[b_rows], side="right")
    hit = hi > lo
    for b_row, start, stop in zip(b_rows[hit].tolist(), lo[hit].tolist(), np.minimum(hi[hit], lo[hit] + limit).tolist()):
        yield b_row, order[start:stop].tolist()


def leak_settings(settings: LeakSettings | None = None, *, text=None, answer=None, group=None, text_b=None,
                  answer_b=None, group_b=None, threshold: float = 0.7, shingle: ShingleSpec | None = None,
                  method: str = "auto") -> LeakSettings:
    """The settings of a leak check, validated: ``settings`` as given, or built from the loose role
    and search arguments (never both), for ``leak`` here and on every engine (``engines.leak``)."""
    loose = (text, answer, group, text_b, answer_b, group_b, shingle)
    if settings is not None and (any(v is not None for v in loose) or threshold != 0.7 or method != "auto"):
        raise AuditorError("usage", "leak() was given a settings object and loose role or search arguments.",
                           "Put the roles and the threshold, shingles and method in LeakSettings, or leave it out.")
    if settings is None:
        text, text_b = (tuple(t) if isinstance(t, list) else t for t in (text, text_b))    # settings stay hashable
        settings = LeakSettings(near=NearSettings(threshold=threshold, shingle=shingle, method=method),
                                roles_a=RoleNames(text, answer, group), roles_b=RoleNames(text_b, answer_b, group_b))
    if not isinstance(settings, LeakSettings):
        raise AuditorError("usage", "settings must be an auditor.settings.LeakSettings, got "
                           f"{type(settings).__name__}.",
                           "Leave it out to use the loose arguments (text=, threshold= ...).")
    return settings.validated()


def leak(a, b, *, config_a=None, split_a=None, config_b=None, split_b=None, text=None, answer=None,
         group=None, text_b=None, answer_b=None, group_b=None, threshold: float = 0.7,
         shingle: ShingleSpec | None = None, method: str = "auto", max_rows=None, token=None,
         progress=None, settings: LeakSettings | None = None) -> LeakResult:
    """Records of B (the evaluation side) that occur in A. ``a`` and ``b``: anything
    ``auditor.load`` takes, a ``SourceSpec``, a loaded Table, or a ``PreparedSide`` (used as it
    is). ``settings`` replaces the loose role and search arguments, which build one when absent."""
    settings = leak_settings(settings, text=text, answer=answer, group=group, text_b=text_b, answer_b=answer_b,
                             group_b=group_b, threshold=threshold, shingle=shingle, method=method)
    # B is the evaluation side: without a split, its test split when it has one (A: train).
    specs = [side if isinstance(side, (PreparedSide, SourceSpec))
             else SourceSpec(side, config, split, max_rows, token, default_split=default)
             for side, config, split, default in ((a, config_a, split_a, "train"), (b, config_b, split_b, "test"))]
    for spec in specs:
        if isinstance(spec, SourceSpec):
            spec.validated()                # a bad row cap fails before anything is read
    return _leak(*specs, settings, Progress(progress, STAGES))


def prepared_side(spec, roles: RoleNames) -> PreparedSide:
    if isinstance(spec, PreparedSide):
        return spec
    return prepare(spec, text=roles.text, answer=roles.answer, group=roles.group)


def prepared_b(spec, settings: LeakSettings) -> PreparedSide:
    """B's side, its blank roles taken from A's; a field named for A that B lacks says how to name
    B's own (a train JSONL's "question", a test CSV's "prompt")."""
    try:
        return prepared_side(spec, settings.roles_for_b)
    except AuditorError as exc:
        hinted = inherited_field_hint(exc, settings.roles_a, settings.roles_b, "b", "B's")
        if hinted is exc:
            raise
        raise hinted from None


def inherited_field_hint(exc: AuditorError, given: RoleNames, own: RoleNames, option: str, whose: str):
    """``exc``, when it is a missing field a side took from the other's role (``given``, as ``own``
    left it blank), with a hint naming the option for ``whose`` own field (--text-b, text_b=)."""
    for role in ("text", "answer", "group"):
        if exc.code == "missing_field" and getattr(own, role) is None and getattr(given, role) is not None \
                and f"The {role} field " in exc.message:
            return AuditorError(exc.code, exc.message, f"{exc.hint} --{role} names the field on both sides: ".lstrip()
                                + f"--{role}-{option} names {whose} own ({role}_{option}= in Python).")
    return exc


def add_near_matches(near: CrossPairs, add, matches: dict) -> int:
    """Each B record's near-duplicate A rows (best first) into ``matches``; returns how many B
    records have one (shared with the Ray engine, so both read a CrossPairs the same way)."""
    return _add_cross(near, add, matches, "near_duplicate", "jaccard", lambda b: True)


def add_contained_matches(contained: CrossPairs, add, matches: dict) -> int:
    """Each B record's containing A rows (best first) into ``matches``, for the B records with no
    identical-text or near-duplicate match (those are text leaks already); returns how many. Shared
    with the Ray engine. Call after the near matches are in ``matches``."""
    def counted(b: int) -> bool:
        m = matches.get(b, {})
        return not (m.get("identical_text") or m.get("near_duplicate"))
    return _add_cross(contained, add, matches, "contained", "containment", counted)


def add_reworded_matches(matches: dict, add, answers_a, answers_b, answer_norm: str | None) -> int:
    """B records whose text is near or inside an A record holding the same answer (after the answer
    normaliser), with no identical text and answer already: answerable from memory, reworded or
    wrapped (an instruction around the question, the worked answer after it). Among each B record's
    listed near and containing A rows (its best ``CROSS_MATCHES`` of each). ``answers_a(rows)``,
    ``answers_b(rows)``: the two sides' answers of those rows. Shared with the Ray engine; call after
    the near and contained matches are in ``matches``. Returns how many."""
    if answer_norm is None:
        return 0
    listed = {b: [a for kind in ("near_duplicate", "contained") for a in m.get(kind, ())]
              for b, m in sorted(matches.items()) if not m.get("identical_both")}
    listed = {b: rows for b, rows in listed.items() if rows}
    if not listed:
        return 0
    keys_b = dict(zip(listed, normalized(answers_b(list(listed)), answer_norm)))
    flat = sorted({a for rows in listed.values() for a in rows})
    keys_a = dict(zip(flat, normalized(answers_a(flat), answer_norm)))
    count = 0
    for b, rows in listed.items():
        same = [a for a in rows if keys_b[b] is not None and keys_a[a] == keys_b[b]]
        if same:
            add(b, "reworded_both", same)
            count += 1
    return count


def _add_cross(pairs: CrossPairs, add, matches: dict, kind: str, score: str, counted) -> int:
    best: dict[int, float] = {}
    rows: dict[int, list] = {}
    for ai, bi, j in zip(pairs.a.tolist(), pairs.b.tolist(), pairs.jaccard.tolist()):
        if bi in rows or counted(bi):
            rows.setdefault(bi, []).append(ai)      # sorted by score, so best first
            best.setdefault(bi, j)
    for bi, a_rows in rows.items():
        add(bi, kind, a_rows)
        matches[bi][score] = best[bi]
    return len(rows)


def _leak(spec_a, spec_b, settings: LeakSettings, run: Progress) -> LeakResult:
    near_settings = settings.near
    with run.stage("load_a"):
        side_a = prepared_side(spec_a, settings.roles_a)
    with run.stage("load_b"):
        side_b = prepared_b(spec_b, settings)
    fa, fb = side_a.fields, side_b.fields
    matches: dict[int, dict] = {}

    def add(b_row: int, kind: str, a_rows: list) -> None:
        matches.setdefault(b_row, {})[kind] = a_rows[:EVIDENCE_MATCHES]

    with run.stage("exact"):
        text_a, text_b = side_a.digests("text"), side_b.digests("text")
        counts = dict.fromkeys(MATCH_KINDS, 0)
        text_ids = digest_ids(np.concatenate([text_a, text_b]))
        for b_row, a_rows in found_in(text_ids[:len(text_a)], text_ids[len(text_a):]):
            add(b_row, "identical_text", a_rows)
            counts["identical_text"] += 1
        answer_norm = None
        if fa.answer is not None and fb.answer is not None:
            answer_norm = answer_normalizer(chained(fa.answer, fb.answer))
            ans_a, ans_b = side_a.digests("answer", answer_norm), side_b.digests("answer", answer_norm)
            answer_ids = digest_ids(np.concatenate([ans_a, ans_b]))
            both_ids = combine(text_ids, answer_ids)        # -1 where either is missing
            n_a = len(ans_a)
            for b_row, a_rows in found_in(answer_ids[:n_a], answer_ids[n_a:]):
                add(b_row, "identical_answer", a_rows)
                counts["identical_answer"] += 1
            for b_row, a_rows in found_in(both_ids[:n_a], both_ids[n_a:]):
                add(b_row, "identical_both", a_rows)
                counts["identical_both"] += 1
            del ans_a, ans_b, answer_ids, both_ids
        del text_a, text_b, text_ids          # 8-24 bytes a record, not held through the near search
        # A side prepared here holds its digests no longer; B's, and a side the caller passed in
        # (clean's TEST, compared with every training side), keep theirs.
        if not isinstance(spec_a, PreparedSide) and side_a is not side_b:
            side_a.release_digests()
    with run.stage("near_duplicates"):
        matrix = shingle_matrix(chained(fa.text, fb.text), near_settings.shingle)
        n_a = len(fa.text)
        method = near_settings.cross_method(n_a, len(fb.text))
        near = find_stacked_cross_pairs(matrix, n_a, near_settings.threshold, method,
                                        num_perm=near_settings.num_perm, seed=near_settings.seed)
        contained = find_contained(matrix, n_a, near_settings.threshold, CROSS_MATCHES)
        del matrix
        counts["near_duplicate"] = add_near_matches(near, add, matches)
        counts["contained"] = add_contained_matches(contained, add, matches)
        if fa.answer is not None and fb.answer is not None:
            counts["reworded_both"] = add_reworded_matches(matches, add, lambda rows: [fa.answer[r] for r in rows],
                                                           lambda rows: [fb.answer[r] for r in rows], answer_norm)
        shared = []
        if fa.group is not None and fb.group is not None:
            shared = sorted({g for g in fa.group if g} & {g for g in fb.group if g}, key=group_order)
    run.done()
    return LeakResult(a=side_a, b=side_b, threshold=near_settings.threshold, shingle=near_settings.shingle,
                      answer_normalizer=answer_norm, matches=matches, counts=counts, shared_groups=shared, near=near)


def drop_reason(match: dict, near: bool) -> tuple[str, list] | None:
    """Why a B record with these leak matches (``LeakResult.matches[row]``) leaves a clean copy, and
    the A rows behind it; None keeps it. Dropped: its text is an A text (after normalisation), or,
    with ``near``, a near duplicate of one or contained in one. A shared answer alone is kept: short answers ("4",
    "yes") repeat by chance. The one rule for ``clean`` and the app's clean download."""
    if match.get("identical_text"):
        return "identical_text", match["identical_text"]
    if near and match.get("near_duplicate"):
        return f"near_duplicate (Jaccard {match['jaccard']:.4f})", match["near_duplicate"]
    if near and match.get("contained"):
        return f"contained (containment {match['containment']:.4f})", match["contained"]
    return None
