"""The checks of notebook 01 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/test_wrong_answers.py.)
"""

import itertools
import math

import pytest
import torch
import torch.nn.functional as F

from tests.stubs import raise_not_implemented
from transformer_course.checks import CheckFailed, earlier_exercises_replaced, nb01, stand_ins


@torch.no_grad()
def softmax_into_a_preallocated_tensor(scores, dim=-1):
    weights = torch.empty_like(scores)
    torch.sub(scores, scores.max(dim=dim, keepdim=True).values, out=weights)
    weights.exp_()
    weights /= weights.sum(dim=dim, keepdim=True)
    return weights


def test_checks_accept_correct_answers_written_differently():
    nb01.check_softmax(lambda scores, dim=-1: F.softmax(scores, dim=dim))
    nb01.check_softmax(softmax_into_a_preallocated_tensor)
    nb01.check_softmax(lambda scores, dim=-1: torch.exp(scores - torch.logsumexp(scores, dim=dim, keepdim=True)))
    nb01.check_attention_weights(lambda x: torch.softmax(torch.einsum("...id,...jd->...ij", x, x), dim=-1))
    nb01.check_self_attention(lambda x: torch.softmax(x @ x.mT, dim=-1) @ x)
    nb01.check_self_attention(
        torch.no_grad()(lambda x: torch.einsum("...ij,...jd->...id", torch.softmax(x @ x.mT, dim=-1), x))
    )
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
        assert "keepdim" not in str(failure)  # not a reduction that lost its axis: no word about one
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


def test_each_wrong_shift_of_the_large_scores_gives_its_own_result_so_each_gets_its_own_message():
    results = nb01.wrongly_shifted_softmaxes(nb01.LARGE_SCORES)
    assert results.keys() == nb01.SHIFTS.keys()
    for name, result in results.items():
        assert not torch.isfinite(result).all(), f"{name} gives finite weights: the check would not see it"
    for first, second in itertools.combinations(results, 2):
        assert not torch.allclose(results[first], results[second], atol=1e-5, equal_nan=True), (first, second)
    assert torch.isfinite(torch.softmax(nb01.LARGE_SCORES, dim=-1)).all()


def test_each_slip_of_the_gap_gives_its_own_value_on_the_worked_example():
    x = torch.tensor([[4.0, 40.0, 400.0], [2.0, 20.0, 200.0], [1.0, 10.0, 100.0]])
    gaps = nb01.running_sum_gaps(x, torch.tensor([2, 0, 1]))
    assert gaps["gap"] == 600.0
    assert set(gaps) == {"gap", *nb01.GAP_MISTAKES}
    values = sorted(gaps.values())
    assert all(not math.isclose(a, b, rel_tol=1e-3) for a, b in itertools.pairwise(values))


def test_a_shift_by_the_indices_of_the_maximum_differs_from_no_shift_on_the_index_probe():
    no_shift = torch.exp(nb01.INDEX_PROBE) / torch.exp(nb01.INDEX_PROBE).sum(dim=-1, keepdim=True)
    by_indices = nb01.softmax_shifted_by_indices(nb01.INDEX_PROBE)
    assert not torch.allclose(no_shift, by_indices, equal_nan=True)
    assert torch.isfinite(by_indices[0]).all() and not torch.isfinite(by_indices[1]).all()


def test_a_crash_on_shapes_is_named_only_when_the_code_computes_a_wrong_product():
    def self_attention_that_always_crashes(x):
        return torch.softmax(x @ x.mT, dim=-1) @ torch.ones(7, 2)

    with pytest.raises(CheckFailed) as failure:
        nb01.check_self_attention(self_attention_that_always_crashes)
    assert "raised RuntimeError" in str(failure.value) and "On a square x" not in str(failure.value)


def test_a_crash_on_one_sequence_is_blamed_on_batch_axes_only_when_a_batch_works():
    def weights_that_always_crash(x):
        return torch.bmm(x, x.mT)[..., :1, :].squeeze(0, 1, 2)

    with pytest.raises(CheckFailed) as failure:
        nb01.check_attention_weights(weights_that_always_crash)
    assert "exactly one batch axis" not in str(failure.value)


def test_a_gap_computed_in_numpy_is_a_number():
    def gap_in_numpy(f, x, perm):
        return abs(f(x[..., perm, :]).numpy() - f(x).numpy()[..., perm.numpy(), :]).max()  # a numpy.float32

    nb01.check_equivariance_gap(gap_in_numpy)
