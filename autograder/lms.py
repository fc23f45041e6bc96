"""The round trip with the LMS (Canvas): which of a download's files is a student's newest upload (an nbgrader
collector plugin, set in nbgrader_config.py, so nbgrader's own zip_collect uses it too), the class roster,
and the grades file Canvas imports."""

import csv
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.plugins import FileNameCollectorPlugin

ROSTER = "roster.csv"  # in the class folder: every student imported, in nbgrader's columns and Canvas' own
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"  # Canvas' second row: the points of each assignment column


# --- collect ----------------------------------------------------------------------------------------------


def earlier_uploads(matches: dict[str, re.Match | None]) -> dict[str, str]:
    """Of the files read as one student's same notebook that carry an upload id (the pattern's `upload` group:
    Canvas' id of the uploaded file, which grows with every upload), each but the newest → the newest."""
    uploads = defaultdict(list)
    for name, match in matches.items():
        if match is not None and match.groupdict().get("upload"):
            uploads[match["student_id"], match["file_id"]].append((int(match["upload"]), name))
    earlier = {}
    for versions in uploads.values():
        newest = max(versions)[1]
        earlier |= {name: newest for _, name in versions if name != newest}
    return earlier


class NewestUpload(FileNameCollectorPlugin):
    """nbgrader's file-name collector that, of several uploads of one student's same notebook, collects only the
    newest by upload id (see earlier_uploads). Without upload ids nbgrader's own rule stays: the newest by the
    pattern's `timestamp` group, or stop."""

    _earlier: dict[str, str] | None = None

    def collect(self, submitted_file: str) -> dict | None:
        info = super().collect(submitted_file)
        if info is None or submitted_file not in self.earlier():
            return info
        self.log.warning("Skipped %s: an earlier upload than %s", submitted_file, self.earlier()[submitted_file])
        return None

    def earlier(self) -> dict[str, str]:
        if self._earlier is None:
            files = sorted(str(path) for path in self.extracted().rglob("*") if path.is_file())
            self._earlier = earlier_uploads({name: re.match(self.named_regexp, name) for name in files})
        return self._earlier

    def extracted(self) -> Path:
        """The folder zip_collect extracted the download into (its parent is the ZipCollectApp)."""
        app = self.parent
        structure = str(Path(app.coursedir.root) / app.collect_directory_structure)
        return Path(
            structure.format(
                downloaded=app.downloaded_directory,
                assignment_id=app.coursedir.assignment_id,
                collect_step=app.extracted_directory,
            )
        )


# --- roster -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RosterStudent:
    """A student as nbgrader's `db student import` reads them (its first five columns), with what Canvas' import
    can match them by besides the id."""

    id: str  # the LMS user id: the student's id in the class
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    lms_user_id: str = ""
    sis_user_id: str = ""
    sis_login_id: str = ""
    section: str = ""


ROSTER_COLUMNS = [column.name for column in fields(RosterStudent)]


def read_roster(path: Path) -> list[RosterStudent]:
    """The students of nbgrader's student CSV (id, first_name, last_name, email) or of Canvas' gradebook export
    (Student as "Last, First", ID, SIS User ID, SIS Login ID, Section, then the grades)."""
    with open(path, newline="", encoding="utf-8-sig") as file:  # Canvas' export starts with a byte-order mark
        reader = csv.DictReader(file)
        rows = [{key.strip(): (value or "").strip() for key, value in row.items() if key} for row in reader]
        columns = {column.strip() for column in reader.fieldnames or []}
    if "id" in columns:
        known = set(ROSTER_COLUMNS)
        return [RosterStudent(**{k: v for k, v in row.items() if k in known}) for row in rows if row["id"]]
    if {"Student", "ID"} <= columns:
        return [canvas_student(row) for row in rows if row["ID"].isdigit()]  # not the Points Possible row
    raise ValueError(
        f"{path} is neither nbgrader's student CSV (columns id,first_name,last_name,email) nor Canvas' gradebook "
        "export (columns Student, ID, SIS User ID, SIS Login ID, Section)"
    )


def canvas_student(row: dict[str, str]) -> RosterStudent:
    last, _, first = row["Student"].partition(",")
    login = row.get("SIS Login ID", "")
    return RosterStudent(
        id=row["ID"],
        first_name=first.strip(),
        last_name=last.strip(),
        email=login if "@" in login else "",  # Canvas exports no email; many schools' logins are one
        lms_user_id=row["ID"],
        sis_user_id=row.get("SIS User ID", ""),
        sis_login_id=login,
        section=row.get("Section", ""),
    )


def merge_roster(path: Path, students: list[RosterStudent]) -> None:
    """Add the students to the roster file, replacing earlier entries of the same ids (a section at a time works)."""
    by_id = {student.id: student for student in read_roster(path)} if path.exists() else {}
    by_id |= {student.id: student for student in students}
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, ROSTER_COLUMNS)
        writer.writeheader()
        writer.writerows(asdict(student) for student in by_id.values())


# --- grades back to Canvas --------------------------------------------------------------------------------


def write_canvas_gradebook(
    gradebook: Gradebook, assignments: list[str], roster: list[RosterStudent], path: Path
) -> None:
    """Canvas' gradebook import file: columns Student ("Last, First"), ID (the LMS user id), SIS User ID, SIS Login
    ID, Section, then one per assignment named, holding its score after the late penalty (empty where the student
    has no submission). The second row is Canvas' Points Possible row. Every student of the gradebook has a row."""
    columns = [assignment for assignment in gradebook.assignments if assignment.name in assignments]
    listed = {student.id: student for student in roster}
    students = sorted(
        gradebook.students, key=lambda student: (student.last_name or "", student.first_name or "", student.id)
    )
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CANVAS_STUDENT_COLUMNS + [assignment.name for assignment in columns])
        writer.writerow([POINTS_POSSIBLE, "", "", "", ""] + [points(assignment.max_score) for assignment in columns])
        for student in students:
            lms = listed.get(student.id, RosterStudent(student.id))
            name = ", ".join(part for part in (student.last_name, student.first_name) if part)
            scores = [score_after_penalty(gradebook, assignment.name, student.id) for assignment in columns]
            lms_id = lms.lms_user_id or student.id  # a class on JupyterHub knows students by their hub name
            writer.writerow([name, lms_id, lms.sis_user_id, lms.sis_login_id, lms.section, *scores])


def score_after_penalty(gradebook: Gradebook, assignment: str, student: str) -> str:
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:
        return ""  # no submission, no grade (Canvas' import lists any grade it would clear before it saves)
    return points(max(0.0, submission.score - (submission.late_submission_penalty or 0.0)))


def points(value: float) -> str:
    return f"{round(value, 2):g}"  # Canvas keeps two decimals
