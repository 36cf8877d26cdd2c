"""The app's API endpoint, driven through gradio_client against a real server."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from gradio_client import Client

pytest_plugins = ["app_server"]


@pytest.mark.slow
def test_audit_json_gsm8k_train(client):
    summary = client.predict("example:gsm8k", "main", "train", "question", "answer", "", 0.7, api_name="/audit_json")
    assert isinstance(summary, dict)
    assert summary["kind"] == "scan"
    assert summary["input"]["records"] == 7473
    assert summary["near_duplicates"]["threshold"] == 0.7
    assert summary["near_duplicates"]["pairs"] == 1
    assert [p["clusters"] for p in summary["curve"]] == [1, 1, 1, 3, 10, 27, 41]


def test_audit_json_wrong_split_is_a_clear_error(client):
    with pytest.raises(Exception) as info:
        client.predict("example:gsm8k", "main", "dev", "question", "answer", "", 0.7, api_name="/audit_json")
    message = str(info.value)
    assert "'dev'" in message and "split" in message
    assert "Available splits" in message and "train" in message
    assert "Traceback" not in message


@pytest.mark.parametrize("dataset", ["./auditor/examples/README.md", "app.py", "../etc", "/etc/passwd"])
def test_audit_json_refuses_server_paths(client, dataset):
    with pytest.raises(Exception) as info:
        client.predict(dataset, "", "", "", "", "", 0.7, api_name="/audit_json")
    assert "not a Hugging Face dataset id" in str(info.value)


@pytest.mark.parametrize("existing, missing", [("auditor", "auditorzz"), ("auditor/examples", "auditor/nothere"),
                                               ("app.py", "nothere.py"), ("tests/data", "tests/nodata")])
def test_existing_and_missing_server_paths_get_the_same_answer(client, existing, missing):
    # No existence oracle: whether a path exists on the server never changes the answer (a
    # hub-like id is asked of the hub only; anything else is refused from its text alone).
    answers = []
    for dataset in (existing, missing):
        with pytest.raises(Exception) as info:
            client.predict(dataset, "", "", "", "", "", 0.7, api_name="/audit_json")
        answers.append(str(info.value).replace(dataset, "NAME"))
    assert answers[0] == answers[1]
    assert "Traceback" not in answers[0]


def test_audit_json_concurrent_calls_get_their_own_results(app_url):
    jobs = [("example:gsm8k", "main", "train", 7473), ("example:gsm8k", "main", "test", 1319),
            ("example:humaneval", "", "test", 164), ("example:mbpp", "full", "train", 374),
            ("example:mbpp", "full", "test", 500), ("example:gsm8k", "socratic", "test", 1319)]

    def call(job):
        dataset, config, split, _ = job
        summary = Client(app_url, verbose=False).predict(dataset, config, split, "", "", "", 0.7,
                                                         api_name="/audit_json")
        return summary["input"]["source"], summary["input"]["config"], summary["input"]["split"], \
            summary["input"]["records"]

    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        results = list(pool.map(call, jobs))
    for (dataset, config, split, records), got in zip(jobs, results):
        assert got[0] == dataset and got[2] == split and got[3] == records
        if config:
            assert got[1] == config


def test_audit_json_reads_a_hub_dataset(client):
    # acme/tiny lives on the fake Hub the test session starts (tests/app_server.py); no internet.
    summary = client.predict("acme/tiny", "", "test", "question", "answer", "topic", 0.7, api_name="/audit_json")
    assert summary["input"]["source"] == "acme/tiny"
    assert summary["input"]["split"] == "test"
    assert summary["input"]["records"] == 3
    assert summary["exact_duplicates"]["text"]["groups"] == 1
    assert summary["concentration"]["groups"] == 2


def test_audit_json_gated_hub_dataset_without_token_is_a_clear_error(client):
    with pytest.raises(Exception) as info:
        client.predict("acme/gated", "", "train", "", "", "", 0.7, api_name="/audit_json")
    message = str(info.value)
    assert "acme/gated" in message
    assert "Traceback" not in message


def test_audit_json_needs_only_the_dataset(client):
    summary = client.predict("example:humaneval", api_name="/audit_json")
    assert summary["input"]["config"] == "default" and summary["input"]["split"] == "test"
    assert summary["input"]["records"] == 164
    assert summary["roles"]["text"] == "prompt" and "text" in summary["roles"]["guessed"]
