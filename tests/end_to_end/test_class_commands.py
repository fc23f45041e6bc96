"""The commands learners and instructors type: grading one's own notebook, and collecting submissions."""

import os
import re
import shutil
import zipfile
from subprocess import CompletedProcess

import nbformat
import pytest

from autograder import cli
from autograder.class_folder import ClassFolder, submission_pattern
from autograder.repository import NOTEBOOKS, assignments
from autograder.samples import Assignment

pytestmark = pytest.mark.grading

FIRST = assignments()[0]
(NOTEBOOK,) = [path.name for path in (NOTEBOOKS / FIRST).glob("*.ipynb")]
STEM = NOTEBOOK.removesuffix(".ipynb")


@pytest.mark.parametrize(
    "path, student",
    [
        (f"extracted/alice/{NOTEBOOK}", "alice"),
        (f"extracted/alice_smith/{NOTEBOOK}", "alice_smith"),
        (f"extracted/download/bob_late_1234_5678_{STEM}-1.ipynb", "1234"),  # Canvas: the user id
        (f"extracted/download/smithbob_LATE_1234_5678_Copy of {STEM}.ipynb", "1234"),
        (f"extracted/download/bob_1234_{NOTEBOOK}", "bob"),  # one number: not Canvas' name
        (f"extracted/download/carol/{STEM} (2).ipynb", "carol"),
        ("extracted/dave/notes.ipynb", None),
    ],
)
def test_the_default_collect_pattern_finds_the_student(path, student):
    match = re.match(submission_pattern([NOTEBOOK]), f"/class/downloaded/{FIRST}/{path}")
    assert (match and match["student_id"]) == student
    assert match is None or match["file_id"] == STEM


def test_collect_takes_lms_zip_files_and_folders(tmp_path):
    class_folder = ClassFolder.create(tmp_path / "class")
    class_folder.write_student_versions([FIRST])
    notebook = nbformat.writes(class_folder.released(FIRST)[NOTEBOOK])
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as archive:
        archive.writestr(f"alice_1234_{NOTEBOOK}", notebook)
        archive.writestr(f"carol_99_{STEM} renamed.ipynb", notebook)
        archive.writestr("dave_12_notes.txt", "notes")
    (tmp_path / "folders" / "bob").mkdir(parents=True)
    (tmp_path / "folders" / "bob" / NOTEBOOK).write_text(notebook, encoding="utf-8")
    collected = class_folder.collect(FIRST, [tmp_path / "lms.zip", tmp_path / "folders"])
    assert collected.students == ["alice", "bob"]
    assert (class_folder.root / "submitted" / "alice" / FIRST / NOTEBOOK).read_text(encoding="utf-8") == notebook
    # Every file of the download is collected or listed with the reason it was not.
    assert sorted(collected.left_out) == [f"lms/carol_99_{STEM} renamed.ipynb", "lms/dave_12_notes.txt"]
    assert all("matches no notebook of this assignment" in reason for reason in collected.left_out.values())


def test_collect_names_the_files_of_two_students_with_the_same_name(tmp_path):
    class_folder = ClassFolder.create(tmp_path / "class")
    class_folder.write_student_versions([FIRST])
    with zipfile.ZipFile(tmp_path / "lms.zip", "w") as archive:  # an LMS that names students by name alone
        for upload in ("first", "second"):
            archive.writestr(f"alice_{upload}_{NOTEBOOK}", nbformat.writes(class_folder.released(FIRST)[NOTEBOOK]))
    with pytest.raises(ValueError, match=f"alice: lms/alice_first_{NOTEBOOK}, lms/alice_second_{NOTEBOOK}"):
        class_folder.collect(FIRST, [tmp_path / "lms.zip"])


def test_collect_refuses_an_unknown_assignment_before_writing_anything(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    class_folder.write_student_versions([FIRST])
    before = sorted(class_folder.root.rglob("*"))
    assert cli.main(["class", "collect", "01_typo", str(tmp_path), "--class-folder", str(class_folder.root)]) == 2
    assert "'01_typo' is not a released assignment of this class" in capsys.readouterr().err
    assert sorted(class_folder.root.rglob("*")) == before


def test_a_learner_grades_notebooks_without_changing_them_and_copies_of_one_name_each_count(tmp_path, capsys):
    path, copy = tmp_path / NOTEBOOK, tmp_path / "other student" / NOTEBOOK
    released = {NOTEBOOK: nbformat.read(NOTEBOOKS / FIRST / NOTEBOOK, as_version=4)}
    course = Assignment.of(FIRST, released)
    nbformat.write(course.first_unanswered(), path)
    copy.parent.mkdir()
    nbformat.write(released[NOTEBOOK], copy)  # nothing answered
    before = path.read_bytes()
    assert cli.main(["grade", str(path), str(copy), "--cell-timeout", "60"]) == 1  # not everything passed
    assert path.read_bytes() == before
    report = capsys.readouterr().out
    ours, theirs = report.split(f"{copy}\n")
    assert ours.count(f"{NOTEBOOK}:") == 1 and theirs.count(f"{NOTEBOOK}: 0 /") == 1, report
    first = course.answers[0]
    assert re.search(rf"{first}\s+0 / \d+\s+{first} is not implemented yet", ours), report
    assert all(re.search(rf"{test.removeprefix('test_')}\s+(\d+) / \1\s+✔", ours) for test in course.tests[1:]), report


def test_class_autograde_grades_only_new_or_changed_submissions(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    class_folder.write_student_versions([FIRST])
    released = class_folder.released(FIRST)
    class_folder.submit("alice", FIRST, released)
    command = ["class", "autograde", "--class-folder", str(class_folder.root), "--cell-timeout", "60", "--workers", "1"]

    def graded() -> list[str]:
        assert cli.main(command) == 0
        return re.findall(r"\] (\S+) · ", capsys.readouterr().out)

    assert graded() == ["alice"]
    class_folder.submit("bob", FIRST, released)
    assert graded() == ["bob"]  # alice's submission has not changed since she was graded
    solved = Assignment.of(FIRST, released).notebook_with()
    class_folder.submit("alice", FIRST, {NOTEBOOK: solved})
    assert graded() == ["alice"]  # she handed in again
    assert cli.main(command) == 0
    assert "Nothing new to grade." in capsys.readouterr().out


@pytest.mark.parametrize(
    "command",
    [
        ["student-versions", "01_typo"],
        ["autograde", FIRST, "01_typo"],
        ["feedback", "01_typo"],
        ["hand-out", FIRST, "01_typo"],
        ["due", "01_typo", "2027-03-01T23:59Z"],
        ["export", "01_typo"],
        ["export", "--canvas", "canvas.csv", "01_typo"],
        ["stats", "01_typo"],
        ["collect", "01_typo"],  # from the exchange
    ],
    ids=lambda command: command[0] + ("-canvas" if "--canvas" in command else ""),
)
def test_every_command_that_takes_an_assignment_refuses_an_unknown_one_before_doing_anything(tmp_path, capsys, command):
    class_folder = ClassFolder.create(tmp_path / "class")
    before = sorted(class_folder.root.rglob("*"))
    assert cli.main(["class", *command, "--class-folder", str(class_folder.root)]) == 2
    error = capsys.readouterr().err
    assert "'01_typo' is not an assignment of this class" in error and FIRST in error  # the known ones are listed
    assert sorted(class_folder.root.rglob("*")) == before


def test_a_collect_that_collects_nothing_fails_and_says_why(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    shutil.copytree(NOTEBOOKS / FIRST, class_folder.root / "release" / FIRST)
    second = assignments()[1]
    (other,) = [path.name for path in (NOTEBOOKS / second).glob("*.ipynb")]
    with zipfile.ZipFile(tmp_path / "download.zip", "w") as archive:  # the next assignment's download
        archive.writestr(f"alice_1234_{other}", "{}")
    command = ["class", "collect", FIRST, "--class-folder", str(class_folder.root)]
    assert cli.main([*command[:3], str(tmp_path / "download.zip"), *command[3:]]) == 1
    printed = capsys.readouterr().out
    assert f"alice_1234_{other}: it is a notebook of {second}, not of {FIRST}" in printed
    assert f"{FIRST}: nothing collected from this download" in printed
    assert cli.main([*command[:3], str(tmp_path / "no such.zip"), *command[3:]]) == 2
    assert "No such download" in capsys.readouterr().err


def test_a_collect_from_an_exchange_nobody_submitted_to_fails_and_says_why(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class", tmp_path / "exchange", "transformers")
    shutil.copytree(NOTEBOOKS / FIRST, class_folder.root / "release" / FIRST)
    command = ["class", "collect", FIRST, "--class-folder", str(class_folder.root)]
    assert cli.main(command) == 2  # before anything was handed out through it
    assert "nothing has been handed out through it" in capsys.readouterr().err
    (tmp_path / "exchange" / "transformers" / "inbound").mkdir(parents=True)  # as handing out makes it
    assert cli.main(command) == 1
    printed = capsys.readouterr().out
    assert f"{FIRST}: nothing collected: no student has submitted it through the exchange yet" in printed


def test_a_second_grading_of_one_class_is_refused_while_the_first_runs(tmp_path, capsys):
    class_folder = ClassFolder.create(tmp_path / "class")
    shutil.copytree(NOTEBOOKS / FIRST, class_folder.root / "release" / FIRST)
    class_folder.submit("alice", FIRST, class_folder.released(FIRST))
    command = ["class", "autograde", "--no-sandbox", "--class-folder", str(class_folder.root)]
    with class_folder.grading_lock():  # the first grading, in another process as far as the lock knows
        assert cli.main(command) == 2
    assert f"Another command is grading {class_folder.root} (process {os.getpid()})" in capsys.readouterr().err


def test_the_formgrader_passes_jupyterlabs_own_options_on(tmp_path, monkeypatch):
    class_folder = ClassFolder.create(tmp_path / "class")
    started = []
    monkeypatch.setattr(
        cli.subprocess, "run", lambda command, **_: started.append(command) or CompletedProcess(command, 0)
    )
    options = ["--no-browser", "--port", "8899"]
    assert cli.main(["class", "formgrader", *options, "--class-folder", str(class_folder.root)]) == 0
    assert started[0][-3:] == options
    with pytest.raises(SystemExit):  # other commands still refuse options they do not know
        cli.main(["class", "autograde", "--port", "8899"])
