"""Greedy decoding timed step by step gives the argmax tokens, one time per step, and hands the model the tokens it
has not been given yet."""

import torch

from transformer_course.decoding_time import greedy_step_seconds


def test_each_step_takes_the_argmax_and_is_timed_and_gets_only_the_tokens_not_yet_given():
    given = []

    def next_logits(ids, newest):
        given.append((ids.shape[1], newest.tolist()))
        return torch.nn.functional.one_hot((ids[:, -1] + 1) % 10, 10).float()  # (batch, vocab): the next digit

    ids, seconds = greedy_step_seconds(next_logits, torch.tensor([[3, 4]]), new_tokens=3)
    assert ids.tolist() == [[3, 4, 5, 6, 7]]
    assert len(seconds) == 3 and all(s >= 0 for s in seconds)
    assert given == [(2, [[3, 4]]), (3, [[5]]), (4, [[6]])]
