"""Each page event lists only the parts of the page it can change (issue 34: Gradio builds a new
component for every output an event lists, skipped or not, so a threshold change spent three times
its handler's time on the 63 parts it left alone). The events are the page's own, called as Gradio
calls them, on a real audit (GSM8K train): every part a handler sets is among its event's outputs
(``layout.pack`` refuses one that is not), the values are the handler's, and a threshold change no
longer lists the form, the uploads or the leakage tab.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import ground_truth  # noqa: E402
import real_data  # noqa: E402
from ui import handlers, layout  # noqa: E402

BASE = "http://space.example/"


@pytest.fixture(scope="module")
def page():
    demo = layout.build()
    ids = {b._id: getattr(b, "elem_id", None) for b in demo.blocks.values()}
    return demo, ids


@pytest.fixture(scope="module")
def audit():
    view = handlers.run("example:gsm8k", "main", "train", "question", "answer", "", [], 0.7, None, None, None,
                        "example:gsm8k", BASE)
    assert view["state"] is not None, view["status"]
    return view


def event(page, elem_id: str, trigger: str):
    """The page's event on ``trigger`` of the part ``elem_id``: (its function, its outputs' elem ids)."""
    demo, ids = page
    found = [fn for fn in demo.fns.values() if fn.fn is not None
             and any(ids.get(t[0]) == elem_id and t[1] == trigger for t in fn.targets)]
    assert len(found) == 1, f"{len(found)} events on {trigger} of #{elem_id}"
    fn = found[0]
    return fn.fn, [ids[b._id] for b in fn.outputs]


def shown(outputs, values) -> dict:
    """The outputs an event updates (not skipped), by elem id: what the browser is sent."""
    skipped = {"__type__": "update"}
    return {o: v for o, v in zip(outputs, values) if v != skipped}


FORM_AND_UPLOADS = {"dataset", "split", "upload", "config", "text", "answer", "group", "labels", "max-rows", "token",
                    "form", "example", "leak-dataset", "leak-upload", "bench-upload", "leak-status", "contam-summary",
                    "para-summary", "para-status", "tabs"}


@pytest.mark.parametrize("slider, other", [("curve-threshold", "threshold"), ("threshold", "curve-threshold")])
def test_a_threshold_change_lists_the_views_and_the_link_not_the_form(page, audit, slider, other):
    fn, outputs = event(page, slider, "input")
    assert not FORM_AND_UPLOADS & set(outputs), FORM_AND_UPLOADS & set(outputs)
    assert slider not in outputs                       # never the slider being dragged
    values = shown(outputs, fn(audit["state"], 0.5))
    rows = real_data.rows("gsm8k/train.jsonl")
    pairs = ground_truth.reference([r["question"] for r in rows]).pair_count(0.5)
    # Every view follows, as before: the other slider, the counts, the link, the downloads, the tables.
    assert values[other] == 0.5
    assert f"At Jaccard ≥ 0.5:** {pairs} near-duplicate pairs" in values["counts"]
    assert "threshold=0.5" in values["share"]
    for part in ("headline", "cards", "overview", "curve-plot", "curve-text", "curve-table", "dl-summary",
                 "dl-pairs", "dl-report", "dl-info", "dedup-info", "pairs-info", "pairs-table", "clusters-info",
                 "clusters-table", "review-panel", "cluster-view"):
        assert part in values, part
    # What the handler returns is what the page shows, part for part.
    view = handlers.rethreshold(audit["state"], 0.5)
    assert values["counts"] == view["counts"] and values["share"] == view["share"]


def test_paging_the_pairs_lists_only_the_pairs_table(page, audit):
    fn, outputs = event(page, "pair-next", "click")
    assert set(outputs) <= {"status", None, "pairs-info", "pairs-table", "pair-view"}   # (None: the state)
    values = shown(outputs, fn(audit["state"], 0.0, 1.0, False, ""))
    assert "pair 1 of" in values["pair-view"]


def test_a_mark_still_moves_the_clusters_counts_and_link(page, audit):
    fn, outputs = event(page, "pair-mark", "click")
    assert not FORM_AND_UPLOADS & set(outputs)
    st = handlers.pairs_event(audit["state"], "next", 0.0, 1.0, False, "")["state"]     # the first pair shown
    values = shown(outputs, fn(st, 0.0, 1.0, False, ""))
    assert "nd=" in values["share"] and "1 pair marked" in values["pairs-info"]
    assert "clusters-info" in values and "dl-review" in values and "headline" in values


def test_the_cluster_list_and_the_keep_rule_list_their_own_parts(page, audit):
    fn, outputs = event(page, "clusters-next", "click")
    assert set(outputs) <= {"status", None, "clusters-info", "clusters-table", "clusters-prev", "clusters-next",
                            "review-panel", "cluster-view"}
    values = shown(outputs, fn(audit["state"], "", 2, None, "all"))
    assert "clusters-info" in values and "clusters-table" in values
    fn, outputs = event(page, "keep-rule", "input")
    assert not FORM_AND_UPLOADS & set(outputs)
    values = shown(outputs, fn(audit["state"], "longest"))
    assert "keep=longest" in values["share"] and "longest" in values["clusters-info"]


def test_an_expired_audit_is_still_said_in_the_status_line(page, audit):
    gone = {**audit["state"], "key": ("expired", "key")}
    for elem_id, trigger, args in (("curve-threshold", "input", (0.6,)),
                                   ("pair-next", "click", (0.0, 1.0, False, "")),
                                   ("clusters-next", "click", ("", 2, None, "all")),
                                   ("keep-rule", "input", ("first",))):
        fn, outputs = event(page, elem_id, trigger)
        values = shown(outputs, fn(gone, *args))
        assert set(values) == {"status"}, (elem_id, set(values))
        assert "expired from the cache" in values["status"]["value"]


def test_a_part_an_event_does_not_list_is_refused_not_lost():
    assert layout.pack({}, ["status", "share"], {"status": "ok"})[0] == "ok"
    with pytest.raises(RuntimeError, match="'counts'"):
        layout.pack({}, ["status", "share"], {"status": "ok", "counts": "7"})
