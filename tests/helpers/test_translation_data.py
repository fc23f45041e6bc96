"""The translation corpus of notebook 08: deterministic, split without leaks, and German by its rules."""

import random

import pytest
import torch

from transformer_course.data.translation import (
    BOS,
    CONJUNCTIONS,
    EOS,
    INTRANSITIVE_VERBS,
    MAX_WORDS,
    PAD,
    TRANSITIVE_VERBS,
    UNK,
    Vocabulary,
    batches,
    corpus,
    endless_batches,
    sentence_pair,
    splits,
)


@pytest.fixture(scope="module")
def data():
    return splits()


@pytest.fixture(scope="module")
def vocabularies(data):
    return Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])


def test_the_same_seed_gives_the_same_corpus_and_another_seed_another():
    assert corpus(500, seed=3) == corpus(500, seed=3)
    assert corpus(500, seed=3) != corpus(500, seed=4)


def test_splits_have_the_documented_sizes_and_share_no_sentence(data):
    assert (len(data.train), len(data.valid), len(data.test)) == (16_000, 2_000, 2_000)
    for language in ("english", "german"):
        train, valid, test = ({getattr(p, language) for p in split} for split in (data.train, data.valid, data.test))
        assert len(train) + len(valid) + len(test) == 20_000, f"a {language} sentence occurs twice"
        assert not (train & valid or train & test or valid & test)


def test_sentences_are_short_enough_and_every_held_out_word_is_known_from_training(data, vocabularies):
    source, target = vocabularies
    for pair in data.train + data.valid + data.test:
        assert 0 < len(pair.english) <= MAX_WORDS and 0 < len(pair.german) <= MAX_WORDS
    for pair in data.valid + data.test:
        assert UNK not in source.encode(pair.english) and UNK not in target.encode(pair.german)
    assert 80 <= len(source) <= 100 and 120 <= len(target) <= 140


def test_all_four_sentence_shapes_occur(data):
    german = [p.german for p in data.train]
    assert any(g[0] in ("weil", "während", "obwohl", "wenn") for g in german)  # subordinate clause in front
    assert any("," in g and g[0] not in ("weil", "während", "obwohl", "wenn") for g in german)  # after the main one
    assert any(g[0] in ("heute", "jetzt", "oft", "später", "manchmal", "wieder") for g in german)  # fronted adverb
    assert any("," not in g and g[0] in ("der", "die", "das", "ein", "eine") for g in german)  # a main clause alone


def test_articles_and_adjectives_agree_with_gender_case_and_definiteness():
    rng = random.Random(0)
    pairs = [sentence_pair(rng) for _ in range(5000)]
    translations = {" ".join(p.english): " ".join(p.german) for p in pairs}
    joined = "\n".join(translations.values())
    for phrase in ("der alte Hund", "ein alter Hund", "den alten Hund", "dem alten Hund", "ein altes Haus"):
        assert phrase in joined or phrase.replace("alt", "gut") in joined or phrase.replace("alt", "neu") in joined
    assert "ein alte Hund" not in joined and "einen alter" not in joined


def test_verbs_go_last_in_subordinate_clauses_and_second_after_a_fronted_part():
    verbs = {german for _, german in INTRANSITIVE_VERBS + TRANSITIVE_VERBS}
    conjunctions = {german for _, german in CONJUNCTIONS}
    rng = random.Random(1)
    fronted = [pair.german for pair in (sentence_pair(rng) for _ in range(2000)) if pair.german[0] in conjunctions]
    assert fronted
    for german in fronted:
        comma = german.index(",")
        assert german[comma - 1] in verbs, german  # the subordinate clause ends with its verb
        assert german[comma + 1] in verbs, german  # the main clause after it starts with its verb


def test_vocabulary_encodes_with_eos_and_decodes_up_to_it(vocabularies):
    source, _ = vocabularies
    ids = source.encode(["the", "dog", "sleeps"])
    assert ids[-1] == EOS and min(ids[:-1]) > UNK
    assert source.decode([BOS, *ids, PAD, PAD]) == ["the", "dog", "sleeps"]
    assert source.decode(torch.tensor(ids)) == ["the", "dog", "sleeps"]
    assert source.encode(["zebra"]) == [UNK, EOS]
    assert source.words[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]


def test_batches_cover_every_pair_once_padded_and_of_similar_lengths(data, vocabularies):
    source, target = vocabularies
    pairs = data.train[:1000]
    seen = 0
    for src, tgt in batches(pairs, source, target, batch_size=64, seed=0):
        assert src.dtype == tgt.dtype == torch.int64 and src.shape[0] == tgt.shape[0] <= 64
        lengths = (src != PAD).sum(dim=1)
        assert lengths.max() - lengths.min() <= 3, "a batch mixes short and long sentences"
        assert ((tgt == EOS).sum(dim=1) == 1).all()
        seen += src.shape[0]
    assert seen == len(pairs)
    first = [b[0] for b in batches(pairs, source, target, 64, seed=5)]
    again = [b[0] for b in batches(pairs, source, target, 64, seed=5)]
    assert all(torch.equal(a, b) for a, b in zip(first, again, strict=True))


def test_endless_batches_go_on_past_one_pass(data, vocabularies):
    source, target = vocabularies
    stream = endless_batches(data.train[:100], source, target, batch_size=50, seed=0)
    assert len([next(stream) for _ in range(5)]) == 5
