"""The student's process of the sealed run: the notebook's own cells and the learner's code, and no judge.

The judge (``judge.py``) starts this file as ``python -I student.py READ_FD WRITE_FD`` in the grading sandbox and
talks to it over the two pipes (``wire.py``, ``peer.py``). It sends the program first: the notebook's code cells in
the source's order, with the test cells' source left out, so that no hidden test ever enters this process. Then it
asks, one request at a time: run cell i; what is the value of a name; call this object with these arguments;
the gradients of that call. Values go back as plain data, objects as handles that mean something only here.

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

    def __init__(self, pipe, cells: list[dict]):
        super().__init__(pipe)
        self.cells = cells
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.kernel = runner.KernelStandIn(self.namespace)
        self.namespace.update(get_ipython=self.kernel.get_ipython, display=runner.print_nothing)

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


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # how the judge stops a cell that runs too long
    sys.meta_path.insert(0, NoChecksHere())
    pipe = wire.Pipe(int(sys.argv[1]), int(sys.argv[2]))
    student = Student(pipe, pipe.receive())
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
