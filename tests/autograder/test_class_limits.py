"""How long a cell may run when a class is graded: one setting, the class's c.ExecutePreprocessor.timeout, which
`class autograde` reads as nbgrader run by hand and the formgrader do; --cell-timeout overrides it for one run."""

from autograder import cli
from autograder.class_folder import ClassFolder
from autograder.grading import CELL_TIMEOUT


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
