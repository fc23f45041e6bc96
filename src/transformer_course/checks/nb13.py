"""Checks for notebook 13, encoder-only models: the masking of masked language modelling, the encoder with its
tied prediction head, the loss on the masked positions, and the classifier on the first token.

Oracles: Hugging Face's ``DataCollatorForLanguageModeling`` (its ``torch_mask_tokens``, run on the same ids) and the
binomial closed form for the masking, judged statistically over thousands of positions with fixed seeds;
``BertForMaskedLM`` and ``BertForSequenceClassification``, built from a small configuration (nothing downloaded)
with the learner's weights copied in; PyTorch's ``F.cross_entropy`` with ``ignore_index`` for the loss.
"""

import math
import os

import torch
import torch.nn.functional as F
from torch import nn

# The oracles are built from a configuration: nothing may be fetched. Imported here, with the checks, so that the
# sealed grading run records the library before a learner's code runs.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import (
    BertConfig,
    BertForMaskedLM,
    BertForSequenceClassification,
    DataCollatorForLanguageModeling,
    PreTrainedTokenizerFast,
)

from ..pretrained import SEGMENT, bert_names
from . import (
    CheckFailed,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_tensor,
    global_seed,
    handed_over,
    learner_facing,
    matches,
    passed,
    perturbed,
    seeded_randn,
    shape_of,
)
from .recordings import oracle

IGNORED = -100  # the label of a position the loss leaves out: PyTorch's ignore_index and Hugging Face's convention

# Exercise 1 ---------------------------------------------------------------------------------------------

# How far a measured share may stray from the expected one, in standard deviations of a binomial share: at five, a
# correct answer fails about once in two million runs (and the seeds are fixed, so never twice).
SIGMAS = 5.0


def _collator(vocab_size: int, mask_id: int, probability: float) -> DataCollatorForLanguageModeling:
    """Hugging Face's collator for masked language modelling over a word-level vocabulary of ``vocab_size`` ids."""
    words = {f"w{i}": i for i in range(vocab_size)}
    words["[MASK]"] = mask_id
    words = {word: i for word, i in words.items() if i != mask_id or word == "[MASK]"}
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel(words, unk_token="w0")), mask_token="[MASK]", pad_token="w0"
    )
    return DataCollatorForLanguageModeling(tokenizer, mlm_probability=probability)


def collator_masking(ids: torch.Tensor, can_mask: torch.Tensor, *, vocab: int, mask: int, rate: float, seed: int):
    """(inputs, labels) of Hugging Face's collator on ``ids``, with the positions ``can_mask`` open to it.
    Keyword-only arguments under other names than the exercise's: this is no answer to it."""
    collator = _collator(vocab, mask, rate)
    with global_seed(seed):
        return collator.torch_mask_tokens(ids.clone(), special_tokens_mask=~can_mask)


def _shares(ids, can_mask, inputs, labels, mask_id: int) -> dict[str, float]:
    chosen = labels != IGNORED
    count = max(int(chosen.sum()), 1)
    return {
        "chosen": float(chosen.sum()) / float(can_mask.sum()),
        "mask": float((chosen & (inputs == mask_id)).sum()) / count,
        "kept": float((chosen & (inputs == ids)).sum()) / count,
        "random": float((chosen & (inputs != mask_id) & (inputs != ids)).sum()) / count,
    }


def _masking_case(seed: int) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """ids (batch, seq) of a vocabulary of 50 + seed words, the first 5 special, and the positions that may be
    masked: all but the first (a [CLS]) and a padded end of each sequence."""
    vocab, mask_id = 50 + seed, 3 + seed % 2
    generator = torch.Generator().manual_seed(seed)
    batch, seq = 300 + 20 * seed, 48 + 4 * seed
    ids = torch.randint(5, vocab, (batch, seq), generator=generator)
    lengths = torch.randint(seq // 2, seq + 1, (batch,), generator=generator)
    can_mask = torch.arange(seq) < lengths[:, None]  # (batch, seq): the padding may not be masked
    can_mask[:, 0] = False  # nor the [CLS] at the start
    ids[~can_mask] = 0
    return ids, can_mask, vocab, mask_id


@learner_facing
def check_mask_tokens(mask_tokens, seed: int = 0) -> None:
    """Judge the learner's masking statistically over thousands of positions, against the closed form and against
    Hugging Face's DataCollatorForLanguageModeling run on the same ids: which positions, how many, and what they
    become; and that the same seed gives the same masking."""
    ids, can_mask, vocab, mask_id = _masking_case(seed)
    for probability in (0.15, 0.3 + 0.05 * seed):
        call = f"mask_tokens(ids, can_mask, mask_id={mask_id}, vocab_size={vocab}, probability={probability})"
        inputs, labels = _masked(mask_tokens, ids, can_mask, mask_id, vocab, probability, seed, call)
        _expect_right_positions(ids, can_mask, inputs, labels, call)
        shares = _shares(ids, can_mask, inputs, labels, mask_id)
        oracle = collator_masking(ids, can_mask, vocab=vocab, mask=mask_id, rate=probability, seed=seed + 10)
        expected = _shares(ids, can_mask, *oracle, mask_id)
        _expect_shares(shares, expected, int(can_mask.sum()), probability, call)
        _expect_random_tokens_spread(ids, inputs, labels, mask_id, vocab, call)
        again = _masked(mask_tokens, ids, can_mask, mask_id, vocab, probability, seed, call)
        if not (torch.equal(again[0], inputs) and torch.equal(again[1], labels)):
            raise CheckFailed(
                f"{call} gave a different masking for the same torch.manual_seed: draw every random number from "
                "PyTorch's global generator (torch.rand, torch.bernoulli, torch.randint without a generator of "
                "your own), so that a seed makes a run repeatable."
            )
    passed("mask_tokens", "chooses, masks, replaces and keeps as DataCollatorForLanguageModeling does")


def _masked(mask_tokens, ids, can_mask, mask_id, vocab, probability, seed, call):
    with global_seed(seed):
        result = call_learner(
            mask_tokens, ids, can_mask, mask_id=mask_id, vocab_size=vocab, probability=probability, call=call
        )
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{call} must return a pair (inputs, labels); got {type(result).__name__}.")
    inputs, labels = result
    expect_tensor(inputs, f"{call}'s inputs", ids.shape, ids.dtype)
    expect_tensor(labels, f"{call}'s labels", ids.shape, ids.dtype)
    return inputs, labels


def _expect_right_positions(ids, can_mask, inputs, labels, call: str) -> None:
    chosen = labels != IGNORED
    if chosen.all():
        zeros = " (0 is a token id like any other, and the loss would learn it)" if (labels == 0).any() else ""
        raise CheckFailed(
            f"{call}: no label is {IGNORED}. Give every position that was not chosen the label {IGNORED}, the "
            f"ignore_index of F.cross_entropy, so that the loss skips it{zeros}."
        )
    if not chosen.any():
        raise CheckFailed(f"{call} chose no position at all: every label is {IGNORED}.")
    if not torch.equal(labels[chosen], ids[chosen]):
        raise CheckFailed(
            f"{call}: a chosen position's label must be the token that was there in ids, the word the model must "
            "guess, whatever the input shows there now; unchosen positions get the label "
            f"{IGNORED}. Some labels are neither."
        )
    if (chosen & ~can_mask).any():
        raise CheckFailed(
            f"{call} chose positions where can_mask is False (the padding and the [CLS] token): only positions "
            "that may be masked can be chosen."
        )
    unchosen_changed = ~chosen & (inputs != ids)
    if unchosen_changed.any():
        raise CheckFailed(
            f"{call} changed {int(unchosen_changed.sum())} positions whose label is {IGNORED}: a position that was "
            "not chosen keeps its token in the inputs. Give the [MASK] and the random tokens to chosen positions "
            "only, and give each of those the label of its original token."
        )


def _expect_shares(shares: dict, expected: dict, open_positions: int, probability: float, call: str) -> None:
    names = {
        "mask": "became [MASK] (80% expected)",
        "random": "became a random token (10% expected)",
        "kept": "kept their token (10% expected)",
    }
    spread = SIGMAS * math.sqrt(probability * (1 - probability) / open_positions)
    if abs(shares["chosen"] - probability) > spread:
        if abs(shares["chosen"] - 0.15) <= spread:
            raise CheckFailed(
                f"{call} chose {shares['chosen']:.1%} of the positions that may be masked, as if probability were "
                "always 0.15: use the probability it was given."
            )
        raise CheckFailed(
            f"{call} chose {shares['chosen']:.1%} of the positions that may be masked; each should be chosen with "
            f"probability {probability} ({probability:.0%}; DataCollatorForLanguageModeling chose "
            f"{expected['chosen']:.1%} of the same ids). Draw one chance per position that may be masked, and keep "
            "the others out."
        )
    chosen = shares["chosen"] * open_positions
    for share, target in (("mask", 0.8), ("random", 0.1), ("kept", 0.1)):
        if abs(shares[share] - target) > SIGMAS * math.sqrt(target * (1 - target) / chosen) + 0.002:
            measured = ", ".join(f"{shares[key]:.1%} {names[key].split(' (')[0]}" for key in names)
            oracle = ", ".join(f"{expected[key]:.1%}" for key in names)
            raise CheckFailed(
                f"{call}: of the chosen positions, {measured}. Expected 80%, 10% and 10% "
                f"(DataCollatorForLanguageModeling: {oracle} on the same ids). The three must share the chosen "
                "positions between them: after 80% became [MASK], half of the REST (not 10% of it) get a random "
                "token, and the rest keep theirs."
            )


def _expect_random_tokens_spread(ids, inputs, labels, mask_id: int, vocab: int, call: str) -> None:
    replaced = (labels != IGNORED) & (inputs != mask_id) & (inputs != ids)
    tokens = inputs[replaced]
    if tokens.numel() and (tokens.min() < 0 or tokens.max() >= vocab):
        raise CheckFailed(f"{call} put ids outside 0 .. vocab_size - 1 = {vocab - 1} in the inputs.")
    distinct = tokens.unique().numel()
    if distinct < min(tokens.numel(), vocab) // 3:
        raise CheckFailed(
            f"{call}: the random replacements use only {distinct} different ids: draw each random token on its own, "
            f"uniformly from the vocabulary (0 .. {vocab - 1}), with torch.randint."
        )


# Exercise 2 ---------------------------------------------------------------------------------------------

# The names the notebook gives the model's parts, which the check copies into BertForMaskedLM.
MODEL_PARTS = ("token_embedding", "position_embedding", "embedding_norm", "encoder", "head_transform", "head_norm")


def bert_config(vocab: int, max_len: int, d_model: int, heads: int, d_ff: int, layers: int, **options) -> BertConfig:
    """A BERT of the course's kind: ReLU (the course's feed-forward network), layer norm ε 1e-5 (PyTorch's default),
    one segment, no dropout, eager attention (the written-out form)."""
    config = BertConfig(
        vocab_size=vocab,
        max_position_embeddings=max_len,
        hidden_size=d_model,
        num_attention_heads=heads,
        intermediate_size=d_ff,
        num_hidden_layers=layers,
        hidden_act="relu",
        layer_norm_eps=1e-5,
        type_vocab_size=1,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout=0.0,
        **options,
    )
    config._attn_implementation = "eager"
    return config


def masked_lm_twin(model: nn.Module, sizes: dict) -> BertForMaskedLM:
    """A BertForMaskedLM holding a copy of the learner's weights; its decoder is tied to the word embeddings."""
    with torch.random.fork_rng():  # its own initialisation is overwritten; leave the global seed alone
        twin = BertForMaskedLM(bert_config(**sizes))
    twin.load_state_dict(_copied(model), strict=False)  # the decoder is the word embeddings, tied
    return twin.eval()


def _copied(model: nn.Module) -> dict[str, torch.Tensor]:
    """The learner's weights under BERT's names, with a segment embedding that adds nothing."""
    d_model = model.token_embedding.weight.shape[1]
    named = {name: tensor.detach().clone() for name, tensor in bert_names(model).items()}
    return named | {SEGMENT: torch.zeros(1, d_model)}


def _model_cases(seed: int) -> list[dict]:
    first = {"vocab": 30, "max_len": 12, "d_model": 16, "heads": 2, "d_ff": 32, "layers": 1}
    second = {
        "vocab": 41 + seed,
        "max_len": 10 + seed,
        "d_model": 24,
        "heads": 3 + seed % 2 * 3,
        "d_ff": 40,
        "layers": 2,
    }
    return [first, second]


def _arguments(sizes: dict) -> tuple[tuple, str]:
    args = tuple(sizes[key] for key in ("vocab", "max_len", "d_model", "heads", "d_ff", "layers"))
    return args, "(" + ", ".join(str(value) for value in args) + ")"


def _batch(sizes: dict, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ids (3, seq) and a padding mask that hides the end of the second and the third sequence."""
    seq = sizes["max_len"] - 1
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, sizes["vocab"], (3, seq), generator=generator)
    padding_mask = torch.arange(seq) < torch.tensor([seq, seq - 3, 4])[:, None]  # (3, seq): True = a real token
    return ids.masked_fill(~padding_mask, 0), padding_mask


@learner_facing
def check_encoder_for_masked_lm(EncoderForMaskedLM: type, seed: int = 0) -> None:
    """Compare the learner's model with BertForMaskedLM holding its weights: encode (the last hidden states) and
    forward (the logits of every word) on a padded batch, at two sizes; and the head tied to the embedding."""
    for sizes in _model_cases(seed):
        args, shown = _arguments(sizes)
        call = f"EncoderForMaskedLM{shown}"
        model = perturbed(built_with_seed(EncoderForMaskedLM, *args, seed=seed, call=call), seed + 1)
        _expect_parts(model, sizes, call)
        twin = masked_lm_twin(model, sizes)
        ids, padding_mask = _batch(sizes, seed)
        real = padding_mask
        hidden = call_learner(model.encode, ids, padding_mask, call=f"{call}.encode(ids, padding_mask)")
        expect_tensor(hidden, f"{call}.encode(ids, padding_mask)", (*ids.shape, sizes["d_model"]), torch.float32)
        with torch.no_grad():
            expected = twin.bert(input_ids=ids, attention_mask=padding_mask.long()).last_hidden_state
        if not matches(hidden[real], expected[real]):
            _diagnose_encode(model, twin, ids, padding_mask, hidden, call)
            expect_close(hidden[real], expected[real], f"{call}.encode(ids, padding_mask), compared with BertModel")
        logits = call_learner(model, ids, padding_mask, call=f"{call}(ids, padding_mask)")
        expect_tensor(logits, f"{call}(ids, padding_mask)", (*ids.shape, sizes["vocab"]), torch.float32)
        with torch.no_grad():
            expected = twin(input_ids=ids, attention_mask=padding_mask.long()).logits
        if not torch.allclose(logits[real], expected[real], atol=1e-4):
            _diagnose_head(model, twin, ids, padding_mask, logits, call)
            expect_close(
                logits[real], expected[real], f"{call}(ids, padding_mask), compared with BertForMaskedLM", atol=1e-4
            )
        expect_differentiable(logits, f"{call}(ids, padding_mask)")
        unpadded = call_learner(model, ids[:1], call=f"{call}(ids) without a padding mask")
        if not torch.allclose(unpadded, expected[:1], atol=1e-4):
            raise CheckFailed(
                f"{call}(ids) without a padding_mask gives other logits than with a mask of all True: padding_mask "
                "defaults to None, and None means that every position is a real token."
            )
    passed("EncoderForMaskedLM", "equals BertForMaskedLM: embeddings, encoder, and a head tied to the embedding")


def _expect_parts(model: nn.Module, sizes: dict, call: str) -> None:
    missing = [name for name in (*MODEL_PARTS, "head_bias") if not hasattr(model, name)]
    if missing:
        raise CheckFailed(
            f"{call} has no {', '.join('self.' + name for name in missing)}: the notebook names each part, and the "
            "check copies them into BertForMaskedLM by those names."
        )
    vocab, d_model = sizes["vocab"], sizes["d_model"]
    if tuple(model.position_embedding.weight.shape) != (sizes["max_len"], d_model):
        raise CheckFailed(
            f"{call}: self.position_embedding must be nn.Embedding(max_len, d_model), a learned vector for each of "
            f"the {sizes['max_len']} positions; its table is {shape_of(model.position_embedding.weight)}."
        )
    if tuple(model.head_bias.shape) != (vocab,) or not isinstance(model.head_bias, nn.Parameter):
        raise CheckFailed(f"{call}: self.head_bias must be an nn.Parameter of {vocab} zeros, one per word.")
    if not hasattr(model.encoder, "layers") or len(model.encoder.layers) != sizes["layers"]:
        raise CheckFailed(
            f"{call}: self.encoder must be notebook 06's Encoder(num_layers, d_model, num_heads, d_ff) with "
            f"{sizes['layers']} layers."
        )
    if getattr(model.encoder, "norm", None) is not None:
        raise CheckFailed(
            f"{call}: self.encoder normalises first (norm_first=True); BERT's layers normalise after each sublayer, "
            "the Encoder's default."
        )
    others = [
        name
        for name, parameter in model.named_parameters()
        if tuple(parameter.shape) in ((vocab, d_model), (d_model, vocab))
        and parameter is not model.token_embedding.weight
    ]
    if others:
        raise CheckFailed(
            f"{call} has a second table of one vector per word, self.{others[0]}: the head must reuse "
            "self.token_embedding.weight (tied), so that a word's input vector and its output vector are one."
        )


def _diagnose_encode(model, twin, ids, padding_mask, hidden, call: str) -> None:
    real = padding_mask
    with torch.no_grad():
        unmasked = twin.bert(input_ids=ids).last_hidden_state
    if _masks_the_wrong_tokens(model, ids, unmasked, call) or not torch.isfinite(hidden[real]).all():
        raise CheckFailed(
            f"{call}.encode(ids, padding_mask) hides the real tokens and shows the padding. The encoder's "
            "mask is True where a query MAY attend (notebook 04), and so is padding_mask at real tokens: pass "
            "padding_mask[:, None, :] itself, not its negation (PyTorch's own layers take True = hidden; this "
            "course's Encoder does not)."
        )
    with torch.no_grad():
        embeddings = twin.bert.embeddings
        scale = math.sqrt(model.token_embedding.weight.shape[1])
        saved = embeddings.word_embeddings.weight.clone()
        embeddings.word_embeddings.weight.mul_(scale)
        scaled = twin.bert(input_ids=ids, attention_mask=padding_mask.long()).last_hidden_state
        embeddings.word_embeddings.weight.copy_(saved)
    if matches(hidden[real], unmasked[real]):
        raise CheckFailed(
            f"{call}.encode(ids, padding_mask) lets every position attend to the padding: pass the padding mask to "
            "self.encoder, as a mask broadcastable to (batch, seq, seq): padding_mask[:, None, :], the keys each "
            "query may see."
        )
    if matches(hidden[real], scaled[real]):
        raise CheckFailed(
            f"{call}.encode multiplies the token embeddings by √d_model, as notebook 07 did: BERT adds the token and "
            "position embeddings as they are and normalises their sum with self.embedding_norm."
        )
    raise CheckFailed(
        f"{call}.encode(ids, padding_mask) differs from BertModel's last hidden states with the same weights. BERT "
        "adds self.token_embedding(ids) and self.position_embedding(positions 0 .. seq - 1), normalises the sum with "
        "self.embedding_norm, and runs self.encoder on it with the padding mask."
    )


def _masks_the_wrong_tokens(model: nn.Module, ids: torch.Tensor, unmasked: torch.Tensor, call: str) -> bool:
    """Whether encode is right without a mask but wrong with a mask that calls every token real."""
    try:
        without_mask = call_learner(model.encode, ids, call=f"{call}.encode(ids)")
        every_token_real = call_learner(model.encode, ids, torch.ones_like(ids, dtype=torch.bool), call=call)
    except CheckFailed:
        return False
    return matches(without_mask, unmasked) and not matches(every_token_real, unmasked)


def _diagnose_head(model, twin, ids, padding_mask, logits, call: str) -> None:
    real = padding_mask
    with torch.no_grad():
        hidden = twin.bert(input_ids=ids, attention_mask=padding_mask.long()).last_hidden_state
        transform = twin.cls.predictions.transform
        words, bias = twin.cls.predictions.decoder.weight, twin.cls.predictions.bias
        candidates = {
            "leaves out the head: the logits are the encoder's output times the word table. BERT's head first "
            "transforms each vector (self.head_transform, ReLU, self.head_norm)": hidden @ words.T + bias,
            "leaves out the ReLU after self.head_transform": transform.LayerNorm(transform.dense(hidden)) @ words.T
            + bias,
            "leaves out self.head_norm after the ReLU": F.relu(transform.dense(hidden)) @ words.T + bias,
            "leaves out self.head_bias: add it to the logits": transform(hidden) @ words.T,
            "applies self.head_norm before the ReLU: BERT's order is dense, ReLU, norm": F.relu(
                transform.LayerNorm(transform.dense(hidden))
            )
            @ words.T
            + bias,
        }
    for mistake, candidate in candidates.items():
        if torch.allclose(logits[real], candidate[real], atol=1e-4):
            raise CheckFailed(f"{call}(ids, padding_mask) {mistake}.")
    raise CheckFailed(
        f"{call}(ids, padding_mask) differs from BertForMaskedLM's logits although encode agrees: the head is "
        "self.head_transform, ReLU, self.head_norm, then the product with self.token_embedding.weight (its "
        "transpose) plus self.head_bias."
    )


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_masked_lm_loss(masked_lm_loss, seed: int = 0) -> None:
    """Compare with F.cross_entropy(ignore_index=-100) over the flattened positions, the loss BertForMaskedLM
    computes, for labels where a few positions (or a single one) are chosen; and a gradient to the logits."""
    for batch, seq, vocab, rate in ((2, 7, 11, 0.3), (3 + seed, 5, 17 + seed, 0.15)):
        logits = 3 * seeded_randn(batch, seq, vocab, seed=seed)
        generator = torch.Generator().manual_seed(seed + 1)
        targets = torch.randint(vocab, (batch, seq), generator=generator)
        chosen = torch.rand(batch, seq, generator=generator) < rate
        chosen[0, 1] = True  # at least one position is chosen
        labels = targets.masked_fill(~chosen, IGNORED)
        call = f"masked_lm_loss(logits {shape_of(logits)}, labels {shape_of(labels)})"
        loss = _loss(masked_lm_loss, logits, labels, call)
        expected = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=IGNORED)
        if not matches(loss, expected):
            _diagnose_loss(loss, logits, labels, call)
            expect_close(loss, expected, f"{call}, compared with F.cross_entropy(ignore_index=-100)")
    logits = seeded_randn(1, 4, 6, seed=seed + 2).requires_grad_()
    labels = torch.tensor([[IGNORED, 2, IGNORED, IGNORED]])
    call = "masked_lm_loss(logits, labels) with one chosen position"
    loss = _loss(masked_lm_loss, logits, labels, call)
    expect_close(loss.detach(), F.cross_entropy(logits[0, 1:2].detach(), labels[0, 1:2]), call)
    expect_differentiable(loss, call, source=logits)
    passed("masked_lm_loss", "the mean cross-entropy over the chosen positions only")


def _loss(masked_lm_loss, logits, labels, call: str) -> torch.Tensor:
    try:
        loss = call_learner(masked_lm_loss, logits, labels, call=call)
    except CheckFailed as failure:
        cause = failure.__cause__
        if isinstance(cause, (RuntimeError, ValueError, IndexError)) and "100" in str(cause):
            raise CheckFailed(
                f"{failure}\nThe label {IGNORED} marks a position that was not chosen, which is no word: leave those "
                f"positions out (F.cross_entropy does with ignore_index={IGNORED}, its default)."
            ) from cause
        if isinstance(cause, (RuntimeError, ValueError)) and logits.dim() == 3:
            raise CheckFailed(
                f"{failure}\nF.cross_entropy reads the classes on axis 1: flatten the logits to (batch·seq, vocab) "
                "and the labels to (batch·seq,) first."
            ) from cause
        raise
    expect_tensor(loss, call, (), logits.dtype)
    return loss


def _diagnose_loss(loss, logits, labels, call: str) -> None:
    flat_logits, flat_labels = logits.flatten(0, 1), labels.flatten()
    each = F.cross_entropy(flat_logits, flat_labels, ignore_index=IGNORED, reduction="none")
    chosen = flat_labels != IGNORED
    mistakes = {
        "divides the sum of the chosen positions' losses by the number of ALL positions: the mean runs over the "
        "chosen positions only, or the loss shrinks with the masking rate": each.sum() / each.numel(),
        "returns the SUM of the chosen positions' losses: take their mean": each.sum(),
    }
    for mistake, candidate in mistakes.items():
        if matches(loss, candidate):
            raise CheckFailed(f"{call} {mistake}.")
    if matches(loss, each[chosen].mean() / 2) or matches(loss, each[chosen].mean() * chosen.float().mean()):
        raise CheckFailed(f"{call} is off by a factor: take the plain mean of the chosen positions' cross-entropies.")


# Exercise 4 ---------------------------------------------------------------------------------------------

CLASSIFIER_PARTS = ("encoder", "pooler", "classifier")


def classification_twin(model: nn.Module, sizes: dict, num_labels: int) -> BertForSequenceClassification:
    """A BertForSequenceClassification holding a copy of the learner's weights."""
    with torch.random.fork_rng():
        twin = BertForSequenceClassification(bert_config(**sizes, num_labels=num_labels))
    encoder = {name: value for name, value in _copied(model.encoder).items() if name.startswith("bert.")}
    named = encoder | {
        "bert.pooler.dense.weight": model.pooler.weight.detach(),
        "bert.pooler.dense.bias": model.pooler.bias.detach(),
        "classifier.weight": model.classifier.weight.detach(),
        "classifier.bias": model.classifier.bias.detach(),
    }
    twin.load_state_dict(named)
    return twin.eval()


@learner_facing
def check_sequence_classifier(SequenceClassifier: type, seed: int = 0) -> None:
    """Compare with BertForSequenceClassification holding the learner's weights, on a padded batch, at two sizes
    and numbers of labels; the encoder inside is the correct EncoderForMaskedLM."""
    with earlier_exercises_replaced(SequenceClassifier.__init__, "EncoderForMaskedLM"):
        for sizes, num_labels in zip(_model_cases(seed), (3, 2 + seed), strict=True):
            args, shown = _arguments(sizes)
            call = f"SequenceClassifier({num_labels}, {shown[1:-1]})"
            model = built_with_seed(SequenceClassifier, num_labels, *args, seed=seed, call=call)
            model = perturbed(model, seed + 1)
            missing = [name for name in CLASSIFIER_PARTS if not hasattr(model, name)]
            if missing:
                raise CheckFailed(
                    f"{call} has no {', '.join('self.' + name for name in missing)}: the notebook names each part, "
                    "and the check copies them into BertForSequenceClassification by those names."
                )
            twin = classification_twin(model, sizes, num_labels)
            ids, padding_mask = _batch(sizes, seed + 2)
            logits = _classified(model, ids, padding_mask, sizes, call)
            expect_tensor(logits, f"{call}(ids, padding_mask)", (ids.shape[0], num_labels), torch.float32)
            with torch.no_grad():
                expected = twin(input_ids=ids, attention_mask=padding_mask.long()).logits
            if not matches(logits, expected):
                _diagnose_classifier(twin, ids, padding_mask, logits, call)
                expect_close(
                    logits, expected, f"{call}(ids, padding_mask), compared with BertForSequenceClassification"
                )
            expect_differentiable(logits, f"{call}(ids, padding_mask)")
    passed("SequenceClassifier", "equals BertForSequenceClassification: the first token, the pooler, the classifier")


def _classified(model: nn.Module, ids, padding_mask, sizes: dict, call: str) -> torch.Tensor:
    try:
        return call_learner(model, ids, padding_mask, call=f"{call}(ids, padding_mask)")
    except CheckFailed as failure:
        cause = failure.__cause__
        with torch.no_grad():
            logits = model.encoder(ids, padding_mask)
        if isinstance(cause, RuntimeError) and logits.shape[-1] == sizes["vocab"] and str(sizes["vocab"]) in str(cause):
            raise CheckFailed(
                f"{failure}\nCalling self.encoder(...) runs its forward, which gives the logits of every word "
                f"{shape_of(logits)}, not the vectors: the classifier reads self.encoder.encode(ids, padding_mask), "
                "(batch, seq, d_model)."
            ) from cause
        raise


def _diagnose_classifier(twin, ids, padding_mask, logits, call: str) -> None:
    with torch.no_grad():
        hidden = twin.bert(input_ids=ids, attention_mask=padding_mask.long()).last_hidden_state
        dense, classifier = twin.bert.pooler.dense, twin.classifier
        real = padding_mask.unsqueeze(-1).float()
        mean = (hidden * real).sum(1) / real.sum(1)
        last = hidden[torch.arange(ids.shape[0]), padding_mask.sum(1) - 1]
        candidates = {
            "averages the positions' vectors: BERT's classifier reads the FIRST position's vector (the [CLS] "
            "token's), hidden[:, 0]": classifier(torch.tanh(dense(mean))),
            "averages every position, padding included: and BERT's classifier reads the first position's vector, "
            "hidden[:, 0]": classifier(torch.tanh(dense(hidden.mean(1)))),
            "reads the last real token's vector: BERT's classifier reads the first position's, hidden[:, 0]": (
                classifier(torch.tanh(dense(last)))
            ),
            "leaves out the tanh after self.pooler": classifier(dense(hidden[:, 0])),
            "leaves out self.pooler: BERT's pooler is a linear layer and tanh on the first vector, before the "
            "classifier": classifier(hidden[:, 0]),
        }
    for mistake, candidate in candidates.items():
        if matches(logits, candidate):
            raise CheckFailed(f"{call}(ids, padding_mask) {mistake}.")
    masked = twin(input_ids=ids).logits.detach()
    if matches(logits, masked):
        raise CheckFailed(
            f"{call}(ids, padding_mask) does not pass the padding mask to the encoder: give it to "
            "self.encoder.encode, so that no position attends to the padding."
        )


# Exercise 5 ---------------------------------------------------------------------------------------------

# How a training loop can go wrong, each as the settings of ``_trajectory`` that reproduce it, with what to say.
LOOP_MISTAKES = (
    (
        {"train": False},
        "trains with dropout off: the check hands the classifier over in evaluation mode, as it is after an "
        "evaluation, so call classifier.train() before the first step",
    ),
    (
        {"zero_grad": False},
        "adds each step's gradients to those of the steps before: loss.backward() accumulates into .grad, so "
        "call optimizer.zero_grad() before every backward",
    ),
    (
        {"update": False},
        "never changes the weights: the optimizer's step must come after loss.backward() and before the next "
        "zero_grad (zeroing between backward and step throws the gradients away)",
    ),
    (
        {"once": False},
        "makes a new optimizer at every step, which forgets AdamW's running averages of the gradients: make it "
        "once, before the loop",
    ),
    ({"optimizer": "Adam"}, "uses torch.optim.Adam, whose weight_decay adds to the gradient: use torch.optim.AdamW"),
    ({"optimizer": "SGD"}, "uses plain SGD: the exercise asks for torch.optim.AdamW"),
    ({"decay": 0.0}, "leaves out the weight decay: give AdamW weight_decay=weight_decay"),
    ({"decay": 0.01}, "always decays by 0.01: give AdamW the weight_decay argument"),
    ({"lr": 1e-3}, "uses AdamW's default learning rate, 0.001: give it lr=learning_rate"),
    (
        {"mask": False},
        "calls the classifier without the padding mask, so padding counts as words: classifier(ids, padding_mask)",
    ),
    ({"clip": 1.0}, "clips the gradients' norm: this loop trains without clipping"),
    (
        {"after": True},
        "reports each batch's loss after its step's update: keep loss.item() of the loss you backpropagated, the "
        "one computed before optimizer.step()",
    ),
)


LOOP_DROPOUT = 0.3  # the classifier's dropout: a loop left in evaluation mode scores other losses


def _loop_case(seed: int, num_labels: int, steps: int) -> tuple[nn.Module, list]:
    """A small classifier with dropout, in evaluation mode, and ``steps`` padded batches of (ids, padding_mask,
    labels) of varying sizes."""
    from ..reference.bag_of_words import BagOfWordsClassifier

    with global_seed(seed):
        classifier = BagOfWordsClassifier(31, 8, num_labels, dropout=LOOP_DROPOUT)
    generator = torch.Generator().manual_seed(seed + 1)
    batches = []
    for step in range(steps):
        batch, seq = 3 + (step + seed) % 3, 5 + step % 2
        ids = torch.randint(1, 31, (batch, seq), generator=generator)
        lengths = torch.randint(2, seq + 1, (batch,), generator=generator)
        lengths[0] = 2  # every batch holds padding
        padding_mask = torch.arange(seq) < lengths[:, None]  # (batch, seq)
        labels = torch.randint(num_labels, (batch,), generator=generator)
        batches.append((ids.masked_fill(~padding_mask, 0), padding_mask, labels))
    return handed_over(classifier.eval()), batches  # it trains where the learner's loop runs


@oracle
def training_losses(
    weights: dict[str, torch.Tensor], batches: list, seed: int, lr: float, decay: float, mistake: dict | None = None
) -> torch.Tensor:
    """The losses of a training loop on the small classifier holding ``weights``, its dropout drawn from ``seed``: a
    right one (torch.optim.AdamW, learning rate ``lr``, weight decay ``decay``), or one with a ``mistake`` of
    LOOP_MISTAKES."""
    from ..reference.bag_of_words import BagOfWordsClassifier

    mistake = mistake or {}
    settings = {"lr": lr, "decay": decay, "optimizer": "AdamW"} | mistake
    (vocab, width), labels = weights["embedding.weight"].shape, weights["output.weight"].shape[0]
    with torch.random.fork_rng(devices=[]):  # building it draws weights that are then replaced
        model = BagOfWordsClassifier(vocab, width, labels, dropout=LOOP_DROPOUT)
    model.load_state_dict(weights)
    optimizers = {"AdamW": torch.optim.AdamW, "Adam": torch.optim.Adam, "SGD": torch.optim.SGD}

    def optimizer():
        kind = optimizers[settings["optimizer"]]
        return kind(model.parameters(), lr=settings["lr"], weight_decay=settings["decay"])

    losses = []
    with global_seed(seed):
        model.train(mistake.get("train", True))
        made = optimizer()
        for ids, padding_mask, targets in batches:
            made = made if mistake.get("once", True) else optimizer()
            loss = F.cross_entropy(model(ids, padding_mask if mistake.get("mask", True) else None), targets)
            if mistake.get("zero_grad", True):
                made.zero_grad()
            loss.backward()
            if "clip" in mistake:
                nn.utils.clip_grad_norm_(model.parameters(), mistake["clip"])
            if mistake.get("update", True):
                made.step()
            if mistake.get("after"):
                with torch.no_grad():
                    loss = F.cross_entropy(model(ids, padding_mask), targets)
            losses.append(loss.item())
    return torch.tensor(losses, dtype=torch.float64)


@learner_facing
def check_fine_tune(fine_tune, seed: int = 0) -> None:
    """Compare the losses the learner's loop reports with those of torch.optim.AdamW run on a copy of the same
    classifier, its dropout drawn from the same seed, on padded batches: once with the default weight decay and once
    with a larger one, which shows whether it is used."""
    cases = ((3, 4, 0.05, None), (2 + seed, 5 + seed, 0.02 + 0.01 * seed, 0.3 + 0.1 * seed))
    for index, (num_labels, steps, learning_rate, weight_decay) in enumerate(cases):
        case_seed = seed + 10 * index
        classifier, batches = _loop_case(case_seed, num_labels, steps)
        options = {} if weight_decay is None else {"weight_decay": weight_decay}
        shown = "".join(f", weight_decay={value}" for value in options.values())
        call = f"fine_tune(classifier, {steps} batches, {learning_rate}{shown})"
        decay = options.get("weight_decay", 0.01)
        # A copy of the weights before the learner's loop trains the classifier (in place, in one process)
        weights = {name: value.detach().clone() for name, value in classifier.state_dict().items()}
        expected = training_losses(weights, batches, case_seed, learning_rate, decay)
        with global_seed(case_seed):  # the dropout's draws: the same as the oracle's
            result = call_learner(fine_tune, classifier, batches, learning_rate, **options, call=call)
        losses = _reported_losses(result)
        if losses is None or len(losses) != steps:
            raise CheckFailed(
                f"{call} must return a list of {steps} floats, one loss per batch (loss.item(), taken before that "
                f"step's update); got {_described(result)}."
            )
        if not _same_losses(losses, expected):
            _diagnose_loop(losses, weights, batches, case_seed, learning_rate, decay, call)
            step = next(step for step in range(steps) if not _same_losses(losses[step], expected[step]))
            raise CheckFailed(
                f"{call}: the loss of step {step + 1} is {losses[step]:.6f}, where torch.optim.AdamW on a copy of the "
                f"classifier gives {expected[step]:.6f} (losses {_listed(losses)} against {_listed(expected)}). "
                + (
                    "The first loss already differs: it is F.cross_entropy(classifier(ids, padding_mask), labels), "
                    "the mean over the batch, in training mode."
                    if step == 0
                    else "The first losses agree, so the update differs."
                )
            )
    passed("fine_tune", "each step's loss is AdamW's on the same batches, dropout and weight decay included")


def _reported_losses(result) -> torch.Tensor | None:
    """The learner's losses as a tensor, or None when they are not a list (or tuple) of plain numbers."""
    if not isinstance(result, list | tuple) or not all(
        isinstance(loss, float | int) and not isinstance(loss, bool) for loss in result
    ):
        return None
    return torch.tensor([float(loss) for loss in result], dtype=torch.float64)


def _described(result) -> str:
    if isinstance(result, list | tuple) and any(isinstance(loss, torch.Tensor) for loss in result):
        return (
            "tensors: take loss.item(), a Python float, since a loss tensor keeps its step's whole graph in memory "
            "for as long as the list lives"
        )
    if isinstance(result, list | tuple):
        return f"{type(result).__name__} of {len(result)} items"
    return type(result).__name__


def _same_losses(losses: torch.Tensor, expected: torch.Tensor) -> bool:
    return losses.shape == expected.shape and torch.allclose(losses, expected, rtol=1e-4, atol=1e-5)


def _listed(losses: torch.Tensor) -> str:
    return "[" + ", ".join(f"{loss:.4f}" for loss in losses.tolist()) + "]"


def _diagnose_loop(losses, weights: dict, batches: list, seed: int, lr: float, decay: float, call: str) -> None:
    given = {"lr": lr, "decay": decay}
    for mistake, explained in LOOP_MISTAKES:
        if all(given.get(key, object()) == value for key, value in mistake.items()):
            continue  # with these arguments, the "mistake" is the right loop
        if _same_losses(losses, training_losses(weights, batches, seed, lr, decay, mistake)):
            raise CheckFailed(f"{call} {explained}.")
