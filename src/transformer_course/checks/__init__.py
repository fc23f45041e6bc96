"""Checks of the learners' functions, one module per notebook (``nb01``, ``nb02``, ...).

A check either prints one line saying what passed or raises :class:`CheckFailed` with a message that
names the mistake in a learner's words. The shared pieces below keep those messages uniform.
"""

import contextlib
import functools
import importlib
import importlib.util
import inspect
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .recordings import oracle


@oracle
def pytorch_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, mask: torch.Tensor | None, scale: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(outputs, weights) from F.scaled_dot_product_attention, which gives a query with no visible key zero
    weights and a zero output. The checks' oracle for attention, here with the checks, out of the student's
    process while grading (notebook 02's reference attention computes on its own).
    """
    if k.shape[-2] != v.shape[-2]:
        # PyTorch's own kernel for 4-D inputs may accept this and return numbers: refuse it here instead.
        raise ValueError(
            f"attention: {k.shape[-2]} keys but {v.shape[-2]} values (k {tuple(k.shape)}, v {tuple(v.shape)}). "
            "Every key needs its value: take k and v from the same sequence."
        )
    n_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    identity = torch.eye(n_k, dtype=q.dtype).expand(*batch, n_k, n_k)  # (..., n_k, n_k)
    # With the identity as values, each output row is that query's row of weights.
    weights = F.scaled_dot_product_attention(q, k, identity, attn_mask=mask, scale=scale)  # (..., n_q, n_k)
    outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)  # (..., n_q, d_v)
    return outputs, weights


class CheckFailed(AssertionError):
    """A check found a mistake; the message says which one and how to look for it."""

    def _render_traceback_(self) -> list[str]:
        """What IPython shows in place of a traceback: where the learner's own code raised, if it did, then the
        message; never the frames of the checks, which say nothing to a learner and push the message down."""
        cause = self.__cause__
        lines = []
        if cause is not None and (frames := learners_frames(cause.__traceback__)):
            lines += ["Your code raised this:", *"".join(traceback.format_list(frames)).splitlines()]
            lines += [f"{type(cause).__name__}: {cause}", ""]
        return [*lines, f"{type(self).__name__}: {self}"]


COURSE_PACKAGE = str(Path(__file__).resolve().parent.parent)
LIBRARIES = tuple(sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib"))


def learners_frames(trace) -> list[traceback.FrameSummary]:
    """The frames of a traceback that run the learner's code: not the course's package, not Python's or a library's."""
    return [
        frame for frame in traceback.extract_tb(trace) if not frame.filename.startswith((COURSE_PACKAGE, *LIBRARIES))
    ]


class NotImplementedYet(CheckFailed):
    """The exercise still raises the stub's NotImplementedError: there is nothing to check yet."""


class NotRecorded(CheckFailed):
    """In a student release: the check needed an oracle's result for a call that the release did not record."""


def learner_facing(check: Callable) -> Callable:
    """Show a failing check as its message, not as a traceback through the check's own code.

    A crash inside the learner's function stays attached as the cause, since its traceback is theirs.
    """

    @functools.wraps(check)
    def run(*args, **kwargs):
        try:
            return check(*args, **kwargs)
        except CheckFailed as failure:
            raise type(failure)(str(failure)) from failure.__cause__  # NotImplementedYet stays itself

    return run


def shape_of(tensor_or_shape: torch.Tensor | Sequence[int]) -> str:
    """A shape as a learner writes it: (2, 3, 5)."""
    shape = tensor_or_shape.shape if isinstance(tensor_or_shape, torch.Tensor) else tensor_or_shape
    return str(tuple(shape)).replace(",)", ")")


def call_learner(function: Callable, *args, call: str, **kwargs):
    """Call a learner's function; turn a crash or a change to its input tensors into a clear message."""
    inputs = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
    copies = [tensor.clone() for tensor in inputs]
    name = getattr(function, "__name__", type(function).__name__)  # a module instance has no __name__
    try:
        result = function(*args, **kwargs)
    except NotImplementedError:
        raise NotImplementedYet(
            f"{name} is not implemented yet: replace `raise NotImplementedError()` with your code."
        ) from None
    except Exception as error:
        raise CheckFailed(f"{call} raised {type(error).__name__}: {error}") from error
    if not all(torch.equal(copy, tensor) for copy, tensor in zip(copies, inputs, strict=True)):
        raise CheckFailed(
            f"{name} changed its input tensor in place (for example with `-=`); compute a new "
            "tensor instead, so that the caller's data stay as they were."
        )
    expect_plain(result, call)
    return result


# The tensor types whose arithmetic and comparisons are PyTorch's own (a Parameter's are too).
PLAIN_TENSORS = (torch.Tensor, torch.nn.Parameter)


def expect_plain(result, call: str) -> None:
    """Fail if a learner's function returned an object that takes part in PyTorch's operations with its own
    code: a subclass of torch.Tensor, or anything defining __torch_function__. Such an object decides what
    the check's own comparisons with it return, so a check may trust a result only once it is plain."""
    for item in result if type(result) in (tuple, list) else (result,):
        kind = type(item)  # type(), unlike isinstance() and __class__, cannot be made to lie
        if kind not in PLAIN_TENSORS and (isinstance(item, torch.Tensor) or hasattr(kind, "__torch_function__")):
            raise CheckFailed(
                f"{call} returned a {kind.__name__}, which changes how PyTorch operations treat it; return a "
                "plain torch.Tensor computed with PyTorch operations."
            )


def expect_tensor(result, name: str, shape: Sequence[int], dtype: torch.dtype) -> torch.Tensor:
    """Fail unless ``result`` is a tensor of the given shape and dtype."""
    if not isinstance(result, torch.Tensor):
        raise CheckFailed(f"{name} must return a torch.Tensor, got {type(result).__name__}.")
    if tuple(result.shape) != tuple(shape):
        raise CheckFailed(f"{name} returned the wrong shape: expected {shape_of(shape)}, got {shape_of(result)}.")
    if result.dtype != dtype:
        raise CheckFailed(
            f"{name} returned dtype {result.dtype} for {dtype} inputs; keep the dtype of the input "
            "(avoid creating new tensors with a fixed dtype)."
        )
    return result


def expect_pair(result, call: str) -> tuple:
    """Fail unless an attention function returned the pair (outputs, weights); return it."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise CheckFailed(f"{call} must return a pair (outputs, weights); got {type(result).__name__}.")
    return result


def rows_sum_to(weights: torch.Tensor, total: float = 1.0, dim: int = -1) -> bool:
    """Whether every row of weights sums to ``total`` along ``dim``."""
    return torch.allclose(weights.sum(dim=dim), torch.full((), total, dtype=weights.dtype), atol=1e-4)


def expect_masked_weights(
    weights: torch.Tensor, mask: torch.Tensor, call: str, scores: torch.Tensor | None = None
) -> None:
    """Fail unless pairs where the mask is False get exactly zero weight and every row with a visible key
    still sums to 1.

    The usual mistakes are named by what they do to the weights: an inverted mask; a query with no visible key
    left with weights; masked scores that keep some weight. Given ``scores``, the correctly scaled q kᵀ / √d_k
    (broadcastable to the weights), the check works back from the weights to the score each masked pair acted
    as, and so tells apart the mask ignored, masking after the softmax, and a fill of 0 (or multiplying by the
    mask) or of another finite number; without it, the message lists those causes.
    """
    blocked = ~mask.expand_as(weights)
    finite = weights.nan_to_num(0.0)  # an inverted mask can block whole rows, which then hold nan
    empty_rows = blocked.all(dim=-1)  # (..., n_q): queries with no visible key
    in_visible_rows = blocked & ~empty_rows[..., None]  # masked pairs of queries that do see some key
    on_blocked = finite.masked_fill(~blocked, 0.0)  # the weights of the masked pairs
    # Said only where the case has such a query.
    empty_rows_too = (
        " A query with no visible key also needs its weights set to 0 after the softmax." if empty_rows.any() else ""
    )
    log_w = finite.double().log()
    s = None if scores is None else scores.double().expand_as(weights)
    if s is not None:
        # Each row's heaviest visible key j gives the row's normaliser: w_j = e^(s_j) / Z, so log Z = s_j - log w_j.
        heaviest = finite.masked_fill(blocked, -1.0).argmax(dim=-1, keepdim=True)  # (..., n_q, 1)
        log_z = s.gather(-1, heaviest) - log_w.gather(-1, heaviest)  # (..., n_q, 1)

    def single_number(values: torch.Tensor) -> float | None:
        """The value all of them agree on, to a float32 softmax's precision, or None."""
        if not values.numel() or not values.isfinite().all():
            return None
        if values.max() - values.min() <= 1e-2 * max(1.0, values.abs().max().item()):
            return values.mean().item()
        return None

    if on_blocked.any():
        if (finite[~blocked] == 0).all():
            raise CheckFailed(
                f"{call}: only the blocked pairs get weight: your mask is inverted. Here, as in "
                "F.scaled_dot_product_attention, True means the query may attend to the key (nn.MultiheadAttention "
                "uses the opposite); fill the scores where the mask is False."
            )
        if not on_blocked[~empty_rows].any():  # the fill was negative enough; the clean-up is missing
            *batch, query = index = (empty_rows & on_blocked.any(dim=-1)).nonzero()[0].tolist()
            row = finite[tuple(index)]
            where = f"query {query}" + (f" of batch index {shape_of(batch)}" if batch else "")
            uniform = torch.allclose(row, torch.full_like(row, 1 / row.numel()), atol=1e-6)
            raise CheckFailed(
                f"{call}: {where} has no visible key, yet its weights are {[round(w, 3) for w in row.tolist()]}; "
                "it must get zero weights, and so a zero output."
                + (" The softmax of a row of equal scores (all filled with one number) is uniform." if uniform else "")
                + " After the softmax, set the weights of the masked pairs to 0 (masked_fill or torch.where)."
            )
        most = finite[in_visible_rows].max().item()
        if s is not None:
            # A masked pair's weight is e^f / Z, where f is the score it acted as: f = log w + log Z.
            acted_as = (log_w + log_z)[in_visible_rows & (finite > 1e-30)]  # float32's normal range
            if acted_as.numel() == in_visible_rows.sum() and torch.allclose(acted_as, s[in_visible_rows], atol=1e-2):
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, the weight they get with no mask at all: the mask "
                    "changed nothing. Replace the masked scores by -inf or torch.finfo(scores.dtype).min before "
                    "the softmax." + empty_rows_too
                )
            fill = single_number(acted_as)
            if fill is not None and abs(fill) < 1e-2:
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, as if their scores were 0: filling with 0, or "
                    "multiplying the scores by the mask, leaves them a score of 0, and a score of 0 still gets "
                    "weight (e^0 = 1). Replace the masked scores by -inf or torch.finfo(scores.dtype).min before "
                    "the softmax." + empty_rows_too
                )
            if fill is not None:
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, as if their scores were replaced by {fill:.3g}: a "
                    f"finite number not negative enough, since e^({fill:.3g} - s) is not 0 next to the visible "
                    "scores s. Replace them by -inf or torch.finfo(scores.dtype).min, whose exponential is 0."
                    + empty_rows_too
                )
        raise CheckFailed(
            f"{call}: masked pairs get weight {most:.3g}; they must get exactly 0. Replace the masked scores before "
            "the softmax by -inf or torch.finfo(scores.dtype).min, whose exponential is 0: a score of 0 still gets "
            "weight (e^0 = 1), and so does any finite number not far below the visible scores." + empty_rows_too
        )

    sums = finite.double().sum(dim=-1)  # (..., n_q)
    short = ~empty_rows & (sums < 1 - 1e-5)  # queries with visible keys whose weights sum to less than 1
    if not short.any() or (short & ~blocked.any(dim=-1)).any():
        return  # rows summing to more than 1, or short where nothing is masked: not the mask's doing
    lowest = f"rows with visible keys sum to less than 1 (down to {sums[short].min().item():.5g})"
    if s is not None:
        # The masked keys took a share X of the normaliser Z = Σ_visible e^s + X, and the row sums to 1 - X / Z.
        log_share = (log_z[..., 0] + torch.log1p(-sums))[short]  # (rows,): log X
        masked_scores = s.masked_fill(~blocked, float("-inf"))[short]  # (rows, n_k)
        if torch.allclose(log_share, masked_scores.logsumexp(dim=-1), atol=1e-2):  # X = Σ_masked e^s
            raise CheckFailed(
                f"{call}: masked pairs get zero weight, but {lowest}: the mask was applied after the softmax, where "
                "the masked keys had already taken their share of the normalisation. Mask the scores before the "
                "softmax, so the visible keys share all the weight."
            )
        fill = single_number(log_share - blocked[short].sum(dim=-1).double().log())  # X = (number masked) e^f
        if fill is None:
            return  # not a softmax over the keys with the masked keys' share in it: the caller's comparison says more
        given = (
            "0: filling with 0, or multiplying the scores by the mask, leaves a score of 0, and e^0 = 1"
            if abs(fill) < 1e-2
            else f"replaced by {fill:.3g}, a finite number not negative enough"
        )
        raise CheckFailed(
            f"{call}: masked pairs get zero weight, but {lowest}: before the softmax the masked scores were "
            f"{given}. So the masked keys took a share of the normalisation, which zeroing their weights "
            "afterwards does not give back. Replace the masked scores by -inf or torch.finfo(scores.dtype).min "
            "before the softmax."
        )
    raise CheckFailed(
        f"{call}: masked pairs get zero weight, but {lowest}, so the visible keys do not share all the weight. "
        "That happens when masked keys still take a share of the softmax's normalisation: when the mask is "
        "applied after the softmax, or when the masked scores are replaced by a number that is not negative enough "
        "(0, as multiplying the scores by the mask gives, or -10, say). Replace the masked scores by -inf or "
        "torch.finfo(scores.dtype).min before the softmax."
    )


def expect_own_parameters(module: nn.Module, call: str, parts: Sequence[str] | None = None) -> None:
    """Fail if two of the module's parts hold one and the same parameter (``self.key = self.query``, or a weight
    assigned to two layers): the outputs can match, since both would hold equal weights, but training would tie
    them, and a check that sets one part's weights sets the other's too.

    ``parts`` names the attributes that must not share (a layer or a Parameter each); without it, every parameter
    of the module. Name them where a module may also keep its layers in a list of its own, which is no sharing.
    """
    if parts is None:
        named = list(module.named_parameters(remove_duplicate=False))
    else:
        named = []
        for part in parts:
            value = getattr(module, part, None)
            if isinstance(value, nn.Parameter):
                named.append((part, value))
            elif isinstance(value, nn.Module):
                named += [(f"{part}.{name}", parameter) for name, parameter in value.named_parameters()]
    owners: dict[int, str] = {}
    for name, parameter in named:
        first = owners.setdefault(id(parameter), name)
        if first != name:
            first_part, second_part = (f"self.{part.rsplit('.', 1)[0]}" for part in (first, name))
            raise CheckFailed(
                f"{call}: {first_part} and {second_part} share one parameter ({first} is {name}); each projection "
                "learns its own weights: create a separate layer for each."
            )


def expect_differentiable(result: torch.Tensor, call: str) -> None:
    """Fail if a learner's result carries no gradient although its inputs or weights require one: a forward under
    ``@torch.no_grad()`` or a ``.detach()`` returns the right values, but nothing before it could ever be trained."""
    if not result.requires_grad:
        raise CheckFailed(
            f"{call} returned a tensor that does not require gradients, although its inputs or weights do, so "
            "training could not update anything before it. Remove @torch.no_grad(), inference_mode(), .detach(), .data "
            "or .item() from "
            "the computation; keep every step a PyTorch operation on the tensors you were given."
        )


def built_with_seed(cls: type, *args, seed: int, call: str, **kwargs):
    """Construct a learner's module with a private seed, so its initial weights are the same at every run."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return call_learner(cls, *args, call=call, **kwargs)


def matches(actual, expected: torch.Tensor) -> bool:
    """Whether a learner's result is a tensor of the expected shape, dtype and values (to float32 precision): for
    telling which of several candidate computations a result came from, where expect_close would fail."""
    return (
        isinstance(actual, torch.Tensor)
        and actual.shape == expected.shape
        and actual.dtype == expected.dtype
        and torch.allclose(actual, expected, atol=1e-5)
    )


def expect_close(actual: torch.Tensor, expected: torch.Tensor, what: str, atol: float = 1e-5) -> None:
    """Fail unless the values agree to float32 precision; say where they differ most."""
    if not torch.isfinite(actual).all():
        raise CheckFailed(f"{what}: your result contains nan or inf where the expected values are finite.")
    difference = (actual - expected).abs()
    if difference.max() > atol + 1e-5 * expected.abs().max():
        where = tuple(int(i) for i in torch.unravel_index(difference.argmax(), difference.shape))
        raise CheckFailed(
            f"{what}: values differ from the expected ones by up to {difference.max().item():.3g} "
            f"(at index {where}: expected {expected[where].item():.6g}, got {actual[where].item():.6g})."
        )


def perturbed(module: nn.Module, seed: int) -> nn.Module:
    """Move every parameter by its own seeded noise, so that gains and biases are not 1 and 0 and mixing up two
    parts (ln_1 for ln_2) shows. A Parameter shared by two modules is moved once and stays shared."""
    noise = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.add_(0.1 * torch.randn(parameter.shape, generator=noise, dtype=parameter.dtype))
    return module.eval()


def seeded_randn(*shape: int, seed: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Standard normal values from a private generator, so checks neither use nor disturb the global seed."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=generator, dtype=dtype)


@contextlib.contextmanager
def earlier_exercises_replaced(function: Callable, *names: str) -> Iterator[None]:
    """Let ``function`` call correct versions of the earlier exercises ``names`` while it is checked.

    A learner's function finds the other exercises by name in the notebook's namespace. Swapping them for the
    correct stand-ins of ``stand_ins`` grades each exercise on its own, so one mistake is not counted twice. A
    student release holds no stand-ins (they would be answers to import): there the learner's own versions are
    used, and a failure says so.
    """
    if stand_ins is None:
        with own_versions_named_on_failure(names):
            yield
        return
    parts = {name: getattr(stand_ins, name) for name in names}
    lend = lender(function)
    if lend is not None:
        with lend(parts):
            yield
    elif (namespace := learners_namespace(function)) is not None:
        with names_replaced(namespace, parts):
            yield
    else:
        with own_versions_named_on_failure(names):
            yield


def lender(function: Callable) -> Callable | None:
    """How the autograder's judge lends correct versions to a learner's code in the student's process, when
    ``function`` (or the object of a bound method) stands for such code there; None for code in this process."""
    for candidate in (function, getattr(function, "__self__", None)):
        lend = getattr(type(candidate), "lend_while_checked", None)
        if lend is not None:
            return functools.partial(lend, candidate)
    return None


def learners_namespace(function: Callable) -> dict | None:
    """The namespace in which the learner's ``function`` finds other names: its notebook's, through any decorator that
    keeps ``__wrapped__`` (``functools.wraps``, ``@torch.no_grad()``, ``@torch.inference_mode()``, ``lru_cache``) and
    from a method; None for a callable that has none (a partial, a callable object)."""
    target = inspect.unwrap(getattr(function, "__func__", function))
    namespace = getattr(target, "__globals__", None)
    return namespace if isinstance(namespace, dict) else None


@contextlib.contextmanager
def names_replaced(namespace: dict, parts: dict[str, Callable]) -> Iterator[None]:
    """Put ``parts`` into ``namespace`` and restore what was there afterwards; a name the notebook lacks (its cell
    failed or never ended) is supplied too."""
    absent = object()
    replaced = {name: namespace.get(name, absent) for name in parts}
    namespace.update(parts)
    try:
        yield
    finally:
        for name, original in replaced.items():
            if original is absent:
                namespace.pop(name, None)
            else:
                namespace[name] = original


@contextlib.contextmanager
def own_versions_named_on_failure(names: Sequence[str]) -> Iterator[None]:
    """Add to a failure that the check ran with the learner's own earlier exercises, which may be the cause."""
    try:
        yield
    except CheckFailed as failure:
        listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
        their = "their checks" if len(names) > 1 else "its check"
        raise CheckFailed(
            f"{failure}\nThis check used your own {listed} from earlier in the notebook: make {their} pass first."
        ) from failure.__cause__


def passed(name: str, what: str) -> None:
    """Report a check that passed."""
    print(f"✔ {name}: {what}")


def _stand_ins_if_present():
    """The module of correct stand-ins, or None where it is absent: a student release leaves it out."""
    name = f"{__name__}.stand_ins"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


# Loaded last, as the stand-ins use the oracles above, and with the checks, so that they are loaded (and recorded
# by the sealed run) before a learner's code runs.
stand_ins = _stand_ins_if_present()
