"""What a folder or a glob holds beside its data: hidden files and folders, FIFOs, devices and
dangling links, a datasets save_to_disk folder, dataset_infos.json, mixed formats, globs with many
``**`` and link loops: each data file read once, the rest skipped or named."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import auditor
from auditor import AuditorError
from auditor.cli import main


ROWS = [
    {"question": "What is one plus one", "answer": "2", "code": "007"},
    {"question": "Name the capital of Italy", "answer": "Rome", "code": "010"},
    {"question": "How many days are in a week", "answer": "7", "code": "0"},
    {"question": "Spell the word cat, please", "answer": "c-a-t", "code": "00"},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_csv(path: Path, rows, delimiter=",") -> Path:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")
    return path


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def cli_error(capsys, argv) -> str:
    """Run the CLI; it must exit 2 with one error line and no traceback. Returns that line."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err
    return lines[0]


N = 300


@pytest.fixture(scope="module")
def gsm_train_and_test(real_data):
    def rows(rel):
        with open(real_data / rel, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.strip()]
    return rows("gsm8k/train.jsonl"), rows("gsm8k/test.jsonl")[:N]


def write_jsonl_path(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


REPO = Path(__file__).resolve().parents[2]


def _tree(root: Path) -> dict:
    """Three data files in nested folders, a hidden one, and the lines each holds."""
    files = {"top.jsonl": 3, "a/mid.jsonl": 4, "a/b/deep.jsonl": 5}
    for rel, n in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps({"text": f"{rel} record {i} words"}) + "\n" for i in range(n)),
                        encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.jsonl").write_text(json.dumps({"text": "hidden"}) + "\n", encoding="utf-8")
    return files


def test_directory_glob_and_mixed_formats(tmp_path):
    d = tmp_path / "parts"
    d.mkdir()
    write_jsonl(d / "a.jsonl", ROWS[:2])
    write_csv(d / "b.csv", ROWS[2:])
    (d / "README.txt").write_text("not data")
    (d / ".hidden.jsonl").write_text("garbage")
    table = auditor.load(str(d))
    assert table.rows == ROWS
    assert table.files == ("a.jsonl", "b.csv")
    assert table.source == "parts"
    globbed = auditor.load(str(d / "*.jsonl"))
    assert globbed.rows == ROWS[:2]
    assert auditor.load(str(d / "*.*")).rows == ROWS


def test_hidden_files_and_folders_of_a_directory_are_skipped(tmp_path):
    """From the hostile-input sweep."""
    data = tmp_path / "data"
    (data / ".ipynb_checkpoints").mkdir(parents=True)
    (data / ".git").mkdir()
    rows = [{"text": f"a real record number {i}"} for i in range(3)]
    write_jsonl_str(data / "train.jsonl", rows)
    write_jsonl_str(data / ".ipynb_checkpoints" / "train-checkpoint.jsonl", rows)   # would double every record
    write_jsonl_str(data / ".git" / "stray.jsonl", [{"text": "not data"}])
    write_jsonl_str(data / ".hidden.jsonl", [{"text": "not data"}])
    table = auditor.load(str(data))
    assert table.files == ("train.jsonl",) and table.rows == rows
    only_hidden = tmp_path / "only_hidden"
    (only_hidden / ".cache").mkdir(parents=True)
    write_jsonl_str(only_hidden / ".cache" / "x.jsonl", rows)
    with pytest.raises(AuditorError) as info:
        auditor.load(str(only_hidden))
    assert info.value.code == "not_found" and "hidden" in info.value.hint


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_a_device_and_a_dangling_link_are_named_for_what_they_are(tmp_path, capsys):
    """From the hostile-input sweep."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    line = cli_error(capsys, ["scan", str(fifo), "--quiet"])     # never opened: it would block
    assert line == "error: 'pipe.jsonl' is not a regular file (a pipe, socket or device)."
    device = tmp_path / "zeros.jsonl"
    device.symlink_to(os.devnull)
    assert "is not a regular file" in cli_error(capsys, ["scan", str(device), "--quiet"])
    dangling = tmp_path / "gone.jsonl"
    dangling.symlink_to(tmp_path / "nowhere.jsonl")
    with pytest.raises(AuditorError) as info:
        auditor.load(str(dangling))
    assert info.value.code == "not_found" and "symbolic link" in info.value.message


def test_a_save_to_disk_folder_is_refused_not_audited_as_its_metadata(gsm_train_and_test, tmp_path, run_cli):
    """From the review of real benchmark rows in curators' shapes: A folder written by datasets'
    save_to_disk: its records are in .arrow files; its
    state.json and dataset_info.json were audited as a 2-record dataset, exit 0."""
    datasets = pytest.importorskip("datasets")
    _, test = gsm_train_and_test
    folder = tmp_path / "saved"
    datasets.Dataset.from_list(test).save_to_disk(str(folder))
    assert {p.name for p in folder.iterdir()} >= {"state.json", "dataset_info.json"}
    code, out, err = run_cli("scan", folder, "--quiet")
    assert code == 2 and "save_to_disk" in err and "load_from_disk" in err and "Traceback" not in err
    with pytest.raises(AuditorError) as info:
        auditor.load(str(folder))
    assert info.value.code == "bad_format"


def test_dataset_infos_json_beside_the_data_is_not_a_record(gsm_train_and_test, tmp_path):
    """From the review of real benchmark rows in curators' shapes: A Hub snapshot: data.jsonl and the
    dataset_infos.json the datasets library wrote. The
    metadata was read as one more record (301 of 300), in a folder and in a glob, by both engines'
    listings."""
    from auditor.io.shards import list_shards
    _, test = gsm_train_and_test
    folder = tmp_path / "snapshot"
    folder.mkdir()
    write_jsonl_path(folder / "data.jsonl", test)
    (folder / "dataset_infos.json").write_text(json.dumps(
        {"default": {"features": {"question": {"dtype": "string"}}, "splits": {"train": {"num_examples": N}}}}))
    for source in (folder, folder / "*"):
        table = auditor.load(str(source))
        assert len(table.rows) == N and table.files == ("data.jsonl",)
        assert [s.name for s in list_shards(str(source))[1]] == ["data.jsonl"]
    assert len(auditor.load(str(folder / "dataset_infos.json")).rows) == 1      # named: read as asked


@pytest.mark.parametrize("pattern", ["**/*.jsonl", "**/**/*.jsonl", "**/**/**/**/**/**/**/**/*.jsonl",
                                     "a/**/*.jsonl", "**"])
def test_a_glob_reads_each_file_once(tmp_path, pattern):
    """From the round-4 review (hostile inputs)."""
    files = _tree(tmp_path)
    expected = {rel: n for rel, n in files.items() if pattern != "a/**/*.jsonl" or rel.startswith("a/")}
    table = auditor.load(str(tmp_path / pattern))
    assert len(table.rows) == sum(expected.values())
    assert sorted(r["text"] for r in table.rows) == sorted(
        f"{rel} record {i} words" for rel, n in expected.items() for i in range(n))


def test_a_link_loop_under_a_glob_ends_and_reads_each_file_once(tmp_path):
    """From the round-4 review (hostile inputs)."""
    files = _tree(tmp_path / "data")
    os.symlink("..", tmp_path / "data" / "a" / "up")            # a loop: data/a/up/a/up/...
    os.symlink(".", tmp_path / "data" / "self")
    code = ("import auditor, sys\n"
            "t = auditor.load(sys.argv[1])\n"
            "print(len(t.rows), len({r['text'] for r in t.rows}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "data" / "**" / "*.jsonl")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == [str(sum(files.values()))] * 2


def test_an_output_checked_against_a_glob_of_many_stars_is_answered(tmp_path):
    """From the round-4 review (hostile inputs): check_outputs matches the output against an input glob: a
    pattern of many "**" is answered
    (it took time exponential in their number), in a child so a regression fails, not hangs."""
    deep = tmp_path.joinpath(*[f"d{i}" for i in range(25)])
    deep.mkdir(parents=True)
    pattern = str(tmp_path / ("**/" * 20 + "*.jsonl"))
    code = ("import sys\nfrom auditor.io.outputs import check_outputs\n"
            "check_outputs([sys.argv[1]], [('--out', sys.argv[2])])\nprint('OK')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", code, pattern, str(deep / "out.parquet")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.stdout.strip() == "OK", proc.stderr[-2000:]
    proc = subprocess.run([sys.executable, "-c", code, pattern, str(deep / "out.jsonl")],
                          capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode != 0 and "matches the input pattern" in proc.stderr


def test_directory_with_mixed_formats(tmp_path):
    """From the odd-inputs review."""
    folder = tmp_path / "mixed"
    folder.mkdir()
    write_jsonl_str(folder / "a.jsonl", [{"text": "from the jsonl file here"}])
    (folder / "b.csv").write_text("text\nfrom the csv file here\n", encoding="utf-8")
    (folder / "c.json").write_text(json.dumps([{"text": "from the json file here"}]), encoding="utf-8")
    (folder / "notes.txt").write_text("not data", encoding="utf-8")
    table = auditor.load(str(folder))
    assert [r["text"] for r in table.rows] == ["from the jsonl file here", "from the csv file here",
                                              "from the json file here"]
    assert table.files == ("a.jsonl", "b.csv", "c.json")
