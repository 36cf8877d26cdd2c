"""The overlap matrix between several datasets, its diagonal the internal duplicates."""
import json

from auditor.matrix import overlap_matrix


def test_overlap_matrix(real_data):
    result = overlap_matrix([f"gsm8k:train={real_data / 'gsm8k/train.jsonl'}",
                             f"gsm8k:test={real_data / 'gsm8k/test.jsonl'}",
                             f"socratic:test={real_data / 'gsm8k/test_socratic.jsonl'}"], near=True)
    s = result.summary()
    split = s["split_matrix"]
    assert split["gsm8k/test"]["socratic/test"] == {"count": 1319, "fraction": 1.0}
    assert split["gsm8k/train"]["gsm8k/test"]["count"] == 0
    assert s["dataset_matrix"]["socratic"]["gsm8k"]["count"] == 1319
    assert s["dataset_matrix"]["gsm8k"]["gsm8k"]["count"] == 0     # train and test share nothing
    assert s["near"]["split_matrix"]["gsm8k/test"]["socratic/test"]["count"] == 1319
    assert [row["records"] for row in s["comparison"]] == [7473, 1319, 1319]
    assert s["comparison"][0]["near_clusters"] == 1


def test_matrix_diagonal_counts_internal_duplicates(tmp_path):
    a = tmp_path / "a.jsonl"
    a.write_text("\n".join(json.dumps({"text": t}) for t in ["x y z", "x  Y z", "p q r", "s t u"]) + "\n")
    b = tmp_path / "b.jsonl"
    b.write_text("\n".join(json.dumps({"text": t}) for t in ["p q r", "new one here"]) + "\n")
    s = overlap_matrix([f"d:train={a}", f"d:test={b}"], compare=False).summary()
    assert s["split_matrix"]["d/train"]["d/train"]["count"] == 2
    assert s["split_matrix"]["d/test"]["d/train"]["count"] == 1
    assert s["dataset_matrix"]["d"]["d"]["count"] == 2     # "p q r" in both splits
