"""Start ``app.py`` once per test session on a free 127.0.0.1 port, in a subprocess.

    pytest_plugins = ["app_server"]          # in a test module: the fixtures below, shared by the session
    def test_x(app_url): ...                 # "http://127.0.0.1:PORT"

Importing gradio takes seconds, so every app test shares one server; it is stopped at the end.
The app talks to a fake Hugging Face Hub on 127.0.0.1 (tests/hub_server.py), never the internet:
``acme/tiny`` (public, train and test splits), ``acme/gated`` (needs the token GATED_TOKEN) and
``acme/typed`` (Parquet files of types a Python value loses: tests/typed_parquet.py).
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import typed_parquet  # noqa: E402
from hub_server import FakeHub  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
START_TIMEOUT = 90
GATED_TOKEN = "hf_app_test_secret_token"
TINY_TRAIN = [{"question": f"How many apples does person {i} have if they buy {i} more apples today?",
               "answer": str(i), "topic": "apples" if i % 3 else "pears"} for i in range(12)]
TINY_TEST = [{"question": "How many pears does a person have after buying three more pears?", "answer": "3",
              "topic": "pears"}] * 2 + [{"question": "Name a colour of the sky.", "answer": "blue", "topic": "sky"}]


def _jsonl(rows) -> bytes:
    import json
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def start_fake_hub(root: Path) -> FakeHub:
    hub = FakeHub(root)
    hub.add_repo("acme/tiny", {"data/train.jsonl": _jsonl(TINY_TRAIN), "data/test.jsonl": _jsonl(TINY_TEST)})
    hub.add_repo("acme/gated", {"data/train.jsonl": _jsonl(TINY_TRAIN), "data/test.jsonl": _jsonl(TINY_TEST)},
                 gated_token=GATED_TOKEN)
    hub.add_repo("acme/typed", typed_parquet.FILES)
    return hub


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


class AppServer:
    def __init__(self, extra_env: dict | None = None):
        """``extra_env``: extra environment of the app process (e.g. an HF_TOKEN of the server's own,
        which tests/io/test_hub_tokens.py sets to prove it is never used)."""
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tmp = tempfile.TemporaryDirectory(prefix="auditor-app-test-")
        self.hub = start_fake_hub(Path(self.tmp.name) / "hub")
        self.hub_url = self.hub.start()
        self.log = open(Path(self.tmp.name) / "app.log", "wb")
        env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE")}
        env.update({"GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(self.port),
                    "GRADIO_ANALYTICS_ENABLED": "False", "HF_ENDPOINT": self.hub_url,
                    "HF_HOME": str(Path(self.tmp.name) / "hf"), "HF_DATASETS_CACHE": str(Path(self.tmp.name) / "ds"),
                    "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1",
                    "AUDITOR_HUB_TIMEOUT": "10", "PYTHONUNBUFFERED": "1",
                    # Every test client calls from 127.0.0.1, so the server sees one visitor: its
                    # per-visitor limit (ui/jobs.py) is tested on a server of its own.
                    "AUDITOR_JOBS_PER_VISITOR": "64",
                    # Jobs' children at the server's own priority: at the Space's niceness a job
                    # crawls while other test runs share the machine, and a page's wait runs out.
                    "AUDITOR_JOB_NICE": "0",
                    "AUDITOR_UPLOADS_DIR": str(Path(self.tmp.name) / "uploads")})
        env.update(extra_env or {})
        self.proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT, env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)

    def wait(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"app.py exited with {self.proc.returncode}:\n{self.output()}")
            if _answers(self.url + "/"):
                return self.url
            time.sleep(0.3)
        raise RuntimeError(f"app.py did not answer within {START_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        try:
            self.log.flush()
            return Path(self.log.name).read_text(errors="replace")[-5000:]
        except (OSError, ValueError):
            return ""

    def diagnosis(self) -> str:
        """The server's processes (its jobs' children among them) and every thread's stack (app.py
        dumps them on SIGUSR1), then the end of its log."""
        if self.proc.poll() is None:
            try:    # (a diagnosis never hides the test's own failure: no ps on the image, a closed log)
                ps = subprocess.run(["ps", "-o", "pid,ppid,stat,etime,rss,args", "--ppid", str(self.proc.pid),
                                     "-p", str(self.proc.pid)], capture_output=True, text=True).stdout
            except OSError as exc:
                ps = f"(no process list: {exc})"
            self.proc.send_signal(signal.SIGUSR1)
            time.sleep(1)
            try:
                return ps + "\n" + Path(self.log.name).read_text(errors="replace")[-20000:]
            except OSError:
                return ps
        return self.output()

    def stop(self) -> None:
        if self.log.closed:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.log.close()
        self.hub.stop()
        self.tmp.cleanup()


RUNNING: list[AppServer] = []    # the servers of this session, whose log a failing test shows


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failing test that used an app server shows the end of its log (a traceback in a handler,
    a job's child that died): in CI, that log is gone with the server's temporary folder."""
    outcome = yield
    report = outcome.get_result()
    names = getattr(item, "fixturenames", ())
    if report.failed and ("app_url" in names or any(n.endswith("_server") for n in names)):
        for name in ("page", "plain_page"):
            pg = getattr(item, "funcargs", {}).get(name)
            if pg is not None and not pg.is_closed():
                report.sections.append((f"{name}: status lines and messages", page_messages(pg)))
        for server in RUNNING:
            report.sections.append((f"app server log (port {server.port})", server.diagnosis()))


def page_messages(pg) -> str:
    """The page's status lines and toasts (an error the test did not look for), as text."""
    try:
        return pg.evaluate("""() => [...document.querySelectorAll(
            '#status, #leak-status, #para-status, .toast-body')].map(e => (e.id || e.className) + ': ' +
            e.innerText.trim().slice(0, 500)).join('\\n')""")
    except Exception as exc:  # noqa: BLE001 - a diagnosis never hides the test's own failure
        return f"(could not read the page: {exc})"


def serve(extra_env: dict | None = None):
    """An app server (``extra_env``: its own settings) started, yielded and stopped: a fixture's body
    (``yield from serve({...})``); a failing test that uses it shows its log."""
    server = AppServer(extra_env)
    RUNNING.append(server)
    try:
        server.wait()
        yield server
    finally:
        RUNNING.remove(server)
        server.stop()


@pytest.fixture(scope="session")
def app_server():
    yield from serve()


@pytest.fixture(scope="session")
def app_url(app_server) -> str:
    return app_server.url


@pytest.fixture(scope="session")
def client(app_url):
    """A gradio_client for the app's API (audit_json)."""
    from gradio_client import Client
    return Client(app_url, verbose=False)
