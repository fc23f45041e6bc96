"""The checks of notebook 01 accept correct answers written in different ways and explain stubs.

(Kept wrong answers are rejected: tests/checks/test_wrong_answers.py.)
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


def test_each_named_slip_of_self_attention_gives_its_own_outputs_on_the_checks_inputs():
    for x in (nb01.seeded_randn(5, 3, seed=0), nb01.seeded_randn(2, 4, 5, 3, seed=1)):
        expected, weights = nb01.unscaled_self_attention(x)
        outputs = [computed for computed, _ in nb01._outputs_of_slips(x, expected, weights)]
        for computed in outputs:
            assert computed.shape == x.shape and not torch.allclose(computed, expected, atol=1e-3)
        for first, second in itertools.combinations(outputs, 2):
            assert not torch.allclose(first, second, atol=1e-3)


def test_outputs_outside_the_range_are_not_blamed_on_raw_scores_unless_they_come_from_them():
    def doubled(x):
        return 2 * (torch.softmax(x @ x.mT, dim=-1) @ x)

    with pytest.raises(CheckFailed, match="outside the range of the inputs") as failure:
        nb01.check_self_attention(doubled)
    assert "raw scores" not in str(failure.value)


def test_the_signed_probe_tells_comparing_maxima_from_reordering_nothing():
    perm = torch.tensor([2, 0, 1])
    worked = torch.tensor([[4.0, 40.0, 400.0], [2.0, 20.0, 200.0], [1.0, 10.0, 100.0]])
    assert nb01.running_sum_gaps(worked, perm)["difference of maxima"] == 0  # why the worked example cannot tell
    probe = nb01.running_sum_gaps(nb01.SIGNED_PROBE, perm)
    assert probe["difference of maxima"] == 100 and probe["gap"] == 200


def test_dividing_the_scores_by_the_square_root_of_d_and_by_d_give_different_weights():
    x = nb01.seeded_randn(5, 3, seed=0)
    by_sqrt_d, by_d = nb01.unscaled_self_attention(x / 3**0.25)[1], nb01.unscaled_self_attention(x / 3**0.5)[1]
    assert not torch.allclose(by_sqrt_d, by_d, atol=1e-3)


def test_more_correct_answers_pass():
    nb01.check_softmax(lambda scores, dim=-1: torch.log_softmax(scores, dim=dim).exp())
    nb01.check_self_attention(lambda x: (torch.softmax(x @ x.mT, dim=-1).unsqueeze(-1) * x.unsqueeze(-3)).sum(dim=-2))
    nb01.check_equivariance_gap(
        lambda f, x, perm: max(
            abs(a - b)
            for a, b in zip(f(x[..., perm, :]).flatten().tolist(), f(x)[..., perm, :].flatten().tolist(), strict=True)
        )
    )


class CallableSoftmax:
    """A softmax written as a callable object: its default dim is that of __call__."""

    def __call__(self, scores, dim=-1):
        exps = (scores - scores.amax(dim, keepdim=True)).exp()
        return exps / exps.sum(dim, keepdim=True)


def test_correct_answers_in_the_fourth_reviews_styles_pass():
    nb01.check_softmax(CallableSoftmax())
    nb01.check_softmax(lambda scores, *, dim=-1: torch.softmax(scores.double(), dim=dim).to(scores.dtype))
    nb01.check_softmax(lambda scores, dim=-1: torch.softmax(scores.movedim(dim, -1), dim=-1).movedim(-1, dim))

    def self_attention_one_sequence_at_a_time(x):
        if x.dim() > 2:
            return torch.stack([self_attention_one_sequence_at_a_time(one) for one in x])
        return torch.softmax(x @ x.mT, dim=-1) @ x

    nb01.check_self_attention(self_attention_one_sequence_at_a_time)

    def self_attention_flattening_the_batch(x):
        *batch, seq, d = x.shape
        weights = torch.softmax(x @ x.mT, dim=-1).reshape(-1, seq, seq)
        return torch.bmm(weights, x.reshape(-1, seq, d)).reshape(*batch, seq, d)

    nb01.check_self_attention(self_attention_flattening_the_batch)
    nb01.check_equivariance_gap(lambda f, x, perm: float((f(x[..., perm, :]) - f(x)[..., perm, :]).abs().amax()))

    def gap_from_the_lowest_and_highest_difference(f, x, perm):
        lowest, highest = torch.aminmax(f(x[..., perm, :]) - f(x)[..., perm, :])
        return max(-lowest.item(), highest.item())

    nb01.check_equivariance_gap(gap_from_the_lowest_and_highest_difference)


def test_a_truth_value_crash_is_blamed_on_pythons_max_only_when_rows_of_one_number_work():
    def gap_asking_a_tensor_for_its_truth(f, x, perm):
        differences = f(x[..., perm, :]) - f(x)[..., perm, :]
        return differences.abs().max().item() if differences else 0.0

    with pytest.raises(CheckFailed, match="Python asked a tensor of several values for one True or False") as failure:
        nb01.check_equivariance_gap(gap_asking_a_tensor_for_its_truth)
    assert "`if`, `and`, `or` and `not` ask for one" in str(failure.value) and "your gap is 6" not in str(failure.value)


def test_a_failure_that_names_its_mistake_gets_no_batching_hints():
    def gap_per_sequence(f, x, perm):
        return (f(x[..., perm, :]) - f(x)[..., perm, :]).abs().amax(dim=(-2, -1))

    with pytest.raises(CheckFailed, match="one value per sequence of the batch") as failure:
        nb01.check_equivariance_gap(gap_per_sequence)
    assert nb01.BATCH_HINT not in str(failure.value) and nb01.REORDER_HINT not in str(failure.value)

    with pytest.raises(CheckFailed, match="a batch axis, not the keys axis") as failure:
        nb01.check_attention_weights(lambda x: torch.softmax(x @ x.mT, dim=1))
    assert nb01.MATRIX_HINT not in str(failure.value)


def test_the_wrong_shifts_of_a_softmax_along_dim_0_give_their_own_weights():
    scores = 3 * nb01.seeded_randn(2, 3, 5, seed=0)
    correct = torch.softmax(scores, dim=0)
    by_slice = nb01.softmax_with_the_maximum_of_each_slice(scores, 0)
    by_last_axis = nb01.softmax_with_the_maximum_of_the_last_axis(scores, 0)
    for first, second in itertools.combinations((correct, by_slice, by_last_axis), 2):
        assert not torch.allclose(first, second, atol=1e-3)
    for dim in (1, 2):  # along these the shift by each slice's maximum is one number per summed row: it cancels
        assert torch.allclose(nb01.softmax_with_the_maximum_of_each_slice(scores, dim), torch.softmax(scores, dim))


def test_weights_from_a_reshape_differ_from_the_correct_ones_on_the_checks_inputs():
    for x in (nb01.seeded_randn(5, 3, seed=0), nb01.seeded_randn(2, 4, 5, 3, seed=1)):
        assert not torch.allclose(nb01.weights_with_x_reshaped_for_its_transpose(x), torch.softmax(x @ x.mT, -1))
