"""A grade's lateness: handed in after its due date, or marked late by the LMS, and never for missing work."""

from datetime import UTC, datetime, timedelta

import pytest

from autograder.grades import Grade, Status

DUE = datetime(2027, 3, 1, 22, 59, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "submitted", "marked_late", "late"),
    [
        (Status.GRADED, DUE - timedelta(minutes=1), False, False),
        (Status.GRADED, DUE + timedelta(minutes=1), False, True),
        (Status.NOT_GRADED, DUE + timedelta(days=2), False, True),  # late, though it awaits grading by hand
        (Status.GRADED, None, True, True),  # a Canvas download has no times, only its mark
        (Status.NOT_GRADED, None, True, True),
        (Status.NOT_SUBMITTED, None, False, False),
        (Status.NOT_SUBMITTED, None, True, False),  # a mark left from a download whose file was not collected
    ],
)
def test_a_grade_is_late_when_handed_in_after_its_due_date_or_marked_late(status, submitted, marked_late, late):
    grade = Grade("1234", "01", status, 9.0, due=DUE, submitted=submitted, marked_late=marked_late)
    assert grade.late is late
