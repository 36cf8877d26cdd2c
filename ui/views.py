"""Rendering: HTML, Markdown, tables and Plotly figures from the library's results.

Everything shown comes from untrusted data, so this module is the one place values are escaped:
``h`` for HTML (and Gradio's HTML templates), ``md`` for Markdown; tables go through components
that show text, and Plotly labels are HTML-escaped. Nothing else in ``ui`` builds markup from data.
"""
from __future__ import annotations

import difflib
import html
import json
import logging
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from auditor import AuditorError
from auditor.evidence import excerpt
from auditor.hidden import visible as hidden_shown
from auditor.report import EXACT_KINDS, md_cell, overview_rows, pairs_text, pct, plural, roles_rows
from auditor.report.common import NO_TEXT, NO_WORDS, unusable_note
from auditor.semantic import CAVEAT

from .state import role_columns
from .uploads import STORE, when

log = logging.getLogger("auditor.app")

SNIPPET = 160                  # characters of a text shown in a table cell
DETAIL_CHARS = 6000            # characters of a record shown in the side-by-side view
EVIDENCE_SHOWN = 50            # leak / contamination items drawn side by side (the CSV holds all)
PLACEHOLDER_PAIR = "<p class='cut'>Select a pair above (or press j / k) to compare the two records.</p>"


# --------------------------------------------------------------------------- escaping

# Bidirectional controls (embeddings, overrides, isolates, marks) in data would reorder the page's
# own text around them (a count "38" shown as "83", a name read backwards), and zero-width
# characters hide what told two texts apart: every hidden character is shown as its code point
# (hidden.visible), as is a lone surrogate (valid in JSON input; no page or table can hold it).


def visible(text: str) -> str:
    # every hidden character the checks ignore (zero-width, bidi, soft hyphen, ...), not only bidi
    return hidden_shown(text)


def h(value) -> str:
    """Data for HTML: escaped, and with the characters of Gradio's HTML templates neutralised."""
    text = html.escape(visible("" if value is None else str(value)), quote=True)
    return text.replace("{", "&#123;").replace("}", "&#125;").replace("$", "&#36;").replace("`", "&#96;")


def md(value, limit: int | None = 200) -> str:
    """Data for Markdown: renders as the literal text (md_cell escapes markup, tables and HTML)."""
    text = visible("" if value is None else str(value))
    if limit is None:
        # md_cell cuts at 200 characters after escaping (which at most doubles a piece): 100 at a time.
        return "".join(md_cell(text[i:i + 100]) for i in range(0, len(text), 100))
    return md_cell(text[:limit]) + ("…" if len(text) > limit else "")


def field_label(name, limit: int = 80) -> str:
    """A field name as a list shows it (plain text): bidi controls visible, cut to ``limit``."""
    text = visible("" if name is None else str(name))
    return text[:limit] + ("…" if len(text) > limit else "")


def plot_text(value) -> str:
    """Data for a Plotly label (Plotly renders a subset of HTML in labels)."""
    return html.escape(visible("" if value is None else str(value)), quote=False)


def snippet(value, limit: int = SNIPPET) -> str:
    text = " ".join(visible("" if value is None else str(value)).split())
    return text[:limit] + ("…" if len(text) > limit else "")


def marked(text: str, spans, cls: str = "span") -> str:
    """``text`` as escaped HTML with ``<mark>`` around each (start, end) character span: the tags
    only ever wrap escaped pieces, so nothing of the text becomes markup."""
    text = "" if text is None else str(text)
    out, pos = [], 0
    for start, end in sorted((max(0, int(s)), min(len(text), int(e))) for s, e in spans or ()):
        if end <= pos:
            continue
        start = max(start, pos)
        out.append(h(text[pos:start]))
        out.append(f"<mark class='{cls}'>{h(text[start:end])}</mark>")
        pos = end
    out.append(h(text[pos:]))
    return "".join(out)


# Library hints that name a CLI flag, as this page says them (the page has no --text).
SPACE_HINTS = {"missing_field": lambda hint: hint.replace("Name one with --text.",
                                                          "Pick one as the Text field under Fields and options.")}


def error_text(exc: BaseException, doing: str = "audit") -> str:
    if isinstance(exc, AuditorError):
        hint = SPACE_HINTS.get(exc.code, lambda h: h)(exc.hint or "")
        hint = f"  \n*{md(hint, None)}*" if hint else ""
        return f"**Could not {doing}:** {md(exc.message, None)}{hint}"
    log.exception("unexpected error in the app")
    return (f"**Something went wrong** ({md(type(exc).__name__)}). The {doing} could not finish; "
            "check the inputs and try again.")


def cell(value, limit: int = SNIPPET):
    """A table cell: numbers as they are, anything else as a one-line snippet of text."""
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return value
    if value is None:
        return ""
    return snippet(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str), limit)


def records_frame(items: list, columns: tuple = (), limit: int = 500) -> pd.DataFrame:
    """A list of dicts as a table of text cells (nested values as compact JSON)."""
    rows = [{str(k): cell(v) for k, v in (item if isinstance(item, dict) else {"value": item}).items()}
            for item in items[:limit]]
    frame = pd.DataFrame(rows)
    if columns and not frame.empty:
        frame = frame[[c for c in columns if c in frame.columns] + [c for c in frame.columns if c not in columns]]
    return frame


# --------------------------------------------------------------------------- the headline

def verdict_words(dropped: int, records: int) -> str:
    share = dropped / records if records else 0.0
    if dropped == 0:
        return "No near duplicates"
    if share < 0.01:
        return "Little duplication"
    if share < 0.10:
        return "Some duplication"
    return "Heavy duplication"


def headline_html(source_name: str, records: int, near, point, leak: dict | None = None,
                  contam: dict | None = None, no_text: int = 0) -> str:
    """The verdict at the top of the results, in words and numbers: records, the share a dedup
    drops at the threshold, the clusters, and the leaks and copied benchmark items once checked.
    ``no_text``: records whose text is missing, null or blank (compared with nothing)."""
    t = near.threshold
    words = verdict_words(point.rows_dropped, records)
    parts = [f"Keeping one record per cluster at Jaccard ≥ {t:g} drops <b>{point.rows_dropped:,}</b> of "
             f"{records:,} records ({h(pct(point.rows_dropped, records))})"
             + (f": {near.clusters:,} cluster{'s' if near.clusters != 1 else ''}, the largest "
                f"{near.largest_cluster:,} records." if near.clusters else ".")]
    if no_text:
        # "No near duplicates" over records with no text would read as a clean dataset
        if no_text >= records:
            words = "No text to compare"
        parts.insert(0, f"<b>{no_text:,}</b> of {records:,} records have no text (missing, null or blank), so "
                        f"{'nothing was' if no_text >= records else 'they were not'} compared: name the text "
                        "field in Fields and options.")
    flags = []
    if leak:
        leaked, b_records = leak["text_leak"], leak["b_records"]
        parts.append(f"B ({h(leak['b_name'])}): <b>{leaked:,}</b> of {b_records:,} records repeat an A text "
                     f"({h(pct(leaked, b_records))}).")
        if leaked:
            flags.append("B leaks")
    if contam:
        parts.append(f"{h(contam['bench'])}: <b>{contam['copied']:,}</b> of {contam['items']:,} items look copied "
                     f"into A" + (f", {contam['phrase']:,} more share a phrase." if contam["phrase"] else "."))
        if contam["copied"]:
            flags.append("benchmark copied in")
    if not leak and not contam:
        parts.append("Leakage and contamination: not checked yet (Leakage tab).")
    tiles = [("records", f"{records:,}"),
             (f"dropped by dedup at ≥ {t:g}", f"{point.rows_dropped:,} ({pct(point.rows_dropped, records)})"),
             (f"clusters at ≥ {t:g}", f"{near.clusters:,}"),
             ("B records leaking", f"{leak['text_leak']:,} of {leak['b_records']:,}" if leak else "not checked"),
             ("benchmark items copied", f"{contam['copied']:,} of {contam['items']:,}" if contam else "not checked")]
    tile_html = "".join(f"<div class='tile'><dt>{h(label)}</dt><dd>{h(value)}</dd></div>" for label, value in tiles)
    title = words + (" · " + " · ".join(flags) if flags else "")
    return (f"<section class='headline' aria-label='Verdict'><p class='verdict'><strong>{h(title)}</strong> "
            f"<span class='where'>{h(source_name)}</span></p><p class='say'>{' '.join(parts)}</p>"
            f"<dl class='tiles'>{tile_html}</dl></section>")


# --------------------------------------------------------------------------- overview

NORMALIZER_IGNORES = {"default": "case and spacing ignored", "exact": "",
                      "code": "comments and spacing ignored"}


def stat_cards(result, near, counts: dict | None = None) -> str:
    """The overview's cards; ``counts``: the clusters after the page's review (every tab's)."""
    n = result.records
    clusters, in_clusters = ((counts["clusters"], counts["in_clusters"]) if counts
                             else (near.clusters, near.records_in_clusters))
    text_dup = result.exact.get("text")
    # The text's normaliser says which texts count as the same: under "default", "How many ships?"
    # and "how many  ships?" are one text (pandas' duplicated() counts them apart).
    ignored = NORMALIZER_IGNORES.get(text_dup.normalizer, f"normaliser {text_dup.normalizer}") if text_dup else ""
    cards = [("records", f"{n:,}"),
             (f"exact-duplicate texts ({ignored})" if ignored else "exact-duplicate texts",
              f"{text_dup.redundant:,}" if text_dup else "–"),
             (f"near-duplicate pairs at ≥ {near.threshold:g}", f"{near.pairs:,}"),
             ("near-duplicate clusters", f"{clusters:,}"),
             ("records in clusters", f"{in_clusters:,} ({pct(in_clusters, n)})")]
    body = "".join(f"<div class='stat'><div class='v'>{h(v)}</div><div class='l'>{h(label)}</div></div>"
                   for label, v in cards)
    return f"<div class='stat-cards'>{body}</div>"


def overview_markdown(result, threshold: float) -> str:
    d = result.summary(threshold)
    inp, near, ex, n = d["input"], d["near_duplicates"], d["exact_duplicates"], d["input"]["records"]
    where = " · ".join(f"{k} **{md(inp[k])}**" for k in ("config", "split") if inp[k])
    lines = [f"### {md(inp['source'])}", "",
             f"{n:,} records{' · ' + where if where else ''} · fingerprint {md(inp['fingerprint'])}", ""]
    if inp["truncated"]:
        lines += [f"> **Row cap:** only the first {inp['row_cap']:,} records were read; the dataset has more. "
                  "Every figure describes that prefix.", ""]
    for notice in inp["notices"]:
        lines += [f"> {md(notice, None)}", ""]
    if near["giant_cluster"]:
        g = near["giant_cluster"]
        lines += [f"> **Giant cluster:** one cluster holds {g['records']:,} records ({100 * g['share']:.1f}% of the "
                  "data), usually a shared template or boilerplate. Inspect it (Clusters tab) before "
                  f"trusting per-cluster counts. Sample rows: {', '.join(map(str, g['sample_rows']))}.", ""]
    # The overview and roles tables are REPORT.md's (auditor.report); only the escaping is ours.
    lines += ["| check | result |", "|---|---|"]
    lines += [f"| {md(check)} | {md(value)} |" for check, value in overview_rows(d)]
    lines += ["", "#### Roles", "", "| role | field | chosen |", "|---|---|---|"]
    lines += [f"| {role} | {md(field) or '–'} | {note or '–'} |" for role, field, note in roles_rows(d)]
    m = d["method"]
    lines += ["", "#### Method", ""]
    if m["near_duplicates"] == "exact-all-pairs":
        lines.append(f"Near duplicates: **exact all-pairs** search over {m['distinct_texts']:,} distinct texts; "
                     f"{m['candidates']:,} candidate pairs scored. Expected recall: **1.0** at every threshold "
                     "(nothing is missed).")
    else:
        s = d["settings"]
        recall = " · ".join(f"{t}: {p:.3f}" for t, p in m["expected_recall"].items())
        lines.append(f"Near duplicates: **MinHash-LSH** ({s['num_perm']} permutations, {s['bands']} bands × "
                     f"{s['rows']} rows, seed {s['seed']}) over {m['distinct_texts']:,} distinct texts; "
                     f"{m['candidates']:,} candidates verified with their exact Jaccard. Expected recall of a pair "
                     f"exactly at each threshold: {recall}. Counts are lower bounds.")
    sh, answers = d["settings"]["shingle"], d["settings"]["answer_normalizer"]
    lines.append(f"  \nShingles: {md(sh['unit'])} {sh['size']}-grams; normaliser {md(d['settings']['normalizer'])}"
                 f"{', answers ' + md(answers) if answers else ''}."
                 " Overlap is lexical: paraphrases and translations are not detected.")
    if d["schema"]["issues"]:
        lines += ["", "#### Schema issues", "", "| field | issue | records | expected | found | rows |",
                  "|---|---|---|---|---|---|"]
        for i in d["schema"]["issues"][:20]:
            found = ", ".join(f"{md(k)}: {v}" for k, v in i["found"].items()) or "absent"
            lines.append(f"| {md(i['field'])} | {md(i['kind'])} | {i['records']:,} | {md(i['expected'])} | {found} | "
                         f"{', '.join(map(str, i['rows_sample'][:8]))} |")
        if len(d["schema"]["issues"]) > 20:
            lines += ["", f"… and {len(d['schema']['issues']) - 20:,} more schema issues: summary.json lists them all."]
    examples = [(label, ex[name]) for name, label in EXACT_KINDS if ex.get(name) and ex[name]["examples"]]
    if examples:
        text = result.fields.text
        lines += ["", "#### Exact-duplicate examples", "", "| duplicates of | rows | text (first row) |",
                  "|---|---|---|"]
        for label, g in examples:
            for rows in g["examples"][:3]:
                shown = ", ".join(map(str, rows[:8])) + (" …" if len(rows) > 8 else "")
                lines.append(f"| {label} | {shown} | {md(snippet(text[rows[0]], 120))} |")
    if d["label_conflicts"]:
        lc = d["label_conflicts"]
        lines += ["", f"**Label conflicts:** {lc['groups']:,} texts carry different labels "
                      f"({lc['records']:,} records)."]
    return "\n".join(lines)


def audited_message(src, table, records: int, seconds: float, cached: bool, newer: str | None = None) -> str:
    how = "from the cache" if cached else f"in {seconds:.1f} s"
    where = " / ".join(md(x) for x in (table.config, table.split) if x)
    commit = getattr(table, "revision", None)
    at = f" at commit {md(commit[:12])}" if commit and src.kind == "hub" else ""
    msg = (f"Audited **{md(src.name)}**{' (' + where + ')' if where else ''}{at}: {plural(records, 'record')}, "
           f"{how}.")
    if newer:
        msg += (f"  \n**This link pins commit {md((commit or '')[:12])}; the dataset has a newer one "
                f"({md(newer[:12])}).** The figures are of the pinned commit, as shared; run the audit again from "
                "the box for the latest.")
    if table.truncated:
        msg += f"  \n**Row cap:** only the first {table.row_cap:,} rows were read; the dataset has more."
    return msg + upload_kept_note(src)


def scroll_list(label: str, body: str) -> str:
    """A list in its own scroll box (a screen high at most), which the keyboard can reach too."""
    return f"<div class='evidence-list' tabindex='0' role='region' aria-label='{label}'>{body}</div>"


def upload_kept_note(src) -> str:
    """For an uploaded file: how long this server keeps it (and so how long its link works)."""
    if getattr(src, "kind", None) != "upload" or not src.upload_id:
        return ""
    try:
        kept = STORE.get(src.upload_id, touch=False)
    except AuditorError:
        return ""
    return (f"  \nThe uploaded file is {STORE.policy()}: its share link works until at least "
            f"{when(kept.expires)}.")


def source_label(src, table) -> str:
    """What is audited, in a few words: the name, config / split (plain text, escaped where shown)."""
    where = " / ".join(str(x) for x in (table.config, table.split) if x)
    return str(src.name) + (f" ({where})" if where else "")


def review_note(counts: dict, raw: dict) -> str:
    """After the counts line: what the page's review changes (nothing when there is none)."""
    if counts == raw:
        return ""
    gain = counts["kept"] - raw["kept"]
    return (f"  \n**After your review:** {counts['clusters']:,} clusters, dedup keeps {counts['kept']:,} rows "
            f"({gain:+,} against the rule alone).")


def dedup_offer(counts: dict, keep: str, threshold: float) -> str:
    """The Downloads tab's line before the deduplicated file is built."""
    return (f"**Deduplicated file** at Jaccard ≥ {threshold:g}, rule *{md(keep.replace('_', ' '))}*: keeps "
            f"{counts['kept']:,} of {counts['records']:,} records (one per cluster, your review applied) and "
            f"drops {counts['dropped']:,}. Press **Build the deduplicated file** to write it and its manifest.")


def bold_html(text: str) -> str:
    """Escaped text with its **bold** runs as <b> (the library's notes mark their key words so)."""
    return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", h(text))


def b_roles_html(lr) -> str:
    """A line naming B's fields where they are not A's (B lacks A's, or was given its own)."""
    a, b = lr.a.roles, lr.b.roles
    other = [f"{role} <b>{h(getattr(b, role))}</b>" for role in ("text", "answer", "group")
             if getattr(b, role) != getattr(a, role) and getattr(b, role)]
    return f"<p>B's fields differ from A's: {', '.join(other)}.</p>" if other else ""


def leak_notes_html(s: dict) -> str:
    """The leak summary's notes: records of either side with no text to compare."""
    out = []
    for side in ("b", "a"):
        block = s.get(side) if isinstance(s.get(side), dict) else {}
        if isinstance(block.get("no_text"), int) and block["no_text"] and isinstance(block.get("records"), int):
            owner = side.upper() + "'s"
            out.append(f"<p>{bold_html(unusable_note(block['no_text'], block['records'], owner, NO_TEXT))}</p>")
    return "".join(out)


FORM_LABEL = "Fields and options"      # the form's title with no audit on screen


def form_label(src, table) -> str:
    """The folded form's title: what is audited now (plain text: Gradio shows labels as text). Not
    the threshold: a slider moves it without this title (the events of a threshold list no form)."""
    where = " / ".join(visible(x) for x in (table.config, table.split) if x)
    name = visible(src.name) + (f" ({where})" if where else "")
    return f"Fields and options · {name} · press to change"


# --------------------------------------------------------------------------- curve

def curve_figure(result, threshold: float) -> go.Figure:
    pts = result.curve
    x = [p.threshold for p in pts]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(go.Scatter(x=x, y=[p.clusters_per_1000 for p in pts], name="clusters per 1,000 records",
                             mode="lines+markers", line=dict(color="#4f46e5", width=3), marker=dict(size=8),
                             customdata=[[p.clusters, p.pairs] for p in pts],
                             hovertemplate="Jaccard ≥ %{x}<br>%{y:.2f} clusters per 1,000 records"
                                           "<br>%{customdata[0]:,} clusters<extra></extra>"),
                  secondary_y=False)
    fig.add_trace(go.Bar(x=x, y=[p.pairs for p in pts], name="near-duplicate pairs (right axis)",
                         marker=dict(color="rgba(245, 158, 11, 0.35)", line=dict(color="#f59e0b", width=1)),
                         width=0.05, customdata=[pairs_text(p.pairs, p.pairs_interval) for p in pts],
                         hovertemplate="%{customdata} pairs<extra></extra>"),
                  secondary_y=True)
    fig.data = fig.data[::-1]   # bars behind the line
    fig.add_vline(x=threshold, line=dict(color="#9ca3af", dash="dash"),
                  annotation_text=f"selected {threshold:g}", annotation_position="top")
    fig.update_xaxes(title_text="Jaccard threshold (looser to the right)", autorange="reversed", dtick=0.1)
    fig.update_yaxes(title_text="clusters per 1,000 records", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="near-duplicate pairs", rangemode="tozero", showgrid=False, secondary_y=True)
    fig.update_layout(template="plotly_white", height=400, margin=dict(l=60, r=60, t=40, b=60),
                      legend=dict(orientation="h", yanchor="bottom", y=1.04, x=0), hovermode="x unified")
    return fig


def curve_table(result) -> pd.DataFrame:
    # An estimated pair count (the search's work budget was passed) shows as "≈N (95% interval)".
    return pd.DataFrame([{"threshold": p.threshold,
                          "pairs": p.pairs if p.pairs_interval is None else pairs_text(p.pairs, p.pairs_interval),
                          "clusters": p.clusters,
                          "clusters per 1,000": p.clusters_per_1000,
                          "jump vs previous": "–" if p.jump_vs_previous is None else f"{p.jump_vs_previous:.2f}×"}
                         for p in result.curve])


def counts_markdown(near) -> str:
    return (f"**At Jaccard ≥ {near.threshold:g}:** {plural(near.pairs, 'near-duplicate pair')} · "
            f"{plural(near.clusters, 'cluster')} ({near.identical_clusters:,} identical, "
            f"{plural(near.variant_clusters, 'variant')}) · "
            f"{plural(near.records_in_clusters, 'record')} in clusters · "
            f"largest cluster {near.largest_cluster:,}")


# --------------------------------------------------------------------------- pairs

PAIR_HEADERS = ["a", "b", "jaccard", "text a", "text b", "id a", "id b", "not dup"]


def pairs_frame(result, a, b, j, marks: set) -> pd.DataFrame:
    """One page of pairs: record positions, Jaccard, both texts, the file's own ids, the mark."""
    text, ids = result.fields.text, result.fields.ids
    rows = [[int(x), int(y), round(float(s), 4), snippet(text[x]), snippet(text[y]),
             "" if ids is None else snippet(ids[x], 40), "" if ids is None else snippet(ids[y], 40),
             "✗ not dup" if (int(x), int(y)) in marks else ""]
            for x, y, s in zip(a.tolist(), b.tolist(), j.tolist())]
    return pd.DataFrame(rows, columns=PAIR_HEADERS)


def pairs_caption(threshold: float, total: int, listed: int, matching: int, page: int, pages: int,
                  filtered: bool, search: str | None, marks: int) -> str:
    if not total:
        return (f"No near-duplicate pairs at Jaccard ≥ {threshold:g}. Lower the threshold (top of the page or the "
                "curve tab) to look further.")
    head = f"{plural(total, 'pair')} at Jaccard ≥ {threshold:g}"
    if listed < total:
        head += f" (the best {listed:,} are reachable here; pairs.csv holds them within its size cap)"
    if filtered and not matching:
        what = f" containing “{md(search, 80)}”" if search else ""
        return f"{head}. **No pair matches** the filters{what}: widen the Jaccard range, untick *hide exact copies* " \
               "or change the search."
    shown = f"{matching:,} match the filters · " if filtered else ""
    return (f"{head}. {shown}page {page + 1:,} of {pages:,}. **Select a row**, or press **j** / **k** (next / "
            f"previous pair) and **n** (mark *not a duplicate*) while this tab is open. Rows are 0-based record "
            f"positions; *id* is the file's own id when it has one."
            + (f" {plural(marks, 'pair')} marked not a duplicate." if marks else ""))


def pairs_csv_note(written: int, reachable: int, budget: int) -> str:
    """The Downloads tab's line on pairs.csv when its size cap left pairs out ("" when it holds all)."""
    if written >= reachable:
        return ""
    return (f"**pairs.csv holds the best {written:,} of the {reachable:,} reachable pairs:** with both records' "
            f"texts the rest would pass the file's size cap ({budget / 1024 ** 2:,.0f} MB); the page's counts and "
            "summary.json cover every pair. Raise the threshold to list fewer.")


_TOKEN = re.compile(r"\s+|[^\s]+")


def diff_html(a: str, b: str) -> tuple[str, str]:
    """Both texts as escaped HTML, with the words one has and the other lacks marked."""
    ta, tb = _TOKEN.findall(a[:DETAIL_CHARS]), _TOKEN.findall(b[:DETAIL_CHARS])
    wa = [t for t in ta if not t.isspace()]
    wb = [t for t in tb if not t.isspace()]
    only_a, only_b = set(), set()
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, wa, wb, autojunk=False).get_opcodes():
        if op != "equal":
            only_a.update(range(i1, i2))
            only_b.update(range(j1, j2))

    def render(tokens, marked_words, cls):
        out, k = [], 0
        for t in tokens:
            if t.isspace():
                out.append(h(t))
                continue
            out.append(f"<mark class='{cls}'>{h(t)}</mark>" if k in marked_words else h(t))
            k += 1
        return "".join(out)

    more_a = "<span class='cut'> … (cut)</span>" if len(a) > DETAIL_CHARS else ""
    more_b = "<span class='cut'> … (cut)</span>" if len(b) > DETAIL_CHARS else ""
    return render(ta, only_a, "only-a") + more_a, render(tb, only_b, "only-b") + more_b


def record_label(result, row: int) -> str:
    """'record 12 · id abc' (escaped HTML): the position and the file's own id when it has one."""
    ids = result.fields.ids
    own = f" · id <b>{h(snippet(ids[row], 80))}</b>" if ids is not None and ids[row] not in (None, "") else ""
    return f"record <b>{h(row)}</b>{own}"


def pair_detail_html(result, a: int, b: int, jaccard, position: str = "", is_marked: bool = False) -> str:
    f = result.fields
    roles = result.roles
    mark = "<span class='nd-badge'>marked: not a duplicate</span>" if is_marked else ""
    parts = [f"<div class='pair-head'><span>{h(position)}</span><span>{record_label(result, a)} vs "
             f"{record_label(result, b)} · Jaccard <b>{h(jaccard)}</b></span>{mark}"
             "<span class='legend'><mark class='only-a'>only in a</mark> <mark class='only-b'>only in b</mark>"
             "</span></div>"]
    fields = [(f"text ({roles.text})", f.text), (f"answer ({roles.answer})", f.answer),
              (f"group ({roles.group})", f.group)]
    fields += [(f"label ({name})", f.labels.get(name)) for name in roles.labels]
    for label, values in fields:
        if values is None:
            continue
        left, right = diff_html(values[a] or "", values[b] or "")
        parts.append(f"<div class='field-name'>{h(label)}</div><div class='pair-view'>"
                     f"<div class='rec'><div class='rec-id'>a · record {h(a)}</div>{left}</div>"
                     f"<div class='rec'><div class='rec-id'>b · record {h(b)}</div>{right}</div></div>")
    return "<div class='pair-detail'>" + "".join(parts) + "</div>"


# --------------------------------------------------------------------------- clusters

CLUSTER_HEADERS = ["rank", "cluster", "size", "kind", "kept row", "kept text"]


def clusters_frame(result, clusters) -> pd.DataFrame:
    text = result.fields.text
    rows = [[rank + 1, c.cluster, c.size, "identical" if c.identical else "variant", c.kept_row,
             snippet(text[c.kept_row], 120)] for rank, c in enumerate(clusters)]
    return pd.DataFrame(rows, columns=CLUSTER_HEADERS)


def members_frame(result, rows, kept_row: int | None, limit: int = 200) -> pd.DataFrame:
    """Members of one cluster with every role (and the file's id) as columns."""
    cols = role_columns(result)
    out = []
    for r in list(rows)[:limit]:
        item = {"record": int(r), "kept": "kept" if r == kept_row else "dropped"}
        item.update({name: snippet(values[r], 120 if name == "text" else 60) for name, values in cols})
        out.append(item)
    return pd.DataFrame(out)


def clusters_caption(threshold: float, clusters, keep: str, marks: int) -> str:
    if not clusters:
        return f"No near-duplicate clusters at Jaccard ≥ {threshold:g}."
    identical = sum(1 for c in clusters if c.identical)
    members = sum(c.size for c in clusters)
    return (f"{plural(len(clusters), 'cluster')} at Jaccard ≥ {threshold:g}, largest first ({identical:,} identical, "
            f"{len(clusters) - identical:,} variant), holding {members:,} records. Kept per cluster: "
            f"**{md(keep.replace('_', ' '))}**" + (f"; {plural(marks, 'pair')} marked not a duplicate are kept apart"
                                                    if marks else "") + ". **Select a cluster** to list its members.")


def dedup_markdown(d: dict) -> str:
    text = (f"**Deduplicated file:** kept {d['kept']:,} of {d['records']:,} records (one per cluster, rule "
            f"*{md(d['keep'].replace('_', ' '))}*), dropped {d['dropped']:,}. The manifest lists every dropped "
            "record with the record kept in its place and why.")
    # Next to the download: what the file is not (marks applied to a sampled cluster, a row cap ...).
    notes = [f"> **Not exact:** {md(n, None)}" if not d.get("exact", True) and "sampled" in n else f"> {md(n, None)}"
             for n in d.get("notices") or ()]
    return "\n\n".join([text] + notes)


# --------------------------------------------------------------------------- concentration

def concentration_view(result):
    conc = result.concentration
    if conc is None:
        return (None, "No group field chosen. Pick one (e.g. `db_id`, `subject`, `source`) under **Group** and run "
                      "the audit to see how much of the data its largest groups hold.", pd.DataFrame())
    top = conc.top
    labels = [plot_text(snippet(t["value"], 40)) for t in top]
    fig = go.Figure(go.Bar(x=[100 * t["share"] for t in top], y=labels, orientation="h", marker_color="#4f46e5",
                           text=[f"{t['records']:,} ({100 * t['share']:.2f}%)" for t in top], textposition="auto",
                           hovertemplate="%{y}<br>%{x:.1f}% of records<extra></extra>"))
    fig.update_yaxes(title_text=plot_text(f"group ({conc.field})"), autorange="reversed", type="category")
    fig.update_xaxes(title_text="share of records (%)", rangemode="tozero")
    fig.update_layout(template="plotly_white", height=max(260, 60 + 34 * len(top)),
                      margin=dict(l=160, r=30, t=30, b=60))
    text = (f"**{plural(conc.groups, 'group')}** in **{md(conc.field)}**, {conc.mean_per_group:.1f} records per "
            f"group on average. The largest, **{md(snippet(conc.largest['value'], 80))}**, holds "
            f"{100 * conc.largest['share']:.1f}% of the "
            f"records. Herfindahl index {conc.hhi:.4f} (1/groups when even, 1 when one group holds everything)."
            + (f" {conc.records_without_group:,} records have no group." if conc.records_without_group else "")
            + (f" The chart and the table show the {len(top):,} largest." if len(top) < conc.groups else ""))
    table = pd.DataFrame([{"group": cell(t["value"]), "records": t["records"], "share": f"{100 * t['share']:.2f}%"}
                          for t in top])
    return fig, text, table


# --------------------------------------------------------------------------- leakage and contamination

def _share(block) -> str:
    if not isinstance(block, dict):
        return "–" if block is None else md(block)
    records = block.get("records", block.get("count"))
    fraction = block.get("fraction")
    out = f"{records:,}" if isinstance(records, int) else md(records)
    return out + (f" ({100 * fraction:.2f}%)" if isinstance(fraction, (int, float)) else "")


def leak_markdown(s: dict, threshold: float, a_name: str, b_name: str) -> str:
    def name(side, shown):
        v = s.get(side)
        if isinstance(v, dict):
            where = [md(v.get(k)) for k in ("config", "split") if v.get(k)]
            records = [f"{v['records']:,} records"] if isinstance(v.get("records"), int) else []
            inside = ", ".join(filter(None, [" / ".join(where)] + records))
            return f"**{md(shown)}**" + (f" ({inside})" if inside else "")
        return md(v)

    # Answers are compared only when both sides have an answer field: without one, a 0 would read
    # as "checked, nothing found".
    missing = [side.upper() for side in ("a", "b")
               if isinstance(s.get(side), dict) and not (s[side].get("roles") or {}).get("answer")]
    unchecked = f"– (not checked: no answer field in {' or '.join(missing)})" if missing else None
    lines = ["#### Leakage: does B repeat A?", "", f"A = {name('a', a_name)}  \nB = {name('b', b_name)}", "",
             "| B records that … | count |", "|---|---|",
             f"| repeat an A text exactly | {_share(s.get('identical_text'))} |",
             f"| repeat an A answer exactly | {unchecked or _share(s.get('identical_answer'))} |",
             f"| repeat text AND answer of one A record (answerable from memory) | "
             f"{unchecked or _share(s.get('identical_both'))} |",
             *([f"| are near or inside an A text whose answer is theirs (answerable from memory, reworded) | "
                f"{unchecked or _share(s.get('reworded_both'))} |"] if s.get("reworded_both") is not None else []),
             f"| are near duplicates of an A text (Jaccard ≥ {threshold:g}) | {_share(s.get('near_duplicate'))} |"]
    if s.get("contained") is not None:
        lines.append(f"| are inside an A text (≥ {100 * threshold:g}% of its shingles; not counted above) | "
                     f"{_share(s.get('contained'))} |")
    if s.get("any_leak") is not None:
        lines.append(f"| leak in any of these ways | {_share(s.get('any_leak'))} |")
    if s.get("answer_only") is not None:
        lines.append("| of which only share an answer (their text not identical, near or inside an A text) | "
                     f"{_share(s.get('answer_only'))} |")
    if s.get("text_leak") is not None:
        lines.append(f"| **repeat an A text, exactly or nearly** (what *Clean B split* drops; a shared answer "
                     f"alone is often chance) | **{_share(s.get('text_leak'))}** |")
    groups = s.get("shared_groups")
    if isinstance(groups, dict) and groups.get("count"):
        values = ", ".join(md(v, 40) for v in (groups.get("values") or [])[:10])
        held = groups.get("records")
        share = (f"{held:,} ({100 * groups['fraction']:.2f}%) in a group A has too; "
                 if isinstance(held, int) and isinstance(groups.get("fraction"), (int, float)) else "")
        lines.append(f"| group values present on both sides | {share}{groups['count']:,} shared values ({values}) |")
    for side in ("b", "a"):
        block = s.get(side) if isinstance(s.get(side), dict) else {}
        if isinstance(block.get("no_text"), int) and block["no_text"] and isinstance(block.get("records"), int):
            lines += ["", unusable_note(block["no_text"], block["records"], f"{side.upper()}'s", NO_TEXT)]
    if s.get("any_leak"):
        lines += ["", "*Clean B split* leaves out the B records whose text is an A text or a near duplicate of one "
                      "(as `auditor clean --near`); records that only share an answer stay, since short answers "
                      "repeat by chance."]
    if s.get("pairs_sample"):
        lines += ["", "Leaking B records beside the A record they repeat. *text Jaccard* compares the two texts "
                      "(an answer-only match can score low); the evidence CSV holds every one."]
    return "\n".join(lines)


# A match's kinds in words, as the summary table says them (evidence.csv keeps the codes).
KIND_WORDS = {"identical_both": "same text and answer", "identical_text": "same text",
              "identical_answer": "same answer", "near_duplicate": "near-duplicate text",
              "contained": "text inside the A record", "reworded_both": "reworded, same answer"}


def kind_words(kind) -> str:
    """``identical_both+identical_text`` -> "same text and answer"; codes that another implies are left
    out (the same text and answer imply each alone; an identical text, a near one; a reworded text
    with the same answer, that answer)."""
    codes = [c for c in str(kind or "").split("+") if c]
    implied = set()
    if "identical_both" in codes:
        implied |= {"identical_text", "identical_answer", "near_duplicate"}
    if "identical_text" in codes:
        implied.add("near_duplicate")               # (an identical text is its own near duplicate)
    if "reworded_both" in codes:
        implied.add("identical_answer")
    return " · ".join(KIND_WORDS.get(c, c) for c in codes if c not in implied) or "–"


def leak_evidence_html(rows: list, limit: int = EVIDENCE_SHOWN) -> str:
    """Leaking B records beside their A record: kind, text Jaccard, both texts and answers."""
    if not rows:
        return ""
    parts = []
    for r in rows[:limit]:
        tj = r.get("text_jaccard")
        tj = f"{tj:.3f}" if isinstance(tj, (int, float)) else "–"
        head = (f"<div class='ev-head'>B row <b>{h(r.get('b_row'))}</b>{_own_id(r.get('b_id'))} ↔ A row "
                f"<b>{h(r.get('a_row'))}</b>{_own_id(r.get('a_id'))} · <span class='ev-kind'>"
                f"{h(kind_words(r.get('kind')))}</span> · text Jaccard <b>{h(tj)}</b></div>")
        body = "".join(f"<div class='rec'><div class='rec-id'>{side} · {what}</div>{h(r.get(key) or '')}</div>"
                       for side, what, key in (("B", "text", "b_text"), ("A", "text", "a_text")))
        answers = ""
        if r.get("b_answer") or r.get("a_answer"):
            answers = "".join(f"<div class='rec'><div class='rec-id'>{side} · answer</div>{h(r.get(key) or '')}</div>"
                              for side, key in (("B", "b_answer"), ("A", "a_answer")))
            answers = f"<div class='pair-view'>{answers}</div>"
        parts.append(f"<div class='evidence'>{head}<div class='pair-view'>{body}</div>{answers}</div>")
    more = (f"<p class='cut'>The first {limit} of {len(rows):,} are shown; the CSV holds all.</p>"
            if len(rows) > limit else "")
    return scroll_list("leaking records", "".join(parts) + more)


def _own_id(value) -> str:
    return f" (id {h(snippet(value, 60))})" if value not in (None, "") else ""


def contamination_markdown(s: dict, bench: str, fields=()) -> str:
    """The contamination summary; ``fields``: A's fields searched (each record's joined as one text)."""
    b, c = s.get("benchmark") or {}, s.get("corpus") or {}
    n = (s.get("settings") or {}).get("ngram")
    where = " / ".join(md(b.get(k)) for k in ("config", "split") if b.get(k))
    lines = [f"#### Contamination: is {md(bench)} inside A?", "",
             f"Benchmark {md(b.get('source') or bench)}{' (' + where + ')' if where else ''}: "
             f"{b.get('records', 0):,} items; A: {c.get('records', 0):,} records"
             + (f", {c['tokens']:,} tokens" if isinstance(c.get("tokens"), int) else "")
             + (f". An item counts when it shares a {n}-token sequence with A." if n else ".")
             + (f" A's fields searched: {', '.join(md(f) for f in fields)}"
                + (" (each record's joined as one text)." if len(fields) > 1 else ".") if fields else ""), "",
             "| benchmark items | count |", "|---|---|",
             f"| share an n-gram with A (contaminated) | {_share(s.get('contaminated'))} |"]
    if isinstance(s.get("copied"), dict):
        cov = s["copied"].get("min_coverage", 0.5)
        lines += [f"| … of which look copied (at least {100 * cov:.0f}% of the item's words in n-grams found in A) | "
                  f"{_share(s.get('copied'))} |",
                  f"| … of which only share a phrase (a stock sentence, a shared setup) | "
                  f"{_share(s.get('phrase_only'))} |"]
    lines += [f"| too short to check (not clean) | {_share(s.get('too_short'))} |"]
    if isinstance(c.get("no_words"), int) and c["no_words"] and isinstance(c.get("records"), int):
        lines += ["", unusable_note(c["no_words"], c["records"], "A's", NO_WORDS)]
    if s.get("items"):
        lines += ["", "Each contaminated item beside the A record that contains it, the longest shared span "
                      "marked in both, with its *coverage* (the share of the item's words in n-grams found in A): a copied "
                      "item is mostly there, an item that only repeats a stock phrase barely. The evidence CSV (Downloads) "
                      "holds every item."]
    return "\n".join(lines)


def contamination_evidence_html(rows: list, limit: int = EVIDENCE_SHOWN) -> str:
    """Benchmark item and corpus record side by side, the matched spans marked in both."""
    if not rows:
        return ""
    parts = []
    for r in rows[:limit]:
        spans = r.get("spans") or {}
        coverage = r.get("coverage")
        verdict = ""
        if isinstance(coverage, (int, float)):
            copied = r.get("verdict") == "copied"
            verdict = (f" · coverage <b>{100 * coverage:.0f}%</b> of its words · <span class='badge "
                       f"{'dropped' if copied else 'phrase'}'>{'looks copied' if copied else 'shares a phrase'}"
                       "</span>")
        head = (f"<div class='ev-head'>benchmark row <b>{h(r.get('benchmark_row'))}</b> ↔ A row "
                f"<b>{h(r.get('corpus_row'))}</b> · {h(r.get('matched_ngrams'))} shared n-grams · longest shared "
                f"run <b>{h(r.get('longest_tokens'))}</b> tokens{verdict}</div>")
        # A long corpus record is shown around its matches (the CSV holds it whole).
        corpus, corpus_spans = excerpt(r.get("corpus_text") or "", spans.get("corpus") or [])
        cut = "<span class='cut'>… </span>" if corpus != (r.get("corpus_text") or "") else ""
        body = (f"<div class='rec'><div class='rec-id'>benchmark</div>"
                f"{marked(r.get('benchmark_text'), spans.get('benchmark'))}</div>"
                f"<div class='rec'><div class='rec-id'>A (corpus)</div>{cut}{marked(corpus, corpus_spans)}{cut}</div>")
        parts.append(f"<div class='evidence'>{head}<div class='pair-view'>{body}</div></div>")
    more = (f"<p class='cut'>The first {limit} of {len(rows):,} are shown; the CSV holds all.</p>"
            if len(rows) > limit else "")
    return scroll_list("contaminated items", "".join(parts) + more)


# --------------------------------------------------------------------------- paraphrases (semantic)

def paraphrase_markdown(sr, threshold: float, flagged: int, bench: str, a_name: str, notices) -> str:
    """The Paraphrases view's caption: how many items are flagged at ``threshold``, how the score
    works, where the scores part (the gap), the caveat, notices."""
    items = sr.benchmark_records
    share = f"{100 * flagged / items:.2f}%" if items else "–"
    dist, cos, gap = sr.distribution(), sr.cosine_distribution(), sr.gap()
    lines = [f"#### Paraphrases: is {md(bench)} reworded inside {md(a_name)} (A)?", "",
             f"**{flagged:,} of {items:,} benchmark items** ({share}) have an A record at margin score ≥ {threshold:g} "
             f"(and cosine ≥ {sr.cosine_floor:g}; model {md(sr.model)}, the best of each item's {sr.k} nearest among "
             f"{sr.corpus_records:,} A records).", "",
             "The margin score is how far an item's best match stands out from its neighbourhood: 1 is an "
             "identical text, a rephrase of the item scores high, and another item of the same task scores low "
             "even when its cosine is high (the next-nearest records are as close).", "",
             f"**{CAVEAT}** The histogram shows every item's best-match margin score and the threshold; move the "
             "slider to pick your own (the default is calibrated on bundled data).", ""]
    lines += [f"- {md(n, None)}" for n in list(notices) + sr.notices()]
    if dist["max"] is not None:
        lines += ["", f"Best-match margin scores: median {dist['p50']:.3f}, 90th percentile {dist['p90']:.3f}, "
                      f"max {dist['max']:.3f} (cosines: median {cos['p50']:.3f}, max {cos['max']:.3f})."]
    if gap:
        lines += ["", f"**Gap**: the scores part between {gap['low']:.3f} and {gap['high']:.3f} (shaded), with "
                      f"{gap['above']:,} items above it (verbatim copies left out)."]
    return "\n".join(lines)


def paraphrase_figure(dist: dict, threshold: float, gap: dict | None = None) -> go.Figure:
    """The best-match margin score histogram (the library's bins and counts), the threshold as a
    line and the gap between the scores as a shaded band."""
    bins, counts = dist["bins"], dist["counts"]
    fig = go.Figure(go.Bar(x=[round((lo + hi) / 2, 4) for lo, hi in zip(bins, bins[1:])], y=counts,
                           width=[0.95 * (hi - lo) for lo, hi in zip(bins, bins[1:])],
                           customdata=[[lo, hi] for lo, hi in zip(bins, bins[1:])], marker_color="#4f46e5",
                           name="benchmark items",
                           hovertemplate="margin %{customdata[0]:.2f}–%{customdata[1]:.2f}<br>%{y:,} items"
                                         "<extra></extra>"))
    if gap:
        fig.add_vrect(x0=gap["low"], x1=gap["high"], fillcolor="#16a34a", opacity=0.15, line_width=0,
                      annotation_text="gap", annotation_position="top left")
    fig.add_vline(x=threshold, line=dict(color="#dc2626", dash="dash", width=2),
                  annotation_text=f"threshold {threshold:g}", annotation_position="top")
    fig.update_xaxes(title_text="best-match margin score of each benchmark item", range=[0, 1], dtick=0.1)
    fig.update_yaxes(title_text="benchmark items", rangemode="tozero")
    fig.update_layout(template="plotly_white", height=320, margin=dict(l=60, r=30, t=40, b=60), showlegend=False)
    return fig


def paraphrase_evidence_html(rows: list, threshold: float) -> str:
    """Flagged benchmark items (one page of them) beside their best A match: the scores and both
    texts, escaped."""
    if not rows:
        return (f"<p class='cut'>No benchmark item has an A record at margin score ≥ {h(f'{threshold:g}')}: lower "
                "the threshold to review weaker matches.</p>")

    def rec(label: str, text: str) -> str:
        cut = "<span class='cut'> … (cut)</span>" if len(text) > DETAIL_CHARS else ""
        return f"<div class='rec'><div class='rec-id'>{label}</div>{h(text[:DETAIL_CHARS])}{cut}</div>"

    parts = []
    for r in rows:
        second = "–" if r.get("second") is None else f"{r['second']:.4f}"
        anchors = "–" if r.get("anchors") is None else f"{100 * r['anchors']:.0f}%"
        margin, cosine = f"{r['margin']:.4f}", f"{r['score']:.4f}"
        head = (f"<div class='ev-head'>benchmark row <b>{h(r['benchmark_row'])}</b> ↔ A row "
                f"<b>{h(r['corpus_row'])}</b> · margin <b>{h(margin)}</b> · cosine <b>{h(cosine)}</b> · next best "
                f"{h(second)} · anchors shared {h(anchors)}</div>")
        body = rec("benchmark", r["benchmark_text"] or "") + rec("A (corpus)", r["corpus_text"] or "")
        parts.append(f"<div class='evidence para'>{head}<div class='pair-view'>{body}</div></div>")
    return scroll_list("paraphrased items", "".join(parts))
