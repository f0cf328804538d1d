"""What Chinese and Japanese text costs a worker in memory (issue 24): Chinese word frequencies
without wordfreq's Python jieba tokenizer (the same numbers as ``wordfreq.zipf_frequency``, which
tokenizes with it), and one MeCab tagger per process however many threads tag Japanese."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from wordfreq import zipf_frequency

from wiki.extract import cjk, lexicon

# one listed word, words wordfreq cuts in two or three (上升时间 = 上升 + 时间), traditional characters
# (內核 reads as 内核), a name no cut of listed words makes
WORDS = ["内核", "稳定期", "返回值", "哈希值", "制表符", "上升时间", "中断请求", "個人化", "內核", "贴标签", "鿏鿏"]


@pytest.mark.parametrize("word", WORDS)
def test_chinese_zipf_is_wordfreqs(word):
    assert lexicon.cjk_zipf(word, False) == pytest.approx(zipf_frequency(word, "zh", wordlist="small"), abs=0.01)


def test_a_common_and_a_rare_chinese_word_fall_either_side_of_the_threshold():
    assert lexicon.cjk_zipf("上升时间", False) >= lexicon.CJK_COMMON_ZIPF > lexicon.cjk_zipf("哈希值", False)


def test_chinese_frequencies_load_no_jieba_dictionary():
    # wordfreq builds its tokenizer on the first Chinese text it tokenizes
    code = (
        "import sys; from wiki.extract import lexicon; lexicon.cjk_zipf('稳定期', False);"
        " print(sys.modules['wordfreq.chinese'].jieba_tokenizer)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "None"


def test_threads_share_one_japanese_tagger(monkeypatch):
    import fugashi

    made = []
    real = fugashi.GenericTagger

    def counting(*args):
        made.append(real(*args))
        return made[-1]

    monkeypatch.setattr(fugashi, "GenericTagger", counting)
    monkeypatch.setattr(cjk, "_ja_tagger", None)
    sentences = ["東京スカイツリーは電波塔である。", "カーネルのスケジューラはタスクを選ぶ。"] * 4
    with ThreadPoolExecutor(4) as pool:
        found = list(pool.map(lambda s: cjk.names([s], japanese=True), sentences))
    assert len(made) == 1  # fugashi never unmaps a tagger's dictionary: one per thread piled up copies
    assert found[0] == found[2] and any(name == "東京スカイツリー" for name, *_ in found[0])
