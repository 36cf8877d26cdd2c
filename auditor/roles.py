"""Step 2, roles: which field is the text, the answer, the group, the labels, the id.

Roles may name nested fields with a dotted path (``question.stem``). Values become
text: lists are joined with spaces (a chat turn's content given as a list of parts is
its text parts), numbers and booleans are written out, null is missing. Blank roles are
guessed from common field names, and ``Roles.guessed`` says which were guessed so the
report can show it.
"""
from __future__ import annotations

import functools
import itertools
import hashlib
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass

from .errors import AuditorError
from .io.columns import TextColumn, TextColumnBuilder, utf8_text
from .io.table import HEAD_BYTES, HEAD_LEAST, HEAD_MOST

ROLE_NAMES = ("text", "answer", "group", "labels", "id")

# Common field names, most specific first.
GUESSES = {
    "text": ("question", "prompt", "instruction", "problem", "text", "query_text", "input", "sentence",
             "content", "context", "premise", "document", "nl", "utterance", "question_stem", "ctx", "goal"),
    # answerKey (ARC, OpenBookQA, CommonsenseQA) and label (HellaSwag, PIQA, SuperGLUE) are the gold as
    # stored, as MMLU's answer index is: the chosen option's text would need a join no path expresses.
    "answer": ("answer", "answerKey", "canonical_solution", "solution", "solutions", "output", "response",
               "completion", "code", "query", "sql", "target", "answers", "answers_spans", "best_answer",
               "reference", "chosen", "label", "summary", "highlights"),
    # a subject or category before a source (TruthfulQA's source is a URL per item, its category the topic)
    "group": ("db_id", "subject", "category", "source", "domain", "topic", "task", "dataset", "repo",
              "source_file", "activity_label"),
    "id": ("id", "task_id", "idx", "uid", "_id", "example_id", "question_id", "qid", "query_id", "problem_id",
           "prompt_id", "message_id", "ind"),
}
# A preference record's rejected response is neither its text nor its answer (hh-rlhf's {chosen,
# rejected}: the longest string, "rejected", was the text).
NEVER_GUESSED = ("rejected",)
# An answer-named object's own answer: SQuAD's answers.text, TriviaQA's answer.value, DROP's
# answers_spans.spans, an output holding {"answer", "rationale"}.
ANSWER_CHILDREN = ("text", "value", "answer", "spans")


@dataclass(frozen=True)
class Roles:
    text: str | None = None
    answer: str | None = None
    group: str | None = None
    labels: tuple = ()
    id: str | None = None
    guessed: tuple = ()
    # The fields the text is read from: one, or several (``text`` is then their names joined by
    # commas, "instruction,input") whose present values are joined as ``joined_text`` joins them.
    text_fields: tuple = ()
    # (role, field, record, head): a role guessed from a field that holds no value in the first
    # ``head`` records, which guesses read (``_head``), first holding one in ``record`` (0-based)
    late: tuple = ()

    @property
    def text_names(self) -> tuple:
        """The text's fields (``text_fields``, else the one ``text`` names)."""
        return self.text_fields or ((self.text,) if self.text is not None else ())

    def text_of(self, row, row_number: int) -> str | None:
        """One record's text: its text field's value as text, or its text fields' joined."""
        return joined_text(row, list(self.text_names), row_number)

    def to_dict(self) -> dict:
        out = {"text": self.text, "answer": self.answer, "group": self.group,
               "labels": list(self.labels), "id": self.id, "guessed": list(self.guessed)}
        if len(self.text_names) > 1 or "," in (self.text or ""):
            # Only then: a one-field text keeps the roles (and the fingerprint made of them) as they were.
            out["text_fields"] = list(self.text_names)
        return out


@dataclass(frozen=True)
class Fields:
    """The role values of every record as text (None where missing or null)."""

    text: TextColumn | list       # a TextColumn when read from records: a list's equal, held as UTF-8
    answer: TextColumn | list | None
    group: list | None
    labels: dict          # label field -> list of values
    ids: list | None


def _named(rows, name: str) -> str:
    """A role's field name without the spaces around it (as typed: " answer"), unless the records
    hold a field of that very name (a JSON key " pad ", which stripped could never be named); a
    name in another Unicode form than the data's key (typed "café" composed, the key decomposed,
    as macOS file tools write it) is that key when one field alone matches."""
    stripped = name.strip()
    if stripped != name and stripped and _present(rows, name, 1000) and not _present(rows, stripped, 1000):
        return name
    if stripped and not stripped.isascii() and not _present(rows, stripped, 1000):
        form = unicodedata.normalize("NFC", stripped)
        same = [f for f in available_fields(rows) if unicodedata.normalize("NFC", f) == form]
        if len(same) == 1:
            return same[0]
    return stripped


def fields_shown(fields) -> str:
    """Field names for a hint, each one blank or with spaces around it quoted (else it is unseen)."""
    return ", ".join(repr(f) if f != f.strip() or not f else f for f in fields) or "(none)"


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def resolve_roles(rows: list[dict], text=None, answer=None, group=None, labels=None, id=None, *,
                  head_only: bool = False) -> Roles:
    """Check the given roles exist and guess the blank ones. ``text`` may name several fields,
    joined by commas ("instruction,input") or as a list: each record's text is then their present
    values joined (``joined_text``), so two records sharing an instruction with different inputs
    differ. A field whose own name holds a comma, present in the records, is that one field (as a
    key with a dot in its name wins over nesting, ``lookup``). ``head_only``: ``rows`` are only the
    first records of a source streamed later (a corpus), so an error says how many were read.

    Guesses read the first records (``_head``); a role no field there can be guessed for is looked
    for past them (a field null or absent in the first thousands of records: dropped unsaid before).
    A given field's presence is checked in every record."""
    head = _head(rows)
    fields = available_fields(rows)
    text, text_list = _text_spec(rows, text)
    given = {"text": text, "answer": answer, "group": group, "id": id}
    for role, value in given.items():
        if value is not None and not isinstance(value, str):
            raise _not_a_name(role, value)
    given = {k: (_named(rows, v) if isinstance(v, str) else v) for k, v in given.items()}
    if labels is not None and not isinstance(labels, (str, list, tuple, set, frozenset)):
        raise _not_a_name("labels", labels, "a list of field names")
    label_list = [labels] if isinstance(labels, str) else list(labels or [])
    for lab in label_list:
        if not isinstance(lab, str):
            raise _not_a_name("labels", lab)
    label_list = [_named(rows, item) for lab in label_list for item in str(lab).split(",") if item.strip()]
    checked = [*(("text", name) for name in text_list or [given["text"]]),
               *((role, v) for role, v in given.items() if role != "text"), *(("labels", lab) for lab in label_list)]
    for role, path in checked:
        if not _blank(path) and not _present(rows, path, None):
            raise AuditorError("missing_field", f"The {role} field {path!r} is in {_no_record(rows, head_only)}.",
                               _selector_hint(head, path) or f"Available fields: {fields_shown(fields)}.")
        if not _blank(path):
            _check_one_way(head, role, path)
    named = [("text", v) for v in text_list or [given["text"]] if not _blank(v)]
    named += [(role, v) for role, v in given.items() if role != "text" and not _blank(v)]
    for k, (role, value) in enumerate(named):
        other = next((r for r, v in named[:k] if v == value), None)
        if other:   # e.g. text = answer: every text match would also count as an answer match
            raise AuditorError("usage", f"The {other} and {role} roles both name the field {value!r:.80}.",
                               "Give each role its own field, or leave one blank to have it guessed.")
    for lab in dict.fromkeys(label_list):
        other = next((r for r, v in named if v == lab), None)
        if other:   # a text read as its own label: every text conflict would be a label conflict
            raise AuditorError("usage", f"The {other} role and the labels both name the field {lab!r:.80}.",
                               "A label is a field besides the text, answer, group and id: name another.")
    taken = {v for _, v in named} | set(label_list) | set(NEVER_GUESSED)
    guessed, late = [], []
    chat_answer = None
    later = _Later(rows, head, fields, [r for r, v in given.items() if _blank(v)]) if not head_only else None
    for role in ("text", "answer", "group", "id"):
        if _blank(given[role]):
            readable = [name for name in GUESSES[role]
                        if name in fields and name not in taken and _readable(head, name)]
            # The first of them with a value in half the records or more: a "question" kept in 1 record
            # of 10 beside a "prompt" in all was the guess, and 9 records of 10 were degenerate.
            choice = next((name for name in readable if _held(head, name)), readable[0] if readable else None)
            # (only where the instruction is the guess: a "question" or "prompt" beside it stays the text)
            layout = _instruction_layout(head, fields, taken) if role == "text" and choice == "instruction" else None
            if layout:
                # An instruction-tuning record's task is its instruction with its input: the
                # instruction alone made every task sharing a template instruction ("Translate
                # the sentence below.") one exact duplicate.
                text_list, choice = list(layout), ",".join(layout)
                taken.update(layout)
                if _template(head, layout[0]) and _filled(head, layout[1]):
                    # ... unless one instruction is held by half the records or more: a template,
                    # which tells no record apart. In every text it made unrelated inputs near
                    # duplicates (a 33-word prompt before 2,030 GSM8K questions: one cluster at
                    # 0.4) and hid the test questions copied into the inputs from leak (2 of 30).
                    text_list, choice = None, layout[1]
            if role == "text" and choice is None:
                choice = _text_fallback(head, fields, taken)
                # (a field the first records hold is a better text than one they all lack)
                choice = choice or (later and later.choice(role, taken, late))
                prompt, chat_answer = _conversation_sides(head, choice) if choice else (None, None)
                if prompt:
                    # A conversation's question is its user turns and its answer the model's: with
                    # every turn as the text, a test question copied into a user turn was no
                    # identical text and, beside its answer, under the leak threshold (1 of 30
                    # GSM8K test questions planted in chat records found at 0.7).
                    choice = prompt
            if role == "answer" and choice is None and chat_answer and chat_answer not in taken:
                choice = chat_answer
            if role == "answer" and choice is None:
                text_path = given["text"] if "text" in guessed else None
                choice = _nested_answer(head, fields, taken, text_path)
            if choice is None and role != "text" and later:
                choice = later.choice(role, taken, late)
            if choice is not None:
                _check_one_way(head, role, choice)
                given[role] = choice
                taken.add(choice)
                guessed.append(role)
            else:
                given[role] = None
    if given["text"] is None:
        binary = [name for name in fields if "." not in name and _binary(head, name)]
        why = (f" {', '.join(map(repr, binary[:5]))} hold{'s' if len(binary) == 1 else ''} binary data that is "
               "not UTF-8 text (images, audio, pickles): no text to compare." if binary else "")
        seen = f" from the first {len(rows):,} records" if head_only else ""
        raise AuditorError("missing_field", f"No text field given, and none could be guessed{seen}.{why}",
                           f"Name one with --text. Available fields: {fields_shown(fields)}.")
    return Roles(text=given["text"], answer=given["answer"], group=given["group"], labels=tuple(label_list),
                 id=given["id"], guessed=tuple(guessed), text_fields=tuple(text_list or (given["text"],)),
                 late=tuple(late))


def _no_record(rows, head_only: bool) -> str:
    """Where a given field was not found: every record, or (``head_only``) the first ones read."""
    if not head_only:
        return "no record"
    return (f"no record of the first {len(rows):,} read (a corpus is streamed: its roles are checked on its first "
            "records, so a field first present later cannot be checked)")


class _Later:
    """The guess's look past the head: for the roles being guessed, the first record holding a
    text-like value of each of their common names (``GUESSES``) that no record of the head holds,
    found in one pass over the rest of the records, made when a role first needs it."""

    def __init__(self, rows, head, fields, roles):
        self.rows, self.head, self.found = rows, head, None
        self.names = [name for role in roles for name in GUESSES[role]
                      if len(rows) > len(head) and not (name in fields and _readable(head, name))]

    def choice(self, role: str, taken: set, late: list) -> str | None:
        if not self.names:
            return None
        if self.found is None:
            self.found = _first_values(self.rows, len(self.head), self.names)
        name = next((n for n in GUESSES[role] if n in self.found and n not in taken), None)
        if name is not None:
            late.append((role, name, self.found[name], len(self.head)))
        return name


LATE_BATCH = 4096               # records ``_first_values`` decodes at a time


def _first_values(rows, start: int, names) -> dict:
    """name -> the first record (0-based) from ``start`` on holding a text-like value of that top-level
    field (not null, blank, NaN, an empty list or an object), for those of ``names`` any record does.
    Packed rows are decoded only from the first record whose bytes may hold one of the names (a
    pass decoding 200,000 records took 0.3 s where no record held one)."""
    if hasattr(rows, "first_with_keys"):
        firsts = rows.first_with_keys(names, start)
        names = list(firsts)
        start = min(firsts.values(), default=len(rows))
    wanted, found = set(names), {}
    # slices a batch at a time from ``start``: an iterator's islice decodes the packed records it skips
    tail = (row for lo in range(start, len(rows) if wanted else start, LATE_BATCH) for row in rows[lo:lo + LATE_BATCH])
    for i, row in enumerate(tail, start):
        for name in wanted & row.keys() if isinstance(row, dict) else ():
            value = row[name]
            if not (_blank(value) or value == [] or (isinstance(value, float) and value != value)
                    or _object_like(value)):
                found[name] = i
        wanted -= found.keys()
        if not wanted:
            break
    return found


def late_notices(roles: Roles) -> list[str]:
    """A notice for each role guessed from a field the first records do not hold (``Roles.late``)."""
    return [f"the {role} field {name!r} (guessed) holds no value in the first {head:,} records, which role "
            f"guesses read: it was found further on, first in record {first:,} (0-based); records without it have "
            f"no {role}" for role, name, first, head in roles.late]


def _nested_answer(head, fields, taken, text_path: str | None) -> str | None:
    """An answer inside an object: the guessed text's object's answer (the Hub API's row.answer); an
    answer-named conversation's model turns (a preference record's chosen [{role, content}]); an
    answer-named object's own answer (``ANSWER_CHILDREN``)."""
    parent = text_path.split(".")[0] if text_path and text_path.count(".") == 1 else None
    nested = [f"{parent}.{name}" for name in GUESSES["answer"]] if parent else []
    for name in GUESSES["answer"]:
        turns = _chat_field(head, [name], taken) if name in fields and name not in taken else None
        if turns:       # every turn would hold the prompt again: the model's alone are the answer
            nested.append(_conversation_sides(head, turns)[1] or turns)
        nested += [f"{name}.{child}" for child in ANSWER_CHILDREN]
    return next((path for path in nested if path in fields and path not in taken and _readable(head, path)), None)


def _head(rows, most: int = HEAD_MOST) -> list:
    """The first records role guessing looks at (``io.table.head_of``'s bounds; of packed rows,
    about HEAD_BYTES of their pickles)."""
    if hasattr(rows, "head"):
        return rows.head(most, HEAD_BYTES, HEAD_LEAST)
    return rows[:most]


def _text_spec(rows: list[dict], text) -> tuple:
    """(text, fields): the text role as given (one name, or None to guess), or, when it names several
    fields (a list, or names joined by commas that are not one present field's name), their names
    joined by commas and the list of them."""
    if isinstance(text, (list, tuple)):
        if not text or not all(isinstance(name, str) for name in text):
            raise _not_a_name("text", text, "a field name, or a list of field names")
        names = [_named(rows, name) for name in text if name.strip()]
        if len(names) == 1:
            return names[0], None
    elif isinstance(text, str) and "," in text and not _present(rows, text.strip()):
        names = text_fields(text)
    else:
        return text, None
    if len(names) == 1:
        return names[0], None
    spec = text if isinstance(text, str) else ", ".join(map(repr, text))
    if not names:
        raise AuditorError("usage", f"The text fields {spec!r:.80} name no field.",
                           "Name one field, or several separated by commas (instruction,input).")
    comma = next((name for name in names if "," in name), None)
    if comma is not None:
        raise AuditorError("usage", f"The field {comma!r:.80} has a comma in its name: it cannot be one of several "
                           "text fields.", "Name it alone as the text, or rename it.")
    twice = next((name for k, name in enumerate(names) if name in names[:k]), None)
    if twice is not None:
        raise AuditorError("usage", f"The text field {twice!r:.80} is named twice in {spec!r:.80}.",
                           "Name each field once.")
    return ",".join(names), names


def _template(rows, name: str, sample: int = 1000) -> bool:
    """One value of ``name`` is held by at least half the (sampled) records."""
    values = [_as_key(lookup(r, name)) for r in rows[:sample]]
    counts = Counter(v for v in values if v is not None and v.strip())
    return bool(counts) and counts.most_common(1)[0][1] >= 0.5 * len(values)


def _filled(rows, name: str, sample: int = 1000) -> bool:
    """``name`` holds text in nearly every (sampled) record."""
    values = [lookup(r, name) for r in rows[:sample]]
    return sum(v is not MISSING and not _blank(_as_key(v)) for v in values) >= 0.9 * len(values)


def _held(rows, name: str, sample: int = 1000) -> bool:
    """``name`` holds a value (not null, NaN, blank or an empty list) in half the (sampled) records or more."""
    values = [lookup(r, name) for r in rows[:sample]]
    return 2 * sum(v is not MISSING and not _blank(v) and not (isinstance(v, list) and not v)
                   and not (isinstance(v, float) and v != v) for v in values) >= len(values)


def _instruction_layout(rows, fields, taken) -> tuple | None:
    """(instruction, input) of an instruction-tuning layout (``CORPUS_LAYOUTS``: Alpaca's
    instruction/input/output, Dolly's instruction/context/response) when the records have both
    fields, as text, and neither is taken by another role."""
    for layout in CORPUS_LAYOUTS:
        pair = layout[:2]
        if all(name in fields and name not in taken and _readable(rows, name) for name in pair):
            return pair
    return None


def _check_one_way(rows: list[dict], role: str, path: str, sample: int = 1000) -> None:
    """A dotted name must read one field in every record. ``lookup`` reads a key of that very name
    ("q.text") where a record has one (it wins over nesting), else the nested value ({"q": {"text":
    ...}}): records holding only the key mixed with records holding only the nested value would mix
    two fields, and are refused with both named."""
    if "." not in path:
        return
    literal = nested_only = False
    for row in rows[:sample]:
        if not isinstance(row, dict):
            continue
        if path in row:
            literal = True
        elif not nested_only:
            nested_only = _walk(row, path) is not MISSING
        if literal and nested_only:
            parent, _, child = path.rpartition(".")
            raise AuditorError("usage", f"The {role} field {path!r:.80} is ambiguous: some records hold a field "
                               f"named {path!r:.80}, others only a field {child!r:.40} inside {parent!r:.40}.",
                               "Rename one of them (e.g. write a copy of the data with the dotted key renamed); "
                               "a record holding both is read from the dotted key.")


def text_fields(spec: str) -> list[str]:
    """The fields a corpus text spec names: one field, or several joined by commas
    ("instruction,input,output"), as contamination reads a corpus (``joined_text``)."""
    return [name.strip() for name in spec.split(",") if name.strip()]


# Instruction-tuning layouts whose corpus text, when guessed, is all their fields (Alpaca, Dolly).
CORPUS_LAYOUTS = (("instruction", "input", "output"), ("instruction", "context", "response"))


def resolve_text_spec(rows: list[dict], spec=None) -> str:
    """A corpus's text spec (a field, fields joined by commas, or a list of fields) checked against
    its first rows (each field must exist), or one field guessed (``resolve_roles``): the fields
    joined by commas, in the order given. ``rows`` are the corpus's first records (``head_only``)."""
    if isinstance(spec, (list, tuple)) and spec and all(isinstance(name, str) for name in spec):
        spec = ",".join(spec)
    if spec is None or not isinstance(spec, str) or "," not in spec:
        roles = resolve_roles(rows, text=spec, head_only=True)
        # a guessed layout's input may hold numbers ({"instruction": "Square it.", "input": 5}): its
        # instruction is the text checked, as before the layout was guessed
        for name in roles.text_names[:1] if _blank(spec) else roles.text_names:
            _check_not_numbers(rows, name)
        first = roles.text_names[0]
        if _blank(spec) and "text" in roles.guessed and all_turns(first) != first:
            # A guessed conversation's corpus text is every turn (an item copied into an answer counts)
            return all_turns(first)
        if _blank(spec):
            # A guessed corpus text of an instruction-tuning layout is the whole record: Alpaca's
            # guessed "instruction" alone missed every benchmark item copied into input or output
            # (GSM8K in the 5,000-row Alpaca subset: 3 of the 11 items found at 6-grams).
            # (the text may be the input alone, under a template instruction: the corpus is still all of it)
            for layout in CORPUS_LAYOUTS:
                held = [f for f in layout if _present(rows, f) and _readable(rows, f)]
                if first in layout[:2] and first in held and len(held) > 1:
                    return ",".join(held)
        return roles.text
    if _present(rows, spec.strip()):
        raise AuditorError("usage", f"The field {spec.strip()!r} has a comma in its name, and a comma here "
                           "separates fields.", "Rename the field (or write a copy of the data with it renamed).")
    fields = text_fields(spec)
    if not fields:
        raise AuditorError("usage", f"The text fields {spec!r} name no field.",
                           "Name one field, or several separated by commas (instruction,input,output).")
    twice = next((name for k, name in enumerate(fields) if name in fields[:k]), None)
    if twice:
        raise AuditorError("usage", f"The text field {twice!r} is named twice in {spec!r}.",
                           "Name each field once.")
    for name in fields:
        resolve_roles(rows, text=name, head_only=True)
        _check_not_numbers(rows, name)
    return ",".join(fields)


def _check_not_numbers(rows: list[dict], name: str, sample: int = 1000) -> None:
    """A corpus text field must hold text: numbers alone (a score, an index) can hold no benchmark
    passage, and searching them would report a clean corpus."""
    looked = [lookup(r, name) for r in rows[:sample]]
    for i, value in enumerate(looked):      # objects (conversations[from=human]) refused before any worker reads
        as_text(value, name, i)
    values = [v for v in looked if v is not MISSING and v is not None]
    if values and all(isinstance(v, (bool, int, float)) for v in values):
        raise AuditorError("usage", f"The field {name!r} holds numbers, not text: no benchmark passage can be "
                           "found in it.", "Name the text fields (e.g. instruction,input,output).")


def joined_text(row, fields: list[str], row_number: int) -> str | None:
    """One record's text for a corpus scan: its ``fields`` (``text_fields``) read as ``as_text``
    reads one, the present ones joined by a newline; None when none is present."""
    if len(fields) == 1:
        return as_text(lookup(row, fields[0]), fields[0], row_number)
    parts = [as_text(lookup(row, name), name, row_number) for name in fields]
    parts = [part for part in parts if part is not None]
    return "\n".join(parts) if parts else None


def _not_a_name(role: str, value, what: str = "a field name (a string)") -> AuditorError:
    return AuditorError("usage", f"The {role} role must be {what}, got {type(value).__name__} {value!r:.40}.",
                        "Pass the field's name, e.g. text=\"question\"; a dotted path such as \"question.stem\" "
                        "reaches a nested field.")


def available_fields(rows: list[dict], sample: int = 1000) -> list[str]:
    """Top-level fields, then nested dotted paths (of an object, up to NESTED_DEPTH objects deep:
    ``data.q.text``; of the objects in a list, one level, like a conversation's turns:
    ``messages.content``), in first-seen order. Records are read one at a time (only names kept)."""
    seen: dict[str, None] = {}
    for row in itertools.islice(rows, sample):
        for key, value in row.items():
            seen[str(key)] = None
            inner = [value] if isinstance(value, dict) else value[:8] if isinstance(value, list) else ()
            for item in inner:
                if isinstance(item, dict):
                    _nested_paths(str(key), item, seen, NESTED_DEPTH if item is value else 1)
            if isinstance(value, list):
                for path in _turn_paths(str(key), value[:8]):
                    seen[path] = None
    return list(seen)


NESTED_DEPTH = 3        # objects within objects listed as fields (a.b, a.b.c, a.b.c.d)


def _nested_paths(prefix: str, item: dict, seen: dict, depth: int) -> None:
    for sub, parts in item.items():
        path = f"{prefix}.{sub}"
        seen[path] = None
        if _text_parts(parts):      # a turn's content parts: messages.content.text
            seen[f"{path}.text"] = None
        if depth > 1 and isinstance(parts, dict):
            _nested_paths(path, parts, seen, depth - 1)


SPEAKER_KEYS = ("role", "from")     # who speaks a turn (OpenAI, ShareGPT)


def _turn_paths(key: str, turns: list) -> list[str]:
    """A conversation's text by speaker: ``messages[role=user].content`` for each speaker seen."""
    paths = []
    for turn in turns:
        if not isinstance(turn, dict):
            continue
        speaker = next((k for k in SPEAKER_KEYS if isinstance(turn.get(k), str)), None)
        text = next((k for k in CHAT_TEXT_KEYS if k in turn), None)
        who = turn.get(speaker) if speaker else None
        if who and text and not set("[].=,") & set(who) and not set("[].=,") & set(key):
            paths.append(f"{key}[{speaker}={who}].{text}" + (".text" if _text_parts(turn[text]) else ""))
    return paths


def _selector_hint(rows, path: str, sample: int = 1000) -> str | None:
    """For a path whose selector matches nothing (``messages[role=usr].content``): the values its
    keys hold. None when every selection matches somewhere (then the name after it is wrong)."""
    parts = path_parts(path)
    for at, (_, selectors) in enumerate(parts):
        if not selectors:
            continue
        prefix = ".".join(_part_text(n, sel) for n, sel in parts[:at]) + ("." if at else "") + parts[at][0]
        if any(lookup(row, f"{prefix}{_part_text('', selectors)}") is not MISSING for row in rows[:sample]):
            continue
        if not any(lookup(row, prefix) is not MISSING for row in rows[:sample]):
            return None             # nothing to select from: the fields there are the hint
        held: dict[str, None] = {}
        key = next((k for k, _ in selectors
                    if not any(lookup(row, f"{prefix}[{k}={v}]") is not MISSING for row in rows[:sample]
                               for kk, v in selectors if kk == k)), selectors[0][0])
        for row in rows[:sample]:
            items = lookup(row, prefix)
            for item in _flat(items):
                if isinstance(item, dict) and _as_key(item.get(key)) is not None:
                    held[_as_key(item[key])] = None
        shown = ", ".join(list(held)[:12]) or "(none)"
        return f"No object under {prefix!r} matches {_part_text('', selectors)}. Its {key!r} values: {shown}."
    return None


def _part_text(name: str, selectors: tuple) -> str:
    return name + "".join(f"[{k}={v}]" for k, v in selectors)


def _flat(items):
    if isinstance(items, list):
        for item in items:
            yield from _flat(item)
    elif items is not MISSING:
        yield items


def _present(rows, path, sample: int = 100_000) -> bool:
    # islice: packed rows decode only as far as the first hit
    return any(lookup(row, path) is not MISSING for row in itertools.islice(rows, sample))


def _readable(rows, name: str, sample: int = 200) -> bool:
    """A guess must hold text-like values (not objects, nor lists of them) in most records."""
    values = [lookup(r, name) for r in rows[:sample]]
    # (NaN, pandas' missing value, and a blank CSV cell are no value: a column of them, guessed,
    # made every record degenerate, where a column of nulls was never guessed)
    values = [v for v in values if v is not MISSING and not _blank(v) and not (isinstance(v, float) and v != v)]
    return bool(values) and sum(not _object_like(v) for v in values) >= 0.9 * len(values)


def _object_like(value) -> bool:
    return (isinstance(value, dict) or (isinstance(value, bytes) and utf8_text(value) is None)
            or (isinstance(value, list) and any(isinstance(v, dict) for v in value)))


def _binary(rows, name: str, sample: int = 200) -> bool:
    """``name`` holds binary that is not UTF-8 text in most (sampled) records that hold it."""
    values = [v for v in (row.get(name) for row in rows[:sample]) if v is not None]
    return bool(values) and sum(isinstance(v, bytes) and utf8_text(v) is None for v in values) >= 0.5 * len(values)


# A conversation: a list of turns, each an object holding its text under one of these keys
# (OpenAI-style "messages" [{"role", "content"}], ShareGPT "conversations" [{"from", "value"}]).
CHAT_TEXT_KEYS = ("content", "value", "text")
CHAT_CONTENT_KEYS = ("content", "value")    # those a list of parts may stand in (its texts: .content.text)


def _chat_field(rows, fields, taken, sample: int = 200) -> str | None:
    """A field holding conversations, as a dotted path to the turns' text (``messages.content``,
    or ``messages.content.text`` when the content is a list of parts in nearly every turn; a mix of
    strings and parts is ``messages.content``, which reads both, ``as_text``): the text of every
    turn, joined, is the record's text (``lookup`` takes the key from each turn). Turns with no text
    (a tool call's null content) and a stray turn that is not an object do not count against it."""
    for name in fields:
        if name in taken or "." in name or not name.strip():
            continue
        values = [v for v in (row.get(name) for row in rows[:sample]) if v is not None]
        if not values or sum(isinstance(v, list) for v in values) < 0.9 * len(values):
            continue
        turns = [t for v in values if isinstance(v, list) for t in v]
        objects = [t for t in turns if isinstance(t, dict)]
        if not objects or len(objects) < 0.9 * len(turns):
            continue
        for key in CHAT_TEXT_KEYS:
            held = [t[key] for t in objects if t.get(key) is not None]
            if len(held) < 0.5 * len(objects):
                continue
            strings, parts = sum(isinstance(x, str) for x in held), sum(_text_parts(x) for x in held)
            if strings >= 0.9 * len(held) or (strings and strings + parts >= 0.9 * len(held)):
                path = f"{name}.{key}"
            elif parts >= 0.9 * len(held):
                path = f"{name}.{key}.text"
            else:
                continue
            if path not in taken:
                return path
    return None


# Who asks and who answers in a conversation's turns (OpenAI, ShareGPT, OpenAssistant, Gemini).
PROMPT_SPEAKERS = ("user", "human", "prompter")
RESPONSE_SPEAKERS = ("assistant", "gpt", "model", "bot", "chatbot")


def _conversation_sides(rows, path: str, sample: int = 200) -> tuple:
    """(prompt turns, response turns) of a guessed conversation path (``messages.content``):
    ``messages[role=user].content`` and ``messages[role=assistant].content`` when nearly every
    record has text in such turns (the response side None when it has not: tool calls with null
    content); (None, None) when the turns name no asking speaker, and every turn stays the text."""
    key, _, rest = path.partition(".")
    if not rest or "[" in key:
        return None, None
    head = [r for r in rows[:sample] if isinstance(r, dict) and isinstance(r.get(key), list)]
    if not head:
        return None, None

    def side(speakers) -> str | None:
        for spk in SPEAKER_KEYS:
            held = [sum(isinstance(t, dict) and t.get(spk) == who for r in head for t in r[key]) for who in speakers]
            for _, who in sorted(zip(held, speakers), key=lambda c: -c[0]):
                chosen = f"{key}[{spk}={who}].{rest}"
                filled = sum(not _blank(as_text(lookup(r, chosen), chosen, 0) if lookup(r, chosen) is not MISSING
                                        else None) for r in head)
                if filled >= 0.9 * len(head):
                    return chosen
        return None

    prompt = side(PROMPT_SPEAKERS)
    return (prompt, side(RESPONSE_SPEAKERS)) if prompt else (None, None)


def all_turns(path: str) -> str:
    """A conversation side's path with its turn selector dropped: every turn but the system's
    (``messages[role=user].content`` -> ``messages.content``)."""
    parts = path_parts(path)
    if not parts or not parts[0][1]:
        return path
    return ".".join([parts[0][0]] + [_part_text(n, sel) for n, sel in parts[1:]])


def _text_parts(value) -> bool:
    """A turn's content as a list of parts, some holding text ([{"type": "text", "text": ...}])."""
    return (isinstance(value, list) and bool(value) and all(isinstance(p, dict) for p in value)
            and any(isinstance(p.get("text"), str) for p in value))


def _content_parts(value) -> bool:
    """A content given as a list of parts (OpenAI, Anthropic, Hugging Face chat templates): objects
    each naming its ``type``, [{"type": "text", "text": ...}, {"type": "image_url", ...}]."""
    return bool(value) and all(isinstance(p, dict) and isinstance(p.get("type"), str) for p in value)


def content_part_texts(parts) -> list:
    """The texts of a content's parts, in order: those whose ``text`` is a string."""
    return [p["text"] for p in parts if isinstance(p.get("text"), str)]


def _text_fallback(rows, fields, taken) -> str | None:
    """The text when no field has a text name: a conversation's turns; a text-named field reached
    by a dotted path (ARC's question.stem, the Hub API's row.question, q.text, a key named
    "question.text"); the longest string field that is not named as an id, answer or group; else
    the longest string that is not named as an id. (The longest string alone made ARC's
    "Mercury_7175875" ids the text: an audit of ids, every record distinct.)"""
    named = set(GUESSES["id"]) | set(GUESSES["answer"]) | set(GUESSES["group"])
    chat = _chat_field(rows, fields, taken)
    if chat:
        return chat
    try:
        dotted = _dotted_text(rows, fields, taken)
    except AuditorError as ambiguous:
        # Several nested texts and none better (choice1.text, choice2.text): a top-level string
        # beside them (a story, a body) is the record's text; with none, the guess is refused.
        dotted, refused = None, ambiguous
    else:
        refused = None
    found = (dotted or _longest_string_field(rows, fields, taken | named)
             or _longest_string_field(rows, fields, taken | set(GUESSES["id"])))
    if refused is not None and (found is None or _mean_length(rows, found) < max(
            (_mean_length(rows, path) for path in getattr(refused, "candidates", ())), default=0.0)):
        # a top-level string shorter than the nested texts (a language code "en", a source name)
        # is no better a text than they are: the guess stays refused
        raise refused
    return found


def _mean_length(rows, path: str, sample: int = 200) -> float:
    """The mean length of ``path``'s values read as text (``lookup``) in the first records."""
    values = [lookup(row, path) for row in rows[:sample]]
    texts = [v if isinstance(v, str) else " ".join(map(str, v)) if isinstance(v, list) else str(v)
             for v in values if v is not MISSING and v is not None]
    return sum(map(len, texts)) / len(texts) if texts else 0.0


TEXT_CHILDREN = (*GUESSES["text"], "stem")
# A multiple-choice item's options: their texts (choices.text) are answers offered, not the question.
OPTION_FIELDS = ("choices", "options", "endings", "candidates")
# Objects describing a record (meta.text: a note, a source's title) hold no text of its own.
META_FIELDS = ("meta", "metadata", "info", "extra", "attributes")


def _dotted_text(rows, fields, taken, sample: int = 200) -> str | None:
    """A text-named field (or "stem") reached by a dotted path: nested in objects (q.text,
    data.q.text) or a key with a dot in its name ("question.text"). Ranked by its last name (in
    GUESSES order), then by the best text name among the outer ones (question.text before
    context.text; q.text after both); an outer name of an answer or id (answers.text), or of a
    multiple-choice item's options (question.choices.text, ARC's beside question.stem), is not a
    text. Two best candidates under outer names that are not text names (q.text, p.text) are
    ambiguous: refused with both named."""
    not_outer = set(GUESSES["answer"]) | set(GUESSES["id"]) | set(OPTION_FIELDS) | set(META_FIELDS)
    head = rows[:sample]
    ranked = []
    for path in fields:
        if path in taken or "[" in path or "." not in path:
            continue
        *outer, last = path.split(".")
        if last not in TEXT_CHILDREN or not_outer & set(outer) or not all(outer):
            continue
        if not any(isinstance(row, dict) and path in row for row in head):       # nested, not one key
            parent = ".".join(outer)
            if sum(isinstance(lookup(row, parent), dict) for row in head) < 0.9 * len(head):
                continue
        if _readable(rows, path):
            outer_rank = min((GUESSES["text"].index(name) for name in outer if name in GUESSES["text"]),
                             default=len(GUESSES["text"]))
            ranked.append(((TEXT_CHILDREN.index(last), outer_rank), path))
    if not ranked:
        return None
    best = min(rank for rank, _ in ranked)
    tied = [path for rank, path in ranked if rank == best]
    if len(tied) > 1 and best[1] == len(GUESSES["text"]):
        shown = ", ".join(tied[:5])
        error = AuditorError("usage", f"No text field given, and several could be it: {shown}.",
                             f"Name one with --text (e.g. --text {tied[0]}), or several joined by commas.")
        error.candidates = tuple(tied)      # (``_text_fallback`` weighs a top-level string against them)
        raise error
    return tied[0]


def _longest_string_field(rows, fields, taken) -> str | None:
    best, best_len = None, 0.0
    for name in fields:
        if name in taken or not name.strip():   # a blank name cannot be given back as a role
            continue
        # a nested path (q.stem) reads None here: only top-level keys, a dotted one included, count
        values = [row.get(name) for row in rows[:200]]
        strings = [v if isinstance(v, str) else utf8_text(v) for v in values if isinstance(v, (str, bytes))]
        strings = [v for v in strings if v is not None]
        if len(strings) >= 0.5 * len(values):
            mean = sum(map(len, strings)) / max(1, len(strings))
            if mean > best_len:
                best, best_len = name, mean
    return best


MISSING = object()


def lookup(row, path: str):
    """A field by dotted path; a literal key containing a dot wins over nesting. A part may select
    the objects of a list by a key's value, ``messages[role=user].content`` (``path_parts``); a
    record where none is selected has no such field."""
    if path in row:
        return row[path]
    return _walk(row, path)


def _walk(row, path: str):
    """``lookup`` by nesting alone (a key named ``path`` itself is not read)."""
    value, chosen, before = row, False, None
    for name, selectors in path_parts(path):
        if isinstance(value, dict):
            value = value.get(name, MISSING)
        elif isinstance(value, list):  # a list of objects: take the field from each
            value = _pluck(value, name, keep_system=chosen, strings=_text_of_content(before, name))
        elif not (isinstance(value, str) and _text_of_content(before, name)):   # (a string content: itself)
            return MISSING
        if value is MISSING:
            return MISSING
        if selectors:
            value = _select(value, selectors)
            if value is MISSING:
                return MISSING
        chosen, before = bool(selectors), name
    return value


def _text_of_content(before: str | None, name: str) -> bool:
    """Whether ``name`` is the text of a turn's content (``messages.content.text``): there a
    content that is a string is its own text, as a list of parts is its text parts'. A path guessed
    on records whose contents are parts read a later record's string content as empty (a chat file
    mixing both: half its texts blank)."""
    return name == "text" and before in CHAT_CONTENT_KEYS


_SELECTOR = re.compile(r"\[([^\[\]=]+)=([^\[\]]*)\]")
_PART = re.compile(r"([^\[\]]+)((?:\[[^\[\]=]+=[^\[\]]*\])*)")


@functools.lru_cache(maxsize=1024)
def path_parts(path: str) -> tuple:
    """A dotted path as ((name, ((key, value), ...)), ...): ``messages[role=user].content`` is
    messages, selecting the objects whose role is "user", then content. Dots inside brackets
    belong to the value (``[model=gpt-3.5]``); a part that is not of this form is a plain name."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(path):
        depth += (ch == "[") - (ch == "]")
        if ch == "." and depth == 0:
            parts.append(path[start:i])
            start = i + 1
    parts.append(path[start:])
    out = []
    for part in parts:
        m = _PART.fullmatch(part)
        out.append((m[1], tuple(_SELECTOR.findall(m[2]))) if m else (part, ()))
    return tuple(out)


def _select(value, selectors: tuple):
    """The objects of a list (or the object) whose keys hold the selected values, compared as
    text (``as_text``); MISSING when none is."""
    def chosen(item) -> bool:
        return isinstance(item, dict) and all(_as_key(item.get(k)) == v for k, v in selectors)
    if isinstance(value, dict):
        return value if chosen(value) else MISSING
    if isinstance(value, list):         # lists within it (a batch of conversations) as _pluck reads them
        kept = [item for item in (_select(v, selectors) if isinstance(v, list) else v for v in value)
                if item is not MISSING and (isinstance(item, list) or chosen(item))]
        return kept if kept else MISSING
    return MISSING


def _as_key(value) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bytes):
        return utf8_text(value)
    return as_text(value, "", 0)


def _pluck(items: list, key: str, keep_system: bool = False, strings: bool = False) -> list:
    """``key`` of each object in a list, and in the lists within it (a conversation's turns whose
    content is a list of parts: ``messages.content.text``). A conversation's system turns are left
    out unless selected by name (``messages[role=system].content``): one system prompt repeated
    in every record made unrelated conversations near duplicates (200 MBPP tasks behind a 45-word
    prompt: one cluster of 186), and it is not the data. ``strings``: a string in the list is kept
    as itself (a turn's string content, read by ``messages.content.text``: ``_text_of_content``)."""
    # Objects without the key are skipped, and a list where none has it has no such field (MISSING):
    # a misspelt turn key (conversations[from=gpt].content for .value) read every text as blank.
    out = []
    for v in items:
        if isinstance(v, list):
            inner = _pluck(v, key, keep_system, strings)
            if inner is not MISSING:
                out.append(inner)
        elif isinstance(v, dict) and key in v and (keep_system or not _system_turn(v)):
            out.append(v[key])
        elif strings and isinstance(v, str):
            out.append(v)
    return out if out else MISSING


def _system_turn(turn: dict) -> bool:
    """A conversation's system turn (OpenAI ``role``, ShareGPT ``from``)."""
    return turn.get("role") == "system" or turn.get("from") == "system"


def as_text(value, field: str, row: int) -> str | None:
    """A role value as text; dicts are refused (name a nested field instead)."""
    if value is None or value is MISSING:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # NaN is pandas' missing value (to_dict + json.dumps writes NaN): missing, not the text
        # "nan" that made every missing answer one duplicate group and a leak. A whole float is
        # the int a writer widened (an int column with a gap): 18.0 is 18, as in JSON.
        if value != value:
            return None
        return str(int(value)) if value.is_integer() and abs(value) < 2 ** 53 else repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        # A turn's content as a list of parts is its text parts' texts (an image part holds none):
        # ``messages[role=user].content`` reads string and parts contents alike.
        items = content_part_texts(value) if _content_parts(value) else value
        parts = [as_text(v, field, row) for v in items]
        return " ".join(p for p in parts if p)
    if isinstance(value, dict):
        keys = ", ".join(f"{field}.{k}" for k in list(value)[:5])
        raise AuditorError("bad_value", f"Field {field!r} of record {row} (0-based) is an object, not text.",
                           f"Name a nested field with a dotted path, e.g. {keys}.")
    if isinstance(value, bytes):
        text = utf8_text(value)      # (Parquet binary that is text, from older Spark or Hive)
        if text is None:
            raise AuditorError("bad_value", f"Field {field!r} of record {row} (0-based) holds binary data, not "
                               "UTF-8 text.", "Choose a text field for this role.")
        return text
    return str(value)  # dates, decimals: their written form


def _batches(rows):
    """(the first record's number, records): a list whole; packed rows (``io.table.PackedRows``)
    decoded a batch at a time, so their records are never all dicts at once."""
    if hasattr(rows, "batches"):
        yield from rows.batches()
    else:
        yield 0, rows


def _column(rows: list, path: str, lo: int = 0) -> list:
    return [as_text(lookup(row, path), path, i) for i, row in enumerate(rows, lo)]


def _texts(rows: list, names: list, lo: int = 0) -> list:
    if len(names) == 1:
        return _column(rows, names[0], lo)
    return [joined_text(row, names, i) for i, row in enumerate(rows, lo)]


SHARED_VALUES = 1 << 16


def _shared(values: list, memo: dict) -> list:
    """``values`` with equal ones one string object: answers, groups and labels repeat (a label of
    a few classes held a string per record); a column of more than SHARED_VALUES distinct values
    stops sharing new ones, so the memo stays small."""
    if len(memo) > SHARED_VALUES:
        return values
    return list(map(memo.setdefault, values, values))


def column(rows: list[dict], path: str | None) -> list | None:
    if path is None:
        return None
    out: list = []
    for lo, batch in _batches(rows):
        out += _column(batch, path, lo)
    return out


def text_column(rows: list[dict], roles: Roles, on_batch=None) -> TextColumn:
    """Every record's text (``Roles.text_of``): its text field, or its text fields joined.
    ``on_batch(records, texts)`` (optional) sees each batch of decoded records with their texts
    (last, so it may change those records)."""
    names = list(roles.text_names)
    out = TextColumnBuilder()
    for lo, batch in _batches(rows):
        texts = _texts(batch, names, lo)
        out.extend(texts)
        if on_batch is not None:
            on_batch(batch, texts)
    return out.column()


def extract(rows: list[dict], roles: Roles, on_batch=None) -> Fields:
    """Every role's values, in one pass over the records (a batch of them decoded at a time);
    ``on_batch`` as in ``text_column``."""
    names = list(roles.text_names)
    paths = {"answer": roles.answer, "group": roles.group, "ids": roles.id,
             **{("label", lab): lab for lab in roles.labels}}
    text = TextColumnBuilder()
    # Texts and answers are held as UTF-8 (``TextColumn``); groups, labels and ids repeat, so equal
    # ones share a string (``_shared``).
    values = {key: TextColumnBuilder() if key == "answer" else [] for key, path in paths.items() if path is not None}
    memos: dict = {key: {} for key in values}
    for lo, batch in _batches(rows):
        texts = _texts(batch, names, lo)
        text.extend(texts)
        for key, out in values.items():
            column_values = _column(batch, paths[key], lo)
            if key == "answer":
                out.extend(column_values)
            else:
                out += _shared(column_values, memos[key])
        if on_batch is not None:       # last: it may change the records
            on_batch(batch, texts)
    answer = values.get("answer")
    return Fields(text=text.column(), answer=None if answer is None else answer.column(), group=values.get("group"),
                  labels={lab: values["label", lab] for lab in roles.labels}, ids=values.get("ids"))


def canonical_record(row: dict) -> str:
    """One JSON string per record with sorted keys: the basis of record identity and fingerprints."""
    return json.dumps(row, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


# The fingerprint folds each record's SHA-256 into a polynomial hash modulo a 127-bit prime, so
# pieces of a dataset (a Ray task's shard) fold separately and combine in order on the driver
# (``combine_folds``) into the same value as one pass over the whole.
FOLD_MODULUS = 2 ** 127 - 1
FOLD_BASE = int.from_bytes(hashlib.sha256(b"auditor record fold").digest()[:15], "big")


def fold_records(records, state: tuple = (0, 0)) -> tuple:
    """(hash, count) of canonical records in order, continuing ``state``."""
    h, n = state
    sha = hashlib.sha256
    for record in records:
        h = (h * FOLD_BASE + int.from_bytes(sha(record.encode("utf-8", "surrogatepass")).digest()[:16], "big")) \
            % FOLD_MODULUS
        n += 1
    return h, n


def combine_folds(first: tuple, second: tuple) -> tuple:
    """The fold of ``first``'s records followed by ``second``'s."""
    return (first[0] * pow(FOLD_BASE, second[1], FOLD_MODULUS) + second[0]) % FOLD_MODULUS, first[1] + second[1]


def fingerprint_of(fold: tuple, roles: Roles) -> str:
    digest = hashlib.sha256()
    digest.update(json.dumps(roles.to_dict(), sort_keys=True).encode())
    digest.update(b"\n%d:%d" % (fold[1], fold[0]))
    return "sha256:" + digest.hexdigest()[:16]


def fingerprint(records: list[str], roles: Roles) -> str:
    """A stable hash of the loaded records (canonical JSON, in order) and the roles applied."""
    return fingerprint_of(fold_records(records), roles)
