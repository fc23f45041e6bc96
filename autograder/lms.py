"""The round trip with the LMS (Canvas): which of a download's files is a student's newest upload (an nbgrader
collector plugin, set in nbgrader_config.py, so nbgrader's own zip_collect uses it too), the class roster,
and the grades file Canvas imports."""

import csv
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from nbgrader.api import Gradebook
from nbgrader.plugins import FileNameCollectorPlugin

from autograder.grades import Grade, number

ROSTER = "roster.csv"  # in the class folder: every student imported, in nbgrader's columns and Canvas' own
CANVAS_STUDENT_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"  # Canvas' second row: the points of each assignment column
# Rows of Canvas' gradebook export that are no student: the points row, and the Test Student of its Student View.
CANVAS_NOT_STUDENTS = {POINTS_POSSIBLE, "Student, Test", "Test Student"}


# --- collect ----------------------------------------------------------------------------------------------

# Folders and files an archive carries besides the submissions: macOS' resource forks (__MACOSX/, ._name) and
# other hidden files (.DS_Store, .ipynb_checkpoints/). They are never a submission, even when named like one.
STRAY_FOLDERS = {"__MACOSX"}


def stray_file(path: str | Path) -> bool:
    """Whether a file of a download (its path in the extracted download) is one an archiver or an editor left, not
    a student's upload."""
    return any(part in STRAY_FOLDERS or part.startswith(".") for part in Path(path).parts)


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
        if stray_file(Path(submitted_file).relative_to(self.extracted())):
            self.log.warning("Skipped %s: a stray file, not a submission", submitted_file)
            return None
        info = super().collect(submitted_file)
        if info is None or submitted_file not in self.earlier():
            return info
        self.log.warning("Skipped %s: an earlier upload than %s", submitted_file, self.earlier()[submitted_file])
        return None

    def earlier(self) -> dict[str, str]:
        if self._earlier is None:
            extracted = self.extracted()
            files = sorted(
                str(path)
                for path in extracted.rglob("*")
                if path.is_file() and not stray_file(path.relative_to(extracted))
            )
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
    return roster_rows(path)[0]


def roster_rows(path: Path) -> tuple[list[RosterStudent], list[str]]:
    """The students of nbgrader's student CSV (id, first_name, last_name, email) or of Canvas' gradebook export
    (Student as "Last, First", ID, SIS User ID, SIS Login ID, Section, then the grades), and each row left out,
    with why: a row with no id, or Canvas' Test Student (its Student View, not a student)."""
    with open(path, newline="", encoding="utf-8-sig") as file:  # Canvas' export starts with a byte-order mark
        reader = csv.DictReader(file)
        rows = [{key.strip(): (value or "").strip() for key, value in row.items() if key} for row in reader]
        columns = {column.strip() for column in reader.fieldnames or []}
    students, skipped = [], []
    if "id" in columns:
        known = set(ROSTER_COLUMNS)
        for number, row in enumerate(rows, start=2):
            if row.get("id"):
                students.append(RosterStudent(**{k: v for k, v in row.items() if k in known}))
            else:
                skipped.append(f"{path.name} line {number}: no id ({', '.join(v for v in row.values() if v)})")
        return students, skipped
    if {"Student", "ID"} <= columns:
        for number, row in enumerate(rows, start=2):
            if row["Student"] in CANVAS_NOT_STUDENTS:
                if row["Student"] != POINTS_POSSIBLE:
                    skipped.append(f"{path.name} line {number}: Canvas' Test Student (Student View), not a student")
            elif row["ID"].isdigit():
                students.append(canvas_student(row))
            else:
                skipped.append(f"{path.name} line {number}: {row['Student'] or 'a row'} has no Canvas user id")
        return students, skipped
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

# Canvas names an assignment's column in its gradebook export "<title> (<assignment id>)"; its import updates the
# assignment a column names so, and creates a new assignment for any other name.
CANVAS_ASSIGNMENT_COLUMN = re.compile(r"^(?P<title>.+) \((?P<id>\d+)\)$")


def canvas_assignment_columns(path: Path) -> list[str]:
    """The assignment columns of Canvas' gradebook export (none in nbgrader's student CSV)."""
    with open(path, newline="", encoding="utf-8-sig") as file:
        header = next(csv.reader(file), [])
    return [column.strip() for column in header if CANVAS_ASSIGNMENT_COLUMN.match(column.strip())]


def canvas_columns(assignments: list[str], known: list[str]) -> dict[str, str]:
    """Each assignment's column in the import file: the one Canvas column whose title names it (its number, as in
    "Notebook 1", or its name, as in "Self-attention"), so that Canvas updates its own assignment; else the
    assignment's name, for which Canvas creates one."""
    columns = {}
    for assignment in assignments:
        number, _, name = assignment.partition("_")
        matches = [
            column for column in known if title_names(CANVAS_ASSIGNMENT_COLUMN.match(column)["title"], number, name)
        ]
        columns[assignment] = matches[0] if len(matches) == 1 else assignment
    return columns


def title_names(title: str, number: str, name: str) -> bool:
    """Whether a Canvas title names the course's assignment NN_name: its first number is NN, or it holds the name."""
    words = re.sub(r"[^a-z0-9]+", " ", title.lower()).split()
    numbers = [int(word) for word in words if word.isdigit()]
    return (bool(numbers) and numbers[0] == int(number)) or f" {name.replace('_', ' ')} " in f" {' '.join(words)} "


def write_canvas_gradebook(
    gradebook: Gradebook, grades: list[Grade], columns: dict[str, str], roster: list[RosterStudent], path: Path
) -> None:
    """Canvas' gradebook import file: columns Student ("Last, First"), ID (the LMS user id), SIS User ID, SIS Login
    ID, Section, then one per assignment (``columns``: assignment → its column), in course order, holding the score
    after the late penalty: empty where there is none (not submitted, or not graded), as Canvas' import leaves such
    a cell alone. The second row is Canvas' Points Possible row. Every student of the gradebook has a row."""
    assignments = sorted(columns)
    listed = {student.id: student for student in roster}
    by_student: dict[str, dict[str, Grade]] = {}
    for grade in grades:
        by_student.setdefault(grade.student, {})[grade.assignment] = grade
    possible = {grade.assignment: grade.max_score for grade in grades}
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CANVAS_STUDENT_COLUMNS + [columns[assignment] for assignment in assignments])
        writer.writerow([POINTS_POSSIBLE, "", "", "", ""] + [number(possible.get(name)) for name in assignments])
        names = {student.id: (student.last_name, student.first_name) for student in gradebook.students}
        for student, their in by_student.items():
            lms = listed.get(student, RosterStudent(student))
            name = ", ".join(part for part in names[student] if part)
            lms_id = lms.lms_user_id or student  # a class on JupyterHub knows students by their hub name
            scores = [number(their[assignment].score) for assignment in assignments]
            writer.writerow([name, lms_id, lms.sis_user_id, lms.sis_login_id, lms.section, *scores])
