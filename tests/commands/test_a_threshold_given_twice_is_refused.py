"""A curve threshold given twice (``--thresholds 0.5,0.5``, or ``0.5,0.50``: equal at the 6
decimals every threshold is kept at) is refused with a usage error naming the repeated value, by
the CLI (exit 2) and by the library's settings check, where it was merged without a word (a typo
for another threshold, whose curve point then went missing). A threshold equal to one of the
curve's (``--threshold 0.5 --thresholds 0.9,0.5``) is not a repeat and stays accepted.

From the round-9 review: ``auditor scan --thresholds 0.5,0.5`` exited 0 with a one-row curve."""
from __future__ import annotations

import json
import os

import pytest

import auditor
from auditor.settings import NearSettings

GSM8K_TEST = os.path.join(os.path.dirname(__file__), "..", "..", "auditor", "examples", "gsm8k", "main",
                          "test.jsonl.gz")


@pytest.mark.parametrize("given,said", [("0.5,0.5", "0.5 is given twice"),
                                        ("0.9,0.50,0.5", "0.50 and 0.5 are the same threshold"),
                                        ("0.7,0.5,0.5000001", "0.5 and 0.5000001 are the same threshold")])
def test_the_cli_refuses_a_repeated_threshold(run_cli, tmp_path, given, said):
    rc, out, err = run_cli("scan", GSM8K_TEST, "--thresholds", given, "--max-rows", "200",
                           "--out-dir", tmp_path / "rep")
    assert rc == 2, err
    assert "--thresholds" in err and said in err, err
    assert "Traceback" not in err and out == ""
    assert not (tmp_path / "rep").exists()          # refused before any work


def test_a_threshold_equal_to_a_curve_point_is_accepted(run_cli):
    rc, out, err = run_cli("scan", GSM8K_TEST, "--threshold", "0.5", "--thresholds", "0.9,0.5", "--max-rows",
                           "200", "--json", "-", "--quiet")
    assert rc == 0, err
    assert json.loads(out)["settings"]["thresholds"] == [0.9, 0.5]


@pytest.mark.parametrize("thresholds,said", [((0.5, 0.5), "0.5 is given twice"),
                                             ((0.7, 0.70000001), "0.7 and 0.70000001 are the same threshold")])
def test_the_library_refuses_a_repeated_threshold(thresholds, said):
    with pytest.raises(auditor.AuditorError) as caught:
        auditor.scan(GSM8K_TEST, settings=auditor.ScanSettings(thresholds=thresholds), max_rows=50)
    assert caught.value.code == "usage" and said in caught.value.message
    with pytest.raises(auditor.AuditorError, match=said):
        NearSettings(thresholds=thresholds).validated()


def test_the_library_keeps_distinct_thresholds_in_order():
    assert NearSettings(threshold=0.5, thresholds=(0.5, 0.9, 0.7)).validated().thresholds == (0.9, 0.7, 0.5)
