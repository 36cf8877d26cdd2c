"""A very long value given on the command line (a dataset id, a path, a split or field name) is
echoed in the error by its start and end, the number of characters left out said between them,
not whole: the error stays a few lines whatever was typed.

From the round-8 hostile review: an ``example:`` name of 100 KB came back whole in the error (100 KB
on stderr), as did long paths, splits, configs, field names and benchmark names."""
from __future__ import annotations

import os

import pytest

from auditor import load
from auditor.errors import AuditorError

GSM8K_TEST = os.path.join(os.path.dirname(__file__), "..", "..", "auditor", "examples", "gsm8k", "main",
                          "test.jsonl.gz")
LONG = "q" * 100_000
MID = "r" * 5_000

CASES = [
    ["scan", f"example:{LONG}"],
    ["scan", f"./{LONG[:4000]}.jsonl"],
    ["scan", f"some-user/{MID}"],
    ["scan", GSM8K_TEST, "--split", MID],
    ["scan", GSM8K_TEST, "--text", MID],
    ["scan", "example:gsm8k", "--config", MID],
    ["contamination", GSM8K_TEST, "--benchmark", MID],
    ["dedup", GSM8K_TEST, "--out", "d.jsonl", "--review", MID],
]


@pytest.mark.parametrize("argv", CASES, ids=[" ".join(a[:1] + [a[-2][:8]]) for a in CASES])
def test_a_long_value_is_shortened_in_the_error(tmp_path, run_cli, argv):
    rc, stdout, err = run_cli(*argv, "--quiet", cwd=tmp_path, env={"HF_HUB_OFFLINE": "1"})
    assert rc == 2 and "Traceback" not in err, err[:2000]
    assert len(err) < 1500, err[:2000]
    assert "characters]…" in err, err


def test_the_library_error_says_how_much_it_left_out():
    with pytest.raises(AuditorError) as caught:
        load(f"example:{LONG}")
    message = caught.value.message
    # the name is repr'd: 100,002 characters with its quotes, 120 + 40 of them shown
    assert f"'{'q' * 119}…[99,842 characters]…{'q' * 39}'" in message, message[:400]
    assert len(message) < 400 and len(str(caught.value)) < 600


def test_short_values_are_echoed_whole():
    with pytest.raises(AuditorError) as caught:
        load("example:" + "s" * 150)
    assert "'" + "s" * 150 + "'" in caught.value.message


def test_a_message_listing_many_values_is_bounded_as_a_whole():
    """Each of 5,000 values under the per-value limit still made a million-character message; the
    whole is cut to its start and end too, the count left out exact. From a review of this change."""
    listed = "Fields: " + ", ".join(repr(f"f{i:04d}" + "x" * 190) for i in range(5_000))
    error = AuditorError("bad_format", listed, listed)
    for text in (error.message, error.hint):
        assert len(text) <= 4_000
        head, left_out, tail = text.partition("…[")[0], text.split("…[")[1].split(" characters]…")[0], \
            text.rsplit("]…", 1)[1]
        assert listed.startswith(head) and listed.endswith(tail)
        assert len(head) + int(left_out.replace(",", "")) + len(tail) == len(listed)
