"""Outputs never follow a link to a file, however late it is swapped in, and a URI output is
refused instead of written into a local folder named "s3:".

The hostile review's cases: a path swapped for a symlink after the output checks and before the
write (``dedup --out`` replaced its input with the copy; ``--decontaminate`` replaced its input;
``clean --out`` truncated the ``--against`` file to 0 bytes), a ``--manifest`` symlink planted before
the run (its target overwritten), and ``scan --out-dir s3://...``, ``--json s3://...``,
``contamination --out-dir gs://...`` (also with ``--engine ray``) writing local folders, all exit 0."""
from __future__ import annotations

import hashlib
import json
import os

import pytest

from auditor import AuditorError
from auditor.io.outputs import atomic_write, retire, write_text

ROWS = [{"question": f"record {i} asks about {i % 7} apples and {i} pears today", "answer": str(i)} for i in range(60)]
ROWS += [dict(ROWS[3]), dict(ROWS[5])]


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def files(tmp_path):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:20]))
    return data, train


def test_a_link_swapped_in_while_the_file_is_written_is_refused_at_the_rename(files, tmp_path):
    data, _ = files
    before = _digest(data)
    out = tmp_path / "copy.jsonl"
    with pytest.raises(AuditorError) as caught:
        with atomic_write(out) as handle:
            handle.write("the copy\n")
            out.symlink_to(data)              # swapped in after every check, before the rename
    assert caught.value.code == "output_path" and "symbolic link" in caught.value.message
    assert _digest(data) == before and out.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []     # no temporary left


def test_a_link_swapped_in_just_before_the_rename_is_refused(files, tmp_path):
    data, _ = files
    before = _digest(data)
    out = tmp_path / "copy.jsonl"
    out.write_text("previous copy\n")

    def swap():
        out.unlink()
        out.symlink_to(data)
    with pytest.raises(AuditorError):
        with atomic_write(out, before_replace=swap) as handle:
            handle.write("the copy\n")
    assert _digest(data) == before


def test_a_link_present_when_the_write_starts_is_never_followed(files, tmp_path):
    data, _ = files
    before = _digest(data)
    link = tmp_path / "out.json"
    link.symlink_to(data)
    with pytest.raises(AuditorError):
        write_text(link, "{}")
    with pytest.raises(AuditorError):
        retire(link)                          # a manifest retired through a link removed its target
    assert _digest(data) == before and link.is_symlink()


def test_a_hard_link_of_an_input_swapped_in_is_replaced_not_written(files, tmp_path):
    data, _ = files
    before = _digest(data)
    out = tmp_path / "copy.jsonl"
    with atomic_write(out) as handle:
        handle.write("the copy\n")
        os.link(data, out)                    # the input's inode under the output's name
    assert out.read_text() == "the copy\n" and _digest(data) == before


def test_links_to_streams_are_still_written(tmp_path):
    link = tmp_path / "null.json"
    link.symlink_to(os.devnull)
    write_text(link, "{}")
    retire(link)
    assert link.is_symlink()


@pytest.mark.parametrize("command", [
    ["dedup", "{data}", "--out", "{out}"],
    ["dedup", "{data}", "--out", "{tmp}/fresh.jsonl", "--manifest", "{out}"],
    ["clean", "{data}", "--against", "{train}", "--out", "{out}"],
    ["contamination", "{train}", "--benchmark", "{data}", "--decontaminate", "{out}", "--text", "question",
     "--benchmark-text", "question", "--ngram", "5"],
    ["scan", "{data}", "--json", "{out}"],
])
def test_cli_outputs_that_are_links_are_refused_and_every_file_kept(files, tmp_path, run_cli, command):
    data, train = files
    victim = tmp_path / "victim.txt"          # what a planted link points at: any file of the user's
    victim.write_text("precious\n")
    out = tmp_path / "out.jsonl"
    out.symlink_to(victim)
    digests = {p: _digest(p) for p in (data, train, victim)}
    args = [a.format(data=data, train=train, out=out, tmp=tmp_path) for a in command]
    code, _, err = run_cli(*args, "--quiet")
    assert code == 2 and "symbolic link" in err and "Traceback" not in err, err
    assert {p: _digest(p) for p in digests} == digests and out.is_symlink()


@pytest.mark.parametrize("command", [
    ["scan", "{data}", "--out-dir", "s3://bucket/audit"],
    ["scan", "{data}", "--json", "s3://bucket/summary.json"],
    ["leak", "{train}", "{data}", "--evidence", "s3://bucket/evidence.csv"],
    ["contamination", "{train}", "--benchmark", "gsm8k", "--out-dir", "gs://bucket/report"],
    ["scan", "{data}", "--out-dir", "s3://bucket/audit", "--engine", "ray"],
    ["contamination", "{train}", "--benchmark", "gsm8k", "--out-dir", "gs://bucket/report", "--engine", "ray"],
    ["leak", "{train}", "{data}", "--engine", "ray", "--shard-dir", "s3://bucket/shards"],
    ["dedup", "{data}", "--out", "s3://bucket/copy.jsonl"],
    ["scan", "{data}", "--json", "file:///tmp/summary.json"],
])
@pytest.mark.slow
def test_uri_outputs_are_refused_not_written_into_local_folders(files, tmp_path, run_cli, command):
    data, train = files
    args = [a.format(data=data, train=train) for a in command]
    code, _, err = run_cli(*args, "--quiet", cwd=tmp_path)
    assert code == 2 and "URI" in err and "Traceback" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.jsonl", "train.jsonl"]     # no "s3:" folder
