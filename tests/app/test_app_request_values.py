"""What the app answers for the paths, row caps and thresholds a request or a share link
carries (no existence oracle for server paths), and its cache bounded in bytes."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import REPO


APP_CHILD = r"""
import json, os, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, os.getcwd())
import app, auditor
from auditor import AuditorError

def outcome(fn, *args):
    try:
        value = fn(*args)
        return {"ok": getattr(value, "kind", None) or getattr(value, "max_rows", None)}
    except AuditorError as exc:
        return {"code": exc.code, "message": exc.message}

ids, max_rows, thresholds = json.loads(sys.argv[1])
out = {"ids": {d: outcome(app.resolve_source, d) for d in ids},
       "max_rows": {json.dumps(m): outcome(app.make_request, "example:gsm8k", "", "", "", "", "", [], 0.7, m)
                    for m in max_rows},
       "thresholds": {t: outcome(app.make_request, "example:gsm8k", "", "", "", "", "", [], t, None)
                      for t in thresholds},
       "row_cap": app.ROW_CAP}
result = auditor.scan("example:humaneval")
size = app.result_bytes(result)
cache = app.ResultCache(int(2.5 * size), size=100)
for key in range(6):
    cache.put(key, result)
tiny = app.ResultCache(1, size=100)
tiny.put("a", result)
tiny.put("b", result)
out["cache"] = {"size": size, "kept": list(cache._items), "bytes": cache.bytes,
                "tiny_kept": list(tiny._items), "tiny_b": tiny.get("b") is result}
print(json.dumps(out))
"""


# (existing path, missing path) relative to the repository, where the app runs
PATH_PAIRS = [("auditor", "auditorzz"), ("auditor/examples", "auditor/nothere"), ("app.py", "nothere.py"),
              ("README.md", "NOPE.md"), ("tests/conftest.py", "tests/nothere.py"), ("./app.py", "./nothere.py"),
              (f"../{REPO.name}", "../nothere-at-all"), ("auditor/..", "nothere/.."),
              ("auditor/examples/README.md", "auditor/examples/NOPE.md")]


APP_MAX_ROWS = {"1e309": "cap", "inf": "cap", "1e30": "cap", 10 ** 400: "cap", "nan": "not a whole number",
                "-1e309": "at least 1", "2.5": "not a whole number", "-3": "at least 1", "many": "not a whole number",
                True: "not a whole number", "25": 25}


APP_THRESHOLDS = ["1e309", "nan", "-inf", "0", "2", "high", "0x1p-2"]


@pytest.fixture(scope="module")
def app_answers():
    """The app's answers, from a separate process (importing app.py sets environment variables of
    its own, which must not leak into this test session)."""
    ids = [p for pair in PATH_PAIRS for p in pair]
    arg = json.dumps([ids, list(APP_MAX_ROWS), APP_THRESHOLDS])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", APP_CHILD, arg], capture_output=True, text=True, cwd=REPO,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("existing, missing", PATH_PAIRS)
def test_app_treats_existing_and_missing_server_paths_alike(app_answers, existing, missing):
    """From the hostile-input review: No existence oracle: whether an id is refused, or sent to the hub only,
    depends on its text
    alone, never on whether a path of that name exists on the server."""
    assert (REPO / existing).exists() and not (REPO / missing).exists()
    answers = [app_answers["ids"][d] for d in (existing, missing)]
    for answer, dataset in zip(answers, (existing, missing)):
        if "message" in answer:
            answer["message"] = answer["message"].replace(repr(dataset), "NAME")
    assert answers[0] == answers[1]
    assert answers[0] in ({"ok": "hub"}, {"code": "not_found", "message": "NAME is not a Hugging Face dataset id."})


@pytest.mark.parametrize("max_rows", list(APP_MAX_ROWS), ids=[str(m)[:12] for m in APP_MAX_ROWS])
def test_app_share_link_row_caps(app_answers, max_rows):
    """From the hostile-input review."""
    expected, got = APP_MAX_ROWS[max_rows], app_answers["max_rows"][json.dumps(max_rows)]
    if expected == "cap":            # beyond what the app reads: the app's own cap, which the page states
        assert got == {"ok": app_answers["row_cap"]}
    elif isinstance(expected, int):
        assert got == {"ok": expected}
    else:
        assert got["code"] == "usage" and expected in got["message"]


@pytest.mark.parametrize("threshold", APP_THRESHOLDS)
def test_app_share_link_thresholds(app_answers, threshold):
    """From the hostile-input review."""
    got = app_answers["thresholds"][threshold]
    assert got["code"] == "usage" and "Threshold" in got["message"]


def test_app_cache_is_bounded_by_bytes(app_answers):
    """From the hostile-input review."""
    cache = app_answers["cache"]
    assert cache["size"] > 0
    assert cache["kept"] == [4, 5] and cache["bytes"] <= 2.5 * cache["size"]
    assert cache["tiny_kept"] == ["b"] and cache["tiny_b"]    # the newest result is always kept
