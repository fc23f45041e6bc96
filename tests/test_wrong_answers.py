"""Every kept wrong answer fails its notebook's check, with a message that names the mistake, and loses exactly its
exercise's points where grades are decided.

Two proofs. The fast one calls the check helpers directly, in this process. The other grades every wrong answer as
the autograder does: the sealed run, which decides what a test earns whatever nbgrader's kernel says, runs each
notebook's trial program in the grading sandbox (one process per notebook: the solved notebook, then each wrong
answer in turn with every test cell from its exercise's on, hidden tests included; ``wrong_answers.trial_program``).
That nbgrader's kernel, the report and the gradebook agree with the sealed run is proven in test_grading.py.
"""

import functools
import importlib
import inspect
import re
from pathlib import Path

import pytest

from autograder.repository import assignments
from autograder.submissions import points_by_test, solution_notebooks, solved_namespace
from autograder.verification.sandbox import Sandbox
from autograder.verification.sealed_run import SealedVerdict, verify
from transformer_course.checks import CheckFailed
from wrong_answers import WrongAnswer, all_wrong_answers, graded_after, trial_name, trial_program

WRONG_ANSWERS = all_wrong_answers()
CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell (a short run, as while nbgrader grades it)


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


class Trials(dict):
    """Every kept wrong answer of a notebook graded by the sealed run, in the grading sandbox: one run per notebook,
    made when a test first asks for it, so that selecting one notebook's tests (-k 03:) runs only its trials."""

    def __init__(self, scratch: Path) -> None:
        super().__init__()
        self.scratch = scratch

    def __missing__(self, assignment: str) -> SealedVerdict:
        self[assignment] = verify(
            trial_program(assignment), self.scratch / assignment, CELL_TIMEOUT, Sandbox(), assignment
        )
        return self[assignment]


@pytest.fixture(scope="module")
def trials(tmp_path_factory) -> Trials:
    return Trials(tmp_path_factory.mktemp("trials"))


@pytest.mark.grading
@pytest.mark.parametrize("assignment", assignments())
def test_the_trials_start_from_the_solved_notebook_and_run_to_the_end(trials, assignment):
    verdict = trials[assignment]
    solved = points_by_test(solution_notebooks(assignment))
    assert set(solved) <= verdict.passed, {test: verdict.failure(test) for test in solved}
    assert verdict.findings == []  # no cell failed, nothing was changed, the run reached its end


@pytest.mark.grading
@pytest.mark.parametrize("answer", WRONG_ANSWERS, ids=lambda answer: answer.label)
def test_the_sealed_run_takes_exactly_the_exercise_points_of_a_wrong_answer(trials, answer: WrongAnswer):
    verdict = trials[answer.assignment]
    own = trial_name(answer, answer.test_cell)
    assert own not in verdict.passed, f"{answer.mistake} passed {answer.test_cell}"
    assert answer.message in verdict.failure(own)
    # Every exercise is graded on its own: with this wrong answer in place, every later test still passes.
    others = [trial_name(answer, test) for test in graded_after(answer)]
    assert {name: verdict.failure(name) for name in others if name != own and name not in verdict.passed} == {}
