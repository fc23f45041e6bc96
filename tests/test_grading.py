"""The course graded as an instructor grades it, in a class folder outside the checkout, through the autograder's
parallel path: nbgrader autogrades each (student, assignment) in a worker process, the sealed verification
checks it again, and the results are written into the class gradebook.

Graded in one batch: for every assignment, the solved student version (full marks), the untouched one (zero) and
submissions carrying every kept wrong answer (each loses exactly its exercise's points, with the message that
names the mistake); for the first assignment, every sample submission (autograder/samples.py), honest, tampered
and faulty, each graded as it expects while nothing else in the batch is affected.
"""

import sqlite3
from dataclasses import dataclass

import nbformat
import pytest

from autograder.course_directory import CourseDirectory
from autograder.grading import Limits, Outcome
from autograder.pipeline import NOTEBOOKS, SOLUTIONS, assignments, nbgrader, notebook_paths
from autograder.samples import Sample, reports, samples
from autograder.submissions import filled_in, points_by_test, solution_code, wrong_answer_submissions
from autograder.wrong_answers import WrongAnswer, all_wrong_answers

pytestmark = pytest.mark.grading

CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell; the infinite-loop sample costs this twice
FIRST = assignments()[0]
SAMPLES = samples(FIRST, {path.name: nbformat.read(path, as_version=4) for path in (NOTEBOOKS / FIRST).glob("*.ipynb")})


@dataclass
class Graded:
    course: CourseDirectory
    grades: dict[tuple[str, str], dict[str, str]]  # (student, assignment) → exported row
    outcomes: dict[tuple[str, str], Outcome]
    wrong: dict[str, object]  # wrong answer label → the submission that carries it


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> Graded:
    course = CourseDirectory.create(tmp_path_factory.mktemp("class") / "course")
    course.release()
    wrong = {}
    for assignment in assignments():
        released = course.released(assignment)
        course.submit("solutions", assignment, filled_in(released, solution_code(assignment)))
        course.submit("untouched", assignment, released)
        for submission in wrong_answer_submissions(assignment, released):
            course.submit(submission.student, assignment, submission.notebooks)
            wrong |= {answer.label: submission for answer in submission.wrong_answers}
    for sample in SAMPLES:
        course.submit(sample.submission.student, FIRST, sample.submission.notebooks, sample.submission.files)
    outcomes = course.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT))
    for assignment in assignments():
        course.generate_feedback(assignment)
    grades = {(row["student_id"], row["assignment"]): row for row in course.grades()}
    return Graded(course, grades, {(o.student, o.assignment): o for o in outcomes}, wrong)


@pytest.mark.parametrize("assignment", assignments())
def test_solutions_get_full_marks_and_nothing_to_report(graded, assignment):
    row = graded.grades["solutions", assignment]
    assert graded.course.failed_tests("solutions", assignment) == {}
    assert float(row["score"]) == float(row["max_score"]) > 0
    assert graded.outcomes["solutions", assignment].messages == []  # the sealed run finds nothing amiss


@pytest.mark.parametrize("assignment", assignments())
def test_every_student_gets_feedback_with_the_exported_score(graded, assignment):
    files = graded.course.feedback_files(assignment)
    feedback = {path.parent.parent.name: path.read_text(encoding="utf-8") for path in files}
    autograded = {path.name for path in (graded.course.root / "autograded").iterdir() if (path / assignment).is_dir()}
    assert set(feedback) == autograded
    for student in autograded:
        row = graded.grades[student, assignment]
        total = f"Score: {float(row['score']):.1f} / {float(row['max_score']):.1f}"
        assert total in feedback[student], f"{student}'s feedback lacks {total!r}"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_student_versions_get_zero_and_fail_every_test(graded, assignment):
    assert float(graded.grades["untouched", assignment]["score"]) == 0
    failed = graded.course.failed_tests("untouched", assignment)
    assert set(failed) == set(points_by_test(graded.course.released(assignment)))
    assert all("is not implemented yet" in error for error in failed.values()), failed


@pytest.mark.parametrize("answer", all_wrong_answers(), ids=lambda answer: answer.label)
def test_wrong_answer_loses_its_exercise_points_with_a_message(graded, answer: WrongAnswer):
    submission = graded.wrong[answer.label]
    failed = graded.course.failed_tests(submission.student, answer.assignment)
    assert answer.test_cell in failed, f"{answer.mistake} passed {answer.test_cell}"
    assert answer.message in failed[answer.test_cell]
    reported = {test.name: test.message for test in graded.outcomes[submission.student, answer.assignment].tests}
    assert answer.message in reported[answer.test_cell]
    # Every exercise is graded on its own: only the exercises given wrong answers lose points.
    points = points_by_test(submission.notebooks)
    lost = sum(points[other.test_cell] for other in submission.wrong_answers)
    row = graded.grades[submission.student, answer.assignment]
    assert set(failed) == {other.test_cell for other in submission.wrong_answers}
    assert float(row["score"]) == float(row["max_score"]) - lost


@pytest.mark.parametrize("sample", SAMPLES, ids=lambda sample: sample.submission.student)
def test_sample_earns_what_it_should_and_the_report_says_what_happened(graded, sample: Sample):
    outcome = graded.outcomes[sample.submission.student, FIRST]
    earned = {test.name for test in outcome.tests if test.points == test.max_points > 0}
    assert earned == sample.earns, outcome.messages
    assert reports(outcome, sample.reported), outcome.messages
    row = graded.grades[sample.submission.student, FIRST]
    assert float(row["score"]) == sum(test.points for test in outcome.tests)  # the gradebook agrees


def test_a_test_the_sealed_run_overrules_shows_why_in_the_feedback(graded):
    student = next(sample.submission.student for sample in SAMPLES if "replaced transformer_course" in sample.reported)
    overruled = [test for test in graded.outcomes[student, FIRST].tests if test.overruled]
    assert overruled, "the replaced check passed in nbgrader's kernel, so the sealed run must overrule it"
    (feedback,) = [path for path in graded.course.feedback_files(FIRST) if path.parent.parent.name == student]
    shown = feedback.read_text(encoding="utf-8")
    assert all(f"SealedVerification: {test.message}" in shown for test in overruled)


def test_regrading_changes_nothing_in_the_gradebook(graded):
    before = gradebook_rows(graded.course)
    again = [(sample.submission.student, FIRST) for sample in SAMPLES[:2]] + [("solutions", assignments()[-1])]
    graded.course.autograde(again, Limits(cell_timeout=CELL_TIMEOUT))
    assert gradebook_rows(graded.course) == before


def gradebook_rows(course: CourseDirectory) -> list[tuple]:
    """Every grade row of the class gradebook: its id, whose and which cell it is, and its scores. A lost,
    duplicated or re-created grade changes this list."""
    with sqlite3.connect(course.root / "gradebook.db") as database:
        return database.execute(
            """select grade.id, submitted_assignment.student_id, assignment.name, notebook.name, base_cell.name,
                      grade.auto_score, grade.manual_score, grade.needs_manual_grade
               from grade
               join submitted_notebook on grade.notebook_id = submitted_notebook.id
               join submitted_assignment on submitted_notebook.assignment_id = submitted_assignment.id
               join assignment on submitted_assignment.assignment_id = assignment.id
               join notebook on submitted_notebook.notebook_id = notebook.id
               join base_cell on grade.cell_id = base_cell.id
               order by 2, 3, 4, 5"""
        ).fetchall()


def test_nbgrader_validate_passes_on_every_solution_notebook():
    result = nbgrader("validate", *map(str, notebook_paths(SOLUTIONS)))
    assert "ERROR" not in result.stdout and "VALIDATION FAILED" not in result.stdout, result.stdout
    assert result.stdout.count("Success! Your notebook passes all the tests.") == len(notebook_paths(SOLUTIONS))


def test_nbgrader_validate_invert_finds_every_test_failing_on_student_versions():
    result = nbgrader("validate", "--invert", *map(str, notebook_paths(NOTEBOOKS)))
    assert "PASSED" not in result.stdout, result.stdout
    assert result.stdout.count("Success!") == len(notebook_paths(NOTEBOOKS)), result.stdout
