"""Minimal fake Hugging Face Hub for offline tests (stdlib only: http.server + threading).

Usage::

    hub = FakeHub(tmp_path / "hub")
    hub.add_repo("openai/gsm8k", {"main/train-00000-of-00001.parquet": data}, readme=README)
    hub.add_repo("acme/gated", {"data/train.jsonl": b"..."}, gated_token="hf_secret")
    hub.add_repo("acme/moving", files_v1); old = hub.repos["acme/moving"]["sha"]
    hub.add_repo("acme/moving", files_v2)    # a new commit: "main" moves, `old` stays readable by its sha
    endpoint = hub.start()      # "http://127.0.0.1:PORT"
    # in a FRESH process, before importing datasets / huggingface_hub:
    #   HF_ENDPOINT=endpoint HF_UPDATE_DOWNLOAD_COUNTS=0 HF_HUB_DISABLE_TELEMETRY=1
    #   HF_HOME=<tmp> HF_DATASETS_CACHE=<tmp>   (and no HF_TOKEN)
    hub.stop()
    hub.requests                # [(method, path_with_query), ...]
    hub.authorizations          # [(method, path_with_query, Authorization header or None), ...]

Routes served (what datasets 5.2 / huggingface_hub 2.4 actually request):
  GET  /api/datasets/{repo}[/revision/{rev}]         -> repo info JSON (sha, siblings, gated)
  GET  /api/datasets/{repo}/tree/{rev}[/{dir}]       -> tree listing (?recursive=, ?expand= accepted)
  POST /api/datasets/{repo}/paths-info/{rev}         -> info for the given paths
  GET  /api/datasets/{repo}/auth-check               -> 200, or the gated error (HfApi().auth_check)
  HEAD/GET /datasets/{repo}/resolve/{rev}/{file}     -> file bytes; X-Repo-Commit, ETag; Range -> 206
                                                        (a file in stall_downloads, whole: cut short, then silence)
Errors carry `X-Error-Code` (RepoNotFound / RevisionNotFound / EntryNotFound / GatedRepo), which is
what huggingface_hub.utils.hf_raise_for_status keys on. `rev` may be "main" (the latest commit) or the
sha of any commit the repo has had (or a unique prefix of 7+ hex digits), or a branch or tag named by
add_ref: adding a repo again makes a new commit and keeps the old ones.
Gated repos: repo info/tree are public (as on the real Hub); file downloads and auth-check need
`Authorization: Bearer <gated_token>` -> 401 without a token, 403 with a wrong one (both GatedRepo).

OBSERVED CLIENT BEHAVIOUR (datasets 5.2.0, huggingface_hub 2.4.0, measured; pinned by tests/io/test_hub_server.py)
Request sequence of load_dataset(repo, config, split): HEAD+GET resolve/main/README.md (a 404 EntryNotFound
falls back to GET /api/datasets/{repo}), then at the pinned sha: HEAD {name}.py, .huggingface.yaml,
dataset_infos.json (404s), GET /api/.../revision/{sha}, GET tree/{sha}/{dir}?recursive=false&expand=false,
then HEAD+GET of EVERY data file of the config (all splits are downloaded and prepared even when one
split is asked for). streaming=True reads the files with `Range: bytes=0-N` GETs (206).
get_dataset_split_names also reads (Range GET) the first data file, to infer features;
load_dataset_builder(repo, config).config.data_files.keys() gives the split names without reading data.

datasets (load_dataset / get_dataset_config_names / get_dataset_split_names):
  unknown repo   -> datasets.exceptions.DatasetNotFoundError (subclass of FileNotFoundError/OSError):
                    "Dataset 'nobody/nothing' doesn't exist on the Hub or cannot be accessed."
                    NB: re-raised `from None`; __cause__ is None, __context__ is an unrelated cache miss.
  unknown config -> ValueError: "BuilderConfig 'nope' not found. Available: ['main', 'socratic']"
  unknown split  -> ValueError: Unknown split "validation". Should be one of ['train', 'test'].
                    (raised only AFTER downloading/preparing all splits); with streaming=True:
                    ValueError: "Bad split: validation. Available splits: ['train', 'test']"
  bad revision   -> DatasetNotFoundError: "Revision 'v9' doesn't exist for dataset 'openai/gsm8k' on the Hub."
  gated, no token (401) -> DatasetNotFoundError: "Dataset 'acme/gated' is a gated dataset on the Hub.
                    You must be authenticated to access it."   (wrong token, 403: "... Visit the dataset
                    page at https://huggingface.co/datasets/acme/gated to ask for access.")
                    => tell "missing" from "gated" by the message text only ("is a gated dataset").
  gated + token=<right token> -> works.
  endpoint refused (nothing listening) -> builtins.ConnectionError after ~23 s (5 retries, backoff
                    1+2+4+8+8 s): "Couldn't reach 'openai/gsm8k' on the Hub (LocalEntryNotFoundError)"
  endpoint hangs (accepts, never answers) -> same ConnectionError after ~393 s: first HEAD uses a 10 s
                    timeout, the retries a hard-coded 60 s (file_download._ETAG_RETRY_TIMEOUT) x 6.
                    HF_HUB_ETAG_TIMEOUT only changes the first 10 s. => pre-flight with dataset_info.
huggingface_hub.HfApi() (2.x is built on httpx2; huggingface_hub.utils.httpx IS httpx2):
  dataset_info(repo, timeout=5) ok           -> DatasetInfo (sha == X-Repo-Commit; gated repo: .gated="auto")
  404 RepoNotFound    -> huggingface_hub.errors.RepositoryNotFoundError
                         (< HfHubHTTPError < httpx2.HTTPError and OSError)
                         Its message says "If you are trying to access a private or gated repo, ..." so a
                         `"gated" in str(e)` test wrongly calls a MISSING repo gated: check GatedRepoError first.
  404 RevisionNotFound-> RevisionNotFoundError; 404 EntryNotFound -> RemoteEntryNotFoundError (same bases)
  401/403 GatedRepo   -> GatedRepoError (subclass of RepositoryNotFoundError!), e.response.status_code 401/403
                         (dataset_info does NOT raise for gated repos; hf_hub_download / auth_check do.)
  refused             -> httpx2.ConnectError "[Errno 111] Connection refused" in ~0.02 s, no retries
  hang                -> httpx2.ReadTimeout "timed out" after timeout=5 s
                         Both are httpx2.TransportError < httpx2.RequestError < httpx2.HTTPError < Exception:
                         NOT OSError, NOT httpx.* (httpx 0.28 is installed too but unrelated).
  auth_check() takes no timeout (session default is timeout=None): it can block forever on a hung endpoint.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

_ROUTE = re.compile(
    r"^/(?:api/datasets/(?P<api_repo>[^/]+/[^/]+)"
    r"(?:/(?P<auth>auth-check)|/(?P<op>revision|tree|paths-info)/(?P<api_rev>[^/]+)(?:/(?P<dir>.*))?)?"
    r"|datasets/(?P<dl_repo>[^/]+/[^/]+)/resolve/(?P<dl_rev>[^/]+)/(?P<file>.+))$"
)


class FakeHub:
    """A fake Hub serving dataset repos stored under ``root_dir/<owner>/<name>/``."""

    def __init__(self, root_dir):
        self.root = Path(root_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        # repo_id -> {"sha": the latest commit, "gated_token": str | None, "commits": [shas, oldest first]}
        self.repos: dict[str, dict] = {}
        self.requests: list[tuple[str, str]] = []  # (method, path incl. query), in arrival order
        # (method, path incl. query, Authorization header or None) of every request, in arrival order:
        # what tests/io/test_hub_tokens.py checks (which token, if any, reached the hub).
        self.authorizations: list[tuple[str, str, str | None]] = []
        self._server: ThreadingHTTPServer | None = None
        self.endpoint: str | None = None  # set by start()
        # When set, the hub answers repo info (dataset_info, the pre-flight) and nothing else: every
        # other request waits, unanswered, until stop() (a hub that answers, then hangs).
        self.hang_after_info = False
        # {"OWNER/NAME/PATH": bytes}: a whole-file GET of that file (a download; the datasets loader's reads
        # ask for ranges, and are answered) sends its headers and that many bytes of its body, then
        # nothing more until stop(): a download cut short, the client holding a partial file.
        self.stall_downloads: dict[str, int] = {}
        self._release = threading.Event()

    def add_repo(self, repo_id, files, readme=None, gated_token=None):
        """Create a dataset repo, or give an existing one a new commit holding exactly ``files`` (its
        earlier commits stay readable by their sha; "main" is the new one). ``files`` maps
        repo-relative paths to bytes."""
        files = dict(files)
        if readme is not None:
            files["README.md"] = readme.encode()
        previous = self.repos.get(repo_id)
        digest = hashlib.sha1(repo_id.encode())
        if previous is not None:                 # a new commit's sha depends on its parent, as in git
            digest.update(previous["sha"].encode())
        for rel in sorted(files):
            digest.update(rel.encode() + b"\0" + hashlib.sha1(files[rel]).digest())
        sha = digest.hexdigest()
        for rel, data in sorted(files.items()):   # every commit's files, under .commits/SHA/
            (self._commit_dir(sha) / rel).parent.mkdir(parents=True, exist_ok=True)
            (self._commit_dir(sha) / rel).write_bytes(data)
        repo_dir = self.root / repo_id           # and the latest commit's under OWNER/NAME/
        if repo_dir.exists():
            shutil.rmtree(repo_dir)
        for rel, data in sorted(files.items()):
            (repo_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo_dir / rel).write_bytes(data)
        commits = (previous["commits"] if previous else []) + [sha]
        refs = previous.get("refs", {}) if previous else {}     # branches and tags stay where they point
        self.repos[repo_id] = {"sha": sha, "gated_token": gated_token, "commits": commits, "refs": refs}

    def _commit_dir(self, sha: str) -> Path:
        return self.root / ".commits" / sha

    def add_ref(self, repo_id: str, name: str, sha: str):
        """Name one of the repo's commits with a branch or tag (``name``), readable as a revision."""
        self.repos[repo_id].setdefault("refs", {})[name] = sha

    def _sha(self, repo_id: str, rev: str) -> str | None:
        """The commit ``rev`` names: "main", a branch or tag of add_ref, a sha, or a unique prefix of one
        (7 hex digits or more: the Hub resolves those too); None if unknown."""
        repo = self.repos[repo_id]
        if rev == "main":
            return repo["sha"]
        if rev in repo.get("refs", {}):
            return repo["refs"][rev]
        found = [c for c in repo["commits"] if re.fullmatch(r"[0-9a-f]{7,40}", rev) and c.startswith(rev)]
        return found[0] if len(found) == 1 else None

    def _rev_dir(self, repo_id: str, rev: str) -> Path | None:
        """The folder of a repo's files at ``rev`` (see ``_sha``); None if unknown."""
        sha = self._sha(repo_id, rev)
        if sha is None:
            return None
        return self.root / repo_id if sha == self.repos[repo_id]["sha"] else self._commit_dir(sha)

    def start(self) -> str:
        """Serve on an ephemeral port of 127.0.0.1 in a daemon thread; return the endpoint URL."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        return self.endpoint

    def stop(self):
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # -- helpers used by the handler -------------------------------------------------------------
    def _files(self, repo_id, rev="main"):
        repo_dir = self._rev_dir(repo_id, rev)
        return sorted(p.relative_to(repo_dir).as_posix() for p in repo_dir.rglob("*") if p.is_file())

    def _entry(self, repo_id, rel, rev="main"):
        path = self._rev_dir(repo_id, rev) / rel
        if path.is_dir():
            return {"type": "directory", "oid": hashlib.sha1(rel.encode()).hexdigest(), "size": 0, "path": rel}
        data = path.read_bytes()
        return {"type": "file", "oid": _git_oid(data), "size": len(data), "path": rel}


def client_env(endpoint: str, home: Path, **extra: str) -> dict:
    """This process's environment for a fresh one whose Hub clients talk to ``endpoint`` only, with
    their caches under ``home`` and no token (``extra``: more variables)."""
    env = {**os.environ, "HF_ENDPOINT": endpoint, "HF_HOME": str(home), "HF_DATASETS_CACHE": str(home / "ds"),
           "HF_UPDATE_DOWNLOAD_COUNTS": "0", "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "0",
           "AUDITOR_HUB_TIMEOUT": "60", **extra}
    env.pop("HF_TOKEN", None)
    return env


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _make_handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: every response sets Content-Length

        def log_message(self, *args):  # keep pytest output quiet
            pass

        def do_HEAD(self):
            self._dispatch(head=True)

        def do_GET(self):
            self._dispatch(head=False)

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            self._dispatch(head=False, form=parse_qs(body))  # paths-info: form-encoded paths=...

        def _send(self, status, body=b"", headers=None, head=False):
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _error(self, status, code, message, head):
            body = json.dumps({"error": message}).encode()
            headers = {"X-Error-Code": code, "X-Error-Message": message, "Content-Type": "application/json"}
            self._send(status, body, headers, head)

        def _json(self, obj, head):
            self._send(200, json.dumps(obj).encode(), {"Content-Type": "application/json"}, head)

        def _dispatch(self, head, form=None):
            url = urlsplit(self.path)
            hub.requests.append((self.command, self.path))
            hub.authorizations.append((self.command, self.path, self.headers.get("Authorization")))
            m = _ROUTE.match(unquote(url.path))
            if not m:
                return self._error(404, "NotFound", f"no route for {url.path}", head)
            if ".." in (m["dir"] or m["file"] or "").split("/"):
                return self._error(404, "EntryNotFound", "no such path", head)
            repo_id = m["api_repo"] or m["dl_repo"]
            if hub.hang_after_info and (m["dl_repo"] or m["op"] or m["auth"]):
                hub._release.wait()          # accepted, never answered
                return None
            repo = hub.repos.get(repo_id)
            if repo is None:
                return self._error(404, "RepoNotFound", "Repository not found", head)
            rev = m["api_rev"] or m["dl_rev"] or "main"
            if hub._rev_dir(repo_id, rev) is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {rev}", head)
            sha = hub._sha(repo_id, rev)
            if m["dl_repo"] or m["auth"]:  # file access (and auth-check) is what gating blocks
                token = repo["gated_token"]
                if token is not None and self.headers.get("Authorization") != f"Bearer {token}":
                    status = 403 if self.headers.get("Authorization") else 401
                    msg = f"Access to dataset {repo_id} is restricted. You must be authenticated to access it."
                    return self._error(status, "GatedRepo", msg, head)
            if m["auth"]:
                return self._json({}, head)
            if m["dl_repo"]:
                return self._resolve(repo_id, sha, m["file"], head)
            if m["op"] == "tree":
                return self._tree(repo_id, sha, m["dir"] or "", parse_qs(url.query), head)
            if m["op"] == "paths-info":
                paths = [p for p in (form or {}).get("paths", []) if (hub._rev_dir(repo_id, sha) / p).exists()]
                return self._json([hub._entry(repo_id, p, sha) for p in paths], head)
            return self._json(self._info(repo_id, repo, sha), head)

        def _info(self, repo_id, repo, sha):
            return {
                "_id": sha[:24], "id": repo_id, "author": repo_id.split("/")[0],
                "sha": sha, "private": False, "gated": "auto" if repo["gated_token"] else False,
                "disabled": False, "downloads": 0, "likes": 0, "tags": [], "cardData": {},
                "lastModified": "2024-01-01T00:00:00.000Z", "createdAt": "2024-01-01T00:00:00.000Z",
                "siblings": [{"rfilename": f} for f in hub._files(repo_id, sha)],
            }

        def _tree(self, repo_id, sha, rel_dir, query, head):
            root = hub._rev_dir(repo_id, sha)
            base = root / rel_dir
            if not base.is_dir():
                return self._error(404, "EntryNotFound", f"{rel_dir} does not exist", head)
            recursive = query.get("recursive", ["false"])[0].lower() in ("1", "true")
            children = base.rglob("*") if recursive else base.iterdir()
            rels = sorted(p.relative_to(root).as_posix() for p in children)
            return self._json([hub._entry(repo_id, r, sha) for r in rels], head)

        def _resolve(self, repo_id, sha, rel, head):
            path = hub._rev_dir(repo_id, sha) / rel
            if not path.is_file():
                return self._error(404, "EntryNotFound", f"{rel} does not exist at {sha}", head)
            data = path.read_bytes()
            headers = {"X-Repo-Commit": sha, "ETag": f'"{_git_oid(data)}"',
                       "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
            stall = None if head or self.headers.get("Range") else hub.stall_downloads.get(f"{repo_id}/{rel}")
            if stall is not None:
                return self._stall(data, headers, stall)
            rng = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if not rng or rng.groups() == ("", ""):
                return self._send(200, data, headers, head)
            start, end = rng.groups()
            if start == "":  # suffix range: last N bytes
                start, end = max(0, len(data) - int(end)), len(data) - 1
            start, end = int(start), min(int(end) if end else len(data) - 1, len(data) - 1)
            if start >= len(data):
                return self._send(416, b"", {"Content-Range": f"bytes */{len(data)}"}, head)
            headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return self._send(206, data[start : end + 1], headers, head)

        def _stall(self, data, headers, sent):
            """The whole file announced, ``sent`` bytes of it sent, then nothing until the hub stops."""
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:sent])
            self.wfile.flush()
            hub._release.wait()
            self.close_connection = True

    return Handler
