"""Every kept wrong answer fails its notebook's check, with a message that names the mistake: the fast proof, which
calls the checks in this process. That each loses exactly its exercise's points where grades are decided is proven in
tests/end_to_end/test_wrong_answer_trials.py.
"""

import functools
import importlib
import inspect
import re

import pytest

from autograder.submissions import solved_namespace
from transformer_course.checks import CheckFailed
from wrong_answers import WrongAnswer, all_wrong_answers

WRONG_ANSWERS = all_wrong_answers()


def check_for(answer: WrongAnswer):
    number = answer.assignment.split("_")[0]
    checks = importlib.import_module(f"transformer_course.checks.nb{number}")
    return getattr(checks, answer.check_name)


@functools.cache
def notebook_imports(assignment: str) -> dict:
    """The names a learner's cell sees: what the solution notebook's first code cell (its set-up) defines."""
    return solved_namespace(assignment, exercises=())


def as_typed_in_the_notebook(answer: WrongAnswer):
    """The wrong answer run from its source, with the notebook's imports and correct stand-ins for the
    earlier exercises it calls; nothing else of the wrong-answers module."""
    module = inspect.getmodule(answer.function)
    stand_ins = {
        name: value
        for name, value in vars(module).items()
        if not inspect.ismodule(value) and getattr(value, "__module__", "").startswith("transformer_course")
    }
    namespace = {**notebook_imports(answer.assignment), **stand_ins}
    exec(compile(answer.source, f"<{answer.mistake}>", "exec"), namespace)
    return namespace[answer.exercise]


@pytest.mark.parametrize("answer", WRONG_ANSWERS, ids=lambda answer: answer.label)
def test_check_rejects_wrong_answer_and_names_the_mistake(answer: WrongAnswer):
    with pytest.raises(CheckFailed) as failure:
        check_for(answer)(as_typed_in_the_notebook(answer))
    assert answer.message in str(failure.value)


@pytest.mark.parametrize("answer", WRONG_ANSWERS, ids=lambda answer: answer.label)
def test_source_is_renamed_to_the_graded_function(answer: WrongAnswer):
    assert re.search(rf"^(def|class) {answer.exercise}\b", answer.source, re.MULTILINE)
    assert "@wrong_answer" not in answer.source
