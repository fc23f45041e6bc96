"""The course's late-work rule, as an nbgrader LateSubmissionPlugin: the course's nbgrader configuration makes
nbgrader's AssignLatePenalties step use it (`c.AssignLatePenalties.plugin_class`), so every autograde applies it to a
submission whose time (submitted/<student>/<assignment>/timestamp.txt) is past the assignment's due date."""

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float

DAY = 24 * 60 * 60  # seconds


class PenaltyPerDayLate(LateSubmissionPlugin):
    """A notebook handed in late loses ``fraction_per_day`` of its score for every started day (24 h) past the due
    date, at most its whole score: with 0.1, a minute late costs 10 %, 25 hours late 20 %, ten days or more 100 %."""

    fraction_per_day = Float(
        0.1,
        help="The share of a late notebook's score it loses per started day late (a class may set its own in its "
        "nbgrader_config.py: c.PenaltyPerDayLate.fraction_per_day = 0.2).",
    ).tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float:
        penalty = late_penalty(score, total_seconds_late, self.fraction_per_day)
        self.log.info(
            "%s is %d started day(s) late: late penalty %g of %g",
            student_id,
            days_late(total_seconds_late),
            penalty,
            score,
        )
        return penalty


def days_late(seconds_late: float) -> int:
    """Started days: a second late is one day late."""
    return math.ceil(max(seconds_late, 0) / DAY)


def late_penalty(score: float, seconds_late: float, fraction_per_day: float) -> float:
    return min(score, score * fraction_per_day * days_late(seconds_late))
