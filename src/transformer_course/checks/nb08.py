"""Checks for notebook 08, training the encoder-decoder and decoding with it.

Oracles: the definition of the shifted input; ``F.cross_entropy`` with ``ignore_index`` and ``label_smoothing``
and its gradient; closed-form values of the learning-rate schedule; for decoding, scripted models whose best
outputs are known by construction (the reversed source, or the best sequence found by trying every sequence),
and, on a real model, the definition of greedy decoding checked by one teacher-forced pass. The scripted models
need one row of memory per row of target words, as the real model's cross-attention does.
"""

import itertools
import math

import torch
import torch.nn.functional as F
from torch import nn

from ..reference.nb04_masking import source_mask, target_mask
from ..reference.nb07_decoder_and_full_model import Transformer
from . import (
    CheckFailed,
    NotImplementedYet,
    call_learner,
    expect_close,
    expect_tensor,
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
        except Exception:  # noqa: BLE001 - any crash: the learner's own message is the best explanation
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
            _explain_loss_crash(crash, call)
        expect_tensor(loss, "sequence_loss", (), logits.dtype)
        expected = _cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing)
        if not torch.allclose(loss.detach(), expected, atol=1e-5):
            _diagnose_loss(loss.detach(), logits, target, pad_id, smoothing, call)
            _expect_no_gradient_at_padding(loss, leaf, target, pad_id, smoothing, call)
        expect_close(loss.detach(), expected, f"{call}, compared with F.cross_entropy")
        _check_gradient(loss, leaf, target, pad_id, smoothing, call)
    call = f"sequence_loss(logits × 1000, target, pad_id={pad_id}, smoothing=0.1)"
    loss = call_learner(sequence_loss, logits * 1000, target, pad_id, 0.1, call=call)
    if not torch.isfinite(loss).all():
        raise CheckFailed(
            f"{call} is {loss.item()}: log(softmax(...)) underflows to log(0) = -inf for large logits. Compute "
            "log-probabilities with torch.log_softmax, which stays finite."
        )
    expect_close(loss.detach(), _cross_entropy(logits * 1000, target, pad_id=pad_id, smoothing=0.1), call, atol=1e-3)


@oracle
def _cross_entropy(logits, target, *, pad_id: int, smoothing: float, **options) -> torch.Tensor:
    """The oracle: F.cross_entropy over every position."""
    flat_logits, flat_target = logits.reshape(-1, logits.shape[-1]), target.reshape(-1)
    return F.cross_entropy(flat_logits, flat_target, ignore_index=pad_id, label_smoothing=smoothing, **options)


def _explain_loss_crash(crash: CheckFailed, call: str) -> None:
    """PyTorch's loss functions read the classes on dim 1; given (batch, n_tgt, vocab) they fail with this error."""
    if "Expected target size" in str(crash.__cause__):
        raise CheckFailed(
            f"{crash}\nF.cross_entropy and F.nll_loss read the classes (here the vocabulary) on dim 1, and took "
            "the logits (batch, n_tgt, vocab) for n_tgt classes at vocab positions. Give them the vocabulary on "
            "dim 1, or one row per position: look up their Shape section."
        ) from crash.__cause__
    raise crash


def _diagnose_loss(loss, logits, target, pad_id: int, smoothing: float, call: str) -> None:
    per_token = _cross_entropy(logits, target, pad_id=pad_id, smoothing=smoothing, reduction="none")  # 0 where padded
    log_p = logits.log_softmax(-1)  # (batch, n_tgt, vocab)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)  # (batch, n_tgt)
    wrong = -log_p.sum(-1) - right  # (batch, n_tgt): summed over the vocab - 1 wrong words
    spread_over_wrong_words = (1 - smoothing) * right + smoothing * wrong / (logits.shape[-1] - 1)
    others = wrong + log_p[..., pad_id]  # (batch, n_tgt): summed over the vocab - 2 words neither right nor padding
    annotated_transformer = (1 - smoothing) * right + smoothing * others / (logits.shape[-1] - 2)
    real = target != pad_id
    every_position = _cross_entropy(logits, target, pad_id=-100, smoothing=smoothing, reduction="none")
    every_position = every_position.reshape(target.shape)  # (batch, n_tgt): padding positions not left out
    smoothing_summed = (1 - smoothing) * right + smoothing * -log_p.sum(-1)  # (batch, n_tgt): ε on every word
    uniform = -log_p.mean(-1)  # (batch, n_tgt)
    mistakes = {
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
    expect_close(gradient, expected, f"{call}: the gradient with respect to the logits")


@oracle
def _cross_entropy_gradient(logits, target, *, pad_id: int, smoothing: float) -> torch.Tensor:
    """The gradient of the oracle's loss with respect to the logits."""
    leaf = logits.detach().clone().requires_grad_()
    (gradient,) = torch.autograd.grad(_cross_entropy(leaf, target, pad_id=pad_id, smoothing=smoothing), leaf)
    return gradient


# Exercise 3 ---------------------------------------------------------------------------------------------


@learner_facing
def check_learning_rate(learning_rate, peak: float = 1e-3, warmup_steps: int = 400) -> None:
    """Check closed-form values: linear warm-up to the peak at warmup_steps, then peak · sqrt(warmup / step)."""
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
    _diagnose_schedule(values, peak, warmup_steps)
    for step, value in values.items():
        if not math.isclose(value, expected[step], rel_tol=1e-6):
            raise CheckFailed(
                f"learning_rate(step={step}, peak={peak}, warmup_steps={warmup_steps}) = {value:.6g}; expected "
                f"{expected[step]:.6g} = peak · min(step / warmup_steps, sqrt(warmup_steps / step))."
            )
    passed("learning_rate", "warms up linearly to the peak, then decays as 1/√step")


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
    if math.isclose(late, peak, rel_tol=1e-6):
        raise CheckFailed(
            f"learning_rate(step={4 * warmup}, ...) is still the peak: the rate must decay after the warm-up, "
            "as peak · sqrt(warmup_steps / step)."
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
        self._expect_memory_per_row(memory, tgt.shape[0])
        self._expect_source_mask(src_mask, memory[..., 0] != PAD, "model.decode")
        self._expect_causal(tgt_mask, tgt.shape[-1])
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
            shape = torch.broadcast_shapes(mask.shape, real.shape)
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

    def _expect_causal(self, mask, width: int) -> None:
        if mask is None or not isinstance(mask, torch.Tensor):
            self._note("model.decode got no tgt_mask: even when decoding, the prefix needs the causal mask")
        elif mask.shape[-2:] != (width, width) or (mask.bool() & ~torch.ones(width, width).tril().bool()).any():
            self._note(f"the tgt_mask given to model.decode is not causal for a prefix of {width} words")

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

    def score(self, words: list[int], alpha: float, extra_length: int = 0) -> float:
        """The length-normalised log-probability of the words after BOS; extra_length=1 is the mistake of
        counting BOS in the length."""
        log_p = sum(math.log(self.probabilities(tuple(words[:i])).get(w, 1e-13)) for i, w in enumerate(words))
        return log_p / (len(words) + extra_length) ** alpha

    def best(self, max_len: int, alpha: float, extra_length: int = 0) -> tuple[list[int], float]:
        """The best hypothesis by trying every one: ended by EOS within max_len words, or max_len words long."""
        words = (EOS, 4, 5, 6, 7)
        candidates = [
            [*prefix, EOS] for length in range(max_len) for prefix in itertools.product(words[1:], repeat=length)
        ] + [list(prefix) for prefix in itertools.product(words[1:], repeat=max_len)]
        best = max(candidates, key=lambda c: self.score(c, alpha, extra_length))
        return best, self.score(best, alpha, extra_length)


def _greedy_check_model(seed: int) -> Transformer:
    with torch.random.fork_rng():
        torch.manual_seed(seed)
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
        with torch.no_grad():
            words = call_learner(greedy_decode, model, src, max_len, call=call)
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
    where a beam finds it and greedy choices or other rankings do not; that the hypotheses' memory has one row per
    hypothesis; and that beam_size=1 is greedy."""
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
    for (table, default), beam_size, max_len, alpha, lesson in cases:
        model = _TableModel(table, default)
        call = f"beam_search(model, src, beam_size={beam_size}, max_len={max_len}, alpha={alpha})"
        try:
            with torch.no_grad():
                words = call_learner(beam_search, model, src, beam_size, max_len, alpha, call=call)
        except NotImplementedYet:
            raise
        except CheckFailed as crash:
            _explain_crash(crash, model, call, lesson)
        model.expect_no_problems(call)
        _expect_hypothesis(words, max_len, call)
        if EOS in words[:-1]:
            raise CheckFailed(
                f"{call} returned {words}, with words after EOS: a hypothesis that ends with EOS is finished. Set "
                "it aside and do not extend it."
            )
        if words[-1] != EOS and len(words) < max_len:
            _explain_early_stop(beam_search, words, call, max_len=max_len)
        if not _is_best(model, words, max_len, alpha):
            _expect_independent_of_logit_offsets(beam_search, table, default, words, call, beam_size, max_len, alpha)
        _expect_best_hypothesis(model, words, call, beam_size=beam_size, max_len=max_len, alpha=alpha, lesson=lesson)
    _check_beam_of_one_is_greedy(beam_search, seed)
    passed("beam_search", "finds the best hypothesis by summed log-probability with length normalisation")


def _explain_crash(crash: CheckFailed, model: _Spy, call: str, lesson: str) -> None:
    """Re-raise a crash of the learner's beam search with what explains it best: a mistake the scripted model saw
    before it (a memory that does not match the words, say), or else what the case is about."""
    if model.problems:
        raise CheckFailed(f"{call}: {model.problems[0]}.") from crash.__cause__
    raise CheckFailed(f"{crash}\nIn this case {lesson}.") from crash.__cause__


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


def _explain_early_stop(beam_search, words: list[int], call: str, *, max_len: int) -> None:
    """An unfinished hypothesis shorter than max_len was returned: the search stopped one step early, or while
    hypotheses were still growing."""
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
    model: _TableModel, words: list[int], call: str, *, beam_size: int, max_len: int, alpha: float, lesson: str
) -> None:
    best, best_score = model.best(max_len, alpha)
    score = model.score(words, alpha)
    if math.isclose(score, best_score, abs_tol=1e-9):
        return
    with_bos, _ = model.best(max_len, alpha, extra_length=1)
    if alpha != 0 and words == with_bos:
        raise CheckFailed(
            f"{call} returned {words} (score {score:.4f}), the best hypothesis only if BOS is counted in the length; "
            f"{best} scores {best_score:.4f}. In score / length**alpha, the length is the number of words after BOS, "
            "EOS included."
        )
    raise CheckFailed(
        f"{call} returned {words} (score {score:.4f}), but {best} scores {best_score:.4f} and a beam of {beam_size} "
        f"finds it: {lesson}."
    )


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
