"""The cluster browser's HTML: the caption with its counts, one cluster's members (each beside the
record kept, its differences marked, its own keep / drop decision), and the review so far. Every
value from the data goes through ``views.h`` / ``views.diff_html``; the buttons carry only numbers
(``data-act``, ``data-row``), which the server checks again."""
from __future__ import annotations

import pandas as pd

from .views import DETAIL_CHARS, diff_html, h, pct, plural, record_label, scroll_list, snippet

CLUSTER_HEADERS = ["rank", "cluster", "size", "kind", "kept row", "kept text"]


def clusters_frame(result, page_items) -> pd.DataFrame:
    """One page of clusters: (rank, ClusterInfo) pairs."""
    text = result.fields.text
    rows = [[rank + 1, c.cluster, c.size, "identical" if c.identical else "variant", c.kept_row,
             snippet(text[c.kept_row], 120)] for rank, c in page_items]
    return pd.DataFrame(rows, columns=CLUSTER_HEADERS)


def caption(t: float, tally: dict, keep: str, shown: tuple, matching: int, filtered: bool, raw_clusters: int) -> str:
    """The line above the cluster list: the counts (the headline's), the rule, what the page shows."""
    n, c = tally["records"], tally["clusters"]
    if not c:
        return f"No near-duplicate clusters at Jaccard ≥ {t:g}: every record is kept."
    review = (f" Before your review: {raw_clusters:,} clusters." if raw_clusters != c else "")
    what = (f"{matching:,} of them match the filters; " if filtered else "") + \
        (f"showing {shown[0]:,}–{shown[1]:,}" if matching else "none to show: widen the filters")
    return (f"**{c:,} cluster{'s' if c != 1 else ''} at Jaccard ≥ {t:g}**, largest first ({tally['identical']:,} "
            f"identical, {plural(c - tally['identical'], 'variant')}), holding {tally['in_clusters']:,} records. Kept per "
            f"cluster: **{keep.replace('_', ' ')}**: the deduplicated file keeps **{tally['kept']:,} of {n:,} rows**, "
            f"dropping {tally['dropped']:,} ({pct(tally['dropped'], n)}).{review} {what[0].upper()}"
            f"{what[1:]}. **Select a cluster** to see its records.")


def review_html(st_review: dict, effect: int | None) -> str:
    """The review so far, each decision with an undo button."""
    marks, apart, splits = st_review["marks"], st_review["apart"], st_review["splits"]
    if not (marks or apart or splits):
        return ("<p class='review-empty'>No review yet: in a cluster, <b>keep</b> a record that is not a duplicate, "
                "or <b>split</b> a cluster that chains different records; in the pairs tab, mark a pair "
                "<i>not a duplicate</i>. The deduplicated file follows your review.</p>")
    items = []
    for r in apart:
        items.append(f"<li>record {h(r)} kept apart <button class='undo' data-act='unapart' data-row='{int(r)}'>"
                     f"undo</button></li>")
    for r, at in splits:
        items.append(f"<li>the cluster of record {h(r)} split at Jaccard ≥ {h(f'{at:g}')} <button class='undo' "
                     f"data-act='unsplit' data-row='{int(r)}'>undo</button></li>")
    if marks:
        items.append(f"<li>{len(marks):,} pair{'s' if len(marks) != 1 else ''} marked not a duplicate (pairs tab)"
                     f" <button class='undo' data-act='unmark' data-row='0'>clear</button></li>")
    more = (f" Your review keeps <b>{effect:,} more row{'s' if effect != 1 else ''}</b> than the rule alone."
            if effect else "")
    return f"<div class='review'><p><b>Your review</b>.{more}</p><ul>{''.join(items)}</ul></div>"


def members_html(result, c, rank: int, t: float, page: int, page_size: int, jaccards: list, split: dict | None,
                 keep: str) -> str:
    """One cluster: its head (size, kind, the record kept, the split it offers) and a page of its
    members, each with its text beside the kept record's differences marked, and its decision."""
    text = result.fields.text
    rows = list(c.rows)
    start = page * page_size
    members = rows[start:start + page_size]
    kind = "identical" if c.identical else "variant"
    head = (f"<div class='cl-head'><h3>Cluster {h(c.cluster)} <span class='sub'>(rank {rank + 1:,})</span></h3>"
            f"<p>{c.size:,} {kind} records at Jaccard ≥ {h(f'{t:g}')}. The deduplicated file keeps "
            f"{record_label(result, c.kept_row)} (rule <b>{h(keep.replace('_', ' '))}</b>) and drops the other "
            f"{c.size - 1:,}.</p>")
    if split:
        parts = ", ".join(f"{s:,}" for s in split["sizes"][:6]) + (" …" if len(split["sizes"]) > 6 else "")
        weakest = f"{split['weakest']:.4f}"
        head += (f"<p><button class='act' data-act='split' data-row='{int(c.kept_row)}'>Split this cluster</button> "
                 f"at its weakest link (Jaccard {h(weakest)}): it falls into "
                 f"{len(split['sizes']):,} parts ({parts} records), which <b>keeps {split['gain']:,} more "
                 f"row{'s' if split['gain'] != 1 else ''}</b>.</p>")
    pages = max(1, -(-len(rows) // page_size))
    nav = (f"<p class='pager'>Records {start + 1:,}–{start + len(members):,} of {len(rows):,} "
           + (f"<button class='act' data-act='mpage' data-row='{page - 1}'>‹ previous</button> " if page > 0 else "")
           + (f"<button class='act' data-act='mpage' data-row='{page + 1}'>next ›</button>" if page + 1 < pages else "")
           + "</p>")
    kept_text = text[c.kept_row] or ""
    cards = []
    for r, j in zip(members, jaccards):
        is_kept = r == c.kept_row
        if is_kept:
            body = h(kept_text[:DETAIL_CHARS]) + ("<span class='cut'> … (cut)</span>" if len(kept_text) > DETAIL_CHARS
                                                  else "")
            status = "<span class='badge kept'>kept</span>"
            action = ""
        else:
            body = diff_html(kept_text, text[r] or "")[1]
            score = "–" if j is None else f"{j:.4f}"
            status = (f"<span class='badge dropped'>dropped</span> · Jaccard {h(score)} with the kept record")
            action = (f"<button class='act' data-act='apart' data-row='{int(r)}'>Keep this record too</button> "
                      "<span class='sub'>(not a duplicate: keeps at least 1 more row)</span>")
        cards.append(f"<article class='member{' is-kept' if is_kept else ''}'><header>{record_label(result, r)} · "
                     f"{status}</header><div class='rec'>{body}</div>{action}</article>")
    legend = ("<p class='legend'>Each dropped record is shown with the words it does not share with the kept "
              "record <mark class='only-b'>marked</mark>.</p>")
    return (f"<div class='cluster-detail'>{head}</div>{legend}{nav}"
            f"{scroll_list('cluster records', ''.join(cards))}"
            f"{nav if len(members) > 5 else ''}")


MEMBERS_PLACEHOLDER = "<p class='cut'>Select a cluster above to see its records.</p>"
