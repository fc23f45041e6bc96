"""How the student's process of the sealed run (``student.py``) runs one of a notebook's cells without IPython.

Magics run as the student meant them (timing a cell still runs it); shell commands do nothing; a figure is closed
once its cell ends; a process that the student's code forked does not go on with the program. The student's
process loads this file by its path: like ``student.py``, it runs under ``python -I`` and uses only the standard
library.
"""

import os
import re
import sys
import time

RUNNER_PID = os.getpid()  # the process itself, not one the student's code forked
MAX_MESSAGE = 2000  # characters of an error message worth reporting

# Cell magics whose body is ordinary code the student wants run; any other magic is skipped here.
RUN_BODY_MAGICS = {"time", "timeit", "capture"}
MAGIC = re.compile(r"^\s*[%!]", re.MULTILINE)  # a line IPython would turn into a call on get_ipython()
MAGIC_OPTIONS = re.compile(r"^(\s*-\w+(\s+\d+)?)*\s*")  # %timeit -n 1 -r 3 code: the options before the code


def print_nothing(*args, **kwargs) -> None:
    """IPython's display(): there is nothing to show in this process."""


class KernelStandIn:
    """What ``get_ipython()`` returns here. Magics run as the student meant (timing a cell still runs it); any
    other use of the kernel (``set_custom_exc``, input transformers) does nothing: no test runs in this process."""

    def __init__(self, namespace: dict):
        self._namespace = namespace

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
