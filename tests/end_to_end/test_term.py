"""A whole term of a class, on one machine: a roster with LMS ids and a due date, hand out, students fetch and submit
through nbgrader's exchange (and one through an LMS download), collect with every file accounted for, autograde
through the course's command and through the formgrader's own path with identical grades, the LMS's import file,
grade again only what changed, release feedback for students to fetch.

The students are two identities of nbgrader's (``--student``), each with a home folder of their own, run as this
machine's user: on this machine the course's Python lies under /root, which no other account may enter, so real
accounts could not run it. Their files cross only through the exchange folder.
"""

import csv
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from nbgrader.api import Gradebook
from playwright.sync_api import sync_playwright

import course
from autograder import cli
from autograder.class_folder import ClassFolder
from autograder.grading import Limits
from autograder.repository import assignments, this_python_first
from autograder.samples import samples
from browsers import CHROMIUM_FLAGS, require_chromium
from cores import grading_workers

pytestmark = pytest.mark.grading

FIRST = assignments()[0]
COURSE_ID = "transformers"
CELL_TIMEOUT = 60.0
# Who hands in what: a solved notebook, and one that passes in the kernel by replacing torch.allclose.
HANDED_IN = {"alice": "sample-full-marks", "bob": "sample-torch-allclose", "carol": "sample-partial"}
THROUGH_EXCHANGE = ("alice", "bob")
LMS_IDS = {"alice": "101", "bob": "102", "carol": "103"}  # their user ids in Canvas, from the roster
# The formgrader's Autograde button calls NbGraderAPI.autograde in the Jupyter server's process, with the
# configuration the server read from the class folder: this does the same, for one student.
FORMGRADER_AUTOGRADE = """
import sys
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory
from traitlets.config.loader import PyFileConfigLoader

config = PyFileConfigLoader("nbgrader_config.py", path=".").load_config()
result = NbGraderAPI(CourseDirectory(config=config), config=config).autograde(sys.argv[1], sys.argv[2], force=True)
sys.exit(0 if result["success"] else result["error"])
"""


def as_student(student: str, home: Path, exchange: Path, *args: str) -> None:
    """An nbgrader command as a student runs it on the hub: in their home, with the hub's exchange settings."""
    settings = [f"--Exchange.root={exchange}", f"--CourseDirectory.course_id={COURSE_ID}", f"--student={student}"]
    env = {**this_python_first(), "HOME": str(home)}
    subprocess.run([sys.executable, "-m", "nbgrader", *args, *settings], cwd=home, env=env, check=True)


def hand_in(student: str, home: Path, exchange: Path, notebooks: dict) -> None:
    if not (home / FIRST).exists():  # handing in again, a student edits the copy they fetched
        as_student(student, home, exchange, "fetch_assignment", FIRST)
    for name, notebook in notebooks.items():
        nbformat.write(notebook, home / FIRST / name)
    as_student(student, home, exchange, "submit", FIRST)


def scores(root: Path) -> dict[tuple[str, str], float]:
    """Every graded cell's score in a class's gradebook, by (student, grade_id)."""
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
        submission_notebooks = [
            notebook
            for student in gradebook.students
            for submission in student.submissions
            for notebook in submission.notebooks
        ]
        return {
            (notebook.student.id, grade.name): grade.score
            for notebook in submission_notebooks
            for grade in notebook.grades
        }


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    base = tmp_path_factory.mktemp("term")
    exchange = base / "exchange"
    class_folder = ClassFolder.create(base / "class", exchange, COURSE_ID)
    with (class_folder.root / "nbgrader_config.py").open("a", encoding="utf-8") as config:
        config.write("c.ExchangeCollect.check_owner = False  # its students are identities of this one account\n")
    class_folder.write_student_versions([FIRST])
    class_folder.hand_out(FIRST)
    notebooks = {
        sample.submission.student: sample.submission.notebooks
        for sample in samples(FIRST, class_folder.released(FIRST))
    }
    for student in THROUGH_EXCHANGE:
        (base / student).mkdir()
        hand_in(student, base / student, exchange, notebooks[HANDED_IN[student]])
    download = base / "download.zip"
    with zipfile.ZipFile(download, "w") as archive:
        for name, notebook in notebooks[HANDED_IN["carol"]].items():
            archive.writestr(f"carol/{name}", nbformat.writes(notebook))
    roster = base / "roster.csv"
    rows = [f"{student},{student.title()},Student,{student}@example.org,{LMS_IDS[student]}" for student in HANDED_IN]
    roster.write_text("\n".join(["id,first_name,last_name,email,lms_user_id", *rows]) + "\n", encoding="utf-8")
    class_folder.import_roster([roster])
    class_folder.set_due(FIRST, "2099-01-01T00:00:00+00:00")  # every submission on time: no penalty
    from_exchange = class_folder.collect_from_exchange(FIRST)
    from_lms = class_folder.collect(FIRST, [download])
    outcomes = class_folder.autograde(limits=Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers()))
    return base, exchange, class_folder, from_exchange, from_lms, outcomes


def test_every_submission_is_collected_from_the_exchange_and_the_download(term):
    _, _, class_folder, from_exchange, from_lms, outcomes = term
    assert from_exchange == list(THROUGH_EXCHANGE)
    assert from_lms.left_out == {}
    assert class_folder.submissions([FIRST]) == [(student, FIRST) for student in sorted(HANDED_IN)]
    assert all(outcome.graded for outcome in outcomes)


def test_the_formgraders_autograde_gives_the_same_grades_as_the_course_command(term):
    base, _, class_folder, *_ = term
    copy = base / "formgrader"
    shutil.copytree(class_folder.root, copy)
    config = copy / "nbgrader_config.py"
    config.write_text(config.read_text(encoding="utf-8").replace(str(class_folder.root), str(copy)), encoding="utf-8")
    for student in HANDED_IN:
        subprocess.run([sys.executable, "-c", FORMGRADER_AUTOGRADE, FIRST, student], cwd=copy, check=True)
    by_course, by_formgrader = scores(class_folder.root), scores(copy)
    assert by_formgrader == by_course
    tampered = [score for (student, _), score in by_course.items() if student == "bob"]
    solved = [score for (student, _), score in by_course.items() if student == "alice"]
    assert sum(tampered) < sum(solved)  # replacing torch.allclose earned nothing in either path


def test_the_lms_gets_an_import_file_with_every_students_grade(term):
    base, _, class_folder, *_ = term
    assert class_folder.export_canvas(base / "canvas.csv") == {FIRST: FIRST}  # a roster of no Canvas export
    with open(base / "canvas.csv", newline="", encoding="utf-8") as file:
        header, possible, *rows = list(csv.reader(file))
    assert header == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", FIRST]  # only what was handed out
    totals = {
        student: sum(score for (who, _), score in scores(class_folder.root).items() if who == student)
        for student in HANDED_IN
    }
    assert {row[1]: (row[0], float(row[-1])) for row in rows} == {
        LMS_IDS[student]: (f"Student, {student.title()}", total) for student, total in totals.items()
    }


def test_grading_again_grades_only_a_new_submission(term):
    base, exchange, class_folder, *_ = term
    limits = Limits(cell_timeout=CELL_TIMEOUT, workers=grading_workers())
    assert class_folder.changed(class_folder.submissions([FIRST]), limits) == []
    resubmission = next(sample for sample in samples(FIRST, class_folder.released(FIRST)) if sample.earns)
    hand_in("bob", base / "bob", exchange, resubmission.submission.notebooks)
    assert class_folder.collect_from_exchange(FIRST) == list(THROUGH_EXCHANGE)  # not carol, from the LMS
    assert class_folder.changed(class_folder.submissions([FIRST]), limits) == [("bob", FIRST)]


def test_students_fetch_their_own_feedback_from_the_exchange(term):
    base, exchange, class_folder, *_ = term
    class_folder.generate_feedback(FIRST)
    class_folder.release_feedback(FIRST)
    as_student("alice", base / "alice", exchange, "fetch_feedback", FIRST)
    pages = list((base / "alice" / FIRST / "feedback").rglob("*.html"))
    assert [page.name for page in pages] == [
        f"{name.removesuffix('.ipynb')}.html" for name in class_folder.released(FIRST)
    ]


def test_the_instructor_sees_what_the_class_got_wrong_in_a_table_and_a_page(term, capsys):
    base, _, class_folder, *_ = term
    page_path = base / "stats.html"
    assert cli.main(["class", "stats", "--to", str(page_path), "--class-folder", str(class_folder.root)]) == 0
    printed = capsys.readouterr().out
    graded = scores(class_folder.root)
    with Gradebook(f"sqlite:///{class_folder.root / 'gradebook.db'}") as gradebook:
        tests = {
            cell.name: cell.max_score
            for notebook in gradebook.find_assignment(FIRST).notebooks
            for cell in notebook.grade_cells
        }
    for test, max_score in tests.items():  # the share of full marks, counted from the gradebook here
        full = sum(graded[student, test] >= max_score for student in HANDED_IN)
        assert re.search(rf"{test.removeprefix('test_')}\s+full marks\s+{full}/{len(HANDED_IN)}", printed), printed
    assert f"{FIRST}: {len(HANDED_IN)} graded, 0 not submitted" in printed
    (stats,) = class_folder.stats()
    unanswered = [exercise for exercise in stats.exercises if exercise.full_marks < len(HANDED_IN)]
    assert unanswered
    for exercise in unanswered:  # each student who lost points is counted under the message the check gave them
        assert sum(exercise.messages.values()) == exercise.graded - exercise.full_marks, exercise.messages

    require_chromium()
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(course.CHROMIUM), args=CHROMIUM_FLAGS)
        try:
            page = chromium.new_page()
            page.goto(page_path.as_uri())
            assert page.locator("h2").inner_text() == FIRST
            assert page.locator("tr").count() == 1 + len(tests)  # a row per exercise, under the header
            assert page.locator("img").evaluate("image => image.complete && image.naturalWidth > 0")  # the histogram
            for exercise in unanswered:  # its row lists the messages with how many students saw each
                row = page.locator("tr", has_text=exercise.name).first.inner_text()
                message, count = exercise.messages.most_common(1)[0]
                assert f"({count}) {message}" in row, row
            page.screenshot(path=base / "stats.png", full_page=True)
        finally:
            chromium.close()
