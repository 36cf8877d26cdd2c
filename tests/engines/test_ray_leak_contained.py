"""``leak --engine ray`` finds the contained matches the local engine finds (GSM8K test questions
planted inside longer GSM8K training texts, A in shards of several kinds, one and several batches
per task): the same counts, matches, containment scores, evidence and report; and the definition's
B rows (tests/definitions.py ``contained_hits``)."""
from __future__ import annotations

import json
import math

import pytest

ray = pytest.importorskip("ray")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.leakage import leak  # noqa: E402
from auditor.settings import LeakSettings, NearSettings, RoleNames  # noqa: E402
from auditor.near.contained import MIN_SHARED  # noqa: E402
from definitions import contained_hits, shingles  # noqa: E402
from ray_leak_helpers import local_ray, read  # noqa: E402,F401  (local_ray: autouse)

TEMPLATE = ("### Instruction: Solve the following grade school math word problem step by step, showing each "
            "intermediate calculation clearly, and then give the final numeric answer on its own line after "
            "four hash marks. ### Input: {} ### Response:")


@pytest.fixture(scope="module")
def planted(real_data, tmp_path_factory):
    """GSM8K train's first 3,000 questions with 24 test questions planted inside (templated, with
    their answer, after a passage), as a JSONL, a Parquet and a JSONL shard; GSM8K test's first 300."""
    train, test = read(real_data / "gsm8k/train.jsonl")[:3000], read(real_data / "gsm8k/test.jsonl")[:300]
    a = [{"question": r["question"]} for r in train]
    for k in range(24):
        q, row = test[12 * k]["question"], 40 + 120 * k
        a[row]["question"] = (TEMPLATE.format(q), f"{q}\n{test[12 * k]['answer']}",
                              f"Passage: {train[row]['question']} Question: {q}")[k % 3]
    folder = tmp_path_factory.mktemp("ray_contained") / "train"
    folder.mkdir()
    (folder / "part-0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in a[:1100]), encoding="utf-8")
    pq.write_table(pa.Table.from_pylist(a[1100:2000]), folder / "part-1.parquet")
    (folder / "part-2.jsonl").write_text("".join(json.dumps(r) + "\n" for r in a[2000:]), encoding="utf-8")
    b = folder.parent / "test.jsonl"
    b.write_text("".join(json.dumps({"question": r["question"]}) + "\n" for r in test), encoding="utf-8")
    return folder, b, [r["question"] for r in a], [r["question"] for r in test]


@pytest.mark.slow
@pytest.mark.parametrize("threshold, batch_rows", [(0.7, 50_000), (0.5, 400)])
def test_ray_contained_equals_local_and_the_definition(planted, threshold, batch_rows):
    folder, b, texts_a, texts_b = planted
    wanted = LeakSettings(near=NearSettings(threshold=threshold), roles_a=RoleNames(text="question"))
    local = leak(str(folder), str(b), settings=wanted)
    on_ray = ray_leak(str(folder), str(b), settings=wanted, quiet=True, batch_rows=batch_rows)
    summary = dict(on_ray.summary())
    summary.pop("engine")
    assert summary == local.summary()
    assert on_ray.matches == local.matches
    assert on_ray.evidence_csv() == local.evidence_csv() and on_ray.markdown() == local.markdown()
    text_rows = {r for r, m in local.matches.items() if m.get("identical_text") or m.get("near_duplicate")}
    want = {r: c for r, c in contained_hits(texts_a, texts_b, threshold).items() if r not in text_rows}
    got = {r: m["containment"] for r, m in on_ray.matches.items() if m.get("contained")}
    assert set(got) == set(want) and len(want) >= 10
    # every planted question long enough (ceil(t |S_b|) >= MIN_SHARED) is a text leak
    long_enough = {r for r in range(0, 288, 12)
                   if math.ceil(threshold * len(shingles(texts_b[r])) - 1e-9) >= MIN_SHARED}
    assert len(long_enough) >= 20 and long_enough <= set(got) | text_rows
    assert all(got[r] == pytest.approx(float(c), abs=1e-12) for r, c in want.items())
