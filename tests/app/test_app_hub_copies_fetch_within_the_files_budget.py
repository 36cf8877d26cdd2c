"""From the session-47 review: the app's deduplicated Parquet file of a Hub split is made from the
repo's own Parquet files, and they were fetched into huggingface_hub's cache, where nothing removed
them: a visitor asking copies of many Hub datasets grew the Space's disk without bound. Now the
app-side copy (``handlers.build_dedup``, what the Downloads tab's button calls) fetches them into a
folder of the job's own among the download files: each file's bytes counted in AUDITOR_FILES_BYTES
before it is fetched (older downloads make room; no room, a clear refusal), the folder removed once
the copy is written, refused, failed or cancelled (its child killed), a download cut short with it.

Two datasets of the local fake Hub (tests/hub_server.py), in a fresh process with the app's
handlers. Ground truth: tests/typed_parquet.py (the files read back with pyarrow, less the texts
pandas finds duplicated) and the files' byte sizes as served."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hub_server import FakeHub, client_env
from typed_parquet import FILES, LISTED, LISTED_ORDER, LISTED_README, expected, source

REPO = Path(__file__).resolve().parents[2]
# The files budget; an older download leaves room for acme/typed's first file, not its second.
BUDGET, HEADROOM = 200_000, 20_000
TOO_SMALL = 30_000                  # past the first file of acme/typed, short of both
# acme/cut's second file (14,264 bytes) is cut short there: past the 8 KiB a file object buffers, so some reach the disk
STALLED, STALL_AT = "data/train-00001-of-00002.parquet", 12_000

COPIES = r"""
import json, os, shutil, sys, threading, time
from pathlib import Path
from huggingface_hub import constants, hf_hub_download
from auditor.io import copies
from ui import handlers, jobs, state

budget, headroom, too_small, files_of = json.loads(sys.argv[1])
kept = Path(sys.argv[2])
home = Path(os.environ["HF_HOME"])
constants.DOWNLOAD_CHUNK_SIZE = 1024     # (from 10 MB: a download cut short leaves bytes on disk, not in memory)
claims = []
claim = state._claim


def counted(folder, output, nbytes):         # (the app's own claim, its calls noted)
    old = state.FILES_DIR / "old-download"
    before = old.exists()
    try:
        claim(folder, output, nbytes)
    finally:
        claims.append({"bytes": nbytes, "old_before": before, "old_after": old.exists()})


state._claim = counted
fetch, fetched = copies.fetch_parquet, []


def noted(*args, **kwargs):                    # (the paths the copy read, and their sizes then)
    paths = fetch(*args, **kwargs)
    fetched.append([[str(path), os.path.getsize(path)] for path in paths])
    return paths


copies.fetch_parquet = noted


def on_disk() -> dict:
    "Every file in the app's download files, and the Parquet or partial files under huggingface_hub's home."
    return {"files": sorted(str(p.relative_to(state.FILES_DIR)) for p in state.FILES_DIR.rglob("*") if p.is_file()),
            "hf": sorted(str(p.relative_to(home)) for p in home.rglob("*")
                         if p.is_file() and p.suffix in (".parquet", ".incomplete"))}


class Watch(threading.Thread):
    "The files seen in a fetch folder while a copy runs (largest size each); ``cancel`` once one is cut short."
    def __init__(self, cancel=None):
        super().__init__(daemon=True)
        self.seen, self.cancel, self.done = {}, cancel, threading.Event()

    def run(self):
        while not self.done.is_set():
            try:
                for p in state.FILES_DIR.glob(state.FETCH_PREFIX + "*/**/*"):
                    if p.is_file():
                        name = "/".join(p.relative_to(state.FILES_DIR).parts[1:])    # (within its fetch folder)
                        self.seen[name] = max(p.stat().st_size, self.seen.get(name, 0))
                        if self.cancel and p.suffix == ".incomplete" and self.seen[name]:
                            self.cancel()
            except OSError:          # (removed meanwhile)
                pass
            time.sleep(0.02)


def audited(dataset) -> dict:
    view = handlers.run(dataset, "", "train", "text", "", "", [], 0.9, None, None, None, dataset, "http://x/")
    assert view["state"] is not None, view["status"]
    return view["state"]


def copy(st, slot=None, cancel=None) -> dict:
    "The app's copy of the audit ``st``; the file kept aside (the app's folder goes when this process ends)."
    watch = Watch(cancel)
    watch.start()
    n, m = len(claims), len(fetched)
    try:
        built = handlers.build_dedup(st, None, slot=slot)
        made = built.get("dl_dedup", {}).get("value")
        done = {"path": made and str(made), "status": built["status"]["value"]}
        if made:
            done["kept"] = str(shutil.copy(made, kept / f"{len(os.listdir(kept))}.parquet"))
    except jobs.JobCancelled:
        done = {"cancelled": True}
    watch.done.set()
    watch.join()
    return {**done, "claims": claims[n:], "fetched": sum(fetched[m:], []), "seen": watch.seen, "after": on_disk()}


def drop_output(done):
    shutil.rmtree(Path(done["path"]).parent, ignore_errors=True)    # (as if evicted: the copy is made again)


out, states = {}, {}
state.FILES_BYTES = budget
for name in ("acme/typed", "acme/listed"):
    states[name] = audited(name)
    out[name] = {"after_audit": on_disk()}
    if name == "acme/typed":       # an older download filling the budget but for ``headroom`` bytes
        used = sum(p.stat().st_size for p in state.FILES_DIR.rglob("*") if p.is_file())
        old = state.FILES_DIR / "old-download"
        old.mkdir()
        (old / "pairs.csv").write_bytes(b"x" * (budget - used - headroom))
        os.utime(old, (1_000, 1_000))
    out[name].update(copy(states[name]))

state.FILES_BYTES = too_small                          # room for the first file, not both
drop_output(out["acme/typed"])
out["too_small"] = copy(states["acme/typed"])
state.FILES_BYTES = budget

cut = audited("acme/cut")
queue = jobs.Jobs(slots=1)
slot = lambda: queue.slot("dedup", "visitor", "page")    # noqa: E731  (the app's job, in a child process)
os.environ["AUDITOR_HUB_TIMEOUT"] = "3"               # the cut download: the Hub's deadline
out["deadline"] = copy(cut, slot)
os.environ["AUDITOR_HUB_TIMEOUT"] = "60"
out["cancelled"] = copy(cut, slot, cancel=lambda: queue.cancel("page"))

for name in files_of["typed"]:                       # the files in huggingface_hub's cache (as the CLI leaves them)
    hf_hub_download("acme/typed", name, repo_type="dataset", revision=files_of["typed_sha"])
out["from_the_cache"] = copy(states["acme/typed"])
print("@@" + json.dumps({**out, "files_dir": str(state.FILES_DIR), "home": str(home)}))
"""


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """What the app's copies did (see COPIES), and the fake Hub (its requests, its commits)."""
    hub = FakeHub(tmp_path_factory.mktemp("hub"))
    hub.add_repo("acme/typed", FILES)
    hub.add_repo("acme/listed", LISTED, readme=LISTED_README)
    hub.add_repo("acme/cut", FILES)
    hub.stall_downloads = {f"acme/cut/{STALLED}": STALL_AT}
    home, kept = tmp_path_factory.mktemp("hf"), tmp_path_factory.mktemp("copies")
    plan = [BUDGET, HEADROOM, TOO_SMALL, {"typed": sorted(FILES), "typed_sha": hub.repos["acme/typed"]["sha"]}]
    try:
        proc = subprocess.run([sys.executable, "-c", COPIES, json.dumps(plan), str(kept)], capture_output=True,
                              text=True,
                              env=client_env(hub.start(), home, GRADIO_ANALYTICS_ENABLED="False",
                                             AUDITOR_JOB_NICE="0"),
                              timeout=600, cwd=str(REPO))
    finally:
        hub.stop()
    assert proc.returncode == 0 and "@@" in proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout.split("@@", 1)[1]), hub


def fetched_nothing_left(after: dict) -> None:
    """No fetch folder, no partial download, no Parquet file but the copies themselves, anywhere."""
    assert not [f for f in after["files"] if f.startswith("fetch-") or f.endswith(".incomplete")], after
    assert all(f.endswith(".dedup.parquet") for f in after["files"] if f.endswith(".parquet")), after
    assert after["hf"] == [], after


@pytest.mark.parametrize("name, files, table", [("acme/typed", FILES, source()),
                                                ("acme/listed", LISTED, source(LISTED, LISTED_ORDER))])
def test_a_copy_is_right_and_leaves_no_fetched_file(copies, name, files, table):
    done = copies[0][name]
    copy = pq.read_table(done["kept"])
    assert copy.schema.equals(source().schema, check_metadata=True)
    assert copy.equals(expected(table=table))
    # every file was fetched whole into a fetch folder of the job's own, its size as served claimed first ...
    folders = {Path(path).relative_to(copies[0]["files_dir"]).parts[0] for path, _ in done["fetched"]}
    assert len(folders) == 1 and folders.pop().startswith("fetch-"), done["fetched"]
    assert {path.split("/fetch-", 1)[1].split("/", 1)[1]: size for path, size in done["fetched"]} == \
        {name: len(data) for name, data in files.items()}
    assert sorted(c["bytes"] for c in done["claims"]) == sorted(len(data) for data in files.values())
    # ... and nothing of them is left: the audit's streamed read left none to reuse, the copy removed its own
    assert done["after_audit"]["hf"] == []
    fetched_nothing_left(done["after"])
    assert Path(done["path"]).name in {Path(f).name for f in done["after"]["files"]}


def test_the_files_budget_counts_the_fetch(copies):
    """The older download fitted the budget beside the first file; the second file's claim made room."""
    claims = copies[0]["acme/typed"]["claims"]
    assert [c["old_before"] for c in claims] == [True, True] and claims[-1]["old_after"] is False
    sizes = [len(FILES[name]) for name in sorted(FILES)]
    assert sizes[0] <= HEADROOM < sum(sizes) and [c["bytes"] for c in claims] == sizes


def test_the_fetch_is_of_the_commit_audited(copies):
    hub = copies[1]
    sha = hub.repos["acme/typed"]["sha"]
    got = [path for method, path in hub.requests if method == "GET" and "/resolve/" in path
           and "acme/typed" in path and path.endswith(".parquet")]
    assert got and all(f"/resolve/{sha}/" in path for path in got), got


def test_a_budget_too_small_is_a_clear_refusal_and_leaves_nothing(copies):
    done = copies[0]["too_small"]
    said = done["status"].replace("\\", "")
    assert done["path"] is None and "Could not write the deduplicated file" in said, said
    assert "No room on the server for the Parquet files this copy fetches from the Hub (30.0 KiB)" in said, said
    assert "may hold 29.3 KiB (AUDITOR_FILES_BYTES)" in said and "Traceback" not in said, said
    assert [c["bytes"] for c in done["claims"]] == [len(FILES[n]) for n in sorted(FILES)]
    fetched_nothing_left(done["after"])
    assert not [f for f in done["after"]["files"] if f.endswith(".dedup.parquet") and "typed" in f]


@pytest.mark.parametrize("how", ["deadline", "cancelled"])
def test_a_failed_fetch_leaves_no_partial_files(copies, how):
    """The second file's download is cut short (12,000 bytes, then silence): at the Hub's deadline, or
    cancelled by its visitor (the job's child killed), the partial file goes with the whole folder."""
    done = copies[0][how]
    partial = [size for name, size in done["seen"].items() if name.endswith(".incomplete")]
    assert partial and 0 < max(partial) <= STALL_AT, done["seen"]     # there was a partial file to remove
    first = sorted(FILES)[0]
    assert done["seen"].get(first) == len(FILES[first])              # and a whole one
    if how == "deadline":
        said = done["status"].replace("\\", "")
        assert done["path"] is None and "The Hub stopped answering" in said, said
    else:
        assert done.get("cancelled") is True, done
    fetched_nothing_left(done["after"])
    assert not [f for f in done["after"]["files"] if f.endswith(".dedup.parquet") and "cut" in f]


def test_files_in_huggingface_hubs_cache_are_not_fetched_again(copies):
    """Files a CLI run left in huggingface_hub's cache are read there: no fetch folder, nothing claimed."""
    done = copies[0]["from_the_cache"]
    assert pq.read_table(done["kept"]).equals(expected())
    assert done["claims"] == [] and done["seen"] == {}
    home = Path(copies[0]["home"])
    assert [Path(path).name for path, _ in done["fetched"]] == [Path(name).name for name in sorted(FILES)]
    assert all(Path(path).is_relative_to(home / "hub") for path, _ in done["fetched"]), done["fetched"]


def test_copies_fetching_at_once_share_the_budget(tmp_path, monkeypatch):
    """A second copy whose files fit the budget alone, but not beside a first copy's fetch, is told to
    come back (busy); an older download makes room; each fetch folder goes when its copy ends."""
    from auditor import AuditorError
    from ui import state
    monkeypatch.setattr(state, "FILES_DIR", tmp_path)
    monkeypatch.setattr(state, "FILES_BYTES", 10_000)
    out = state.new_folder("out")
    old = state.new_folder("old")
    (old / "pairs.csv").write_bytes(b"x" * 3_000)
    with state.copy_fetch(out) as first:
        first.claim(6_000)                       # 9,000 bytes with the older download: both kept
        assert old.exists()
        with state.copy_fetch(out) as second:
            with pytest.raises(AuditorError) as busy:
                second.claim(6_000)                  # not even were the older download gone: refused, it stays
            assert busy.value.code == "busy" and old.exists()
            assert "5.9 KiB of them held by other copies being made" in busy.value.message
            second.claim(4_000)                      # fits beside the first once the older download goes
            assert not old.exists()
        assert not second.folder.exists() and first.folder.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
