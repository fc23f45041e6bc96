"""The allocation probe counts the tensors a computation creates, and nothing else."""

import torch
import torch.nn.functional as F

from transformer_course.allocations import allocations_of


def test_a_new_tensor_is_counted_with_its_shape_and_bytes():
    x = torch.ones(3, 4)
    result, allocations = allocations_of(torch.matmul, x, x.T)
    assert torch.equal(result, torch.full((3, 3), 4.0))
    assert allocations.shapes == [(3, 3)] and allocations.sizes == [3 * 3 * 4]
    assert allocations.largest == allocations.total == 36 and allocations.largest_shape == (3, 3)


def test_views_and_in_place_results_allocate_nothing():
    x = torch.zeros(2, 6)
    _, allocations = allocations_of(lambda t: t.view(3, 4).transpose(0, 1).add_(1.0), x)
    assert allocations.sizes == [] and allocations.largest == 0 and allocations.largest_shape is None


def test_attention_written_out_builds_the_n_by_n_scores_and_doubles_n_quadruples_them():
    def attention(q, k, v):
        return torch.softmax(q @ k.transpose(-2, -1) / 4.0, dim=-1) @ v

    largest = [allocations_of(attention, *[torch.randn(1, 2, n, 16)] * 3)[1].largest for n in (128, 256)]
    assert largest == [2 * 128 * 128 * 4, 2 * 256 * 256 * 4]


def test_pytorch_attention_on_the_cpu_builds_no_n_by_n_matrix():
    q = torch.randn(1, 2, 256, 16)
    _, allocations = allocations_of(F.scaled_dot_product_attention, q, q, q)
    assert allocations.largest < 256 * 256 * 4


def test_the_peak_counts_the_tensors_alive_at_once_not_all_that_were_created():
    def one_at_a_time(x):
        for _ in range(4):
            x = x * 2.0  # the previous product is freed once x names the new one
        return x

    _, allocations = allocations_of(one_at_a_time, torch.ones(1024))
    assert allocations.total == 4 * 4096
    assert allocations.peak == 2 * 4096  # a product and the next one

    def all_kept(x):
        return [x * float(i) for i in range(4)]

    _, allocations = allocations_of(all_kept, torch.ones(1024))
    assert allocations.peak == allocations.total == 4 * 4096
