"""The course graded as an instructor grades it, with nbgrader, in a course directory outside the checkout.

Submitted: the solution notebooks as they are (full marks), the untouched student versions (zero), and
submissions carrying every kept wrong answer (each loses exactly the points of its own exercise, and
its test cell shows the message that names the mistake).
"""

import pytest

from autograder.course_directory import CourseDirectory
from autograder.pipeline import NOTEBOOKS, SOLUTIONS, assignments, nbgrader, notebook_paths
from autograder.submissions import points_by_test, solution_notebooks, wrong_answer_submissions
from autograder.wrong_answers import WrongAnswer, all_wrong_answers

pytestmark = pytest.mark.grading


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """A course directory in which every submission has been autograded; returns it and the submissions."""
    course = CourseDirectory.create(tmp_path_factory.mktemp("class") / "course")
    course.release()
    wrong = {}
    for assignment in assignments():
        course.submit("solutions", assignment, solution_notebooks(assignment))
        course.submit("untouched", assignment, course.released(assignment))
        for submission in wrong_answer_submissions(assignment, course.released(assignment)):
            course.submit(submission.student, assignment, submission.notebooks)
            wrong |= {answer.label: submission for answer in submission.wrong_answers}
        course.autograde(assignment)
        course.generate_feedback(assignment)
    grades = {(row["student_id"], row["assignment"]): row for row in course.grades()}
    return course, grades, wrong


@pytest.mark.parametrize("assignment", assignments())
def test_solutions_get_full_marks(graded, assignment):
    course, grades, _ = graded
    row = grades["solutions", assignment]
    assert course.failed_tests("solutions", assignment) == {}
    assert float(row["score"]) == float(row["max_score"]) > 0


@pytest.mark.parametrize("assignment", assignments())
def test_every_student_gets_feedback_with_the_exported_score(graded, assignment):
    course, grades, _ = graded
    files = course.feedback_files(assignment)
    feedback = {path.parent.parent.name: path.read_text(encoding="utf-8") for path in files}
    submitted = {path.name for path in (course.root / "submitted").iterdir() if (path / assignment).is_dir()}
    assert set(feedback) == submitted
    for student in submitted:
        row = grades[student, assignment]
        total = f"Score: {float(row['score']):.1f} / {float(row['max_score']):.1f}"
        assert total in feedback[student], f"{student}'s feedback lacks {total!r}"


@pytest.mark.parametrize("assignment", assignments())
def test_untouched_student_versions_get_zero_and_fail_every_test(graded, assignment):
    course, grades, _ = graded
    assert float(grades["untouched", assignment]["score"]) == 0
    failed = course.failed_tests("untouched", assignment)
    assert set(failed) == set(points_by_test(solution_notebooks(assignment)))
    assert all("is not implemented yet" in error for error in failed.values()), failed


@pytest.mark.parametrize("answer", all_wrong_answers(), ids=lambda answer: answer.label)
def test_wrong_answer_loses_its_exercise_points_with_a_message(graded, answer: WrongAnswer):
    course, grades, wrong = graded
    submission = wrong[answer.label]
    failed = course.failed_tests(submission.student, answer.assignment)
    assert answer.test_cell in failed, f"{answer.mistake} passed {answer.test_cell}"
    assert answer.message in failed[answer.test_cell]
    # Every exercise is graded on its own: only the exercises given wrong answers lose points.
    points = points_by_test(submission.notebooks)
    lost = sum(points[other.test_cell] for other in submission.wrong_answers)
    row = grades[submission.student, answer.assignment]
    assert set(failed) == {other.test_cell for other in submission.wrong_answers}
    assert float(row["score"]) == float(row["max_score"]) - lost


def test_nbgrader_validate_passes_on_every_solution_notebook():
    result = nbgrader("validate", *map(str, notebook_paths(SOLUTIONS)))
    assert "ERROR" not in result.stdout and "VALIDATION FAILED" not in result.stdout, result.stdout
    assert result.stdout.count("Success! Your notebook passes all the tests.") == len(notebook_paths(SOLUTIONS))


def test_nbgrader_validate_invert_finds_every_test_failing_on_student_versions():
    result = nbgrader("validate", "--invert", *map(str, notebook_paths(NOTEBOOKS)))
    assert "PASSED" not in result.stdout, result.stdout
    assert result.stdout.count("Success!") == len(notebook_paths(NOTEBOOKS)), result.stdout
