"""dedup writes its copy uncompressed: an --out named .gz (or .bz2, .zst ...) is refused before
the scan, naming the name to use. It was written as the input's format, uncompressed, under the
.gz name: a JSONL input's copy named out.csv.gz held JSON Lines, and no gzip reader, this tool's
included, read any such copy back."""
from __future__ import annotations

import json

import pytest

import auditor
import real_data
from auditor import AuditorError
from auditor.cli import main
from auditor.dedup import dedup, write_dedup


def _source(tmp_path):
    rows = real_data.rows("gsm8k/test.jsonl")[:60]
    rows = rows + rows[:10]                                     # 10 exact duplicates
    path = tmp_path / "gsm8k.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ["kept.jsonl.gz", "kept.csv.gz", "kept.parquet.zst", "kept.bz2"])
def test_a_compressed_output_name_is_refused_before_the_scan(tmp_path, capsys, monkeypatch, name):
    """From the round-6 hostile review."""
    source = _source(tmp_path)
    monkeypatch.setattr(auditor.engines, "scan", lambda *a, **k: pytest.fail("scanned before refusing"))
    assert main(["dedup", str(source), "--out", str(tmp_path / name), "--quiet"]) == 2
    err = capsys.readouterr().err
    codec = "." + name.rsplit(".", 1)[1]
    assert f"error: Cannot write the deduplicated data as {name!r}: it is written uncompressed" in err
    assert f"Name it without {codec} (e.g. {name[:-len(codec)]})" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gsm8k.jsonl"]


def test_the_library_refuses_it_too_and_an_uncompressed_name_reads_back(tmp_path):
    """From the round-6 hostile review: write_dedup the same; kept.jsonl holds the 60 distinct rows."""
    source = _source(tmp_path)
    result = auditor.scan(str(source))
    kept = dedup(result, 0.7)
    with pytest.raises(AuditorError, match="it is written uncompressed"):
        write_dedup(result, kept, tmp_path / "kept.jsonl.gz")
    write_dedup(result, kept, tmp_path / "kept.jsonl")
    assert list(auditor.load(str(tmp_path / "kept.jsonl")).rows) == real_data.rows("gsm8k/test.jsonl")[:60]
