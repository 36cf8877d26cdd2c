"""A scan's report: ``summary`` (the summary.json of a ScanResult) and ``markdown`` (REPORT.md),
with the overview and roles rows the app shows too."""
from __future__ import annotations

from ..version import __version__
from .common import (
    PARAPHRASE_CAVEAT,
    SCHEMA_VERSION,
    md_cell,
    md_code,
    md_note,
    pct,
    plain,
    plural,
)

SCHEMA_ISSUES_SHOWN = 50      # REPORT.md's schema table; summary.json lists every issue


def input_block(table, fingerprint: str) -> dict:
    # A Hub dataset's commit read (absent for files and examples, whose reports stay as they were).
    revision = getattr(table, "revision", None)
    return {"source": table.source, "config": table.config, "split": table.split,
            **({"revision": revision} if revision else {}), "records": len(table.rows),
            "fingerprint": fingerprint, "files": list(table.files), "row_cap": table.row_cap,
            "truncated": table.truncated, "notices": list(table.notices)}


def _groups(d) -> dict | None:
    if d is None:
        return None
    return {"normalizer": d.normalizer, "groups": d.groups, "records": d.records, "redundant": d.redundant,
            "examples": d.examples}


def summary(result, threshold: float | None = None) -> dict:
    """The summary.json content of a ScanResult (at its threshold, or another cached one)."""
    s, pairs = result.settings, result.pairs
    near = result.near_duplicates(threshold)
    expected = {f"{t:g}": round(pairs.catch_probability(t), 4) for t in s.thresholds}
    conc = result.concentration
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "scan",
        "tool": {"name": "auditor", "version": __version__},
        "input": input_block(result.table, result.fingerprint),
        "roles": result.roles.to_dict(),
        "settings": {"normalizer": s.normalizer, "answer_normalizer": result.answer_normalizer,
                     "normalization": result.normalization,
                     "shingle": {"unit": s.shingle.unit, "size": s.shingle.size},
                     "threshold": s.threshold, "thresholds": list(s.thresholds), "num_perm": pairs.num_perm,
                     "bands": pairs.bands, "rows": pairs.rows, "seed": s.seed},
        "method": {"near_duplicates": pairs.method, "candidates": pairs.candidates,
                   "distinct_texts": pairs.n_nodes, "expected_recall": expected,
                   "template_groups": list(pairs.dense_groups),
                   "note": ("exact search: candidates are the pairs sharing a prefix shingle under a rare-first "
                            "order (the All-Pairs prefix filter), which provably contains every pair at or above "
                            "the lowest threshold; each is verified, so recall is 1"
                            + ("; template groups (distinct texts per group in template_groups) share most "
                               "shingles: all their pairs are scored by dense products and counted, not listed"
                               if pairs.dense_groups else "")
                            if pairs.method == "exact-all-pairs" else
                            "MinHash-LSH proposes candidates, each verified with its exact Jaccard; "
                            "expected_recall is the chance of catching a pair whose Jaccard equals that "
                            "threshold (pairs above it are caught more often)"),
                   **_budget_block(pairs)},
        "schema": {"fields": [{"name": f.name, "type": f.majority_type, "present": f.present}
                              for f in result.schema.fields],
                   "issues": plain(result.schema.issues),
                   # only when capped, so the schema of ordinary data reads as before
                   **({"fields_total": result.schema.fields_total,
                       "note": f"the data has {result.schema.fields_total:,} fields; the first "
                               f"{len(result.schema.fields):,} (in order of first appearance) are typed and "
                               "listed, the others only counted"} if result.schema.capped else {})},
        "degenerate": plain(result.degenerate),
        "exact_duplicates": {name: _groups(groups) for name, groups in result.exact.items()},
        "exact_duplicates_by_normalizer": {field: {name: _groups(g) for name, g in table.items()}
                                           for field, table in result.exact_by_normalizer.items()},
        "near_duplicates": with_estimate(near),
        "curve": [with_estimate(p) for p in result.curve],
        "concentration": None if conc is None else plain(conc),
        "label_conflicts": None if result.label_conflicts is None else plain(result.label_conflicts),
        # How the search ran on Ray (--engine ray); absent for the local engine, so the rest of
        # the report is byte-identical between engines.
        **({"engine": result.engine} if result.engine else {}),
    }


def with_estimate(point) -> dict:
    """A curve point's or the near-duplicate block's JSON, with ``pairs_estimated: true`` and
    ``pairs_interval: [low, high]`` added when its pair count is an estimate (absent otherwise, so
    a report whose counts are all exact is unchanged)."""
    out = plain(point)
    if point.pairs_interval is not None:
        out["pairs_estimated"] = True
        out["pairs_interval"] = [int(x) for x in point.pairs_interval]
    return out


def _budget_block(pairs) -> dict:
    """summary.json's method keys for a search that passed its work budget (none otherwise)."""
    e = pairs.estimate
    if e is None:
        return {}
    block = {"sample_rate": e.rate, "candidates_not_verified": int(e.skipped),
             "note": ("past the exact search's work budget, candidates the cluster forest "
                      "already joined at or above their Jaccard's upper bound were verified "
                      "in a seeded sample only: clusters are exact, pair counts are "
                      "estimates with a 95% interval (pairs_interval)")}
    if e.row_rate is not None:
        block["template_row_rate"] = e.row_rate
        block["template_pairs_not_counted"] = int(e.uncounted)
        block["note"] += ("; template groups past the budget counted the pairs of a seeded sample of their "
                          "rows only, every pair still scored for the cluster forest")
    return {"pairs_estimated": True, "pairs_estimate": block}


def pairs_text(count: int, interval) -> str:
    """A pair count as the reports show it: exact, or "≈N (95% interval lo–hi)"."""
    if interval is None:
        return f"{count:,}"
    return f"≈{count:,} (estimated; 95% interval {interval[0]:,}–{interval[1]:,})"


# The exact-duplicate keys of summary.json's "exact_duplicates", with the words tables use for them.
EXACT_KINDS = (("text", "text"), ("answer", "answer"), ("text_and_answer", "text + answer"),
               ("record", "whole record, every field (records with an empty text too)"))


def roles_rows(d: dict) -> list[tuple]:
    """(role, field or None, how it was chosen: "guessed", "named" or "") per role; field names are
    data: escape them."""
    roles = d["roles"]
    rows = [(role, roles[role], "guessed" if role in roles["guessed"] else "named" if roles[role] else "")
            for role in ("text", "answer", "group", "id")]
    if len(roles.get("text_fields") or ()) > 1:      # several fields, each record's read as one text
        rows[0] = ("text", ", ".join(roles["text_fields"]), "fields joined as one text")
    rows.append(("labels", ", ".join(roles["labels"]) or None, "named" if roles["labels"] else ""))
    return rows


FEW_ANSWERS = 26       # distinct answer values at most, in 100 records or more: a label, not a solution


def few_answer_values(d: dict) -> int | None:
    """The number of distinct answers when so few hold the whole answer column that their exact
    duplicates say nothing (MMLU's A-D read as 98% redundant answers); else None."""
    g, n = d["exact_duplicates"].get("answer"), d["input"]["records"]
    if not g or n < 100:
        return None
    present = n - d["degenerate"]["by_role"].get("answer", 0)
    distinct = g["groups"] + (present - g["records"])       # values held twice or more, and once
    return distinct if 0 < distinct <= FEW_ANSWERS and g["redundant"] >= present // 2 else None


def overview_rows(d: dict) -> list[tuple[str, str]]:
    """(check, result) rows of the overview table, shared by REPORT.md and the app. Only
    numbers and the tool's own names appear here, never dataset content."""
    n, near, ex = d["input"]["records"], d["near_duplicates"], d["exact_duplicates"]
    rows = [("Schema issues", f"{len(d['schema']['issues']):,}"),
            ("Degenerate records (an empty text, answer or group)", f"{d['degenerate']['records']:,}")]
    for name, label in EXACT_KINDS:
        g = ex.get(name)
        if g:
            rows.append((f"Exact duplicates: {label} ({g['normalizer']})",
                         f"{plural(g['groups'], 'group')}, {plural(g['records'], 'record')}, {g['redundant']:,} redundant "
                         f"({pct(g['redundant'], n)})"))
    rows += [(f"Near-duplicate pairs at Jaccard ≥ {near['threshold']:g}", pairs_text(near["pairs"], near.get("pairs_interval"))),
             ("Near-duplicate clusters", f"{near['clusters']:,}: {near['identical_clusters']:,} identical in every "
              f"evaluated field, {plural(near['variant_clusters'], 'variant')} (shared stem, something differs)"),
             ("Records in clusters", f"{near['records_in_clusters']:,} (largest cluster {near['largest_cluster']:,})")]
    return rows


def markdown(result, threshold: float | None = None) -> str:
    d = summary(result, threshold)
    n = d["input"]["records"]
    near = d["near_duplicates"]
    lines = [f"# Integrity audit: {md_cell(d['input']['source'])}", ""]
    cfg = ", ".join(f"{k} {md_cell(d['input'][k])}" for k in ("config", "split") if d["input"][k])
    lines += [f"{plural(n, 'record')}{' (' + cfg + ')' if cfg else ''}; fingerprint `{d['input']['fingerprint']}`.", ""]
    if d["input"].get("revision"):
        lines += [f"Hub revision {md_code(d['input']['revision'])} (the dataset's commit read: "
                  "`--revision` reads it again).", ""]
    if d["input"]["truncated"]:
        lines += [f"> **Row cap:** only the first {d['input']['row_cap']:,} records were read; the source has "
                  "more. Figures describe that prefix.", ""]
    for notice in d["input"]["notices"]:
        lines.append(f"> Note: {md_note(notice)}")
    lines += ["", "## Roles", "", "| role | field | chosen |", "|---|---|---|"]
    lines += [f"| {role} | {md_cell(field) or '–'} | {note or '–'} |" for role, field, note in roles_rows(d)]
    lines += ["", "## Overview", "", "| check | result |", "|---|---|"]
    lines += [f"| {check} | {value} |" for check, value in overview_rows(d)]
    few = few_answer_values(d)
    if few is not None:
        lines += ["", f"> **Answers:** the {few:,} distinct answer values are shared by most records (multiple-choice "
                  "letters or labels?): their exact duplicates are expected, not copies. The text and text + answer "
                  "rows are the ones to read."]
    if near["giant_cluster"]:
        g = near["giant_cluster"]
        lines += ["", f"> **Giant cluster:** one cluster holds {g['records']:,} records ({100 * g['share']:.1f}% of "
                  "the data). It usually means a shared template or boilerplate; inspect it before "
                  "trusting per-cluster counts."]
    m = d["method"]
    lines += ["", "## Method", "",
              f"Near duplicates: `{m['near_duplicates']}` over {m['distinct_texts']:,} distinct shingle sets, "
              f"{m['candidates']:,} candidate pairs scored; shingles {d['settings']['shingle']['unit']}:"
              f"{d['settings']['shingle']['size']}; every reported pair carries its exact Jaccard.", "",
              f"Texts are compared normalised: {d['settings']['normalization']}."]
    if m.get("template_groups"):
        lines += ["", f"{len(m['template_groups']):,} template group(s) of "
                  f"{', '.join(f'{g:,}' for g in m['template_groups'][:5])} distinct texts share most of their "
                  "shingles: every pair in them was scored by dense products and counted, not listed."]
    if m["near_duplicates"] == "minhash-lsh":
        recall = ", ".join(f"{t}: {p:.3f}" for t, p in m["expected_recall"].items())
        lines += ["", f"MinHash-LSH with {d['settings']['num_perm']} permutations, {d['settings']['bands']} bands x "
                  f"{d['settings']['rows']} rows, seed {d['settings']['seed']}. Chance of catching a pair whose "
                  f"Jaccard equals the threshold: {recall}. Counts are lower bounds."]
    if m.get("pairs_estimated"):
        e = m["pairs_estimate"]
        lines += ["", f"Pair counts are estimates: past the exact search's work budget, "
                  f"{e['candidates_not_verified']:,} candidate pairs that the cluster forest already joined at or "
                  f"above their Jaccard's upper bound were verified in a seeded {e['sample_rate']:g} sample only. "
                  "Clusters, records in clusters and the largest cluster are exact; each estimated count "
                  "carries its 95% interval."]
        if "template_pairs_not_counted" in e:
            lines[-1] += (f" In template groups, {e['template_pairs_not_counted']:,} pairs were scored for the "
                          f"cluster forest but not counted: their count comes from a seeded {e['template_row_rate']:g} "
                          "sample of the groups' rows.")
    lines += ["", "## Threshold curve", "", "| threshold | pairs | clusters | per 1,000 records | jump |",
              "|---|---|---|---|---|"]
    for p in d["curve"]:
        jump = "–" if p["jump_vs_previous"] is None else f"{p['jump_vs_previous']:.2f}x"
        lines.append(f"| {p['threshold']:g} | {pairs_text(p['pairs'], p.get('pairs_interval'))} | {p['clusters']} | "
                     f"{p['clusters_per_1000']:.2f} | {jump} |")
    if near["pairs_sample"]:
        text = result.fields.text
        lines += ["", f"## Near-duplicate pairs (top {min(10, len(near['pairs_sample']))})", "",
                  "| a | b | Jaccard | text a | text b |", "|---|---|---|---|---|"]
        for p in near["pairs_sample"][:10]:
            lines.append(f"| {p['a']} | {p['b']} | {p['jaccard']:.4f} | {md_cell(text[p['a']])} | "
                         f"{md_cell(text[p['b']])} |")
    conc = d["concentration"]
    if conc:
        lines += ["", f"## Concentration ({md_cell(conc['field'])})", "",
                  f"{conc['groups']:,} groups, {conc['mean_per_group']:.1f} records per group on average; the largest, "
                  f"{md_cell(conc['largest']['value'])}, holds {100 * conc['largest']['share']:.1f}%. "
                  f"Herfindahl index {conc['hhi']:.4f}.", "", "| group | records | share |", "|---|---|---|"]
        for t in conc["top"]:
            lines.append(f"| {md_cell(t['value'])} | {t['records']:,} | {100 * t['share']:.1f}% |")
    if d["schema"].get("fields_total"):
        lines += ["", f"> **Wide records:** {md_note(d['schema']['note'])}."]
    if d["schema"]["issues"]:
        lines += ["", "## Schema issues", "", "| field | issue | records | expected | found | rows |",
                  "|---|---|---|---|---|---|"]
        issues = d["schema"]["issues"]
        for i in issues[:SCHEMA_ISSUES_SHOWN]:
            found = ", ".join(f"{k}: {v}" for k, v in i["found"].items()) or "absent"
            lines.append(f"| {md_cell(i['field'])} | {i['kind']} | {i['records']:,} | {i['expected']} | {found} | "
                         f"{', '.join(map(str, i['rows_sample']))} |")
        if len(issues) > SCHEMA_ISSUES_SHOWN:      # a file of many one-off fields: the table stays readable
            lines += ["", f"... and {len(issues) - SCHEMA_ISSUES_SHOWN:,} more schema issues, listed in "
                          "summary.json."]
    if d["label_conflicts"]:
        lc = d["label_conflicts"]
        lines += ["", "## Label conflicts", "",
                  f"{lc['groups']:,} texts carry different labels ({lc['records']:,} records)."]
    lines += ["", "---", PARAPHRASE_CAVEAT, ""]
    return "\n".join(lines)
