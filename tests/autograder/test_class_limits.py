"""A class's limits are settings of its nbgrader_config.py, which every way of grading it reads: how long a cell may
run (c.ExecutePreprocessor.timeout, which `class autograde` reads as nbgrader run by hand and the formgrader do;
--cell-timeout overrides it for one run), and what the sandbox allows (c.GradingSandbox)."""

import os

import pytest

from autograder import cli
from autograder.class_folder import ClassFolder
from autograder.grading import CELL_TIMEOUT
from autograder.verification.nbgrader_steps import GradingSandbox
from autograder.verification.sandbox import unavailable


def test_a_class_grades_with_the_courses_cell_timeout_until_its_configuration_sets_another(tmp_path):
    class_folder = ClassFolder.create(tmp_path / "class")
    assert class_folder.cell_timeout() == CELL_TIMEOUT
    with open(class_folder.root / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write("c.ExecutePreprocessor.timeout = 300\n")
    assert class_folder.cell_timeout() == 300
    assert class_folder.nbgrader_config().ExecutePreprocessor.timeout == 300  # what nbgrader itself reads


def test_class_autograde_takes_the_class_setting_unless_told_otherwise():
    assert cli.parser().parse_args(["class", "autograde"]).cell_timeout is None  # the class's, once its folder is read
    assert cli.parser().parse_args(["class", "autograde", "--cell-timeout", "45"]).cell_timeout == 45
    assert cli.parser().parse_args(["grade"]).cell_timeout == CELL_TIMEOUT  # a learner's own run: no class to read


@pytest.mark.skipif(bool(unavailable()) and not os.environ.get("CI"), reason="NO SANDBOX CAN RUN ON THIS MACHINE")
def test_the_sandboxs_limits_are_settings_of_the_class(tmp_path):
    class_folder = ClassFolder.create(tmp_path / "class")
    with open(class_folder.root / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write("c.GradingSandbox.processes = 64\nc.GradingSandbox.disk = 2**20\n")
        config.write("c.GradingSandbox.memory = 2**30\n")
    sandbox = GradingSandbox(config=class_folder.nbgrader_config()).sandbox()
    assert (sandbox.processes, sandbox.disk, sandbox.memory) == (64, 2**20, 2**30)
    assert class_folder.memory() == 2**30  # what class autograde gives its workers and nbgrader, unless told otherwise
    assert cli.parser().parse_args(["class", "autograde"]).memory_gib is None
