"""The app's named endpoints leak_json and dedup_file, driven through gradio_client against a
real server (tests/app_server.py), compared with the CLI and with an independent reference."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from gradio_client import handle_file

import ground_truth
import real_data

pytest_plugins = ["app_server"]


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def read_jsonl(path) -> list:
    return [json.loads(line) for line in Path(path).read_text(encoding="utf-8").split("\n") if line.strip()]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """a.jsonl: 400 GSM8K train records; b.jsonl: 150 test records and 25 copied from a.jsonl."""
    folder = tmp_path_factory.mktemp("leak")
    train, test = real_data.rows("gsm8k/train.jsonl"), real_data.rows("gsm8k/test.jsonl")
    return (write_jsonl(folder / "a.jsonl", train[:400]),
            write_jsonl(folder / "b.jsonl", test[:150] + train[:25] + [dict(train[30], answer="a new answer")]))


def cli_leak(run_cli, *args, cwd=None) -> dict:
    code, out, err = run_cli("leak", *args, "--json", "-", "--quiet", cwd=cwd)
    assert code == 0, err
    return json.loads(out)


def test_leak_json_two_uploaded_files_equals_the_cli(client, run_cli, files):
    a, b = files
    got = client.predict("", "", "", handle_file(str(a)), "", "", "", handle_file(str(b)), "question", "answer",
                         0.7, api_name="/leak_json")
    expected = cli_leak(run_cli, a.name, b.name, "--text", "question", "--answer", "answer", cwd=a.parent)
    assert got == expected
    assert got["identical_text"]["records"] == 26 and got["b"]["records"] == 176


def test_leak_json_bundled_ids_equals_the_cli(client, run_cli):
    got = client.predict("example:mbpp", "full", "test", None, "example:mbpp", "sanitized", "test", None, "", "",
                         0.6, api_name="/leak_json")
    expected = cli_leak(run_cli, "example:mbpp", "example:mbpp", "--config-a", "full", "--split-a", "test",
                        "--config-b", "sanitized", "--split-b", "test", "--threshold", "0.6")
    assert got == expected and got["any_leak"]["records"] > 0


@pytest.mark.parametrize("same", ["file", "id"])
def test_leak_json_refuses_a_source_compared_with_itself(client, files, tmp_path, same):
    a, _ = files
    if same == "file":   # the same bytes under another name are the same data
        copy = tmp_path / "a_copy.jsonl"
        copy.write_bytes(a.read_bytes())
        args = ("", "", "", handle_file(str(a)), "", "", "", handle_file(str(copy)))
    else:
        args = ("example:gsm8k", "main", "test", None, "example:gsm8k", "main", "test", None)
    with pytest.raises(Exception) as info:
        client.predict(*args, "", "", 0.7, api_name="/leak_json")
    assert "same" in str(info.value) and "Traceback" not in str(info.value)


def test_dedup_file_keeps_one_record_per_cluster_unchanged(client, tmp_path):
    rows = real_data.rows("gsm8k/train.jsonl")[:3000]
    rows += [dict(rows[5]), dict(rows[9], answer="another answer")]      # two more cluster members
    path = write_jsonl(tmp_path / "subset.jsonl", rows)
    out, manifest = client.predict("", "", "", handle_file(str(path)), "question", "answer", 0.4, "first",
                                   api_name="/dedup_file")
    assert Path(out).name.endswith(".jsonl")
    kept = read_jsonl(out)
    clusters = ground_truth.reference([r["question"] for r in rows]).clusters(0.4)
    in_clusters = sum(len(c) for c in clusters)
    assert len(kept) == len(rows) - in_clusters + len(clusters)
    dropped = {m for c in clusters for m in c if m != min(c)}            # "first": the lowest row is kept
    assert kept == [r for i, r in enumerate(rows) if i not in dropped]   # same fields, same values, in order
    doc = json.loads(Path(manifest).read_text(encoding="utf-8"))
    assert {d["row"] for d in doc["dropped_rows"]} == dropped
    assert all(d["kept_row"] == min(c) for c in clusters for d in doc["dropped_rows"] if d["row"] in c)


def test_dedup_file_writes_the_inputs_format(client, tmp_path):
    rows = real_data.rows("gsm8k/test.jsonl")[:300] + real_data.rows("gsm8k/test.jsonl")[:3]
    path = tmp_path / "small.csv"
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["question", "answer"])
        writer.writeheader()
        writer.writerows(rows)
    out, _ = client.predict("", "", "", handle_file(str(path)), "", "", 0.9, "longest", api_name="/dedup_file")
    assert Path(out).name.endswith(".csv")
    with open(out, encoding="utf-8", newline="") as fh:
        kept = list(csv.DictReader(fh))
    assert kept == rows[:300]        # the three copies at the end dropped, every other record as it was
