"""Every assignment graded as an instructor grades it, in a class folder outside the checkout, through the
autograder's parallel path: nbgrader autogrades each (student, assignment) in a worker process, the student's code
in the grading sandbox and the test cells in the judge, and the results are written into the class gradebook.

For every assignment: the solved student version (full marks, nothing to report), the untouched one (zero) and a
submission of one kept wrong answer per exercise, on which the autograded notebook, the report and the gradebook
agree (each wrong answer loses exactly its exercise's points, with the message that names the mistake). That the
judge takes its points from every kept wrong answer is proven in test_wrong_answers.py; the sample submissions,
honest, tampered, faulty and hostile, in test_grading_samples.py.
"""

from dataclasses import dataclass

import pytest

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
from wrong_answers import wrong_answer_submissions

pytestmark = pytest.mark.grading

CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell (a short run while nbgrader grades it)


@dataclass
class Graded:
    class_folder: ClassFolder
    grades: dict[tuple[str, str], dict[str, str]]  # (student, assignment) → exported row
    outcomes: dict[tuple[str, str], Outcome]
    wrong: dict[str, Submission]  # assignment → the submission of one wrong answer per exercise
    before: dict[str, str]  # the class folder's files, but for what grading writes, before grading: path → hash


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    class_folder = ClassFolder.create(tmp_path_factory.mktemp("class") / "course")
    class_folder.write_student_versions()
    wrong = {}
    for assignment in assignments():
        released = class_folder.released(assignment)
        class_folder.submit("solutions", assignment, filled_in(released, solution_code(assignment)))
        class_folder.submit("untouched", assignment, released)
        wrong[assignment] = wrong_answer_submissions(assignment, released)[0]
        class_folder.submit(wrong[assignment].student, assignment, wrong[assignment].notebooks)
    before = class_files(class_folder.root)
    outcomes = class_folder.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    for assignment in assignments():
        class_folder.generate_feedback(assignment)
    rows = {(row["student_id"], row["assignment"]): row for row in grades(class_folder)}
    return Graded(class_folder, rows, {(o.student, o.assignment): o for o in outcomes}, wrong, before)


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
def test_untouched_student_versions_get_zero_and_fail_every_test(graded, assignment):
    assert float(graded.grades["untouched", assignment]["score"]) == 0
    failed = failed_in_nbgrader(graded.class_folder, "untouched", assignment)
    assert set(failed) == set(points_by_test(graded.class_folder.released(assignment)))
    assert {failure.error_type for failure in failed.values()} == {"NotImplementedYet"}, failed


@pytest.mark.parametrize("assignment", assignments())
def test_wrong_answers_lose_their_points_in_the_notebook_the_report_and_the_gradebook(graded, assignment):
    """A submission of one wrong answer per exercise: the autograded notebook fails exactly those exercises' tests,
    with the messages that name the mistakes (as in the wrong answers' trials, test_wrong_answers.py), the report
    says so, and the gradebook takes off exactly those tests' points."""
    submission = graded.wrong[assignment]
    failed = failed_in_nbgrader(graded.class_folder, submission.student, assignment)
    assert set(failed) == {answer.test_cell for answer in submission.wrong_answers}
    reported = {test.name: test.message for test in graded.outcomes[submission.student, assignment].tests}
    for answer in submission.wrong_answers:
        assert answer.message in failed[answer.test_cell].text, f"autograded: {failed[answer.test_cell]}"
        assert answer.message in reported[answer.test_cell]
    points = points_by_test(submission.notebooks)
    lost = sum(points[answer.test_cell] for answer in submission.wrong_answers)
    row = graded.grades[submission.student, assignment]
    assert float(row["score"]) == float(row["max_score"]) - lost


def test_the_class_folder_is_intact_but_for_what_grading_writes(graded):
    assert class_files(graded.class_folder.root) == graded.before


@pytest.mark.parametrize("assignment", assignments())
def test_no_feedback_shows_hidden_test_code_or_machine_paths(graded, assignment):
    assert_feedback_hides_tests_and_machine_paths(graded.class_folder, assignment)


@pytest.mark.parametrize("assignment", assignments())
def test_the_untouched_students_feedback_shows_no_solution_code(graded, assignment):
    solution = solution_lines_not_handed_out(assignment, list(solution_code(assignment)))
    assert solution
    (page,) = [path for path in feedback_files(graded.class_folder, assignment) if "untouched" in path.parts]
    assert [line for line in solution if line in feedback_text(page)] == []


def test_regrading_changes_nothing_in_the_gradebook(graded):
    before = gradebook_rows(graded.class_folder)
    again = [("solutions", assignments()[0]), ("untouched", assignments()[-1])]
    graded.class_folder.autograde(again, Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    assert gradebook_rows(graded.class_folder) == before
