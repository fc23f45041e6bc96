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


def test_documentation_splits_share_no_topic_and_cover_the_text():
    from transformer_course.data.documentation import SEPARATOR, splits, topic_texts

    texts = topic_texts()
    text_splits = splits()
    assert set(text_splits.train_topics).isdisjoint(text_splits.valid_topics)
    assert set(text_splits.train_topics) | set(text_splits.valid_topics) == set(texts)
    assert text_splits.train.startswith(texts[text_splits.train_topics[0]] + SEPARATOR)
    assert text_splits.valid.startswith(texts[text_splits.valid_topics[0]][:200])
    assert 0.05 < len(text_splits.valid) / len(text_splits.train) < 0.25
    assert splits() == text_splits


def test_no_long_passage_of_the_validation_text_is_in_the_training_text():
    from transformer_course.data.documentation import splits

    text_splits = splits()
    paragraphs = [p for p in text_splits.valid.split("\n\n") if len(p) > 100]
    assert len(paragraphs) > 50
    assert not [p for p in paragraphs if p in text_splits.train]
