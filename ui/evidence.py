"""Evidence lists a person can work through: the leaking B records and the contaminated benchmark
items, kept server-side (``state.EVIDENCE``, by an id in the page's state), filtered by kind (the
summary's rows are the filters), searched, sorted and paged, each page with its counts. Nothing is
capped silently: every list states its total, and the CSV in Downloads holds every row."""
from __future__ import annotations

import secrets

from . import state
from .views import h, md

PAGE = 10
# The leak summary's rows, as filters over each leaking B record's kinds (``b_kinds``): the same
# definitions as summary.json's counts, so a row's count is the length of its list.
LEAK_KINDS = {
    "identical_text": ("repeat an A text exactly", lambda k: "identical_text" in k),
    "identical_answer": ("repeat an A answer exactly", lambda k: "identical_answer" in k),
    "identical_both": ("repeat text AND answer of one A record (answerable from memory)",
                       lambda k: "identical_both" in k),
    "reworded_both": ("are near or inside an A text whose answer is theirs (answerable from memory, reworded)",
                      lambda k: "reworded_both" in k),
    "near_duplicate": ("are near duplicates of an A text", lambda k: "near_duplicate" in k),
    "contained": ("are inside an A text (not counted above)", lambda k: "contained" in k),
    "any_leak": ("leak in any of these ways", lambda k: True),
    "answer_only": ("of which only share an answer (their text not identical, near or inside an A text)",
                    lambda k: set(k) == {"identical_answer"}),
    "text_leak": ("repeat an A text, exactly or nearly (what Clean B split drops; a shared answer alone is often "
                  "chance)", lambda k: "identical_text" in k or "near_duplicate" in k or "contained" in k),
}
CONTAM_KINDS = {"all": "all contaminated items", "copied": "look copied", "phrase": "only share a phrase"}
CONTAM_SORTS = ("coverage", "row")


def keep_rows(rows: list, list_id: str | None = None) -> str:
    """Keep an evidence list (under ``list_id``: one a job's child process made); returns its id
    (for the page's state)."""
    list_id = list_id or secrets.token_hex(8)
    size = sum(len(str(r.get("b_text") or r.get("benchmark_text") or "")) + len(str(r.get("a_text") or
               r.get("corpus_text") or "")) + 300 for r in rows)
    state.EVIDENCE.put(list_id, rows, size)
    return list_id


def kinds_of(row: dict) -> tuple:
    return tuple(x for x in str(row.get("b_kinds") or row.get("kind") or "").split("+") if x)


def leak_page(view: dict) -> tuple[list, int, int, int]:
    """(rows on the page, rows matching, page, pages) of a leak evidence view
    ({id, kind, search, page}); None rows when the list has expired from the cache."""
    rows = state.EVIDENCE.get(view["id"])
    if rows is None:
        return None, 0, 0, 1
    test = LEAK_KINDS.get(view.get("kind") or "any_leak", LEAK_KINDS["any_leak"])[1]
    words = (view.get("search") or "").strip().lower()
    match = [r for r in rows if test(kinds_of(r))
             and (not words or any(words in str(r.get(k) or "").lower() for k in ("b_text", "a_text", "b_answer",
                                                                                   "a_answer")))]
    pages = max(1, -(-len(match) // PAGE))
    page = min(max(int(view.get("page") or 0), 0), pages - 1)
    return match[page * PAGE:(page + 1) * PAGE], len(match), page, pages


def contam_page(view: dict) -> tuple[list, int, int, int]:
    """As ``leak_page``, for contamination evidence ({id, kind, sort, search, page})."""
    rows = state.EVIDENCE.get(view["id"])
    if rows is None:
        return None, 0, 0, 1
    kind = view.get("kind") or "all"
    words = (view.get("search") or "").strip().lower()
    match = [r for r in rows if (kind == "all" or r.get("verdict") == kind)
             and (not words or words in str(r.get("benchmark_text") or "").lower()
                  or words in str(r.get("corpus_text") or "").lower())]
    if view.get("sort", "coverage") == "coverage":
        match.sort(key=lambda r: (-float(r.get("coverage") or 0), r["benchmark_row"], r["corpus_row"]))
    pages = max(1, -(-len(match) // PAGE))
    page = min(max(int(view.get("page") or 0), 0), pages - 1)
    return match[page * PAGE:(page + 1) * PAGE], len(match), page, pages


def para_page(rows: list, view: dict) -> tuple[list, int, int, int]:
    """As ``leak_page``, for the flagged paraphrase pairs at the view's threshold ({search, page}),
    best first as the library ranks them."""
    words = (view.get("search") or "").strip().lower()
    match = [r for r in rows if not words or words in str(r.get("benchmark_text") or "").lower()
             or words in str(r.get("corpus_text") or "").lower()]
    pages = max(1, -(-len(match) // PAGE))
    page = min(max(int(view.get("page") or 0), 0), pages - 1)
    return match[page * PAGE:(page + 1) * PAGE], len(match), page, pages


def pager_html(what: str, matching: int, total: int, page: int, pages: int, filter_label: str | None) -> str:
    """"Showing 11–20 of 57 …" with previous / next buttons (and "show all" when filtered)."""
    if not total:
        return ""
    if not matching:
        return (f"<p class='pager'>No {h(what)} match{' ' + h(filter_label) if filter_label else ''}. "
                "<button class='act' data-act='kind' data-kind=''>show all</button></p>")
    first, last = page * PAGE + 1, min((page + 1) * PAGE, matching)
    showing = f"Showing {first:,}–{last:,} of {matching:,} {h(what)}"
    if filter_label:
        showing += (f" ({h(filter_label)}; {total:,} in all) <button class='act' data-act='kind' data-kind=''>"
                    "show all</button>")
    buttons = ((f" <button class='act' data-act='page' data-row='{page - 1}'>‹ previous</button>" if page else "")
               + (f" <button class='act' data-act='page' data-row='{page + 1}'>next ›</button>"
                  if page + 1 < pages else ""))
    return f"<p class='pager'>{showing}.{buttons}</p>"


def leak_summary_html(s: dict, threshold: float, a_name: str, b_name: str, chosen: str, note: str = "") -> str:
    """The leak summary as a table whose rows are filters: each count (summary.json's) is a button
    that lists those records below."""
    def side(name, key):
        v = s.get(key) or {}
        where = " / ".join(str(v.get(k)) for k in ("config", "split") if v.get(k))
        records = f"{v['records']:,} records" if isinstance(v.get("records"), int) else ""
        inside = ", ".join(x for x in (where, records) if x)
        return f"<b>{h(name)}</b>" + (f" ({h(inside)})" if inside else "")

    # Answers are compared only when both sides have an answer field: without one, a 0 would read
    # as "checked, nothing found".
    missing = [x.upper() for x in ("a", "b") if not ((s.get(x) or {}).get("roles") or {}).get("answer")]
    rows = []
    for key, (label, _) in LEAK_KINDS.items():
        block = s.get(key)
        if not isinstance(block, dict):
            continue
        label_text = label + (f" (Jaccard ≥ {threshold:g})" if key == "near_duplicate" else
                              f" (≥ {100 * threshold:g}% of its shingles)" if key == "contained" else "")
        if key in ("identical_answer", "identical_both", "reworded_both") and missing:
            rows.append(f"<tr><th scope='row'>{h(label_text)}</th> <td>– (not checked: no answer field in "
                        f"{' or '.join(missing)})</td></tr>\n")
            continue
        n, fraction = block.get("records", block.get("count")) or 0, block.get("fraction")
        shown = f"{n:,}" + (f" ({100 * fraction:.2f}%)" if isinstance(fraction, (int, float)) else "")
        pressed = "true" if key == chosen else "false"
        cell = (f"<button class='count' data-act='kind' data-kind='{key}' aria-pressed='{pressed}' "
                f"title='list these records below'>{h(shown)}</button>" if n else h(shown))
        strong = key == "text_leak"
        rows.append(f"<tr{' class=chosen' if key == chosen else ''}><th scope='row'>"
                    f"{'<b>' if strong else ''}{h(label_text)}{'</b>' if strong else ''}</th> <td>{cell}</td></tr>\n")
    groups = s.get("shared_groups")
    if isinstance(groups, dict) and groups.get("count"):
        values = ", ".join(str(v)[:40] for v in (groups.get("values") or [])[:10])
        held = groups.get("records")
        share = (f"{held:,} ({100 * groups['fraction']:.2f}%) in a group A has too; "
                 if isinstance(held, int) and isinstance(groups.get("fraction"), (int, float)) else "")
        rows.append(f"<tr><th scope='row'>group values present on both sides</th> <td>{h(share)}{groups['count']:,} "
                    f"shared values ({h(values)})</td></tr>\n")
    head = (f"<h4>Leakage: does B repeat A?</h4><p>A = {side(a_name, 'a')}<br>B = {side(b_name, 'b')}</p>{note}"
            "<table class='dt num summary'><thead><tr><th scope='col'>B records that …</th>"
            "<th scope='col'>count (press one to list those records)</th></tr></thead><tbody>" + "".join(rows)
            + "</tbody></table>")
    notes = []
    if (s.get("any_leak") or {}).get("records"):
        notes.append("<p><i>Clean B split</i> (Downloads) leaves out the B records whose text is an A text or a "
                     "near duplicate of one (as <code>auditor clean --near</code>); records that only share an "
                     "answer stay, since short answers repeat by chance.</p>")
    return head + "".join(notes)


def leak_rows_note() -> str:
    return "Each leaking B record beside the A record it repeats; <i>text Jaccard</i> compares the two texts."


def contam_filter_label(kind: str) -> str | None:
    return None if kind in (None, "", "all") else CONTAM_KINDS.get(kind)


def md_list(items) -> str:
    return ", ".join(md(x, 60) for x in items)
