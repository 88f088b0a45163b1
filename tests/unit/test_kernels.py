"""The compiled kernels against what they replace: XXH3-64 against the xxhash package (every
length class: 0-3, 4-8, 9-16, 17-128, 129-240 and the long path past one 1,024-byte block),
the hash set against numpy's unique, tokens and characters against Python's own splitting."""

from __future__ import annotations

import numpy as np
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st
from support.reference import reference_fingerprint

from simdb.kernels import compiled as kernels
from simdb.measure import previous
from simdb.sketch.features import EmptyDocument, Features, feature_hashes, token_text
from simdb.sketch.minhash import document_signature, document_signatures, seeds, sketch
from simdb.sketch.onebit import minima, permutation_seeds
from simdb.sketch.simhash import fingerprint, fingerprints


def test_xxh3_equals_xxhash_at_every_length_up_to_three_blocks() -> None:
    data = np.random.default_rng(7).integers(0, 256, size=3300, dtype=np.uint8).tobytes()
    for length in range(3300):
        assert kernels.xxh3_64(data[:length]) == xxhash.xxh3_64_intdigest(data[:length]), length


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=2100))
def test_xxh3_equals_xxhash(data: bytes) -> None:
    assert kernels.xxh3_64(data) == xxhash.xxh3_64_intdigest(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**64 - 1), max_size=300), st.integers(1, 4))
def test_distinct_keeps_each_value_once_in_first_seen_order(values: list[int], repeat: int) -> None:
    array = np.array(values * repeat, dtype=np.uint64)
    found = kernels.distinct(array).tolist()
    assert found == list(dict.fromkeys(values)) and sorted(found) == np.unique(array).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b" ", b"  ", b"a", b"Zz", b"x" * 17, b"y" * 40, b"\xc3\xa9"]), max_size=60))
def test_word_units_split_on_runs_of_spaces_wherever_they_are(parts: list[bytes]) -> None:
    # leading, trailing and repeated spaces, tokens of 1 to 16 bytes and longer, the mapping applied
    text = b"".join(parts)
    lower = bytes(range(256)).translate(bytes.maketrans(b"Z", b"z"))
    tokens = [token.replace(b"Z", b"z") for token in text.split(b" ") if token]
    assert kernels.word_units(text, lower).tolist() == [xxhash.xxh3_64_intdigest(t) for t in tokens]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=120))
def test_units_of_any_text_are_the_xxh3_of_its_tokens_and_characters(text: str) -> None:
    buffer = token_text(text)
    words = buffer.split()
    assert kernels.word_units(buffer).tolist() == [xxhash.xxh3_64_intdigest(w) for w in words]
    joined = b" ".join(words)
    assert kernels.char_units(joined).tolist() == [
        xxhash.xxh3_64_intdigest(c.encode("utf-8")) for c in joined.decode("utf-8")
    ]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from("ab cd EF é ß ﬁ 1 _ .\n日本"), max_size=80), max_size=12),
    st.sampled_from(["word", "char"]),
    st.integers(1, 4),
    st.sampled_from([1, 2]),
    st.sampled_from([64, 128]),
)
def test_many_documents_in_one_call_are_each_fingerprinted_alone(
    texts: list[str], kind: str, n: int, spec: int, bits: int
) -> None:
    """fingerprints() sketches a batch in one compiled call; each value is fingerprint()'s, and
    a document without shingles is None (where fingerprint() raises EmptyDocument)."""
    features = Features(kind, n)
    expected: list[int | None] = []
    for text in texts:
        try:
            expected.append(fingerprint(text, features, spec, bits))
        except EmptyDocument:
            expected.append(None)
    assert fingerprints(texts, features, spec, bits) == expected
    assert [reference_fingerprint(text, kind, n, spec, bits) for text in texts] == expected


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet=st.sampled_from("ab cd EF é ß ﬁ 1 _ .\n日本"), max_size=80), max_size=8),
    st.sampled_from(["word", "char"]),
    st.integers(1, 4),
    st.sampled_from([1, 2]),
)
def test_many_signatures_in_one_call_equal_each_document_alone(
    texts: list[str], kind: str, n: int, spec: int
) -> None:
    """document_signatures() packs the check inside one compiled call; the per-document path
    (feature_hashes, then minima and check_bits with numpy's packbits) must give the same."""
    features = Features(kind, n)
    expected: list[list[int] | None] = []
    for text in texts:
        try:
            expected.append(sketch(feature_hashes(text, features), 64, spec).tolist())
        except EmptyDocument:
            expected.append(None)
    found = document_signatures(texts, features, 64, spec)
    assert [None if value is None else value.tolist() for value in found] == expected


def test_minima_equal_the_numpy_one_bit_minhash_across_blocks() -> None:
    """kernels.minima (a block of values at a time, seed by seed) against onebit.minima (numpy's
    fmix64 over a value-by-seed matrix): equal at sizes around the block's, over 64 and 128 seeds."""
    rng = np.random.default_rng(40)
    block = kernels._MINIMA_BLOCK
    for size in (1, 2, 63, block - 1, block, block + 1, 3 * block + 5):
        values = rng.integers(0, 2**64, size=size, dtype=np.uint64, endpoint=False)
        for seed in (0, 1):
            assert kernels.minima(values, permutation_seeds(seed)).tolist() == minima([values], seed).tolist()
        both = kernels.minima(values, seeds(128)).tolist()
        assert both == minima([values], 0).tolist() + minima([values], 1).tolist()
    assert kernels.minima(np.zeros(0, dtype=np.uint64), seeds(64)).tolist() == [2**64 - 1] * 64


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=150), st.sampled_from(["word", "char"]), st.integers(1, 4), st.sampled_from([1, 2]))
def test_any_unicode_text_fingerprints_as_the_reference_says(text: str, kind: str, n: int, spec: int) -> None:
    expected = reference_fingerprint(text, kind, n, spec)
    if expected is not None:
        assert fingerprint(text, Features(kind, n), spec) == expected


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab cd EF é ß ﬁ 1 _ .\n日本"), min_size=1, max_size=300))
def test_the_kernels_give_what_the_numpy_code_before_them_gave(text: str) -> None:
    """simdb.measure.previous is bench's baseline: it must compute the same values."""
    if not token_text(text).split():
        return
    for spec in (1, 2):
        assert previous.fingerprint(text, 3, spec) == fingerprint(text, Features("word", 3), spec)
    assert previous.signature(text).tolist() == document_signature(text).tolist()
