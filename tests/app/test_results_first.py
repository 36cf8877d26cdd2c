"""Results first, on a desktop and on a 390x844 phone: opened from a link (or after a run) the form
folds away and the first screen shows the verdict in words and numbers (records, the share a dedup
drops, the clusters at the threshold, leaks, benchmark items copied); the page hardly moves while it
loads (cumulative layout shift under 0.1, measured by Chromium); the address bar and the share box
always name the audit on screen, never an earlier one (an error clears both)."""
from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import (LAYOUT_SHIFT, PHONE, TIMEOUT, TRAP, in_first_screen, new_page, share_box, status,
                             wait_audited)

pytestmark = pytest.mark.browser
pytest_plugins = ["app_server", "browser_support"]

VIEWPORTS = {"desktop": {}, "phone": PHONE}


@pytest.fixture(scope="module")
def gsm8k_truth():
    rows = real_data.rows("gsm8k/train.jsonl")
    ref = ground_truth.reference([r["question"] for r in rows])
    return len(rows), ref


@pytest.mark.slow
@pytest.mark.parametrize("device", list(VIEWPORTS))
def test_a_link_opens_on_the_verdict_without_moving(browser, app_url, gsm8k_truth, device):
    n, ref = gsm8k_truth
    clusters = ref.clusters(0.5)
    dropped = sum(len(c) - 1 for c in clusters)
    context, pg = new_page(browser, app_url, init_script=LAYOUT_SHIFT + TRAP, **VIEWPORTS[device])
    try:
        query = urlencode({"dataset": "example:gsm8k", "config": "main", "split": "train", "threshold": "0.5"})
        pg.goto(f"{app_url}/?{query}")
        wait_audited(pg, "7,473")
        headline = pg.locator("#headline")
        expect(headline).to_contain_text("Little duplication")
        say = " ".join(headline.inner_text().split())
        assert f"drops {dropped} of {n:,} records ({100 * dropped / n:.2f}%)" in say
        assert f"{len(clusters)} clusters" in say and "not checked" in say
        tiles = dict(zip(headline.locator("dt").all_inner_texts(), headline.locator("dd").all_inner_texts()))
        assert tiles == {"records": f"{n:,}", "dropped by dedup at ≥ 0.5": f"{dropped} ({100 * dropped / n:.2f}%)",
                         "clusters at ≥ 0.5": str(len(clusters)), "B records leaking": "not checked",
                         "benchmark items copied": "not checked"}
        # The form folded away; the verdict is on the first screen.
        expect(pg.locator("#config input")).to_have_count(0)
        assert in_first_screen(pg, "#headline .verdict") and in_first_screen(pg, "#headline .say")
        pg.wait_for_timeout(1500)                  # what arrives after the status line counts too
        shift = pg.evaluate("window.__cls")
        assert shift < 0.1, f"layout shift {shift:.3f} on {device}"
        assert pg.evaluate("document.documentElement.scrollWidth") <= pg.viewport_size["width"]
    finally:
        context.close()


def test_the_address_bar_and_the_share_box_name_the_audit_on_screen(page, app_url):
    page.goto(f"{app_url}/?" + urlencode({"dataset": "example:humaneval", "split": "test"}))
    wait_audited(page, "164", "example:humaneval")
    link = share_box(page).input_value()
    assert "dataset=example%3Ahumaneval" in link
    page.wait_for_function("(q) => location.search === q", arg=link[link.index("?"):])
    # Another audit: both follow it.
    box = page.locator("#dataset input, #dataset textarea").first
    box.fill("example:mbpp")
    page.locator("#run").click()
    wait_audited(page, "374", "example:mbpp")              # (its train split, the default)
    link = share_box(page).input_value()
    assert "dataset=example%3Ambpp" in link and "humaneval" not in link
    page.wait_for_function("(q) => location.search === q", arg=link[link.index("?"):])
    # An audit that fails shows nothing of the previous one: no verdict, no link, no query.
    box.fill("no/such-dataset")
    page.locator("#run").click()
    expect(status(page)).to_have_class(re.compile(r"\berror\b"), timeout=TIMEOUT)
    expect(share_box(page)).to_have_value("")
    expect(page.locator("#headline")).to_have_text("")
    page.wait_for_function("location.search === ''")
