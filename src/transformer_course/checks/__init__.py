"""Checks of the learners' functions, one module per notebook (``nb01``, ``nb02``, ...).

A check either prints one line saying what passed or raises :class:`CheckFailed` with a message that
names the mistake in a learner's words. The shared pieces below keep those messages uniform.
"""

import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import re
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from .. import PASSED_MARK
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
    batch = broadcast_shape(q.shape[:-2], k.shape[:-2])
    identity = torch.eye(n_k, dtype=q.dtype).expand(*batch, n_k, n_k)  # (..., n_k, n_k)
    # With the identity as values, each output row is that query's row of weights.
    weights = F.scaled_dot_product_attention(q, k, identity, attn_mask=mask, scale=scale)  # (..., n_q, n_k)
    outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)  # (..., n_q, d_v)
    return outputs, weights


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape that ``shapes`` broadcast to, as ``torch.broadcast_shapes`` gives it, with the same RuntimeError
    for shapes that do not broadcast. PyTorch's own imports sympy at its first call, half a second in every process
    that checks, and the grader starts hundreds."""
    length = max((len(shape) for shape in shapes), default=0)
    result = [1] * length
    for shape in shapes:
        for axis, size in enumerate((1,) * (length - len(shape)) + tuple(shape)):
            if size != 1 and result[axis] not in (1, size):
                raise RuntimeError(f"Shape mismatch: the shapes {[tuple(shape) for shape in shapes]} do not broadcast")
            if size != 1:
                result[axis] = size
    return tuple(result)


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


class InputChangedInPlace(CheckFailed):
    """The learner's function changed one of the tensors it was given."""


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
    """A shape as Python writes a tuple: (2, 3, 5), (4,), ()."""
    shape = tensor_or_shape.shape if isinstance(tensor_or_shape, torch.Tensor) else tensor_or_shape
    return str(tuple(shape))


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
        raise CheckFailed(f"{call} raised {type(error).__name__}: {error}{crash_explained(error)}") from error
    changed = [
        index
        for index, (copy, tensor) in enumerate(zip(copies, inputs, strict=True))
        if not (copy.shape == tensor.shape and torch.equal(copy, tensor))
    ]
    if changed:
        names = tensor_arguments(function, args, kwargs)
        which = " and ".join(names[index] for index in changed) if names else "tensor"
        raise InputChangedInPlace(
            f"{name} changed its input {which} in place (with an augmented assignment such as `+=`, `-=`, `*=` or "
            "`/=`, an indexed assignment such as `x[mask] = ...`, or a method ending in _ such as div_); compute a "
            "new tensor instead, so that the caller's data stay as they were."
        )
    expect_plain(result, call)
    return result


# PyTorch raises a plain RuntimeError when Python asks a tensor of several values for one truth value; its message
# is all that tells this crash apart.
TRUTH_VALUE_CRASH = "Boolean value of Tensor with more than one value is ambiguous"
# The named pair (values, indices) that torch's reductions with a dim return, as a TypeError names it.
RETURN_TYPES = "torch.return_types."


def crash_explained(error: Exception) -> str:
    """What a crash of PyTorch's that learners often meet means, as a line to add to its message (or nothing)."""
    if isinstance(error, RuntimeError) and TRUTH_VALUE_CRASH in str(error):
        return (
            "\nPython asked a tensor of several values for one True or False: `if`, `and`, `or` and `not` ask for "
            "one, and so do Python's built-in max, min and sorted, which compare whole rows of a tensor with `>`. "
            "Use the tensor's own operations (.max(), .amax(dim=...), torch.where)."
        )
    if isinstance(error, TypeError) and RETURN_TYPES in str(error):
        return (
            "\nA tensor met the pair (values, indices) that .max(dim=...), .min(dim=...), .sort() and .topk() "
            "return: take its .values, or use .amax(dim=...) and .amin(dim=...), which return the values alone."
        )
    return ""


def tensor_arguments(function: Callable, args: tuple, kwargs: dict) -> list[str] | None:
    """The learner's own names of the tensors among ``args`` and ``kwargs``, in order; None if they cannot be
    bound (a function taking *args, or a call that does not fit its signature)."""
    # A module's own signature is (*args, **kwargs); its forward's holds the names.
    signed = function.forward if isinstance(function, torch.nn.Module) else function
    try:
        bound = inspect.signature(signed).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    names = {id(value): name for name, value in bound.arguments.items() if isinstance(value, torch.Tensor)}
    tensors = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
    return [names.get(id(tensor), "tensor") for tensor in tensors]


def name_python_number_given_to_torch(failure: CheckFailed) -> None:
    """Name the crash of torch.sqrt(d_k) with d_k = q.shape[-1]: a torch function given a Python number."""
    cause = failure.__cause__
    found = re.match(r"(\w+)\(\): argument '\w+' \(position \d+\) must be Tensor, not (int|float)", str(cause))
    if not isinstance(cause, TypeError) or found is None:
        return
    function, kind = found.groups()
    instead = " For the square root of a Python number, use math.sqrt(...) or ** 0.5." if function == "sqrt" else ""
    raise CheckFailed(
        f"{failure}\nThe cause: torch.{function} takes a tensor, and it was given a Python {kind}. A size such as "
        f"q.shape[-1] is a plain Python int, not a tensor.{instead}"
    ) from cause


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
    integer = not (dtype.is_floating_point or dtype.is_complex or dtype == torch.bool)
    if result.dtype != dtype and result.is_floating_point() and integer:
        raise CheckFailed(
            f"{name} returned dtype {result.dtype} where {dtype} was expected: ids and indices are integers. "
            "torch.ones, zeros and empty make floats unless given a dtype, and joining or computing with a float "
            "makes the result float: give the dtype where the tensor is made."
        )
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


def expect_differentiable(result: torch.Tensor, call: str, source: torch.Tensor | None = None) -> None:
    """Fail if a learner's result carries no gradient although its inputs or weights require one: a forward under
    ``@torch.no_grad()`` or a ``.detach()`` returns the right values, but nothing before it could ever be trained.

    Given ``source``, an input that requires grad, also fail unless a gradient flows from the result back to it:
    a view made under ``torch.no_grad()`` still says it requires grad, but no gradient leaves it."""
    advice = (
        "Remove @torch.no_grad(), inference_mode(), .detach(), .data or .item() from the computation; keep every "
        "step a PyTorch operation on the tensors you were given."
    )
    if not result.requires_grad:
        raise CheckFailed(
            f"{call} returned a tensor that does not require gradients, although its inputs or weights do, so "
            f"training could not update anything before it. {advice}"
        )
    if source is None:
        return
    try:
        (gradient,) = torch.autograd.grad(result, source, torch.ones_like(result), allow_unused=True)
    except RuntimeError:  # "element 0 of tensors does not require grad": such a view has no graph behind it
        gradient = None
    if gradient is None:
        raise CheckFailed(
            f"{call}: no gradient flows from the result back to its input, so training could not update anything "
            f"before it. {advice}"
        )


@contextlib.contextmanager
def global_seed(seed: int) -> Iterator[None]:
    """Inside the block the global generator starts from ``seed`` (modules draw their initial weights from it);
    after it, the generator is as it was. Only the processor's generator is seeded: ``torch.manual_seed`` also queues
    the seed for every kind of accelerator, and where none is set up it keeps a copy of the caller's stack for each,
    about half a millisecond a call, which checks that build thousands of models pay thousands of times."""
    with torch.random.fork_rng(devices=[]):
        torch.random.default_generator.manual_seed(seed)
        yield


def built_with_seed(cls: type, *args, seed: int, call: str, **kwargs):
    """Construct a learner's module with a private seed, so its initial weights are the same at every run."""
    with global_seed(seed):
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
        with own_versions_named_on_failure(function, names):
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
        with own_versions_named_on_failure(function, names):
            yield


def handed_over(module: nn.Module) -> nn.Module:
    """Mark ``module`` (of PyTorch's classes or the reference ones, all of its parts) to be handed to the learner's
    code as it is: in the autograder's student process a copy of it runs there, and what the learner's code does to
    it (a training loop's steps) stays there; only what that code returns reaches the check. Without the mark, a
    module the check passes runs in the judge. In one process the mark changes nothing."""
    for part in module.modules():
        part.__dict__["_handed_over"] = True  # read by autograder/verification/judge.py: runs_where_handed
    return module


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
def own_versions_named_on_failure(function: Callable, names: Sequence[str]) -> Iterator[None]:
    """Add to a failure that the check ran with the learner's own earlier exercises ``names``: those that fail their
    own checks (run quietly) may be the cause. When every one of them passes, the failure is left as it is, so that
    a learner is not sent back to an exercise that is right."""
    try:
        yield
    except CheckFailed as failure:
        own = learners_namespace(function) or {}
        failing = [name for name in names if own.get(name) is None or not passes_quietly(check_of(name), own[name])]
        if not failing:
            raise
        listed = " and ".join([", ".join(failing[:-1]), failing[-1]] if len(failing) > 1 else failing)
        their = "they do not pass their checks" if len(failing) > 1 else "it does not pass its check"
        raise CheckFailed(
            f"{failure}\nThis check used your own {listed} from earlier in the notebook, and {their} yet: "
            "make that pass first."
        ) from failure.__cause__


def check_of(name: str) -> Callable | None:
    """The check of the exercise ``name`` (check_layer_norm for LayerNorm), among the notebooks' checks loaded."""
    wanted = f"check{name.lower().replace('_', '')}"
    # By the notebooks' numbers, not by a walk through sys.modules: PyTorch and transformers load thousands.
    loaded = (sys.modules.get(f"{__name__}.nb{number:02d}") for number in range(1, 100))
    for module in (module for module in loaded if module is not None):
        for attribute, value in vars(module).items():
            if attribute.startswith("check_") and attribute.lower().replace("_", "") == wanted:
                return value
    return None


def passes_quietly(check: Callable | None, answer) -> bool:
    """Whether an answer passes its check, the check's ✔ line kept back and the global random state untouched;
    False for a missing answer, True when there is no check to run."""
    if answer is None:
        return False
    if check is None:
        return True
    try:
        with contextlib.redirect_stdout(io.StringIO()), torch.random.fork_rng():
            check(answer)
    except Exception:  # a CheckFailed, or anything else that stops the check: not passing
        return False
    return True


def passed(name: str, what: str) -> None:
    """Report a check that passed."""
    print(f"{PASSED_MARK} {name}: {what}")


def _stand_ins_if_present():
    """The module of correct stand-ins, or None where it is absent: a student release leaves it out."""
    name = f"{__name__}.stand_ins"
    return importlib.import_module(name) if importlib.util.find_spec(name) else None


# Loaded last, as the stand-ins use the oracles above, and with the checks, so that they are loaded (and recorded
# by the sealed run) before a learner's code runs.
stand_ins = _stand_ins_if_present()
