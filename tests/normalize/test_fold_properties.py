"""``normalize.fold``, the one normalisation every check reads texts through: its steps, its
fixed point, that it keeps whitespace where it is (so every tokeniser splits folded texts where it
splits the originals), and that each tokeniser (shingles, the contamination scan's small and
compiled paths, evidence spans) gives the tokens of the folded text."""
from __future__ import annotations

import unicodedata

import numpy as np
from hypothesis import given, settings, strategies as st

from auditor import normalize
from auditor.confusables import tables
from auditor.contamination import build_index, scan_batch
from auditor.wordtokens import folded_words, tokenize
from auditor.evidence import token_spans
from auditor.shingles import ShingleSpec, shingle_matrix

HIDDEN_SAMPLE = "\u00ad\u200b\u200c\u200d\u200e\u200f\u202a\u202e\u2060\u2066\u2069\ufeff\ufe0f\u034f\U000e0041"
# Texts mixing ASCII, hidden characters, compatibility forms, homoglyphs, accents (both forms),
# other scripts, odd whitespace and lone surrogates.
ALPHABET = st.sampled_from(list("abcXYZ019 ,.!-_'\n\t") + list(HIDDEN_SAMPLE)
                           + list("ＡＢｃ１ﬁ½²аоеᴛТтΗηΣσςßİıé\u0301\u0308ü漢字ー一\u00a0\u2003\u3000\u2028\u00a8") + ["\ud800"])
TEXTS = st.text(alphabet=ALPHABET, max_size=40)


def test_every_format_character_of_this_python_is_hidden():
    cf = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) == "Cf"]
    assert cf and all(c in normalize.HIDDEN_CHARS for c in cf)
    # and nothing that is whitespace or a visible letter (the Hangul fillers are letters that render blank)
    assert not any(c.isspace() for c in normalize.HIDDEN_CHARS)
    assert {c for c in normalize.HIDDEN_CHARS if c.isalnum()} == set("\u115f\u1160\u3164\uffa0")


def test_the_issues_evasions_fold_to_the_plain_text():
    plain = "Natalia sold clips to 48 of her friends"
    for altered in ("Nata\u200blia so\u200bld clips to 48 of her friends\u200b",
                    "Ｎａｔａｌｉａ ｓｏｌｄ ｃｌｉｐｓ ｔｏ ４８ ｏｆ ｈｅｒ ｆｒｉｅｎｄｓ",
                    "Nаtаliа sоld сlips tо 48 оf hеr friеnds",          # Cyrillic а о с е
                    "NATALIA SOLD CLIPS TO 48 OF HER FRIENDS",
                    "Nata\u00adlia sold\u200e clips\u202e to 48 of her\ufeff friends"):
        assert normalize.fold(altered) == plain.lower()
    assert normalize.fold(unicodedata.normalize("NFD", "café naïve")) == "café naïve"
    # capitals that pass for Latin ones, after case folding
    assert normalize.fold("ТНЕ ВЕSТ") == normalize.fold("THE BEST") == "the best"


def test_ascii_text_is_only_lowercased():
    text = "".join(map(chr, range(128))) + " burn 10 I|l 0O m rn"
    assert normalize.fold(text) == text.lower()
    assert normalize.code("Mixed CASE burn 1 l") == "Mixed CASE burn 1 l"


def test_case_insensitive_matching_stays_exact_in_other_scripts():
    assert normalize.fold("ΗΛΙΟΣ ΜΟΣΚΒΑ") == normalize.fold("ηλιοσ μοσκβα") == normalize.fold("Ηλιος Μοσκβα")
    assert normalize.fold("МОСКВА") == normalize.fold("москва")


def test_the_confusable_table_never_maps_ascii_digits_or_punctuation():
    t = tables()
    for table in (t.cased, t.folded):
        assert not any(k.isascii() for k in table)
        assert not any(unicodedata.category(k) == "Nd" for k in table)
        assert all(unicodedata.category(c)[0] in "LM" for k, v in table.items() for c in k + v)


def test_blank_and_visible():
    assert normalize.is_blank("\u200b\u200e \u202a\ufeff\t") and normalize.is_blank(None)
    assert not normalize.is_blank("\u200ba")
    assert normalize.visible("a\u200bb\u202ec\ud800") == "a⟨U+200B⟩b⟨U+202E⟩c⟨U+D800⟩"
    shown, spans = normalize.visible_spans("x\u200by z", [[0, 3], [4, 5]])
    assert shown == "x⟨U+200B⟩y z" and [shown[a:b] for a, b in spans] == ["x⟨U+200B⟩y", "z"]


@settings(max_examples=400, deadline=None)
@given(TEXTS)
def test_fold_is_a_fixed_point_and_keeps_whitespace(text):
    folded = normalize.fold(text)
    assert normalize.fold(folded) == folded
    # whitespace where it was: the folded text's words are the original words' folds
    assert folded.split() == [w for word in text.split() for w in normalize.fold(word).split()]
    assert normalize.default(text) == " ".join(folded.split())
    assert normalize.is_blank(text) == (not normalize.default(text))


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_evidence_tokens_are_the_contamination_tokens(text):
    spans = token_spans(text)
    assert [t for t, _, _ in spans] == tokenize(text) == folded_words(normalize.fold(text))
    for _, start, end in spans:
        assert 0 <= start < end <= len(text)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS, min_size=1, max_size=6), st.lists(TEXTS, min_size=1, max_size=6))
def test_compiled_and_small_scans_read_the_folded_texts(bench, corpus):
    bench = [b + " alpha beta gamma delta" for b in bench]
    index = build_index(bench, 2)
    small = scan_batch(index, corpus, compiled=False)
    compiled = scan_batch(index, corpus, compiled=True)
    folded = scan_batch(index, [normalize.fold(c) for c in corpus], compiled=False)
    for a, b in ((small, compiled), (small, folded)):
        assert a.tokens == b.tokens and a.no_words == b.no_words
        assert np.array_equal(a.window_hit, b.window_hit) and np.array_equal(a.text_hit, b.text_hit)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS, min_size=2, max_size=8))
def test_shingles_are_the_folded_texts_shingles(texts):
    for spec in (ShingleSpec("word", 2), ShingleSpec("char", 3)):
        raw = shingle_matrix(texts, spec)
        folded = shingle_matrix([normalize.fold(t) for t in texts], spec)
        # the same sets (column ids depend on the vocabulary, which is the same)
        assert (raw != folded).nnz == 0
