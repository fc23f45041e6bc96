"""Plausible wrong answers to every graded function, kept so that the tests prove they lose points: test fixtures,
not part of the autograder.

Each notebook has a module here, ``nbNN_<assignment>.py``, whose functions are written as a learner might
write them and registered with :func:`wrong_answer`. The name of a function says what the mistake is;
the ``message`` is a phrase the failing check must show, so a learner is told what went wrong.

Each is written out in full, as a learner's cell would be, even where that repeats the code of its
neighbours: it is graded as that cell, with only the notebook's own imports around it.
"""

import ast
import functools
import importlib
import inspect
import itertools
import pkgutil
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.cells import grade_id, is_test
from autograder.submissions import Submission, filled_in, solution_code, solution_notebooks
from autograder.verification.sealed_run import program, role


@dataclass(frozen=True)
class WrongAnswer:
    assignment: str  # the nbgrader assignment, e.g. "01_self_attention_averaging"
    exercise: str  # the graded function it replaces; also the grade_id of its solution cell
    mistake: str  # the name of the wrong function, which describes the mistake
    message: str  # a phrase the failing check must contain
    function: Callable

    @property
    def label(self) -> str:
        """A name unique across the course: the notebook's number and the mistake."""
        return f"{self.assignment[:2]}:{self.mistake}"

    @property
    def test_cell(self) -> str:
        """The grade_id of the exercise's test cell, by the course's convention test_<exercise>."""
        return f"test_{self.exercise}"

    @property
    def check_name(self) -> str:
        """The check of the exercise in transformer_course.checks: check_softmax, check_single_head_attention."""
        return "check_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.exercise).lower()

    @property
    def source(self) -> str:
        """The function's code as a learner would have typed it into the solution cell."""
        source = definitions(inspect.getsourcefile(self.function))[self.mistake]
        (definition,) = ast.parse(source).body
        registering = [  # the @wrong_answer(...) lines; other decorators belong to the answer (@torch.no_grad())
            range(decorator.lineno - 1, decorator.end_lineno)
            for decorator in definition.decorator_list
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "id", None) == "wrong_answer"
        ]
        dropped = {number for lines in registering for number in lines}
        body = "\n".join(line for number, line in enumerate(source.splitlines()) if number not in dropped)
        return re.sub(rf"\b(def|class) {self.mistake}\b", rf"\1 {self.exercise}", body, count=1) + "\n"


@functools.cache
def definitions(path: str) -> dict[str, str]:
    """The source of each function and class defined at the top of the module at ``path``, decorators included, by
    name, as ``inspect.getsource`` gives it (its block, comments at its end included), but with the module parsed
    once, where ``inspect.getsource`` parses it again for every class it is asked for."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            if node.name in found:
                raise ValueError(f"{path} defines {node.name} twice: each wrong answer needs a name of its own")
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            found[node.name] = "".join(inspect.getblock(lines[start - 1 :]))
    return found


def wrong_answer(exercise: str, message: str) -> Callable[[Callable], Callable]:
    """Register the decorated function (or class) as a wrong answer to ``exercise`` of its module's assignment."""

    def register(function: Callable) -> Callable:
        module = inspect.getmodule(function)
        answer = WrongAnswer(module.ASSIGNMENT, exercise, function.__name__, message, function)
        module.__dict__.setdefault("WRONG_ANSWERS", []).append(answer)
        return function

    return register


def all_wrong_answers() -> list[WrongAnswer]:
    """Every kept wrong answer of every notebook, in notebook order."""
    answers = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        answers += importlib.import_module(f"{__name__}.{info.name}").WRONG_ANSWERS
    return answers


def of_assignment(assignment: str) -> list[WrongAnswer]:
    return [answer for answer in all_wrong_answers() if answer.assignment == assignment]


def trial_name(answer: WrongAnswer, test: str) -> str:
    """The name, in a trial program, of the test cell ``test`` run with ``answer`` in place."""
    return f"{answer.label} → {test}"


def graded_after(answer: WrongAnswer) -> list[str]:
    """The grade_ids of the test cells that run after ``answer``'s cell in its notebook: its exercise's test and
    every later one. Earlier tests ran before the learner's cell, so no answer in it can change their verdict."""
    (source,) = solution_notebooks(answer.assignment).values()
    tests = [grade_id(cell) for cell in source.cells if is_test(cell)]
    return tests[tests.index(answer.test_cell) :]


def trial_program(assignment: str) -> list[dict]:
    """One sealed-run program that grades every kept wrong answer of ``assignment``: the solution notebook run as
    a solved submission, then, for each wrong answer in turn, its code in place of the solution, every test cell
    that follows it in the notebook (hidden tests included, ``graded_after``), and the solution again. The sealed run
    grades each test cell of a trial under its ``trial_name``, as it grades a submission's."""
    (source,) = solution_notebooks(assignment).values()
    tests = {grade_id(cell): cell.source for cell in source.cells if is_test(cell)}
    solutions = solution_code(assignment)
    cells = program(source, source, source)
    for answer in of_assignment(assignment):
        cells.append(role("student", answer.label, answer.source))
        cells += [role("test", trial_name(answer, test), tests[test]) for test in graded_after(answer)]
        cells.append(role("student", f"{answer.exercise}, solved again", solutions[answer.exercise]))
    return cells


def wrong_answer_submissions(assignment: str, released: dict[str, nbformat.NotebookNode]) -> list[Submission]:
    """Submissions that together carry every kept wrong answer of the assignment, one per exercise each."""
    by_exercise = defaultdict(list)
    for answer in of_assignment(assignment):
        by_exercise[answer.exercise].append(answer)
    correct = solution_code(assignment)
    submissions = []
    for number, bundle in enumerate(itertools.zip_longest(*by_exercise.values()), start=1):
        answers = [answer for answer in bundle if answer is not None]
        code = {**correct, **{answer.exercise: answer.source for answer in answers}}
        submissions.append(Submission(f"wrong-{number:02d}", assignment, filled_in(released, code), answers))
    return submissions
