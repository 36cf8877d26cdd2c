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


def test_matrix_names_the_field_it_compared_and_refuses_a_gate_over_no_text(real_data, run_cli, tmp_path):
    """From two reviews (session 52): the matrix never said which field it compared for each dataset
    (Spider's tables.jsonl was compared on db_id, a guess), and --fail-on-overlap passed (exit 0) when
    one dataset's texts were all null. Each group now names its field, whether it was guessed and its
    records without text; a gate over a dataset with no text at all is refused (exit 2), as leak's is."""
    result = overlap_matrix([f"sp:dev={real_data / 'spider/dev.jsonl'}", f"mb={real_data / 'mbpp/mbpp.jsonl'}"],
                            compare=False)
    groups = result.summary()["groups"]
    assert [(g["text"], g["text_guessed"], g["no_text"]) for g in groups] == [("question", True, 0),
                                                                              ("text", True, 0)]
    assert "Fields compared: sp/dev `question` (guessed); mb/all `text` (guessed)." in result.markdown()
    (tmp_path / "train.jsonl").write_text('{"text": "a record about apples and pears"}\n{"text": "another one"}\n')
    (tmp_path / "test.jsonl").write_text('{"text": null}\n{"text": "   "}\n')
    args = ["matrix", "-d", f"train={tmp_path / 'train.jsonl'}", "-d", f"test={tmp_path / 'test.jsonl'}",
            "--text", "text", "--quiet", "--json", "-"]
    code, out, err = run_cli(*args)
    assert code == 0, err
    assert [g["no_text"] for g in json.loads(out)["groups"]] == [0, 2]
    code, out, err = run_cli(*args, "--fail-on-overlap")
    assert code == 2 and "Traceback" not in err
    assert "None of test/all's 2 records has text" in err and "--fail-on-overlap would pass" in err
