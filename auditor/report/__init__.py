"""Step 6, report: results to the summary.json contract and to REPORT.md, one module per result
kind (``scan``, ``leak``, ``contamination``, ``matrix``, ``clean``, ``dedup``, ``decontaminate``)
over ``common``. The layer sits just above io/: it renders the result objects it is given (by
their fields) and imports no algorithm, so any result type can call it.

Nothing else formats: the result classes' ``summary()`` / ``markdown()`` call these, and the CLI,
REPORT.md and the app use them. Output is deterministic: no timings, no dates, fixed rounding, so
the same input and settings give byte-identical files.

"""
from __future__ import annotations

from .common import (PARAPHRASE_CAVEAT, SCHEMA_VERSION, md_cell, pct, plain, plural, printable,  # noqa: F401
                     to_json, write_outputs)
from .scan import EXACT_KINDS, input_block, markdown, overview_rows, pairs_text, roles_rows, summary  # noqa: F401
