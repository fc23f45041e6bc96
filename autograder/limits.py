"""The one grading limit that nbgrader reads from the course's configuration, in a module of its own: every nbgrader
command (validate, the exchange's, feedback) loads nbgrader_config.py, and this module imports nothing, where the
grading modules import PyTorch and the checks, seconds of start-up that only grading needs."""

CELL_TIMEOUT = 120.0  # seconds a cell may run; nbgrader_config.py gives nbgrader run by hand this limit too
