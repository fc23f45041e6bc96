"""A class's grades as they leave it: one per student and assignment handed out, each with its status (graded, not
submitted, could not be graded) and its score after the late penalty, for grades.csv and Canvas' import file."""

import csv
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

# In the class folder: "<student>/<assignment>" of each submission whose last grading could not grade it. The
# gradebook may still hold a score from an earlier grading, or a partial one: it is not the grade.
NOT_GRADED = "not-graded.json"


class Status(Enum):
    GRADED = "graded"
    NOT_SUBMITTED = "not submitted"
    NOT_GRADED = "could not be graded"  # its report says why; the instructor grades it by hand


@dataclass(frozen=True)
class Grade:
    student: str
    assignment: str
    status: Status
    max_score: float
    raw_score: float | None = None  # before the late penalty
    penalty: float | None = None
    due: datetime | None = None  # UTC, with its zone
    submitted: datetime | None = None
    marked_late: bool = False  # the LMS's download marked it late (Canvas: a download has no submission times)

    @property
    def late(self) -> bool:
        """Handed in after its due date, or marked late by the LMS."""
        if self.status is Status.NOT_SUBMITTED:
            return False
        return self.marked_late or bool(self.submitted and self.due and self.submitted > self.due)

    @property
    def score(self) -> float | None:
        """The grade: the score after the late penalty, never below 0; none unless graded."""
        if self.status is not Status.GRADED:
            return None
        return max(0.0, self.raw_score - (self.penalty or 0.0))


def handed_out(gradebook: Gradebook) -> list[str]:
    """The assignments the class has handed out, in course order: those with a due date or a submission. (Writing
    the student versions registers every assignment in the gradebook, handed out or not.)"""
    return sorted(
        assignment.name for assignment in gradebook.assignments if assignment.duedate or assignment.submissions
    )


def class_grades(
    gradebook: Gradebook, assignments: list[str], not_graded: set[str], marked_late: frozenset[str] = frozenset()
) -> list[Grade]:
    """Every student's grade in each assignment, student by student in the gradebook's order of names.
    ``not_graded`` and ``marked_late`` hold "<student>/<assignment>" keys."""
    students = sorted(
        gradebook.students, key=lambda student: (student.last_name or "", student.first_name or "", student.id)
    )
    return [
        grade(gradebook, student.id, assignment, not_graded, f"{student.id}/{assignment}" in marked_late)
        for student in students
        for assignment in assignments
    ]


def grade(gradebook: Gradebook, student: str, name: str, not_graded: set[str], marked_late: bool = False) -> Grade:
    assignment = gradebook.find_assignment(name)
    due = utc(assignment.duedate)
    try:
        submission = gradebook.find_submission(name, student)
    except MissingEntry:
        return Grade(student, name, Status.NOT_SUBMITTED, assignment.max_score, due=due)
    submitted = utc(submission.timestamp)
    if f"{student}/{name}" in not_graded:
        return Grade(
            student,
            name,
            Status.NOT_GRADED,
            assignment.max_score,
            due=due,
            submitted=submitted,
            marked_late=marked_late,
        )
    return Grade(
        student,
        name,
        Status.GRADED,
        assignment.max_score,
        raw_score=submission.score,
        penalty=submission.late_submission_penalty or 0.0,
        due=due,
        submitted=submitted,
        marked_late=marked_late,
    )


def utc(moment: datetime | None) -> datetime | None:
    """nbgrader keeps times in UTC without their zone."""
    return moment.replace(tzinfo=UTC) if moment is not None else None


def read_not_graded(root: Path) -> set[str]:
    path = root / NOT_GRADED
    return set(json.loads(path.read_text(encoding="utf-8"))) if path.exists() else set()


def record_not_graded(root: Path, graded: dict[str, bool]) -> None:
    """Note which submissions a grading could not grade ("<student>/<assignment>" → whether it graded it)."""
    keys = (read_not_graded(root) - set(graded)) | {key for key, done in graded.items() if not done}
    (root / NOT_GRADED).write_text(json.dumps(sorted(keys), indent=1), encoding="utf-8")


# nbgrader's export columns, then the status; times carry their zone (+00:00).
CSV_COLUMNS = [
    "assignment",
    "duedate",
    "timestamp",
    "student_id",
    "last_name",
    "first_name",
    "email",
    "raw_score",
    "late_submission_penalty",
    "score",
    "max_score",
    "status",
]


def write_grades_csv(gradebook: Gradebook, grades: list[Grade], path: Path) -> None:
    """grades.csv: nbgrader's columns, one row per student and assignment, and each row's status. A score is empty
    unless the submission was graded (nbgrader's own export writes 0 for missing work)."""
    students = {student.id: student for student in gradebook.students}
    with open(path, "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(CSV_COLUMNS)
        for grade in grades:
            student = students[grade.student]
            writer.writerow(
                [
                    grade.assignment,
                    iso(grade.due),
                    iso(grade.submitted),
                    grade.student,
                    student.last_name or "",
                    student.first_name or "",
                    student.email or "",
                    number(grade.raw_score),
                    number(grade.penalty),
                    number(grade.score),
                    number(grade.max_score),
                    grade.status.value,
                ]
            )


def iso(moment: datetime | None) -> str:
    return moment.isoformat(sep=" ") if moment is not None else ""


def number(value: float | None) -> str:
    return "" if value is None else f"{round(value, 2):g}"  # Canvas keeps two decimals
