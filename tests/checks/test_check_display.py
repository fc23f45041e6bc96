"""A failing check shows in the notebook as its message, after the learner's own frames where their code raised;
never as a traceback through the course's package."""

import contextlib
import io

from IPython.core.interactiveshell import InteractiveShell

from transformer_course import checks


def shown(*cells: str) -> str:
    """What IPython prints for the last of ``cells``, run in a fresh shell."""
    InteractiveShell.clear_instance()
    shell = InteractiveShell.instance()
    shell.run_cell("import torch\nfrom transformer_course.checks import nb01")
    for cell in cells[:-1]:
        shell.run_cell(cell)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        shell.run_cell(cells[-1])
    InteractiveShell.clear_instance()
    return printed.getvalue()


def test_a_failing_check_shows_its_message_alone():
    printed = shown("def softmax(scores, dim=-1):\n    return scores\n", "nb01.check_softmax(softmax)")
    assert printed.strip().startswith("CheckFailed: softmax(scores")
    assert checks.COURSE_PACKAGE not in printed and "learner_facing" not in printed


def test_a_crash_in_the_learners_code_shows_their_line_then_the_message():
    crashing = "def softmax(scores, dim=-1):\n    return scores @ torch.ones(3, 3)\n"
    printed = shown(crashing, "nb01.check_softmax(softmax)")
    assert "return scores @ torch.ones(3, 3)" in printed and "RuntimeError: mat1 and mat2" in printed
    assert printed.strip().splitlines()[-1].startswith("CheckFailed: softmax(scores, dim=-1) with scores")
    assert checks.COURSE_PACKAGE not in printed
