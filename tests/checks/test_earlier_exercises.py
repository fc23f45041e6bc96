"""A check of a later exercise grades it on its own: it lends the learner's function correct versions of the earlier
exercises it calls, whatever decorates that function (``@torch.no_grad()``, ``@torch.inference_mode()``, a chain of
``functools.wraps``), so that a correct function beside a wrong earlier exercise keeps its points."""

import contextlib
import functools
import io

import pytest
import torch

from autograder import recorded_oracles
from autograder.submissions import solved_namespace
from wrong_answers import of_assignment

# The exercises written as functions whose checks lend them earlier ones, with the names they lend.
LENT = {
    ("01_self_attention_averaging", "attention_weights"): ("softmax",),
    ("01_self_attention_averaging", "self_attention"): ("softmax", "attention_weights"),
    ("04_masking", "decoder_mask"): ("padding_mask", "causal_mask"),
    ("09_tokenization", "train_bpe"): ("count_pairs", "merge"),
    ("09_tokenization", "encode"): ("count_pairs", "merge"),
    ("10_gpt", "generate"): ("next_token_probabilities",),
    ("11_fast_inference", "cached_block_forward"): ("KVCache",),
    ("11_fast_inference", "cached_logits"): ("KVCache", "cached_block_forward"),
    ("11_fast_inference", "generate_cached"): ("KVCache", "cached_block_forward", "next_token_probabilities"),
}


def cases() -> list:
    """(assignment, exercise, a kept wrong answer of one of the exercises it calls): one per name lent that has one."""
    found = []
    for (assignment, exercise), names in LENT.items():
        for name in names:
            wrong = [answer for answer in of_assignment(assignment) if answer.exercise == name][:1]
            found += (
                [pytest.param(assignment, exercise, *wrong, id=f"{exercise} beside {wrong[0].label}")] if wrong else []
            )
    return found


def logged(function):
    @functools.wraps(function)
    def calls(*args, **kwargs):
        return function(*args, **kwargs)

    return calls


def passes_beside(assignment: str, exercise: str, wrong, decorate) -> None:
    """Run the exercise's visible check on its solution, decorated, in a notebook whose earlier exercise is wrong."""
    namespace = solved_namespace(assignment)  # the solutions' own namespace: the wrong answer replaces one in it
    exec(wrong.source, namespace)
    namespace[exercise] = decorate(namespace[exercise])
    with contextlib.redirect_stdout(io.StringIO()):
        exec(recorded_oracles.visible_tests(assignment)[f"test_{exercise}"], namespace)


@pytest.mark.parametrize(("assignment", "exercise", "wrong"), cases())
def test_a_correct_function_under_no_grad_keeps_its_points_beside_a_wrong_earlier_exercise(assignment, exercise, wrong):
    passes_beside(assignment, exercise, wrong, torch.no_grad())


@pytest.mark.parametrize("decorate", [torch.inference_mode(), lambda f: logged(logged(f))], ids=["inference", "wraps"])
def test_other_decorators_reach_the_notebook_too(decorate):
    (wrong,) = [answer for answer in of_assignment("10_gpt") if answer.mistake == "top_k_keeping_one_too_many"]
    passes_beside("10_gpt", "generate", wrong, decorate)
