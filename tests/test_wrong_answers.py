"""Every kept wrong answer fails its notebook's check, with a message that names the mistake.

This is the fast proof, calling the check helpers directly; tests/test_grading.py proves the same
through nbgrader's autograde.
"""

import importlib
import inspect

import pytest

from autograder.wrong_answers import WrongAnswer, all_wrong_answers
from transformer_course.checks import CheckFailed

WRONG_ANSWERS = all_wrong_answers()


def check_for(answer: WrongAnswer):
    number = answer.assignment.split("_")[0]
    checks = importlib.import_module(f"transformer_course.checks.nb{number}")
    return getattr(checks, answer.check_name)


def as_typed_in_the_notebook(answer: WrongAnswer):
    """The wrong answer run from its source, with only what a notebook has: imported modules and the names
    standing for earlier exercises, nothing private to the wrong-answers module."""
    module = inspect.getmodule(answer.function)
    namespace = {
        name: value
        for name, value in vars(module).items()
        if inspect.ismodule(value) or getattr(value, "__module__", "").startswith("transformer_course")
    }
    exec(compile(answer.source, f"<{answer.mistake}>", "exec"), namespace)
    return namespace[answer.exercise]


@pytest.mark.parametrize("answer", WRONG_ANSWERS, ids=lambda answer: answer.mistake)
def test_check_rejects_wrong_answer_and_names_the_mistake(answer: WrongAnswer):
    with pytest.raises(CheckFailed) as failure:
        check_for(answer)(as_typed_in_the_notebook(answer))
    assert answer.message in str(failure.value)


@pytest.mark.parametrize("answer", WRONG_ANSWERS, ids=lambda answer: answer.mistake)
def test_source_is_renamed_to_the_graded_function(answer: WrongAnswer):
    assert f"def {answer.exercise}(" in answer.source or f"class {answer.exercise}(" in answer.source
    assert "@wrong_answer" not in answer.source
