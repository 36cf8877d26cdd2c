"""``bash scripts/space.sh OUT`` writes a Hugging Face Space repository: README.md's front matter
from space_config.yaml (a valid Spaces configuration, its sdk_version the gradio pinned), the app,
its packages and requirements.txt, and no tests or benchmarks. Installed in a fresh virtual
environment exactly as the Space builder does (``pip install -r requirements.txt``, nothing else)
and started as a Space starts it (``python app.py``, GRADIO_SERVER_NAME=0.0.0.0, its own port), it
audits through the page and through gradio_client."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml
from playwright.sync_api import expect

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from app_server import free_port, start_fake_hub  # noqa: E402

pytest_plugins = ["browser_support"]

# The Spaces configuration reference's keys (hf.co/docs/hub/spaces-config-reference) and their types.
KEYS = {"title": str, "emoji": str, "colorFrom": str, "colorTo": str, "sdk": str, "sdk_version": str,
        "python_version": str, "app_file": str, "app_port": int, "base_path": str, "fullWidth": bool,
        "header": str, "short_description": str, "models": list, "datasets": list, "tags": list,
        "thumbnail": str, "pinned": bool, "hf_oauth": bool, "hf_oauth_scopes": list, "disable_embedding": bool,
        "startup_duration_timeout": str, "custom_headers": dict, "preload_from_hub": list, "license": str,
        "suggested_hardware": str, "suggested_storage": str}
COLORS = {"red", "yellow", "green", "blue", "indigo", "purple", "pink", "gray"}
HARDWARE = {"cpu-basic", "cpu-upgrade", "t4-small", "t4-medium", "l4x1", "a10g-small", "a10g-large", "a100-large"}


def build(out: Path) -> Path:
    proc = subprocess.run(["bash", "scripts/space.sh", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return out


def front_matter(readme: Path) -> dict:
    text = readme.read_text(encoding="utf-8")
    match = re.match(r"---\n(.*?)\n---\n", text, re.S)
    assert match, "README.md has no front matter"
    return yaml.safe_load(match.group(1))


def test_the_folder_is_a_space_repository(tmp_path):
    out = build(tmp_path / "space")
    config = front_matter(out / "README.md")
    assert set(config) <= set(KEYS), set(config) - set(KEYS)
    for key, value in config.items():
        assert isinstance(value, KEYS[key]), (key, value)
    gradio = re.search(r"^gradio==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert config["sdk"] == "gradio" and config["sdk_version"] == gradio
    assert config["python_version"] == "3.11" and (out / config["app_file"]).is_file()
    assert config["colorFrom"] in COLORS and config["colorTo"] in COLORS
    assert len(config["short_description"]) <= 60 and config["suggested_hardware"] in HARDWARE
    assert config == {k: v for k, v in yaml.safe_load((ROOT / "space_config.yaml").read_text()).items()}
    # The app and everything it imports; no tests, no benchmarks, no caches.
    for path in ("app.py", "ui/layout.py", "auditor/__init__.py", "auditor/examples/gsm8k/main/train.jsonl.gz",
                 "docs/space.md", "requirements.txt", ".gitattributes"):
        assert (out / path).is_file(), path
    names = {p.relative_to(out).parts[0] for p in out.rglob("*")}
    assert not names & {"tests", "bench", "scripts", ".venv", "pyproject.toml"}
    assert not list(out.rglob("__pycache__")) and not list(out.rglob("*.pyc"))
    pins = [line for line in (out / "requirements.txt").read_text().splitlines() if line and line[0] != "#"]
    assert all(re.fullmatch(r"[A-Za-z0-9_.\-]+==[\w.]+", p) for p in pins), pins
    names = {p.split("==")[0].lower() for p in pins}
    assert {"gradio", "datasets", "huggingface_hub", "numpy", "onnxruntime", "tokenizers"} <= names
    # Written again into the same folder: the same files (what it wrote before is replaced).
    before = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    build(out)
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*")) == before


@pytest.mark.sweep        # a long sweep (a fresh environment installed from the registry: ~2.5 min)
@pytest.mark.slow
@pytest.mark.browser
def test_installed_as_the_space_builder_does_it_audits_through_the_page_and_the_api(tmp_path, browser):
    out = build(tmp_path / "space")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HF_TOKEN")}
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "-r", "requirements.txt"], cwd=out,
                         env=env, capture_output=True, text=True, timeout=1800)
    assert pip.returncode == 0, pip.stderr[-3000:]
    hub = start_fake_hub(tmp_path / "hub")
    port = free_port()
    env.update({"GRADIO_SERVER_NAME": "0.0.0.0", "GRADIO_SERVER_PORT": str(port), "SYSTEM": "spaces",
                "SPACE_ID": "acme/auditor", "HF_ENDPOINT": hub.start(), "HF_HOME": str(tmp_path / "hf"),
                "HF_HUB_DISABLE_TELEMETRY": "1", "HF_UPDATE_DOWNLOAD_COUNTS": "0", "PYTHONUNBUFFERED": "1"})
    log = open(tmp_path / "app.log", "wb")
    app = subprocess.Popen([str(venv / "bin" / "python"), "app.py"], cwd=out, env=env, stdout=log,
                           stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert app.poll() is None, (tmp_path / "app.log").read_text(errors="replace")[-3000:]
            try:
                with urllib.request.urlopen(url + "/", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "the Space did not answer within 180 s"
            time.sleep(0.5)
        # Served on every interface, as a Space must be (0.0.0.0), not only on loopback.
        with socket.create_connection((socket.gethostbyname(socket.gethostname()), port), timeout=5):
            pass
        # The venv's packages, never this checkout's: app.py imports the auditor copy in the folder.
        probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import auditor, gradio; "
                                "print(auditor.__file__, gradio.__version__)"], cwd=out, env=env,
                               capture_output=True, text=True, timeout=120)
        assert probe.stdout.split()[0].startswith(str(out)), probe.stdout
        from gradio_client import Client
        summary = Client(url, verbose=False).predict("example:gsm8k", "main", "test", "", "", "", 0.7,
                                                     api_name="/audit_json")
        assert summary["input"]["records"] == 1319 and summary["input"]["split"] == "test"
        # the session's browser (browser_support): a second sync Playwright in one thread is refused
        page = browser.new_page(viewport={"width": 1360, "height": 1000})
        try:
            page.goto(url + "/")
            expect(page.locator("#status")).to_contain_text("7,473 records", timeout=60_000)
            page.locator("#dataset input, #dataset textarea").first.fill("acme/tiny")
            page.locator("#run").click()
            expect(page.locator("#status")).to_contain_text(re.compile(r"Audited acme/tiny.*: 12 records"),
                                                            timeout=60_000)
            expect(page.locator("#headline")).to_contain_text("12")
            share = page.locator("#share input, #share textarea").first.input_value()
            assert "dataset=acme%2Ftiny" in share and f"rev={hub.repos['acme/tiny']['sha']}" in share
        finally:
            page.close()
        assert json.loads(json.dumps(summary))["input"]["source"] == "example:gsm8k"
    finally:
        app.terminate()
        try:
            app.wait(timeout=20)
        except subprocess.TimeoutExpired:
            app.kill()
        log.close()
        hub.stop()
