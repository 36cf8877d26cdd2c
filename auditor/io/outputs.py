"""Output files: never one of the inputs, never another output, never left half-written.

``check_outputs(inputs, outputs)`` runs before any work and refuses (``AuditorError`` code
``output_path``, exit 2 in the CLI) an output that

- is the same file as an input: compared as real files (``os.path.samefile``: symlinks, hard
  links, relative and absolute spellings), not as strings;
- lies inside an input directory with a data suffix (it would be read as one of its splits next
  time), or matches an input glob;
- is the same file as another output (``--out`` equal to ``--report``, ``--json`` inside
  ``--out-dir``); devices such as ``/dev/stdout`` or ``/dev/null`` may be given twice;
- is a directory, or sits in a folder that does not exist.

``check_shard_dir`` applies the same rules to the per-shard result files of ``--engine ray``.

``atomic_write(path, mode)`` writes to a hidden temporary file in the same folder and renames it
into place (``os.replace``) only once it is complete and flushed to disk, so the final path holds
either the previous complete file or the new complete one, never a torn one. It never follows a
link to a file: the folder is opened once, the temporary is created relative to it with O_EXCL |
O_NOFOLLOW, and the final name is looked at again just before the rename (which replaces a name,
never writes through one), so a symlink swapped in for an output after the checks is refused with
its target untouched; ``check_outputs`` refuses a link up front. Outputs are local: a URI
(``s3://``, ``gs://``, ``file://``) is refused (``refuse_uri``), never written into a folder "s3:". The temporary is
removed on any failure, KeyboardInterrupt and SystemExit included (the CLI turns SIGTERM into an
exception, so this ``finally`` runs). Devices and pipes (``/dev/stdout``, ``/dev/full``) are
written in place, as there is nothing to replace. Any OSError becomes an ``output_path`` error
that says what went wrong. Nothing here installs a signal handler.

``written_together(paths)`` makes a run's outputs one set: inside it, each ``atomic_write`` to one of
``paths`` leaves its complete temporary, and all take their places when the block ends; a failure
of any (a read-only folder, a full disk, a path turned into a folder) removes every temporary, so a
data copy never stays behind without the manifest or report that describes it. Other files written
meanwhile (resume caches, per-shard copies) are written at once, as outside it.
"""
from __future__ import annotations

import errno
import os
import re
import secrets
import stat
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from ..errors import AuditorError
from .listing import expand_local, format_of, glob_parts_match
from .sources import example_layout, example_names

TEMP_SUFFIX = ".tmp"          # temporaries: ".NAME.XXXXXXXX.tmp", hidden and without a data suffix
# CSV rows end in CRLF (RFC 4180): Python's csv module quotes a field holding "\r" or "\n" only when
# that character is in its line terminator, so with "\n" alone a text holding a bare "\r" was written
# unquoted, and readers split the record there.
CSV_LINE_END = "\r\n"


# --------------------------------------------------------------------------- checks before the work

def check_outputs(inputs, outputs, make_dirs=()) -> None:
    """Refuse outputs that would clobber an input or each other (see the module docstring).

    ``inputs``: source strings (files, directories, globs, ``example:NAME``; hub ids and other
    non-local sources are skipped). ``outputs``: (label, path) pairs, the label as the user knows
    the option (``--out``); a path of None, "" or "-" (stdout) is skipped. ``make_dirs``: folders
    the writer creates (``--out-dir``), so their absence is not an error."""
    outs = [(label, os.path.expanduser(os.fspath(p))) for label, p in outputs if p not in (None, "", "-")]
    made = [_real(d) for d in make_dirs if d]
    for label, path in outs:
        _check_target(label, path, made)
    for i, (label, path) in enumerate(outs):
        for other_label, other in outs[:i]:
            if not (_is_device(path) and _is_device(other)) and _same_file(path, other):
                raise AuditorError("output_path", f"{label} and {other_label} are the same file ({path!r}): one "
                                   "would replace the other.", "Give each output its own path.")
    for source in inputs:
        for kind, target, files in _input_targets(source):
            for label, path in outs:
                if _is_device(path):
                    hit = any(_same_file(path, f) for f in files)
                else:
                    hit = _clobbers(kind, target, files, path)
                if hit:
                    raise AuditorError("output_path", _clobber_message(kind, label, path, source),
                                       "Write the output somewhere else: an input is never overwritten.")
    for label, path in outs:
        # a link is never written through (atomic_write refuses one however late it appears): say so now
        if os.path.islink(path) and not (_is_stream_path(path) or _resolves_to_stream(path)):
            raise link_error(f"{label} {path}")


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def refuse_uri(label: str, path) -> None:
    """Outputs here are local files: a URI (s3://, gs://, hf://, file://) is refused, never written
    into a local folder named "s3:". (``contamination --decontaminate`` on Ray writes to stores: it
    takes its URI before this check.)"""
    text = os.fspath(path) if path is not None else ""
    if isinstance(text, str) and _URI.match(text):
        scheme = text.partition("://")[0]
        raise AuditorError("usage", f"{label} {text!r} is a {scheme}:// URI: this output is written to a local "
                           "file or folder.", "Give a local path (without file://); only contamination "
                           "--decontaminate with --engine ray writes to an object store.")


def check_out_dir(out_dir, label: str = "--out-dir") -> str | None:
    """An output folder (--out-dir, --shard-dir) must be a folder or a path that can become one;
    returns it (user folder expanded), or None when none is given. A URI is refused."""
    if out_dir in (None, ""):
        return None
    refuse_uri(label, out_dir)
    path = os.path.expanduser(os.fspath(out_dir))
    if os.path.exists(path) and not os.path.isdir(path):
        raise AuditorError("output_path", f"{label} {path!r} exists and is not a folder.",
                           "Give a folder (it is created when missing).")
    return path


def check_shard_dir(shard_dir, sources, prefix: str) -> None:
    """A shard folder (``--shard-dir``) holds one ``PREFIX-KEY-NNNNN.json`` result per shard. It must
    not sit where those files would be read as data next time: inside an input folder, or where an
    input glob matches them. ``sources``: the run's inputs (non-local ones are skipped)."""
    folder = check_out_dir(shard_dir, "--shard-dir")
    if folder is None:
        return
    example = os.path.join(folder, f"{prefix}-0000000000000000-00000.json")
    # file:///data is the local folder /data for the Ray engine, so it is checked as one.
    local = [s.removeprefix("file://") if isinstance(s, str) else s for s in sources if s is not None]
    check_outputs(local, [("--shard-dir", example)], make_dirs=[folder])


def _check_target(label: str, path: str, made: list) -> None:
    refuse_uri(label, path)
    if os.path.isdir(path):
        raise AuditorError("output_path", f"{label} {path!r} is a folder, not a file.",
                           "Give a file path, e.g. a name inside that folder.")
    parent = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(parent):
        return
    real_parent = _real(parent)
    if any(real_parent == d or real_parent.startswith(d.rstrip(os.sep) + os.sep) for d in made):
        return
    if os.path.exists(parent):
        raise AuditorError("output_path", f"{label} {path!r}: {os.path.dirname(path)!r} is a file, not a folder.",
                           "Choose a path in a folder that exists.")
    raise AuditorError("output_path", f"{label} {path!r}: the folder {os.path.dirname(path) or '.'!r} does not "
                       "exist.", "Create it first, or choose a path in a folder that exists.")


def _clobber_message(kind: str, label: str, path: str, source) -> str:
    if kind == "file":
        return f"{label} {path!r} is the same file as the input {source!r}: writing it would destroy the input."
    if kind == "dir":
        return (f"{label} {path!r} is inside the input folder {source!r}: it would replace one of its data files, "
                "or be read as one of its splits next time.")
    return (f"{label} {path!r} matches the input pattern {source!r}: it would replace one of the files read, "
            "or be read as one of them next time.")


def _input_targets(source):
    """(kind, target, existing files) of a source: "file", "dir" or "glob"; none for non-local ones."""
    if not isinstance(source, (str, os.PathLike)):
        return []                       # a Table, already in memory
    text = os.fspath(source).strip()
    if text.startswith("example:"):
        name = text.split(":", 1)[1].strip().lower()
        if name not in example_names():
            return []
        return [("file", str(p), [str(p)]) for splits in example_layout(name).values() for p in splits.values()]
    path = os.path.expanduser(text)
    if os.path.isdir(path) or any(c in text for c in "*?["):
        try:
            files = [str(p) for p in expand_local(text)]
        except AuditorError:
            files = []
        return [("dir" if os.path.isdir(path) else "glob", path, files)]
    if os.path.exists(path):
        return [("file", path, [path])]
    return []                           # a hub id, or a file that does not exist (load says so)


def _clobbers(kind: str, target: str, files: list, out: str) -> bool:
    if any(_same_file(out, f) for f in files):
        return True
    if kind == "file" or not _is_data_name(out):
        return False
    forms = {os.path.abspath(out), _real(out)}
    if kind == "dir":
        roots = {os.path.abspath(target), _real(target)}
        return any(f.startswith(r.rstrip(os.sep) + os.sep) for f in forms for r in roots)
    patterns = {os.path.abspath(target), _real_prefix(target)}
    return any(_glob_match(p, f) for p in patterns for f in forms)


def _is_data_name(path: str) -> bool:
    name = os.path.basename(path)
    return not name.startswith(".") and format_of(Path(name)) is not None


def _glob_match(pattern: str, path: str) -> bool:
    """Whether glob.glob(pattern, recursive=True) would list ``path`` (both absolute)."""
    return glob_parts_match(Path(pattern).parts, Path(path).parts)


def _real_prefix(pattern: str) -> str:
    """The pattern with its literal leading folders resolved (a symlinked folder, ``..``)."""
    parts = Path(os.path.abspath(pattern)).parts
    cut = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), len(parts))
    return os.path.join(_real(os.path.join(*parts[:cut])), *parts[cut:]) if cut else pattern


def _real(path: str) -> str:
    return os.path.normcase(os.path.realpath(os.path.expanduser(path)))


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)   # both exist: the same inode, whatever the spelling or links
    except OSError:
        return _real(a) == _real(b)     # one does not exist yet: the same resolved path


def _is_device(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


# --------------------------------------------------------------------------- writing

def _is_stream_path(path: str) -> bool:
    """/dev/stdout, /proc/self/fd/1 and the like, or a link leading through one: the shell's stream
    (maybe redirected to a file), written in place, never replaced or removed."""
    shown = os.path.abspath(path)
    for _ in range(40):                      # the link chain, hop by hop (realpath would skip /dev/stdout)
        if shown.startswith(("/dev/", "/proc/")) and not shown.startswith("/dev/shm/"):
            return True
        if not os.path.islink(shown):
            return False
        shown = os.path.join(os.path.dirname(shown), os.readlink(shown))
    return False


def link_error(shown: str) -> AuditorError:
    return AuditorError("output_path", f"Cannot write {shown!r}: it is a symbolic link. Outputs are never written "
                        "through a link (one swapped in for an output could point at an input or any other file).",
                        "Give the file's own path, or another name.")


def _resolves_to_stream(path: str) -> bool:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


@contextmanager
def _write_stream(target: str, shown: str, mode: str, options: dict):
    """A device or a pipe (/dev/stdout, /dev/null, /dev/full, a FIFO), written in place: nothing to
    replace. Opened without truncation and checked once open, so a regular file swapped in for it
    (through a link) is refused untouched."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY)
    except OSError as exc:
        raise write_error(shown, exc) from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise write_error(shown, exc) from None
    if stat.S_ISREG(info.st_mode) and not _is_stream_path(target):
        os.close(fd)
        raise link_error(shown)
    if stat.S_ISREG(info.st_mode):
        os.ftruncate(fd, 0)                   # stdout redirected to a file by the shell: that file, from the start
    try:
        with os.fdopen(fd, mode, **options) as fh:
            yield fh
    except OSError as exc:
        raise write_error(shown, exc) from None


class _Held:
    """A complete temporary waiting in its folder for the rest of its set (``written_together``)."""

    def __init__(self, dir_fd: int, tmp: str, name: str, shown: str, sync: bool, before_replace):
        self.dir_fd, self.tmp, self.name, self.shown = dir_fd, tmp, name, shown
        self.sync, self.before_replace = sync, before_replace

    def commit(self) -> None:
        try:
            if self.before_replace is not None:
                self.before_replace()
            _check_final_name(self.dir_fd, self.name, self.shown)
            os.replace(self.tmp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
            self.tmp = None
            if self.sync:
                os.fsync(self.dir_fd)
        except OSError as exc:
            raise write_error(self.shown, exc) from None
        finally:
            self.discard()

    def discard(self) -> None:
        if self.dir_fd is None:
            return
        if self.tmp is not None:
            try:
                os.unlink(self.tmp, dir_fd=self.dir_fd)
            except OSError:
                pass
        os.close(self.dir_fd)
        self.dir_fd = None


_TOGETHER: ContextVar = ContextVar("written_together", default=None)


def _key(path) -> str:
    return os.path.normcase(os.path.abspath(os.path.expanduser(os.fspath(path))))


@contextmanager
def written_together(paths):
    """Writes to ``paths`` inside the block appear together when it ends, or none does (see the
    module docstring). ``paths`` is read at each write, so a list filled in once the outputs are
    checked serves. Inside another such block, ``paths`` join its set (a command's copy and manifest
    are then held until its reports are written too)."""
    outer = _TOGETHER.get()
    if outer is not None:
        outer[0].append(paths)
        yield
        return
    held: list = []
    token = _TOGETHER.set(([paths], held))
    try:
        yield
        _commit(held)
    except BaseException:
        for one in held:
            one.discard()
        raise
    finally:
        _TOGETHER.reset(token)


def commit_held() -> None:
    """Put the files held so far in place now (the CLI, before its report goes to stdout: a closed
    stdout is not a failed file, and the files written are complete)."""
    group = _TOGETHER.get()
    if group is not None:
        _commit(group[1])


def _commit(held: list) -> None:
    try:
        for one in held:        # every final name looked at first: a link or folder put at a later one
            _check_final_name(one.dir_fd, one.name, one.shown)      # leaves none in place, not some
        for one in held:                        # in the order written: a report's summary.json stays last
            one.commit()
    finally:
        for one in held:                        # the rest, after a failed one (a no-op for those committed)
            one.discard()
        held.clear()


def _group_holding(target: str):
    """The list a write to ``target`` is held in, or None when it is written at once."""
    group = _TOGETHER.get()
    if group is None:
        return None
    sets, held = group
    key = _key(target)
    named = any(p not in (None, "", "-") and _key(p) == key for paths in sets for p in paths)
    return held if named else None


@contextmanager
def atomic_write(path, mode: str = "w", *, encoding: str = "utf-8", errors: str | None = None,
                 newline: str | None = None, sync: bool = True, before_replace=None):
    """``with atomic_write(path) as fh: fh.write(...)``: the file appears at ``path`` complete or
    not at all (see the module docstring). ``mode`` is "w" (text) or "wb". ``sync=False`` skips
    the flush to disk, for files whose loss in a power cut costs only work (a resume's per-shard
    results, which are checked when read and redone when unreadable): 2.6 ms a file here.
    ``before_replace()`` runs once the new file is complete, just before it takes ``path``'s place
    (``retire`` a file that describes the old one); inside ``written_together``, when its set does.

    A link is never followed to a file: the folder is opened once and everything happens relative
    to it (the temporary is created with O_EXCL | O_NOFOLLOW, the final name is looked at again just
    before the rename, which replaces a name and never writes through one), so a symlink swapped in
    for the output after the checks (pointing at an input) is refused, its target untouched. A link
    to a device or a pipe (/dev/stdout) is written in place."""
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write mode must be 'w' or 'wb', not {mode!r}")
    shown = os.fspath(path)
    refuse_uri("output", shown)
    target = os.path.expanduser(shown)
    options = {} if mode == "wb" else {"encoding": encoding, "errors": errors, "newline": newline}
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise write_error(shown, exc) from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        if not (_is_stream_path(target) or _resolves_to_stream(target)):
            raise link_error(shown)
        with _write_stream(target, shown, mode, options) as fh:
            yield fh
        return
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise write_error(shown, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _write_stream(target, shown, mode, options) as fh:
            yield fh
        return
    if st is not None and not os.access(target, os.W_OK):
        raise write_error(shown, PermissionError(errno.EACCES, os.strerror(errno.EACCES)))
    folder, name = os.path.split(os.path.abspath(target))
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise write_error(shown, exc) from None
    tmp, group = None, _group_holding(target)
    try:
        while tmp is None:
            candidate = f".{name}.{secrets.token_hex(4)}{TEMP_SUFFIX}"
            try:
                fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666,
                             dir_fd=dir_fd)                  # umask applies
            except FileExistsError:
                continue
            tmp = candidate
        with os.fdopen(fd, mode, **options) as fh:
            yield fh
            fh.flush()
            if st is not None:
                os.fchmod(fh.fileno(), stat.S_IMODE(st.st_mode))   # keep the mode of the file replaced
            if sync:
                os.fsync(fh.fileno())
        if group is not None:               # renamed with the rest of its set (written_together)
            group.append(_Held(dir_fd, tmp, name, shown, sync, before_replace))
            tmp = dir_fd = None
            return
        if before_replace is not None:
            before_replace()
        _check_final_name(dir_fd, name, shown)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        tmp = None
        if sync:
            os.fsync(dir_fd)                  # the rename itself, on disk
    except OSError as exc:
        raise write_error(shown, exc) from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
        if dir_fd is not None:
            os.close(dir_fd)


def _check_final_name(dir_fd: int, name: str, shown: str) -> None:
    """The output's name, looked at again just before the rename: a link or a folder put there since
    the checks is refused (the rename would replace a link, not its target, but the run says so)."""
    try:
        now = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(now.st_mode):
        raise link_error(shown)
    if stat.S_ISDIR(now.st_mode):
        raise write_error(shown, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))


def retire(path) -> None:
    """Remove the file at ``path`` if there is one: a manifest is retired just before the file it
    describes is replaced (``atomic_write(before_replace=...)``), so a run killed between writing
    the two leaves the new file without a manifest, never beside the previous run's. A stream
    (/dev/stdout, a link to one, even redirected to a file: that file is the shell's) is left alone;
    a link to a file is refused (never followed, its target never removed)."""
    shown = os.path.abspath(os.path.expanduser(os.fspath(path)))
    if _is_stream_path(shown):
        return
    try:
        st = os.lstat(shown)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_error(os.fspath(path), exc) from None
    if stat.S_ISLNK(st.st_mode):
        if _resolves_to_stream(shown):
            return
        raise link_error(os.fspath(path))
    if not stat.S_ISREG(st.st_mode):
        return
    try:
        os.unlink(shown)                      # removes the name: a link swapped in now goes, not its target
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise write_error(os.fspath(path), exc) from None


def write_text(path, text: str | bytes, *, errors: str | None = None) -> None:
    """``text`` to ``path`` as UTF-8 (bytes: as they are), atomically."""
    if isinstance(text, bytes):
        with atomic_write(path, "wb") as fh:
            fh.write(text)
        return
    with atomic_write(path, "w", errors=errors) as fh:
        fh.write(text)


def write_error(shown: str, exc: OSError) -> AuditorError:
    """An OSError met while writing ``shown``, as an AuditorError that says what to do."""
    code = getattr(exc, "errno", None)
    folder = os.path.dirname(shown) or "."
    if code in (errno.ENOSPC, getattr(errno, "EDQUOT", -1), errno.EFBIG):
        what, hint = f"the disk is full ({exc.strerror})", "Free some space, or write to another disk."
    elif code == errno.EISDIR:
        what, hint = "it is a folder, not a file", "Give a file path, e.g. a name inside that folder."
    elif code == errno.ENOENT:
        what, hint = f"the folder {folder!r} does not exist", "Create it first, or choose a path in a folder that exists."
    elif code == errno.EEXIST:
        what, hint = "a file is in the way of the folder", "Give a folder path (it is created when missing)."
    elif code == errno.ENOTDIR:
        what, hint = "a part of the path is a file, not a folder", "Choose a path in a folder that exists."
    elif code in (errno.EACCES, errno.EPERM, errno.EROFS):
        what, hint = f"not allowed ({exc.strerror})", "Choose a path in a folder you can write to."
    else:
        what, hint = f"{exc.strerror or exc}", "Choose an output path in a folder that exists and is writable."
    return AuditorError("output_path", f"Cannot write {shown!r}: {what}.", hint)
