"""The steps the course adds to nbgrader's feedback (autograder/feedback.py), on one graded test cell."""

import nbformat

from autograder.feedback import FailedTestMessages, FailuresFirst, HideHiddenTests, NoMachinePaths, machine_folders


def feedback_cell(source: str, outputs: list) -> nbformat.NotebookNode:
    metadata = {"nbgrader": {"grade": True, "solution": False, "grade_id": "test_x", "points": 1}}
    return nbformat.v4.new_code_cell(source, metadata=metadata, outputs=outputs)


def test_feedback_hides_hidden_test_code_and_shows_test_errors_as_their_message():
    error = nbformat.v4.new_output(
        "error", ename="CheckFailed", evalue="rows must sum to 1", traceback=["/grader/x.py line 3", "check(seed=7)"]
    )
    source = "check(seed=1)\n### BEGIN HIDDEN TESTS\ncheck(seed=7)\n### END HIDDEN TESTS"
    cell = feedback_cell(source, [error])
    cell, _ = HideHiddenTests().preprocess_cell(cell, {}, 0)
    cell, _ = FailedTestMessages().preprocess_cell(cell, {}, 0)
    assert cell.source == f"check(seed=1)\n{HideHiddenTests().placeholder}"
    assert cell.outputs[0].traceback == ["CheckFailed: rows must sum to 1"]


def test_feedback_lists_the_failed_tests_first():
    error = nbformat.v4.new_output("error", ename="CheckFailed", evalue="rows must sum to 1", traceback=[])
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_markdown_cell("# Notebook"), feedback_cell("check()", [error])]
    )
    notebook, _ = FailuresFirst().preprocess(notebook, {})
    assert notebook.cells[0].cell_type == "markdown"
    assert "**test_x**" in notebook.cells[0].source and "CheckFailed: rows must sum to 1" in notebook.cells[0].source
    passed = nbformat.v4.new_notebook(cells=[feedback_cell("check()", [])])
    assert len(FailuresFirst().preprocess(passed, {})[0].cells) == 1  # nothing failed: nothing added


def test_feedback_names_no_folder_of_the_grading_machine():
    torch_file = f"{machine_folders()[0][0]}/torch/nn/functional.py"
    error = nbformat.v4.new_output("error", ename="E", evalue="", traceback=[f"File {torch_file}:12, in softmax"])
    cell = nbformat.v4.new_code_cell("softmax(x)", outputs=[error])
    cell, _ = NoMachinePaths().preprocess_cell(cell, {}, 0)
    assert cell.outputs[0].traceback == [f"File {machine_folders()[0][1]}/torch/nn/functional.py:12, in softmax"]


def test_feedback_names_no_folder_of_the_grading_machine_in_printed_or_returned_text():
    python = machine_folders()[0][0]
    printed = nbformat.v4.new_output("stream", name="stdout", text=f"{python}/x.py\n")
    returned = nbformat.v4.new_output("execute_result", data={"text/plain": f"<Popen: args: ['{python}/bin']>"})
    cell = nbformat.v4.new_code_cell("x", outputs=[printed, returned])
    cell, _ = NoMachinePaths().preprocess_cell(cell, {}, 0)
    assert python not in cell.outputs[0].text and python not in cell.outputs[1].data["text/plain"]


def test_feedback_shows_of_what_a_cell_with_hidden_tests_printed_only_the_checks_lines():
    """What the learner's code prints while hidden tests run would show their inputs; a cell without them is as run."""
    printed = "✔ softmax: rows sum to 1\nx = tensor([[1e4, -7.25]])\n✔ softmax: stable\n"
    source = "check(seed=1)\n### BEGIN HIDDEN TESTS\ncheck(seed=7)\n### END HIDDEN TESTS"
    cell = feedback_cell(source, [nbformat.v4.new_output("stream", name="stdout", text=printed)])
    cell, _ = HideHiddenTests().preprocess_cell(cell, {}, 0)
    shown = cell.outputs[0].text
    assert "1e4" not in shown and shown.startswith("✔ softmax: rows sum to 1\n✔ softmax: stable\n")
    assert HideHiddenTests().printed_placeholder in shown
    visible = feedback_cell("check(seed=1)", [nbformat.v4.new_output("stream", name="stdout", text=printed)])
    assert HideHiddenTests().preprocess_cell(visible, {}, 0)[0].outputs[0].text == printed
