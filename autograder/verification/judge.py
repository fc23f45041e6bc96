"""The judge of the sealed run: runs a notebook's graded tests in the grader's process, where no student code runs.

The student's code runs in a process of its own (``student.py``), in the grading sandbox. The judge sends it the
notebook's cells to run, one at a time, except the test cells, which it runs itself: their source comes from the
instructor's notebook, and the checks they call, with their oracles and the correct stand-ins for earlier
exercises, are imported here. A name a test cell uses that the course's imports do not define (the learner's
function or class) is looked up in the student's process and stands here as a proxy (``peer.py``): calling it sends
the arguments as plain values (``wire.py``) and returns the result as plain values, with gradients across; a
learner's module stands here as a mirror, whose parameters are kept equal to the learner's in both directions and
whose forward runs in the student's process.

The global random state travels with every call, so a learner's module built after ``torch.manual_seed`` starts
from the same weights as it would in one process. While a check lends correct earlier exercises
(``checks.earlier_exercises_replaced``), the learner's code finds them under their names; they run here and only
their values cross. Nothing the student's process sends is run or unpickled: a compromised process can only lie
about its own results, which are its answers anyway.
"""

import ast
import builtins
import contextlib
import io
import os
import select
import signal
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

from autograder.verification import peer, wire
from autograder.verification.peer import RemoteError

HERE = Path(__file__).resolve().parent
STUDENT_FILES = tuple(str(HERE / name) for name in ("student.py", "wire.py", "peer.py", "runner.py"))


# The special methods a lent object answers (len(cache), cache[i]): what a container does, nothing of its code.
CONTAINER_PROTOCOL = frozenset({"__len__", "__getitem__", "__contains__"})
HANDED_OVER = "_handed_over"  # the mark of transformer_course.checks.handed_over on each part of a module


# Bytes the student's process may send the judge while one test runs: the judge keeps what arrives (mirrors of the
# learner's modules, their tensors) until the test ends, and it runs outside the sandbox. The course's tests take at
# most a few MiB each (3.3 in notebook 10, measured on its solution and kept wrong answers).
MAX_RECEIVED_PER_TEST = 2**27  # below wire.MAX_MESSAGE: one message past that is a broken stream


class Stopped(Exception):
    """The student's process is gone (ended, killed after ignoring an interrupt, or broke the pipe's framing)."""


class SentTooMuch(Stopped):
    """The student's process sent more than MAX_RECEIVED_PER_TEST during one test; the judge stops listening."""


@dataclass
class Clock:
    """The time limit of the cell being run, and what happened to it."""

    timeout: float
    deadline: float = 0.0
    interrupted: bool = False

    def start(self) -> None:
        self.deadline, self.interrupted = time.monotonic() + self.timeout, False


# What the learner's code sees as the class name of the checks' own functions, modules, classes and objects.
ANONYMOUS = {"function": "function", "module": "Module", "class": "type", "object": "object"}


class DeadlinePipe(wire.Pipe):
    """The judge's end: every read and write waits at most until the cell's deadline (``wait``)."""

    def __init__(self, read_fd: int, write_fd: int, wait):
        super().__init__(read_fd, write_fd)
        self.wait = wait
        os.set_blocking(write_fd, False)

    received = 0  # bytes of the messages read since the test began (Judge.run_test)

    def wait_readable(self) -> None:
        self.wait(self.read_fd, readable=True)

    def receive_bytes(self) -> bytes:
        (length,) = wire.HEADER.unpack(self._read(wire.HEADER.size))
        if length > wire.MAX_MESSAGE:  # a broken or forged stream, not a large answer
            raise wire.WireError(f"a message of {length} bytes")
        self.received += length
        if self.received > MAX_RECEIVED_PER_TEST:
            raise SentTooMuch(
                f"your code sent the grader more than {MAX_RECEIVED_PER_TEST // 2**20} MiB during one test (a "
                "module or tensor far larger than the exercise needs?), so the grader stopped it"
            )
        return self._read(length)

    def send_bytes(self, message: bytes) -> None:
        data = wire.HEADER.pack(len(message)) + message
        while data:
            self.wait(self.write_fd, readable=False)
            try:
                written = os.write(self.write_fd, data)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise Stopped("the student's process ended") from None
            data = data[written:]


class Judge(peer.Peer):
    """Runs test cells here and everything else in the student's process."""

    SIGN = -1
    RUNS_DESCRIBED_MODULES = False
    KEEPS_OWN_MODULES = True

    def __init__(self, read_fd: int, write_fd: int, group: int, cell_timeout: float, grace: float, imports: dict):
        super().__init__(DeadlinePipe(read_fd, write_fd, self.wait))
        self.group, self.clock, self.grace = group, Clock(cell_timeout), grace
        self.killed = False  # stopped for ignoring an interrupt
        self.lent_names: dict[str, object] = {}  # what the learner's code finds under these names while a check runs
        self.imports = imports  # what the course's cells import (``course_imports``): the names test cells use
        self.malformed = 0

    # --- the pipe, with the cell's time limit -------------------------------------------------------------------

    def receive(self):
        try:
            return super().receive()
        except EOFError:
            raise Stopped("the student's process ended") from None
        except (wire.WireError, RemoteError):
            self.malformed += 1
            raise Stopped("the student's process sent a malformed message") from None

    def wait(self, fd: int, readable: bool) -> None:
        """Block until the pipe can be read or written, interrupting the student's code at the deadline and
        killing its process when it does not stop."""
        while True:
            left = self.clock.deadline - time.monotonic()
            ready = select.select([fd] if readable else [], [] if readable else [fd], [], max(0.0, left))
            if ready[0] or ready[1]:
                return
            if self.clock.interrupted:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.group, signal.SIGKILL)
                self.killed = True
                raise Stopped("it did not stop when interrupted")
            self.clock.interrupted = True
            self.clock.deadline = time.monotonic() + self.grace
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.group, signal.SIGINT)

    # --- cells ----------------------------------------------------------------------------------------------

    def run_cell(self, index: int) -> list[str] | None:
        """Run the program's cell ``index`` in the student's process; its error, or None."""
        self.clock.start()
        return self.request("run_cell", index=index)["value"]

    def run_test(self, source: str) -> "TestRun":
        """Run a test cell here, the learner's names as proxies: its error, and what it printed."""
        self.clock.start()
        self.pipe.received = 0
        namespace, printed = dict(self.imports), io.StringIO()
        try:
            for name in sorted(names_used(source) - set(namespace) - set(vars(builtins))):
                with contextlib.suppress(RemoteError):
                    namespace[name] = self.value_of(self.request("lookup", name=name), None)
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, "<test>", "exec"), namespace)
        except Stopped:
            raise
        except BaseException as error:  # noqa: B036 - any error fails the test
            return TestRun(peer.describe(error), printed.getvalue(), self.clock.interrupted)
        finally:
            self.take_back()
        return TestRun(None, printed.getvalue(), self.clock.interrupted)

    def take_back(self) -> None:
        """After each test, both sides forget every handle: nothing the judge lent stays callable, and no mirror of
        an earlier test is kept in step at every message."""
        self.lent_names.clear()
        self.request("forget")
        self.forget()

    # --- what the judge lends ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def lending_names(self, parts: dict):
        """While a check runs, the learner's code finds these correct versions under their names."""
        before = dict(self.lent_names)
        self.lent_names.update(parts)
        try:
            yield
        finally:
            self.lent_names = before

    def info(self, number: int, value, objects: dict) -> dict:
        """As the other side describes an object, but what the judge passes goes by no name of the checks': a
        formula fitted to the check's cases could tell them apart by it (a running sum, a scripted model). PyTorch's
        classes and the reference ones, which the learner has too, keep theirs."""
        found = super().info(number, value, objects)
        kind = value if isinstance(value, type) else type(value)
        if found["kind"] == "function" or not kind.__module__.startswith(("torch.", *peer.TRUSTED_MODULES)):
            found["name"] = ANONYMOUS.get(found["kind"], "object")
        if found["kind"] == "module":
            found["complete"] = runs_where_handed(value)
        return found

    def lent_for_call(self, objects: dict) -> list:
        return [[name, self.exported(value, objects)] for name, value in self.lent_names.items()]

    def on_getattr(self, message: dict) -> dict:
        """Attributes of what the judge lent, for the learner's code that uses them (``model.encode``,
        ``model.block_size``): public ones of objects only, never of a function or class (whose module and
        globals would lead to every correct answer), and of a module none of torch.nn.Module's own, which the
        learner's copy of it has already (hooks, load_state_dict, apply: they act on that copy, never here)."""
        target, name = self.own_target(message), str(message["name"])
        private = name.startswith("_") and name not in CONTAINER_PROTOCOL
        hidden = private or isinstance(target, type) or not hasattr(target, "__dict__")
        module = sys.modules.get("torch.nn")
        hidden = hidden or (module is not None and isinstance(target, module.Module) and hasattr(module.Module, name))
        if hidden or isinstance(target, types.FunctionType | types.MethodType | types.BuiltinFunctionType):
            raise PermissionError(f"the judge does not show {name!r} of what it lends")
        return super().on_getattr(message)


@dataclass
class TestRun:
    """What a test cell did in the judge."""

    error: list | None  # [type, message, built-in base] of the error that failed it, or None when it passed
    printed: str  # what the check printed (its ✔ line)
    interrupted: bool  # the learner's code ran past the cell's time limit
    processor_limit: float = 0.0  # when not 0: it was interrupted for using this much processor time

    @property
    def failure(self) -> tuple[str, str] | None:
        """Why the test earns nothing, as (the error's type, its message); None when it passed."""
        if self.processor_limit:
            return "TimeoutError", f"it used more than {self.processor_limit:g} s of processor time and was interrupted"
        if self.interrupted:
            return "TimeoutError", "it ran longer than the time limit and was interrupted"
        return None if self.error is None else (self.error[0], self.error[1])


def runs_where_handed(module) -> bool:
    """Whether a module the judge passes runs in the student's process, as a copy of PyTorch's or a reference class
    that only the learner's code there changes (a training loop's optimizer, its train()), or stays here, its
    forward called across, its hooks seeing every call, what the learner does to it left on their side.

    Here, unless a check handed it over (``transformer_course.checks.handed_over``: a whole module of the classes
    both sides trust, without hooks), whatever its description says: the judge decides what runs where."""
    if not module.__dict__.get(HANDED_OVER):
        return False
    hooked = any(getattr(module, f"_{kind}_hooks", None) for kind in ("forward", "forward_pre", "backward"))
    state = {name: value for name, value in vars(module).items() if name not in peer.MODULE_INTERNALS}
    plain = all(peer.is_plain(value, sys.modules["torch"]) for name, value in state.items() if "_hooks" not in name)
    return plain and not hooked


def course_imports(sources: list[str]) -> dict:
    """What the course's cells import (the checks among them), imported here: the names test cells use."""
    imports: dict = {"__builtins__": builtins}
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                exec(compile(ast.Module([node], []), "<imports>", "exec"), imports)
    return imports


def names_used(source: str) -> set[str]:
    """The global names a cell's code reads."""
    try:
        code = compile(source, "<test>", "exec")
    except SyntaxError:
        return set()
    names, pending = set(), [code]
    while pending:
        code = pending.pop()
        names.update(code.co_names)
        pending += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    return names
