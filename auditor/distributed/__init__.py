"""The Ray engine (``--engine ray``): the same audits, with a corpus's shards mapped in parallel by Ray Data.

Optional: needs the ``ray`` extra (``pip install .[ray]``); Ray itself is imported only when a
run starts (``runtime.require_ray``). ``auditor.engines`` is the one module that uses this package:
the commands below it take the step that differs as an argument, and the Ray engine maps their
per-batch functions. Reading and listing shards (local or any URI) is ``auditor.io.shards``.

- ``runtime``: joining or starting Ray for a run, and reading a sharded corpus as a Ray Dataset
  in a stable order (shard order, then row order) with each row's shard and row number;
- ``contamination``: the n-gram contamination scan (auditor/contamination.py) on Ray, with
  per-shard results for resuming;
- ``near``: near-duplicate candidate generation and verification on Ray (``scan --engine ray``).
- ``leak``: leak / clean with a huge training side A mapped as Ray tasks against B's shared indexes.
"""
