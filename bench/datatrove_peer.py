#!/usr/bin/env python
"""datatrove's MinHash deduplication pipeline on a JSONL file of {"text": ...}, as its docs run it
(signatures -> buckets -> clusters, the LocalPipelineExecutor, one task per stage), with our
preparation: lowercase, whitespace words, 3-word shingles (a WordTokenizer that splits on
whitespace, n_grams=3; its text normalisation left at its default), SHA-1 hashes (64 bits). Its LSH has no verification:
it reports the records it would drop (one kept per cluster), not pairs.

    python bench/datatrove_peer.py FILE.jsonl [--buckets 14 --hashes 8] [--workdir DIR]

Prints one JSON line: wall seconds, peak RSS (MB) of this process, records removed, clusters.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--buckets", type=int, default=14)
    p.add_argument("--hashes", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--workdir")
    args = p.parse_args(argv)

    from datatrove.executor.local import LocalPipelineExecutor
    from datatrove.pipeline.dedup.minhash import (MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster,
                                                  MinhashDedupSignature)
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.utils.word_tokenizers import WordTokenizer

    class Whitespace(WordTokenizer):
        """Our words: lowercase (datatrove's normalisation), split on whitespace."""

        def word_tokenize(self, text: str) -> list[str]:
            return text.lower().split()

        def sent_tokenize(self, text: str) -> list[str]:
            return [text]

        def span_tokenize(self, text: str) -> list[tuple[int, int]]:
            raise NotImplementedError

    from datatrove.utils.hashing import HashConfig
    # sha1: datatrove 0.10.1's xxhash path passes str to xxhash 4, which wants bytes (TypeError).
    config = MinhashConfig(n_grams=3, num_buckets=args.buckets, hashes_per_bucket=args.hashes,
                           hash_config=HashConfig(hash_fc="sha1", precision=64))
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp_name:
        tmp = Path(tmp_name)
        source = Path(args.file).resolve()
        t0 = time.perf_counter()
        reader = JsonlReader(str(source.parent), glob_pattern=source.name, text_key="text")
        LocalPipelineExecutor(pipeline=[reader, MinhashDedupSignature(output_folder=str(tmp / "sigs"), config=config,
                                                                      language=Whitespace())],
                              tasks=1, logging_dir=str(tmp / "logs1"), skip_completed=False).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupBuckets(input_folder=str(tmp / "sigs"),
                                                            output_folder=str(tmp / "buckets"), config=config)],
                              tasks=config.num_buckets, workers=args.workers, logging_dir=str(tmp / "logs2"),
                              skip_completed=False).run()
        LocalPipelineExecutor(pipeline=[MinhashDedupCluster(input_folder=str(tmp / "buckets"),
                                                            output_folder=str(tmp / "remove"), config=config,
                                                            save_cluster_id=True)],
                              tasks=1, logging_dir=str(tmp / "logs3"), skip_completed=False).run()
        wall = time.perf_counter() - t0
        removed = 0
        clusters = set()
        for f in (tmp / "remove").glob("*.remove"):
            removed += f.stat().st_size // 4
        for f in (tmp / "remove").glob("*.clusters"):
            import numpy as np
            data = np.fromfile(f, dtype=np.uint32)
            clusters.update(data[1::2].tolist())
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(json.dumps({"status": "ok", "wall": wall, "peak_rss_mb": peak / 1024, "removed": int(removed),
                      "clusters": len(clusters) or None, "bands": args.buckets, "rows": args.hashes}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
