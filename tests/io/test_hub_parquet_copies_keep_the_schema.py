"""A deduplicated or clean copy of a Hub split stored as Parquet is made from the repo's own Parquet
files, fetched at the commit the audit read: the copy keeps their schema (nanosecond timestamps,
uint64 past int64's range, decimal128, list<struct>, dictionary) where rows rebuilt from the values
the Hub loader streams lost them, holds the rows in the order the audit numbered them (two files,
several row groups each), only the first rows under a row cap, and a file that cannot be fetched
is a clear error with no copy left.

Served by the local fake Hub (tests/hub_server.py) in a fresh process. Ground truth:
tests/typed_parquet.py (the files read back with pyarrow, less the texts pandas finds duplicated)."""
from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from hub_server import FakeHub, client_env  # noqa: E402
from typed_parquet import (  # noqa: E402
    CAP,
    FILES,
    LEAKED,
    LISTED,
    LISTED_ORDER,
    LISTED_README,
    TEXTS,
    THRESHOLD,
    expected,
    parquet_bytes,
    source,
    table_of,
)

REPO = Path(__file__).resolve().parents[2]

COMMANDS = """
import json, sys
from auditor.cli import main
print("@@" + json.dumps([main(argv) for argv in json.loads(sys.argv[1])]))
"""


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """The CLI's copies of the fake Hub's dataset: (exit codes, the folder they are in, the old commit)."""
    hub = FakeHub(tmp_path_factory.mktemp("hub"))
    hub.add_repo("acme/typed", FILES)
    hub.add_repo("acme/moved", FILES)
    old = hub.repos["acme/moved"]["sha"]
    hub.add_repo("acme/moved", {"data/train.parquet": parquet_bytes(table_of(0, 5))})     # main moves on
    hub.add_repo("acme/listed", LISTED, readme=LISTED_README)
    out = tmp_path_factory.mktemp("out")
    (out / "train.jsonl").write_text("".join(json.dumps({"text": t}) + "\n" for t in LEAKED))
    common = ["--split", "train", "--text", "text", "--quiet"]
    runs = [["dedup", "acme/typed", "--out", str(out / "dedup.parquet"), "--threshold", THRESHOLD, *common],
            ["dedup", "acme/typed", "--out", str(out / "cut.parquet"), "--threshold", THRESHOLD,
             "--max-rows", str(CAP), *common],
            ["dedup", "acme/moved", "--revision", old, "--out", str(out / "old.parquet"), "--threshold", THRESHOLD,
             *common],
            ["clean", "acme/typed", "--against", str(out / "train.jsonl"), "--dedup", "--out",
             str(out / "clean.parquet"), *common],
            ["dedup", "acme/listed", "--out", str(out / "listed.parquet"), "--threshold", THRESHOLD, *common]]
    endpoint = hub.start()
    try:
        proc = subprocess.run([sys.executable, "-c", COMMANDS, json.dumps(runs)], capture_output=True, text=True,
                              env=client_env(endpoint, tmp_path_factory.mktemp("hf")), timeout=600, cwd=str(REPO))
    finally:
        hub.stop()
    assert proc.returncode == 0 and "@@" in proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("@@", 1)[1]), out, old, hub, proc.stderr


def test_the_source_holds_what_a_python_value_loses():
    table = source()
    assert max(table.column("big").to_pylist()) > 2 ** 63 and table.num_rows == len(TEXTS)
    assert table.column("at").cast(pa.int64()).to_pylist()[1] % 1000        # not whole microseconds
    assert [pq.ParquetFile(io.BytesIO(data)).num_row_groups for data in FILES.values()] == [4, 3]


def copy_of(copies, run: int, name: str) -> pa.Table:
    """The copy ``name`` that the fixture's ``run``-th command wrote, its exit code checked."""
    codes, out, _, _, stderr = copies
    assert codes[run] == 0, stderr[-3000:]
    return pq.read_table(out / name)


def test_a_dedup_copy_keeps_the_schema_and_drops_exactly_the_duplicates(copies):
    copy = copy_of(copies, 0, "dedup.parquet")
    out = copies[1]
    assert copy.schema.equals(source().schema, check_metadata=True)
    assert copy.equals(expected())
    manifest = json.loads((out / "dedup.parquet.manifest.json").read_text())
    duplicated = pd.Series(TEXTS).duplicated(keep="first")
    assert [d["row"] for d in manifest["dropped_rows"]] == duplicated[duplicated].index.tolist()
    assert manifest["dropped"] == len(TEXTS) - copy.num_rows == 15


def test_a_capped_read_is_copied_as_its_first_rows_only(copies):
    copy = copy_of(copies, 1, "cut.parquet")
    assert copy.schema.equals(source().schema, check_metadata=True)
    assert copy.equals(expected(first=CAP))
    assert copy.num_rows < expected().num_rows


def test_the_copy_is_of_the_commit_read_not_the_latest(copies):
    assert copy_of(copies, 2, "old.parquet").equals(expected())
    old, hub = copies[2], copies[3]
    # the files were fetched by that commit's sha, never by a branch name
    fetched = [path for method, path in hub.requests if method == "GET" and "/resolve/" in path
               and "acme/moved" in path and path.endswith(".parquet")]
    assert fetched and all(f"/resolve/{old}/" in path for path in fetched), fetched


def test_a_clean_copy_keeps_the_schema_and_drops_leaks_and_duplicates(copies):
    copy = copy_of(copies, 3, "clean.parquet")
    assert copy.schema.equals(source().schema, check_metadata=True)
    assert copy.equals(expected(drop_texts=LEAKED))


def test_files_a_readme_lists_are_copied_in_the_order_they_were_read(copies):
    read = source(LISTED, LISTED_ORDER)
    assert read.column("text").to_pylist() != TEXTS      # another order than the rows were written in
    assert copy_of(copies, 4, "listed.parquet").equals(expected(table=read))


COPY_AFTER_SCAN = """
import json, sys
from auditor import ScanSettings, scan
from auditor.dedup import dedup, write_dedup
from auditor.errors import AuditorError
result = scan("acme/typed", split="train", text="text", settings=ScanSettings(threshold=0.9, thresholds=(0.9,)))
print("scanned", flush=True)
sys.stdin.readline()                         # the test takes the files away meanwhile
try:
    write_dedup(result, dedup(result, 0.9, "first"), sys.argv[1])
    print("@@" + json.dumps({"written": True}))
except AuditorError as exc:
    print("@@" + json.dumps({"error": exc.code, "message": str(exc)}))
"""


def _copy_after_the_files_went(tmp_path, home: Path, out: Path, how: str, timeout: str = "60") -> dict:
    """Scan, then make the Hub drop the repo (``how`` "gone") or stop answering ("hangs"), then write
    the dedup copy: what the copy did."""
    hub = FakeHub(tmp_path / how)
    hub.add_repo("acme/typed", FILES)
    env = {**client_env(hub.start(), home), "AUDITOR_HUB_TIMEOUT": timeout}
    try:
        proc = subprocess.Popen([sys.executable, "-c", COPY_AFTER_SCAN, str(out)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
        assert proc.stdout.readline().strip() == "scanned", proc.stderr.read()[-3000:]
        if how == "gone":
            del hub.repos["acme/typed"]
        else:
            hub.hang_after_info = True
        stdout, stderr = proc.communicate("go\n", timeout=300)
    finally:
        hub.stop()
    assert proc.returncode == 0 and "@@" in stdout, stderr[-3000:]
    return json.loads(stdout.split("@@", 1)[1])


def test_files_that_cannot_be_fetched_are_a_clear_error_and_no_copy(tmp_path):
    out = tmp_path / "dedup.parquet"
    done = _copy_after_the_files_went(tmp_path, tmp_path / "hf", out, "gone")
    assert done.get("error") == "not_found", done
    # (the files' sizes are asked first: what a copy may fetch is bounded)
    assert "Cannot list the Parquet files of acme/typed at commit" in done["message"], done
    assert not out.exists() and not Path(f"{out}.manifest.json").exists()


def test_a_hub_that_stops_answering_is_the_deadline_error_and_no_copy(tmp_path):
    out = tmp_path / "dedup.parquet"
    done = _copy_after_the_files_went(tmp_path, tmp_path / "hf", out, "hangs", timeout="8")
    assert done.get("error") == "hub_unreachable", done
    assert "the Parquet files of 'acme/typed'" in done["message"], done
    assert not out.exists() and not Path(f"{out}.manifest.json").exists()


def test_files_fetched_before_are_read_from_the_cache(tmp_path):
    """A copy fetches the files into huggingface_hub's cache: a later copy of the same commit needs no hub."""
    home = tmp_path / "hf"
    hub = FakeHub(tmp_path / "first")
    hub.add_repo("acme/typed", FILES)
    first = tmp_path / "first.parquet"
    env = client_env(hub.start(), home)
    try:
        proc = subprocess.run([sys.executable, "-m", "auditor", "dedup", "acme/typed", "--split", "train", "--text",
                               "text", "--threshold", THRESHOLD, "--out", str(first), "--quiet"],
                              capture_output=True, text=True, env=env, timeout=600, cwd=str(REPO))
    finally:
        hub.stop()
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = tmp_path / "again.parquet"
    assert _copy_after_the_files_went(tmp_path, home, out, "gone") == {"written": True}
    assert pq.read_table(out).equals(pq.read_table(first)) and pq.read_table(out).equals(expected())


PATCHED_BUDGET = """
import json, sys
from auditor.io import copies
copies.COPY_FETCH_BUDGETS = float(sys.argv[2])
from auditor.cli import main
print("@@" + json.dumps(main(json.loads(sys.argv[1]))))
"""


@pytest.mark.parametrize("budgets", [0, 1])
def test_files_past_what_a_copy_may_fetch_are_not_fetched(tmp_path, budgets):
    """From the session-47 review: the copy fetched whole files, so a capped read of the first rows of
    one huge Parquet file fetched all of it onto the Space's disk. Past COPY_FETCH_BUDGETS reading
    budgets (the sizes the Hub lists) nothing is fetched and the copy is written anew, said in a note;
    within it (1 budget: 1 GiB here), the files are fetched and copied as stored."""
    hub = FakeHub(tmp_path / "hub")
    hub.add_repo("acme/typed", FILES)
    out, home = tmp_path / "dedup.parquet", tmp_path / "hf"
    argv = ["dedup", "acme/typed", "--split", "train", "--text", "text", "--threshold", THRESHOLD, "--out", str(out)]
    try:
        proc = subprocess.run([sys.executable, "-c", PATCHED_BUDGET, json.dumps(argv), str(budgets)],
                              capture_output=True, text=True, env=client_env(hub.start(), home), timeout=600,
                              cwd=str(REPO))
    finally:
        hub.stop()
    assert proc.returncode == 0 and "@@0" in proc.stdout, proc.stderr[-3000:]
    copy = pq.read_table(out)
    want = expected()
    fetched = list((home / "hub").rglob("*.parquet"))
    if budgets:
        assert copy.equals(want) and len(fetched) == 2
        assert "more than a copy may fetch" not in proc.stderr
    else:
        assert "more than a copy may fetch (0 MB" in proc.stderr and "written anew" in proc.stderr, proc.stderr
        assert not fetched
        assert not copy.schema.equals(want.schema)               # written anew: the types a Python value loses
        assert copy.column("text").to_pylist() == want.column("text").to_pylist()
