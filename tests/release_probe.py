"""What a student's Python makes of a release: its notebooks' set-up cells, and every callable it holds tried as
the answer to every check of the notebooks from NN on.

    python tests/release_probe.py RELEASE NN

Run by tests/test_release.py in a process of its own with PYTHONPATH=RELEASE/src and no install, so that the
released package is ``transformer_course`` exactly as a student's notebook imports it. First it runs the first code
cell (the set-up: the imports) of every released notebook; then it tries the callables. The judges are the
instructor's checks, loaded from this repository under another name, so that a check of a notebook the release
does not hold judges too, with the correct stand-ins of earlier exercises in place. It prints a line for each
set-up cell that failed and for each callable that passed a check (none of either, when all is well), then what it
tried.
"""

import contextlib
import importlib
import importlib.util
import inspect
import io
import json
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

INSTRUCTOR_PACKAGE = Path(__file__).resolve().parent.parent / "src" / "transformer_course"
ALIAS = "instructor_course"
SECONDS_PER_CALL = 20  # a candidate that makes a check loop forever counts as failing it, not as hanging the test


def instructor_checks(first: int) -> dict[str, Callable]:
    """The learner-facing checks of notebooks ``first`` and later, by name, from the instructor's package.

    The reference modules the release holds are shared with it, so that a released class is the very class a
    check expects (nb06's checks ask for a reference MultiHeadAttention by isinstance).
    """
    for name, module in list(sys.modules.items()):
        if name.startswith("transformer_course.reference."):
            sys.modules[name.replace("transformer_course", ALIAS, 1)] = module
    spec = importlib.util.spec_from_file_location(
        ALIAS, INSTRUCTOR_PACKAGE / "__init__.py", submodule_search_locations=[str(INSTRUCTOR_PACKAGE)]
    )
    package = importlib.util.module_from_spec(spec)
    sys.modules[ALIAS] = package
    spec.loader.exec_module(package)
    checks = {}
    for path in sorted((INSTRUCTOR_PACKAGE / "checks").glob("nb[0-9][0-9].py")):
        if int(path.stem[2:]) >= first:
            module = importlib.import_module(f"{ALIAS}.checks.{path.stem}")
            learner_facing = {name: value for name, value in vars(module).items() if name.startswith("check_")}
            checks |= {f"{path.stem}.{name}": value for name, value in learner_facing.items()}
    return checks


def released_callables(package: Path) -> dict[str, Callable]:
    """Every function and class defined in a module of the released package, private ones too, by name."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        module = importlib.import_module(name)
        for attribute, value in vars(module).items():
            defined_here = getattr(value, "__module__", None) == name
            if defined_here and (inspect.isfunction(value) or inspect.isclass(value)):
                found[f"{name}.{attribute}"] = value
    return found


@contextlib.contextmanager
def quiet_and_limited() -> Iterator[None]:
    def too_long(signum, frame):
        raise TimeoutError(f"more than {SECONDS_PER_CALL} s")

    previous = signal.signal(signal.SIGALRM, too_long)
    signal.alarm(SECONDS_PER_CALL)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def passes(check: Callable, candidate: Callable) -> bool:
    try:
        with quiet_and_limited():
            check(candidate)
    except Exception:
        return False
    return True


def set_up_cells_fail(release: Path) -> list[str]:
    """Run the set-up cell of every released notebook, each in a namespace of its own; return the failures."""
    failures = []
    for notebook in sorted((release / "notebooks").glob("*/*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]  # plain JSON: nbformat takes 1 s to import
        set_up = "".join(next(cell for cell in cells if cell["cell_type"] == "code")["source"])
        try:
            exec(compile(set_up, str(notebook), "exec"), {})
        except Exception:
            failures.append(f"{notebook.name}: {traceback.format_exc(limit=-1).strip()}")
    return failures


def main(release: Path, first: int) -> None:
    for failure in set_up_cells_fail(release):
        print(f"SET-UP FAILS {failure}", flush=True)
    candidates = released_callables(release / "src" / "transformer_course")
    checks = instructor_checks(first)  # after the release's modules are loaded: it shares its reference modules
    for candidate_name, candidate in candidates.items():
        for check_name, check in checks.items():
            if passes(check, candidate):
                print(f"PASSES {check_name}: {candidate_name}", flush=True)
    print(f"tried {len(candidates)} callables on {len(checks)} checks")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
