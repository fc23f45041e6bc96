"""Helper package of the transformer course: data, plots and checks with clear messages.

It holds no answers to exercises: checks compare a learner's function with PyTorch's own operations
or with closed-form values.
"""

import os

# nbgrader sets this variable while it grades a notebook (in its kernel, and in the course's sealed run).
GRADING = "NBGRADER_EXECUTION"
# True while a notebook is graded: its demonstrations then do less (shorter training, fewer lengths timed), since
# grading needs a run that works, not the figures and numbers; a learner's own run is unchanged.
QUICK = bool(os.environ.get(GRADING))
# How a check's line begins when it passed (checks.passed); the feedback keeps these lines of a graded cell's output.
PASSED_MARK = "✔"
