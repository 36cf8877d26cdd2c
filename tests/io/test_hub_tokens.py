"""Which token reaches the Hub: the library, the CLI and the app, against a local fake Hub that
records the Authorization header of every request (tests/hub_server.py, ``hub.authorizations``).

The contract (auditor/io/hub.py, docs/python-api.md and docs/app.md, "Tokens"):
- library ``token=False`` (or a blank string): no Authorization header at all, whatever HF_TOKEN or
  a saved ``hf auth login`` token say;
- library ``token="hf_..."``: that token, on every request;
- library / CLI default (``token=None``): this machine's token, HF_TOKEN, else the saved login,
  none when HF_HUB_DISABLE_IMPLICIT_TOKEN is set;
- the app: only a token typed in the page, for that request; never the server's HF_TOKEN or login.

Library and CLI calls run in fresh subprocesses (HF_ENDPOINT is read at import); the fake Hub runs
here. Data: the tiny JSONL repos of tests/app_server.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from app_server import GATED_TOKEN, TINY_TEST, TINY_TRAIN, AppServer, _jsonl, start_fake_hub

pytest_plugins = ["browser_support"]

REPO = Path(__file__).resolve().parents[2]
SERVER_TOKEN = "hf_server_own_token_never_lend"     # the HF_TOKEN of the machine / the Space
SAVED_TOKEN = "hf_saved_login_token_never_lend"     # a token saved by `hf auth login` there
USER_TOKEN = "hf_token_passed_by_the_caller"        # what a caller passes / a visitor types
VISITOR_TOKEN = "hf_visitor_typed_token"            # opens acme/visitor (gated) on the fake Hub


def bearer(token):
    return {f"Bearer {token}"}


NONE = {None}


# --------------------------------------------------------------------------- running a client

def hub_env(hub, home: Path, env: dict, saved_login: str | None) -> dict:
    """A clean environment for a client process: no HF_* of ours, this fake Hub, its own caches."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE"))}
    full.update({"HF_ENDPOINT": hub.endpoint, "HF_HOME": str(home / "hf"), "HF_DATASETS_CACHE": str(home / "ds"),
                 "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "AUDITOR_HUB_TIMEOUT": "10",
                 "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)})
    full.update(env)
    (home / "hf").mkdir(parents=True, exist_ok=True)
    if saved_login:
        (home / "hf" / "token").write_text(saved_login)    # where `hf auth login` keeps it
    return full


def split_by_case(records) -> dict:
    """hub.authorizations cut at the marker requests GET /__case__/NAME -> {NAME: [auth, ...]}."""
    cases: dict[str, list] = {}
    current = None
    for method, path, auth in records:
        if path.startswith("/__case__/"):
            current = path.split("/")[-1]
            cases[current] = []
        elif current is not None:
            cases[current].append(auth)
    return cases


CHILD = textwrap.dedent("""
    import json, sys, urllib.request, urllib.error
    import auditor
    from auditor import AuditorError
    from auditor.contamination import contamination
    from auditor.io.hub import describe
    from auditor.leakage import leak
    from auditor.matrix import overlap_matrix
    endpoint = sys.argv[1]
    out = {}
    for name, call in json.loads(sys.argv[2]):
        try:
            urllib.request.urlopen(f"{endpoint}/__case__/{name}", timeout=10)
        except urllib.error.HTTPError:
            pass
        try:
            eval(call)
            out[name] = "ok"
        except AuditorError as exc:
            out[name] = exc.code
    print(json.dumps(out))
""")

# (case, environment, call, Authorization headers the hub must see, outcome)
ENVIRONMENTS = {
    "server_token": ({"HF_TOKEN": SERVER_TOKEN}, None),
    "saved_login": ({}, SAVED_TOKEN),
    "both": ({"HF_TOKEN": SERVER_TOKEN}, SAVED_TOKEN),
    "gated_server_token": ({"HF_TOKEN": GATED_TOKEN}, None),
    "implicit_disabled": ({"HF_TOKEN": SERVER_TOKEN, "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1"}, SAVED_TOKEN),
    "nothing": ({}, None),
}
LIBRARY_CASES = [
    ("load_false_ignores_hf_token", "server_token", "auditor.load('acme/tiny', split='train', token=False)", NONE, "ok"),
    ("load_false_ignores_saved_login", "saved_login", "auditor.load('acme/tiny', split='train', token=False)", NONE,
     "ok"),
    ("load_blank_is_no_token", "both", "auditor.load('acme/tiny', split='train', token='  ')", NONE, "ok"),
    ("load_explicit_token", "both", f"auditor.load('acme/tiny', split='train', token={USER_TOKEN!r})",
     bearer(USER_TOKEN), "ok"),
    ("load_default_uses_hf_token", "both", "auditor.load('acme/tiny', split='train')", bearer(SERVER_TOKEN), "ok"),
    ("load_default_uses_saved_login", "saved_login", "auditor.load('acme/tiny', split='train')", bearer(SAVED_TOKEN),
     "ok"),
    ("load_default_without_any_token", "nothing", "auditor.load('acme/tiny', split='train')", NONE, "ok"),
    ("load_default_implicit_disabled", "implicit_disabled", "auditor.load('acme/tiny', split='train')", NONE, "ok"),
    ("gated_false_never_borrows_the_token", "gated_server_token",
     "auditor.load('acme/gated', split='train', token=False)", NONE, "gated"),
    ("gated_explicit_token", "server_token", f"auditor.load('acme/gated', split='train', token={GATED_TOKEN!r})",
     bearer(GATED_TOKEN), "ok"),
    ("describe_false", "both", "describe('acme/tiny', token=False)", NONE, "ok"),
    ("describe_explicit_token", "both", f"describe('acme/tiny', token={USER_TOKEN!r})", bearer(USER_TOKEN), "ok"),
    ("scan_false", "both", "auditor.scan('acme/tiny', split='test', token=False)", NONE, "ok"),
    ("leak_false", "both", "leak('acme/tiny', 'acme/tiny', split_a='train', split_b='test', token=False)", NONE, "ok"),
    ("contamination_false", "both", "contamination('acme/tiny', 'gsm8k', corpus_split='train', token=False)", NONE,
     "ok"),
    ("matrix_false", "both", "overlap_matrix(['t:train=acme/tiny', 't:test=acme/tiny'], token=False)", NONE, "ok"),
    ("scan_explicit_token", "both", f"auditor.scan('acme/tiny', split='test', token={USER_TOKEN!r})",
     bearer(USER_TOKEN), "ok"),
]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    hub = start_fake_hub(tmp_path_factory.mktemp("hub"))
    hub.start()
    yield hub
    hub.stop()


@pytest.fixture(scope="module")
def library_results(hub, tmp_path_factory):
    """Every LIBRARY_CASE, one client process per environment: {case: (outcome, [auth, ...])}."""
    results = {}
    for env_name, (env, saved) in ENVIRONMENTS.items():
        calls = [(name, call) for name, e, call, _, _ in LIBRARY_CASES if e == env_name]
        if not calls:
            continue
        hub.authorizations.clear()
        proc = subprocess.run([sys.executable, "-c", CHILD, hub.endpoint, json.dumps(calls)], capture_output=True,
                              text=True, timeout=300, cwd=REPO,
                              env=hub_env(hub, tmp_path_factory.mktemp(env_name), env, saved))
        assert proc.returncode == 0, proc.stderr[-3000:]
        outcomes = json.loads(proc.stdout.strip().splitlines()[-1])
        auths = split_by_case(list(hub.authorizations))
        for name, _ in calls:
            results[name] = (outcomes[name], auths.get(name, []))
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name, env_name, call, expected, outcome", LIBRARY_CASES, ids=[c[0] for c in LIBRARY_CASES])
def test_library_sends_only_the_token_it_was_given(library_results, name, env_name, call, expected, outcome):
    got, auths = library_results[name]
    assert got == outcome, (call, got)
    assert auths, f"{call}: no request reached the hub"
    assert set(auths) == expected, (call, sorted(set(auths), key=str))


# --------------------------------------------------------------------------- the CLI

# (case, environment, arguments, Authorization headers, exit code)
CLI_CASES = [
    ("hf_token_is_used", "server_token", ["scan", "acme/tiny", "--split", "test"], bearer(SERVER_TOKEN), 0),
    ("hf_token_before_saved_login", "both", ["scan", "acme/tiny", "--split", "test"], bearer(SERVER_TOKEN), 0),
    ("saved_login_is_used", "saved_login", ["scan", "acme/tiny", "--split", "test"], bearer(SAVED_TOKEN), 0),
    ("no_token_anywhere", "nothing", ["scan", "acme/tiny", "--split", "test"], NONE, 0),
    ("implicit_token_disabled", "implicit_disabled", ["scan", "acme/tiny", "--split", "test"], NONE, 0),
    ("gated_with_hf_token", "gated_server_token", ["scan", "acme/gated", "--split", "train"], bearer(GATED_TOKEN), 0),
    ("gated_without_token", "nothing", ["scan", "acme/gated", "--split", "train"], NONE, 2),
]


@pytest.mark.slow
@pytest.mark.parametrize("name, env_name, args, expected, code", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_uses_this_machines_token_as_documented(hub, tmp_path, name, env_name, args, expected, code):
    env, saved = ENVIRONMENTS[env_name]
    hub.authorizations.clear()
    proc = subprocess.run([sys.executable, "-m", "auditor", *args, "--json", "-", "--quiet"], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path, env=hub_env(hub, tmp_path, env, saved))
    assert proc.returncode == code, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    auths = [auth for _, _, auth in hub.authorizations]
    assert auths and set(auths) == expected, sorted(set(auths), key=str)
    for token in (SERVER_TOKEN, SAVED_TOKEN, GATED_TOKEN):
        assert token not in proc.stdout + proc.stderr


# --------------------------------------------------------------------------- the app

@pytest.fixture(scope="module")
def hosted():
    """The app with a token of its own in every place huggingface_hub looks: HF_TOKEN (which also
    opens acme/gated) and a saved login. A visitor's token opens acme/visitor."""
    server = AppServer(extra_env={"HF_TOKEN": GATED_TOKEN})
    try:
        (Path(server.tmp.name) / "hf").mkdir(parents=True, exist_ok=True)
        (Path(server.tmp.name) / "hf" / "token").write_text(SAVED_TOKEN)
        server.hub.add_repo("acme/visitor", {"data/train.jsonl": _jsonl(TINY_TRAIN), "data/test.jsonl": _jsonl(TINY_TEST)},
                            gated_token=VISITOR_TOKEN)
        server.wait()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def hosted_client(hosted):
    from gradio_client import Client
    return Client(hosted.url, verbose=False)


def sent(server) -> list:
    return [auth for _, _, auth in server.hub.authorizations]


@pytest.mark.slow
def test_app_api_public_dataset_sends_no_token(hosted, hosted_client):
    hosted.hub.authorizations.clear()
    summary = hosted_client.predict("acme/tiny", "", "test", "question", "answer", "", 0.7, api_name="/audit_json")
    assert summary["input"]["records"] == 3
    assert sent(hosted) and set(sent(hosted)) == NONE


@pytest.mark.slow
def test_app_api_never_lends_the_servers_token(hosted, hosted_client):
    """The server's HF_TOKEN opens acme/gated; a visitor calling the API must still be refused."""
    hosted.hub.authorizations.clear()
    with pytest.raises(Exception) as info:
        hosted_client.predict("acme/gated", "", "train", "question", "answer", "", 0.7, api_name="/audit_json")
    assert "gated" in str(info.value)
    assert sent(hosted) and set(sent(hosted)) == NONE


@pytest.mark.slow
@pytest.mark.browser
def test_app_page_uses_only_the_typed_token(browser, hosted):
    from browser_support import TIMEOUT, dataset_box, new_page, open_app, open_form, open_tab, status, wait_audited
    from playwright.sync_api import expect

    url = hosted.url
    context, page = new_page(browser, url)
    try:
        open_app(page, url)
        box = dataset_box(page)
        # Load fields of a public set, no token typed: no Authorization at all.
        hosted.hub.authorizations.clear()
        box.fill("acme/tiny")
        open_form(page)                   # (the fields fold away after the opening audit)
        page.locator("#load-fields").click()
        expect(status(page)).to_contain_text("Fields of acme/tiny")
        assert sent(hosted) and set(sent(hosted)) == NONE

        # The visitor's token typed: load fields, audit, leakage and contamination all send it, and only it.
        hosted.hub.authorizations.clear()
        page.locator("#token input").fill(VISITOR_TOKEN)
        box.fill("acme/visitor")
        page.locator("#load-fields").click()
        expect(status(page)).to_contain_text("Fields of acme/visitor")
        page.locator("#split input").fill("train")
        page.locator("#split input").press("Enter")
        page.locator("#run").click()
        wait_audited(page, "12", "acme/visitor")
        open_tab(page, "Leakage")
        page.locator("#leak-split input").fill("test")
        page.locator("#leak-split input").press("Enter")
        page.locator("#benchmark input").click()
        page.get_by_role("option", name="gsm8k").first.click()
        page.locator("#leak-run").click()
        expect(page.locator("#leak-status")).to_contain_text("Checked leakage and contamination", timeout=TIMEOUT)
        assert sent(hosted) and set(sent(hosted)) == bearer(VISITOR_TOKEN)

        # Token cleared: the gated set the server's own token could open is refused, nothing sent.
        hosted.hub.authorizations.clear()
        open_form(page)
        page.locator("#token input").fill("")
        open_tab(page, "Overview")
        box.fill("acme/gated")
        page.locator("#split input").fill("train")
        page.locator("#split input").press("Enter")
        page.locator("#run").click()
        expect(status(page)).to_contain_text("gated", timeout=TIMEOUT)
        assert sent(hosted) and set(sent(hosted)) == NONE
        for token in (GATED_TOKEN, SAVED_TOKEN, VISITOR_TOKEN):
            assert token not in page.content()
    finally:
        context.close()
