"""The one error type of the library.

Every failure a user can cause (bad source, bad option, bad data) is raised as an
``AuditorError`` with a stable ``code``, a message that says what went wrong and
where, and a hint of what to try. The CLI prints it and exits 2; the app shows it.
"""
from __future__ import annotations

import re

# A value echoed into a message (a source, a split, a field name: repr'd or as typed) past this
# many characters is shown by its start and end: a 100 KB dataset id was echoed whole.
ECHO_LIMIT = 200
MESSAGE_LIMIT = 4000     # a whole message or hint, however many values it lists
_LONG = re.compile(r"'[^'\n]{%d,}'|\"[^\"\n]{%d,}\"|[^\s'\"]{%d,}" % ((ECHO_LIMIT,) * 3))


def capped(text: str) -> str:
    """``text`` with each quoted value or unbroken run longer than ``ECHO_LIMIT`` characters cut
    to its first 120 and last 40, the number left out said between them; then the whole cut to
    ``MESSAGE_LIMIT`` the same way."""
    def cut(m):
        value = m.group(0)
        return f"{value[:120]}…[{len(value) - 160:,} characters]…{value[-40:]}"
    if not isinstance(text, str) or len(text) <= ECHO_LIMIT:
        return text
    text = _LONG.sub(cut, text)
    if len(text) > MESSAGE_LIMIT:     # many values, each under the limit (a list of 5,000 names)
        head, tail = MESSAGE_LIMIT - 200, 160
        text = f"{text[:head]}…[{len(text) - head - tail:,} characters]…{text[-tail:]}"
    return text


class AuditorError(Exception):
    """A failure caused by the input, explained for the person who gave it."""

    # Stable codes; tests and API users match on these, so never rename one.
    CODES = frozenset({
        "usage",            # an option or argument is out of range or malformed
        "not_found",        # file, glob, dataset id or bundled example does not exist
        "bad_config",       # the hub dataset has no such config
        "bad_split",        # the source has no such split
        "gated",            # the dataset needs a token / accepted terms
        "hub_unreachable",  # the hub did not answer
        "empty_input",      # the source holds no records
        "bad_format",       # corrupt, truncated or mis-named file; rows that are not objects
        "missing_field",    # a role names a field that no record has
        "bad_value",        # a role's value cannot be read as text
        "too_large",        # beyond a hard size limit
        "output_path",      # an output would overwrite an input or another output, or cannot be written
        "not_installed",    # an optional part (the semantic model) is not installed; the hint names the command
        "busy",             # a server is at its stated limits (jobs per visitor, jobs waiting): come back later
        "expired",          # something kept for a stated time or within a stated budget (an upload) is gone
        "cancelled",        # the caller cancelled the work (a Hub read: hub.CANCEL)
        "worker_died",      # the process computing a job ended without an answer (killed for memory, a crash)
        "job_timeout",      # a job of the app ran past its time limit (AUDITOR_JOB_TIMEOUT) and was stopped
        "spill_failed",     # the records could not be kept in a temporary file (AUDITOR_SPILL_DIR: full, not writable)
    })

    def __init__(self, code: str, message: str, hint: str = ""):
        if code not in self.CODES:
            raise ValueError(f"unknown error code {code!r}")
        message, hint = capped(message), capped(hint)
        super().__init__(message)
        self.code = code
        self.message = message
        self.hint = hint

    def __reduce__(self):
        # Pickled whole (code, message, hint): raised in a worker process (Ray), it arrives as itself.
        return type(self), (self.code, self.message, self.hint)

    def to_dict(self) -> dict:
        return {"error": {"code": self.code, "message": self.message, "hint": self.hint}}

    def __str__(self) -> str:
        return f"{self.message}\nHint: {self.hint}" if self.hint else self.message
