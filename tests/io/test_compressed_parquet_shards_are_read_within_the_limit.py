"""A compressed Parquet shard (.parquet.gz, .parquet.xz) is decompressed whole for the Ray
engine's readers, since Parquet is read by random access: within the reading limit
(AUDITOR_MAX_BYTES) it reads the rows written, past it a clear error, never the whole stream held
first (it was read with one unbounded ``read()``: a review's note on the shard reader)."""
import gzip
import io
import lzma

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditor.errors import AuditorError
from auditor.io import budget
from auditor.io.shards import list_shards, open_shard, record_batches

COMPRESS = {".gz": gzip.compress, ".xz": lambda data: lzma.compress(data, preset=0)}


def _parquet_bytes(rows: int) -> bytes:
    sink = io.BytesIO()
    table = pa.table({"text": [f"record {i} says something of its own, number {i * 7}" for i in range(rows)]})
    pq.write_table(table, sink, compression="none")
    return sink.getvalue()


@pytest.mark.parametrize("suffix", sorted(COMPRESS))
def test_a_compressed_parquet_shard_reads_its_rows_within_the_limit_and_is_refused_past_it(tmp_path, monkeypatch,
                                                                                            suffix):
    data = _parquet_bytes(20_000)
    (tmp_path / f"part-0.parquet{suffix}").write_bytes(COMPRESS[suffix](data))
    filesystem, shards = list_shards(str(tmp_path))
    assert [s.format for s in shards] == ["parquet"]

    monkeypatch.setattr(budget, "MAX_BYTES", len(data))            # exactly what it holds: read
    with open_shard(filesystem, shards[0]) as f:
        texts = [r["text"] for batch in record_batches(f, shards[0]) for r in batch]
    assert texts == pq.read_table(io.BytesIO(data)).column("text").to_pylist()

    monkeypatch.setattr(budget, "MAX_BYTES", len(data) - 1)        # one byte less: refused, by name
    with pytest.raises(AuditorError) as caught:
        open_shard(filesystem, shards[0])
    assert caught.value.code == "too_large"
    assert f"part-0.parquet{suffix}" in str(caught.value) and "AUDITOR_MAX_BYTES" in str(caught.value)
