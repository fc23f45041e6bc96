"""Notebook 08's helpers: the training loop, translation scores, the word-by-word baseline, the token masks and
the cross-attention weights of the reference model."""

import pytest
import torch
import torch.nn.functional as F

from transformer_course import reference
from transformer_course.data.translation import BOS, EOS, PAD, Pair, Vocabulary, endless_batches, splits
from transformer_course.evaluation import exact_match, report, side_by_side, token_accuracy, translate_all, word_by_word
from transformer_course.training import train


@pytest.fixture(scope="module")
def small():
    data = splits(size=600, valid=50, test=50)
    return data, Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])


def teacher_forced_loss(model, src, tgt):
    decoder_input = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)
    logits = model(src, decoder_input, reference.source_mask(src, PAD), reference.target_mask(decoder_input, PAD))
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD)


def run(small, steps: int, evaluate=None, seed: int = 0):
    data, source, target = small
    torch.manual_seed(seed)
    model = reference.Transformer(len(source), len(target), d_model=16, num_heads=2, d_ff=32, num_layers=1)
    stream = endless_batches(data.train, source, target, batch_size=32, seed=0)
    history = train(model, stream, teacher_forced_loss, lambda step: 3e-3 * min(1, step / 5), steps, evaluate, every=4)
    return model, history


def test_training_is_repeatable_and_lowers_the_loss(small):
    _, first = run(small, steps=12)
    _, second = run(small, steps=12)
    assert first.losses == second.losses
    assert sum(first.losses[-3:]) < sum(first.losses[:3])
    assert first.steps_per_second > 0 and first.best_step is None


def test_training_ends_with_the_weights_that_scored_best(small):
    scores = iter([0.3, 0.9, 0.1])  # at steps 4, 8 and 12
    weights_at = {}

    def evaluate(model):
        weights_at[len(weights_at)] = model.output.weight.detach().clone()
        return next(scores)

    model, history = run(small, steps=12, evaluate=evaluate)
    assert history.scores == {4: 0.3, 8: 0.9, 12: 0.1} and history.best_step == 8
    assert torch.equal(model.output.weight, weights_at[1])
    assert not model.training


def test_scores_count_exact_sentences_and_words_in_place():
    references = [["der", "Hund"], ["die", "Katze", "schläft"]]
    assert exact_match([["der", "Hund"], ["die", "Katze"]], references) == 0.5
    # 2 + 1 (the end) right of 3, and 2 of 4 (the sentence ended early)
    assert token_accuracy([["der", "Hund"], ["die", "Katze"]], references) == pytest.approx(5 / 7)
    assert report(references, references) == "exact match 100.0%, token accuracy 100.0%"


def test_translate_all_reads_each_row_up_to_eos_from_tensors_and_lists(small):
    _, source, target = small
    word = target.ids["Hund"]
    as_tensor = translate_all(lambda src: torch.tensor([[word, EOS, word]] * len(src)), [["a"]] * 3, source, target, 2)
    as_lists = translate_all(lambda src: [[word, word]] * len(src), [["a"]] * 3, source, target, 2)
    assert as_tensor == [["Hund"]] * 3 and as_lists == [["Hund", "Hund"]] * 3


def test_side_by_side_marks_exact_translations():
    pairs = [Pair(("the", "dog"), ("der", "Hund")), Pair(("a", "dog"), ("ein", "Hund"))]
    text = side_by_side(pairs, [["der", "Hund"], ["der", "Hund"]])
    assert text.count("✔") == 1 and text.count("✘") == 1


def test_word_by_word_knows_the_words_but_not_the_grammar(small):
    data, _, _ = small
    dictionary = word_by_word(data.train)
    assert dictionary(("the", "dog"))[-1] == "Hund"
    assert exact_match([dictionary(p.english) for p in data.test], [p.german for p in data.test]) < 0.2


def test_token_masks_are_the_padding_and_decoder_masks():
    tokens = torch.tensor([[5, 6, 7], [5, 6, PAD]])
    assert torch.equal(reference.source_mask(tokens, PAD), torch.tensor([[[True] * 3], [[True, True, False]]]))
    decoder = reference.target_mask(tokens, PAD)
    assert torch.equal(decoder[0], torch.ones(3, 3, dtype=torch.bool).tril())
    assert torch.equal(decoder[1, :, 2], torch.zeros(3, dtype=torch.bool))


@pytest.mark.parametrize("norm_first", [False, True])
def test_cross_attention_weights_are_those_the_decoder_layers_use(norm_first):
    torch.manual_seed(0)
    model = reference.Transformer(9, 9, d_model=8, num_heads=2, d_ff=16, num_layers=2, norm_first=norm_first).eval()
    src, tgt = torch.tensor([[4, 5, 6, PAD]]), torch.tensor([[BOS, 4, 5]])
    src_mask, tgt_mask = reference.source_mask(src, PAD), reference.target_mask(tgt, PAD)
    with torch.no_grad():
        weights = model.cross_attention_weights(src, tgt, src_mask, tgt_mask)
    assert [tuple(w.shape) for w in weights] == [(1, 2, 3, 4)] * 2
    for w in weights:
        assert torch.allclose(w.sum(-1), torch.ones(1, 2, 3)) and (w[..., 3] == 0).all()
    # PyTorch's own decoder layer, computing forward, calls its cross-attention with need_weights=False; called
    # again on the same inputs with need_weights=True, it gives the weights to compare with.
    layer, calls = model.decoder.layers[1], []
    template_attention = layer._pytorch[0].multihead_attn
    hook = template_attention.register_forward_hook(lambda m, a, kw, o: calls.append((a, kw)), with_kwargs=True)
    with torch.no_grad():
        model(src, tgt, src_mask, tgt_mask)
        hook.remove()
        (query, key, value), options = calls[-1]
        options = {**options, "need_weights": True, "average_attn_weights": False}
        expected = layer.cross_attention.attention(query, key, value, **options)[1]
    assert torch.allclose(weights[1], expected, atol=1e-6)
