"""nbgrader preprocessors for the feedback students receive, one step each. The course's nbgrader_config.py adds
them to nbgrader's GenerateFeedback, so feedback made by ``class feedback``, by ``nbgrader generate_feedback`` run
by hand and by the formgrader alike shows:

- no code of hidden tests (nbgrader shows it by default: its issues #917 and #1363), and of what the learner's code
  printed in a cell with hidden tests only the checks' ✔ lines; visible tests stay visible;
- each failed test as its message in full, not a traceback through the grading machine's files;
- those messages first, at the top of the page, so that a student sees what to fix before scrolling;
- no folder of the grading machine in any output: each becomes a short name.

An instructor who wants hidden test code in the feedback turns the first off: ``--HideHiddenTests.enabled=False``
(``class feedback --show-hidden-tests``).
"""

import sys
import sysconfig
from pathlib import Path

import nbformat
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import ClearHiddenTests, NbGraderPreprocessor
from traitlets import Unicode

from autograder.cells import grade_id, is_test
from transformer_course import PASSED_MARK


class HideHiddenTests(ClearHiddenTests):
    """Replace each hidden-test region of a graded cell with one comment line that says code was left out."""

    placeholder = Unicode(
        "# Hidden tests: they ran, but their code is not shown.",
        help="The line that stands where a hidden-test region was",
    ).tag(config=True)
    printed_placeholder = Unicode(
        "(What your code printed while this cell's tests ran is not shown: it would show the hidden tests' inputs.)",
        help="The line that stands for what the learner's code printed in a cell with hidden tests",
    ).tag(config=True)

    def _remove_hidden_test_region(self, cell: NotebookNode) -> bool:
        kept, hidden = [], False
        lines = cell.source.split("\n")
        for line in lines:
            if self.begin_test_delimeter in line:
                hidden = True
                kept.append(line[: len(line) - len(line.lstrip())] + self.placeholder)
            elif self.end_test_delimeter in line:
                hidden = False
            elif not hidden:
                kept.append(line)
        cell.source = "\n".join(kept)
        if kept != lines:
            self._hide_what_the_learners_code_printed(cell)
        return kept != lines

    def _hide_what_the_learners_code_printed(self, cell: NotebookNode) -> None:
        """Keep of the text the cell printed only the checks' ✔ lines: what the learner's code printed while the
        hidden tests ran would show their inputs."""
        for output in cell.get("outputs", []):
            if output.output_type == "stream":
                lines = output.text.splitlines(keepends=True)
                shown = [line for line in lines if line.startswith(PASSED_MARK)]
                if len(shown) < len(lines):
                    shown.append(self.printed_placeholder + "\n")
                output.text = "".join(shown)


class FailedTestMessages(NbGraderPreprocessor):
    """In graded test cells, show each error as its type and message alone: the check's message names the mistake,
    and the traceback would show the grading machine's paths and the test code that raised."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        if is_test(cell):
            for output in cell.get("outputs", []):
                if output.output_type == "error":
                    output.traceback = [f"{output.ename}: {output.evalue}"]
        return cell, resources


class FailuresFirst(NbGraderPreprocessor):
    """Put a cell at the top that lists every failed test with its message, in the notebook's order."""

    def preprocess(self, nb: NotebookNode, resources: dict) -> tuple[NotebookNode, dict]:
        failures = [
            (grade_id(cell) or "a test", output)
            for cell in nb.cells
            if is_test(cell)
            for output in cell.get("outputs", [])
            if output.output_type == "error"
        ]
        if failures:
            listed = "\n\n".join(
                f"**{name}**\n\n```text\n{error.ename}: {error.evalue}\n```" for name, error in failures
            )
            nb.cells.insert(0, nbformat.v4.new_markdown_cell(f"## What to fix\n\n{listed}"))
        return nb, resources


class NoMachinePaths(NbGraderPreprocessor):
    """Show the grading machine's folders by short names (``<python>/torch/nn/functional.py``) wherever a cell's
    outputs name them: tracebacks, printed text, a returned object's text."""

    def preprocess_cell(self, cell: NotebookNode, resources: dict, index: int) -> tuple[NotebookNode, dict]:
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [shortened(line) for line in output.traceback]
            elif output.output_type == "stream":
                output.text = shortened(output.text)
            elif "text/plain" in output.get("data", {}):
                output.data["text/plain"] = shortened(output.data["text/plain"])
        return cell, resources


def machine_folders() -> list[tuple[str, str]]:
    """Folders of this machine that tracebacks name, longest first, with the short names feedback shows."""
    folders = {
        sysconfig.get_paths()["purelib"]: "<python>",
        sysconfig.get_paths()["stdlib"]: "<python>",
        str(Path(__file__).resolve().parent.parent): "<course>",
        sys.prefix: "<python>",
        sys.base_prefix: "<python>",
    }
    return sorted(folders.items(), key=lambda item: -len(item[0]))


def shortened(line: str) -> str:
    for folder, name in machine_folders():
        line = line.replace(folder, name)
    return line
