"""Every byte read or written, for both engines.

- ``table``: ``Table``, the rows a source loads to, and the split choice every loader shares;
- ``listing``: the files a local file, folder or glob names; formats and codecs by suffix; splits;
- ``budget``: the reading budget (``AUDITOR_MAX_BYTES``) and the checked, decompressed byte stream;
- ``formats``: the JSONL / JSON / CSV / TSV / Parquet parsers;
- ``hub``: Hugging Face datasets, through ``datasets`` and ``huggingface_hub``;
- ``sources``: ``load``: a source string (file, folder, glob, hub id, ``example:NAME``) to a Table;
- ``outputs``: output paths checked against inputs, atomic writes, and copies of records.
"""
