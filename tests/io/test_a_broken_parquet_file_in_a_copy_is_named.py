"""A Parquet file that cannot be read when its rows are copied (changed or cut short since the scan
read it) is the file's error, named, exit 2, not pyarrow's traceback (an 'internal error', exit 3);
nothing is written in the copy's place. From a review of the round-8 changes."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from auditor.errors import AuditorError
from auditor.io.copies import copy_parquet_records, parquet_files_copied


@pytest.mark.parametrize("damage", ["garbage", "cut"])
def test_a_damaged_parquet_file_is_named_when_copied(tmp_path, damage):
    path = tmp_path / "train.parquet"
    pq.write_table(pa.table({"question": [f"q{i}" for i in range(1000)], "answer": list(range(1000))}), path)
    assert parquet_files_copied([path]) == [path]
    data = path.read_bytes()
    path.write_bytes(b"not parquet" * 50 if damage == "garbage" else data[:8] + data[len(data) // 2:])
    out = tmp_path / "copy.parquet"
    calls = [lambda: copy_parquet_records([path], np.array([0, 5]), 1000, out)]
    if damage == "garbage":               # no footer: the schema cannot be read either ("cut" keeps it)
        calls.append(lambda: parquet_files_copied([path]))
    for call in calls:
        with pytest.raises(AuditorError) as caught:
            call()
        assert caught.value.code == "bad_format" and "train.parquet" in caught.value.message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.parquet"]
