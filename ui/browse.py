"""View data of the parts a person works through: the cluster browser (list, one cluster, the
review), the evidence lists (leaking records, contaminated items) and the Downloads tab (every file
with its row count). Pure functions of the cached audit and the page's state, keyed by part names."""
from __future__ import annotations

import gradio as gr

from . import cluster_view, clusters, evidence, views
from .views import h


def enabled(path, label: str | None = None):
    return gr.update(value=str(path), interactive=True, **({"label": label} if label else {}))


def disabled(label: str | None = None):
    return gr.update(value=None, interactive=False, **({"label": label} if label else {}))


# --------------------------------------------------------------------------- clusters

def cluster_filters(st: dict) -> dict:
    return {**clusters.NO_FILTERS, **((st.get("clusters") or {}).get("filters") or {})}


def clusters_view(result, st: dict, ranked: tuple, tally: dict, raw_clusters: int) -> dict:
    """The cluster list's page, its caption and the review panel (the open cluster: ``members_view``)."""
    view = st.get("clusters") or {}
    filters = cluster_filters(st)
    match = clusters.filtered(result, ranked, filters)
    pages = max(1, -(-len(match) // clusters.CLUSTERS_PAGE))
    page = min(max(int(view.get("page") or 0), 0), pages - 1)
    on_page = match[page * clusters.CLUSTERS_PAGE:(page + 1) * clusters.CLUSTERS_PAGE]
    shown = (page * clusters.CLUSTERS_PAGE + 1, page * clusters.CLUSTERS_PAGE + len(on_page))
    frame = cluster_view.clusters_frame(result, on_page)
    review = clusters.review_of(st)
    return {"clusters_info": cluster_view.caption(st["threshold"], tally, st.get("keep", "first"), shown, len(match),
                                                  filters != clusters.NO_FILTERS, raw_clusters)
            + (f" Page {page + 1:,} of {pages:,}." if pages > 1 else ""),
            "clusters_df": gr.update(value=frame, visible=not frame.empty),
            "clusters_prev": gr.update(interactive=page > 0),
            "clusters_next": gr.update(interactive=page + 1 < pages),
            "review_panel": cluster_view.review_html(review, st.get("review_gain"))}


def cluster_on_page(result, st: dict, ranked: tuple, row: int):
    """The cluster on row ``row`` of the list's current page (None when there is none)."""
    view = st.get("clusters") or {}
    match = clusters.filtered(result, ranked, cluster_filters(st))
    pages = max(1, -(-len(match) // clusters.CLUSTERS_PAGE))
    page = min(max(int(view.get("page") or 0), 0), pages - 1)
    k = page * clusters.CLUSTERS_PAGE + int(row)
    return match[k][1] if 0 <= int(row) < clusters.CLUSTERS_PAGE and k < len(match) else None


def members_view(result, st: dict, ranked: tuple) -> dict:
    """The open cluster (the one holding ``st["clusters"]["open"]``, a row) with a page of its records."""
    view = st.get("clusters") or {}
    row = view.get("open")
    if row is None:
        return {"cluster_view": cluster_view.MEMBERS_PLACEHOLDER}
    found = next(((rank, c) for rank, c in enumerate(ranked) if row in c.rows), None)
    if found is None:
        return {"cluster_view": "<p class='cut'>That record is in no cluster now (its cluster was split or it was "
                                "kept apart): select another cluster.</p>"}
    rank, c = found
    pages = max(1, -(-c.size // clusters.MEMBERS_PAGE))
    page = min(max(int(view.get("members_page") or 0), 0), pages - 1)
    split = clusters.split_offer(result, c, st["threshold"])
    html = cluster_view.members_html(result, c, rank, st["threshold"], page, clusters.MEMBERS_PAGE,
                                     clusters.member_jaccards(result, c, page), split, st.get("keep", "first"))
    return {"cluster_view": html}


# --------------------------------------------------------------------------- evidence lists

def leak_list(st: dict) -> dict:
    view = (st.get("evidence") or {}).get("leak")
    if not view:
        return {"leak_evidence": ""}
    rows, matching, page, pages = evidence.leak_page(view)
    if rows is None:
        return {"leak_evidence": "<p class='cut'>This list has expired from the cache: press <b>Check leakage</b> "
                                 "again.</p>"}
    kind = view.get("kind") or "any_leak"
    label = None if kind == "any_leak" else evidence.LEAK_KINDS[kind][0]
    words = (view.get("search") or "").strip()
    if words:
        label = (label + "; " if label else "") + f"containing “{words[:80]}”"
    pager = evidence.pager_html("leaking B records", matching, view.get("total", matching), page, pages, label)
    body = views.leak_evidence_html(rows, limit=len(rows)) if rows else ""
    return {"leak_evidence": f"<p class='sub'>{evidence.leak_rows_note()}</p>{pager}{body}"
            + (pager if len(rows) > 3 else "")}


def contam_list(st: dict) -> dict:
    view = (st.get("evidence") or {}).get("contam")
    if not view:
        return {"contam_evidence": ""}
    rows, matching, page, pages = evidence.contam_page(view)
    if rows is None:
        return {"contam_evidence": "<p class='cut'>This list has expired from the cache: press <b>Check "
                                   "leakage</b> again.</p>"}
    label = evidence.contam_filter_label(view.get("kind"))
    words = (view.get("search") or "").strip()
    if words:
        label = (label + "; " if label else "") + f"containing “{words[:80]}”"
    order = ("sorted by coverage, highest first" if view.get("sort", "coverage") == "coverage"
             else "in benchmark order")
    pager = evidence.pager_html(f"benchmark item–record matches, {order}", matching, view.get("total", matching),
                                page, pages, label)
    body = views.contamination_evidence_html(rows, limit=len(rows)) if rows else ""
    return {"contam_evidence": pager + body + (pager if len(rows) > 3 else "")}


def para_list(rows: list, view: dict, threshold: float) -> str:
    """The flagged paraphrase pairs (``rows``, all of them at ``threshold``): a page, searched."""
    if not rows:
        return views.paraphrase_evidence_html([], threshold)
    on_page, matching, page, pages = evidence.para_page(rows, view)
    words = (view.get("search") or "").strip()
    label = f"containing “{words[:80]}”" if words else None
    pager = evidence.pager_html(f"flagged benchmark items, best match first (margin score ≥ {threshold:g})",
                                matching, len(rows), page, pages, label)
    body = views.paraphrase_evidence_html(on_page, threshold) if on_page else ""
    return pager + body + (pager if len(on_page) > 3 else "")


# --------------------------------------------------------------------------- downloads

def plural(n: int, word: str) -> str:
    if n == 1:
        return f"{n:,} {word}"
    return f"{n:,} {word}{'es' if word.endswith(('ch', 'sh', 's', 'x')) else 's'}"


def downloads_note(files: list) -> str:
    """The Downloads tab's list: each file, what it holds and how many rows."""
    lines = [f"- **{h(name)}**: {h(what)}" for name, what in files]
    return "\n".join(lines)
