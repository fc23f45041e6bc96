"""What a student's Python makes of the releases: their notebooks' set-up cells, and every callable they hold tried
as the answer to every hidden test of a notebook not yet due when it is released.

    python tests/release_probe.py set-up RELEASE ...
    python tests/release_probe.py callables RELEASES

Run by tests/end_to_end/test_release.py in a process of its own, with no install: for ``callables``, with
PYTHONPATH=RELEASES/release-NN/src, the last release in the folder RELEASES (which holds release-01 … release-NN), so
that the released package is ``transformer_course`` exactly as a student's notebook imports it.

``set-up`` runs the first code cell (the set-up: the imports) of every notebook of each release, with that release's
src first on the path and none of the package imported before (PyTorch is imported once, for all), and prints a line
for each that failed, then one for each release.

``callables`` tries every function and class of the last release, as it is and wrapped as a student who read it
would (keyword-only arguments filled in, the first of a pair), against the hidden tests of the notebooks from the
first release that holds its module on: the releases nest, each holding what the one before it holds, so the last
one has every callable, with the most recorded oracle results. The judges are the hidden tests' calls of the
instructor's checks (the solution notebooks' ``nb01.check_softmax(softmax, seed=2718)``, with another seed than the
visible check's, whose oracles' results a release holds), loaded from this repository under another name, with the
correct stand-ins of earlier exercises in place. It prints a line for each callable that passed a test (none, when
all is well), then what it tried.
"""

import ast
import collections
import contextlib
import functools
import importlib
import importlib.util
import inspect
import io
import itertools
import json
import re
import signal
import sys
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
INSTRUCTOR_PACKAGE = REPOSITORY / "src" / "transformer_course"
HIDDEN_CALL = re.compile(r"^(nb\d\d)\.(check_\w+)\(\w+(.*)\)$")  # nb09.check_merge(merge, seed=1)
ALIAS = "instructor_course"
MAX_FILLINGS = 12  # ways to fill one candidate's keyword-only arguments
SECONDS_PER_CALL = 20  # a candidate that makes a check loop forever counts as failing it, not as hanging the test


def instructor_checks() -> dict[str, tuple[int, Callable]]:
    """The hidden tests' calls of the checks, by their text, from the instructor's package, each with its notebook's
    number: each takes a candidate and runs the check on it with the hidden test's arguments.

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
    for notebook, check, arguments in hidden_calls():
        function = getattr(importlib.import_module(f"{ALIAS}.checks.{notebook}"), check)
        label = f"{notebook}.{check}({arguments})"
        keywords = eval(f"dict({arguments})")  # the solution notebook's own text: seed=1, peak=2.0
        checks[label] = (int(notebook[2:]), functools.partial(run_check, function, keywords))
    return checks


def run_check(check: Callable, keywords: dict, candidate: Callable) -> None:
    check(candidate, **keywords)


def hidden_calls() -> list[tuple[str, str, str]]:
    """(module, check, keyword arguments as written) of every hidden test line of the solution notebooks."""
    calls = []
    for path in sorted((REPOSITORY / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            source = "".join(cell["source"])
            hidden = source.partition("### BEGIN HIDDEN TESTS")[2].partition("### END HIDDEN TESTS")[0]
            for line in hidden.splitlines():
                if found := HIDDEN_CALL.match(line.strip()):
                    calls.append((found[1], found[2], found[3].lstrip(", ")))
    return calls


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


def call_sites(package: Path) -> dict[str, list[dict]]:
    """The keyword arguments with literal values that the package's code passes, by the name of the function
    called: what a student who read the checks would pass (``encoding_by_formula(..., n=10000.0)``)."""
    sites = collections.defaultdict(list)
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                literal = {}
                for keyword in node.keywords:
                    with contextlib.suppress(ValueError, TypeError, SyntaxError):
                        literal[keyword.arg] = ast.literal_eval(keyword.value)
                if literal and literal not in sites[name]:
                    sites[name].append(literal)
    return sites


def keyword_fillings(candidate: Callable, sites: dict[str, list[dict]]) -> list[dict]:
    """Ways to fill the candidate's required keyword-only arguments, at most MAX_FILLINGS of them: first as the
    package's code fills them where it calls it, then with None, booleans and the constants of its code (of its
    __init__ for a class)."""
    names = required_keywords(candidate)
    if not names:
        return []
    called = [site for site in sites.get(candidate.__name__, ()) if set(names) <= set(site)]
    source = candidate.__init__ if inspect.isclass(candidate) else candidate
    values = [None, True, False, *constants(source)]
    # Lazily: a function with four keyword-only arguments and sixty constants has 60**4 fillings.
    generic = (dict(zip(names, chosen, strict=True)) for chosen in itertools.product(values, repeat=len(names)))
    unique = []
    for filling in itertools.chain(({name: site[name] for name in names} for site in called), generic):
        if filling not in unique:
            unique.append(filling)
        if len(unique) == MAX_FILLINGS:
            break
    return unique


def first_of_result(function: Callable) -> Callable:
    """The function's result, or its first element when it returns a tuple (an oracle's (outputs, weights))."""

    @functools.wraps(function)
    def first(*args, **kwargs):
        result = function(*args, **kwargs)
        return result[0] if type(result) is tuple and result else result

    return first


def wrapped_forms(name: str, candidate: Callable, sites: dict[str, list[dict]]) -> dict[str, Callable]:
    """The candidate as a student who read its source could use it: as it is, and with its keyword-only arguments
    filled in (a class: subclassed to fill them). A function is also tried taking the first of what it returns
    (``try_form``)."""
    forms = {name: candidate}
    for filling in keyword_fillings(candidate, sites):
        label = f"{name}({', '.join(f'{key}={value!r}' for key, value in filling.items())})"
        if inspect.isclass(candidate):
            forms[label] = type(candidate.__name__, (candidate,), {"__init__": filled_init(candidate, filling)})
        else:
            forms[label] = filled_call(candidate, filling)
    return forms


def watching_for_tuples(function: Callable, seen: list) -> Callable:
    """The function, noting in ``seen`` when it returns a non-empty tuple. The checks see through the wrapper as
    through any decorator (``inspect.unwrap``)."""

    @functools.wraps(function)
    def watched(*args, **kwargs):
        result = function(*args, **kwargs)
        if type(result) is tuple and result:
            seen.append(True)
        return result

    return watched


def try_form(label: str, form: Callable, checks: dict[str, Callable]) -> tuple[int, int]:
    """Run each check on the form and, for a function, on the form taking the first of what it returns; print
    each that passes. A check in which the function returned no tuple runs the second exactly as the first (the
    same calls, the same results), so it is not run again. Returns (checks run, second runs saved)."""
    runs = saved = 0
    for check_name, check in checks.items():
        seen: list = []
        runs += 1
        if passes(check, form if inspect.isclass(form) else watching_for_tuples(form, seen)):
            print(f"PASSES {check_name}: {label}", flush=True)
        if inspect.isclass(form):
            continue
        if not seen:
            saved += 1
            continue
        runs += 1
        if passes(check, first_of_result(form)):
            print(f"PASSES {check_name}: {label}[0]", flush=True)
    return runs, saved


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
    def __init__(self, *args, **kwargs):
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


@contextlib.contextmanager
def only_this_package(src: Path) -> Iterator[None]:
    """``transformer_course`` imported from ``src`` as in a process of its own: first on the path, in the release's
    folder, and no module of the package (from this repository or another release) imported before or kept after."""

    def forget() -> None:
        for name in [name for name in sys.modules if name.partition(".")[0] == "transformer_course"]:
            del sys.modules[name]

    forget()
    sys.path.insert(0, str(src))
    importlib.invalidate_caches()
    try:
        with contextlib.chdir(src.parent):
            yield
    finally:
        sys.path.remove(str(src))
        forget()


def first_releases(releases: Path) -> dict[str, int]:
    """The number of the first release that holds each module of the package, by the module's dotted name."""
    first = {}
    for folder in sorted(releases.glob("release-[0-9][0-9]"), reverse=True):
        package = folder / "src" / "transformer_course"
        for path in package.rglob("*.py"):
            parts = path.relative_to(package.parent).with_suffix("").parts
            first[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = int(folder.name[-2:])
    return first


def try_callables(releases: Path) -> None:
    package = max(releases.glob("release-[0-9][0-9]")) / "src" / "transformer_course"
    released, sites, first = released_callables(package), call_sites(package), first_releases(releases)
    checks = instructor_checks()  # after the release's modules are loaded: it shares its reference modules
    tried = runs = saved = 0
    for name, value in released.items():
        due = {label: check for label, (notebook, check) in checks.items() if notebook >= first[value.__module__]}
        for candidate_name, candidate in wrapped_forms(name, value, sites).items():
            tried += 1 if inspect.isclass(candidate) else 2
            ran, skipped = try_form(candidate_name, candidate, due)
            runs, saved = runs + ran, saved + skipped
    print(
        f"tried {tried} forms of {len(released)} callables on {len(checks)} hidden tests: {runs} runs of a check, "
        f"and {saved} runs of a first-of-the-result form that would have repeated its function's run"
    )


if __name__ == "__main__":
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "set-up":
        for release in map(Path, sys.argv[2:]):
            with only_this_package(release / "src"):
                for failure in set_up_cells_fail(release):
                    print(f"SET-UP FAILS {release.name}: {failure}", flush=True)
            print(f"{release.name}: set-up cells tried", flush=True)
    else:
        try_callables(folder)
