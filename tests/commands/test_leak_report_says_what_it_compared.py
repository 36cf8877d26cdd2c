"""The leak report's wording, from a review on real data (MBPP full against MBPP sanitized): a
sampled pair is shown by its text match, never as an answer-only match when its question is in A;
figures that could not be compared say so instead of reading 0; the shared groups listed say when
they are cut, in numeric order."""
import json

from auditor.leakage import leak
from definitions import contained_hits, near_hits, norm_default, read_jsonl


def _mbpp_leak(real_data, threshold=0.7):
    return leak(str(real_data / "mbpp/mbpp.jsonl"), str(real_data / "mbpp/sanitized-mbpp.jsonl"), text="text",
                answer="code", group="task_id", text_b="prompt", answer_b="code", group_b="task_id",
                threshold=threshold)


def test_a_sampled_pair_whose_text_is_in_a_is_never_shown_as_an_answer_only_match(real_data):
    """Review: MBPP sanitized rows 4, 30 and 41 are near duplicates of an A question with the same
    code, yet the sample showed them as ``identical_answer``, which the report says never fails."""
    texts_a = [r["text"] for r in read_jsonl(real_data / "mbpp/mbpp.jsonl")]
    texts_b = [r["prompt"] for r in read_jsonl(real_data / "mbpp/sanitized-mbpp.jsonl")]
    for threshold in (0.7, 0.9):
        sample = _mbpp_leak(real_data, threshold).summary()["pairs_sample"]
        identical = {norm_default(t) for t in texts_a}
        found = ({j for j, t in enumerate(texts_b) if norm_default(t) in identical}
                 | near_hits(texts_a, texts_b, threshold) | set(contained_hits(texts_a, texts_b, threshold)))
        answer_shown = {p["b"] for p in sample if p["match"] == "identical_answer"}
        text_shown = {p["b"] for p in sample if p["match"] != "identical_answer"}
        assert answer_shown and text_shown
        assert not answer_shown & found, (threshold, sorted(answer_shown & found))
        assert text_shown <= found


def test_shared_groups_are_listed_in_numeric_order_and_say_when_they_are_cut(real_data):
    result = _mbpp_leak(real_data)
    ids_a = {str(r["task_id"]) for r in read_jsonl(real_data / "mbpp/mbpp.jsonl")}
    ids_b = {str(r["task_id"]) for r in read_jsonl(real_data / "mbpp/sanitized-mbpp.jsonl")}
    shared = sorted(ids_a & ids_b, key=int)
    s = result.summary()["shared_groups"]
    assert s["count"] == len(shared) == 427
    assert s["values"] == shared[:100]
    line = next(x for x in result.markdown().splitlines() if x.startswith("Shared groups: "))
    assert line == ("Shared groups: " + ", ".join(shared[:30])
                    + " … (the first 30 of 427; summary.json lists 100)")


def test_answers_and_groups_a_side_lacks_are_said_not_compared(tmp_path):
    """Review: with no answer or group field in A, the table printed "identical answer 0 (0.00%)"
    and "0 shared values", as if they had been compared."""
    a = tmp_path / "a.jsonl"
    a.write_text("".join(json.dumps({"text": f"what is the capital city of country number {i}"}) + "\n"
                         for i in range(30)), encoding="utf-8")
    b = tmp_path / "b.jsonl"
    b.write_text("".join(json.dumps({"question": f"what is the capital city of country number {i}",
                                     "answer": str(i), "subject": "geo"}) + "\n" for i in range(5)),
                 encoding="utf-8")
    report = leak(str(a), str(b), text="text", text_b="question", answer_b="answer", group_b="subject").markdown()
    rows = {line.split(" | ")[0].lstrip("| "): line for line in report.splitlines() if line.startswith("| ")}
    assert rows["identical text"].endswith("| 5 | 100.00% |")
    only_answer = "of which a shared answer only (the text not identical, near or inside an A text)"
    for label in ("identical answer", only_answer):
        assert rows[label].endswith("| not compared: no answer field in A | – |"), rows[label]
    assert next(v for k, v in rows.items() if k.startswith("identical text AND answer")).endswith(
        "| not compared: no answer field in A | – |")
    assert rows["group value also in A (subject)"].endswith("| not compared: no group field in A | – |")
