"""The class's collector from nbgrader's exchange (autograder/exchange.py): a folder that names one student but
another account made is left out, and the student's latest own folder is collected instead."""

import os
import pwd
import sys
from pathlib import Path

import pytest
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory

from autograder.exchange import OwnSubmissionsOnly

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="handing a folder to another account needs root")

ME = pwd.getpwuid(os.geteuid()).pw_name
ANOTHER_ACCOUNT = 4_000_321  # no account of this machine has it
EARLIER, LATER = "2026-01-01 10:00:00.000000 UTC", "2026-01-02 10:00:00.000000 UTC"


def handed_in(inbound: Path, student: str, time: str, tag: str, owner: int | None = None) -> str:
    folder = inbound / f"{student}+a+{time}+{tag}"
    folder.mkdir()
    if owner is not None:
        os.chown(folder, owner, owner)
    return folder.name


def chosen(tmp_path: Path, check_owner: bool = True) -> list[str]:
    course = tmp_path / "course"
    course.mkdir(exist_ok=True)
    collector = OwnSubmissionsOnly(
        coursedir=CourseDirectory(root=str(course), course_id="c", assignment_id="a"),
        authenticator=Authenticator(),
        root=str(tmp_path / "exchange"),
        check_owner=check_owner,
    )
    collector.init_src()
    return sorted(record["filename"] for record in collector.src_records)


@pytest.fixture
def inbound(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")  # nbgrader's alembic
    folder = tmp_path / "exchange" / "c" / "inbound"
    folder.mkdir(parents=True)
    return folder


def test_a_later_folder_another_account_made_in_a_students_name_is_left_out(tmp_path, inbound):
    own = handed_in(inbound, ME, EARLIER, "own")
    handed_in(inbound, ME, LATER, "forged", owner=ANOTHER_ACCOUNT)
    assert chosen(tmp_path) == [own]


def test_the_latest_of_a_students_own_folders_is_collected(tmp_path, inbound):
    handed_in(inbound, ME, EARLIER, "first")
    latest = handed_in(inbound, ME, LATER, "second")
    assert chosen(tmp_path) == [latest]


def test_a_student_with_only_forged_folders_has_nothing_collected(tmp_path, inbound):
    handed_in(inbound, "someone-else", LATER, "forged")  # made by this account, not theirs
    assert chosen(tmp_path) == []


def test_a_link_another_account_made_to_a_students_earlier_folder_is_left_out(tmp_path, inbound):
    earlier = handed_in(inbound, ME, EARLIER, "earlier")
    latest = handed_in(inbound, ME, LATER, "latest")
    link = inbound / f"{ME}+a+2026-01-09 10:00:00.000000 UTC+link"  # the latest time of all
    link.symlink_to(inbound / earlier)
    os.lchown(link, ANOTHER_ACCOUNT, ANOTHER_ACCOUNT)
    assert chosen(tmp_path) == [latest]


def test_without_check_owner_it_collects_as_nbgrader_does(tmp_path, inbound):
    handed_in(inbound, ME, EARLIER, "own")
    forged = handed_in(inbound, ME, LATER, "forged", owner=ANOTHER_ACCOUNT)
    assert chosen(tmp_path, check_owner=False) == [forged]
