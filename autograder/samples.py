"""Sample submissions, made by code, that show what the autograder does with honest work, with tampering and
with faults: the demo grades them, and the tests hold the autograder to what each sample expects.

All are submissions of one assignment (the course's first, so that they are quick to grade). Each tampering
sample leaves the first exercise unanswered and answers the others correctly, so any points the tampering won
for the first exercise would show. The tests run in the judge, a process of the grader's that no student code
runs in (autograder/verification/judge.py), so no change an answer cell makes reaches them.

The hostile samples attack the machine rather than the checks: they look for the class folder, the solutions,
the gradebook and the network, and try to outlive their job or exhaust it. They are graded only in the grading
sandbox (autograder/verification/sandbox.py): without it they would do what they try.
"""

import ast
import re
from dataclasses import dataclass

import nbformat

from autograder.cells import grade_id, is_answer, is_test
from autograder.grading import Outcome
from autograder.submissions import Submission, filled_in, solution_code
from autograder.verification.findings import (
    CellFailed,
    ChangedCell,
    ExtraFile,
    Finding,
    NotOfThisAssignment,
    NotSubmitted,
    RunEnded,
    TimedOut,
    Unreadable,
)

UNIMPLEMENTED = re.compile(r"^(?P<indent>[ \t]*)raise NotImplementedError\(\)", re.MULTILINE)

# Code a student might add to an answer cell to make tests pass without solving them.
TORCH_ALLCLOSE = "torch.allclose = lambda *args, **kwargs: True\n"
NUMPY_ALLCLOSE = "import numpy as np\n\nnp.allclose = lambda *args, **kwargs: True\n"
ASSERT_CLOSE = "torch.testing.assert_close = lambda *args, **kwargs: None\n"
NO_FAILURES = '''\
import ast


class NoFailures(ast.NodeTransformer):
    """Drop every assert, and run each later cell inside try/except, so that nothing it does can fail."""

    def visit_Assert(self, node):
        return ast.Pass()

    def visit_Module(self, node):
        self.generic_visit(node)
        swallow = ast.ExceptHandler(type=ast.Name("BaseException", ast.Load()), name=None, body=[ast.Pass()])
        node.body = [ast.Try(body=node.body, handlers=[swallow], orelse=[], finalbody=[])]
        return ast.fix_missing_locations(node)


get_ipython().ast_transformers.append(NoFailures())
'''
SWALLOW_ERRORS = "get_ipython().set_custom_exc((Exception,), lambda *args, **kwargs: None)\n"
EXIT_KERNEL = "import os\n\nos._exit(1)\n"
SEGFAULT = "import ctypes\n\nctypes.string_at(0)\n"
HOARD = "hoard = [torch.ones(2**28) for _ in range(64)]  # 64 GiB, 1 GiB at a time"
LOOP = "while True:\n    pass\n"

# Attacks on the machine, each as a student would write it. The route to the class folder that worked before
# grading was sandboxed: the scratch nbgrader_config.py above the kernel's folder names the class's config.
FIND_CLASS_FOLDER = r"""import re
from pathlib import Path

here = Path.cwd()
configs = [folder / "nbgrader_config.py" for folder in (here, *here.parents)]
configs = [config for config in configs if config.exists()]
class_folder = Path(re.findall(r"load_subconfig\(['\"](.*?)['\"]\)", configs[0].read_text())[0]).parent
"""
READ_CLASS = (
    FIND_CLASS_FOLDER
    + """
print((class_folder / "gradebook.db").read_bytes()[:2000])
for notebook in sorted((class_folder / "source").rglob("*.ipynb")):
    print(notebook.read_text())
"""
)
VANDALISE_CLASS = (
    FIND_CLASS_FOLDER
    + """
import shutil

for folder in (class_folder / "submitted").iterdir():
    shutil.rmtree(folder)
for notebook in (class_folder / "source").rglob("*.ipynb"):
    notebook.write_text(notebook.read_text().replace("check_", "print_"))
(class_folder / "gradebook.db").write_bytes(b"")
"""
)
READ_SOLUTIONS = """from pathlib import Path

import transformer_course

repository = Path(transformer_course.__file__).resolve().parents[2]
first = sorted((repository / "solutions").iterdir())[0]
for notebook in first.glob("*.ipynb"):
    print(notebook.read_text())
"""
# Answers taken from what the grader has: a correct stand-in imported, an oracle of the checks called as the answer
# (notebook 01's check of self-attention computes its expected values with unscaled_self_attention).
IMPORT_STAND_IN = "from transformer_course.checks.stand_ins import {answer}  # noqa\n"
ORACLE_AS_ANSWER = """def self_attention(x):
    return nb01.unscaled_self_attention(x)[0]
"""
# An answer that makes the judge, which runs outside the sandbox, take a tensor of 160 MB at every call.
SENDS_TOO_MUCH = """def {answer}(scores, dim=-1):
    return torch.ones(40_000_000)
"""
DAEMON_MARKER = "sample-daemon-edits-gradebooks"  # the tests look for a process with this in its command line
LATER = """import pathlib, time
time.sleep(5)  # until the kernel has ended
for _ in range(120):
    for gradebook in pathlib.Path("/tmp").glob("**/gradebook.db"):
        gradebook.write_bytes(b"")
    time.sleep(1)
"""
DAEMON = f"""import subprocess
import sys

subprocess.Popen([sys.executable, "-c", {LATER!r}, "{DAEMON_MARKER}"], start_new_session=True)
"""
NETWORK = """import socket

with socket.create_connection(("127.0.0.1", {port}), timeout=5) as connection:
    connection.sendall(b"answers, please")
"""
# Prints what the kernel has run so far (IPython's history) and the source of the checks it can import: were the
# test cells run in the kernel, the hidden tests of the exercises before it would reach its feedback.
SNOOP = """import inspect
import sys

print(SNOOPED, *get_ipython().user_ns.get("In", []), sep="\\n")
for name, module in list(sys.modules.items()):
    if name.startswith("transformer_course.checks"):
        try:
            print(inspect.getsource(module))
        except Exception as error:
            print(name, "has no source:", error)
"""
SNOOPED = "what this kernel ran before:"
# A correct answer whose kernel is slow to say that a cell is done, as on a machine kept busy by other jobs (or by a
# fork bomb's copies): once, it sends that message 6 s after the cell's reply, past the 4 s after which nbclient
# would give up on the whole notebook.
LATE_OUTPUT = """import time

_session = get_ipython().kernel.session
_send = _session.send


def _late(stream, kind, content=None, *args, **kwargs):
    if content == {"execution_state": "idle"}:
        _session.send = _send
        time.sleep(6)
    return _send(stream, kind, content, *args, **kwargs)


_session.send = _late
"""
FORK_BOMB = "import os\n\nwhile True:\n    os.fork()\n"
FILL_DISK = """from pathlib import Path

block = b"x" * 2**20
with open(Path.home() / "filler", "wb") as filler:
    while True:
        filler.write(block)
"""


@dataclass(frozen=True)
class Sample:
    submission: Submission
    what: str  # what the student did, in a few words
    earns: frozenset[str]  # the test cells that earn their points; every other one earns none
    reported: "Expected | None"  # what the report on this submission must show (None: nothing at all)


@dataclass(frozen=True)
class Assignment:
    """What the samples are made of: one released notebook, its solutions, its exercises and tests in order."""

    name: str
    notebook: str
    released: nbformat.NotebookNode
    solutions: dict[str, str]
    answers: list[str]
    tests: list[str]

    @classmethod
    def of(cls, name: str, released: dict[str, nbformat.NotebookNode]) -> "Assignment":
        notebook_name, notebook = next(iter(released.items()))
        answers = [grade_id(cell) for cell in notebook.cells if is_answer(cell)]
        tests = [grade_id(cell) for cell in notebook.cells if is_test(cell)]
        return cls(name, notebook_name, notebook, solution_code(name), answers, tests)

    def stub(self, answer: str) -> str:
        return self.cell(self.released, answer).source

    def cell(self, notebook: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
        return next(cell for cell in notebook.cells if grade_id(cell) == name)

    def notebook_with(self, **answers: str) -> nbformat.NotebookNode:
        """The released notebook with every exercise solved, except where ``answers`` says otherwise."""
        return filled_in({self.notebook: self.released}, {**self.solutions, **answers})[self.notebook]

    def first_unanswered(self, added_code: str = "") -> nbformat.NotebookNode:
        """Solved but for the first exercise, whose cell keeps its stub followed by ``added_code``."""
        first = self.answers[0]
        return self.notebook_with(**{first: "\n\n".join(filter(None, [self.stub(first), added_code]))})

    def last_unanswered(self, added_code: str) -> nbformat.NotebookNode:
        """Solved but for the last exercise, whose cell keeps its stub followed by ``added_code``: for code that
        exhausts its job, so that only the test after it is left to suffer."""
        last = self.answers[-1]
        return self.notebook_with(**{last: "\n\n".join([self.stub(last), added_code])})

    def stub_doing(self, answer: str, code: str) -> str:
        """The stub of ``answer`` with ``code`` where it raises NotImplementedError."""
        return UNIMPLEMENTED.sub(lambda match: indented(code, match["indent"]), self.stub(answer), count=1)


@dataclass(frozen=True)
class Found:
    """The report holds a finding of this kind whose fields have these values (a field that holds several: among
    them)."""

    kind: type[Finding]
    values: tuple[tuple[str, object], ...] = ()

    def __call__(self, outcome: Outcome) -> bool:
        return any(isinstance(finding, self.kind) and self.fits(finding) for finding in outcome.findings)

    def fits(self, finding: Finding) -> bool:
        held = [(getattr(finding, name), value) for name, value in self.values]
        return all(value in field if isinstance(field, tuple) else field == value for field, value in held)


@dataclass(frozen=True)
class TestFailedWith:
    """A test failed with an error of this type (its class name: the check's NotImplementedYet, the student's
    code's IndexError)."""

    error_type: str
    saying: str = ""  # words of the error itself (PyTorch's, the system's), never the course's own

    def __call__(self, outcome: Outcome) -> bool:
        return any(test.error_type == self.error_type and self.saying in (test.message or "") for test in outcome.tests)


@dataclass(frozen=True)
class Either:
    """The report shows one of these."""

    choices: tuple

    def __call__(self, outcome: Outcome) -> bool:
        return any(choice(outcome) for choice in self.choices)


Expected = Found | TestFailedWith | Either


def found(kind: type[Finding], **values) -> Found:
    return Found(kind, tuple(values.items()))


def reports(outcome: Outcome, expected: Expected | None) -> bool:
    """Whether the report on a graded sample shows what happened, or, when there is nothing to show, nothing."""
    return expected(outcome) if expected else outcome.messages == []


def indented(code: str, indent: str) -> str:
    return "\n".join(indent + line if line else line for line in code.splitlines())


def samples(
    name: str, released: dict[str, nbformat.NotebookNode], sandboxed: bool = True, listening_port: int = 9
) -> list[Sample]:
    """Every sample submission of the assignment ``name``, as its released notebooks stand; the hostile ones only
    when they will be graded in the sandbox. The network sample connects to ``listening_port`` on the loopback
    interface."""
    assignment = Assignment.of(name, released)
    found = (
        honest(assignment) + tampering_with_cells(assignment) + tampering_in_the_kernel(assignment) + faults(assignment)
    )
    return found + (hostile(assignment, listening_port) if sandboxed else [])


def sample(
    assignment: Assignment, student: str, what: str, earns, reported: Expected | None, notebook=None, files=None
) -> Sample:
    notebooks = {assignment.notebook: notebook} if notebook is not None else {}
    submission = Submission(f"sample-{student}", assignment.name, notebooks, files=files or {})
    return Sample(submission, what, frozenset(earns), reported)


def all_but_first(assignment: Assignment) -> list[str]:
    return assignment.tests[1:]


def honest(assignment: Assignment) -> list[Sample]:
    first = assignment.answers[0]
    untouched = nbformat.from_dict(assignment.released)
    return [
        sample(assignment, "full-marks", "every exercise solved", assignment.tests, None, assignment.notebook_with()),
        sample(
            assignment,
            "partial",
            "the first exercise left as it was",
            all_but_first(assignment),
            TestFailedWith("NotImplementedYet"),
            assignment.first_unanswered(),
        ),
        sample(assignment, "untouched", "nothing done", [], TestFailedWith("NotImplementedYet"), untouched),
        sample(
            assignment,
            "late-output",
            "every exercise solved, on a machine too busy to send a cell's output at once",
            assignment.tests,
            None,
            assignment.notebook_with(**{first: assignment.solutions[first] + "\n\n" + LATE_OUTPUT}),
        ),
    ]


def tampering_with_cells(assignment: Assignment) -> list[Sample]:
    first_test = assignment.tests[0]
    edited = assignment.first_unanswered()
    assignment.cell(edited, first_test).source = 'print("✔ all tests passed")'
    deleted = assignment.first_unanswered()
    deleted.cells.remove(assignment.cell(deleted, first_test))
    retyped = assignment.first_unanswered()
    cell = assignment.cell(retyped, first_test)
    retyped.cells[retyped.cells.index(cell)] = nbformat.v4.new_markdown_cell(
        cell.source, metadata=cell.metadata, id=cell.id
    )
    reordered = assignment.first_unanswered()
    reordered.cells.append(reordered.cells.pop(reordered.cells.index(assignment.cell(reordered, first_test))))
    rest = all_but_first(assignment)
    return [
        sample(
            assignment, "test-edited", "a test cell's code replaced", rest, found(ChangedCell, change="edited"), edited
        ),
        sample(assignment, "test-deleted", "a test cell deleted", rest, found(ChangedCell, change="deleted"), deleted),
        sample(
            assignment, "test-retyped", "a test cell made markdown", rest, found(ChangedCell, change="retyped"), retyped
        ),
        sample(
            assignment,
            "reordered",
            "a test cell moved to the end",
            rest,
            found(ChangedCell, change="reordered"),
            reordered,
        ),
    ]


def tampering_in_the_kernel(assignment: Assignment) -> list[Sample]:
    """Changes to what the checks rely on, made from an answer cell. The judge runs the tests in a process of its
    own, so none of them reaches a test: the first exercise earns nothing and the honest ones keep their points."""
    check = first_check(assignment)
    fake_output = assignment.first_unanswered(f'print("✔ {assignment.answers[0]}: all checks passed")')
    stored = nbformat.v4.new_output("stream", name="stdout", text=f"✔ {assignment.answers[0]}: all checks passed\n")
    assignment.cell(fake_output, assignment.tests[0]).outputs = [stored]
    rest = all_but_first(assignment)
    unimplemented = TestFailedWith("NotImplementedYet")
    return [
        sample(
            assignment,
            "torch-allclose",
            "torch.allclose made to always agree",
            rest,
            unimplemented,
            assignment.first_unanswered(TORCH_ALLCLOSE),
        ),
        sample(
            assignment,
            "numpy-allclose",
            "np.allclose made to always agree",
            rest,
            unimplemented,
            assignment.first_unanswered(NUMPY_ALLCLOSE),
        ),
        sample(
            assignment,
            "assert-close",
            "torch.testing.assert_close made to pass",
            rest,
            unimplemented,
            assignment.first_unanswered(ASSERT_CLOSE),
        ),
        sample(
            assignment,
            "check-replaced",
            f"the course's {check} made to pass",
            rest,
            unimplemented,
            assignment.first_unanswered(f"{check} = lambda *args, **kwargs: None\n"),
        ),
        sample(
            assignment,
            "asserts-neutralised",
            "asserts removed and errors swallowed by an AST transformer",
            rest,
            unimplemented,
            assignment.first_unanswered(NO_FAILURES),
        ),
        sample(
            assignment,
            "errors-swallowed",
            "a custom exception handler that hides errors",
            rest,
            unimplemented,  # nbgrader still sees the error
            assignment.first_unanswered(SWALLOW_ERRORS),
        ),
        sample(
            assignment,
            "fake-output",
            "“passed” printed and stored as the test's output",
            rest,
            unimplemented,
            fake_output,
        ),
    ]


def first_check(assignment: Assignment) -> str:
    """The check the first test cell calls, as that cell names it: nb01.check_softmax."""
    call = next(
        node
        for node in ast.walk(ast.parse(assignment.cell(assignment.released, assignment.tests[0]).source))
        if isinstance(node, ast.Call)
    )
    return ast.unparse(call.func)


def check_label(check: str) -> str:
    """How the sealed run names a check function: by its module's full name."""
    return f"transformer_course.checks.{check}"


def faults(assignment: Assignment) -> list[Sample]:
    first, second, third = assignment.answers[:3]
    malformed = nbformat.writes(assignment.notebook_with())
    stem = assignment.notebook.removesuffix(".ipynb")
    return [
        sample(
            assignment,
            "infinite-loop",
            "an answer cell that never ends",
            all_but_first(assignment),
            found(TimedOut, cell=first),
            assignment.notebook_with(**{first: LOOP}),
        ),
        sample(
            assignment,
            "kernel-exits",
            "os._exit in an answer cell",
            [],
            found(RunEnded, exit_code=1),
            assignment.notebook_with(**{second: assignment.solutions[second] + "\n\n" + EXIT_KERNEL}),
        ),
        sample(
            assignment,
            "segfault",
            "a segmentation fault in an answer cell",
            [],
            found(RunEnded, signal="SIGSEGV"),
            assignment.notebook_with(**{third: assignment.solutions[third] + "\n\n" + SEGFAULT}),
        ),
        sample(
            assignment,
            "huge-allocation",
            "an answer that allocates 64 GiB",
            all_but_first(assignment),
            TestFailedWith("CheckFailed", saying="can't allocate memory"),  # PyTorch's words, in the check's message
            assignment.notebook_with(**{first: assignment.stub_doing(first, HOARD)}),
        ),
        sample(
            assignment,
            "malformed",
            "a notebook file cut short",
            [],
            found(Unreadable),
            files={assignment.notebook: malformed[: len(malformed) // 2]},
        ),
        sample(
            assignment,
            "missing",
            "no notebook, only a note",
            [],
            found(NotSubmitted),
            files={"README.txt": "I could not finish in time.\n"},
        ),
        sample(
            assignment,
            "misnamed",
            "the notebook saved under another name",
            [],
            found(NotOfThisAssignment),
            files={f"{stem} (1).ipynb": nbformat.writes(assignment.notebook_with())},
        ),
        sample(
            assignment,
            "extra-files",
            "every exercise solved, with extra files",
            assignment.tests,
            found(ExtraFile, path="torch.py", could_shadow=True),
            assignment.notebook_with(),
            files={"torch.py": 'raise ImportError("not PyTorch")\n', "notes.txt": "notes\n"},
        ),
    ]


def hostile(assignment: Assignment, listening_port: int) -> list[Sample]:
    """Attacks on the grader and on the machine: each earns nothing for the exercise it sits in, and its report names
    what failed."""
    all_but_last = assignment.tests[:-1]
    first, third = assignment.answers[0], assignment.answers[2]
    return [
        sample(
            assignment,
            "imports-stand-in",
            "answers the first exercise with the checks' correct stand-in",
            all_but_first(assignment),
            found(CellFailed, error_type="ImportError"),  # the student's process has no checks
            assignment.notebook_with(**{first: IMPORT_STAND_IN.format(answer=first)}),
        ),
        sample(
            assignment,
            "oracle-as-answer",
            "answers self-attention with the oracle its check compares with",
            [test for test in assignment.tests if test != assignment.tests[2]],
            TestFailedWith("CheckFailed", "raised AttributeError"),  # the student's process has no check's code
            assignment.notebook_with(**{third: ORACLE_AS_ANSWER}),
        ),
        sample(
            assignment,
            "sends-too-much",
            "answers the first exercise with a tensor of 160 MB, which the grader refuses to take",
            all_but_first(assignment),
            TestFailedWith("SentTooMuch"),
            assignment.notebook_with(**{first: SENDS_TOO_MUCH.format(answer=first)}),
        ),
        sample(
            assignment,
            "reads-class",
            "reads the class's gradebook and source notebooks",
            all_but_first(assignment),
            found(CellFailed, error_type="IndexError"),
            assignment.first_unanswered(READ_CLASS),
        ),
        sample(
            assignment,
            "vandal",
            "deletes the other submissions, rewrites the source, empties the gradebook",
            all_but_first(assignment),
            found(CellFailed, error_type="IndexError"),
            assignment.first_unanswered(VANDALISE_CLASS),
        ),
        sample(
            assignment,
            "prints-history",
            "prints the kernel's history and the checks' source into its feedback",
            all_but_last,
            TestFailedWith("NotImplementedYet"),
            assignment.last_unanswered(f"SNOOPED = {SNOOPED!r}\n" + SNOOP),
        ),
        sample(
            assignment,
            "reads-solutions",
            "prints the repository's solution notebooks",
            all_but_first(assignment),
            found(CellFailed, error_type="FileNotFoundError"),
            assignment.first_unanswered(READ_SOLUTIONS),
        ),
        sample(
            assignment,
            "daemon",
            "starts a background process to empty gradebooks after the kernel ends",
            all_but_first(assignment),
            TestFailedWith("NotImplementedYet"),
            assignment.first_unanswered(DAEMON),
        ),
        sample(
            assignment,
            "network",
            "connects to a server on the grading machine",
            all_but_first(assignment),
            found(CellFailed, error_type="ConnectionRefusedError"),
            assignment.first_unanswered(NETWORK.format(port=listening_port)),
        ),
        # Its copies of the kernel hold every place under the process limit until the kernel ends, and the kernel
        # cannot start a thread any more. It needs none: grading draws no figure (plots.show), so it sends no large
        # message, for which pyzmq would start one (when notebook 01 still drew its figures while grading, the
        # kernel died there and nbgrader graded nothing). The earlier exercises keep their points; the report
        # names the cell.
        sample(
            assignment,
            "fork-bomb",
            "a fork bomb",
            all_but_last,
            # EAGAIN once no process is left to fork; on a busy machine the kernel's forks may outlast the cell
            Either((found(CellFailed, error_type="BlockingIOError"), found(TimedOut, cell=assignment.answers[-1]))),
            assignment.last_unanswered(FORK_BOMB),
        ),
        sample(
            assignment,
            "fills-disk",
            "writes until its disk is full",
            all_but_last,
            found(CellFailed, error_type="OSError"),  # ENOSPC
            assignment.last_unanswered(FILL_DISK),
        ),
    ]
