"""Checks for notebook 08, training the encoder-decoder and decoding with it.

Oracles: the definition of the shifted input; ``F.cross_entropy`` with ``ignore_index`` and ``label_smoothing``
and its gradient; closed-form values of the learning-rate schedule; for decoding, scripted models whose best
outputs are known by construction (the reversed source, or the best sequence found by trying every sequence),
and, on a real model, the definition of greedy decoding checked by one teacher-forced pass. The scripted models
need one row of memory per row of target words, as the real model's cross-attention does.
"""

import itertools
import math
import random
import re

import torch
import torch.nn.functional as F
from torch import nn

from ..reference.nb04_masking import source_mask, target_mask
from ..reference.nb07_decoder_and_full_model import Transformer
from . import (
    CheckFailed,
    NotImplementedYet,
    broadcast_shape,
    call_learner,
    expect_close,
    expect_tensor,
    global_seed,
    learner_facing,
    passed,
    seeded_randn,
)
from .recordings import oracle

PAD, BOS, EOS = 0, 1, 2  # as in transformer_course.data.translation


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_shift_right(shift_right, seed: int = 0) -> None:
    """Check BOS in front, the last column dropped, the padding kept, other BOS ids and a batch of one."""
    generator = torch.Generator().manual_seed(seed)
    target = torch.randint(4, 20, (3, 6), generator=generator)  # (batch, n_tgt)
    target[0, 4], target[0, 5:] = EOS, PAD
    target[1, 2], target[1, 3:] = EOS, PAD
    target[2, 5] = EOS
    for bos_id, tokens in ((BOS, target), (7, target[:1, :3])):
        call = f"shift_right(target of shape {tuple(tokens.shape)}, bos_id={bos_id})"
        try:
            shifted = call_learner(shift_right, tokens, bos_id, call=call)
        except NotImplementedYet:
            raise
        except CheckFailed as crash:
            _explain_shift_crash(shift_right, tokens, bos_id, call, crash)
        expected = torch.cat([torch.full_like(tokens[:, :1], bos_id), tokens[:, :-1]], dim=1)
        _diagnose_shift(shifted, tokens, bos_id, call)
        expect_tensor(shifted, "shift_right", tokens.shape, tokens.dtype)
        if not torch.equal(shifted, expected):
            raise CheckFailed(f"{call}: expected\n{expected.tolist()}\ngot\n{shifted.tolist()}.")
    passed("shift_right", "BOS in front, every word moved one place right, the last column dropped")


def _explain_shift_crash(shift_right, target: torch.Tensor, bos_id: int, call: str, crash: CheckFailed) -> None:
    """A crash on a batch: if the same function shifts one sentence right, its BOS column has one row only."""
    if target.shape[0] > 1:
        one = target[:1]
        try:
            shifted = shift_right(one, bos_id)
        except Exception:
            shifted = None
        expected = torch.cat([torch.full_like(one[:, :1], bos_id), one[:, :-1]], dim=1)
        if isinstance(shifted, torch.Tensor) and shifted.shape == expected.shape and torch.equal(shifted, expected):
            raise CheckFailed(
                f"{crash}\nThe same call on the first sentence alone gives the right answer: your BOS column has "
                f"one row, while a batch of {target.shape[0]} sentences needs one row per sentence, (batch, 1), "
                "before it can be joined to the target. Make it from the target's own shape."
            ) from crash.__cause__
    raise crash


def _diagnose_shift(shifted, target: torch.Tensor, bos_id: int, call: str) -> None:
    if not isinstance(shifted, torch.Tensor):
        return
    if shifted.shape == (target.shape[0], target.shape[1] + 1):
        raise CheckFailed(
            f"{call}: the result has one column too many. Drop the target's last column: the decoder input must "
            "be as long as the target, so that position i predicts target word i."
        )
    if torch.equal(shifted, target.roll(1, dims=1)):
        raise CheckFailed(f"{call}: torch.roll moved the last word to the front; position 0 must hold bos_id.")
    down_a_row = torch.cat([torch.full_like(target[:1], bos_id), target[:-1]], dim=0)  # shifted along dim 0
    if target.shape[0] > 1 and shifted.shape == target.shape and torch.equal(shifted, down_a_row):
        raise CheckFailed(
            f"{call}: you shifted along the batch axis (dim 0): the first row became bos_id and every sentence "
            "moved down one row, into the next sentence's place. The words move along the word axis, dim 1: "
            "each sentence moves one place to the right within its own row."
        )
    if shifted.shape == target.shape and not (shifted[:, 0] == bos_id).all():
        if torch.equal(shifted[:, :-1], target[:, 1:]):
            raise CheckFailed(
                f"{call}: you shifted left. The decoder input starts with bos_id and is the target moved one "
                "place to the right."
            )
        raise CheckFailed(f"{call}: the first column must be bos_id={bos_id}, got {shifted[:, 0].tolist()}.")
    if shifted.shape == target.shape and torch.equal(shifted[:, 1:], target[:, 1:]):
        raise CheckFailed(
            f"{call}: you replaced the target's first word by bos_id, and the other words stayed where they were. "
            "Every word moves one place to the right: column i of the result is the target's column i - 1, so "
            "the first word is kept (in column 1) and the last one drops out."
        )
    without_eos = target.masked_fill(target == EOS, PAD)  # (batch, n_tgt)
    eos_dropped = torch.cat([torch.full_like(target[:, :1], bos_id), without_eos[:, :-1]], dim=1)
    if shifted.shape == target.shape and torch.equal(shifted, eos_dropped) and (target[:, :-1] == EOS).any():
        raise CheckFailed(
            f"{call}: the EOS of the shorter sentences became PAD:\n{shifted.tolist()}\nEOS is a word of the "
            "target like the others: column i of the result is the target's column i - 1, whatever its id, EOS "
            "and PAD included. Only the target's last column drops out; every other id moves along unchanged."
        )


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_sequence_loss(sequence_loss, seed: int = 0) -> None:
    """Check against F.cross_entropy (ignore_index, label_smoothing) with and without smoothing, for two padding
    ids, its gradient, and large logits."""
    for pad_id in (PAD, 3):
        _check_loss_values(sequence_loss, seed, pad_id)
    passed("sequence_loss", "equals F.cross_entropy with label smoothing and padding ignored, gradient too")


def _check_loss_values(sequence_loss, seed: int, pad_id: int) -> None:
    vocab = 7
    logits = seeded_randn(2, 5, vocab, seed=seed)  # (batch, n_tgt, vocab)
    target = torch.randint(vocab, (2, 5), generator=torch.Generator().manual_seed(seed))  # (batch, n_tgt)
    target[target == pad_id] = (pad_id + 1) % vocab  # padding only where placed below
    target[0, 3:], target[1, 4:] = pad_id, pad_id
    if pad_id != PAD:
        target[1, 1] = PAD  # a real word whose id is the usual padding id, 0
    for smoothing in (0.0, 0.1):
        call = f"sequence_loss(logits, target, pad_id={pad_id}, smoothing={smoothing})"
        leaf = logits.clone().requires_grad_()
        try:
            loss = call_learner(sequence_loss, leaf, target, pad_id, smoothing, call=call)
        except NotImplementedYet:
            raise
        except CheckFailed as crash:
            _explain_loss_crash(crash, call, logits.shape)
        value = _loss_value(loss, logits.dtype)
        expected = _cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing)
        if not torch.allclose(value, expected, atol=1e-5):
            _diagnose_loss(value, logits, target, pad_id, smoothing, call)
            _expect_positions_kept_apart(sequence_loss, logits, target, pad_id, smoothing, call)
            _expect_no_gradient_at_padding(loss, leaf, target, pad_id, smoothing, call)
        expect_close(value, expected, f"{call}, compared with F.cross_entropy")
        _check_gradient(loss, leaf, target, pad_id, smoothing, call)
    call = f"sequence_loss(logits × 1000, target, pad_id={pad_id}, smoothing=0.1)"
    loss = call_learner(sequence_loss, logits * 1000, target, pad_id, 0.1, call=call)
    value = _loss_value(loss, logits.dtype)
    if not torch.isfinite(value).all():
        raise CheckFailed(
            f"{call} is {value.item()}: log(softmax(...)) underflows to log(0) = -inf for large logits. Compute "
            "log-probabilities with torch.log_softmax, which stays finite."
        )
    expect_close(value, _cross_entropy(logits * 1000, target, pad_id=pad_id, smoothing=0.1), call, atol=1e-3)


def _loss_value(loss, dtype: torch.dtype) -> torch.Tensor:
    """The learner's 0-dimensional loss, detached, in the logits' dtype: a loss computed in double precision is as
    good (nothing in the exercise asks for float32), and compares the same once rounded."""
    if isinstance(loss, torch.Tensor) and loss.dtype == torch.float64:
        expect_tensor(loss, "sequence_loss", (), torch.float64)
        return loss.detach().to(dtype)
    return expect_tensor(loss, "sequence_loss", (), dtype).detach()


@oracle
def _cross_entropy(logits, target, *, pad_id: int, smoothing: float, **options) -> torch.Tensor:
    """The oracle: F.cross_entropy over every position."""
    flat_logits, flat_target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
    return F.cross_entropy(flat_logits, flat_target, ignore_index=pad_id, label_smoothing=smoothing, **options)


def _explain_loss_crash(crash: CheckFailed, call: str, shape: torch.Size) -> None:
    """PyTorch's loss functions read the classes on dim 1; given (batch, n_tgt, vocab) they fail with this error.
    An id looked up along another axis than the vocabulary's goes out of range there."""
    if "Expected target size" in str(crash.__cause__):
        raise CheckFailed(
            f"{crash}\nF.cross_entropy and F.nll_loss read the classes (here the vocabulary) on dim 1, and took "
            "the logits (batch, n_tgt, vocab) for n_tgt classes at vocab positions. Give them the vocabulary on "
            "dim 1, or one row per position: look up their Shape section."
        ) from crash.__cause__
    found = re.search(r"index (\d+) is out of bounds for dimension (\d+) with size (\d+)", str(crash.__cause__))
    axes = {0: "the sentences (batch)", 1: "the positions (n_tgt)"}
    if found and int(found[2]) in axes and int(found[3]) == shape[int(found[2])] != shape[-1]:
        index, axis, size = map(int, found.groups())
        raise CheckFailed(
            f"{crash}\nThe id {index} was looked up along dim {axis}, the axis of {axes[axis]}, which has {size} "
            f"places. The target's ids pick words of the vocabulary: they index the last axis of the logits, dim "
            f"-1 (here {shape[-1]} words). Look up the dim argument of Tensor.gather: it names the axis the ids "
            "index, and the ids need as many dimensions as the logits."
        ) from crash.__cause__
    raise crash


def _diagnose_loss(loss, logits, target, pad_id: int, smoothing: float, call: str) -> None:
    per_token = _cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing, reduction="none")  # 0 where padded
    real = target != pad_id  # (batch, n_tgt)
    log_p = logits.log_softmax(-1)  # (batch, n_tgt, vocab)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (batch, n_tgt)
    wrong = -log_p.sum(-1) - right  # (batch, n_tgt): summed over the vocab - 1 wrong words
    spread_over_wrong_words = (1 - smoothing) * right + smoothing * wrong / (logits.shape[-1] - 1)
    others = wrong + log_p[..., pad_id]  # (batch, n_tgt): summed over the vocab - 2 words neither right nor padding
    annotated_transformer = (1 - smoothing) * right + smoothing * others / (logits.shape[-1] - 2)
    every_position = _cross_entropy(logits, target, pad_id=-100, smoothing=smoothing, reduction="none")
    every_position = every_position.reshape(target.shape)  # (batch, n_tgt): padding positions not left out
    smoothing_summed = (1 - smoothing) * right + smoothing * -log_p.sum(-1)  # (batch, n_tgt): ε on every word
    uniform = -log_p.mean(-1)  # (batch, n_tgt)
    vocab = logits.shape[-1]
    per_position = per_token.reshape(target.shape)  # (batch, n_tgt), 0 where padded
    on_right, on_other = 1 - smoothing + smoothing / vocab, smoothing / vocab  # the smoothed target q
    entropy = -sum(n * q * math.log(q) for n, q in ((1, on_right), (vocab - 1, on_other)) if q > 0)

    def smoothed(log_p: torch.Tensor) -> torch.Tensor:  # (batch, n_tgt): the loss at each position, from log_p
        picked = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
        return (1 - smoothing) * picked + smoothing * -log_p.mean(-1)

    batch, n_tgt = target.shape
    reshaped = logits.reshape(batch, vocab, n_tgt)  # the numbers in their order, read as (batch, vocab, n_tgt)
    mistakes = {
        "you normalised over the positions (dim 1), not over the vocabulary: log_softmax (or softmax) over dim 1 "
        "makes each word's probabilities across the positions of a sentence add up to 1, so every position's "
        "loss depends on the other positions' logits, padding included. Each position's probabilities are over "
        "the vocabulary, the last axis (dim=-1)": smoothed(logits.log_softmax(1))[real].mean(),
        "you normalised over the sentences (dim 0), not over the vocabulary: log_softmax (or softmax) over dim 0 "
        "makes each word's probabilities across the sentences of the batch add up to 1. Each position's "
        "probabilities are over the vocabulary, the last axis (dim=-1)": smoothed(logits.log_softmax(0))[real].mean(),
        f"view or reshape to (batch, vocab, n_tgt) = {(batch, vocab, n_tgt)} does not move the vocabulary to dim "
        "1: it keeps the numbers in their order and cuts them into rows of another length, so each 'position' "
        "of the reshaped tensor holds logits of several positions. Moving an axis takes transpose or "
        "permute; or flatten the positions, one row of vocab logits per position": F.cross_entropy(
            reshaped, target, ignore_index=pad_id, label_smoothing=smoothing
        ),
        "your smoothing term is divided by the vocabulary size twice: you multiplied the mean of -log p over the "
        "V words by smoothing / V. Each word's target probability is smoothing / V, so the term is "
        "Σ_v (smoothing / V)(-log p_v) = smoothing times the mean: the mean already divides by V": (
            ((1 - smoothing) * right + smoothing / vocab * uniform)[real].mean() if smoothing > 0 else None
        ),
        f"you kept the positions where target > pad_id, but ids below pad_id={pad_id} are real words too (the "
        f"target here holds ids {sorted(set(target[(target < pad_id)].tolist()))}): leave out exactly the positions "
        "where target == pad_id": (every_position[target > pad_id].mean() if (target < pad_id).any() else None),
        "you averaged the loss within each sentence, then over the sentences: a word of a short sentence then "
        "weighs more than a word of a long one. Average over all the real tokens of the batch at once, so that "
        "every real token counts the same": (per_position.sum(1) / real.sum(1)).mean(),
        f"your loss is below the cross-entropy by {entropy:.4f}, the entropy of the smoothed target q: you "
        "computed the KL divergence KL(q || p), which F.kl_div gives, while the loss here is the cross-entropy "
        "-Σ q log p. The two differ by that constant, so their gradients agree, but not their values: the "
        "cross-entropy cannot go below the entropy of q (the cell after this exercise computes it), the divergence "
        "goes down to 0": (
            _cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing) - entropy if smoothing > 0 else None
        ),
        "the right word's term is not multiplied by 1 - smoothing: the smoothed target gives the right word "
        "1 - smoothing, plus the smoothing / vocab that the mean over the vocabulary already counts. As written, "
        "your target's probabilities add up to 1 + smoothing": ((right + smoothing * uniform)[real].mean()),
        "padding positions count in your loss: leave out the positions where target == pad_id, and average "
        "over the real tokens only": _cross_entropy(logits, target, pad_id=-100, smoothing=smoothing),
        "you divided by the number of all positions, padding included; divide by the number of real tokens": (
            per_token.sum() / target.numel()
        ),
        "you summed over the tokens; average over the real (non-padding) tokens instead": per_token.sum(),
        "label smoothing is missing: the target distribution is (1 - smoothing) on the right word plus "
        "smoothing / vocab on every word": _cross_entropy(logits, target, pad_id=pad_id, smoothing=0.0),
        "you spread the smoothing over the vocab - 1 wrong words; here, as in PyTorch, it is spread over all "
        "vocab words, the right one too: (1 - smoothing) · one-hot + smoothing / vocab": (
            spread_over_wrong_words[target != pad_id].mean()
        ),
        "you used the Annotated Transformer's convention, 1 - smoothing on the right word, 0 on the padding token "
        "and smoothing / (vocab - 2) on each other word; here, as in PyTorch, smoothing / vocab goes to every one "
        "of the vocab words, the right word and the padding token included, and the right word gets 1 - smoothing "
        "on top": annotated_transformer[target != pad_id].mean(),
        "the loss has the wrong sign: it is the negative log-probability, which training makes smaller": (
            -_cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing)
        ),
        "your smoothing term sums -log p over the vocabulary: each of the V words gets target probability "
        "smoothing / V, so the term is smoothing times the mean of -log p over the V words, not their sum": (
            smoothing_summed[real].mean()
        ),
        f"you left out the positions where target == 0, the usual padding id, but here pad_id={pad_id}, and "
        "target 0 is a real word: leave out the positions where target == pad_id": (
            every_position[target != PAD].mean() if pad_id != PAD else None
        ),
        "padding positions receive part of the loss: your smoothing term is averaged over every position, padding "
        "included; leave the positions where target == pad_id out of both terms": (
            (1 - smoothing) * right[real].mean() + smoothing * uniform.mean()
        ),
    }
    for mistake, wrong_loss in mistakes.items():
        if wrong_loss is not None and torch.allclose(loss, wrong_loss.to(loss.dtype), atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")


def _expect_connected(loss, call: str) -> None:
    if not loss.requires_grad:
        raise CheckFailed(
            f"{call}: the loss is not connected to the logits, so training could not follow its gradient. Did you "
            "use .item(), .detach() or torch.tensor(...) on the way?"
        )


def _expect_positions_kept_apart(sequence_loss, logits, target, pad_id: int, smoothing: float, call: str) -> None:
    """The loss is a mean of per-position terms, each a function of its own position's logits: moving one
    position's logits changes the gradient at that position only. A softmax over another axis than the
    vocabulary, or a reshape that cuts the numbers into rows of another length, mixes the positions."""

    def gradient(at: torch.Tensor) -> torch.Tensor | None:
        leaf = at.clone().requires_grad_()
        try:
            (found,) = torch.autograd.grad(sequence_loss(leaf, target, pad_id, smoothing), leaf)
        except Exception:
            return None
        return found if isinstance(found, torch.Tensor) and found.shape == logits.shape else None

    moved = logits.clone()
    moved[0, 0] += torch.linspace(-1.0, 1.0, logits.shape[-1])  # row 0, position 0: a real word
    before, after = gradient(logits), gradient(moved)
    if before is None or after is None:
        return
    changed = (after - before).abs().amax(dim=-1)  # (batch, n_tgt)
    changed[0, 0] = 0.0
    if changed.max() > 1e-6:
        row, position = divmod(int(changed.argmax()), target.shape[1])
        raise CheckFailed(
            f"{call}: your loss mixes positions. Changing the logits of row 0, position 0 alone changes the "
            f"gradient at row {row}, position {position}. Each position's term must depend on its own logits "
            "only: its probabilities are a softmax over the vocabulary, the last axis. A softmax over another "
            "axis, or a view/reshape that cuts the numbers into rows of another length, mixes positions."
        )


def _expect_no_gradient_at_padding(loss, leaf: torch.Tensor, target, pad_id: int, smoothing: float, call: str):
    """A padding position must not move the model: its logits get no gradient, whatever else is wrong."""
    _expect_connected(loss, call)
    (gradient,) = torch.autograd.grad(loss, leaf, retain_graph=True)
    leaked = gradient.abs().amax(dim=-1) * (target == pad_id)  # (batch, n_tgt): only padding positions
    if leaked.max() > 1e-7:
        row, position = divmod(int(leaked.argmax()), target.shape[1])
        which = (
            "With smoothing=0.0 your loss left them out, so it is the smoothing term that counts them"
            if smoothing > 0
            else "Some part of your loss is still computed there"
        )
        raise CheckFailed(
            f"{call}: padding positions receive gradient (row {row}, position {position}, where target == "
            f"pad_id={pad_id}), so training would change the model to predict something after the sentence. "
            f"{which}: leave the positions where target == pad_id out of every term."
        )


def _check_gradient(loss, leaf: torch.Tensor, target, pad_id: int, smoothing: float, call: str) -> None:
    _expect_no_gradient_at_padding(loss, leaf, target, pad_id, smoothing, call)
    (gradient,) = torch.autograd.grad(loss, leaf)
    expected = _cross_entropy_gradient(leaf, target, pad_id=pad_id, smoothing=smoothing)
    if not torch.allclose(gradient, expected, atol=1e-5):
        _diagnose_gradient(gradient, expected, leaf, target, pad_id, smoothing, call)
    expect_close(gradient, expected, f"{call}: the gradient with respect to the logits")


def _diagnose_gradient(gradient, expected, leaf, target, pad_id: int, smoothing: float, call: str) -> None:
    """The value is right (checked before) and the gradient is not: part of the loss passes no gradient."""
    right_word = (1 - smoothing) * _cross_entropy_gradient(leaf, target, pad_id=pad_id, smoothing=0.0)
    cut = {  # which term's gradient is missing, if the gradient is the other term's alone
        "the smoothing term, smoothing times the mean of -log p": right_word,
        "the right word's term, (1 - smoothing) times -log p of the right word": expected - right_word,
    }
    for term, left in cut.items():
        if smoothing > 0 and torch.allclose(gradient, left, atol=1e-6):
            raise CheckFailed(
                f"{call}: the value of your loss is right, but not its gradient: {term}, passes no gradient to "
                "the logits, as if it were a constant (a .detach(), .data, or a value computed under "
                "torch.no_grad()). Training follows the gradient of the whole loss: both terms must stay "
                "connected to the logits."
            )
    raise CheckFailed(
        f"{call}: the value of your loss is right, but not its gradient with respect to the logits (it differs "
        f"from F.cross_entropy's by up to {(gradient - expected).abs().max().item():.3g}). Part of your "
        "computation passes back less gradient than its value depends on: look for a .detach(), .data, .item() "
        "or torch.no_grad() on the way from the logits to the loss."
    )


@oracle
def _cross_entropy_gradient(logits, target, *, pad_id: int, smoothing: float) -> torch.Tensor:
    """The gradient of the oracle's loss with respect to the logits."""
    leaf = logits.detach().clone().requires_grad_()
    (gradient,) = torch.autograd.grad(_cross_entropy(leaf, target, pad_id=pad_id, smoothing=smoothing), leaf)
    return gradient


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_learning_rate(learning_rate, peak: float = 1e-3, warmup_steps: int = 400) -> None:
    """Check closed-form values: linear warm-up to the peak at warmup_steps, then peak · sqrt(warmup / step); for
    the peak and warm-up given, then for others, so that a number written in place of an argument is found."""
    _check_schedule(learning_rate, peak, warmup_steps, fixed="")
    other_peak, other_warmup = 3 * peak, 3 * warmup_steps + 1
    fixed = (
        f"It is right for peak={peak} and warmup_steps={warmup_steps} but not for peak={other_peak} and "
        f"warmup_steps={other_warmup}: a number fixed in your function stands where an argument should be used. "
    )
    _check_schedule(learning_rate, other_peak, other_warmup, fixed)
    passed("learning_rate", "warms up linearly to the peak, then decays as 1/√step")


def _check_schedule(learning_rate, peak: float, warmup_steps: int, fixed: str) -> None:
    """The rate at five steps against the closed form; ``fixed`` begins the message when an earlier setting of the
    arguments passed."""
    expected = {
        1: peak / warmup_steps,
        warmup_steps // 2: peak * (warmup_steps // 2) / warmup_steps,
        warmup_steps: peak,
        4 * warmup_steps: peak / 2,
        100 * warmup_steps: peak / 10,
    }
    values = {}
    for step in expected:
        call = f"learning_rate(step={step}, peak={peak}, warmup_steps={warmup_steps})"
        value = call_learner(learning_rate, step, peak, warmup_steps, call=call)
        try:
            values[step] = float(value)
        except (TypeError, ValueError):
            raise CheckFailed(f"{call} must return a number, got {type(value).__name__}.") from None
    if not fixed:
        _diagnose_schedule(values, peak, warmup_steps)
    for step, value in values.items():
        if not math.isclose(value, expected[step], rel_tol=1e-6):
            raise CheckFailed(
                f"learning_rate(step={step}, peak={peak}, warmup_steps={warmup_steps}) = {value:.6g}; expected "
                f"{expected[step]:.6g}. {fixed}The rate grows linearly, from peak / warmup_steps at step 1 to the "
                "peak at step warmup_steps, then decays as 1 / √step: peak / 2 at 4 × warmup_steps, peak / 10 at "
                "100 × warmup_steps."
            )


def _diagnose_schedule(values: dict[int, float], peak: float, warmup: int) -> None:
    late = values[4 * warmup]
    if values[1] == 0 and values[warmup // 2] == 0 and math.isclose(values[warmup], peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate is 0 at step 1 and at step {warmup // 2}, then jumps to the peak at step {warmup}: "
            "there is no gradual warm-up. Integer division, step // warmup_steps, rounds the fraction down to 0 "
            "until step reaches warmup_steps; the warm-up needs the true fraction, which grows a little at every "
            "step."
        )
    if values[1] == 0:
        raise CheckFailed(
            "learning_rate(step=1, ...) is 0, so the first update would change nothing: steps count from 1, and "
            "step 1 gets peak / warmup_steps."
        )
    if math.isclose(values[1], peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step=1, ...) is already the peak {peak}: there is no warm-up. Grow linearly, "
            "peak · step / warmup_steps, until step = warmup_steps."
        )
    if math.isclose(values[1], peak * math.sqrt(1 / warmup), rel_tol=1e-6) and math.isclose(late, peak / 2):
        raise CheckFailed(
            f"learning_rate(step=1, ...) is peak · sqrt(1 / warmup_steps) = {values[1]:.6g}: your warm-up grows as "
            "the square root of step / warmup_steps. Only the decay has a square root; the warm-up grows linearly, "
            "peak · step / warmup_steps."
        )
    highest_at_the_ends = min(values[1], values[100 * warmup]) > peak * (1 + 1e-6)
    if highest_at_the_ends and math.isclose(values[warmup], peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step=1, ...) = {values[1]:.6g} and learning_rate(step={100 * warmup}, ...) = "
            f"{values[100 * warmup]:.6g}, both above the peak {peak}, which your rate reaches at step warmup_steps: "
            "the rate is lowest at the end of the warm-up instead of highest. The likely cause: at every step it "
            "takes the larger of the two pieces, the warm-up's line and the decay's curve, where the schedule "
            "follows the lower one."
        )
    decay_from_peak_forgotten = [math.isclose(values[step], peak / math.sqrt(step)) for step in values if step > warmup]
    if all(decay_from_peak_forgotten) and math.isclose(values[warmup], peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) = {late:.6g}, where the rate should be half the peak: your decay "
            f"is peak / √step, which drops from the peak to peak / {math.sqrt(warmup + 1):.3g} in one step, at the "
            "end of the warm-up. The decay starts from the peak: it is the peak times a factor that is 1 at step = "
            "warmup_steps and falls as 1 / √step."
        )
    if all(math.isclose(value, peak * min(step / warmup, warmup / math.sqrt(step))) for step, value in values.items()):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) = {late:.6g}, above the peak {peak}: after the warm-up your rate "
            "goes on rising. Your decay term is warmup_steps / √step: its square root covers step alone (written "
            "with **, mind that ** binds more tightly than /), so at step = warmup_steps it is √warmup_steps, not "
            "1. The square root must cover the whole ratio of the two numbers."
        )
    if max(values[4 * warmup], values[100 * warmup]) > peak * (1 + 1e-6):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) = {late:.6g} and learning_rate(step={100 * warmup}, ...) = "
            f"{values[100 * warmup]:.6g}: after the warm-up your rate is above the peak {peak}, the highest rate "
            "of the schedule. After warmup_steps it decays as 1 / √step: peak / 2 at 4 × warmup_steps."
        )
    if math.isclose(late, peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) is still the peak: the rate must decay after the warm-up, "
            "as 1 / √step (peak / 2 at 4 × warmup_steps)."
        )
    if math.isclose(late, peak / 4, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) is peak / 4: it decays as warmup_steps / step; the schedule "
            "decays more slowly, as sqrt(warmup_steps / step) (peak / 2 at 4 × warmup_steps)."
        )
    for shift, direction in ((1, "ahead"), (-1, "behind")):
        steps = [step for step in values if step + shift >= 1]
        if all(math.isclose(values[step], _schedule(step + shift, peak, warmup), rel_tol=1e-6) for step in steps):
            step = steps[0]
            raise CheckFailed(
                f"learning_rate is one step {direction}: learning_rate(step={step}, peak={peak}, warmup_steps="
                f"{warmup}) = {values[step]:.6g}, the value of step {step + shift}. Steps count from 1: step 1 gets "
                "peak / warmup_steps, and step warmup_steps the peak."
            )


@oracle
def _schedule(step: int, peak: float, warmup: int) -> float:
    """The closed form: linear warm-up to the peak at step warmup, then peak · sqrt(warmup / step)."""
    return peak * min(step / warmup, math.sqrt(warmup / step))


# Decoding: models whose answers are known ----------------------------------------------------------------


class _Spy(nn.Module):
    """A model with the interface of reference.Transformer (encode, decode) that notes how it is called."""

    def __init__(self, vocab: int):
        super().__init__()
        self.vocab = vocab
        self.problems: list[str] = []
        self.widths: list[int] = []
        self.rows_at_width: dict[int, int] = {}  # prefix width -> rows of prefixes decoded at that width, in all
        self.decoded: dict[int, set[tuple[int, ...]]] = {}  # prefix width -> the prefixes' words after BOS
        self.calls: list[list[tuple[int, ...]]] = []  # each decode call's prefixes (words after BOS), row by row
        self.encoded_rows = 0  # sentences encoded, through forward too
        self.forward_calls = 0

    def forward(self, src, tgt, src_mask=None, tgt_mask=None) -> torch.Tensor:
        """The whole model, as reference.Transformer's: encode the source, then decode the target."""
        self.forward_calls += 1
        memory = self.encode(src, src_mask)  # (batch, n_src, 1)
        return self.decode(tgt, memory, tgt_mask, src_mask)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        self.encoded_rows += src.shape[0]
        self._expect_source_mask(src_mask, src != PAD, "model.encode")
        return src.unsqueeze(-1).float()  # (batch, n_src, 1): the source itself is the memory

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None) -> torch.Tensor:
        self.widths.append(tgt.shape[-1])
        self.rows_at_width[tgt.shape[-1]] = self.rows_at_width.get(tgt.shape[-1], 0) + tgt.shape[0]
        self.decoded.setdefault(tgt.shape[-1], set()).update(tuple(row[1:]) for row in tgt.tolist())
        self.calls.append([tuple(row[1:]) for row in tgt.tolist()])
        self._expect_memory_per_row(memory, tgt.shape[0])
        self._expect_source_mask(src_mask, memory[..., 0] != PAD, "model.decode")
        self._expect_causal(tgt_mask, tgt.shape[-1], memory.shape[1])
        if tgt.shape[-1] > 0 and not (tgt[:, 0] == BOS).all():
            self._note("the target prefixes given to model.decode must start with BOS")
        return self.next_word_logits(tgt, memory[..., 0].long())  # (batch, n_tgt, vocab)

    def next_word_logits(self, tgt: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _note(self, problem: str) -> None:
        if problem not in self.problems:
            self.problems.append(problem)

    def _expect_source_mask(self, mask, real: torch.Tensor, where: str) -> None:
        if mask is None or not isinstance(mask, torch.Tensor):
            self._note(f"{where} got no source mask: pass src_mask = (src != PAD)[:, None, :], shape (batch, 1, n_src)")
            return
        real = real[:, None, :]  # (batch, 1, n_src)
        try:
            shape = broadcast_shape(mask.shape, real.shape)
        except RuntimeError:
            shape = None
        if shape is None or not torch.equal(mask.bool().expand(shape), real.expand(shape)):
            self._note(f"{where} got a source mask that is not (src != PAD)[:, None, :] (shape (batch, 1, n_src))")

    def _expect_memory_per_row(self, memory: torch.Tensor, rows: int) -> None:
        """Cross-attention pairs row i of the target words with row i of the memory; like the real model's, it
        cannot run with a memory of another batch size, and says why."""
        if memory.shape[0] != rows:
            self._note(
                f"model.decode got {rows} rows of target words but a memory of batch size {memory.shape[0]}: each "
                "row of words attends to its own row of memory. Give one copy of the memory per hypothesis, "
                "memory.expand(len(hypotheses), -1, -1)"
            )
            raise RuntimeError(f"memory of batch size {memory.shape[0]} for {rows} rows of target words")

    def _expect_causal(self, mask, width: int, n_src: int) -> None:
        tokens = f"a prefix of {width} tokens (BOS and {width - 1} words)" if width > 1 else "a prefix of BOS alone"
        if mask is None or not isinstance(mask, torch.Tensor):
            self._note("model.decode got no tgt_mask: even when decoding, the prefix needs the causal mask")
        elif mask.shape[-2:] != (width, width):
            source = (
                f": {n_src} is the length of the source, so was the mask made from src? The decoder's mask is made "
                "from the prefix it is given"
                if mask.shape[-2:] == (n_src, n_src)
                else ""
            )
            self._note(
                f"model.decode got a tgt_mask of shape {tuple(mask.shape)} for {tokens}; its last two axes must "
                f"be ({width}, {width}), one row and one column per token of the prefix{source}"
            )
        elif (mask.bool() & ~torch.ones(width, width).tril().bool()).any():
            self._note(f"the tgt_mask given to model.decode is not causal for {tokens}: it lets a token see later ones")

    def expect_no_problems(self, call: str) -> None:
        if self.problems:
            raise CheckFailed(f"{call}: {self.problems[0]}.")


class _ReversingModel(_Spy):
    """Translates by reversing the source's words, then EOS; after the EOS it would go on with word 4."""

    def next_word_logits(self, tgt: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        batch, width = tgt.shape
        logits = torch.zeros(batch, width, self.vocab)
        for row, position in itertools.product(range(batch), range(width)):
            words = [w for w in src[min(row, src.shape[0] - 1)].tolist() if w not in (PAD, EOS)][::-1]
            logits[row, position, (words + [EOS])[position] if position <= len(words) else 4] = 5.0
        return logits


def _reversed_translation(src: torch.Tensor, width: int) -> torch.Tensor:
    """What greedy decoding of the reversing model gives: the reversed words, EOS, then PAD; (batch, width)."""
    rows = [[w for w in row.tolist() if w not in (PAD, EOS)][::-1] + [EOS] for row in src]
    return torch.tensor([(row + [PAD] * width)[:width] for row in rows])


class _TableModel(_Spy):
    """Next-word probabilities read from a table of prefixes (words after BOS); a prefix that ended with EOS
    continues with word 4, almost surely.

    Like a real model's, its logits are log-probabilities only up to a constant, which differs from row to row and
    from prefix to prefix: summing raw logits ranks hypotheses wrongly. normalised=True gives the log-probabilities
    themselves, to tell that mistake from others."""

    def __init__(
        self, table: dict[tuple[int, ...], dict[int, float]], default: dict[int, float], normalised: bool = False
    ):
        super().__init__(vocab=8)
        self.table, self.default, self.normalised = table, default, normalised

    def probabilities(self, prefix: tuple[int, ...]) -> dict[int, float]:
        if EOS in prefix:
            return {4: 0.99, EOS: 0.01}
        return self.table.get(prefix, self.default)

    def next_word_logits(self, tgt: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
        batch, width = tgt.shape
        logits = torch.full((batch, width, self.vocab), -30.0)  # PAD, BOS, UNK: as good as impossible
        for row, position in itertools.product(range(batch), range(width)):
            prefix = tuple(tgt[row, 1 : position + 1].tolist())
            for word, p in self.probabilities(prefix).items():
                logits[row, position, word] = math.log(p)
            if not self.normalised:  # softmax does not see it; a sum of raw logits does
                logits[row, position] += 3.0 * ((5 * row + 3 * sum(prefix) + 2 * len(prefix)) % 7) - 9.0
        return logits

    def log_probabilities(self, words: list[int]) -> list[float]:
        """The log-probability of each of the words after BOS, given the words before it."""
        return [math.log(self.probabilities(tuple(words[:i])).get(w, _NEVER)) for i, w in enumerate(words)]

    def score(self, words: list[int], alpha: float, ranking: str = "length") -> float:
        """The summed log-probability of the words after BOS divided by length**alpha; another ranking gives the
        score that a mistaken search ranks by (see _RANKINGS)."""
        return _RANKINGS[ranking](self.log_probabilities(words), alpha)

    def best(self, max_len: int, alpha: float, ranking: str = "length") -> tuple[list[int], float]:
        """The best hypothesis by trying every one: ended by EOS within max_len words, or max_len words long."""
        rank = _RANKINGS[ranking]
        best, log_p = max(self.every_hypothesis(max_len), key=lambda candidate: rank(candidate[1], alpha))
        return list(best), rank(log_p, alpha)

    def every_hypothesis(self, max_len: int) -> list[tuple[list[int], list[float]]]:
        """Every hypothesis that best() tries, in a fixed order, with its words' log-probabilities: each prefix's
        computed once, and the list kept for the next call on the same table (a check asks for several rankings of
        one model, and builds the same tables again when it runs again)."""
        key = (max_len, repr(self.table), repr(self.default))
        if key not in _HYPOTHESES:
            words = (4, 5, 6, 7)
            log_p: dict[tuple[int, ...], list[float]] = {(): []}  # of every prefix of words, up to max_len long
            longest = [()]
            while len(longest[0]) < max_len:
                longer = []
                for prefix in longest:
                    after = self.probabilities(prefix)
                    for word in words:
                        log_p[(*prefix, word)] = log_p[prefix] + [math.log(after.get(word, _NEVER))]
                        longer.append((*prefix, word))
                longest = longer
            ended = [
                ([*prefix, EOS], log_p[prefix] + [math.log(self.probabilities(prefix).get(EOS, _NEVER))])
                for length in range(max_len)
                for prefix in itertools.product(words, repeat=length)
            ]
            if len(_HYPOTHESES) >= _HYPOTHESES_KEPT:
                _HYPOTHESES.pop(next(iter(_HYPOTHESES)))
            _HYPOTHESES[key] = ended + [(list(prefix), log_p[prefix]) for prefix in longest]
        return _HYPOTHESES[key]


# _TableModel.every_hypothesis's lists, by max_len and table, the oldest dropped first: a few MiB each.
_HYPOTHESES: dict[tuple[int, str, str], list[tuple[list[int], list[float]]]] = {}
_HYPOTHESES_KEPT = 16
_NEVER = 1e-13  # the probability of a word the table leaves out: its logit is 30 below a sure word's


def _divided_at_every_step(log_p: list[float], alpha: float) -> float:
    """The mistake of keeping the normalised score as the running score: divided by k**alpha at each step k."""
    score = 0.0
    for k, word_log_p in enumerate(log_p, start=1):
        score = (score + word_log_p) / k**alpha
    return score


_RANKINGS = {  # how a search ranks a hypothesis from its words' log-probabilities; only "length" is right
    "length": lambda log_p, alpha: sum(log_p) / len(log_p) ** alpha,
    "BOS counted": lambda log_p, alpha: sum(log_p) / (len(log_p) + 1) ** alpha,
    "GNMT": lambda log_p, alpha: sum(log_p) / ((5 + len(log_p)) / 6) ** alpha,
    "divided at every step": _divided_at_every_step,
    "probability": lambda log_p, alpha: math.exp(sum(log_p)) / len(log_p) ** alpha,
}


def _greedy_check_model(seed: int) -> Transformer:
    with global_seed(seed):
        return Transformer(12, 12, d_model=16, num_heads=2, d_ff=32, num_layers=2).eval()


def _expect_greedy_choices(model, src: torch.Tensor, words: torch.Tensor, call: str) -> None:
    """Every word up to the first EOS must be the most likely next word given the words before it: checked in
    one teacher-forced pass over BOS followed by the output."""
    decoder_input = torch.cat([torch.full_like(words[:, :1], BOS), words[:, :-1]], dim=1)  # (batch, width)
    src_mask = source_mask(src, PAD)
    with torch.no_grad():
        memory = model.encode(src, src_mask)
        logits = model.decode(decoder_input, memory, target_mask(decoder_input, PAD), src_mask)
    best = logits.argmax(-1)  # (batch, width)
    for row in range(words.shape[0]):
        for position, word in enumerate(words[row].tolist()):
            if word != best[row, position]:
                raise CheckFailed(
                    f"{call}: in row {row}, word {position} is {word}, but the most likely next word after the "
                    f"words before it is {best[row, position].item()}."
                )
            if word == EOS:
                break


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_greedy_decode(greedy_decode, seed: int = 0) -> None:
    """Check the reversing model (rows of different lengths, EOS, PAD after it, stopping, max_len) and the
    definition of greedy decoding on a real model."""
    generator = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 12, (3, 5), generator=generator)  # (batch, n_src)
    src[1, 3:], src[2, 1:] = PAD, PAD  # lengths 5, 3 and 1
    for max_len in (10, 4):
        model = _ReversingModel(vocab=12)
        call = f"greedy_decode(model, src, max_len={max_len})"
        try:
            with torch.no_grad():
                words = call_learner(greedy_decode, model, src, max_len, call=call)
        except NotImplementedYet:
            raise
        except CheckFailed as crash:
            _explain_greedy_crash(crash, model, src.shape[0])
        _expect_one_encoding(model, src.shape[0], call)
        if len(model.widths) > 1 and max(model.widths) == 1:
            raise CheckFailed(
                f"{call}: model.decode only ever saw one word. Give it the whole prefix so far (BOS and every word "
                "generated), and read the prediction at the last position."
            )
        model.expect_no_problems(call)
        expected = _reversed_translation(src, min(max_len, 6))
        if not (isinstance(words, torch.Tensor) and torch.equal(words, expected)):
            _expect_same_words_again(greedy_decode, words, src, max_len, call)
        _diagnose_greedy(words, expected, max_len, call)
        _expect_integer_ids(words, call)
        expect_tensor(words, "greedy_decode", expected.shape, torch.int64)
        if not torch.equal(words, expected):
            raise CheckFailed(f"{call} with a model that reverses the source: expected\n{expected.tolist()}\ngot\n"
                              f"{words.tolist()}.")  # fmt: skip
    model, src = _greedy_check_model(seed), torch.randint(4, 12, (2, 6), generator=generator)
    src[1, 4:] = PAD
    call = "greedy_decode(a small random Transformer, src, max_len=7)"
    with torch.no_grad():
        words = call_learner(greedy_decode, model, src, 7, call=call)
    expect_tensor(words, "greedy_decode", (2, words.shape[-1] if isinstance(words, torch.Tensor) else 7), torch.int64)
    _expect_greedy_choices(model, src, words, call)
    passed("greedy_decode", "picks the most likely next word, stops at EOS, pads finished rows")


def _explain_greedy_crash(crash: CheckFailed, model: _Spy, batch: int) -> None:
    """A crash where sizes of the batch and of the vocabulary meet: a tensor the size of the vocabulary stood where
    one number per sentence was needed, as an argmax over dim 0 of the (batch, vocab) logits gives."""
    if model.problems:
        raise CheckFailed(f"{crash}\nBefore it, {model.problems[0]}.") from crash.__cause__
    message = str(crash.__cause__)
    sizes = {int(size) for size in re.findall(r"size (?:of tensor [ab] \()?(\d+)", message)}
    if {batch, model.vocab} <= sizes:
        raise CheckFailed(
            f"{crash}\nOne of your tensors has {model.vocab} numbers, the size of the vocabulary, where one number "
            f"per sentence ({batch}) was needed. The usual cause: an argmax (or max) over dim 0 of the last "
            "position's logits, (batch, vocab), which gives one index per vocabulary word, the sentence where it "
            "scores highest. Each sentence's next word is the argmax over the vocabulary, the last axis."
        ) from crash.__cause__
    raise crash


def _expect_integer_ids(words, call: str) -> None:
    """Token ids are integers: a prefix made with torch.ones or torch.zeros, or scaled by a number, is float."""
    if isinstance(words, torch.Tensor) and words.is_floating_point():
        raise CheckFailed(
            f"{call} returned dtype {words.dtype}: token ids are integers, torch.long (int64), as src's are, and "
            "the model's embedding (nn.Embedding) takes integer ids only. A tensor made with torch.ones, "
            "torch.zeros or torch.empty is float unless it is given a dtype, and torch.cat with a float tensor "
            "makes the whole result float. Look up the dtype argument of the function that makes your BOS column "
            "(torch.full takes the dtype of its fill value, torch.full_like and Tensor.new_full that of the tensor "
            "they start from)."
        )


def _expect_one_encoding(model: _Spy, sentences: int, call: str) -> None:
    """The exercise asks to encode the source once and to run only the decoder at each step."""
    if model.forward_calls:
        raise CheckFailed(
            f"{call} ran the whole model, model(src, ...), {model.forward_calls} times: that encodes the same source "
            "again at every step. The words would come out the same, but the exercise asks you to encode the "
            "source once, with model.encode, before the loop, and to run only model.decode at each step."
        )
    if model.encoded_rows > sentences:
        raise CheckFailed(
            f"{call} encoded {model.encoded_rows} source sentences with model.encode, for a batch of {sentences}: "
            "the source does not change while the words are written, so encode it once, before the loop, and run "
            "only model.decode at each step."
        )


def _expect_same_words_again(greedy_decode, words, src: torch.Tensor, max_len: int, call: str) -> None:
    """Greedy decoding is deterministic: the same source, decoded again, gives the same words."""
    with torch.no_grad():
        again = call_learner(greedy_decode, _ReversingModel(vocab=12), src, max_len, call=call)
    if isinstance(words, torch.Tensor) and isinstance(again, torch.Tensor):
        if words.shape != again.shape or not torch.equal(words, again):
            raise CheckFailed(
                f"{call} gave two different translations of the same source in two runs: greedy decoding takes "
                "the most likely next word at every step, so it has no randomness. Drawing the word from the "
                "probabilities (sampling) is another way of decoding."
            )


def _diagnose_greedy(words, expected: torch.Tensor, max_len: int, call: str) -> None:
    if not isinstance(words, torch.Tensor) or words.dim() != 2:
        return
    if words.shape[1] == max_len - 1 and expected.shape[1] == max_len and torch.equal(words, expected[:, :-1]):
        raise CheckFailed(
            f"{call}: the rows that have not written EOS stopped at {max_len - 1} words, one word short of "
            f"max_len={max_len}. Each step writes one word, so reaching max_len words takes max_len steps."
        )
    if words.shape[1] == expected.shape[1] + 1 and (words[:, 0] == BOS).all():
        raise CheckFailed(f"{call}: the output starts with BOS; return only the generated words, without BOS.")
    if words.shape[1] > 1 and (words == words[:, :1]).all() and not torch.equal(words, expected):
        raise CheckFailed(
            f"{call}: every word repeats the first prediction; the next word is predicted at the last position "
            "of the prefix: logits[:, -1]."
        )
    _expect_rows_stay_finished(words, call)
    if words.shape[1] > max_len:
        raise CheckFailed(
            f"{call} returned rows of {words.shape[1]} words, more than max_len={max_len}: stop after max_len "
            "words, even when some rows have not produced EOS: max_len is what ends the translation of a "
            "sentence whose EOS does not come."
        )
    if words.shape == expected.shape and (expected == EOS).any() and not (words == EOS).any():
        if torch.equal(words, expected.masked_fill(expected == EOS, PAD)):
            raise CheckFailed(
                f"{call}: no row contains EOS, every row's EOS became PAD:\n{words.tolist()}\nEOS is the last "
                "word a row writes, and it stays in the output. A row counts as finished only once its EOS has "
                "been written, so that PAD fills the places after the EOS, not the EOS itself."
            )
    if words.shape[1] == max_len > expected.shape[1]:
        if torch.equal(words[:, : expected.shape[1]], expected):
            raise CheckFailed(f"{call}: stop as soon as every row has produced EOS; you went on to max_len.")
    width = words.shape[1]
    if 0 < width < expected.shape[1] and torch.equal(words, expected[:, :width]) and (words[:, -1] == EOS).any():
        raise CheckFailed(
            f"{call}: you stopped as soon as one row produced EOS, while other rows had not finished. Go on until "
            "every row has produced EOS (or max_len words are written)."
        )
    if words.shape == expected.shape and ((expected == PAD) & (words != PAD)).any():
        raise CheckFailed(
            f"{call}: a row went on after its EOS; once a row has produced EOS, its later places hold PAD."
        )


def _expect_rows_stay_finished(words: torch.Tensor, call: str) -> None:
    """After its first EOS, a row holds only PAD."""
    for row, sentence in enumerate(words.tolist()):
        if EOS not in sentence:
            continue
        after = sentence[sentence.index(EOS) + 1 :]
        if all(word == PAD for word in after):
            continue
        if all(word == EOS for word in after):
            raise CheckFailed(
                f"{call}: row {row} is {sentence}: after its EOS, the row's later places hold EOS again. A row "
                "ends with one EOS, and the places after it, up to the length of the longest row, hold PAD."
            )
        if after[0] == PAD:
            raise CheckFailed(
                f"{call}: row {row} is {sentence}: after its EOS it wrote PAD, then words again. A row that has "
                "produced EOS is finished for good: remember every row that has produced EOS so far, not only "
                "the rows that produced it at the last step. If you did combine the two with |, mind that | "
                "binds more tightly than ==: `finished | next_word == EOS` reads `(finished | next_word) == EOS`."
            )
        raise CheckFailed(
            f"{call}: a row went on after its EOS (row {row} is {sentence}); once a row has produced EOS, its "
            "later places hold PAD."
        )


# Exercise 5 ---------------------------------------------------------------------------------------------

# Tables of next-word probabilities (after BOS), each with a lesson. Words are 4-7; EOS is 2.
_GREEDY_TRAP = (  # the most likely first word leads nowhere; the second leads to a sure sentence
    {(): {4: 0.5, 5: 0.45, EOS: 0.05}, (4,): {4: 0.24, 5: 0.24, 6: 0.24, 7: 0.23, EOS: 0.05},
     (5,): {6: 0.9, 4: 0.02, 5: 0.03, 7: 0.03, EOS: 0.02}, (5, 6): {EOS: 0.9, 4: 0.025, 5: 0.025, 6: 0.025, 7: 0.025}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip
_SHORT_OR_LONG = (  # "4 EOS" has the highest total log-probability; "5 6 6 6 EOS" the highest per word
    {(): {4: 0.6, 5: 0.4}, (4,): {EOS: 0.55, 6: 0.45}, (5,): {6: 0.9, EOS: 0.1}, (5, 6): {6: 0.9, EOS: 0.1},
     (5, 6, 6): {6: 0.9, EOS: 0.1}, (5, 6, 6, 6): {EOS: 0.9, 6: 0.1}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip
_SURE_BUT_UNLIKELY = (  # ranking by the last word's probability alone keeps the wrong hypotheses
    {(): {4: 0.8, 5: 0.2}, (4,): {7: 0.35, 4: 0.33, 6: 0.32}, (5,): {7: 0.6, 4: 0.4},
     (4, 7): {EOS: 0.9, 4: 0.1}, (4, 4): {EOS: 0.9, 4: 0.1}, (5, 7): {EOS: 0.9, 4: 0.1}, (5, 4): {EOS: 0.9, 4: 0.1}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip
_NEVER_ENDING = ({(): {4: 0.6, 5: 0.4}}, {4: 0.3, 5: 0.3, 6: 0.2, 7: 0.19, EOS: 0.01})  # EOS is never likely
_LONG_WINS_PER_WORD = (  # alpha=1: "5 6 6 6 EOS" (-2.32 / 5 = -0.46) beats "4 EOS" (-1.02 / 2 = -0.51), which
    # would win if BOS were counted in the length (-1.02 / 3 = -0.34 against -2.32 / 6 = -0.39)
    {(): {4: 0.6, 5: 0.4}, (4,): {EOS: 0.6, 6: 0.4}, (5,): {6: 0.7, EOS: 0.3}, (5, 6): {6: 0.7, EOS: 0.3},
     (5, 6, 6): {6: 0.7, EOS: 0.3}, (5, 6, 6, 6): {EOS: 0.72, 6: 0.28}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip
_EOS_COUNTS = (  # alpha=1: "4 EOS" (-1.02 / 2 = -0.51) beats "5 6 6 EOS" (-2.50 / 4 = -0.63), which would win if
    # EOS were left out of the length (-1.02 / 1 against -2.50 / 3 = -0.83)
    {(): {4: 0.6, 5: 0.4}, (4,): {EOS: 0.6, 6: 0.4}, (5,): {6: 0.8, EOS: 0.2}, (5, 6): {6: 0.8, EOS: 0.2},
     (5, 6, 6): {EOS: 0.32, 7: 0.68}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip
_UNFINISHED_WINS = (  # "EOS" finishes at once (p = 0.3), but "4 5 6", cut at max_len=3, is likelier (p = 0.567)
    {(): {4: 0.7, EOS: 0.3}, (4,): {5: 0.9, 6: 0.06, EOS: 0.04}, (4, 5): {6: 0.9, 7: 0.06, EOS: 0.04}},
    {EOS: 0.4, 4: 0.15, 5: 0.15, 6: 0.15, 7: 0.15},
)  # fmt: skip


@learner_facing
def check_beam_search(beam_search, seed: int = 0) -> None:
    """Check that the hypothesis returned is the best one, found by trying every sequence, in scripted cases
    where a beam finds it and greedy choices or other rankings do not; that the beam holds at most beam_size
    hypotheses; that the hypotheses' memory has one row per hypothesis; and that beam_size=1 is greedy."""
    cases = [  # (table, beam_size, max_len, alpha, what the case is about)
        (_GREEDY_TRAP, 2, 4, 0.0, "the first word with the highest probability does not lead to the best sentence"),
        (_SURE_BUT_UNLIKELY, 2, 3, 0.6, "hypotheses are ranked by their summed log-probability, not their last word"),
        (_SHORT_OR_LONG, 2, 6, 0.0, "with alpha=0, hypotheses compare by their total log-probability"),
        (_SHORT_OR_LONG, 2, 6, 1.0, "with alpha=1, hypotheses compare by their log-probability per word"),
        (_LONG_WINS_PER_WORD, 2, 6, 1.0, "the length in score / length**alpha counts the words after BOS, EOS "
         "included, and not BOS itself"),
        (_EOS_COUNTS, 2, 6, 1.0, "a finished hypothesis's length counts its EOS: score / length**alpha with the "
         "EOS among the length's words"),
        (_NEVER_ENDING, 2, 3, 0.6, "no hypothesis ends within max_len words; the best unfinished one is returned"),
        (_UNFINISHED_WINS, 2, 3, 0.6, "a hypothesis finished early, but when max_len is reached the unfinished "
         "hypotheses compete with the finished ones, and here an unfinished one scores best"),
    ]  # fmt: skip
    src = torch.tensor([4, 5, 6])  # (n_src,): the scripted models do not read it
    words_drawn = _words_drawn(seed)
    for case, beam_size, max_len, alpha, lesson in cases:
        table, default = _relabelled(case, words_drawn)
        model = _TableModel(table, default)
        call = f"beam_search(model, src, beam_size={beam_size}, max_len={max_len}, alpha={alpha})"
        try:
            with torch.no_grad():
                words = call_learner(beam_search, model, src, beam_size, max_len, alpha, call=call)
        except NotImplementedYet:
            raise
        except CheckFailed as crash:
            crash_lesson = lesson if case is _NEVER_ENDING else None  # the one case a crash here is about
            _explain_crash(crash, beam_search, model, call, (beam_size, max_len, alpha), crash_lesson)
        model.expect_no_problems(call)
        _expect_beam_kept_to_size(model, beam_size, call)
        _expect_hypothesis(words, max_len, call)
        if EOS in words[:-1]:
            raise CheckFailed(
                f"{call} returned {words}, with words after EOS: a hypothesis that ends with EOS is finished. Set "
                "it aside and do not extend it."
            )
        if words[-1] != EOS and len(words) < max_len:
            _explain_early_stop(beam_search, model, words, call, max_len=max_len, alpha=alpha)
        if not _is_best(model, words, max_len, alpha):
            _expect_independent_of_logit_offsets(beam_search, table, default, words, call, beam_size, max_len, alpha)
        about_choosing = case not in (_GREEDY_TRAP, _SURE_BUT_UNLIKELY)  # the others' lessons: choosing the result
        _expect_best_hypothesis(
            beam_search,
            model,
            words,
            call,
            beam_size=beam_size,
            max_len=max_len,
            alpha=alpha,
            lesson=lesson,
            about_choosing=about_choosing,
        )
    _check_beam_of_one_is_greedy(beam_search, seed)
    passed("beam_search", "finds the best hypothesis by summed log-probability with length normalisation")


def _explain_crash(crash: CheckFailed, beam_search, model: _TableModel, call: str, search, lesson) -> None:
    """Re-raise a crash of the learner's beam search with what explains it: a mistake the scripted model saw
    before it (a memory that does not match the words, say), an index out of range that a beam as wide as the
    vocabulary does not reach, or, in a case where a crash is what the case is about, its lesson."""
    if model.problems:
        raise CheckFailed(f"{call}: {model.problems[0]}.") from crash.__cause__
    beam_size, max_len, alpha = search
    out_of_range = isinstance(crash.__cause__, IndexError) or "out of range" in str(crash.__cause__)
    if out_of_range and beam_size != model.vocab:
        wide = f"beam_search(the same model, src, beam_size={model.vocab}, max_len={max_len}, alpha={alpha})"
        try:
            with torch.no_grad():
                wide_model = _TableModel(model.table, model.default)
                found = call_learner(
                    beam_search, wide_model, torch.tensor([4, 5, 6]), model.vocab, max_len, alpha, call=wide
                )
        except CheckFailed:
            found = None
        if isinstance(found, list):
            raise CheckFailed(
                f"{crash}\nWith beam_size={model.vocab}, the size of this model's vocabulary, the same search runs "
                f"without error: {wide} returns {found}. So an index computed with beam_size goes out of range. "
                "Flattened, the (hypotheses, vocab) scores hold hypothesis h's extensions at the flat indices "
                "h · vocab to h · vocab + vocab - 1: it is the size of the vocabulary, whatever beam_size is, that "
                "turns a flat index back into a hypothesis (how many whole rows come before it) and a word (its "
                "place in its row)."
            ) from crash.__cause__
    if lesson:
        raise CheckFailed(f"{crash}\nIn this case {lesson}.") from crash.__cause__
    if isinstance(crash.__cause__, TypeError) and re.search(r"'list' and|and 'list'", str(crash.__cause__)):
        raise CheckFailed(
            f"{crash}\nA value you used as a number is a list. The usual cause: topk on the 2-D scores "
            "(hypotheses, vocab) works along the last axis, one hypothesis's row at a time, and returns (hypotheses, "
            "k) values and indices, whose .tolist() gives one list per hypothesis. A beam ranks the extensions of "
            "all its hypotheses together: look up Tensor.flatten, after which one flat index says both the "
            "hypothesis and the word."
        ) from crash.__cause__
    raise crash


def _expect_beam_kept_to_size(model: _Spy, beam_size: int, call: str) -> None:
    """A beam holds at most beam_size hypotheses: at any one prefix width, model.decode sees at most beam_size
    rows in all, whether the hypotheses go through it together or one at a time."""
    for width, rows in sorted(model.rows_at_width.items()):
        if rows > beam_size:
            raise CheckFailed(
                f"{call}: model.decode got {rows} prefixes of {width} tokens (BOS and {width - 1} words) in one "
                f"step, more than beam_size={beam_size}: your beam grows. A beam holds beam_size hypotheses in all. "
                "At each step, rank the extensions of all the hypotheses together and keep the beam_size best, not "
                "beam_size per hypothesis."
            )


def _is_best(model: _TableModel, words: list[int], max_len: int, alpha: float) -> bool:
    _, best_score = model.best(max_len, alpha)
    return math.isclose(model.score(words, alpha), best_score, abs_tol=1e-9)


def _expect_independent_of_logit_offsets(beam_search, table, default, words, call: str, *search) -> None:
    """If the search finds the best hypothesis once the logits are normalised, it read raw logits as
    log-probabilities."""
    normalised = _TableModel(table, default, normalised=True)
    try:
        with torch.no_grad():
            found = call_learner(beam_search, normalised, torch.tensor([4, 5, 6]), *search, call=call)
    except CheckFailed:
        return  # the learner's own crash does not explain the first result; the usual message does
    _, max_len, alpha = search
    if found != words and isinstance(found, list) and found and _is_best(normalised, found, max_len, alpha):
        raise CheckFailed(
            f"{call} returned {words}; given the same probabilities as logits that are already log-probabilities, "
            f"it returns the best hypothesis, {found}. So your search adds raw logits. A model's logits are "
            "log-probabilities only up to a constant, which differs from one row (hypothesis) to another and from "
            "step to step; add log-probabilities, torch.log_softmax(logits, dim=-1), which removes it."
        )


def _explain_early_stop(
    beam_search, model: _TableModel, words: list[int], call: str, *, max_len: int, alpha: float
) -> None:
    """An unfinished hypothesis shorter than max_len was returned: the search lost the last word of a hypothesis
    it had extended (its EOS, say), stopped one step early, or stopped while hypotheses were still growing."""
    if tuple(words) in model.decoded.get(len(words) + 1, ()):  # the search extended it, then returned it
        best, _ = model.best(max_len, alpha)
        if [*words, EOS] == best:
            raise CheckFailed(
                f"{call} returned {words}: the best hypothesis, {best}, without its EOS. A finished hypothesis is "
                "returned with its EOS, the last word the search chose for it (the EOS also counts in its length, "
                "for score / length**alpha)."
            )
        raise CheckFailed(
            f"{call} returned {words}, with no EOS and shorter than max_len={max_len}, although your search "
            f"extended it: model.decode got {_prefix(words)}. So the result lost the word chosen after it: a "
            "hypothesis is returned with every word the search added, and a finished one with its EOS."
        )
    never_ending = _TableModel(*_NEVER_ENDING)  # no hypothesis finishes: a search must write max_len words
    short = f"beam_search(a model that never predicts EOS, src, beam_size=2, max_len={max_len}, alpha=0.6)"
    try:
        with torch.no_grad():
            found = call_learner(beam_search, never_ending, torch.tensor([4, 5, 6]), 2, max_len, 0.6, call=short)
    except CheckFailed:
        found = None
    if isinstance(found, list) and len(found) == max_len - 1:
        raise CheckFailed(
            f"{call} returned {words}, unfinished and {len(words)} words long, and {short} returns "
            f"{len(found)} words: your search stops one step short of max_len. Each step adds one word, so "
            "hypotheses reach max_len words after max_len steps."
        )
    raise CheckFailed(
        f"{call} returned {words}, an unfinished hypothesis (no EOS) of {len(words)} words, shorter than "
        f"max_len={max_len}: your search stopped while it was still growing (for instance, as soon as another "
        "hypothesis finished). An unfinished hypothesis is a candidate only once it has max_len words; shorter, "
        "its score sums fewer log-probabilities than a finished one's, so the two do not compare. Keep extending "
        "the unfinished hypotheses until none is left or they are max_len words long."
    )


def _expect_best_hypothesis(
    beam_search,
    model: _TableModel,
    words: list[int],
    call: str,
    *,
    beam_size: int,
    max_len: int,
    alpha: float,
    lesson: str,
    about_choosing: bool,
) -> None:
    """``lesson``: what the case teaches; ``about_choosing``: whether that is about choosing the result (otherwise
    it is about the search)."""
    best, best_score = model.best(max_len, alpha)
    score = model.score(words, alpha)
    if math.isclose(score, best_score, abs_tol=1e-9):
        return
    log_p = model.log_probabilities(words)
    if min(log_p) <= math.log(_NEVER) + 1e-9:
        place = log_p.index(min(log_p))
        raise CheckFailed(
            f"{call} returned {words}, but after {_prefix(words[:place])} the model gives the word {words[place]} a "
            f"probability of about e^-30, practically 0 (the best hypothesis, {best}, scores {best_score:.4f}; "
            f"yours {score:.4f}). A search that adds each word's log-probability would never keep it. Check the "
            "axis your log-probabilities are normalised over: each hypothesis's row of logits is normalised over "
            "the vocabulary, the last axis, not across the hypotheses; and the beam keeps the extensions with the "
            "highest scores."
        )
    if (
        alpha != 0
        and words == model.best(max_len, alpha, "divided at every step")[0]
        and _divides_at_every_step(beam_search)
    ):
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}), the best hypothesis if the running score is divided by "
            f"length**alpha at every step; {best} scores {best_score:.4f}. Divided at every step, the words written "
            "early are divided again and again. Keep the running score the plain sum of log-probabilities, and "
            "divide by length**alpha only to choose the hypothesis to return."
        )
    other_lengths = {
        "BOS counted": "a length that counts BOS",
        "GNMT": "Google's penalty, ((5 + length) / 6)**alpha, the one the paper's alpha = 0.6 was chosen for",
    }
    ranked_first = [what for ranking, what in other_lengths.items() if words == model.best(max_len, alpha, ranking)[0]]
    if alpha != 0 and ranked_first:
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}); {best} scores {best_score:.4f}. Yours ranks first under "
            f"{' and under '.join(ranked_first)}; here the score is divided by length**alpha itself, where the "
            "length is the number of words after BOS, EOS included."
        )
    stopped = _stopped_at_the_first_finished(model, words, beam_size, max_len)
    if stopped:
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}), but {best} scores {best_score:.4f}: your search stopped "
            f"as soon as a hypothesis finished, while the beam still held {stopped}, unfinished. A finished "
            "hypothesis is set aside; the search goes on with the others until none is left or they reach max_len "
            "words, and then chooses among all of them."
        )
    if alpha != 0 and words == model.best(max_len, alpha, "probability")[0] != best and _multiplies(beam_search):
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}); {best} scores {best_score:.4f}. Yours ranks first by the "
            "product of its words' probabilities divided by length**alpha. Multiplying probabilities keeps the same "
            "beam as adding log-probabilities, but length normalisation divides the summed log-probability, a "
            "negative number, so that long hypotheses are not punished for their many words; dividing a product of "
            "probabilities favours the short ones instead (and the product of many probabilities underflows to 0). "
            "Add log-probabilities (log_softmax) and divide their sum."
        )
    swapped = _index_decoded_the_wrong_way_round(model, beam_size)
    if swapped:
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}), but {best} scores {best_score:.4f}: {swapped}. In the "
            "flattened (hypotheses, vocab) scores, index = hypothesis · vocab + word, so divmod(index, vocab) gives "
            "(hypothesis, word), in that order."
        )
    if _kept_by_a_beam(model, best, beam_size):
        unfinished = (
            f" Yours is unfinished and scores {score:.4f}, below the finished {best}: when max_len is reached, the "
            "unfinished hypotheses compete with the finished ones on the same score; they do not come first."
            if words[-1] != EOS and best[-1] == EOS
            else ""
        )
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}), but {best} scores {best_score:.4f}, and your search had "
            f"it: model.decode got {_prefix(best[:-1])}, and {best} is among the {beam_size} best extensions of "
            f"that step by summed log-probability, so a beam of {beam_size} keeps it. What went wrong is the "
            "choice of the result: return the hypothesis with the highest score / length**alpha (the summed "
            "log-probability divided by the number of words after BOS, EOS included, to the power alpha), among "
            f"the finished hypotheses and, when max_len is reached, the unfinished ones.{unfinished}"
            + (f" In this case: {lesson}." if about_choosing else "")
        )
    raise CheckFailed(
        f"{call} returned {words} (score {score:.4f}), but {best} scores {best_score:.4f} and a beam of {beam_size} "
        f"finds it: {lesson}."
    )


def _extension_scores(model: _TableModel, prefixes: list[tuple[int, ...]]) -> list[tuple[float, int, int]]:
    """(summed log-probability, row, word) of every one-word extension of the prefixes, in the flat order of a
    (hypotheses, vocab) tensor of scores."""
    return [
        (sum(model.log_probabilities([*prefix, word])), row, word)
        for row, prefix in enumerate(prefixes)
        for word in range(model.vocab)
    ]


def _stopped_at_the_first_finished(model: _TableModel, words: list[int], beam_size: int, max_len: int) -> str | None:
    """The unfinished hypotheses of the beam, when the learner's search kept the right beam at every step, then
    returned a finished hypothesis from the step at which it stopped, before max_len, although the beam still held
    unfinished ones; None otherwise."""
    if words[-1] != EOS or len(words) >= max_len or not model.calls or len(model.calls[-1][0]) != len(words) - 1:
        return None
    for now, then in itertools.pairwise(model.calls):
        best = sorted(_extension_scores(model, now), reverse=True)[:beam_size]
        if set(then) != {(*now[row], word) for _, row, word in best if word != EOS}:
            return None
    extensions = sorted(_extension_scores(model, model.calls[-1]), reverse=True)[:beam_size]
    kept = [[*model.calls[-1][row], word] for _, row, word in extensions]
    if words not in kept:
        return None
    unfinished = [hypothesis for hypothesis in kept if hypothesis[-1] != EOS]
    return " and ".join(map(str, unfinished)) or None


def _index_decoded_the_wrong_way_round(model: _TableModel, beam_size: int) -> str | None:
    """What the learner's search decoded next, when it is what the best extensions of a step give with their flat
    index read as divmod(index, hypotheses) = (word, hypothesis) and not what they give read rightly; None
    otherwise."""
    for now, then in itertools.pairwise(model.calls):
        if not now or not then or len(then[0]) != len(now[0]) + 1:
            continue
        best = sorted(_extension_scores(model, now), reverse=True)[:beam_size]
        flat = [row * model.vocab + word for _, row, word in best]
        right = {(*now[row], word) for _, row, word in best}
        swapped = set()
        for index in flat:
            word, row = divmod(index, len(now))
            if row < len(now):
                swapped.add((*now[row], word))
        if not set(then) <= right and set(then) <= swapped:
            return (
                f"after {_prefix(list(now[0]))} and the rest of its beam, model.decode got {sorted(map(list, then))}, "
                "the extensions that the best flat indices give when read as divmod(index, hypotheses) = (word, "
                "hypothesis)"
            )
    return None


def _words_drawn(seed: int) -> dict[int, int]:
    """How the scripted cases' words 4 to 7 are renamed for a seed: none for seed 0, the visible check's; another
    order of the same four words for every other seed, so that an answer written to fit the visible cases' words
    fails the hidden ones."""
    words = [4, 5, 6, 7]
    if seed:
        random.Random(seed).shuffle(words)
    return dict(zip([4, 5, 6, 7], words, strict=True))


def _relabelled(case: tuple[dict, dict], renamed: dict[int, int]) -> tuple[dict, dict]:
    """A scripted case (table, default) with its words renamed; EOS stays EOS."""
    table, default = case

    def probabilities(next_words: dict[int, float]) -> dict[int, float]:
        return {renamed.get(word, word): p for word, p in next_words.items()}

    return (
        {tuple(renamed.get(word, word) for word in prefix): probabilities(after) for prefix, after in table.items()},
        probabilities(default),
    )


def _kept_by_a_beam(model: _TableModel, hypothesis: list[int], beam_size: int) -> bool:
    """Whether the search decoded the prefix that the hypothesis extends and, among the extensions of all the
    prefixes it decoded at that step, the hypothesis is one of the beam_size best by summed log-probability: then
    a beam holds it, finished (and set aside) or at max_len, and it is the choice of the result that loses it."""
    prefixes = model.decoded.get(len(hypothesis), set())  # BOS and the words before the hypothesis's last one
    if tuple(hypothesis[:-1]) not in prefixes:
        return False
    its_score = sum(model.log_probabilities(hypothesis))
    extensions = [[*prefix, word] for prefix in prefixes for word in range(model.vocab)]
    better = [words for words in extensions if sum(model.log_probabilities(words)) > its_score + 1e-9]
    return len(better) < beam_size


def _multiplies(beam_search) -> bool:
    """Whether the search returns what the product of the words' probabilities divided by length**alpha ranks
    first in two cases where that choice differs from the others': a search that ignores alpha, or prefers
    finished hypotheses, does so in only one of them."""
    for (table, default), max_len, alpha in ((_SHORT_OR_LONG, 6, 1.0), (_UNFINISHED_WINS, 3, 0.6)):
        model = _TableModel(table, default)
        call = f"beam_search(model, src, beam_size=2, max_len={max_len}, alpha={alpha})"
        try:
            with torch.no_grad():
                found = call_learner(beam_search, model, torch.tensor([4, 5, 6]), 2, max_len, alpha, call=call)
        except CheckFailed:
            return False
        if found != model.best(max_len, alpha, "probability")[0]:
            return False
    return True


def _divides_at_every_step(beam_search) -> bool:
    """Whether the search also returns what a running score divided by length**alpha at every step ranks first
    where leaving EOS out of the length, which gives the same words in the _EOS_COUNTS case at alpha=1, does not."""
    model, search = _TableModel(*_EOS_COUNTS), (2, 6, 0.6)
    call = "beam_search(model, src, beam_size=2, max_len=6, alpha=0.6)"
    try:
        with torch.no_grad():
            found = call_learner(beam_search, model, torch.tensor([4, 5, 6]), *search, call=call)
    except CheckFailed:
        return False
    divided, _ = model.best(6, 0.6, "divided at every step")
    return found == divided != model.best(6, 0.6)[0]


def _prefix(words: list[int]) -> str:
    return f"BOS followed by {words}" if words else "BOS"


def _expect_hypothesis(words, max_len: int, call: str) -> None:
    if not isinstance(words, list) or not all(isinstance(word, int) for word in words):
        raise CheckFailed(f"{call} must return a list of ints (use .tolist()), got {type(words).__name__}.")
    if words[:1] == [BOS]:
        raise CheckFailed(f"{call} returned {words}; leave out the BOS and return only the generated words.")
    if not words:
        raise CheckFailed(
            f"{call} returned no words: when no hypothesis has finished within max_len={max_len} words, return "
            "the best unfinished one."
        )
    if not 0 < len(words) <= max_len:
        raise CheckFailed(f"{call} returned {len(words)} words; expected between 1 and max_len={max_len}.")


def _check_beam_of_one_is_greedy(beam_search, seed: int) -> None:
    model = _greedy_check_model(seed)
    src = torch.randint(4, 12, (6,), generator=torch.Generator().manual_seed(seed))
    call = "beam_search(a small random Transformer, src, beam_size=1, max_len=7, alpha=0.0)"
    with torch.no_grad():
        words = call_learner(beam_search, model, src, 1, 7, 0.0, call=call)
    _expect_hypothesis(words, 7, call)
    _expect_greedy_choices(model, src[None], torch.tensor([words]), f"{call} (a beam of one is greedy decoding)")
