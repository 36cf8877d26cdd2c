"""Many datasets at once: split x split and dataset x dataset overlap matrices, and a
comparison table of per-dataset scan figures.

Cell [X][Y] counts the records of X whose text also occurs in Y (exact under the
default normaliser; with ``near``, also a near duplicate at the threshold), with its
fraction of X. The split diagonal [X][X] counts records with an internal duplicate;
the dataset diagonal counts records that occur in a *different split* of the same
dataset (leakage inside one dataset).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .audit import scan
from .errors import AuditorError
from .exact import key_ids
from .io.columns import chained
from .io.sources import looks_local
from .near import collapse_identical, find_pairs
from .normalize import normalized
from .prepare import prepare
from .progress import Progress
from .report import matrix as report
from .settings import NearSettings, ScanSettings, check_max_rows
from .shingles import shingle_matrix

# The matrix run's stages: (name, what the progress callback says, share of the run).
STAGES = (("load", "loading", 0.6), ("near", "searching near duplicates", 0.1), ("compare", "scanning", 0.3))


@dataclass(frozen=True)
class Group:
    dataset: str
    split: str
    source: str
    config: str | None = None      # a Hub or bundled dataset's config; None: its default

    @property
    def name(self) -> str:
        return f"{self.dataset}/{self.config}/{self.split}" if self.config else f"{self.dataset}/{self.split}"


SPEC_HINT = "Use NAME[:[CONFIG:]SPLIT]=SOURCE, e.g. gsm8k:test=example:gsm8k or gsm8k:socratic:test=example:gsm8k."


def parse_spec(spec: str) -> Group:
    """NAME[:SPLIT]=SOURCE, or NAME:CONFIG:SPLIT=SOURCE for a dataset with several configs."""
    name, sep, source = spec.partition("=")
    parts = [part.strip() for part in name.split(":")]
    if not sep or not source.strip() or len(parts) > 3 or not all(parts):
        raise AuditorError("usage", f"Bad dataset spec {spec!r}.", SPEC_HINT)
    dataset, config, split = parts[0], (parts[1] if len(parts) == 3 else None), parts[-1] if len(parts) > 1 else "all"
    return Group(dataset, split, source.strip(), config)


def _counts(node: np.ndarray, group: np.ndarray, n_groups: int, adjacency=None) -> np.ndarray:
    """(n_nodes, n_groups): how many records of each group sit in, or next to, each node."""
    n_nodes = int(node.max(initial=-1)) + 1
    valid = node >= 0
    counts = sp.csr_matrix((np.ones(valid.sum()), (node[valid], group[valid])), shape=(n_nodes, n_groups))
    if adjacency is not None:
        counts = counts + adjacency @ counts
    return np.asarray(counts.todense())


@dataclass(frozen=True)
class MatrixResult:
    groups: list
    records: list                  # records per group
    split_matrix: dict
    dataset_matrix: dict
    near_split_matrix: dict | None
    near_dataset_matrix: dict | None
    comparison: list
    threshold: float
    notices: tuple = ()            # datasets given twice (the same records)
    texts: tuple = ()              # per group: (the text field compared, guessed?, records without text)

    def summary(self) -> dict:
        return report.summary(self)

    def markdown(self) -> str:
        return report.markdown(self)


def overlap_matrix(specs: list, *, text=None, near: bool = False, threshold: float = 0.7,
                   compare: bool = True, max_rows=None, token=None, progress=None) -> MatrixResult:
    """``specs``: Group objects or NAME[:[CONFIG:]SPLIT]=SOURCE strings."""
    threshold = NearSettings(threshold=threshold).validated().threshold
    check_max_rows(max_rows)
    if isinstance(specs, (str, os.PathLike)) or not isinstance(specs, (list, tuple)) \
            or not all(isinstance(s, (str, Group)) for s in specs):
        raise AuditorError("usage", f"overlap_matrix takes a list of datasets, got {str(specs)[:80]!r}.",
                           "e.g. overlap_matrix(['gsm8k:train=example:gsm8k', 'gsm8k:test=example:gsm8k']).")
    groups = [parse_spec(s) if isinstance(s, str) else s for s in specs]
    if len(groups) < 2:
        raise AuditorError("usage", "Give at least two datasets or splits (-d NAME[:[CONFIG:]SPLIT]=SOURCE, repeated).",
                           "e.g. -d gsm8k:train=example:gsm8k -d gsm8k:test=...")
    if len({g.name for g in groups}) != len(groups):
        raise AuditorError("usage", "Two datasets share a NAME[:CONFIG]:SPLIT.",
                           "Give each -d a distinct NAME[:CONFIG]:SPLIT.")
    run = Progress(progress, STAGES)
    group_of, sides = [], []
    for gi, g in enumerate(groups):
        with run.stage("load", f"loading {g.name}", at=gi / len(groups)):
            split = None if looks_local(g.source) or g.split == "all" else g.split
            side = prepare(g.source, config=g.config, split=split, max_rows=max_rows, token=token, text=text,
                           text_only=True)
        sides.append(side)
        group_of.extend([gi] * side.records)
    group_of = np.asarray(group_of, dtype=np.int64)
    notices = _same_records(groups, sides)
    texts = chained(*(side.fields.text for side in sides))     # each side's column, none decoded whole
    datasets = sorted({g.dataset for g in groups}, key=[g.dataset for g in groups].index)
    dataset_of_group = np.asarray([datasets.index(g.dataset) for g in groups])
    exact_node = key_ids(normalized(texts, "default"))
    # Records with no text (missing or blank: no key), per group, from the keys made anyway.
    no_text = np.bincount(group_of[exact_node < 0], minlength=len(groups))
    split_m, dataset_m = _matrices(_counts(exact_node, group_of, len(groups)), exact_node, group_of, groups,
                                   datasets, dataset_of_group)
    near_split = near_dataset = None
    if near:
        with run.stage("near"):
            near_split, near_dataset = _near_matrices(texts, group_of, threshold, groups, datasets,
                                                      dataset_of_group)
    comparison = []
    if compare:
        for gi, (g, side) in enumerate(zip(groups, sides)):
            with run.stage("compare", f"scanning {g.name}", at=gi / len(groups)):
                r = scan(side.table, text=side.roles.text, settings=ScanSettings(threshold=threshold))
            nd = r.near_duplicates()
            ex = r.exact["text"]
            comparison.append({"dataset": g.name, "records": r.records, "schema_issues": len(r.schema.issues),
                               "degenerate": r.degenerate.records, "exact_duplicate_records": ex.records,
                               "near_clusters": nd.clusters, "identical_clusters": nd.identical_clusters,
                               "variant_clusters": nd.variant_clusters,
                               "clusters_per_1000": round(1000 * nd.clusters / max(r.records, 1), 4)})
    return MatrixResult(groups=groups, records=np.bincount(group_of, minlength=len(groups)).tolist(),
                        split_matrix=split_m, dataset_matrix=dataset_m, near_split_matrix=near_split,
                        near_dataset_matrix=near_dataset, comparison=comparison, threshold=threshold,
                        notices=notices, texts=tuple((side.roles.text, "text" in side.roles.guessed, int(n))
                                                     for side, n in zip(sides, no_text)))


def _same_records(groups, sides) -> tuple:
    """A note for each pair of datasets holding the same records (the same fingerprint: a file
    given twice, or two splits that are copies): their cells are every record matching itself."""
    first: dict = {}
    notes = []
    for g, side in zip(groups, sides):
        if side.fingerprint in first and side.records:
            notes.append(f"{first[side.fingerprint]} and {g.name} hold the same records (the same fingerprint): "
                         "every record of one is in the other. If they are one dataset given twice, give it "
                         "once; if two splits, they are copies of each other.")
        first.setdefault(side.fingerprint, g.name)
    return tuple(notes)


def _near_matrices(texts, group_of, threshold, groups, datasets, dataset_of_group):
    # Each node's neighbours' group counts are summed as the verified pairs stream by, so
    # memory stays (nodes x groups) however many pairs there are.
    matrix = shingle_matrix(texts)
    node_of = collapse_identical(matrix)[0]
    own = _counts(node_of, group_of, len(groups))
    around = np.zeros_like(own)

    def add_neighbours(a, b, j):
        np.add.at(around, a, own[b])
        np.add.at(around, b, own[a])

    find_pairs(matrix, threshold, on_pairs=add_neighbours)
    return _matrices(own + around, node_of, group_of, groups, datasets, dataset_of_group)


def _matrices(counts, node, group_of, groups, datasets, dataset_of_group):
    n_groups = len(groups)
    valid = node >= 0
    present = np.zeros((node.size, n_groups), dtype=bool)
    present[valid] = counts[node[valid]] > 0
    # A record is always "present" in its own group; the diagonal needs a second record there.
    own = np.zeros(node.size, dtype=bool)
    own[valid] = counts[node[valid], group_of[valid]] >= 2
    split_m = {}
    for gi, g in enumerate(groups):
        mine = group_of == gi
        size = int(mine.sum())
        row = {}
        for hi, h in enumerate(groups):
            hits = int((own[mine] if hi == gi else present[mine, hi]).sum())
            row[h.name] = {"count": hits, "fraction": round(hits / size, 6) if size else 0.0}
        split_m[g.name] = row
    dataset_m = {}
    for di, d in enumerate(datasets):
        mine = dataset_of_group[group_of] == di
        size = int(mine.sum())
        row = {}
        for ei, e in enumerate(datasets):
            cols = np.flatnonzero(dataset_of_group == ei)
            hit = present[:, cols].copy()
            if ei == di:   # another split of the same dataset: not the record's own group
                hit &= cols[None, :] != group_of[:, None]
            count = int(hit[mine].any(axis=1).sum())
            row[e] = {"count": count, "fraction": round(count / size, 6) if size else 0.0}
        dataset_m[d] = row
    return split_m, dataset_m
