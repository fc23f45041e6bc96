"""The course graded as an instructor grades it, in a class folder outside the checkout, through the autograder's
parallel path: nbgrader autogrades each (student, assignment) in a worker process, the sealed verification
checks it again, and the results are written into the class gradebook.

Graded in one batch, in the grading sandbox: for every assignment, the solved student version (full marks), the
untouched one (zero) and submissions carrying every kept wrong answer (each loses exactly its exercise's points,
with the message that names the mistake); for the first assignment, every sample submission
(autograder/samples.py), honest, tampered, faulty and hostile, each graded as it expects while nothing else in the
batch is affected: the class folder is intact but for what grading writes, no feedback shows hidden test code or
solution code, nothing reached the network and nothing outlived its job.
"""

import hashlib
import html
import re
import socket
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import psutil
import pytest

from autograder.course_directory import LEDGER, NOT_GRADED_FEEDBACK, REPORTS, CourseDirectory
from autograder.grading import Limits, Outcome
from autograder.pipeline import NOTEBOOKS, REPO, SOLUTIONS, assignments, nbgrader, notebook_paths
from autograder.report import class_summary
from autograder.samples import DAEMON_MARKER, Assignment, Sample, reports, samples
from autograder.submissions import filled_in, points_by_test, solution_code, wrong_answer_submissions
from autograder.wrong_answers import WrongAnswer, all_wrong_answers

pytestmark = pytest.mark.grading

CELL_TIMEOUT = 60.0  # notebook 08 trains in one cell; the infinite-loop sample costs this twice
FIRST = assignments()[0]
# A server on this machine's loopback that the network sample tries to reach; it must never hear from it.
LISTENER = socket.create_server(("127.0.0.1", 0))
RELEASED_FIRST = {path.name: nbformat.read(path, as_version=4) for path in (NOTEBOOKS / FIRST).glob("*.ipynb")}
SAMPLES = samples(FIRST, RELEASED_FIRST, listening_port=LISTENER.getsockname()[1])
# The rest of the class folder stays as it was.
WRITTEN_BY_GRADING = ("autograded", "feedback", "gradebook.db", "grades.csv", LEDGER, REPORTS)


@dataclass
class Graded:
    course: CourseDirectory
    grades: dict[tuple[str, str], dict[str, str]]  # (student, assignment) → exported row
    outcomes: dict[tuple[str, str], Outcome]
    wrong: dict[str, object]  # wrong answer label → the submission that carries it
    before: dict[str, str]  # the class folder's files, but for what grading writes, before grading: path → hash


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
    before = class_files(course.root)
    outcomes = course.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT))
    for assignment in assignments():
        course.generate_feedback(assignment)
    grades = {(row["student_id"], row["assignment"]): row for row in course.grades()}
    return Graded(course, grades, {(o.student, o.assignment): o for o in outcomes}, wrong, before)


def class_files(root: Path) -> dict[str, str]:
    """Every file of the class folder that grading does not write, with a hash of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.relative_to(root).parts[0] not in WRITTEN_BY_GRADING
    }


@pytest.mark.parametrize("assignment", assignments())
def test_solutions_get_full_marks_and_nothing_to_report(graded, assignment):
    row = graded.grades["solutions", assignment]
    assert graded.course.failed_tests("solutions", assignment) == {}
    assert float(row["score"]) == float(row["max_score"]) > 0
    assert graded.outcomes["solutions", assignment].messages == []  # the sealed run finds nothing amiss


@pytest.mark.parametrize("assignment", assignments())
def test_every_student_gets_feedback_with_the_exported_score(graded, assignment):
    files = graded.course.feedback_files(assignment)
    feedback = {
        path.parent.parent.name: path.read_text(encoding="utf-8") for path in files if path.name != NOT_GRADED_FEEDBACK
    }
    autograded = {path.name for path in (graded.course.root / "autograded").iterdir() if (path / assignment).is_dir()}
    assert set(feedback) == autograded
    # The others get a page with their report, which says why nbgrader did not grade them; everyone's report
    # lies beside their feedback.
    students = {student for student, graded_assignment in graded.outcomes if graded_assignment == assignment}
    assert {path.parent.parent.name for path in files if path.name == NOT_GRADED_FEEDBACK} == students - autograded
    assert all((path.parent / "report.txt").exists() for path in files)
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


def test_the_class_folder_is_intact_but_for_what_grading_writes(graded):
    assert class_files(graded.course.root) == graded.before


def test_nothing_reached_the_network_and_nothing_outlived_its_job(graded):
    LISTENER.setblocking(False)
    with pytest.raises(BlockingIOError):
        LISTENER.accept()  # no connection is waiting
    daemons = [
        process for process in psutil.process_iter(["cmdline"]) if DAEMON_MARKER in (process.info["cmdline"] or [])
    ]
    assert daemons == []


def feedback_text(path: Path) -> str:
    """A feedback file's text as a student reads it: tags and syntax highlighting removed."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def code_lines(source: str) -> set[str]:
    """The lines of code worth looking for elsewhere: long enough not to occur by chance."""
    return {
        line.strip() for line in source.splitlines() if len(line.strip()) >= 16 and not line.strip().startswith("#")
    }


def regions(source: str, begin: str, end: str) -> str:
    return "\n".join(re.findall(rf"### {begin}\n(.*?)### {end}", source, flags=re.DOTALL))


@pytest.mark.parametrize("assignment", assignments())
def test_no_feedback_shows_hidden_test_code_or_machine_paths(graded, assignment):
    source = "\n".join(
        cell.source for path in (SOLUTIONS / assignment).glob("*.ipynb") for cell in nbformat.read(path, 4).cells
    )
    visible = code_lines(re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", source, flags=re.DOTALL))
    hidden = code_lines(regions(source, "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")) - visible
    assert hidden, f"{assignment} has no hidden test line to look for"
    for path in graded.course.feedback_files(assignment):
        shown = feedback_text(path)
        assert [line for line in hidden if line in shown] == [], path
        assert str(REPO) not in shown and sys.prefix not in shown, f"{path} shows the grading machine's folders"


def test_no_feedback_shows_solution_code_its_student_did_not_write(graded):
    """The untouched student answered nothing; the samples that read the class or the solutions left the first
    exercise unanswered (and answered the others with the solutions)."""
    course = Assignment.of(FIRST, RELEASED_FIRST)
    released = code_lines("\n".join(cell.source for notebook in RELEASED_FIRST.values() for cell in notebook.cells))
    unanswered = {"untouched": course.answers}
    unanswered |= {
        sample.submission.student: course.answers[:1] for sample in SAMPLES if "reads" in sample.submission.student
    }
    for path in graded.course.feedback_files(FIRST):
        if exercises := unanswered.get(path.parent.parent.name):
            solution = set().union(*(code_lines(course.solutions[exercise]) for exercise in exercises)) - released
            assert solution
            assert [line for line in solution if line in feedback_text(path)] == [], path


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


def test_a_submission_nbgrader_could_not_grade_is_named_and_its_student_told_why(graded):
    outcome = graded.outcomes["sample-malformed", FIRST]
    assert not outcome.graded
    assert "COULD NOT BE GRADED" in class_summary([outcome])
    page = graded.course.root / "feedback" / "sample-malformed" / FIRST / NOT_GRADED_FEEDBACK
    assert "could not be read as a notebook" in page.read_text(encoding="utf-8")
