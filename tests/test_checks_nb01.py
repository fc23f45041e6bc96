"""The checks of notebook 01 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import pytest
import torch
import torch.nn.functional as F

from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, earlier_exercises_replaced, nb01, stand_ins


def test_checks_accept_correct_answers_written_differently():
    nb01.check_softmax(lambda scores, dim=-1: F.softmax(scores, dim=dim))
    nb01.check_softmax(lambda scores, dim=-1: torch.exp(scores - torch.logsumexp(scores, dim=dim, keepdim=True)))
    nb01.check_attention_weights(lambda x: torch.softmax(torch.einsum("...id,...jd->...ij", x, x), dim=-1))
    nb01.check_self_attention(lambda x: torch.softmax(x @ x.mT, dim=-1) @ x)
    nb01.check_equivariance_gap(
        lambda f, x, perm: float((f(x.index_select(-2, perm)) - f(x).index_select(-2, perm)).abs().max())
    )


def test_a_stub_is_reported_as_not_implemented_yet():
    for check in (
        nb01.check_softmax,
        nb01.check_attention_weights,
        nb01.check_self_attention,
        nb01.check_equivariance_gap,
    ):
        try:
            check(raise_not_implemented)
        except CheckFailed as failure:
            assert "is not implemented yet" in str(failure)
        else:
            raise AssertionError(f"{check.__name__} accepted a stub")


def test_a_crash_in_the_learners_code_is_named_and_kept_as_the_cause():
    def broken(scores, dim=-1):
        return scores @ torch.ones(2)

    try:
        nb01.check_softmax(broken)
    except CheckFailed as failure:
        assert "raised RuntimeError" in str(failure)
        assert isinstance(failure.__cause__, RuntimeError)
    else:
        raise AssertionError("a crashing softmax passed")


def softmax(scores, dim=-1):
    raise ValueError("the learner's own softmax")


def weights_using_softmax(x):
    return softmax(x @ x.mT, dim=-1)


def test_earlier_exercises_are_replaced_during_a_check_and_restored_after():
    nb01.check_attention_weights(weights_using_softmax)  # passes with a correct softmax in place
    assert softmax.__name__ == "softmax" and globals()["softmax"] is softmax
    with earlier_exercises_replaced(weights_using_softmax, "softmax"):
        assert globals()["softmax"] is stand_ins.softmax
    assert globals()["softmax"] is softmax


class Agreeable(torch.Tensor):
    """A tensor that answers every comparison a check makes with it as the check hopes: the difference from
    any expected value is zero."""

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if func is torch.Tensor.__sub__:
            return torch.zeros_like(args[1].as_subclass(torch.Tensor))
        return super().__torch_function__(func, types, args, kwargs or {})


def test_a_result_that_overrides_torch_operations_is_not_trusted():
    def softmax(scores, dim=-1):
        return torch.zeros_like(scores).as_subclass(Agreeable)

    with pytest.raises(CheckFailed, match="returned a Agreeable, which changes how PyTorch operations treat it"):
        nb01.check_softmax(softmax)
