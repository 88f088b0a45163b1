"""SimHash specs v1 and v2: known-answer vectors, the spec's rules, and agreement with a plain reference."""

from __future__ import annotations

import re
import unicodedata

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reference import fmix64, reference_bytes_fingerprint, reference_fingerprint

from simdb.errors import InvalidParameter
from simdb.sketch import features, simhash
from simdb.sketch.bits import hamming, to_hex
from simdb.sketch.features import EmptyDocument, Features, tokens
from simdb.sketch.simhash import fingerprint, fingerprint_bytes

# (text, features, fingerprint as 16 hex digits): pinned; a change here is a new spec version.
# Spec v1 (every shingle occurrence counts):
KNOWN_ANSWERS = [
    ("The quick brown fox jumps over the lazy dog", "word:3", "a70392059ddfcbce"),
    ("The quick brown fox jumps over the lazy dog.", "word:1", "56ae985a5e266680"),
    ("The quick brown fox jumps over the lazy dog", "char:5", "27b87a29ce126c2a"),
    ("hello", "word:3", "e254f015a478ad1e"),
    ("hello world", "word:3", "ba9b091b33c2300c"),
    ("Straße ﬁnal ÉCOLE café", "word:3", "84bb880200945822"),
    ("Straße ﬁnal ÉCOLE café", "char:3", "d86742a88dbdb2c2"),
    ("日本語のテキスト、そして English words_with_underscores 42", "word:2", "1aa434884a24d801"),
]
# Spec v2 (each distinct shingle once): the same as v1 where no shingle repeats, so these repeat.
KNOWN_ANSWERS_V2 = [
    ("The quick brown fox jumps over the lazy dog", "word:3", "a70392059ddfcbce"),
    ("The quick brown fox jumps over the lazy dog.", "word:1", "142c10481c224680"),
    ("hello world", "word:3", "ba9b091b33c2300c"),
    ("to be or not to be, that is the question: to be or not to be", "word:2", "edbc4991d1e3cf5f"),
    ("abababababababababab", "char:2", "048e150093041206"),
]
BOTH_SPECS = [(*answer, 1) for answer in KNOWN_ANSWERS] + [(*answer, 2) for answer in KNOWN_ANSWERS_V2]


@pytest.mark.parametrize(("text", "features", "expected", "spec"), BOTH_SPECS)
def test_known_answers(text: str, features: str, expected: str, spec: int) -> None:
    assert to_hex(fingerprint(text, Features.parse(features), spec)) == expected


@pytest.mark.parametrize(("text", "features", "expected", "spec"), BOTH_SPECS)
def test_known_answers_match_the_plain_reference(text: str, features: str, expected: str, spec: int) -> None:
    parsed = Features.parse(features)
    assert reference_fingerprint(text, parsed.kind, parsed.n, spec) == int(expected, 16)


def test_v2_is_the_default_and_unknown_specs_are_refused() -> None:
    text = "to be or not to be or not to be, that is the question"
    assert fingerprint(text) == fingerprint(text, spec=2) != fingerprint(text, spec=1)
    with pytest.raises(InvalidParameter, match=r"unknown fingerprint spec 4 \(use one of 1, 2, 3\)"):
        fingerprint(text, spec=4)


def test_one_shingle_document_is_the_mixed_hash_of_its_token() -> None:
    # One token, one shingle: every counter is +1 or -1, so the fingerprint is the shingle hash.
    assert fingerprint("hello") == fmix64(xxhash.xxh3_64_intdigest(b"hello"))


def test_normalisation_nfkc_and_casefold() -> None:
    assert fingerprint("ＨＥＬＬＯ Ｗｏｒｌｄ ﬁne") == fingerprint("hello world fine")
    assert fingerprint("STRASSE groß") == fingerprint("strasse GROSS")


def test_punctuation_and_spacing_do_not_matter() -> None:
    assert fingerprint("one, two;   three!\n\tfour") == fingerprint("one two three four")


def _shingle(*words: bytes) -> int:
    acc = xxhash.xxh3_64_intdigest(words[0])
    for word in words[1:]:
        acc = (acc * 0x9E3779B97F4A7C15 + xxhash.xxh3_64_intdigest(word)) & (2**64 - 1)
    return fmix64(acc)


def test_v1_weights_are_occurrence_counts_and_v2_counts_each_shingle_once() -> None:
    # Shingles abc, bca, cab, abc: four occurrences, so under v1 a bit is 1 when three or more
    # have it; abc occurs twice, so the result is exactly abc & (bca | cab). Under v2 there are
    # three distinct shingles, and a bit is the majority of the three.
    abc, bca, cab = _shingle(b"a", b"b", b"c"), _shingle(b"b", b"c", b"a"), _shingle(b"c", b"a", b"b")
    assert fingerprint("a b c a b c", spec=1) == abc & (bca | cab)
    assert fingerprint("a b c a b c", spec=2) == (abc & bca) | (abc & cab) | (bca & cab)


def test_short_documents_use_the_tokens_they_have() -> None:
    assert fingerprint("two words", Features("word", 5)) == reference_fingerprint("two words", "word", 5)
    assert fingerprint("two words", Features("word", 5)) == fingerprint("two words", Features("word", 2))


@pytest.mark.parametrize("text", ["", "   ", "!!! ... ---", "\n\n"])
def test_documents_without_tokens_are_empty(text: str) -> None:
    with pytest.raises(EmptyDocument):
        fingerprint(text)


def test_near_duplicates_get_near_fingerprints() -> None:
    base = " ".join(f"word{i % 97} item{i % 13} thing{i}" for i in range(400))
    edited = base.replace("thing200 ", "changed200 ", 1)
    assert hamming(fingerprint(base), fingerprint(edited)) <= 3
    assert hamming(fingerprint(base), fingerprint("an unrelated text " * 50)) > 10


@pytest.mark.parametrize("bad", ["word:0", "word:33", "line:3", "word:x", "char:-1"])
def test_bad_feature_settings(bad: str) -> None:
    with pytest.raises(InvalidParameter):
        Features.parse(bad)


def test_feature_parsing() -> None:
    assert Features.parse("word") == Features("word", 3)
    assert Features.parse("CHAR:4") == Features("char", 4)
    assert str(Features.parse("char")) == "char:5"


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_fast_path_tokenises_like_the_regex(text: str) -> None:
    expected = [t.encode() for t in re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())]
    assert tokens(text) == expected


# Characters that NFKC composes with what comes before them (U+0338 with "<", "=", ">"; accents
# with letters; Hangul vowels with consonants), expands (ﬁ, ², U+2024, NBSP) or folds (İ, ß, K);
# NUL, which token_text puts between the pieces it normalises in one call.
_NORMALISING = "<=>\u0338eE\u0301\u0327ﬁ²İßK\u212a\u00a0\u2024Å\u212b\u1100\u1161日_1 .\n\x00"


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(_NORMALISING), max_size=60))
def test_pieces_are_normalised_as_the_whole_text_would_be(text: str) -> None:
    """token_text normalises only the pieces around non-ASCII characters (see its docstring)."""
    expected = [t.encode() for t in re.findall(r"\w+", unicodedata.normalize("NFKC", text).casefold())]
    assert tokens(text) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab cd EF é ß ﬁ 1 _ .\n日本"), max_size=200),
    st.sampled_from(["word", "char"]),
    st.integers(min_value=1, max_value=6),
)
def test_fingerprint_equals_the_plain_reference(text: str, kind: str, n: int) -> None:
    for spec in (1, 2):
        expected = reference_fingerprint(text, kind, n, spec)
        if expected is None:
            with pytest.raises(EmptyDocument):
                fingerprint(text, Features(kind, n), spec)
        else:
            assert fingerprint(text, Features(kind, n), spec) == expected


# (data, n, fingerprint, spec)
BYTES_ANSWERS = [
    (b"hello world", 4, "9018846c0a801590", 1),
    (bytes(range(256)), 4, "7e94f54010a5bb12", 1),
    (b"\x00\x01\x02", 8, "2a704501c0092a7d", 1),
    (b"\x89PNG\r\n\x1a\n" * 10, 3, "06b0c79b42966607", 1),
    (b"hello world", 4, "9018846c0a801590", 2),
    (b"\x89PNG\r\n\x1a\n" * 10, 3, "04a0871b42166605", 2),
    (bytes(1000) + b"tail data here", 4, "50befa2c36ec1953", 2),
]


@pytest.mark.parametrize(("data", "n", "expected", "spec"), BYTES_ANSWERS)
def test_bytes_known_answers(data: bytes, n: int, expected: str, spec: int) -> None:
    assert to_hex(fingerprint_bytes(data, n, spec)) == expected
    assert reference_bytes_fingerprint(data, n, spec) == int(expected, 16)


def test_a_run_of_zero_bytes_counts_once_under_v2() -> None:
    # Under v1 a kilobyte of zeros outweighs the tail; under v2 its one 4-gram is one vote.
    data = bytes(1000) + b"tail data here"
    assert fingerprint_bytes(data, 4, spec=1) == fingerprint_bytes(bytes(1000), 4, spec=1)
    assert fingerprint_bytes(data, 4, spec=2) != fingerprint_bytes(bytes(1000), 4, spec=2)


@settings(max_examples=150, deadline=None)
@given(st.binary(min_size=1, max_size=400), st.integers(min_value=1, max_value=8), st.sampled_from([1, 2]))
def test_bytes_fingerprint_equals_the_reference_and_chunking_does_not_matter(
    data: bytes, n: int, spec: int
) -> None:
    expected = reference_bytes_fingerprint(data, n, spec)
    assert fingerprint_bytes(data, n, spec) == expected
    original = features.PIECE
    features.PIECE = 7  # tiny pieces, whose last n - 1 bytes begin shingles that end in the next
    try:
        assert fingerprint_bytes(data, n, spec) == expected
    finally:
        features.PIECE = original


def test_empty_bytes() -> None:
    with pytest.raises(EmptyDocument):
        fingerprint_bytes(b"")


def test_bytes_features_of_text_are_the_utf8_bytes() -> None:
    text = "naïve bytes, 42"
    kind = Features("bytes", 3)
    assert fingerprint(text, kind) == fingerprint_bytes(text.encode("utf-8"), 3)
    assert simhash.simhash(features.feature_hashes(text, kind)) == fingerprint_bytes(text.encode("utf-8"), 3)
    with pytest.raises(EmptyDocument):
        features.feature_hashes("", kind)
    with pytest.raises(TypeError):
        fingerprint(b"raw", Features("word", 3))


# (content, features, spec, 128-bit fingerprint as 32 hex digits): pinned like the 64-bit vectors.
KNOWN_ANSWERS_128 = [
    ("The quick brown fox jumps over the lazy dog", "word:3", 2, "efceb58a6ba35f8aa70392059ddfcbce"),
    (
        "to be or not to be, that is the question: to be or not to be",
        "word:2",
        1,
        "51942af245b29a598dbc799c95cacf1e",
    ),
    (
        "to be or not to be, that is the question: to be or not to be",
        "word:2",
        2,
        "7a9c2ade55b01e59edbc4991d1e3cf5f",
    ),
    ("Straße ﬁnal ÉCOLE café", "char:3", 2, "913ac1816d76e17fd86742a88dbdb2c2"),
    (b"hello world", "bytes:4", 2, "302260401789f0c09018846c0a801590"),
    (bytes(1000) + b"tail data here", "bytes:4", 1, "a488b612cf0c04fed4b0ce638339fd1d"),
    (bytes(1000) + b"tail data here", "bytes:4", 2, "32e73c33f4aad1ee50befa2c36ec1953"),
]


@pytest.mark.parametrize(("content", "features", "spec", "expected"), KNOWN_ANSWERS_128)
def test_128_bit_known_answers(content: str | bytes, features: str, spec: int, expected: str) -> None:
    parsed = Features.parse(features)
    value = fingerprint(content, parsed, spec, bits=128)
    assert format(value, "032x") == expected
    # The low half is the 64-bit fingerprint of the same spec: a 128-bit index extends a 64-bit one.
    assert value & (2**64 - 1) == fingerprint(content, parsed, spec)
    if isinstance(content, bytes):
        assert reference_bytes_fingerprint(content, parsed.n, spec, bits=128) == int(expected, 16)
    else:
        assert reference_fingerprint(content, parsed.kind, parsed.n, spec, bits=128) == int(expected, 16)


@settings(max_examples=100, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("ab cd EF é ß 1 _ .\n日本"), max_size=120),
    st.sampled_from(["word", "char"]),
    st.integers(min_value=1, max_value=5),
    st.sampled_from([1, 2]),
)
def test_128_bit_fingerprint_equals_the_plain_reference(text: str, kind: str, n: int, spec: int) -> None:
    expected = reference_fingerprint(text, kind, n, spec, bits=128)
    if expected is None:
        with pytest.raises(EmptyDocument):
            fingerprint(text, Features(kind, n), spec, bits=128)
    else:
        assert fingerprint(text, Features(kind, n), spec, bits=128) == expected


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=1, max_size=300), st.integers(min_value=1, max_value=6), st.sampled_from([1, 2]))
def test_128_bit_bytes_fingerprint_equals_the_reference(data: bytes, n: int, spec: int) -> None:
    assert fingerprint_bytes(data, n, spec, bits=128) == reference_bytes_fingerprint(data, n, spec, bits=128)


def test_unknown_widths_are_refused() -> None:
    with pytest.raises(InvalidParameter, match="unknown fingerprint width 96"):
        fingerprint("some text here", bits=96)
