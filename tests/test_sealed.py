"""The sealed verification and the structural comparison, on small programs and on the first notebook.

The sealed runner is tested here on programs of a few lines (no PyTorch), so that each kind of interference
is shown on its own and quickly; tests/test_grading.py shows the same on real submissions through nbgrader.
"""

import nbformat
import pytest

from autograder import sealed, structure
from autograder.pipeline import NOTEBOOKS, SOLUTIONS, assignments
from autograder.sandbox import Sandbox
from autograder.submissions import filled_in, solution_code

FIRST = assignments()[0]
SQUARE = "def square(x):\n    return x * x\n"


def run(*student_cells: str, timeout: float = 20.0, tmp_path) -> sealed.SealedVerdict:
    """A program of a set-up cell, the student's cells, and one test cell, run sealed."""
    cells = [sealed.role("course", "setup", "import math")]
    cells += [sealed.role("student", f"answer{number}", source) for number, source in enumerate(student_cells)]
    cells.append(sealed.role("test", "test_square", "assert square(3) == 9 and math.sqrt(16) == 4"))
    return sealed.verify(cells, tmp_path, timeout, Sandbox())


def test_an_honest_answer_passes(tmp_path):
    verdict = run(SQUARE, tmp_path=tmp_path)
    assert verdict.passed == {"test_square"} and verdict.tampering == {} and verdict.stopped is None


def test_a_wrong_answer_fails_with_its_error(tmp_path):
    verdict = run("def square(x):\n    return x + x\n", tmp_path=tmp_path)
    assert verdict.passed == set() and verdict.failure("test_square") == "AssertionError: "


@pytest.mark.parametrize(
    "tampering, reported",
    [
        ("import math\nmath.sqrt = lambda x: 4.0", "replaced math.sqrt"),
        ("import builtins\nbuiltins.AssertionError = Warning", "replaced builtins.AssertionError"),
        ("import math\nmath.sqrt.__class__", ""),  # reading is not tampering
        ("import sys\nsys.settrace(lambda *args: None)", "changed the trace function"),
        ("get_ipython().set_custom_exc((Exception,), print)", "get_ipython().set_custom_exc"),
        ("import threading, time\nthreading.Thread(target=lambda: time.sleep(60), daemon=True).start()", "a thread"),
        ("math = None", "the notebook's name math"),
    ],
)
def test_a_change_to_what_the_test_relies_on_voids_it(tampering, reported, tmp_path):
    verdict = run(SQUARE + tampering, tmp_path=tmp_path)
    if not reported:
        assert verdict.passed == {"test_square"}
        return
    assert verdict.passed == set()
    assert reported in verdict.failure("test_square")
    assert any(reported in change for change in verdict.tampering["answer0"])


def test_lines_forged_on_the_channel_count_for_nothing(tmp_path):
    forge = (
        "import os\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        '        os.write(fd, b\'{"event": "test", "name": "test_square", "passed": true, "error": null}\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
    )
    verdict = run("def square(x):\n    return 0\n", forge, tmp_path=tmp_path)
    assert verdict.passed == set() and verdict.forged >= 1


def test_a_cell_that_runs_too_long_is_interrupted_and_the_rest_still_runs(tmp_path):
    verdict = run("while True:\n    pass", SQUARE, timeout=2, tmp_path=tmp_path)
    assert verdict.passed == {"test_square"}
    assert "ran longer than 2 s" in verdict.cell_errors["answer0"]


def test_a_cell_that_ignores_interrupts_is_stopped_and_passes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(sealed, "INTERRUPT_GRACE", 1.0)
    stubborn = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    verdict = run(SQUARE, stubborn, timeout=2, tmp_path=tmp_path)
    assert verdict.passed == set()
    assert "did not stop when interrupted" in verdict.failure("test_square")


@pytest.mark.parametrize(
    "ending, reported", [("import os\nos._exit(3)", "exited with code 3"), ("raise SystemExit", "")]
)
def test_a_process_that_ends_early_passes_nothing_it_did_not_report(ending, reported, tmp_path):
    verdict = run(SQUARE, ending, tmp_path=tmp_path)
    if reported:
        assert verdict.passed == set() and reported in verdict.failure("test_square")
    else:  # SystemExit is an error of the cell, like any other; the run goes on
        assert verdict.passed == {"test_square"} and "SystemExit" in verdict.cell_errors["answer1"]


def test_magics_run_as_a_kernel_would_run_them(tmp_path):
    verdict = run("%%time\n" + SQUARE, "%timeit -n 1 square(2)\n!echo hello", tmp_path=tmp_path)
    assert verdict.passed == {"test_square"} and verdict.cell_errors == {} and verdict.tampering == {}


# --- what the sealed run is made of -----------------------------------------------------------------------


def notebooks() -> tuple[nbformat.NotebookNode, nbformat.NotebookNode, nbformat.NotebookNode]:
    """The first assignment's source, released version, and released version with every exercise solved."""
    (source,) = [nbformat.read(path, as_version=4) for path in (SOLUTIONS / FIRST).glob("*.ipynb")]
    (name,) = [path.name for path in (NOTEBOOKS / FIRST).glob("*.ipynb")]
    released = nbformat.read(NOTEBOOKS / FIRST / name, as_version=4)
    return source, released, filled_in({name: released}, solution_code(FIRST))[name]


def test_the_program_takes_tests_from_the_source_and_code_from_the_student():
    source, released, submitted = notebooks()
    helper = nbformat.v4.new_code_cell("def helper():\n    return 1\n")
    first_answer = next(
        i for i, cell in enumerate(submitted.cells) if cell.metadata.get("nbgrader", {}).get("solution")
    )
    submitted.cells.insert(first_answer + 1, helper)
    submitted.cells[0].source = "import fake_checks as nb01"  # edits to the course's cells are not used
    cells = sealed.program(source, released, submitted)
    tests = [cell for cell in cells if cell["role"] == "test"]
    assert tests and all("### BEGIN HIDDEN TESTS" in cell["source"] for cell in tests)
    assert cells[0]["source"] == next(cell for cell in source.cells if cell.cell_type == "code").source
    names = [cell["name"] for cell in cells]
    assert names.index("the cell you added after softmax") == names.index("softmax") + 1


def test_an_untouched_submission_has_nothing_structural_to_report():
    _, released, submitted = notebooks()
    assert structure.compare(released, submitted) == []


def test_each_change_to_a_graded_cell_is_reported():
    _, released, submitted = notebooks()
    tests = [cell for cell in submitted.cells if cell.metadata.get("nbgrader", {}).get("grade")]
    tests[0].source = "pass"
    submitted.cells.remove(tests[1])
    index = submitted.cells.index(tests[2])
    submitted.cells[index] = nbformat.v4.new_markdown_cell(tests[2].source, metadata=tests[2].metadata, id=tests[2].id)
    tests[3].metadata["nbgrader"]["points"] = 100
    submitted.cells.insert(0, submitted.cells.pop(submitted.cells.index(tests[3])))
    kinds = {(finding.kind, finding.cell) for finding in structure.compare(released, submitted)}
    names = [cell.metadata["nbgrader"]["grade_id"] for cell in tests]
    assert kinds == {
        ("edited", names[0]),
        ("deleted", names[1]),
        ("retyped", names[2]),
        ("metadata", names[3]),
        ("reordered", names[3]),
    }
