"""A student release (autograder/release.py) holds no answer: no instructor folder, no line of a solution or a hidden
test, no callable that passes a hidden test of a notebook not yet due, no oracle's code; its checks compare with the
oracles' recorded results and name the kept mistakes; and its notebooks import without an install."""

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import course
from autograder import cli, recorded_oracles, release
from autograder.repository import NOTEBOOKS, REPO, SOLUTIONS, assignments
from autograder.submissions import solution_code, solution_notebooks
from transformer_course import checks
from transformer_course.checks import CheckFailed, nb01, nb04
from wrong_answers import of_assignment

ASSIGNMENTS = assignments()
THROUGH = range(1, len(ASSIGNMENTS) + 1)
SECRET_REGION = re.compile(r"^[ \t]*### BEGIN (SOLUTION|HIDDEN TESTS)[ \t]*\n(.*?)^[ \t]*### END \1", re.S | re.M)
DISTINCTIVE = 20  # non-space characters a line needs to be told apart from common code
SCRIPTS = Path(__file__).resolve().parent.parent  # tests/, where the scripts run in a process of their own live
PROBE = SCRIPTS / "release_probe.py"
AT_HOME = SCRIPTS / "release_at_home.py"
PACKAGE = Path("src/transformer_course")
INSTRUCTOR_MODULES = ("src/transformer_course/checks/stand_ins.py",)


def squeezed(text: str) -> str:
    return re.sub(r"\s+", "", text)


def notebook_code(path: Path) -> str:
    return "\n".join("".join(cell["source"]) for cell in json.loads(path.read_text(encoding="utf-8"))["cells"])


@functools.cache
def secret_lines() -> dict[str, tuple[str, int]]:
    """The distinctive lines of every solution region and hidden test, squeezed, with their kind and the latest
    notebook that has them; lines that some student notebook shows anyway (spelled out in the text) are left out."""
    shown = squeezed("".join(notebook_code(path) for path in NOTEBOOKS.glob("*/*.ipynb")))
    secrets = {}
    for path in sorted(SOLUTIONS.glob("*/*.ipynb")):
        number = int(path.parent.name[:2])
        for region in SECRET_REGION.finditer(notebook_code(path)):
            for line in region[2].splitlines():
                if len(squeezed(line)) >= DISTINCTIVE and squeezed(line) not in shown:
                    secrets[squeezed(line)] = (region[1], number)
    return secrets


def leaked_lines(released: Path, through: int) -> list[str]:
    """The secret lines a released file holds. A reference module of an earlier notebook may hold that
    notebook's solution lines (it is that block), but none of a notebook not yet due."""
    # recorded.pt is binary: a pickle keeps its strings as UTF-8, which decoding with replacement still shows.
    content = released.read_bytes().decode("utf-8", errors="replace")
    text = squeezed(notebook_code(released) if released.suffix == ".ipynb" else content)
    in_reference = released.parent.name == "reference"
    return [
        f"{kind} of notebook {number:02d}: {line}"
        for line, (kind, number) in secret_lines().items()
        if line in text and not (in_reference and kind == "SOLUTION" and number < through)
    ]


@functools.cache
def built(through: int, root: Path) -> Path:
    folder = root / f"release-{through:02d}"
    release.build(folder, through)
    return folder


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("releases")


@pytest.mark.parametrize("through", THROUGH, ids=lambda through: f"{through:02d}")
def test_a_release_holds_its_notebooks_and_no_solution_or_hidden_test(releases, through):
    folder = built(through, releases)
    present = {path.relative_to(folder).as_posix() for path in folder.rglob("*")}
    assert present.isdisjoint({"solutions", "autograder", "tests", "benchmarks", ".git", *INSTRUCTOR_MODULES})
    assert {path.parent.name for path in folder.glob("notebooks/*/*.ipynb")} == set(ASSIGNMENTS[:through])
    blocks = {path.stem for path in (REPO / PACKAGE / "reference").glob("nb*.py") if int(path.stem[2:4]) < through}
    assert {path.stem for path in (folder / PACKAGE / "reference").glob("nb*.py")} == blocks
    leaks = {str(path.relative_to(folder)): leaked_lines(path, through) for path in folder.rglob("*") if path.is_file()}
    assert {path: lines for path, lines in leaks.items() if lines} == {}
    guide = (folder / "README.md").read_text(encoding="utf-8")
    assert "Keep each notebook's file name" in guide and "never over it" in guide  # a later release's blank copies


def test_a_release_installs_the_course_and_none_of_the_checks_tools(releases):
    folder = built(1, releases)
    tools = pinned_names(REPO / "requirements-dev.txt")
    assert tools and tools.isdisjoint(pinned_names(folder / "requirements.txt"))
    assert not (folder / "requirements-dev.txt").exists()


def pinned_names(requirements: Path) -> set[str]:
    lines = requirements.read_text(encoding="utf-8").splitlines()
    return {line.split("==")[0] for line in lines if "==" in line and not line.startswith("#")}


def probe(mode: str, folder: Path, src: Path) -> list[str]:
    """What tests/release_probe.py prints in ``mode`` on ``folder``, run with the released package ``src``."""
    environment = {**os.environ, "PYTHONPATH": str(src), "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, str(PROBE), mode, str(folder)], cwd=src.parent, env=environment, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


@functools.cache
def set_up_cells(root: Path) -> list[str]:
    """What the probe prints running every release's set-up cells: one process for all, PyTorch imported once."""
    folders = [str(built(through, root)) for through in THROUGH]
    run = subprocess.run(
        [sys.executable, str(PROBE), "set-up", *folders],
        cwd=root,
        env={**{key: value for key, value in os.environ.items() if key != "PYTHONPATH"}, "MPLBACKEND": "Agg"},
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    return run.stdout.splitlines()


@pytest.mark.parametrize("through", THROUGH, ids=lambda through: f"{through:02d}")
def test_a_releases_notebooks_import_without_install(releases, through):
    name = built(through, releases).name
    printed = set_up_cells(releases)
    assert [line for line in printed if line.startswith(f"SET-UP FAILS {name}:")] == []
    assert f"{name}: set-up cells tried" in printed


def test_no_callable_of_a_release_passes_a_hidden_test_of_a_notebook_not_yet_due(releases):
    last = max(built(through, releases) for through in THROUGH)
    printed = probe("callables", releases, last / "src")
    assert [line for line in printed if line.startswith("PASSES")] == []
    assert printed[-1].startswith("tried")


def at_home_cases(assignment: str) -> list[dict]:
    """The visible checks of the assignment on its solved notebook, and each kept wrong answer on its own check."""
    (source,) = solution_notebooks(assignment).values()
    setup = next(cell.source for cell in source.cells if cell.cell_type == "code")
    solved = {"setup": setup, "solutions": list(solution_code(assignment).values()), "answer": None}
    tests = recorded_oracles.visible_tests(assignment)
    cases = [{**solved, "label": f"{assignment} {test}", "test": code, "message": None} for test, code in tests.items()]
    for answer in of_assignment(assignment):
        case = {
            "label": answer.label,
            "answer": answer.source,
            "test": tests[answer.test_cell],
            "message": answer.message,
        }
        cases.append({**solved, **case})
    return cases


def test_a_releases_checks_compare_with_recorded_oracles_and_still_name_the_kept_mistakes(releases, tmp_path):
    folder = built(len(ASSIGNMENTS), releases)
    with_oracles = [assignment for assignment in ASSIGNMENTS if recorded_oracles.calls_of(assignment)]
    assert {"01", "02", "04", "05", "08", "09", "10", "11", "12"} <= {assignment[:2] for assignment in with_oracles}
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps([case for assignment in with_oracles for case in at_home_cases(assignment)]))
    environment = {**os.environ, "PYTHONPATH": str(folder / "src"), "MPLBACKEND": "Agg"}
    run = subprocess.run(
        [sys.executable, str(AT_HOME), str(cases)], cwd=folder, env=environment, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert [line for line in run.stdout.splitlines() if line.startswith("WRONG")] == []
    assert run.stdout.splitlines()[-1].startswith("ran")


def test_a_release_holds_no_oracle_body_and_a_call_it_did_not_record_fails_with_a_message(releases):
    folder = built(len(ASSIGNMENTS), releases)
    released = (folder / PACKAGE / "checks" / "nb09.py").read_text(encoding="utf-8")
    assert "def bpe_merges(" in released and "_most_frequent(pair_counts(" not in released
    program = (
        "from transformer_course.checks import NotRecorded, nb09\n"
        "try:\n    nb09.bpe_merges('not a text the checks use', 3, units='bytes')\n"
        "except NotRecorded as failure:\n    print('NOT RECORDED', failure)\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(folder / "src")}
    run = subprocess.run([sys.executable, "-c", program], env=environment, capture_output=True, text=True)
    assert run.stdout.startswith("NOT RECORDED") and "the autograder's check names the mistake" in run.stdout


def test_without_stand_ins_a_check_uses_the_learners_own_exercises_and_names_those_that_fail(monkeypatch):
    monkeypatch.setattr(checks, "stand_ins", None)  # as in a student release
    namespace = {"torch": __import__("torch")}
    exec("def softmax(scores, dim=-1):\n    return torch.softmax(scores, dim)", namespace)
    exec("def attention_weights(x):\n    return softmax(x @ x.mT, dim=-1)", namespace)
    nb01.check_attention_weights(namespace["attention_weights"])
    exec("def attention_weights(x):\n    return softmax(x @ x.mT, dim=0)", namespace)
    with pytest.raises(CheckFailed) as failure:  # its own mistake, with a softmax that passes its check
        nb01.check_attention_weights(namespace["attention_weights"])
    assert "your own softmax" not in str(failure.value)
    exec("def softmax(scores, dim=-1):\n    return scores", namespace)
    with pytest.raises(CheckFailed, match="your own softmax from earlier in the notebook, and it does not pass its"):
        nb01.check_attention_weights(namespace["attention_weights"])
    with pytest.raises(CheckFailed, match="your own padding_mask and causal_mask .*, and they do not pass"):
        nb04.check_decoder_mask(lambda lengths: undefined_padding_mask(lengths))  # noqa: F821


@pytest.mark.parametrize("command", ["check", "grade", "class", "generate", "new-class"])
def test_course_py_in_a_release_says_which_commands_are_the_instructors(releases, command):
    folder = built(1, releases)
    # set_up would create an environment and install the course: the command must end before it.
    program = (
        "import sys, course\n"
        "course.set_up = lambda requirements: sys.exit('set_up was called')\n"
        f"sys.argv = ['course.py', {command!r}]\n"
        "sys.exit(course.main())"
    )
    result = subprocess.run([sys.executable, "-c", program], cwd=folder, capture_output=True, text=True)
    assert (result.returncode, result.stderr) == (2, "")
    assert len(result.stdout.strip().splitlines()) == 1
    assert "belongs to the instructor's repository" in result.stdout


def test_course_py_in_the_repository_needs_nothing_it_lacks():
    assert all(course.missing_instructor_folder(command) is None for command in course.COMMANDS)


def test_the_command_writes_a_release_and_refuses_a_folder_in_use(tmp_path, capsys):
    assert cli.main(["class", "release-package", str(tmp_path / "out"), "--through", "02"]) == 0
    assert "02_queries_keys_values" in capsys.readouterr().out
    assert sorted(path.name for path in (tmp_path / "out" / "notebooks").iterdir()) == ASSIGNMENTS[:2]
    assert cli.main(["class", "release-package", str(tmp_path / "out"), "--through", "03"]) == 2
    assert "not empty" in capsys.readouterr().err
    beyond = f"{len(ASSIGNMENTS) + 1:02d}"  # no such notebook
    assert cli.main(["class", "release-package", str(tmp_path / "other"), "--through", beyond]) == 2


def package_files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_hubs_students_environment_installs_exactly_the_releases_package(releases, tmp_path):
    """`hub-environment` installs the release's package (which holds no answer: the tests above) and nothing of the
    repository's; here without its pinned dependencies, which are the course's third-party libraries."""
    folder = built(3, releases)
    target = tmp_path / "site-packages"
    install = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation"]
    subprocess.run([*install, "--target", str(target), str(folder)], check=True, cwd=tmp_path)
    assert package_files(target / "transformer_course") == package_files(folder / PACKAGE)
    assert not (target / "transformer_course" / "checks" / "stand_ins.py").exists()
    refused = subprocess.run([sys.executable, str(REPO / "course.py"), "hub-environment", str(tmp_path / "env")])
    assert refused.returncode == 2 and not (tmp_path / "env").exists()  # not from the instructor's repository


def test_students_jupyter_has_validate_and_assignments_but_not_the_instructors_parts(releases, tmp_path):
    folder = built(1, releases)
    script = (
        "from jupyter_server.serverapp import ServerApp\n"
        "app = ServerApp()\n"
        "app.initialize(['--allow-root', '--ServerApp.port=0', '--no-browser'])\n"
        "print({name: e.enabled for name, e in app.extension_manager.extensions.items() if 'nbgrader' in name})\n"
    )
    config = {"JUPYTER_CONFIG_PATH": str(folder / release.STUDENT_JUPYTER_CONFIG), "HOME": str(tmp_path)}
    printed = subprocess.run(
        [sys.executable, "-c", script], env={**os.environ, **config}, capture_output=True, text=True, check=True
    ).stdout
    assert eval(printed.splitlines()[-1]) == {
        "nbgrader.server_extensions.assignment_list": True,
        "nbgrader.server_extensions.validate_assignment": True,
        "nbgrader.server_extensions.course_list": False,
        "nbgrader.server_extensions.formgrader": False,
    }
    labextensions = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"],
        env={**os.environ, **config},
        capture_output=True,
        text=True,
    )
    disabled = (
        labextensions.stdout.split("Disabled extensions:")[-1] + labextensions.stderr.split("Disabled extensions:")[-1]
    )
    for plugin in ("formgrader", "create-assignment", "course-list"):
        assert f"@jupyter/nbgrader:{plugin}" in disabled
    assert course.student_jupyter_config()["JUPYTER_CONFIG_PATH"].startswith(str(course.STUDENT_JUPYTER_CONFIG))
