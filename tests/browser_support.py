"""What the browser tests share: one headless Chromium per session (Debian's /usr/bin/chromium;
`playwright install` is never needed), a page factory, and locators/waits for the app's parts.
Test modules load it with ``pytest_plugins = ["app_server", "browser_support"]``."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-sync"]
TIMEOUT = 30_000
# A chart draws only once its tab is shown, and the machine the suite runs on may be busy: the
# waits of every expect() get more than Playwright's 5 s default.
expect.set_options(timeout=15_000)


@pytest.fixture(scope="session")
def browser():
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def new_page(browser, app_url: str, init_script: str | None = None, viewport: dict | None = None,
             **context_options):
    """(context, page) at the app's viewport (or ``viewport``, e.g. a phone's); ``page.outside_requests``
    collects every request that leaves the app (the page must make none). Close the context when done."""
    context = browser.new_context(viewport=viewport or {"width": 1360, "height": 1000}, accept_downloads=True,
                                  **context_options)
    if init_script:
        context.add_init_script(init_script)
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    pg.outside_requests = []
    pg.on("request", lambda r: pg.outside_requests.append(r.url)
          if not r.url.startswith((app_url, "data:", "blob:", "about:")) else None)
    return context, pg


# Markup a journey plants in the data, and a page that records any script it manages to run
# (``window.__xss_hits``): the data must stay text.
XSS = '<img src=x onerror="window.__xss=1"> '
TRAP = """
Object.defineProperty(window, '__xss_hits', {value: [], writable: false});
Object.defineProperty(window, '__xss', {get() { return undefined; }, set(v) { window.__xss_hits.push(v); }});
"""


@pytest.fixture
def page(browser, app_url):
    """A page at the app with the XSS trap installed (a module may define its own ``page``)."""
    context, pg = new_page(browser, app_url, init_script=TRAP)
    yield pg
    context.close()


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path) -> list:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


def download(pg, elem_id: str) -> str:
    """The path of the file a download button gives (the audit's files are all in the Downloads
    tab: it is opened for the click, and the tab that was open is opened again)."""
    button = pg.locator(f"#{elem_id}")
    back = None
    if not button.is_visible():
        back = pg.locator("#tabs [role='tab'][aria-selected='true']").first.inner_text().strip()
        open_tab(pg, "Downloads")
    with pg.expect_download() as info:
        button.click()
    path = info.value.path()
    if back:
        open_tab(pg, back)
    return path


def status(pg):
    return pg.locator("#status")


def dataset_box(pg):
    return pg.locator("#dataset input, #dataset textarea").first


def share_box(pg):
    return pg.locator("#share input, #share textarea").first


def run_with_token(pg, token: str, records: str, name: str) -> str:
    """Run audit with ``token`` in its box; once NAME's RECORDS are audited, the share link."""
    open_form(pg)
    pg.locator("#token input").fill(token)
    pg.locator("#run").click()
    wait_audited(pg, records, name)
    return share_box(pg).input_value()


def wait_audited(pg, records: str, name: str = ""):
    """Until the status line says "Audited NAME ...: RECORDS records" (so "3" never matches "7,473";
    "1 record" for one)."""
    pattern = re.compile(rf"Audited {re.escape(name)}.*: {re.escape(records)} records?\b")
    expect(status(pg)).to_contain_text(pattern, timeout=TIMEOUT)


def upload_and_run(pg, path: Path, records: int):
    """Upload ``path`` as dataset A and run the audit, until it says it audited ``records``."""
    pg.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(dataset_box(pg)).to_have_value(f"upload:{path.name}")
    expect(status(pg)).to_contain_text("Fields of")
    pg.locator("#run").click()
    wait_audited(pg, f"{records:,}", path.name)


def open_app(pg, app_url: str):
    """The app's front page, once its opening audit (GSM8K train) is shown."""
    pg.goto(app_url + "/")
    wait_audited(pg, "7,473")


def open_tab(pg, name: str):
    """Click the tab ``name`` (every tab is in the strip, which scrolls sideways on a phone)."""
    tab = pg.get_by_role("tab", name=name, exact=True).first
    tab.scroll_into_view_if_needed()
    tab.click()


def open_form(pg):
    """Open the "Fields and options" part of the form (it folds away after a run, and its fields are
    drawn only while it is open)."""
    header = pg.locator("#form > button, #form .label-wrap").first
    if pg.locator("#config input").first.is_visible():
        return
    header.click()
    pg.locator("#config input").first.wait_for(state="visible")
    pg.locator("#threshold input[type=number]").wait_for(state="visible")
    # The fields are mounted as the part opens, and bound to their values by effects that run after:
    # a value typed in between is overwritten (seen in CI: the threshold typed at once stayed 0.7).
    # Two animation frames: every effect of the mount has run.
    pg.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


# --------------------------------------------------------------------------- page quality

PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True}
# Cumulative layout shift as Chromium reports it (shifts without a recent input), from navigation on.
LAYOUT_SHIFT = """
window.__cls = 0;
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) { if (!e.hadRecentInput) window.__cls += e.value; }
}).observe({type: 'layout-shift', buffered: true});
"""
AXE_JS = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"


def axe_violations(pg, impacts=("serious", "critical")) -> list:
    """axe-core's violations of the page as shown (impact serious or critical): [(rule, impact, targets)].
    axe-core is installed from the npm registry by scripts/test.sh (tests/package.json), never fetched
    by the page."""
    if not AXE_JS.exists():
        pytest.fail("axe-core is not installed: run scripts/test.sh, or `npm ci --prefix tests`")
    if not pg.evaluate("typeof window.axe !== 'undefined'"):
        pg.add_script_tag(content=AXE_JS.read_text(encoding="utf-8"))
    found = pg.evaluate("""() => axe.run(document, {resultTypes: ['violations']}).then(r => r.violations.map(
        v => [v.id, v.impact, v.nodes.slice(0, 5).map(n => n.target.join(' '))]))""")
    return [v for v in found if v[1] in impacts]


def in_first_screen(pg, selector: str) -> bool:
    """Whether the element is wholly within the first screen (the page scrolled to its top)."""
    box = pg.locator(selector).first.bounding_box()
    height = pg.viewport_size["height"]
    return bool(box) and box["y"] >= 0 and box["y"] + box["height"] <= height
