"""Step 6, report: results to the summary.json contract and to REPORT.md, one module per result
kind (``scan``, ``leak``, ``contamination``, ``matrix``, ``clean``) over ``common``.

Nothing else formats: the result classes' ``summary()`` / ``markdown()`` call these, and the CLI,
REPORT.md and the app use them. Output is deterministic: no timings, no dates, fixed rounding, so
the same input and settings give byte-identical files.

The per-kind modules are imported where used (``from auditor.report import leak``), so the
modules whose results they format can import the shared names below without a cycle.
"""
from __future__ import annotations

from .common import (PARAPHRASE_CAVEAT, SCHEMA_VERSION, md_cell, pct, plain, plural, printable,  # noqa: F401
                     to_json, write_outputs)
from .scan import EXACT_KINDS, input_block, markdown, overview_rows, pairs_text, roles_rows, summary  # noqa: F401
