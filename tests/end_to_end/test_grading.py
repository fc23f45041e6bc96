"""Every assignment graded as an instructor grades it, in a class folder outside the checkout, through the
autograder's parallel path: nbgrader autogrades each (student, assignment) in a worker process, the student's code
in the grading sandbox and the test cells in the judge, and the results are written into the class gradebook.

For every assignment, two submissions: the solved student version (full marks, nothing to report), and one that
answers every other exercise with a kept wrong answer and leaves the rest as handed out, on which the autograded
notebook, the report and the gradebook agree: each wrong answer loses exactly its exercise's points, with the
message that names the mistake, and each exercise left as it was fails with NotImplementedYet and earns nothing.
(One submission proves both, where an untouched version and a wrong one took two gradings each.) That the judge
takes its points from every kept wrong answer is proven in test_wrong_answer_trials.py; an untouched notebook that
nbgrader fails on every test, for every assignment, in test_notebooks.py (validate --invert); the sample
submissions, honest, tampered, faulty and hostile, in test_grading_samples.py.
"""

from dataclasses import dataclass

import pytest

from autograder.cells import grade_id, is_answer
from autograder.class_folder import ClassFolder
from autograder.grading import Limits, Outcome
from autograder.repository import assignments
from autograder.submissions import Submission, filled_in, points_by_test, solution_code
from class_records import (
    assert_feedback_hides_tests_and_machine_paths,
    class_files,
    failed_in_nbgrader,
    feedback_files,
    feedback_text,
    gradebook_rows,
    grades,
    solution_lines_not_handed_out,
)
from cores import grading_workers
from wrong_answers import of_assignment

pytestmark = pytest.mark.grading

CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell (a short run while nbgrader grades it)


@dataclass
class Graded:
    class_folder: ClassFolder
    grades: dict[tuple[str, str], dict[str, str]]  # (student, assignment) → exported row
    outcomes: dict[tuple[str, str], Outcome]
    mixed: dict[str, Submission]  # assignment → wrong answers to every other exercise, the rest as handed out
    before: dict[str, str]  # the class folder's files, but for what grading writes, before grading: path → hash


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    class_folder = ClassFolder.create(tmp_path_factory.mktemp("class") / "course")
    class_folder.write_student_versions()
    mixed = {}
    for assignment in assignments():
        released = class_folder.released(assignment)
        class_folder.submit("solutions", assignment, filled_in(released, solution_code(assignment)))
        mixed[assignment] = wrong_and_untouched(assignment, released)
        class_folder.submit(MIXED, assignment, mixed[assignment].notebooks)
    before = class_files(class_folder.root)
    outcomes = class_folder.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    for assignment in assignments():
        class_folder.generate_feedback(assignment)
    rows = {(row["student_id"], row["assignment"]): row for row in grades(class_folder)}
    return Graded(class_folder, rows, {(o.student, o.assignment): o for o in outcomes}, mixed, before)


MIXED = "wrong-and-untouched"


def wrong_and_untouched(assignment: str, released) -> Submission:
    """The first kept wrong answer of the first, third, fifth ... exercise; the others left as handed out."""
    first_of_each = {}
    for answer in of_assignment(assignment):
        first_of_each.setdefault(answer.exercise, answer)
    exercises = [grade_id(cell) for notebook in released.values() for cell in notebook.cells if is_answer(cell)]
    answers = [first_of_each[exercise] for exercise in exercises[::2]]
    code = {answer.exercise: answer.source for answer in answers}
    return Submission(MIXED, assignment, filled_in(released, code), answers)


def untouched_tests(submission: Submission) -> set[str]:
    wrong = {answer.test_cell for answer in submission.wrong_answers}
    return set(points_by_test(submission.notebooks)) - wrong


@pytest.mark.parametrize("assignment", assignments())
def test_solutions_get_full_marks_and_nothing_to_report(graded, assignment):
    row = graded.grades["solutions", assignment]
    assert failed_in_nbgrader(graded.class_folder, "solutions", assignment) == {}
    assert float(row["score"]) == float(row["max_score"]) > 0
    assert graded.outcomes["solutions", assignment].messages == []  # the judge finds nothing amiss


@pytest.mark.parametrize("assignment", assignments())
def test_every_student_gets_feedback_with_the_exported_score(graded, assignment):
    feedback = {
        path.parent.parent.name: path.read_text(encoding="utf-8")
        for path in feedback_files(graded.class_folder, assignment)
    }
    assert set(feedback) == {student for student, of in graded.outcomes if of == assignment}
    for student, page in feedback.items():
        row = graded.grades[student, assignment]
        total = f"Score: {float(row['score']):.1f} / {float(row['max_score']):.1f}"
        assert total in page, f"{student}'s feedback lacks {total!r}"


@pytest.mark.parametrize("assignment", assignments())
def test_exercises_left_as_handed_out_earn_nothing_and_fail_as_not_implemented(graded, assignment):
    submission = graded.mixed[assignment]
    failed = failed_in_nbgrader(graded.class_folder, MIXED, assignment)
    untouched = untouched_tests(submission)
    assert untouched and untouched <= set(failed)
    assert {failed[test].error_type for test in untouched} == {"NotImplementedYet"}, failed
    reported = {test.name: test for test in graded.outcomes[MIXED, assignment].tests}
    assert all(reported[test].points == 0 for test in untouched)


@pytest.mark.parametrize("assignment", assignments())
def test_wrong_answers_lose_their_points_in_the_notebook_the_report_and_the_gradebook(graded, assignment):
    """Each wrong answer's test fails in the autograded notebook with the message that names the mistake (as in the
    wrong answers' trials, test_wrong_answers.py), the report says so, and the gradebook takes off exactly the
    points of the tests that failed: the wrong answers' and those of the exercises left as handed out."""
    submission = graded.mixed[assignment]
    failed = failed_in_nbgrader(graded.class_folder, MIXED, assignment)
    assert set(failed) == {answer.test_cell for answer in submission.wrong_answers} | untouched_tests(submission)
    reported = {test.name: test.message for test in graded.outcomes[MIXED, assignment].tests}
    for answer in submission.wrong_answers:
        assert answer.message in failed[answer.test_cell].text, f"autograded: {failed[answer.test_cell]}"
        assert answer.message in reported[answer.test_cell]
    points = points_by_test(submission.notebooks)
    row = graded.grades[MIXED, assignment]
    assert float(row["score"]) == float(row["max_score"]) - sum(points[test] for test in failed) == 0


def test_the_class_folder_is_intact_but_for_what_grading_writes(graded):
    assert class_files(graded.class_folder.root) == graded.before


@pytest.mark.parametrize("assignment", assignments())
def test_no_feedback_shows_hidden_test_code_or_machine_paths(graded, assignment):
    assert_feedback_hides_tests_and_machine_paths(graded.class_folder, assignment)


@pytest.mark.parametrize("assignment", assignments())
def test_feedback_of_a_submission_with_no_exercise_solved_shows_no_solution_code(graded, assignment):
    """Every failing check's message, and the feedback around it, shows no line of a solution that the student
    version does not show and the student did not write."""
    submission = graded.mixed[assignment]
    written = "\n".join(answer.source for answer in submission.wrong_answers)
    solution = solution_lines_not_handed_out(assignment, list(solution_code(assignment)))
    assert solution
    (page,) = [path for path in feedback_files(graded.class_folder, assignment) if MIXED in path.parts]
    assert [line for line in solution if line in feedback_text(page) and line not in written] == []


def test_regrading_changes_nothing_in_the_gradebook(graded):
    before = gradebook_rows(graded.class_folder)
    again = [("solutions", assignments()[0]), (MIXED, assignments()[-1])]
    graded.class_folder.autograde(again, Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    assert gradebook_rows(graded.class_folder) == before
