"""What the evasion tests share (tests/normalize/test_invisible_evasion.py and
tests/engines/test_ray_invisible_evasion.py): GSM8K test questions planted in a slice of GSM8K
train, each altered so that it reads identically to a person, as the hostile review planted them."""
from __future__ import annotations

import json
import unicodedata

import real_data

PLANTED = 30
TRAIN_ROWS = 1500
TEST_ROWS = 400

HOMOGLYPHS = str.maketrans("aoecpAOECP", "аоеср" "АОЕСР")      # Cyrillic a, o, e, c, p (and capitals)


def _inside(text: str, mark: str, every: int = 3) -> str:
    """``mark`` after every ``every``-th character that is not whitespace (inside words)."""
    out, count = [], 0
    for ch in text:
        out.append(ch)
        if not ch.isspace():
            count += 1
            if count % every == 0:
                out.append(mark)
    return "".join(out)


def _fullwidth(text: str) -> str:
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _accented(text: str) -> str:
    """The question with accented letters (composed, NFC): what the NFD case decomposes."""
    return text.replace("e", "é").replace("a", "à").replace("o", "ö")


# name -> (how the benchmark's question is written, how the planted copy is written)
VARIANTS = {
    "verbatim": (str, str),
    "zero_width_inside": (str, lambda t: _inside(t, "\u200b")),
    "zero_width_end": (str, lambda t: t + "\u200b\u200b\u200b"),
    "fullwidth": (str, _fullwidth),
    "cyrillic": (str, lambda t: t.translate(HOMOGLYPHS)),
    "soft_hyphen": (str, lambda t: _inside(t, "\u00ad", 4)),
    "bidi_marks": (str, lambda t: _inside(t, "\u200e", 5)),
    "joiners_and_bom": (str, lambda t: "\ufeff" + _inside(t, "\u200d", 6)),
    "nfd": (_accented, lambda t: unicodedata.normalize("NFD", _accented(t))),
}


def gsm8k_slices():
    train = real_data.rows("gsm8k/train.jsonl")[:TRAIN_ROWS]
    test = real_data.rows("gsm8k/test.jsonl")[:TEST_ROWS]
    # planted: ASCII questions of at least 20 words (an n-gram scan checks them), spread over the test slice
    eligible = [i for i, r in enumerate(test) if r["question"].isascii() and len(r["question"].split()) >= 20]
    planted = eligible[::len(eligible) // PLANTED][:PLANTED]
    assert len(planted) == PLANTED
    return train, test, planted


def write_rows(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path)


def planted_files(tmp_path, gsm8k, name):
    bench_form, copy_form = VARIANTS[name]
    train, test, planted = gsm8k
    bench = [dict(r, question=bench_form(r["question"])) for r in test]
    copies = [{"question": copy_form(test[i]["question"]), "answer": test[i]["answer"]} for i in planted]
    folder = tmp_path / name
    folder.mkdir()
    train_file = write_rows(folder / "train.jsonl", train + copies)
    test_file = write_rows(folder / "test.jsonl", bench)
    # one dataset holding both the questions and their altered copies (scan, dedup)
    both_file = write_rows(folder / "both.jsonl", train + [bench[i] for i in planted] + copies)
    return train_file, test_file, both_file


