"""A run's outputs held as one set (``io.outputs.written_together``) take their places together: a
folder put since the checks at the name of a later one (here the manifest's) refuses the whole set,
so the copy written first does not go in place alone beside the previous manifest. From a review of
the round-8 changes: the names were looked at one rename at a time."""
from __future__ import annotations

import pytest

from auditor.errors import AuditorError
from auditor.io.outputs import atomic_write, written_together


def test_a_folder_at_a_later_name_leaves_no_output_in_place(tmp_path):
    copy, manifest = tmp_path / "train.dedup.jsonl", tmp_path / "train.dedup.jsonl.manifest.json"
    copy.write_text("old copy\n")
    manifest.write_text("old manifest\n")
    with pytest.raises(AuditorError) as caught:
        with written_together([copy, manifest]):
            with atomic_write(copy) as fh:
                fh.write("new copy\n")
            with atomic_write(manifest) as fh:
                fh.write("new manifest\n")
            manifest.unlink()
            manifest.mkdir()             # put there after the checks, before the set goes in place
    assert "manifest" in caught.value.message
    assert copy.read_text() == "old copy\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.dedup.jsonl", "train.dedup.jsonl.manifest.json"]
