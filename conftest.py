"""The check's runs of the solution notebooks (nbval), each with its page of the course's website: a plugin kept with
the tests, registered here since pytest asks only the conftest files above a notebook how to collect it."""

pytest_plugins = ("notebook_runs",)
