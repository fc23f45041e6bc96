"""The sealed run of one submission: the notebook's graded checks, run again in a fresh Python process.

The autograder (``sealed_run.py``) starts this file as ``python -I runner.py CHANNEL`` in an
empty folder (in the grading sandbox, ``sandbox.py``) and sends on stdin a secret, on a line of its
own, then the program: a JSON list of the cells to run, in the source notebook's order, the course's cells and
test cells from the instructor's source, the student's code where the student writes it. No IPython runs here,
so nothing the student's code does to a kernel counts.

Before the first cell of the student's, this process records what the checks rely on: every loaded module's
functions, classes and their methods, the code of every Python function in them, the notebook names the
test cells use, and global hooks (trace functions, PyTorch's function modes and its dispatcher table). After
every cell it compares; a test cell passes only if it raised nothing and nothing recorded has changed.
Verdicts go to the file descriptor CHANNEL as JSON lines carrying the secret; the student's output goes
elsewhere, so printing "passed" proves nothing. Only the standard library is imported before the
notebook's own imports. The program arrives on stdin, not in a file, so that no file holds the hidden tests
for the student's code to read.
"""

import ast
import builtins
import json
import os
import re
import signal
import sys
import threading
import time
import types
from collections.abc import Callable

RUNNER_PID = os.getpid()  # the runner itself, not a process the student's code forked
MAX_MESSAGE = 2000  # characters of an error message worth reporting
MAX_CHANGES_NAMED = 5  # a report names this many changes, then counts the rest

# Cell magics whose body is ordinary code the student wants run; any other magic is skipped here.
RUN_BODY_MAGICS = {"time", "timeit", "capture"}
MAGIC = re.compile(r"^\s*[%!]", re.MULTILINE)  # a line IPython would turn into a call on get_ipython()
MAGIC_OPTIONS = re.compile(r"^(\s*-\w+(\s+\d+)?)*\s*")  # %timeit -n 1 -r 3 code: the options before the code


def main() -> None:
    # An interrupt is how a cell that runs too long is stopped; a shell may have started us ignoring it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    channel = Channel(int(sys.argv[1]), sys.stdin.readline().strip())
    cells = json.loads(sys.stdin.read())
    namespace = {"__name__": "__main__", "__builtins__": builtins}
    kernel = KernelStandIn(namespace)
    namespace.update(get_ipython=kernel.get_ipython, display=print_nothing)
    import_course_modules(cells)

    first_student_cell = next((i for i, cell in enumerate(cells) if cell["role"] == "student"), len(cells))
    for cell in cells[:first_student_cell]:
        execute(cell, namespace, kernel)  # the course's own set-up, before any student code
    settle_pytorch()
    baseline = Baseline(namespace, cells)
    reported: list[str] = []
    for index, cell in enumerate(cells[first_student_cell:], start=first_student_cell):
        channel.send(event="start", cell=index)
        error = execute(cell, namespace, kernel)
        if cell["role"] == "course":
            continue  # the course's demonstrations; a change they let through is found after the next test
        changes = baseline.changes() + kernel.calls
        if new := [change for change in changes if change not in reported]:
            channel.send(event="tampering", cell=cell["name"], changes=named(new))
            reported += new
        if cell["role"] == "test":
            passed = error is None and not changes
            channel.send(event="test", name=cell["name"], passed=passed, error=error, tampering=named(changes))
        elif error is not None:
            channel.send(event="cell_error", name=cell["name"], error=error)
    channel.send(event="done")


class Channel:
    """Verdicts as JSON lines on an inherited file descriptor, each carrying the secret from stdin."""

    def __init__(self, fd: int, secret: str):
        self._fd, self._secret, self._pid = fd, secret, os.getpid()

    def send(self, **message) -> None:
        if os.getpid() != self._pid:  # a process the student's code forked says nothing
            os._exit(0)
        line = json.dumps({**message, "secret": self._secret}) + "\n"
        os.write(self._fd, line.encode("utf-8"))


def print_nothing(*args, **kwargs) -> None:
    """IPython's display(): there is nothing to show in this process."""


class KernelStandIn:
    """What ``get_ipython()`` returns here. Magics run as the student meant (timing a cell still runs it); any
    other use of the kernel, such as ``set_custom_exc`` or input transformers, can only serve to change how
    tests are run or reported, so it is recorded as tampering."""

    def __init__(self, namespace: dict):
        self._namespace = namespace
        self.calls: list[list[str]] = []  # [what was touched, what was done], as Baseline.changes

    def get_ipython(self) -> "KernelStandIn":
        return self

    def run_line_magic(self, name: str, line: str, *args, **kwargs) -> None:
        if name in RUN_BODY_MAGICS:
            exec(compile(MAGIC_OPTIONS.sub("", line), "<magic>", "exec"), self._namespace)

    def run_cell_magic(self, name: str, line: str, body: str, *args, **kwargs) -> None:
        if name in RUN_BODY_MAGICS:
            exec(compile(transformed(body), "<magic>", "exec"), self._namespace)

    def system(self, *args, **kwargs) -> None:
        """Shell commands (`!ls`) do nothing here."""

    getoutput = system

    def __getattr__(self, name: str) -> "Absorber":
        subject = f"get_ipython().{name}"
        use = [subject, f"called {subject}, which changes how the notebook runs or reports errors"]
        if use not in self.calls:
            self.calls.append(use)
        return Absorber()


class Absorber:
    """Stands for any part of a kernel the student's code reaches for: does nothing, whatever is asked of it."""

    def __getattr__(self, name: str) -> "Absorber":
        return self

    def __call__(self, *args, **kwargs) -> "Absorber":
        return self

    def __getitem__(self, item) -> "Absorber":
        return self

    def __setitem__(self, item, value) -> None:
        pass

    def __iter__(self):
        return iter(())


def transformed(source: str) -> str:
    """The cell as IPython would run it: magics become calls on get_ipython()."""
    if not MAGIC.search(source):
        return source
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def execute(cell: dict, namespace: dict, kernel: KernelStandIn) -> list[str] | None:
    """Run one cell; return its error as [its type's name, its message], or None."""
    try:
        code = compile(transformed(cell["source"]), f"<cell {cell['name']}>", "exec")
        exec(code, namespace)
    except BaseException as error:  # noqa: B036 - SystemExit and KeyboardInterrupt fail a cell like any error
        return describe(error)
    finally:
        stay_out_if_forked()
        close_figures()
    return None


def stay_out_if_forked() -> None:
    """A process the student's code forked does not go on with the program. It waits to be stopped with the run,
    keeping its place under the sandbox's process limit: were it to exit, a fork bomb's survivors would fork again
    into the place it left, for as long as any of them is left."""
    if os.getpid() != RUNNER_PID:
        while True:
            time.sleep(3600)


def describe(error: BaseException) -> list[str]:
    try:
        message = str(error)
    except BaseException:  # noqa: B036 - an exception whose str() fails is still a failure
        message = ""
    return [type(error).__name__, message[:MAX_MESSAGE]]


def close_figures() -> None:
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")


def import_course_modules(cells: list[dict]) -> None:
    """Import every module the course's cells import, so that all of them are recorded before student code."""
    for cell in cells:
        if cell["role"] == "student":
            continue
        try:
            tree = ast.parse(transformed(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                exec(compile(ast.Module([node], []), "<imports>", "exec"), {})


def settle_pytorch() -> None:
    """Let PyTorch do now the set-up it does on first use of an optimizer, so that it is not taken for the
    student's later: the first Optimizer wraps its class's step, and importing TorchDynamo (which optimizers
    do) wraps torch.manual_seed, fills torch.compiler's caches and registers kernels."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    import torch._dynamo  # noqa: F401

    parameter = torch.nn.Parameter(torch.zeros(1))
    parameter.grad = torch.zeros(1)
    for optimizer in (torch.optim.Adam, torch.optim.AdamW, torch.optim.SGD):
        optimizer([parameter]).step()


class Baseline:
    """What the checks rely on, recorded before the student's code runs, and the changes made to it since."""

    def __init__(self, namespace: dict, cells: list[dict]):
        self.bindings: list[tuple[object, str, object, str]] = []  # (live mapping, key, value, label)
        # (function, its code, defaults and keyword defaults, label), and (closure cell, what it held, label)
        self.functions: list[tuple[types.FunctionType, types.CodeType, object, object, str]] = []
        self.closures: list[tuple[types.CellType, object, str]] = []
        recorded: set[int] = set()
        for module_name, module in list(sys.modules.items()):
            if isinstance(module, types.ModuleType) and module_name != "__main__":
                self.bindings.append((sys.modules, module_name, module, f"the module {module_name}"))
                self._record(vars(module), module_name, recorded)
        test_names = set().union(*(names_used(cell["source"]) for cell in cells if cell["role"] == "test"))
        for name in sorted(test_names & set(namespace)) + ["__builtins__"]:
            self.bindings.append((namespace, name, namespace[name], f"the notebook's name {name}"))
        self.hooks = {name: read() for name, (_, read) in global_hooks().items()}
        self.threads = set(threading.enumerate())

    def _record(self, mapping, owner: str, recorded: set[int]) -> None:
        """Record the behaviour in a module's or class's live mapping, and inside each function and class once."""
        for key, value in list(mapping.items()):
            if not is_behaviour(value):
                continue
            self.bindings.append((mapping, key, value, f"{owner}.{key}"))
            if id(value) in recorded:
                continue
            recorded.add(id(value))  # the value stays referenced in self.bindings, so its id stays unique
            if isinstance(value, types.FunctionType):
                label = f"{owner}.{key}"
                self.functions.append((value, value.__code__, value.__defaults__, value.__kwdefaults__, label))
                self.closures += [(cell, contents(cell), label) for cell in value.__closure__ or ()]
            elif isinstance(value, type):
                self._record(vars(value), f"{value.__module__}.{value.__qualname__}", recorded)

    def changes(self) -> list[list[str]]:
        """Every change since the baseline. It runs after each of the student's cells, over tens of thousands of
        recorded entries, so it compares by identity and looks closer only where something differs. Each change is
        [what was touched, what was done]: ["torch.allclose", "replaced torch.allclose"]."""
        found = []
        missing = object()
        for mapping, key, value, label in self.bindings:
            if mapping.get(key, missing) is not value:
                found.append([subject(label), f"{'removed' if key not in mapping else 'replaced'} {label}"])
        for function, code, defaults, kwdefaults, label in self.functions:
            if function.__code__ is not code or function.__defaults__ is not defaults:
                found.append([label, f"replaced the code of {label}"])
            elif function.__kwdefaults__ is not kwdefaults:
                found.append([label, f"replaced the code of {label}"])
        for cell, held, label in self.closures:
            # A function it closes over is part of what a function does; data it closes over may change.
            now = contents(cell)
            if now is not held and (callable(held) or callable(now)):
                found.append([label, f"replaced the code of {label}"])
        for name, (description, read) in global_hooks().items():
            if read() != self.hooks[name]:
                found.append([name, f"changed {description}"])
        found += [["a thread", f"left a thread running ({thread.name})"] for thread in students_threads(self.threads)]
        return found


def is_behaviour(value) -> bool:
    """Whether a module or class entry is code the checks may call (not data such as caches or counters)."""
    return callable(value) or isinstance(value, types.ModuleType | staticmethod | classmethod | property)


EMPTY = object()  # what an empty closure cell holds, here


def contents(cell: types.CellType) -> object:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return EMPTY


def names_used(source: str) -> set[str]:
    """The global names a cell's code reads."""
    try:
        code = compile(transformed(source), "<test>", "exec")
    except SyntaxError:
        return set()
    names, pending = set(), [code]
    while pending:
        code = pending.pop()
        names.update(code.co_names)
        pending += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    return names


def global_hooks() -> dict[str, tuple[str, Callable[[], object]]]:
    """Process-wide settings that change what code does without rebinding a name: by the name that sets each, its
    description and how to read it."""
    hooks = {
        "sys.settrace": ("the trace function (sys.settrace)", sys.gettrace),
        "sys.setprofile": ("the profile function (sys.setprofile)", sys.getprofile),
        "threading.settrace": ("the trace function of new threads (threading.settrace)", threading.gettrace),
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        hooks |= {
            "TorchFunctionMode": ("PyTorch's active function modes", torch._C._len_torch_function_stack),
            "TorchDispatchMode": ("PyTorch's active dispatch modes", torch._C._len_torch_dispatch_stack),
            "torch.set_default_dtype": ("PyTorch's default dtype", torch.get_default_dtype),
            "torch.library": ("PyTorch's kernels (torch.library)", dispatcher_table(torch)),
        }
    return hooks


def subject(label: str) -> str:
    """What a recorded entry's label names: the module X, the notebook's name N, or the dotted name itself."""
    return label.removeprefix("the module ").removeprefix("the notebook's name ")


def dispatcher_table(torch) -> Callable[[], int]:
    """A fingerprint of the kernels registered for PyTorch's operators that exist now."""
    names = torch._C._dispatch_get_all_op_names()
    return lambda: hash(tuple(torch._C._dispatch_dump(name) for name in names))


def students_threads(before: set) -> list[threading.Thread]:
    """Threads started since the baseline whose code comes from the student's cells."""
    found = []
    for thread in set(threading.enumerate()) - before:
        target = getattr(thread, "_target", None) or type(thread).run
        filename = getattr(getattr(target, "__code__", None), "co_filename", "")
        if filename.startswith("<cell "):
            found.append(thread)
    return found


def named(changes: list[list[str]]) -> list[list[str]]:
    if len(changes) <= MAX_CHANGES_NAMED:
        return changes
    more = len(changes) - MAX_CHANGES_NAMED
    return changes[:MAX_CHANGES_NAMED] + [[f"{more} more", f"and {more} more changes"]]


if __name__ == "__main__":
    main()
