"""The Ray engine reads texts through the same normalisation as the local one: GSM8K questions
planted with zero-width spaces, fullwidth letters, Cyrillic homoglyphs or decomposed accents are
found by ``leak --engine ray`` (identical and near), ``contamination --engine ray`` and ``scan
--engine ray`` exactly as verbatim copies are by the local engine."""
from __future__ import annotations

import pytest

ray = pytest.importorskip("ray")

import auditor  # noqa: E402
from auditor.contamination import contamination  # noqa: E402
from auditor.distributed.contamination import ray_contamination  # noqa: E402
from auditor.distributed.leak import ray_leak  # noqa: E402
from auditor.leakage import LeakSettings, RoleNames, leak  # noqa: E402
from evasion_helpers import gsm8k_slices, planted_files  # noqa: E402
from ray_leak_helpers import local_ray  # noqa: E402,F401  (autouse: one local Ray for the module)

VARIANTS = ("zero_width_inside", "fullwidth", "cyrillic", "nfd", "joiners_and_bom")


def _found(leaked, scanned, result) -> dict:
    near = result.near_duplicates(0.7)
    return {"identical_text": sorted(b for b, m in leaked.matches.items() if m.get("identical_text")),
            "near_duplicate": sorted(b for b, m in leaked.matches.items() if m.get("near_duplicate")),
            "contamination": sorted((it["benchmark_row"], tuple(it["corpus_rows"])) for it in scanned.items),
            "scan_near": (near.pairs, near.clusters, near.records_in_clusters)}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The local engine on verbatim copies."""
    gsm8k = gsm8k_slices()
    train, test, both = planted_files(tmp_path_factory.mktemp("verbatim"), gsm8k, "verbatim")
    found = _found(leak(train, test, text="question", answer="answer"),
                   contamination(train, test, corpus_text="question", benchmark_text="question"),
                   auditor.scan(both, text="question", answer="answer"))
    assert len(found["identical_text"]) >= 30 and len(found["contamination"]) >= 30
    return gsm8k, found


@pytest.mark.slow
@pytest.mark.parametrize("name", VARIANTS)
def test_ray_engine_finds_altered_copies_as_the_local_engine_finds_verbatim_ones(tmp_path, reference, name):
    gsm8k, expected = reference
    train, test, both = planted_files(tmp_path, gsm8k, name)
    settings = LeakSettings(roles_a=RoleNames(text="question", answer="answer"))
    found = _found(ray_leak(train, test, settings=settings, quiet=True),
                   ray_contamination(train, test, corpus_text="question", benchmark_text="question", quiet=True),
                   auditor.scan(both, text="question", answer="answer", engine="ray"))
    assert found == expected, name
