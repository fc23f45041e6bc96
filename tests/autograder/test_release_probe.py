"""The release probe (tests/release_probe.py) can find what it looks for: a callable that answers a hidden test,
as it is or as the first of the pair it returns, is printed as passing; one that answers nothing is not."""

import contextlib
import functools
import io

import release_probe
from transformer_course.checks import nb01, stand_ins

CHECKS = {"nb01.check_softmax(seed=2)": functools.partial(nb01.check_softmax, seed=2)}


def printed_by_try_form(label: str, form) -> tuple[list[str], tuple[int, int]]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        counts = release_probe.try_form(label, form, CHECKS)
    return out.getvalue().splitlines(), counts


def softmax_and_more(scores, dim=-1):
    return stand_ins.softmax(scores, dim), "more"


def not_softmax(scores, dim=-1):
    return scores


def test_the_probe_finds_an_answer_as_it_is_and_as_the_first_of_a_pair():
    assert printed_by_try_form("answer", stand_ins.softmax) == (["PASSES nb01.check_softmax(seed=2): answer"], (1, 1))
    printed, counts = printed_by_try_form("pair", softmax_and_more)
    assert printed == ["PASSES nb01.check_softmax(seed=2): pair[0]"] and counts == (2, 0)


def test_the_probe_passes_nothing_that_answers_nothing():
    assert printed_by_try_form("wrong", not_softmax) == ([], (1, 1))
