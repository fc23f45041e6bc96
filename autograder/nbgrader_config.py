"""nbgrader configuration of the course: solutions/ is the source, notebooks/ the student versions.

Every nbgrader command of the course reads it (`--config autograder/nbgrader_config.py`); a throw-away
or class course directory loads it too and then points the directories at its own folders.
"""

import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:  # nbgrader imports the course's preprocessors (autograder.feedback) by name
    sys.path.insert(0, str(REPO))

c = get_config()  # noqa: F821 (provided by nbgrader when it reads this file)

c.CourseDirectory.root = str(REPO)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"

# Assignments are the numbered folders of solutions/; generating one registers it in the gradebook.
c.GenerateAssignment.create_assignment = True
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# A cell that runs longer than the course's limit fails instead of stalling a whole grading run (nbgrader takes whole
# seconds). The course's grading commands pass their --cell-timeout to nbgrader, whose judge keeps it too.
from autograder.limits import CELL_TIMEOUT  # noqa: E402 (the repository is on the import path only from here)

c.ExecutePreprocessor.timeout = math.ceil(CELL_TIMEOUT)

# Every autograde (the course's `class autograde`, `nbgrader autograde` by hand, the formgrader's button) runs the
# student's code in the grading sandbox and the test cells in the judge, before the scores are saved
# (autograder/verification/nbgrader_steps.py).
# Grading without the sandbox: c.GradingSandbox.enabled = False (only for code you trust).
c.Autograde.autograde_preprocessors = [
    "autograder.verification.nbgrader_steps.JudgedExecute",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "autograder.verification.nbgrader_steps.JudgeNotes",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Feedback shows no hidden test code and no machine paths, and each failed test as its message, listed first too
# (autograder/feedback.py).
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "autograder.feedback.HideHiddenTests",
    "autograder.feedback.FailedTestMessages",
    "autograder.feedback.FailuresFirst",
    "autograder.feedback.NoMachinePaths",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
]

# Of several uploads of one student's same notebook in a download, zip_collect takes the newest by the upload id that
# Canvas puts in the file name (autograder/lms.py); without upload ids it behaves as nbgrader's own collector. (Plugins
# are named here, not on nbgrader's command line: there nbgrader imports them before this file puts the repository on
# the import path.)
c.ZipCollectApp.collector_plugin = "autograder.lms.NewestUpload"

# From a hub's exchange, a submission counts only when the account it names handed it in: nbgrader's own collector
# takes one that another student handed in under that name (autograder/exchange.py). Off for a class whose students
# are identities of one account: c.ExchangeCollect.check_owner = False.
c.ExchangeFactory.collect = "autograder.exchange.OwnSubmissionsOnly"

# A notebook handed in after the due date loses a share of its score per started day late, at most all of it
# (autograder/late_penalty.py). The share, 0.1 unless a class sets its own: c.PenaltyPerDayLate.fraction_per_day.
c.AssignLatePenalties.plugin_class = "autograder.late_penalty.PenaltyPerDayLate"
