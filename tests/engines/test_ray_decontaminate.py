"""``contamination --decontaminate --engine ray``: an OUT folder holding other data is refused, copy
names and outputs inside OUT are checked before the scan."""
from __future__ import annotations

import json

import pytest

from auditor.errors import AuditorError
from definitions import contamination_reference, read_jsonl
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: the shared local Ray)


def expected_copy(raw: bytes, fields: list[str], questions: list[str], n: int) -> tuple[list[int], bytes]:
    """(dropped rows, the copy's bytes) read off the corpus's bytes by hand: a record is a line
    (split at "\\n" only, a UTF-8 BOM dropped) that is not blank; its text the fields present,
    joined by a newline; each kept line written as it was, with "\\n"."""
    text = raw.decode("utf-8").removeprefix("\ufeff")
    lines = [line for line in text.split("\n") if line.strip()]
    texts = []
    for line in lines:
        record = json.loads(line)
        parts = [record.get(f) for f in fields]
        parts = [" ".join(map(str, p)) if isinstance(p, list) else str(p) for p in parts if p is not None]
        texts.append("\n".join(parts))
    found = contamination_reference(texts, questions, n)
    dropped = sorted(set().union(*(set(rows) for rows, _, _ in found.values())))
    return dropped, "".join(line + "\n" for i, line in enumerate(lines) if i not in set(dropped)).encode()


@pytest.fixture(scope="module")
def questions(real_data):
    return [r["question"] for r in read_jsonl(real_data / "gsm8k/test.jsonl")]




def test_ray_out_folder_holding_other_data_is_refused(local_ray, real_data, questions, tmp_path):
    """From the review of --decontaminate: A former run's shard left in OUT would be read back with the
    copies (its contaminated
    records too) while the report counts only this run's: refused before the scan, and a re-run
    into the same folder (the same shards' copies, replaced) still works."""
    from auditor.distributed.decontaminate import ray_decontaminate
    train = read_jsonl(real_data / "gsm8k/train.jsonl")[:120]
    rows = [{"text": r["question"]} for r in train]
    rows[30]["text"] = questions[40]
    corpus = tmp_path / "corpus"
    (corpus / "z").mkdir(parents=True)
    (corpus / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:70]), encoding="utf-8")
    (corpus / "z" / "part-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[70:]),
                                                   encoding="utf-8")
    out = tmp_path / "clean"
    (out / "old").mkdir(parents=True)
    (out / "old" / "part-9.jsonl").write_text(json.dumps({"text": questions[41]}) + "\n", encoding="utf-8")
    (out / ".hidden.jsonl").write_text("not data\n", encoding="utf-8")
    with pytest.raises(AuditorError) as refused:
        ray_decontaminate(str(corpus), "gsm8k", str(out), corpus_text="text", quiet=True)
    assert refused.value.code == "output_path" and "old/part-9.jsonl" in refused.value.message
    assert not (out / "part-0.jsonl").exists() and not (tmp_path / "clean.dropped.json").exists()
    (out / "old" / "part-9.jsonl").unlink()
    for attempt in range(2):            # the second run replaces the first one's copies
        result = ray_decontaminate(str(corpus), "gsm8k", str(out), corpus_text="text", quiet=True)
        dropped, _ = expected_copy("".join(json.dumps(r) + "\n" for r in rows).encode(), ["text"], questions,
                                   result.contamination.n)
        assert 30 in dropped and result.dropped_rows.tolist() == dropped
        copied = [json.loads(line) for name in ("part-0.jsonl", "z/part-1.jsonl")
                  for line in (out / name).read_text(encoding="utf-8").splitlines()]
        assert copied == [r for i, r in enumerate(rows) if i not in dropped]


def test_ray_copy_names_and_outputs_inside_out_are_checked_before_the_scan(tmp_path, run_cli):
    """From the review of --decontaminate."""
    from auditor.distributed.decontaminate import ray_decontaminate
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "part.jsonl").write_text('{"text": "a b c"}\n', encoding="utf-8")
    pq.write_table(pa.table({"text": ["d e f"]}), corpus / "part.parquet")
    # No Ray session is needed to refuse it: the shards are listed before the scan starts.
    with pytest.raises(AuditorError, match="would both be copied to 'part.jsonl'"):
        ray_decontaminate(str(corpus), "gsm8k", str(tmp_path / "clean"), corpus_text="text", quiet=True,
                          address="127.0.0.1:1")
    # A manifest inside OUT would be read as one of the copies (a .json shard): refused too.
    (corpus / "part.parquet").unlink()
    (tmp_path / "clean").mkdir()
    with pytest.raises(AuditorError, match="inside the --decontaminate folder"):
        ray_decontaminate(str(corpus), "gsm8k", str(tmp_path / "clean"), corpus_text="text", quiet=True,
                          manifest=str(tmp_path / "clean" / "dropped.json"), address="127.0.0.1:1")
    assert not list((tmp_path / "clean").iterdir())
    # So are the reports and saved shard results: --out-dir OUT put summary.json and shards/*.json
    # among the copies (the run succeeded; reading OUT back read them as data).
    for option, value in (("--out-dir", "clean"), ("--json", "clean/summary.json"), ("--shard-dir", "clean/s")):
        code, _, err = run_cli("contamination", corpus, "--benchmark", "gsm8k", "--engine", "ray", "--ray-address",
                               "127.0.0.1:1", "--decontaminate", tmp_path / "clean", option, tmp_path / value,
                               "--quiet")
        assert code == 2 and f"{option} " in err and "inside the --decontaminate folder" in err, err
    assert not list((tmp_path / "clean").iterdir())
