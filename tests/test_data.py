import pytest
import torch

from transformer_course.data.toy_sentences import FEATURES, VOCABULARY, embed_batch, embed_sentence


def test_embed_sentence_gives_one_vector_per_word_with_named_features():
    words, vectors = embed_sentence("Jack gave water to Jill")
    assert words == ["Jack", "gave", "water", "to", "Jill"]
    assert vectors.shape == (5, len(FEATURES))
    assert vectors.dtype == torch.float32


def test_same_word_same_vector_and_calls_are_deterministic():
    words, vectors = embed_sentence("Jack gave water to Jack")
    assert torch.equal(vectors[0], vectors[-1])
    assert torch.equal(embed_sentence("Jill gave water to Jack")[1], embed_sentence("Jill gave water to Jack")[1])


def test_jack_and_jill_are_alike_but_not_the_same():
    _, vectors = embed_sentence("Jack Jill")
    assert not torch.equal(vectors[0], vectors[1])
    assert vectors[0] @ vectors[1] > 0


def test_unknown_word_names_the_vocabulary():
    with pytest.raises(KeyError, match="toy vocabulary"):
        embed_sentence("Jack gave tea to Jill")
    assert "water" in VOCABULARY


def test_embed_batch_pads_with_zero_vectors_and_reports_lengths():
    words, vectors, lengths = embed_batch(["Jack gave water to Jill", "Jill gave water", "Jack"])
    assert words[1] == ["Jill", "gave", "water"]
    assert vectors.shape == (3, 5, len(FEATURES))
    assert lengths.tolist() == [5, 3, 1] and lengths.dtype == torch.int64
    assert torch.equal(vectors[1, :3], embed_sentence("Jill gave water")[1])
    assert not vectors[1, 3:].any() and not vectors[2, 1:].any()


def test_an_empty_sentence_is_a_sequence_of_length_zero():
    words, vectors = embed_sentence("")
    assert words == [] and vectors.shape == (0, len(FEATURES))
    _, batch, lengths = embed_batch(["Jack gave", ""])
    assert lengths.tolist() == [2, 0] and not batch[1].any()
