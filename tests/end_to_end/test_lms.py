"""The round trip with the LMS (Canvas): a download collected by user id, the roster, due dates and the late
penalty, and the grades file Canvas imports."""

import csv
import json
import re
import shutil
import zipfile
from datetime import datetime

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder import cli
from autograder.class_folder import LATE_MARKS, STRAY, ClassFolder
from autograder.grades import Status
from autograder.grading import Limits
from autograder.late_penalty import DAY, late_penalty
from autograder.lms import CANVAS_STUDENT_COLUMNS, POINTS_POSSIBLE, RosterStudent, read_roster, roster_rows
from autograder.report import class_summary
from autograder.repository import NOTEBOOKS, assignments
from autograder.samples import Assignment
from class_records import grades

FIRST, SECOND = assignments()[:2]
(NOTEBOOK,) = [path.name for path in (NOTEBOOKS / FIRST).glob("*.ipynb")]
(SECOND_NOTEBOOK,) = [path.name for path in (NOTEBOOKS / SECOND).glob("*.ipynb")]
STEM = NOTEBOOK.removesuffix(".ipynb")

# Canvas' gradebook export: a byte-order mark, the Points Possible row, two students of the same name.
CANVAS_GRADEBOOK = (
    "\ufeffStudent,ID,SIS User ID,SIS Login ID,Section,Notebook 1 (7001)\n"
    "    Points Possible,,,,,10\n"
    '"Smith, Alice",1234,S-1,asmith@uni.example,Section A,\n'
    '"Smith, Alice",9876,S-2,alice.smith,Section B,\n'
    '"Student, Test",4242,,,Section A,\n'  # Canvas' Student View
)
NBGRADER_STUDENTS = "id,first_name,last_name,email\n5555,Bob,Jones,bob@uni.example\n,Nobody,Here,nobody@uni.example\n"


def test_the_late_penalty_is_a_share_of_the_score_per_started_day():
    assert late_penalty(10, 0, 0.1) == 0
    assert late_penalty(10, 1, 0.1) == pytest.approx(1)  # a second late is a started day
    assert late_penalty(10, DAY, 0.1) == pytest.approx(1)
    assert late_penalty(10, DAY + 1, 0.1) == pytest.approx(2)
    assert late_penalty(10, 30 * DAY, 0.1) == 10  # at most the whole score


def test_a_roster_is_nbgraders_student_csv_or_canvas_gradebook_export(tmp_path):
    (tmp_path / "canvas.csv").write_text(CANVAS_GRADEBOOK, encoding="utf-8")
    (tmp_path / "nbgrader.csv").write_text(NBGRADER_STUDENTS, encoding="utf-8")
    assert read_roster(tmp_path / "canvas.csv") == [
        RosterStudent("1234", "Alice", "Smith", "asmith@uni.example", "1234", "S-1", "asmith@uni.example", "Section A"),
        RosterStudent("9876", "Alice", "Smith", "", "9876", "S-2", "alice.smith", "Section B"),  # a login, no email
    ]
    assert read_roster(tmp_path / "nbgrader.csv") == [RosterStudent("5555", "Bob", "Jones", "bob@uni.example")]
    assert roster_rows(tmp_path / "canvas.csv")[1] == [
        "canvas.csv line 5: Canvas' Test Student (Student View), not a student"
    ]
    assert roster_rows(tmp_path / "nbgrader.csv")[1] == [
        "nbgrader.csv line 3: no id (Nobody, Here, nobody@uni.example)"
    ]
    (tmp_path / "other.csv").write_text("name,mail\nBob,bob@uni.example\n", encoding="utf-8")
    with pytest.raises(ValueError, match="neither nbgrader's student CSV"):
        read_roster(tmp_path / "other.csv")


@pytest.mark.grading
def test_collect_tells_canvas_students_apart_by_user_id_and_accounts_for_every_file(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    # Collecting needs only the student versions in release/: notebooks/ holds them (test_notebooks.py), and copying
    # them saves nbgrader's 5 s of generating them again.
    shutil.copytree(NOTEBOOKS / FIRST, class_folder.root / "release" / FIRST)
    released = class_folder.released(FIRST)[NOTEBOOK]
    resubmitted = Assignment.of(FIRST, {NOTEBOOK: released}).notebook_with()
    files = {
        f"smithalice_1234_101_{NOTEBOOK}": nbformat.writes(released),
        f"smithalice_9876_102_{NOTEBOOK}": nbformat.writes(released),  # another Alice Smith
        f"jonesbob_5555_103_{NOTEBOOK}": nbformat.writes(released),
        f"jonesbob_LATE_5555_204_{STEM}-1.ipynb": nbformat.writes(resubmitted),  # his late resubmission
        f"leecarol_7777_105_{STEM} final.ipynb": nbformat.writes(released),  # renamed: not a notebook of FIRST
        "leecarol_7777_106_notes.txt": "notes",
        f"__MACOSX/._smithalice_1234_101_{NOTEBOOK}": "resource fork",  # macOS' archiver
        ".DS_Store": "",
        f"leecarol_7777_107_{SECOND_NOTEBOOK}": nbformat.writes(released),  # the next assignment's notebook
    }
    with zipfile.ZipFile(tmp_path / "submissions.zip", "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    assert (
        cli.main(
            ["class", "collect", FIRST, str(tmp_path / "submissions.zip"), "--class-folder", str(class_folder.root)]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "collected 1234, 5555, 9876; 3 student(s) in submitted/ now" in printed
    assert "Marked late by the LMS (no submission time in the download): 5555" in printed
    submitted = class_folder.root / "submitted"
    assert (submitted / "5555" / FIRST / NOTEBOOK).read_text(encoding="utf-8") == nbformat.writes(resubmitted)
    assert not (submitted / "5555" / FIRST / "timestamp.txt").exists()  # Canvas' zip has no submission times
    # Every file: collected (three) or named with the reason it was not.
    not_collected = {name: reason for name, reason in re.findall(r"!! not collected: submissions/(.+?): (.+)", printed)}
    assert sorted(not_collected) == sorted(
        name for name in files if name.startswith(("jonesbob_5555", "leecarol", "__MACOSX", "."))
    )
    assert not_collected[f"jonesbob_5555_103_{NOTEBOOK}"].startswith("an earlier upload of 5555's")
    assert "matches no notebook" in not_collected[f"leecarol_7777_105_{STEM} final.ipynb"]
    assert not_collected[f"leecarol_7777_107_{SECOND_NOTEBOOK}"].startswith(f"it is a notebook of {SECOND}")
    assert not_collected[".DS_Store"] == not_collected[f"__MACOSX/._smithalice_1234_101_{NOTEBOOK}"] == STRAY
    assert json.loads((class_folder.root / LATE_MARKS).read_text(encoding="utf-8")) == {f"5555/{FIRST}": True}

    # Their feedback goes back in one zip, each page named as Canvas' Re-Upload Submissions matches it: the first two
    # numbers of the name are the user id and the id of the upload it answers.
    for student in ("1234", "5555", "9876"):
        page = class_folder.root / "feedback" / student / FIRST / f"{STEM}.html"
        page.parent.mkdir(parents=True)
        page.write_text(f"feedback for {student}", encoding="utf-8")
    command = ["class", "feedback", FIRST, "--canvas", str(tmp_path / "to-canvas")]
    assert cli.main([*command, "--class-folder", str(class_folder.root)]) == 0
    with zipfile.ZipFile(tmp_path / "to-canvas" / f"{FIRST}-feedback.zip") as bundle:
        names = {name: bundle.read(name).decode() for name in bundle.namelist()}
    assert names == {
        f"smithalice_1234_101_{STEM}.html": "feedback for 1234",
        f"jonesbob_LATE_5555_204_{STEM}.html": "feedback for 5555",  # his newest upload
        f"smithalice_9876_102_{STEM}.html": "feedback for 9876",
    }


@pytest.mark.grading
def test_a_due_date_needs_its_time_zone(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    assert cli.main(["class", "due", FIRST, "2027-03-01T23:59", "--class-folder", str(class_folder.root)]) == 2
    assert "is not an ISO time with its zone" in capsys.readouterr().err


@pytest.mark.grading
def test_a_late_submission_loses_the_penalty_in_gradebook_report_and_canvas_file(tmp_path, capsys):
    """The whole path: roster (both formats), due dates, a submission time, one real autograde, the exports."""
    class_folder = ClassFolder.create(tmp_path / "class")
    class_folder.write_student_versions([FIRST])
    (tmp_path / "canvas.csv").write_text(CANVAS_GRADEBOOK, encoding="utf-8")
    (tmp_path / "students.csv").write_text(NBGRADER_STUDENTS, encoding="utf-8")
    for command in (
        ["roster", str(tmp_path / "canvas.csv"), str(tmp_path / "students.csv")],
        ["due", FIRST, "2027-03-01T23:59+01:00"],
    ):
        assert cli.main(["class", *command, "--class-folder", str(class_folder.root)]) == 0
    assert "Imported 3 student(s)" in capsys.readouterr().out
    with class_folder.gradebook() as gradebook:  # as `class due` would, but without nbgrader's start-up time
        gradebook.update_or_create_assignment(SECOND)  # in the gradebook, but not handed out
    solved = Assignment.of(FIRST, class_folder.released(FIRST)).notebook_with()
    # nbgrader's timestamp.txt: 1 d 1 h 1 min after the due date (22:59 UTC), so two started days late.
    class_folder.submit("1234", FIRST, {NOTEBOOK: solved}, {"timestamp.txt": "2027-03-03 00:00:00+00:00"})
    (outcome,) = cli.graded_with_progress(class_folder, [("1234", FIRST)], Limits(cell_timeout=60, workers=1))
    score = sum(notebook.points for notebook in outcome.notebooks)
    assert score > 0 and outcome.graded, outcome.messages
    penalty = late_penalty(score, DAY + 3660, 0.1)
    assert penalty == pytest.approx(0.2 * score)  # the course's rule: 10 % per started day
    # The line printed as it finishes gives the grade exported, as the summary after it does.
    progress = f"1234 · {FIRST}: {score - penalty:g} / {outcome.max_points:g}, {score:g} less the late penalty"
    assert progress in capsys.readouterr().out

    with Gradebook(f"sqlite:///{class_folder.root / 'gradebook.db'}") as gradebook:
        assert gradebook.find_submission(FIRST, "1234").late_submission_penalty == pytest.approx(penalty)
    report = (class_folder.root / "reports" / "1234" / FIRST / "report.txt").read_text(encoding="utf-8")
    expected = f"submitted 2027-03-03 00:00 UTC, due 2027-03-01 22:59 UTC: 1 d 1 h 1 min late, late penalty {penalty:g}"
    assert expected in report, report

    rows = {row["student_id"]: row for row in grades(class_folder) if row["assignment"] == FIRST}
    assert (rows["9876"]["first_name"], rows["9876"]["last_name"], rows["9876"]["email"]) == ("Alice", "Smith", "")
    assert (rows["5555"]["last_name"], rows["5555"]["email"]) == ("Jones", "bob@uni.example")
    assert (rows["5555"]["status"], rows["5555"]["score"]) == ("not submitted", "")  # not a submitted 0
    assert (rows["1234"]["status"], float(rows["1234"]["score"])) == ("graded", pytest.approx(score - penalty))
    assert rows["1234"]["duedate"] == "2027-03-01 22:59:00+00:00"  # UTC, and it says so
    assert f"{score - penalty:g} / " in class_summary([outcome])  # the grade exported, after the late penalty

    assert (
        cli.main(
            ["class", "export", "--canvas", str(tmp_path / "to-canvas.csv"), "--class-folder", str(class_folder.root)]
        )
        == 0
    )
    with open(tmp_path / "to-canvas.csv", newline="", encoding="utf-8") as file:
        header, points_possible, *students = list(csv.reader(file))
    assert header == CANVAS_STUDENT_COLUMNS + ["Notebook 1 (7001)"]  # Canvas' own column; not SECOND: not handed out
    assert points_possible[0] == POINTS_POSSIBLE and float(points_possible[5]) == outcome.notebooks[0].max_points
    assert students == [
        ["Jones, Bob", "5555", "", "", "", ""],  # nothing handed in: no grade
        ["Smith, Alice", "1234", "S-1", "asmith@uni.example", "Section A", f"{score - penalty:g}"],
        ["Smith, Alice", "9876", "S-2", "alice.smith", "Section B", ""],
    ]

    # What the class got wrong names who was late and who has not handed in, and reads Canvas' late marks.
    (stats,) = class_folder.stats()
    assert (stats.late, stats.who(Status.NOT_SUBMITTED)) == (["1234"], ["5555", "9876"])
    (class_folder.root / LATE_MARKS).write_text(json.dumps({f"1234/{FIRST}": True}), encoding="utf-8")
    with class_folder.gradebook() as gradebook:
        assert [grade.marked_late for grade in class_folder.grades(gradebook, [FIRST])] == [False, True, False]


def test_canvas_gets_a_column_per_assignment_handed_out_in_course_order_whatever_the_due_dates(tmp_path):
    class_folder = ClassFolder.create(tmp_path / "class")
    (tmp_path / "canvas.csv").write_text(CANVAS_GRADEBOOK, encoding="utf-8")
    class_folder.import_roster([tmp_path / "canvas.csv"])
    third = assignments()[2]
    with class_folder.gradebook() as gradebook:  # handed out, the later one due first
        gradebook.update_or_create_assignment(third, duedate=datetime(2027, 2, 1))
        gradebook.update_or_create_assignment(FIRST, duedate=datetime(2027, 3, 1))
        gradebook.update_or_create_assignment(SECOND)  # not handed out: no due date, no submission

    def header() -> list[str]:
        class_folder.export_canvas(tmp_path / "to-canvas.csv")
        with open(tmp_path / "to-canvas.csv", newline="", encoding="utf-8") as file:
            return next(csv.reader(file))

    assert header() == CANVAS_STUDENT_COLUMNS + ["Notebook 1 (7001)", third]
    with class_folder.gradebook() as gradebook:  # as `class due` does, without nbgrader's start-up time
        gradebook.update_or_create_assignment(FIRST, duedate=datetime(2027, 4, 1))
    assert header() == CANVAS_STUDENT_COLUMNS + ["Notebook 1 (7001)", third]  # a new due date moves no column
