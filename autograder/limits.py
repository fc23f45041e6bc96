"""The limits on a cell's time, in a module of its own that imports nothing: every nbgrader command (validate, the
exchange's, feedback) loads nbgrader_config.py, which reads the grading limit here, where the grading modules import
PyTorch and the checks, seconds of start-up that only grading needs; and `course.py check` reads the full run's limit
before the course's environment is set up."""

CELL_TIMEOUT = 120.0  # seconds a cell may run; nbgrader_config.py gives nbgrader run by hand this limit too
FULL_RUN_CELL_TIMEOUT = 1800  # seconds a cell of a solution notebook's full run may take (the check's nbval run,
# the website's): notebook 08 trains in one cell, about a minute alone and far longer on a busy machine
