"""The oracles of a student release, as recorded results (``transformer_course/checks/recordings.py``).

A release's check modules keep each ``@oracle``'s signature and docstring, not its body, and the release holds
``checks/recorded.pt``: what the oracles returned to the visible checks of its notebooks (the test cells of the
student versions, hidden tests never), run on the solved notebook and on each kept wrong answer of the course
(``tests/wrong_answers``, the common mistakes, whose checks then name them at home too).
"""

import ast
import contextlib
import functools
import importlib
import io
import sys
import warnings
from pathlib import Path

import nbformat
import torch

from autograder.cells import grade_id, is_test
from autograder.repository import NOTEBOOKS, REPO
from autograder.submissions import solved_namespace
from transformer_course.checks import CheckFailed
from transformer_course.checks.recordings import ORACLES, kind_of, recording, same_values

WRONG_ANSWERS = REPO / "tests" / "wrong_answers"
BODY_IN_A_RELEASE = 'raise NotImplementedError("a student release holds this oracle\'s recorded results, not its code")'


def write(target: Path, assignments: list[str]) -> None:
    """Write ``recorded.pt``, for the visible checks of ``assignments``, into the released checks folder ``target``."""
    recorded: dict[str, list] = {}
    by_kind: dict[tuple, list] = {}  # the same calls by oracle and kind of arguments: only those can be the same
    for assignment in assignments:
        for key, arguments, result in calls_of(assignment):
            known = by_kind.setdefault((key, kind_of(arguments)), [])
            if not any(same_values(arguments, earlier) for earlier in known):
                known.append(arguments)
                recorded.setdefault(key, []).append((arguments, result))
    torch.save(recorded, target / "recorded.pt")


@functools.cache
def calls_of(assignment: str) -> tuple:
    """Every (oracle, arguments, result) of the assignment's visible checks; none where its checks use no oracle."""
    checks = importlib.import_module(f"transformer_course.checks.nb{assignment[:2]}")
    oracles = {id(function) for function in ORACLES.values()}
    if not any(id(value) in oracles for value in vars(checks).values()):
        return ()
    tests = visible_tests(assignment)
    solved = solved_namespace(assignment)
    with recording() as calls:
        for source in tests.values():
            run_quietly(source, dict(solved))
        for answer in wrong_answers(assignment):
            namespace = dict(solved)  # the correct earlier exercises, under their names, as in a solved notebook
            run_quietly(answer.source, namespace)
            run_quietly(tests[answer.test_cell], namespace)
    return tuple(calls)


def visible_tests(assignment: str) -> dict[str, str]:
    """The test cells of the student version (the visible checks only), by grade_id."""
    (path,) = sorted((NOTEBOOKS / assignment).glob("*.ipynb"))
    return {grade_id(cell): cell.source for cell in nbformat.read(path, as_version=4).cells if is_test(cell)}


def wrong_answers(assignment: str) -> list:
    """The kept wrong answers of the assignment; none where the repository has no tests/wrong_answers."""
    if not WRONG_ANSWERS.is_dir():
        return []
    if str(WRONG_ANSWERS.parent) not in sys.path:
        sys.path.append(str(WRONG_ANSWERS.parent))
    from wrong_answers import of_assignment  # the course's catalogue of common mistakes, kept with the tests

    return of_assignment(assignment)


def run_quietly(source: str, namespace: dict) -> None:
    """Run a cell's code; what it prints, and a failing check, are not this module's business."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(CheckFailed), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        exec(compile(source, "<recorded check>", "exec"), namespace)


def without_oracle_bodies(source: str) -> str:
    """A check module's source with the body of every ``@oracle`` function, but its docstring, replaced by a line
    that says where its results are."""
    lines = source.splitlines(keepends=True)
    oracles = [node for node in ast.parse(source).body if isinstance(node, ast.FunctionDef) and is_oracle(node)]
    for node in reversed(oracles):  # from the end, so that earlier line numbers stay right
        body = node.body[1:] if ast.get_docstring(node) is not None else node.body
        first, last = body[0].lineno - 1, node.end_lineno
        indent = " " * body[0].col_offset
        lines[first:last] = [f"{indent}{BODY_IN_A_RELEASE}\n"]
    return "".join(lines)


def is_oracle(node: ast.FunctionDef) -> bool:
    return any(isinstance(decorator, ast.Name) and decorator.id == "oracle" for decorator in node.decorator_list)
