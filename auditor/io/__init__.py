"""Every byte read or written, for both engines.

- ``table``: ``Table``, the rows a source loads to, and the split choice every loader shares;
- ``columns``: ``TextColumn``, the text and answer roles' values held as one UTF-8 buffer;
- ``listing``: the files a local file, folder or glob names; formats and codecs by suffix; splits;
- ``budget``: the reading budget (``AUDITOR_MAX_BYTES``) and the checked, decompressed byte stream;
- ``formats``: the JSONL / JSON / CSV / TSV / Parquet parsers;
- ``hub``: Hugging Face datasets, through ``datasets`` and ``huggingface_hub``;
- ``sources``: ``load``: a source string (file, folder, glob, hub id, ``example:NAME``) to a Table;
- ``shards``: a sharded corpus (local or any URI pyarrow or fsspec opens) listed and read for both
  engines;
- ``outputs``: output paths checked against inputs, atomic writes;
- ``resume``: resume caches (``--shard-dir``) bound to their run: keyed, signed, read within a bound;
- ``copies``: rows written in a format, and a corpus's records copied line for line.
"""
