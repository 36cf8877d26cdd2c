"""Hostile input in a real headless Chromium: every displayed field stays inert text.

XSS and Markdown payloads sit in the text, answer, group and label VALUES, in the column (field)
NAMES chosen as roles, in the dataset id typed in the box and in the uploaded file's name. They
must render as literal text: no script runs (a trap on ``window.__xss``), no dialog opens, no
``<img src=x>`` is fetched, no ``javascript:`` link exists. The HF token never leaves its box, and
the dataset box refuses server paths with a clear error.

"""
from __future__ import annotations

import hashlib
import json
import re
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import pytest
from playwright.sync_api import expect

from browser_support import (TIMEOUT, dataset_box, download, new_page, open_app, open_form, open_tab, run_with_token,  # noqa: E402
                             share_box, status, wait_audited)

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser

# A setter trap: any payload that runs `window.__xss = v` (or `parent.__xss = v` from a frame)
# records v; reading window.__xss stays undefined.
TRAP = """
(() => {
  const hits = [];
  Object.defineProperty(window, '__xss_hits', {value: hits, writable: false, configurable: false});
  Object.defineProperty(window, '__xss', {configurable: false,
      get() { return undefined; }, set(v) { hits.push(String(v)); }});
})();
"""

# ---- column (field) names that are payloads: chosen as the roles
TEXT_COL = '<img src=x onerror="window.__xss=1">'
ANSWER_COL = "[click](javascript:alert(1))"
GROUP_COL = '<details open ontoggle="window.__xss=2">grp'
LABEL_COL = '<iframe srcdoc="<script>parent.__xss=3</script>"></iframe>'
LABEL2_COL = "${window.__xss=4}{{window.__xss=5}}"   # (Load fields cuts names at 60 characters)
MIXED_COL = '<svg onload="window.__xss=6"><b>mixed</b>'   # int in some rows: a schema issue lists it

# ---- values that are payloads
BASE = "the quick brown fox jumps over the lazy dog beside the quiet river while children play in the park"
BASE2 = "a small red boat drifts slowly under the old stone bridge as the evening bells ring across town"
T_IMG = f'<img src=x onerror="window.__xss=11"> ![pic](x) {BASE}'
T_IMG_NEAR = f'<img src=x onerror="window.__xss=11"> ![pic](x) {BASE} today'
T_LINK = f"[click](javascript:alert(2)) <script>window.__xss=12</script> {BASE2}"
T_LINK_NEAR = f"[click](javascript:alert(2)) <script>window.__xss=12</script> {BASE2} again"
A_LINK = "[click](javascript:alert(3))"
A_HTML = '<a href="javascript:window.__xss=13">answer link</a>'
A_SVG = "<svg/onload=window.__xss=14>"
G_IMG = '<img src=x onerror="window.__xss=15">'
G_LINK = "[click](javascript:alert(4))"
G_DETAILS = "<details open ontoggle=window.__xss=16>"
L_IMG = "<img src=x onerror=window.__xss=17>"
L_MD = "**bold** [l](javascript:alert(5)) `code`"
L_TPL = "{{window.__xss=18}} ${window.__xss=19}"

# The file name is a payload too. Gradio strips < > : " / \ | ? * ` $ ! { } from the stored name
# (the File widget still shows the original one); what survives (Markdown) must stay text.
UPLOAD_NAME = "<svg onload=window.__xss=4>_em_[a](x).jsonl"
UPLOAD_SERVER_NAME = "svg onload=window.__xss=4_em_[a](x).jsonl"

TOKEN = "hf_hostileToken_must_never_leak_7f3a"


def _filler(i: int) -> str:
    return " ".join(hashlib.md5(f"{i}-{k}".encode()).hexdigest()[:7] for k in range(14))


def hostile_rows() -> list[dict]:
    def row(text, answer, group, label, label2, mixed):
        return {TEXT_COL: text, ANSWER_COL: answer, GROUP_COL: group, LABEL_COL: label, LABEL2_COL: label2,
                MIXED_COL: mixed}

    rows = [
        row(T_IMG, A_LINK, G_IMG, L_IMG, L_TPL, "m"),
        row(T_IMG_NEAR, A_HTML, G_IMG, L_MD, L_TPL, "m"),
        row(T_IMG, A_SVG, G_IMG, L_MD, L_TPL, 7),           # exact duplicate of row 0, other label: a conflict
        row(T_LINK, A_LINK, G_LINK, L_IMG, L_TPL, "m"),
        row(T_LINK_NEAR, A_HTML, G_DETAILS, L_IMG, L_TPL, "m"),
    ]
    rows += [row(_filler(i), A_SVG, G_IMG if i % 2 else G_DETAILS, L_TPL, L_MD, "m") for i in range(7)]
    return rows


PAYLOAD_COLUMNS = [TEXT_COL, ANSWER_COL, GROUP_COL, LABEL_COL, LABEL2_COL]

# Every element attribute a payload could smuggle in, and every dangerous link, anywhere in the DOM.
DOM_SCAN = r"""
() => {
  const bad = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const v = (a.value || '').trim().toLowerCase();
      if (/^on/i.test(a.name)) bad.push(`${el.tagName} ${a.name}=${a.value}`);
      if (['href', 'src', 'xlink:href', 'action', 'formaction', 'srcdoc', 'data'].includes(a.name.toLowerCase())
          && (v.startsWith('javascript:') || a.name.toLowerCase() === 'srcdoc'))
        bad.push(`${el.tagName} ${a.name}=${a.value}`);
    }
    if (el.tagName === 'A' && el.href && el.href.trim().toLowerCase().startsWith('javascript:'))
      bad.push(`A href=${el.href}`);
    if (el.tagName === 'IMG' && el.getAttribute('src') === 'x') bad.push('IMG src=x');
    if (['IFRAME', 'DETAILS', 'MARQUEE'].includes(el.tagName)) bad.push(`${el.tagName} element`);
    if (el.tagName === 'SCRIPT' && el.textContent.includes('__xss')) bad.push('SCRIPT with a payload');
  }
  return bad;
}
"""


@pytest.fixture
def page(browser, app_url):
    context, pg = new_page(browser, app_url, init_script=TRAP)
    pg.dialogs, pg.payload_requests = [], []

    def on_dialog(dialog):
        pg.dialogs.append(dialog.message)
        dialog.dismiss()

    def on_request(request):
        url = request.url
        if urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] == "x" or url.lower().startswith("javascript:"):
            pg.payload_requests.append(url)

    pg.on("dialog", on_dialog)
    pg.on("request", on_request)
    yield pg
    context.close()


def pick(pg, elem_id: str, option: str):
    """Choose an option of a Gradio dropdown by its exact text."""
    pg.locator(f"#{elem_id} input").click()
    opt = pg.locator(f"#{elem_id}").get_by_role("option", name=option, exact=True)
    expect(opt).to_be_visible()
    opt.click()


def assert_inert(pg):
    time.sleep(0.3)   # let any late onerror / ontoggle fire
    assert pg.evaluate("window.__xss_hits.slice()") == [], "a payload ran"
    assert pg.evaluate("window.__xss") is None
    assert pg.dialogs == [], f"a payload opened a dialog: {pg.dialogs}"
    assert pg.payload_requests == [], f"a payload image / link was fetched: {pg.payload_requests}"
    assert pg.outside_requests == []
    assert pg.evaluate(DOM_SCAN) == []


def download_text(pg, elem_id: str) -> str:
    """The text of a file of the Downloads tab (every download is there)."""
    return Path(download(pg, elem_id)).read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the upload

@pytest.mark.slow
def test_hostile_upload_every_field_renders_as_text(page, app_url, tmp_path):
    rows = hostile_rows()
    path = tmp_path / UPLOAD_NAME     # Linux file systems accept < > in names
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")

    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    # The upload button names the file as the server keeps it (Gradio's sanitised name), as text.
    expect(page.locator("#upload")).to_contain_text(f"Replace {UPLOAD_SERVER_NAME}")
    expect(dataset_box(page)).to_have_value(f"upload:{UPLOAD_SERVER_NAME}")
    expect(status(page)).to_contain_text("Fields of")
    # Load fields lists the hostile column names as text.
    open_form(page)                        # (the fields and Load fields fold away after a run)
    page.locator("#load-fields").click()
    expect(status(page)).to_contain_text(f"Fields of {UPLOAD_SERVER_NAME}")
    for col in PAYLOAD_COLUMNS:
        expect(status(page)).to_contain_text(col)
    assert page.locator("#status a, #status img").count() == 0

    # The payload columns as roles, picked in the dropdowns; the token typed too (for the leak checks).
    pick(page, "text", TEXT_COL)
    expect(page.locator("#text input")).to_have_value(TEXT_COL)
    pick(page, "answer", ANSWER_COL)
    expect(page.locator("#answer input")).to_have_value(ANSWER_COL)
    pick(page, "group", GROUP_COL)
    expect(page.locator("#group input")).to_have_value(GROUP_COL)
    pick(page, "labels", LABEL_COL)
    pick(page, "labels", LABEL2_COL)
    page.keyboard.press("Escape")
    expect(page.locator("#labels")).to_contain_text(LABEL_COL)
    expect(page.locator("#labels")).to_contain_text(LABEL2_COL)
    page.locator("#token input").fill(TOKEN)
    page.locator("#run").click()
    wait_audited(page, str(len(rows)), UPLOAD_SERVER_NAME)
    expect(status(page)).to_contain_text(f"Audited {UPLOAD_SERVER_NAME}")
    assert page.locator("#status a").count() == 0

    # Overview: roles table (column names), exact-duplicate example (a text), schema issue (a column).
    overview = page.locator("#overview")
    expect(overview).to_contain_text(UPLOAD_SERVER_NAME)
    for col in (TEXT_COL, ANSWER_COL, GROUP_COL):
        expect(overview).to_contain_text(col)
    expect(overview).to_contain_text(f"{LABEL_COL}, {LABEL2_COL}")
    expect(overview).to_contain_text(MIXED_COL)                     # the schema issue's field
    expect(overview).to_contain_text(T_IMG[:60])                    # the exact-duplicate example
    expect(overview).to_contain_text("Label conflicts")
    assert page.locator("#overview a, #overview img, #overview script").count() == 0
    assert_inert(page)

    # Pairs table, then the side-by-side view and the cluster list of the first pair.
    open_tab(page, "Near-duplicate pairs")
    table = page.locator("#pairs-table")
    expect(table).to_contain_text('<img src=x onerror="window.__xss=11"> ![pic](x)')
    expect(table).to_contain_text("[click](javascript:alert(2)) <script>window.__xss=12</script>")
    page.locator("#pairs-table [data-testid='cell-0-3']").click()
    view = page.locator("#pair-view .pair-detail")
    expect(view).to_be_visible()
    expect(view).to_contain_text(f"text ({TEXT_COL})")
    expect(view).to_contain_text(f"answer ({ANSWER_COL})")
    expect(view).to_contain_text(f"group ({GROUP_COL})")
    expect(view).to_contain_text('<img src=x onerror="window.__xss=11">')
    expect(view).to_contain_text(G_IMG)
    texts = page.locator("#pair-view").inner_text()
    assert any(a in texts for a in (A_LINK, A_HTML, A_SVG)), texts
    # Another pair (the [click](javascript:...) texts) in the side-by-side view.
    page.locator("#pairs-table [data-testid^='cell-'][data-testid$='-3']").filter(
        has_text="[click](javascript:alert(2))").first.click()
    expect(page.locator("#pair-view")).to_contain_text("<script>window.__xss=12</script>")
    expect(page.locator("#pair-view")).to_contain_text("[click](javascript:alert(2))")
    assert page.locator("#pair-view a, #pair-view img, #pair-view script, #pair-view svg").count() == 0
    assert_inert(page)

    # The cluster browser: the clusters, then one cluster's members with every role, as text.
    open_tab(page, "Clusters")
    expect(page.locator("#clusters-table")).to_contain_text('<img src=x onerror="window.__xss=11">')
    page.locator("#clusters-table [data-testid^='cell-'][data-testid$='-5']").filter(
        has_text='<img src=x onerror="window.__xss=11">').first.click()
    cluster = page.locator("#cluster-view")
    expect(cluster).to_contain_text("records at Jaccard")
    expect(cluster).to_contain_text('<img src=x onerror="window.__xss=11">')
    assert page.locator("#cluster-view img, #cluster-view a, #cluster-view script, #clusters-table img").count() == 0
    assert_inert(page)

    # Concentration: text, chart and table show group values and the group column name as text.
    open_tab(page, "Concentration")
    conc_text = page.locator("#conc-text")
    expect(conc_text).to_contain_text(GROUP_COL)
    expect(conc_text).to_contain_text(f"The largest, {G_IMG}")
    expect(page.locator("#conc-plot .js-plotly-plot")).to_be_visible()
    plot = page.locator("#conc-plot")
    for value in (G_IMG, G_LINK, G_DETAILS):
        expect(plot).to_contain_text(value)
    expect(plot).to_contain_text(f"group ({GROUP_COL})")
    conc_table = page.locator("#conc-table")
    expect(conc_table).to_be_visible()
    for value in (G_IMG, G_LINK, G_DETAILS):
        expect(conc_table).to_contain_text(value)
    # (the chart's own toolbar holds a Plotly logo link: look at the drawing only)
    assert page.locator("#conc-text a, #conc-text img, #conc-plot svg a, #conc-plot img, #conc-table img").count() == 0
    assert_inert(page)

    # Downloads: the files carry the payloads as data, and never the token.
    open_tab(page, "Downloads")
    summary = json.loads(download_text(page, "dl-summary"))
    assert summary["roles"]["text"] == TEXT_COL and summary["roles"]["labels"] == [LABEL_COL, LABEL2_COL]
    assert summary["input"]["records"] == len(rows)
    report = download_text(page, "dl-report")
    pairs = download_text(page, "dl-pairs")
    for name, body in (("summary.json", json.dumps(summary)), ("REPORT.md", report), ("pairs.csv", pairs)):
        assert TOKEN not in body, f"the token leaked into {name}"
    share = share_box(page)
    assert TOKEN not in share.input_value()
    assert TOKEN not in page.content()
    assert str(tmp_path) not in page.locator("body").inner_text()
    assert_inert(page)


# --------------------------------------------------------------------------- the dataset box

def expect_refused(pg, app_url: str, value: str, message: str, quoted: bool = False):
    """``value`` typed in the dataset box is refused with ``message`` (and, if ``quoted``,
    shows ``value`` itself), both by Run audit ("Could not audit ...") and by Load fields
    ("Could not read the dataset ...")."""
    open_app(pg, app_url)
    dataset_box(pg).fill(value)
    for button, opening in (("#run", "Could not audit"), ("#load-fields", "Could not read the dataset")):
        if button == "#load-fields":
            open_form(pg)                  # (Load fields sits with the fields, folded after a run)
        pg.locator(button).click()
        expect(status(pg)).to_contain_text(opening)
        expect(status(pg)).to_contain_text(message)
        if quoted:
            expect(status(pg)).to_contain_text(value)
        expect(status(pg)).to_have_class(re.compile(r"\berror\b"))


@pytest.mark.parametrize("payload", ['<img src=x onerror="window.__xss=21">', "[click](javascript:alert(6))",
                                     "<details open ontoggle=window.__xss=22>![pic](x)"])
@pytest.mark.sweep
def test_hostile_dataset_id_is_shown_as_text(page, app_url, payload):
    # Typed in the box, then Run audit and Load fields: a clear error that quotes it as text.
    expect_refused(page, app_url, payload, "not a Hugging Face dataset id", quoted=True)
    assert page.locator("#status a, #status img, #status details").count() == 0
    assert_inert(page)

    # The same id arriving by a share link fills the box and fails the same way.
    page.goto(f"{app_url}/?{urlencode({'dataset': payload, 'text': TEXT_COL, 'group': G_LINK})}")
    expect(status(page)).to_contain_text("not a Hugging Face dataset id")
    expect(status(page)).to_contain_text(payload)
    expect(dataset_box(page)).to_have_value(payload)
    open_form(page)
    expect(page.locator("#text input")).to_have_value(TEXT_COL)
    assert page.locator("#status a, #status img").count() == 0
    assert_inert(page)


@pytest.mark.parametrize("path", ["app.py", "/etc/passwd", "../auditor", "auditor/examples", "./app.py",
                                  "example:../../app.py"])
@pytest.mark.sweep
def test_dataset_box_refuses_server_paths(page, app_url, path):
    # "auditor/examples" is a well-formed hub id: the hub (not the server's folders) answers it.
    expected = "no bundled example" if path.startswith("example:") else \
        "not found on the Hub" if path == "auditor/examples" else "not a Hugging Face dataset id"
    expect_refused(page, app_url, path, expected)
    body = page.locator("body").inner_text()
    for leaked in ("root:x:0:0", "import gradio", "def build", "__init__.py", "Traceback"):
        assert leaked not in body, f"{leaked!r} shown for {path!r}"
    # The previous audit (gsm8k) is still what the tabs show: nothing of the path was audited.
    assert "Audited" not in status(page).inner_text()
    assert_inert(page)


# --------------------------------------------------------------------------- the token

@pytest.mark.slow
def test_token_never_in_share_link_page_or_downloads(page, app_url):
    from app_server import GATED_TOKEN

    open_app(page, app_url)
    box = dataset_box(page)
    box.fill("")
    box.press_sequentially("acme/gated")          # typed: the previous dataset's config is cleared
    open_form(page)
    expect(page.locator("#config input")).to_have_value("")
    page.locator("#split input").fill("train")
    page.locator("#split input").press("Enter")
    link = run_with_token(page, GATED_TOKEN, "12", "acme/gated")
    assert "acme%2Fgated" in link
    assert GATED_TOKEN not in link
    # The token box still holds it (a live property); no markup of the page carries it.
    assert page.locator("#token input").input_value() == GATED_TOKEN
    assert GATED_TOKEN not in page.content()
    open_tab(page, "Downloads")
    for elem_id in ("dl-summary", "dl-report", "dl-pairs"):
        assert GATED_TOKEN not in download_text(page, elem_id), elem_id
    # Leakage with the token (B = the same gated set, its test split) and its downloads.
    open_tab(page, "Leakage")
    page.locator("#leak-split input").fill("test")
    page.locator("#leak-split input").press("Enter")
    page.locator("#leak-run").click()
    expect(page.locator("#leak-status")).to_contain_text("Checked leakage", timeout=TIMEOUT)
    for elem_id in ("dl-evidence", "dl-clean"):
        assert GATED_TOKEN not in download_text(page, elem_id), elem_id
    assert GATED_TOKEN not in page.content()
    assert GATED_TOKEN not in page.locator("body").inner_text()
    assert_inert(page)


def test_pasted_dataset_id_does_not_keep_the_previous_config(browser, app_url):
    """Pasting a new id (Ctrl+V) must not audit it with the config of the dataset shown before.

    The page opens on example:gsm8k (config 'main'); acme/gated only has the config 'default'.
    """
    from app_server import GATED_TOKEN

    context, page = new_page(browser, app_url, permissions=["clipboard-read", "clipboard-write"])
    try:
        open_app(page, app_url)
        page.evaluate("navigator.clipboard.writeText('acme/gated')")
        box = dataset_box(page)
        box.click()
        box.press("Control+a")
        page.keyboard.press("Control+v")
        expect(box).to_have_value("acme/gated")
        open_form(page)
        page.locator("#token input").fill(GATED_TOKEN)
        page.locator("#run").click()
        expect(status(page)).to_contain_text(re.compile(r"Audited acme/gated|Could not"), timeout=TIMEOUT)
        got = status(page).inner_text()
        assert "has no config 'main'" not in got, f"the pasted id was audited with the old config: {got}"
        wait_audited(page, "12", "acme/gated")
    finally:
        context.close()
