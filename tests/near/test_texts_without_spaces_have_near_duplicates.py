"""Chinese, Japanese and Thai texts, written without spaces between words, have near duplicates.

From the round-9 real-data review: split on whitespace alone, a Chinese or Japanese sentence was one
word, so a question with one character changed shared no shingle with the original: on 1,469
GSM8K-shaped records carried into Chinese characters, `scan` found 100 near-duplicate pairs (the
identical texts) where an all-pairs character 3-gram Jaccard finds 150, and claimed recall 1 (Thai
letters: the same). Each character of a script written without spaces (Han, kana, Thai, Lao,
Khmer, Myanmar) is now a word of its own, so the default word:3 shingles of such a text are its
character 3-grams; other scripts keep their words.
"""
import unicodedata

import ground_truth as gt
from auditor import Table, scan
from auditor.engines import leak
from auditor.normalize import fold
from auditor.settings import LeakSettings, RoleNames
from auditor.shingles import shingle_matrix, words
from auditor.unspaced import UNSPACED

# Real sentences (no spaces, as written), and each with one character changed (a near duplicate).
CHINESE = [
    "小明有三个苹果，他又买了五个苹果，请问他现在一共有多少个苹果？",
    "一辆汽车每小时行驶六十公里，行驶四个小时后一共行驶了多少公里？",
    "妈妈把一块蛋糕平均分给四个孩子，每个孩子得到这块蛋糕的几分之几？",
    "学校图书馆原有图书两千本，今年又新购进了五百本，现在一共有多少本？",
    "一个长方形的长是八厘米，宽是五厘米，这个长方形的面积是多少平方厘米？",
    "农场里有鸡和兔子一共三十五只，它们的脚一共有九十四只，鸡和兔子各有多少只？",
]
JAPANESE = [
    "太郎さんはりんごを三つ持っています。花子さんから五つもらうと全部でいくつになりますか。",
    "電車は一時間に六十キロメートル進みます。四時間では何キロメートル進みますか。",
    "クラスには三十人の生徒がいて、そのうち半分が女の子です。男の子は何人ですか。",
    "本屋で千円の本を二冊買い、五千円札で払いました。おつりはいくらですか。",
]
THAI = [
    "แม่ค้ามีมะม่วงสามสิบผลขายไปสิบสองผลเหลือมะม่วงกี่ผล",
    "รถไฟวิ่งด้วยความเร็วหกสิบกิโลเมตรต่อชั่วโมงสี่ชั่วโมงวิ่งได้กี่กิโลเมตร",
]


def _one_changed(text: str, at: int) -> str:
    other = ("ก" if text[at] != "ก" else "ข") if "\u0e00" <= text[at] <= "\u0e7f" else ("十" if text[at] != "十" else "百")
    return text[:at] + other + text[at + 1:]


def _corpus() -> list:
    texts = CHINESE + JAPANESE + THAI
    return texts + [_one_changed(t, len(t) // 2) for t in texts] + [texts[0]]


def _record_pairs(texts, threshold):
    result = scan(Table(rows=[{"question": t} for t in texts], source="cjk"), text="question")
    return gt.engine_record_pairs(result.pairs, threshold), result


def test_one_character_changed_is_a_near_duplicate_as_character_trigrams_say():
    texts = _corpus()
    # Independent: all-pairs Jaccard of character 3-grams (no spaces in these texts, so a word:3
    # shingle of characters-as-words is a character 3-gram).
    assert not any(c.isspace() for t in texts for c in t)
    truth = gt.Reference(gt.shingle_sets(texts, "char", 3), 0.3)
    for threshold in (0.7, 0.5, 0.3):
        expected = truth.record_pairs(threshold)
        found, result = _record_pairs(texts, threshold)
        assert set(found) == set(expected), threshold
        for pair, jaccard in expected.items():
            assert abs(found[pair] - jaccard) < 1e-9
    # every sentence and its variant (12 pairs), and the first sentence's copy with both (2 pairs);
    # split on whitespace alone, only the copy (1 pair) was found
    assert len(truth.record_pairs(0.7)) == 14
    assert result.summary()["near_duplicates"]["pairs"] == 14


def test_a_test_question_with_a_character_changed_leaks_as_near():
    train = Table(rows=[{"question": t} for t in CHINESE + JAPANESE + THAI], source="train")
    test = Table(rows=[{"question": _one_changed(t, 3)} for t in CHINESE[:3]] + [{"question": "完全不同的问题。"}],
                 source="test")
    summary = leak(train, test, settings=LeakSettings(roles_a=RoleNames(text="question"))).summary()
    assert summary["identical_text"]["records"] == 0
    assert summary["near_duplicate"]["records"] == gt.near_leak_count(CHINESE + JAPANESE + THAI, [
        _one_changed(t, 3) for t in CHINESE[:3]] + ["完全不同的问题。"], 0.7) == 3


def test_words_split_exactly_the_unspaced_scripts():
    # Every Han ideograph, kana, Thai, Lao, Khmer and Myanmar character (by Unicode name) is a word of its
    # own; what else the blocks hold is unassigned, a combining kana mark or an archaic kana; Hangul, Latin
    # and Arabic keep their words.
    every = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    named = [c for c in every if unicodedata.name(c, "").startswith(gt.UNSPACED_NAMES)]
    assert len(named) > 90_000 and all(UNSPACED.match(c) for c in named)
    assert sum(unicodedata.name(c).startswith("THAI") for c in named) == 87
    others = {unicodedata.name(c, "").split(" ")[0] for c in every
              if UNSPACED.match(c) and not unicodedata.name(c, "").startswith(gt.UNSPACED_NAMES)}
    assert others == {"", "COMBINING", "HENTAIGANA"}
    mixed = fold("東京タワーはTokyo Towerとも呼ばれる 한국어 문장 ไทย مرحبا بالعالم")
    split = words(mixed)             # the fold maps some kana to the Han letters they look like (TR39)
    assert split == gt.reference_words(mixed) and len(split) == 21
    assert split[6:8] == ["tokyo", "tower"] and split[14:16] == [fold("한국어"), fold("문장")]
    assert split[-2:] == [fold("مرحبا"), fold("بالعالم")] and split[16:19] == list(fold("ไทย"))


def test_english_and_mixed_texts_keep_their_shingles():
    texts = ["The cat sat on the mat today", "the cat sat on the mat", "東京タワーはTokyo Towerとも呼ばれる",
             "東京タワーはTokyo Towerと呼ばれる", "Ünïcode café naïve résumé"]
    matrix = shingle_matrix(texts)
    assert [int(n) for n in matrix.sum(axis=1).A1] == [len(gt.word_shingles(t)) for t in texts] == [5, 4, 12, 11, 2]
