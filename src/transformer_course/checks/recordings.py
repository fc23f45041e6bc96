"""Oracles that a student release holds as recorded results, not as code.

Some of the checks' oracles compute an exercise's answer for any input: BPE's merges, attention's weights. In the
instructor's package they compute. A student release (``autograder/release.py``) keeps their signatures and
docstrings but not their bodies, and ships ``recorded.pt``: what each returned to the calls that the notebooks'
visible checks made, run on the solved notebooks and on the course's kept wrong answers. A check at home then
compares as before on its own cases, and nothing in the release answers an exercise on other inputs.
"""

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

RECORDED = Path(__file__).with_name("recorded.pt")  # present in a student release only
_recording: list[tuple[str, dict, object]] | None = None  # the calls being recorded, while recording()
ORACLES: dict[str, Callable] = {}  # every @oracle, by module and name
_inside = 0  # how many oracle calls are running: one oracle's calls of another need no record of their own


def oracle(function: Callable) -> Callable:
    """Mark a function of the checks that answers an exercise: a release answers its calls from ``recorded.pt``."""
    key = f"{function.__module__}.{function.__qualname__}"
    signature = inspect.signature(function)

    def arguments_of(args: tuple, kwargs: dict) -> dict:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    @functools.wraps(function)
    def answered(*args, **kwargs):
        if _in_a_release():
            return recorded_result(key, arguments_of(args, kwargs))
        global _inside
        _inside += 1
        try:
            result = function(*args, **kwargs)
        finally:
            _inside -= 1
        # Only an outermost call is recorded, and only its arguments are bound: an oracle that calls another (BPE's
        # merges call their merge step) thousands of times pays nothing for the calls within.
        if _recording is not None and not _inside:
            _recording.append((key, snapshot(arguments_of(args, kwargs)), snapshot(result)))
        return result

    ORACLES[key] = answered
    return answered


@functools.cache
def _in_a_release() -> bool:
    """Whether this package is a student release's: its recorded results are there from the start or never."""
    return RECORDED.exists()


@contextlib.contextmanager
def recording() -> Iterator[list[tuple[str, dict, object]]]:
    """Collect (oracle, arguments, result) for every call of an oracle made inside the block."""
    global _recording
    outer, _recording = _recording, []
    try:
        yield _recording
    finally:
        _recording = outer


def recorded_result(key: str, arguments: dict):
    """What the oracle ``key`` returned when the release was built, for arguments equal to these."""
    for known, result in _recorded_by_kind().get((key, kind_of(arguments)), ()):
        if same_values(known, arguments):
            return result
    from transformer_course.checks import NotRecorded  # the package imports this module before it defines it

    raise NotRecorded(
        "this copy of the check cannot say more: your answer led it to a case it holds no expected result for. "
        "Your result is not the expected one; the autograder's check names the mistake. (A release's checks hold "
        "the expected results of the notebook's own check calls, with their default seed.)"
    )


@functools.cache
def _recorded_by_kind() -> dict[tuple[str, tuple], list[tuple[dict, object]]]:
    """The recorded calls by oracle and kind of arguments: a call is looked for among those of its own kind only."""
    by_kind: dict[tuple[str, tuple], list[tuple[dict, object]]] = {}
    for key, calls in torch.load(RECORDED, weights_only=True).items():
        for arguments, result in calls:
            by_kind.setdefault((key, kind_of(arguments)), []).append((arguments, result))
    return by_kind


def kind_of(value) -> tuple:
    """What two values that ``same_values`` finds equal have in common, as a key: a tensor's dtype and shape, a
    container's length and its items' kinds, any other value itself (its type alone where it cannot be a key).
    Values of different kinds are never the same values; values of one kind may still differ."""
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, tuple(value.shape))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(key), kind_of(item)) for key, item in value.items())))
    if isinstance(value, list | tuple):
        return ("sequence", tuple(kind_of(item) for item in value))
    try:
        hash(value)
    except TypeError:
        return (type(value),)
    return (type(value), value)


def snapshot(value):
    """A copy of the value whose tensors no later change in place can reach (a check edits its mask between calls)."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(snapshot(item) for item in value)
    return value


def same_values(first, second) -> bool:
    """Whether two arguments are equal: tensors of one dtype by value, containers item by item. Tensors agree to
    1e-5 of their largest value: the same seeded computation differs in its last bits between machines and numbers
    of threads, and the calls of one check differ by far more. A call in float32 is not the same call in float64:
    the oracle's result has the arguments' dtype."""
    if isinstance(first, torch.Tensor) or isinstance(second, torch.Tensor):
        if not (isinstance(first, torch.Tensor) and isinstance(second, torch.Tensor) and first.shape == second.shape):
            return False
        if first.dtype != second.dtype:
            return False
        first, second = first.double(), second.double()
        scale = second.nan_to_num(0.0, 0.0, 0.0).abs().max().item() if second.numel() else 0.0
        return torch.allclose(first, second, rtol=1e-5, atol=1e-5 * scale, equal_nan=True)
    if isinstance(first, dict) and isinstance(second, dict):
        return first.keys() == second.keys() and all(same_values(first[key], second[key]) for key in first)
    if isinstance(first, list | tuple) and isinstance(second, list | tuple):
        return len(first) == len(second) and all(same_values(a, b) for a, b in zip(first, second, strict=True))
    return type(first) is type(second) and first == second
