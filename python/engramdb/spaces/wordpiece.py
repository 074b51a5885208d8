"""BERT uncased WordPiece, id for id as the Hugging Face fast tokenizer of all-MiniLM-L6-v2.

BertNormalizer (clean_text, handle_chinese_chars, strip_accents=None so on, lowercase),
BertPreTokenizer, WordPiece with ``##`` and ``[UNK]``, at most 100 chars a word; ``[CLS] ...
[SEP]`` truncated to sentence-transformers' ``max_seq_length``. Pure Python; the optional
``tokenizers`` package is the other backend (`HFTokenizer`, the same ids).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from pathlib import Path

from .minilm_weights import MAX_SEQ_LENGTH

# ------------------------------------------------------------------------------------- tokenizer
# The Hugging Face tokenizer (Rust) classifies characters with the `unicode_categories` crate, whose
# tables are older than Python's `unicodedata` (and unlike it, never treat unassigned code points as
# controls). So the classes are not taken from `unicodedata`: they are the crate's, as range tables
# read off the `tokenizers` package by a scan of every code point (bench/minilm_compare.py
# --scan-unicode re-checks them). That makes the ids independent of the Python version's Unicode
# tables, except where NFD and lowercasing themselves changed (code points new since Unicode 14).


def _ranges(spec: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    starts: list[int] = []
    ends: list[int] = []
    for tok in spec.split():
        lo, _, hi = tok.partition("-")
        starts.append(int(lo, 16))
        ends.append(int(hi or lo, 16))
    return tuple(starts), tuple(ends)


def _in(cp: int, table: tuple[tuple[int, ...], tuple[int, ...]]) -> bool:
    i = bisect.bisect_right(table[0], cp) - 1
    return i >= 0 and cp <= table[1][i]


# Removed by clean_text (besides U+0000 and U+FFFD): the crate's Cc, Cf and Co above ASCII.
_DROP_RANGES = _ranges(
    "80-9f ad 600-605 61c 6dd 70f 180e 200b-200f 202a-202e 2060-2064 2066-206f e000-f8ff feff "
    "fff9-fffb fffd 110bd 1bca0-1bca3 1d173-1d17a e0001 e0020-e007f f0000-ffffd 100000-10fffd"
)
# Isolated by the pre-tokenizer besides ASCII punctuation: the crate's P* classes.
_PUNCT_RANGES = _ranges(
    "a1 a7 ab b6-b7 bb bf 37e 387 55a-55f 589-58a 5be 5c0 5c3 5c6 5f3-5f4 609-60a 60c-60d 61b 61e-61f "
    "66a-66d 6d4 700-70d 7f7-7f9 830-83e 85e 964-965 970 af0 df4 e4f e5a-e5b f04-f12 f14 f3a-f3d f85 "
    "fd0-fd4 fd9-fda 104a-104f 10fb 1360-1368 1400 166d-166e 169b-169c 16eb-16ed 1735-1736 17d4-17d6 "
    "17d8-17da 1800-180a 1944-1945 1a1e-1a1f 1aa0-1aa6 1aa8-1aad 1b5a-1b60 1bfc-1bff 1c3b-1c3f "
    "1c7e-1c7f 1cc0-1cc7 1cd3 2010-2027 2030-2043 2045-2051 2053-205e 207d-207e 208d-208e 2308-230b "
    "2329-232a 2768-2775 27c5-27c6 27e6-27ef 2983-2998 29d8-29db 29fc-29fd 2cf9-2cfc 2cfe-2cff 2d70 "
    "2e00-2e2e 2e30-2e42 3001-3003 3008-3011 3014-301f 3030 303d 30a0 30fb a4fe-a4ff a60d-a60f a673 "
    "a67e a6f2-a6f7 a874-a877 a8ce-a8cf a8f8-a8fa a8fc a92e-a92f a95f a9c1-a9cd a9de-a9df aa5c-aa5f "
    "aade-aadf aaf0-aaf1 abeb fd3e-fd3f fe10-fe19 fe30-fe52 fe54-fe61 fe63 fe68 fe6a-fe6b ff01-ff03 "
    "ff05-ff0a ff0c-ff0f ff1a-ff1b ff1f-ff20 ff3b-ff3d ff3f ff5b ff5d ff5f-ff65 10100-10102 1039f "
    "103d0 1056f 10857 1091f 1093f 10a50-10a58 10a7f 10af0-10af6 10b39-10b3f 10b99-10b9c 11047-1104d "
    "110bb-110bc 110be-110c1 11140-11143 11174-11175 111c5-111c9 111cd 111db 111dd-111df 11238-1123d "
    "112a9 114c6 115c1-115d7 11641-11643 1173c-1173e 12470-12474 16a6e-16a6f 16af5 16b37-16b3b 16b44 "
    "1bc9f 1da87-1da8b"
)
# Removed after NFD by strip_accents: the crate's Mn class.
_MN_RANGES = _ranges(
    "300-36f 483-487 591-5bd 5bf 5c1-5c2 5c4-5c5 5c7 610-61a 64b-65f 670 6d6-6dc 6df-6e4 6e7-6e8 "
    "6ea-6ed 711 730-74a 7a6-7b0 7eb-7f3 816-819 81b-823 825-827 829-82d 859-85b 8e3-902 93a 93c "
    "941-948 94d 951-957 962-963 981 9bc 9c1-9c4 9cd 9e2-9e3 a01-a02 a3c a41-a42 a47-a48 a4b-a4d a51 "
    "a70-a71 a75 a81-a82 abc ac1-ac5 ac7-ac8 acd ae2-ae3 b01 b3c b3f b41-b44 b4d b56 b62-b63 b82 bc0 "
    "bcd c00 c3e-c40 c46-c48 c4a-c4d c55-c56 c62-c63 c81 cbc cbf cc6 ccc-ccd ce2-ce3 d01 d41-d44 d4d "
    "d62-d63 dca dd2-dd4 dd6 e31 e34-e3a e47-e4e eb1 eb4-eb9 ebb-ebc ec8-ecd f18-f19 f35 f37 f39 "
    "f71-f7e f80-f84 f86-f87 f8d-f97 f99-fbc fc6 102d-1030 1032-1037 1039-103a 103d-103e 1058-1059 "
    "105e-1060 1071-1074 1082 1085-1086 108d 109d 135d-135f 1712-1714 1732-1734 1752-1753 1772-1773 "
    "17b4-17b5 17b7-17bd 17c6 17c9-17d3 17dd 180b-180d 18a9 1920-1922 1927-1928 1932 1939-193b "
    "1a17-1a18 1a1b 1a56 1a58-1a5e 1a60 1a62 1a65-1a6c 1a73-1a7c 1a7f 1ab0-1abd 1b00-1b03 1b34 "
    "1b36-1b3a 1b3c 1b42 1b6b-1b73 1b80-1b81 1ba2-1ba5 1ba8-1ba9 1bab-1bad 1be6 1be8-1be9 1bed "
    "1bef-1bf1 1c2c-1c33 1c36-1c37 1cd0-1cd2 1cd4-1ce0 1ce2-1ce8 1ced 1cf4 1cf8-1cf9 1dc0-1df5 "
    "1dfc-1dff 20d0-20dc 20e1 20e5-20f0 2cef-2cf1 2d7f 2de0-2dff 302a-302d 3099-309a a66f a674-a67d "
    "a69e-a69f a6f0-a6f1 a802 a806 a80b a825-a826 a8c4 a8e0-a8f1 a926-a92d a947-a951 a980-a982 a9b3 "
    "a9b6-a9b9 a9bc a9e5 aa29-aa2e aa31-aa32 aa35-aa36 aa43 aa4c aa7c aab0 aab2-aab4 aab7-aab8 aabe- "
    "aabf aac1 aaec-aaed aaf6 abe5 abe8 abed fb1e fe00-fe0f fe20-fe2f 101fd 102e0 10376-1037a "
    "10a01-10a03 10a05-10a06 10a0c-10a0f 10a38-10a3a 10a3f 10ae5-10ae6 11001 11038-11046 1107f-11081 "
    "110b3-110b6 110b9-110ba 11100-11102 11127-1112b 1112d-11134 11173 11180-11181 111b6-111be "
    "111ca-111cc 1122f-11231 11234 11236-11237 112df 112e3-112ea 11300-11301 1133c 11340 11366-1136c "
    "11370-11374 114b3-114b8 114ba 114bf-114c0 114c2-114c3 115b2-115b5 115bc-115bd 115bf-115c0 "
    "115dc-115dd 11633-1163a 1163d 1163f-11640 116ab 116ad 116b0-116b5 116b7 1171d-1171f 11722-11725 "
    "11727-1172b 16af0-16af4 16b30-16b36 16f8f-16f92 1bc9d-1bc9e 1d167-1d169 1d17b-1d182 1d185-1d18b "
    "1d1aa-1d1ad 1d242-1d244 1da00-1da36 1da3b-1da6c 1da75 1da84 1da9b-1da9f 1daa1-1daaf 1e8d0-1e8d6 "
    "e0100-e01ef"
)

# Padded with spaces by handle_chinese_chars (the Rust ranges: 2B820-2B91F is not among them).
_CHINESE_RANGES = _ranges("3400-4dbf 4e00-9fff f900-faff 20000-2a6df 2a700-2b81f 2b920-2ceaf 2f800-2fa1f")
# Rust's char::is_whitespace above ASCII, less U+0085 (a control: dropped); all become " ".
_SPACES = frozenset("\xa0\u1680\u2028\u2029\u202f\u205f\u3000" + "".join(map(chr, range(0x2000, 0x200B))))
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# ASCII: controls dropped (all Cc but \t \n \r, which become spaces), letters lowercased.
_ASCII_CLEAN: dict[int, int | None] = {c: None for c in [*range(9), 11, 12, *range(14, 32), 127]}
_ASCII_CLEAN.update({9: 32, 10: 32, 13: 32})
_ASCII_WORDS = re.compile(r"[a-z0-9]+|[^a-z0-9 ]")
_NO_NFD = "\U00011938"  # the only code point Python 3.11 decomposes and the Rust NFD does not

_clean_cache: dict[str, str] = {}
_fold_cache: dict[str, str] = {}
_punct_cache: dict[str, bool] = {}


def _clean_char(c: str) -> str:
    """clean_text then handle_chinese_chars, for one non-ASCII character."""
    r = _clean_cache.get(c)
    if r is None:
        cp = ord(c)
        if cp == 0xFFFD or _in(cp, _DROP_RANGES) or 0xD800 <= cp <= 0xDFFF:
            r = ""
        elif c in _SPACES:
            r = " "
        elif _in(cp, _CHINESE_RANGES):
            r = f" {c} "
        else:
            r = c
        if len(_clean_cache) < 100_000:
            _clean_cache[c] = r
    return r


def _fold_char(c: str) -> str:
    """strip_accents (on NFD output) then lowercase, per character as the Rust normalizer does
    (str.lower() of a whole string would apply the final-sigma rule)."""
    r = _fold_cache.get(c)
    if r is None:
        r = "" if _in(ord(c), _MN_RANGES) else c.lower()
        if len(_fold_cache) < 100_000:
            _fold_cache[c] = r
    return r


def _is_punct(c: str) -> bool:
    r = _punct_cache.get(c)
    if r is None:
        r = c in _ASCII_PUNCT or _in(ord(c), _PUNCT_RANGES)
        if len(_punct_cache) < 100_000:
            _punct_cache[c] = r
    return r


def _nfd(s: str) -> str:
    if _NO_NFD in s:
        return _NO_NFD.join(unicodedata.normalize("NFD", p) for p in s.split(_NO_NFD))
    return unicodedata.normalize("NFD", s)


def basic_tokenize(text: str) -> list[str]:
    """BertNormalizer (clean text, pad CJK chars, NFD + drop Mn, lowercase) then BertPreTokenizer
    (split on whitespace, isolate punctuation), as the Hugging Face ``tokenizers`` library does."""
    if text.isascii():
        return _ASCII_WORDS.findall(text.translate(_ASCII_CLEAN).lower())
    s = "".join(c if c.isascii() else _clean_char(c) for c in text.translate(_ASCII_CLEAN))
    s = "".join(map(_fold_char, _nfd(s)))
    words: list[str] = []
    for chunk in s.split(" "):
        if not chunk:
            continue
        if chunk.isascii():
            words.extend(_ASCII_WORDS.findall(chunk))
            continue
        start = 0
        for i, c in enumerate(chunk):
            if _is_punct(c):
                if i > start:
                    words.append(chunk[start:i])
                words.append(c)
                start = i + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


class WordPieceTokenizer:
    """BERT uncased WordPiece ids with ``[CLS]``/``[SEP]``, truncated to ``max_length`` tokens.

    Pure Python; gives the ids of the model's Hugging Face fast tokenizer (tests compare them)."""

    def __init__(self, vocab_path: Path, max_length: int = MAX_SEQ_LENGTH, max_chars_per_word: int = 100):
        with open(vocab_path, encoding="utf-8") as fh:
            tokens = [line.rstrip("\n") for line in fh]
        self.vocab: dict[str, int] = {t: i for i, t in enumerate(tokens)}
        self.inv_vocab = tokens
        self.cls_id = self.vocab["[CLS]"]
        self.sep_id = self.vocab["[SEP]"]
        self.unk_id = self.vocab["[UNK]"]
        self.pad_id = self.vocab["[PAD]"]
        if max_length < 2:
            raise ValueError("max_length must be >= 2")
        self.max_length = max_length
        self.max_chars_per_word = max_chars_per_word
        self._cache: dict[str, tuple[int, ...]] = {}

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        vocab = self.vocab
        if len(word) > self.max_chars_per_word:
            ids: tuple[int, ...] = (self.unk_id,)
        else:
            pieces: list[int] = []
            start, n = 0, len(word)
            while start < n:
                end = n
                found = -1
                while start < end:
                    sub = word[start:end] if start == 0 else "##" + word[start:end]
                    found = vocab.get(sub, -1)
                    if found >= 0:
                        break
                    end -= 1
                if found < 0:
                    pieces = [self.unk_id]
                    break
                pieces.append(found)
                start = end
            ids = tuple(pieces)
        if len(self._cache) < 200_000:
            self._cache[word] = ids
        return ids

    def tokenize(self, text: str) -> list[str]:
        """The word pieces of text (no special tokens, no truncation)."""
        return [self.inv_vocab[i] for w in basic_tokenize(text) for i in self._wordpiece(w)]

    def encode(self, text: str) -> list[int]:
        """``[CLS] pieces [SEP]`` ids, truncated to max_length tokens in all."""
        budget = self.max_length - 2
        ids = [self.cls_id]
        for w in basic_tokenize(text):
            ids.extend(self._wordpiece(w))
            if len(ids) > budget:
                break
        del ids[budget + 1 :]
        ids.append(self.sep_id)
        return ids

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [self.encode(t) for t in texts]


class HFTokenizer:
    """The optional Hugging Face ``tokenizers`` backend, set to sentence-transformers' settings."""

    def __init__(self, tokenizer_json: Path, max_length: int):
        from tokenizers import Tokenizer  # type: ignore[import-untyped,import-not-found,unused-ignore]

        tok = Tokenizer.from_file(str(tokenizer_json))
        tok.no_padding()
        tok.enable_truncation(max_length=max_length)
        self._tok = tok

    def encode_batch(self, texts: Sequence[str]) -> list[list[int]]:
        return [e.ids for e in self._tok.encode_batch(list(texts), add_special_tokens=True)]
