"""On a 390x844 phone every tab is one tap away in a strip that scrolls sideways (no "…" menu), and
numbers never wrap; on a phone and a desktop, axe-core (from the npm registry, installed by
scripts/test.sh; never fetched by the page) finds no violation of impact serious or critical on
any tab, with every part filled (an audit at 0.5, a cluster open, a leakage and contamination check,
the deduplicated file built), and text keeps a contrast of at least 4.5:1 (axe's color-contrast)."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest
from playwright.sync_api import expect

from browser_support import PHONE, TIMEOUT, axe_violations, new_page, open_tab, wait_audited

pytestmark = pytest.mark.browser
pytest_plugins = ["app_server", "browser_support"]

TABS = ("Overview", "Threshold curve", "Near-duplicate pairs", "Clusters", "Concentration", "Leakage", "Downloads")
LINK = {"dataset": "example:gsm8k", "config": "main", "split": "train", "text": "question", "answer": "answer",
        "threshold": "0.5", "b": "example:gsm8k", "b_split": "test", "bench": "gsm8k"}


def filled_page(browser, app_url, **options):
    """A page with every part filled: the audit at 0.5, its leakage and contamination checks (from
    the link), a cluster open, the deduplicated file built."""
    context, pg = new_page(browser, app_url, **options)
    pg.goto(f"{app_url}/?{urlencode(LINK)}")
    wait_audited(pg, "7,473", "example:gsm8k")
    open_tab(pg, "Leakage")                     # (a tab's parts are drawn once it is shown)
    expect(pg.locator("#leak-status")).to_contain_text("Checked leakage and contamination", timeout=TIMEOUT)
    open_tab(pg, "Clusters")
    pg.locator("#clusters-table [data-testid='cell-0-0']").click()
    expect(pg.locator("#cluster-view")).to_contain_text("Split this cluster")
    open_tab(pg, "Downloads")
    pg.locator("#dedup-run").click()
    expect(pg.locator("#dl-dedup")).to_contain_text("records", timeout=TIMEOUT)
    return context, pg


@pytest.mark.slow
def test_every_tab_is_one_tap_away_on_a_phone_and_numbers_never_wrap(browser, app_url):
    context, pg = filled_page(browser, app_url, **PHONE)
    try:
        assert pg.locator("#tabs button[aria-label='More tabs']").count() == 0 or \
            not pg.locator("#tabs button[aria-label='More tabs']").first.is_visible()
        strip = pg.locator("#tabs [role='tablist'], #tabs .tab-container").first
        assert strip.evaluate("e => getComputedStyle(e).overflowX") == "auto"
        assert strip.evaluate("e => e.scrollWidth > e.clientWidth")            # wider than the phone: it scrolls
        heights = set()
        for name in TABS:
            tab = pg.get_by_role("tab", name=name, exact=True).first
            tab.scroll_into_view_if_needed()
            tab.tap()                                                          # one tap
            expect(tab).to_have_attribute("aria-selected", "true")
            heights.add(round(tab.bounding_box()["height"]))
        assert len(heights) == 1                                               # one row: no label wrapped
        assert pg.evaluate("document.documentElement.scrollWidth") <= 390     # the page never wider than the phone
        # Numbers on one line: the verdict's tiles, the curve table, the leak summary's counts.
        open_tab(pg, "Overview")
        for sel in ("#headline dd", "#cards .stat .v"):
            for cell in pg.locator(sel).all():
                assert cell.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap"
                line = cell.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
                assert cell.bounding_box()["height"] < 1.6 * line, cell.inner_text()
        open_tab(pg, "Threshold curve")
        cells = pg.locator("#curve-table td")
        assert cells.count() >= 5 * 15
        for k in range(0, cells.count(), 7):
            cell = cells.nth(k)
            assert cell.evaluate("e => getComputedStyle(e).whiteSpace") == "nowrap", cell.inner_text()
        open_tab(pg, "Leakage")
        for button in pg.locator("#leak-summary button.count").all():
            line = button.evaluate("e => parseFloat(getComputedStyle(e).lineHeight)")
            assert button.bounding_box()["height"] < 1.6 * line + 6, button.inner_text()
    finally:
        context.close()


@pytest.mark.slow
@pytest.mark.parametrize("device", ["desktop", "phone"])
def test_no_serious_or_critical_accessibility_violation_on_any_tab(browser, app_url, device):
    context, pg = filled_page(browser, app_url, **(PHONE if device == "phone" else {}))
    try:
        found = {}
        for name in TABS:
            open_tab(pg, name)
            if name == "Threshold curve":
                expect(pg.locator("#curve-plot .js-plotly-plot")).to_be_visible()
            pg.wait_for_timeout(300)
            violations = axe_violations(pg)
            if violations:
                found[name] = violations
        assert found == {}, found
    finally:
        context.close()
