"""Every kept wrong answer loses exactly its exercise's points where grades are decided, and no other: the sealed
run, which decides what a test earns whatever nbgrader's kernel says, runs each notebook's trial program in the
grading sandbox (one process per notebook: the solved notebook, then each wrong answer in turn with every test cell
from its exercise's on, hidden tests included; ``wrong_answers.trial_program``). That each is named by its check in
one process is tests/checks/test_wrong_answers.py; that nbgrader's kernel, the report and the gradebook agree with
the sealed run, test_grading.py.
"""

from pathlib import Path

import pytest

from autograder.repository import assignments
from autograder.submissions import points_by_test, solution_notebooks
from autograder.verification.sandbox import Sandbox
from autograder.verification.sealed_run import SealedVerdict, verify
from wrong_answers import WrongAnswer, all_wrong_answers, graded_after, trial_name, trial_program

WRONG_ANSWERS = all_wrong_answers()
CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell (a short run, as while nbgrader grades it)


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
