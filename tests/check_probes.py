"""What a check gives a learner's code: the seeds of the hidden tests, and the inputs and weights of its calls. The
check tests use them to prove that hidden tests differ from the visible ones."""

import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass

import torch

from autograder.submissions import solution_notebooks


def hidden_seeds(assignment: str, check_name: str) -> list[int]:
    """The seeds with which the hidden tests of the solution notebook call the check ``check_name``."""
    (notebook,) = solution_notebooks(assignment).values()
    hidden = "".join(
        cell.source.split("### BEGIN HIDDEN TESTS")[1]
        for cell in notebook.cells
        if "### BEGIN HIDDEN TESTS" in cell.source
    )
    return [int(seed) for seed in re.findall(rf"\b{check_name}\(\w+, seed=(\d+)\)", hidden)]


@dataclass
class Given:
    inputs: list[torch.Tensor]  # the tensors of the first call of the module or function under test, masks left out
    weights: list[torch.Tensor]  # a module's parameters at that call; none for a function


def what_the_learner_gets(check, correct: type | Callable, seed: int) -> Given:
    """What ``check`` gives a correct module class or function first: the numbers (not the masks) of its first
    call, and a module's weights then."""
    if not isinstance(correct, type):
        first, *_ = calls_of(check, correct, seed)
        return Given(_numbers(first.values()), weights=[])
    calls = []

    class Recorded(correct):
        def forward(self, *args, **kwargs):
            if not calls:
                weights = [parameter.detach().clone() for parameter in self.parameters()]
                calls.append(Given(_numbers((*args, *kwargs.values())), weights))
            return super().forward(*args, **kwargs)

    check(Recorded, seed=seed)
    return calls[0]


def assert_hidden_tests_differ(assignment: str, check, correct: type | Callable) -> None:
    """Fail unless every hidden test of ``check`` in the solution notebook gives the learner's code other numbers
    than the visible test (seed 0) does.

    A hidden test differs from the visible one only by its ``seed``. If the check ignored the seed somewhere, the
    hidden test would re-run the visible one there, and an answer fitted to what the visible test shows would pass
    it too. So for each hidden seed, every input tensor of the first call of ``correct`` (a correct answer: a module
    class or a plain function) and every weight of a module must differ from the visible test's. Masks (bool
    tensors) are left out: a causal mask depends on the sequence length alone.
    """
    seeds = hidden_seeds(assignment, check.__name__)
    assert seeds, f"the notebook has no hidden test of {check.__name__}"
    visible = what_the_learner_gets(check, correct, seed=0)
    for seed in seeds:
        hidden = what_the_learner_gets(check, correct, seed=seed)
        assert not any(map(torch.equal, visible.inputs, hidden.inputs)), f"seed={seed} gives the same inputs"
        assert not any(map(torch.equal, visible.weights, hidden.weights)), f"seed={seed} gives the same weights"


def calls_of(check, correct: Callable, seed: int) -> list[dict[str, object]]:
    """Every call that ``check`` run with ``seed`` makes of ``correct`` (a correct answer, a plain function), in
    order: each call's arguments by parameter name, as they were at the call."""
    recorded = _Recorded(correct)
    check(recorded, seed=seed)
    return recorded.calls


class _Recorded:
    """``function``, recording the arguments of each call. It carries the function's name and namespace: a check
    names the learner's function in its messages, and puts correct versions of the earlier exercises into that
    function's namespace (``earlier_exercises_replaced``), where ``function`` looks them up."""

    def __init__(self, function: Callable):
        self.function, self.signature, self.calls = function, inspect.signature(function), []
        self.__name__ = function.__name__
        self.__globals__ = getattr(function, "__globals__", {})

    def __call__(self, *args, **kwargs):
        arguments = self.signature.bind(*args, **kwargs).arguments
        self.calls.append({name: _copied(value) for name, value in arguments.items()})
        return self.function(*args, **kwargs)


def _copied(value):
    """``value`` as it is now, safe from later changes to it: tensors detached and cloned, lists, tuples and dicts
    copied through; anything else (numbers, strings, a model, a generator) kept as it is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, list):
        return [_copied(item) for item in value]
    if isinstance(value, tuple):
        return tuple(_copied(item) for item in value)
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    return value


def _numbers(values) -> list[torch.Tensor]:
    """Copies of the tensors among ``values`` that hold numbers: masks (bool tensors) are left out."""
    return [value.detach().clone() for value in values if isinstance(value, torch.Tensor) and value.dtype != torch.bool]
