"""Plausible wrong answers to every graded function, kept so that the tests prove they lose points.

Each notebook has a module here, ``nbNN_<assignment>.py``, whose functions are written as a learner might
write them and registered with :func:`wrong_answer`. The name of a function says what the mistake is;
the ``message`` is a phrase the failing check must show, so a learner is told what went wrong.

Each is written out in full, as a learner's cell would be, even where that repeats the code of its
neighbours: it is graded as that cell, with only the notebook's own imports around it.
"""

import importlib
import inspect
import pkgutil
import re
from collections.abc import Callable
from dataclasses import dataclass


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
        lines = inspect.getsource(self.function).splitlines()
        body = "\n".join(line for line in lines if not line.startswith("@"))
        return re.sub(rf"\b(def|class) {self.mistake}\(", rf"\1 {self.exercise}(", body, count=1) + "\n"


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
