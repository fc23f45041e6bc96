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
import functools
import importlib
import importlib.util
import inspect
import io
import itertools
import json
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

INSTRUCTOR_PACKAGE = Path(__file__).resolve().parent.parent / "src" / "transformer_course"
ALIAS = "instructor_course"
MAX_FILLINGS = 12  # ways to fill one candidate's keyword-only arguments
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


def constants(function: Callable) -> list:
    """The plain constants that a function's code holds (its strings and numbers), nested functions' included: the
    values a student would try for its keyword-only arguments, having read it."""
    code = getattr(inspect.unwrap(function), "__code__", None)
    found, pending = [], [code] if code else []
    while pending:
        code = pending.pop()
        for value in code.co_consts:
            if hasattr(value, "co_consts"):
                pending.append(value)
            elif type(value) in (str, int, float) and value not in found and len(str(value)) < 40:
                found.append(value)
    return found


def required_keywords(candidate: Callable) -> list[str]:
    try:
        parameters = inspect.signature(candidate).parameters.values()
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty]


def keyword_fillings(candidate: Callable) -> list[dict]:
    """Ways to fill the candidate's required keyword-only arguments: None, booleans and the constants of its code
    (of its __init__ for a class), at most MAX_FILLINGS of them."""
    names = required_keywords(candidate)
    if not names:
        return []
    source = candidate.__init__ if inspect.isclass(candidate) else candidate
    values = [None, True, False, *constants(source)]
    return [dict(zip(names, chosen, strict=True)) for chosen in itertools.product(values, repeat=len(names))][
        :MAX_FILLINGS
    ]


def first_of_result(function: Callable) -> Callable:
    """The function's result, or its first element when it returns a tuple (an oracle's (outputs, weights))."""

    @functools.wraps(function)
    def first(*args, **kwargs):
        result = function(*args, **kwargs)
        return result[0] if type(result) is tuple and result else result

    return first


def wrapped_forms(name: str, candidate: Callable) -> dict[str, Callable]:
    """The candidate as a student who read its source could use it: as it is, with its keyword-only arguments
    filled in (a class: subclassed to fill them), and, for a function, taking the first of what it returns."""
    forms = {name: candidate}
    for filling in keyword_fillings(candidate):
        label = f"{name}({', '.join(f'{key}={value!r}' for key, value in filling.items())})"
        if inspect.isclass(candidate):
            forms[label] = type(candidate.__name__, (candidate,), {"__init__": filled_init(candidate, filling)})
        else:
            forms[label] = filled_call(candidate, filling)
    if not inspect.isclass(candidate):
        forms |= {f"{label}[0]": first_of_result(form) for label, form in list(forms.items())}
    return forms


def filled_call(function: Callable, filling: dict) -> Callable:
    """The function with its keyword-only arguments filled in; positional arguments past its own fill them first
    (``attention(q, k, v, mask)`` for ``f(q, k, v, *, mask, scale)``)."""
    positional = [
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]

    @functools.wraps(function)
    def filled(*args, **kwargs):
        extra = dict(zip(filling, args[len(positional) :], strict=False))
        return function(*args[: len(positional)], **{**filling, **extra, **kwargs})

    return filled


def filled_init(cls: type, filling: dict) -> Callable:
    def __init__(self, *args, **kwargs):  # noqa: N807 (a subclass's __init__)
        cls.__init__(self, *args, **{**filling, **kwargs})

    return __init__


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
    released = released_callables(release / "src" / "transformer_course")
    candidates = {label: form for name, value in released.items() for label, form in wrapped_forms(name, value).items()}
    checks = instructor_checks(first)  # after the release's modules are loaded: it shares its reference modules
    for candidate_name, candidate in candidates.items():
        for check_name, check in checks.items():
            if passes(check, candidate):
                print(f"PASSES {check_name}: {candidate_name}", flush=True)
    print(f"tried {len(candidates)} forms of {len(released)} callables on {len(checks)} checks")


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
