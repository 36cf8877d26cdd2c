"""Exact duplicates under each normaliser (default, code, SQL-aware comments and strings) and
the answer normaliser's automatic choice."""
from __future__ import annotations

import json

import pytest

import auditor
from auditor import ScanSettings
from auditor.normalize import code as code_normalizer


def write_jsonl_str(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def groups_of(dup) -> list:
    """The duplicate groups of a small file, as sorted row lists (all fit in the examples)."""
    assert dup.groups <= 5, "too many groups to list"
    return sorted(sorted(e) for e in dup.examples)


EXACT_ROWS = [
    {"question": "Hello World", "answer": "SELECT a FROM t -- first"},            # 0
    {"question": "hello   world", "answer": "SELECT a FROM t"},                    # 1
    {"question": "Hello World", "answer": "select a from t"},                      # 2
    {"question": "Other", "answer": "x = '#not a comment'  # real comment"},       # 3
    {"question": "other", "answer": "x = '#not a comment'"},                       # 4
    {"question": "Other ", "answer": "x = '#different'"},                          # 5
    {"question": "", "answer": ""},                                                # 6
    {"question": "unique", "answer": "SELECT a\nFROM   t"},                        # 7
    {"answer": "SELECT a FROM t", "question": "HELLO WORLD"},                      # 8
    {"question": "Case matters", "answer": "X = '#not a comment'"},                # 9
]


@pytest.fixture(scope="module")
def exact_file(tmp_path_factory):
    return write_jsonl_str(tmp_path_factory.mktemp("exact") / "exact.jsonl", EXACT_ROWS)


@pytest.mark.parametrize("normalizer, groups", [
    ("exact", [[0, 2]]),                               # "Other " != "Other", case differs elsewhere
    ("default", [[0, 1, 2, 8], [3, 4, 5]]),            # case and whitespace folded
    ("code", [[0, 2], [3, 5]]),                        # whitespace folded, case kept
])
def test_text_duplicates_by_normalizer(exact_file, normalizer, groups):
    result = auditor.scan(exact_file, text="question", answer="answer",
                          settings=ScanSettings(normalizer=normalizer))
    dup = result.exact["text"]
    assert dup.normalizer == normalizer
    assert groups_of(dup) == groups
    assert dup.groups == len(groups)
    assert dup.records == sum(map(len, groups))
    assert dup.redundant == dup.records - dup.groups
    assert dup.examples[0] == max(groups, key=len)             # largest group first
    assert result.summary()["exact_duplicates"]["text"]["records"] == dup.records


@pytest.mark.parametrize("normalizer, groups", [
    ("exact", [[1, 8]]),
    # lowercase + whitespace: the commented SQL (0) differs; the two Python lines 4 and 9 meet
    ("default", [[1, 2, 7, 8], [4, 9]]),
    # comments stripped ('#' inside a string kept), SQL case-insensitive, Python case kept
    ("code", [[0, 1, 2, 7, 8], [3, 4]]),
])
def test_answer_duplicates_by_normalizer(exact_file, normalizer, groups):
    result = auditor.scan(exact_file, text="question", answer="answer",
                          settings=ScanSettings(answer_normalizer=normalizer))
    dup = result.exact["answer"]
    assert result.answer_normalizer == normalizer
    assert groups_of(dup) == groups
    assert (dup.groups, dup.records) == (len(groups), sum(map(len, groups)))


def test_answer_normalizer_auto_picks_code_and_text_and_answer(exact_file):
    result = auditor.scan(exact_file, text="question", answer="answer")
    assert result.answer_normalizer == "code"               # most answers are SQL or code
    s = result.summary()
    assert s["settings"]["answer_normalizer"] == "code"
    # text under default x answer under code
    assert groups_of(result.exact["text_and_answer"]) == [[0, 1, 2, 8], [3, 4]]
    assert s["exact_duplicates"]["text_and_answer"]["records"] == 6
    assert s["exact_duplicates"]["text_and_answer"]["redundant"] == 4
    # whole records: canonical JSON (sorted keys) under the default normaliser
    assert groups_of(result.exact["record"]) == [[1, 2, 8]]
    assert result.exact_by_normalizer["record"]["exact"].groups == 0
    # the blank row 6 is degenerate, never a duplicate
    assert all(6 not in g for dup in result.exact.values() for g in dup.examples)
    assert s["degenerate"]["records"] == 1
    assert s["degenerate"]["by_role"] == {"text": 1, "answer": 1}


def test_prose_answers_use_default_normalizer(tmp_path):
    rows = [{"q": "one", "a": "The Answer is 4."}, {"q": "two", "a": "the answer   is 4."},
            {"q": "three", "a": "Something else entirely."}]
    result = auditor.scan(write_jsonl_str(tmp_path / "p.jsonl", rows), text="q", answer="a")
    assert result.answer_normalizer == "default"
    assert groups_of(result.exact["answer"]) == [[0, 1]]


def test_code_normalizer_on_comments_and_strings():
    assert code_normalizer('x = "a # b"  # c') == 'x = "a # b"'
    assert code_normalizer("x = '#keep'\n# drop\ny = 2") == "x = '#keep' y = 2"
    assert code_normalizer("SELECT name FROM t WHERE c = '--x' -- drop") == \
        code_normalizer("select name from t where c = '--x'")
    assert "'--x'" in code_normalizer("SELECT name FROM t WHERE c = '--x' -- drop")
    assert code_normalizer("x = y--z") == "x = y--z"                  # not SQL: `--` is code
    assert code_normalizer("int a; // note\n/* block */ int b;") == "int a; int b;"
    assert code_normalizer("#include <stdio.h>\nint x;") == "#include <stdio.h> int x;"
    assert code_normalizer("Foo = 1") != code_normalizer("foo = 1")   # case kept in code


def test_python_comment_starting_with_if_is_stripped():
    """A Python comment that begins with an English word like 'if' or 'else' is still a comment.

    The C-preprocessor guard (`^\\s*#\\s*(include|define|if|...)`) fires on `# if x is negative`,
    and then every `#` comment of the value is kept."""
    with_comment = "def f(x):\n    # if x is negative, flip it\n    return abs(x)"
    without = "def f(x):\n    return abs(x)"
    assert code_normalizer(with_comment) == code_normalizer(without)
