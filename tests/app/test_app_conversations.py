"""Conversation uploads in the Space: read as their turns, shown as text, a shared system prompt not
making every record a duplicate."""
from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

import ground_truth
import real_data
from browser_support import XSS, open_app, open_tab, status, upload_and_run, wait_audited, write_jsonl

pytest_plugins = ["app_server", "browser_support"]
pytestmark = pytest.mark.browser
THRESHOLD = 0.7             # the page's default


def assert_inert(pg):
    time.sleep(0.3)
    assert pg.evaluate("window.__xss_hits.slice()") == []
    assert pg.locator("img[src='x']").count() == 0


def conversations(shape: str) -> tuple[list, int]:
    """GSM8K question/answer pairs as conversations of ``shape``; rows 1 and 2 repeat row 0 with its last
    words added (a near-duplicate cluster), and row 5 too with markup before it."""
    train = real_data.rows("gsm8k/train.jsonl")[:20]
    qa = [(r["question"], r["answer"]) for r in train]
    qa[1] = (qa[0][0] + " Please.", qa[0][1])
    qa[2] = (qa[0][0] + " Thanks.", qa[0][1])
    qa[5] = (XSS + qa[0][0], qa[0][1])          # in the cluster too
    out = []
    for q, a in qa:
        if shape == "openai":
            out.append({"id": f"conv-{len(out)}", "messages": [{"role": "system", "content": "You are helpful."},
                                                               {"role": "user", "content": q},
                                                               {"role": "assistant", "content": a}]})
        elif shape == "sharegpt":
            out.append({"id": f"conv-{len(out)}", "conversations": [{"from": "human", "value": q},
                                                                    {"from": "gpt", "value": a}]})
        else:
            out.append({"id": f"conv-{len(out)}", "messages": [
                {"role": "user", "content": [{"type": "text", "text": q}]},
                {"role": "assistant", "content": [{"type": "text", "text": a}]}]})
    return out, len(out)


@pytest.mark.parametrize("shape, role", [("openai", "messages[role=user].content"),
                                         ("sharegpt", "conversations[from=human].value"),
                                         ("parts", "messages[role=user].content.text")])
@pytest.mark.slow
def test_conversation_upload_is_read_as_its_turns_and_shown_as_text(page, app_url, tmp_path, shape, role):
    """From a demanding curator's review of the Space."""
    rows, n = conversations(shape)
    path = write_jsonl(tmp_path / f"chat_{shape}.jsonl", rows)
    open_app(page, app_url)
    page.locator("input[type=file]:has(+ #upload)").set_input_files(str(path))
    expect(status(page)).to_contain_text("Fields of")
    expect(page.locator("#text input")).to_have_value(role)
    page.locator("#run").click()
    wait_audited(page, f"{n}", path.name)
    question = real_data.rows("gsm8k/train.jsonl")[0]["question"]
    open_tab(page, "Near-duplicate pairs")
    expect(page.locator("#pairs-table")).to_contain_text(question[:30])
    page.locator("#pair-next").click()
    view = page.locator("#pair-view")
    expect(view).to_contain_text(question[:60])
    for raw in ("'role'", '"role"', "'from'", "'type'", "[{"):
        expect(view).not_to_contain_text(raw)
    open_tab(page, "Clusters")
    clusters = page.locator("#clusters-table")
    expect(clusters).to_contain_text(question[:30])
    expect(clusters).not_to_contain_text("[{")
    # The turn with markup: in the pair table as text, never an element.
    open_tab(page, "Near-duplicate pairs")
    assert_inert(page)


def test_a_system_prompt_shared_by_every_conversation_does_not_make_them_duplicates(page, app_url, tmp_path):
    """From a demanding curator's review of the Space: OpenAI-format data repeats one system prompt in every
    record: read as part of each record's
    text, it alone makes unrelated tasks near duplicates (MBPP's 200 first tasks, one cluster)."""
    tasks = real_data.rows("mbpp/mbpp.jsonl")[:200]
    system = ("You are a careful Python programming assistant. Answer with a single self-contained function, "
              "follow the naming in the task exactly, do not print anything, do not read input, and keep the "
              "code short, readable and correct. Explain nothing unless asked.")
    rows = [{"id": f"c{i}", "messages": [{"role": "system", "content": system}, {"role": "user", "content": r["text"]},
                                         {"role": "assistant", "content": "ok"}]} for i, r in enumerate(tasks)]
    # The conversations' questions (the user turns, the guessed text), the duplicates a curator looks for.
    ref = ground_truth.reference([r["text"] for r in tasks])
    expected_pairs = ref.pair_count(THRESHOLD)
    path = write_jsonl(tmp_path / "chat_system.jsonl", rows)
    open_app(page, app_url)
    upload_and_run(page, path, len(rows))
    open_tab(page, "Threshold curve")
    counts = page.locator("#counts")
    expect(counts).to_contain_text(f"At Jaccard ≥ {THRESHOLD:g}:")
    shown = re.search(r"([\d,]+) near-duplicate pair", counts.inner_text())
    assert shown and int(shown.group(1).replace(",", "")) == expected_pairs, (counts.inner_text(), expected_pairs)
