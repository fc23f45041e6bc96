"""The student's side of grading: the notebook's own cells and the learner's code, and no judge.

It serves in two places, both in the grading sandbox:

- **nbgrader's kernel.** The kernel loads this file when it starts (``nbgrader_steps.KERNEL_START``) and runs
  the course's and the student's cells as any kernel does. For each test cell it runs ``serve_judge`` instead,
  which connects to the judge of that cell over a Unix socket and answers it until the test is done.
- **The sealed run** (``sealed_run.py``), where nbgrader's kernel could not finish: the judge starts this file as
  ``python -I student.py READ_FD WRITE_FD`` and sends the program first, the notebook's code cells with the test
  cells' source left out.

Either way no test cell's source, hidden tests included, ever enters this process. The judge asks, one request at
a time: run cell i; what is the value of a name; call this object with these arguments; the gradients of that
call (``wire.py``, ``peer.py``). Values go back as plain data, objects as handles that mean something only here.

The sandbox shows this process neither the course's checks nor their correct stand-ins (``sandbox.Sandbox.hidden``).
A set-up cell still imports ``transformer_course.checks``: it gets an empty module, whose names the judge holds.

Whatever the learner's code does here, to PyTorch, to this file or to the pipes, it can only change the values
this process sends: the learner's own answers. The judge decides what they earn.
"""

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import signal
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
HIDDEN_PACKAGE = "transformer_course.checks"  # the judge's; an empty module here


def load(name: str) -> types.ModuleType:
    """One of the autograder's files beside this one: with ``python -I`` this folder is not on the import path."""
    spec = importlib.util.spec_from_file_location(f"_grading_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wire = load("wire")
peer = load("peer")
runner = load("runner")  # how a notebook's cell runs without IPython: magics, figures, forks


class Student(peer.Peer):
    """Runs the cells it is asked to, and the learner's objects for the judge."""

    SIGN = 1

    def __init__(self, pipe, cells: list[dict], namespace: dict | None = None):
        """``namespace``: the notebook's, in nbgrader's kernel; None for a namespace of its own, without IPython."""
        super().__init__(pipe)
        self.cells = cells
        if namespace is None:
            namespace = {"__name__": "__main__", "__builtins__": builtins}
            self.kernel = runner.KernelStandIn(namespace)
            namespace.update(get_ipython=self.kernel.get_ipython, display=runner.print_nothing)
        self.namespace = namespace

    def answer(self, message: dict) -> dict:
        try:
            if message.get("op") == "run_cell":
                return {"value": runner.execute(self.cells[int(message["index"])], self.namespace, self.kernel)}
            if message.get("op") == "lookup":
                return self.lookup(str(message["name"]))
            if message.get("op") == "forget":  # a test ended
                self.forget()
                return {"value": None}
            return super().answer(message)
        finally:
            runner.stay_out_if_forked()

    def lookup(self, name: str) -> dict:
        if name not in self.namespace:
            raise NameError(f"name {name!r} is not defined")
        return self.reply(self.namespace[name])

    def lending(self, names: list, infos: dict):
        """The judge's correct versions of earlier exercises, under the notebook's names while the call runs."""
        return Lent(self.namespace, {str(name): self.imported(handle, infos) for name, handle in names})


class Lent:
    def __init__(self, namespace: dict, parts: dict):
        self.namespace, self.parts, self.saved = namespace, parts, {}

    def __enter__(self):
        self.saved = {name: self.namespace.get(name, ABSENT) for name in self.parts}
        self.namespace.update(self.parts)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if value is ABSENT:
                self.namespace.pop(name, None)
            else:
                self.namespace[name] = value


ABSENT = object()


class NoChecksHere(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``transformer_course.checks`` and its modules, empty: the checks are the judge's."""

    def find_spec(self, name, path=None, target=None):
        if name == HIDDEN_PACKAGE or name.startswith(HIDDEN_PACKAGE + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=name == HIDDEN_PACKAGE)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        def absent(name):
            raise AttributeError(f"{module.__name__}.{name}: the course's checks run in the judge, not in this process")

        module.__getattr__ = absent
        if module.__name__ == HIDDEN_PACKAGE:
            module.__path__ = []


def hide_checks() -> None:
    """From now on, ``transformer_course.checks`` and its modules import as empty modules."""
    if not any(isinstance(finder, NoChecksHere) for finder in sys.meta_path):
        sys.meta_path.insert(0, NoChecksHere())


def serve_judge(address: str) -> None:
    """In nbgrader's kernel, as a test cell: answer that cell's judge, at the Unix socket ``address``, until the
    test is done. The learner's names are the notebook's."""
    import socket

    from IPython import get_ipython

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.connect(address)
        descriptor = connection.fileno()
        serve(Student(wire.Pipe(descriptor, descriptor), [], get_ipython().user_ns))


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # how the judge stops a cell that runs too long
    hide_checks()
    pipe = wire.Pipe(int(sys.argv[1]), int(sys.argv[2]))
    serve(Student(pipe, pipe.receive()))


def serve(student: Student) -> None:
    """Answer the judge until it says stop, or is gone."""
    while True:
        try:
            message = student.receive()
        except KeyboardInterrupt:  # an interrupt that came after its cell ended
            continue
        except (EOFError, wire.WireError, peer.RemoteError):  # the judge is gone, or the pipe broke
            return
        if message.get("op") == "stop":
            return
        student.serve(message)


if __name__ == "__main__":
    main()
