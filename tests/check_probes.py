"""What a check gives a learner's code: the seeds of the hidden tests, and the inputs and weights of its first
call. The check tests use them to prove that hidden tests differ from the visible ones."""

import re
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
    inputs: list[torch.Tensor]  # the tensors of the first call of the module under test, masks left out
    weights: list[torch.Tensor]  # its parameters at that call


def what_the_learner_gets(check, correct: type, seed: int) -> Given:
    """What ``check`` gives a correct module first: the numbers (not the masks) of its first call, and its
    weights then."""
    calls = []

    class Recorded(correct):
        def forward(self, *args, **kwargs):
            if not calls:
                tensors = [value for value in (*args, *kwargs.values()) if isinstance(value, torch.Tensor)]
                weights = [parameter.detach().clone() for parameter in self.parameters()]
                calls.append(Given([t.clone() for t in tensors if t.dtype != torch.bool], weights))
            return super().forward(*args, **kwargs)

    check(Recorded, seed=seed)
    return calls[0]
