"""The course's commands. Each sets up the environment first (.venv, from requirements.txt; `check` from
requirements-dev.txt, which adds the tests' tools) when needed.

    python3.11 course.py lab        set up, then open the course in JupyterLab
    python3.11 course.py check      set up, then run every check of the course (what CI runs); installs
                                    Debian's bubblewrap (the grading sandbox) and Chromium (the browser test)
                                    when they are missing and apt allows
    python3.11 course.py check --quick   ruff and the tests that run in one process (for development)
    python3.11 course.py grade [NOTEBOOK ...]   grade your notebooks, hidden tests included (default: all)
    python3.11 course.py class COMMAND ...      an instructor's commands: new, generate, collect, autograde,
                                                feedback, export, demo (`class --help` says more)
    python3.11 course.py data       write the course's datasets into data/ as files you can open (data/README.md)
    python3.11 course.py generate   regenerate notebooks/ from solutions/ (for maintainers)
    python3.11 course.py book [DIR] [NN ...]   the course as a website in DIR (default .course/book/): each
                                               notebook as learners get it, with a full run's outputs and figures
    python3.11 course.py hub-environment DIR   in a student release: build the students' environment of a
                                               JupyterHub at DIR (no answer in it)
    python3.11 course.py new-class DIR   the same as `class new DIR`

A student release (`class release-package`) holds only what `lab` needs; there the other commands say that they
belong to the instructor's repository. Only the standard library is used before the environment exists.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parent
VENV = REPO / ".venv"
REQUIREMENTS = REPO / "requirements.txt"  # what the course needs: lab, grade, class
CHECK_REQUIREMENTS = REPO / "requirements-dev.txt"  # that, and the check's tools; a student release lacks it
INSTALL_STAMP = VENV / "course-install.sha256"  # the fingerprints of the requirements the environment satisfies
FIRST_NOTEBOOK = "notebooks/01_self_attention_averaging/01_self_attention_averaging.ipynb"
# Jupyter settings for students (a learner's `lab`, a release, the hub's students' environment): nbgrader's
# instructor parts off.
STUDENT_JUPYTER_CONFIG = REPO / "jupyter-student-config"
# The browser test (tests/end_to_end/test_browser.py) drives Debian's Chromium; Playwright downloads no browser.
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_PACKAGES = ("chromium", "chromium-driver")
SKIP_BROWSER = "COURSE_SKIP_BROWSER"  # =1: skip the browser test on machines without apt (see the README)
BROWSER_RECORD = REPO / ".course" / "browser"  # the browser test's screenshots and logs, from its last run
# The hub test (tests/end_to_end/test_hub.py) runs JupyterHub's proxy, configurable-http-proxy, from the npm registry,
# installed here by the full check; Node.js and npm are Debian's.
HUB_PROXY_PACKAGE = "configurable-http-proxy@5.3.0"
HUB_PROXY_FOLDER = REPO / ".course" / "hub-proxy"
HUB_PROXY = HUB_PROXY_FOLDER / "node_modules" / ".bin" / "configurable-http-proxy"
NODE_PACKAGES = ("nodejs", "npm")
# The grading sandbox (autograder/verification/sandbox.py) is Debian's bubblewrap; the grading tests run every
# submission in it.
BWRAP = Path("/usr/bin/bwrap")
BWRAP_PACKAGES = ("bubblewrap",)
# The folders of the full repository that each command needs, beyond what a student release holds.
INSTRUCTOR_FOLDERS = {
    "check": ("tests", "solutions", "autograder", "notebook_build"),
    "generate": ("solutions", "autograder", "notebook_build"),
    "book": ("solutions", "autograder", "notebook_build"),
    "grade": ("solutions", "autograder"),
    "class": ("solutions", "autograder"),
    "new-class": ("solutions", "autograder"),
}


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def install_fingerprint(requirements: Path) -> str:
    """What an installation from ``requirements`` depends on: the file, the course's own list, the package's."""
    inputs = sorted({requirements, REQUIREMENTS, REPO / "pyproject.toml"})
    return hashlib.sha256(b"".join(path.read_bytes() for path in inputs)).hexdigest()


def set_up(requirements: Path) -> None:
    """Create .venv and install the pinned ``requirements``, unless it is already installed from them."""
    if sys.version_info[:2] != (3, 11):
        sys.exit(
            f"The course needs Python 3.11; this is {sys.version.split()[0]}. "
            "Install Python 3.11 and run: python3.11 course.py ..."
        )
    if not venv_python().exists():
        print(f"Creating the course environment in {VENV.name}/ ...", flush=True)
        venv.create(VENV, with_pip=True)
    if INSTALL_STAMP.exists() and install_fingerprint(requirements) in INSTALL_STAMP.read_text().split():
        return
    print("Installing the course's requirements (the first time takes a few minutes) ...", flush=True)
    pip = [str(venv_python()), "-m", "pip", "install", "--disable-pip-version-check"]
    subprocess.run([*pip, "--quiet", "-r", requirements.name], cwd=REPO, check=True)
    satisfied = {requirements, REQUIREMENTS}  # requirements-dev.txt includes requirements.txt
    INSTALL_STAMP.write_text("\n".join(install_fingerprint(path) for path in sorted(satisfied)) + "\n")


def in_course_environment() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def run(*command: str, **variables: str) -> int:
    """Run a command in the checkout, with this environment's programs first on PATH and ``variables`` set."""
    print(f"\n$ {' '.join(command)}", flush=True)
    return subprocess.run(command, cwd=REPO, env={**environment(), **variables}).returncode


def environment() -> dict[str, str]:
    """This environment's programs first on PATH (nbgrader starts some by name). The autograder's own helper
    (autograder/repository.py) cannot serve here: a student release has no autograder/, and `lab` needs this."""
    return {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")}


def lab(extra_args: list[str]) -> int:
    # Containers and CI machines often run as root, which Jupyter refuses unless told.
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    # Jupyter accepts each option once; a folder given on the command line (the browser test serves a copy)
    # replaces the checkout.
    root = [] if any(arg.startswith("--ServerApp.root_dir") for arg in extra_args) else [f"--ServerApp.root_dir={REPO}"]
    server = [*root, f"--LabApp.default_url=/lab/tree/{FIRST_NOTEBOOK}", *as_root]
    return run(sys.executable, "-m", "jupyter", "lab", *server, *extra_args, **student_jupyter_config())


def student_jupyter_config() -> dict[str, str]:
    """Jupyter's configuration path with the students' settings first: nbgraders' instructor parts (formgrader,
    Create Assignment, course list) off, its Validate button and Assignments list on. The instructor's formgrader
    (`class formgrader`) starts without them."""
    path = [str(STUDENT_JUPYTER_CONFIG), os.environ.get("JUPYTER_CONFIG_PATH", "")]
    return {"JUPYTER_CONFIG_PATH": os.pathsep.join(part for part in path if part)}


def hub_environment(extra_args: list[str]) -> int:
    """Build the students' environment for a JupyterHub from this student release: a virtual environment at DIR
    with the course's pinned requirements, the release's helper package (installed, not linked: the release folder
    may go) and the students' Jupyter settings. The hub's spawner starts each student's server from it.

    With --packages-from ENV, the third-party packages come from another environment of the same Python version (the
    course's own .venv) instead of the package index: hard links where both lie on one disk, copies elsewhere; every
    package of ENV but the course's own. For a hub machine without a network, and for the hub test."""
    source = None
    if len(extra_args) == 3 and extra_args[1] == "--packages-from":
        source = Path(extra_args[2]).expanduser().resolve()
        extra_args = extra_args[:1]
    if len(extra_args) != 1:
        print("usage: python3.11 course.py hub-environment DIR [--packages-from ENV]")
        return 2
    if (REPO / "solutions").is_dir():
        print(
            "This is the instructor's repository, whose helper package holds answers (the checks' stand-ins). Build "
            "the students' environment from a student release: `python3.11 course.py class release-package OUT "
            "--through NN`, then `python3.11 OUT/course.py hub-environment DIR`."
        )
        return 2
    target = Path(extra_args[0]).expanduser().resolve()
    print(f"Creating the students' environment in {target} ...", flush=True)
    venv.create(target, with_pip=source is None)
    python = target / "bin" / "python"
    if source is None:
        lines = REQUIREMENTS.read_text().splitlines()
        pins = [line for line in lines if line.strip() and not line.startswith(("#", "-e"))]
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *pins, str(REPO)], check=True)
    else:
        link_packages(source, target)
        install = [str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", str(REPO)]
        subprocess.run(install, check=True)
    shutil.copytree(STUDENT_JUPYTER_CONFIG, target / "etc" / "jupyter", dirs_exist_ok=True)
    print(f"Done: the hub's spawner starts each student's server with `{python} -m jupyterhub.singleuser`; install")
    print("the jupyterhub package of your hub's version into this environment first, unless ENV had it.")
    return 0


def link_packages(source: Path, target: Path) -> None:
    """Every package of the environment ``source`` into ``target`` (their modules, and the Jupyter extensions and
    settings they bring in share/ and etc/), but the course's own: its editable install points into a repository,
    whose helper package holds answers."""
    python = f"python{sys.version_info.major}.{sys.version_info.minor}"

    def link_or_copy(from_path: str, to_path: str) -> None:
        try:
            os.link(from_path, to_path)
        except OSError:  # another disk
            shutil.copy2(from_path, to_path)

    for folder in (Path("lib") / python / "site-packages", Path("share"), Path("etc")):
        for entry in (source / folder).iterdir() if (source / folder).is_dir() else []:
            if entry.name.startswith(("transformer_course", "__editable__", "__pycache__")):
                continue
            destination = target / folder / entry.name
            if entry.is_dir():
                shutil.copytree(entry, destination, copy_function=link_or_copy, dirs_exist_ok=True, symlinks=True)
            else:
                destination.parent.mkdir(parents=True, exist_ok=True)
                link_or_copy(str(entry), str(destination))


def apt_get() -> list[str] | None:
    """How to call apt-get with the right to install, or None when this machine cannot."""
    if shutil.which("apt-get") is None:
        return None
    noninteractive = ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        return noninteractive
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0:
        return ["sudo", "-n", *noninteractive]
    return None


def ensure_system_packages() -> None:
    """Install the Debian packages the checks use when they are missing and this machine allows it: bubblewrap for
    grading, Chromium for the browser test (unless that test is skipped)."""
    missing = [] if BWRAP.exists() else list(BWRAP_PACKAGES)
    if os.environ.get(SKIP_BROWSER) == "1":
        print(f"\n!! {SKIP_BROWSER}=1: the browser test will be skipped (see the README).", flush=True)
    elif not CHROMIUM.exists():
        missing += CHROMIUM_PACKAGES
    if not HUB_PROXY.exists() and shutil.which("npm") is None:
        missing += NODE_PACKAGES
    install_system_packages(missing)
    ensure_hub_proxy()


def install_system_packages(missing: list[str]) -> None:
    if not missing:
        return
    apt = apt_get()
    if apt is None:
        print(
            f"\n!! {', '.join(missing)} missing and cannot be installed here (needs apt-get as root or with "
            f"passwordless sudo). Install them with `sudo apt-get install {' '.join(missing)}`; without bubblewrap the "
            f"grading tests fail, and the browser test can be skipped with {SKIP_BROWSER}=1 (see the README).",
            flush=True,
        )
        return
    print(f"\nInstalling Debian's {', '.join(missing)}: the checks need them.", flush=True)
    # A fresh machine may have no package lists, or old ones that name versions the mirror no longer has;
    # refreshing them first costs about a second.
    for step in (["update", "-q"], ["install", "-y", "-q", "--no-install-recommends", *missing]):
        print(f"$ {' '.join([*apt, *step])}", flush=True)
        if subprocess.run([*apt, *step]).returncode != 0:
            print(f"!! apt-get {step[0]} failed; the checks that need {', '.join(missing)} will fail.", flush=True)
            return


def ensure_hub_proxy() -> None:
    """Install JupyterHub's proxy for the hub test from the npm registry, pinned, when it is missing."""
    if HUB_PROXY.exists():
        return
    if shutil.which("npm") is None:
        print("\n!! npm is missing: the hub test will fail without JupyterHub's proxy (`sudo apt-get install npm`).")
        return
    print(f"\nInstalling JupyterHub's proxy ({HUB_PROXY_PACKAGE}) from npm.", flush=True)
    HUB_PROXY_FOLDER.mkdir(parents=True, exist_ok=True)
    npm = ["npm", "install", "--no-audit", "--no-fund", "--prefix", str(HUB_PROXY_FOLDER), HUB_PROXY_PACKAGE]
    if subprocess.run(npm).returncode != 0:
        print("!! npm install failed; the hub test will fail.", flush=True)


# The tests of the course's parts that run in one process, in the folders of tests/ that hold them; the rest
# (tests/end_to_end/: nbgrader, grading in the sandbox, releases, the browser) and the notebooks' runs (nbval) are
# the full check's.
QUICK_TESTS = ("tests/checks", "tests/helpers", "tests/autograder")


def check(extra_args: list[str]) -> int:
    """Lint and formatting (ruff), then every test: the helper package, the notebook build, grading, every solution
    notebook run top to bottom in a fresh kernel (nbval, lax: a cell fails only when it raises) with its page of the
    website built from that run (tests/notebook_runs.py), and the course in a browser. With --quick, for
    development: ruff, and the tests of QUICK_TESTS only (the checks and the kept wrong answers in this process, the
    helper package, the autograder's parts); no nbgrader, notebook or browser."""
    from autograder.limits import FULL_RUN_CELL_TIMEOUT

    quick = "--quick" in extra_args
    extra_args = [arg for arg in extra_args if arg != "--quick"]
    if not quick:
        ensure_system_packages()
    failures = 0
    failures += run(sys.executable, "-m", "ruff", "check", ".") != 0
    failures += run(sys.executable, "-m", "ruff", "format", "--check", ".") != 0
    selection = [*QUICK_TESTS] if quick else ["tests", "solutions", "--nbval-lax"]
    failures += (
        run(
            sys.executable,
            "-m",
            "pytest",
            *selection,
            f"--nbval-cell-timeout={FULL_RUN_CELL_TIMEOUT}",
            "-n",  # a worker per core (twice as many made the check slower: 16 min against 14)
            "auto",
            "--dist",
            # The quick tests share no costly set-up within a file, so they spread test by test (one file holds every
            # kept wrong answer); the full check's files share their batch's fixture and keep to one worker each.
            "load" if quick else "loadfile",
            *extra_args,
            # One thread per process: pytest's workers, and the notebooks and graders they start, already keep
            # every core busy. PyTorch's default, a thread per core in every process, makes them wait for one
            # another: notebook 08 trained 20 times slower so.
            OMP_NUM_THREADS="1",
        )
        != 0
    )
    print("\nAll checks passed." if not failures else f"\n{failures} of 3 check steps failed (see above).")
    return 1 if failures else 0


def data(extra_args: list[str]) -> int:
    """Write the datasets that the course's code makes into data/, as files (data/README.md says what each is)."""
    from transformer_course.data.files import FOLDER, write_all

    for path in write_all():
        print(path.relative_to(FOLDER.parent))
    return 0


def generate(extra_args: list[str]) -> int:
    import notebook_build  # needs the environment's nbgrader
    from autograder.repository import assignments

    notebook_build.generate()
    print(f"Regenerated notebooks/ from solutions/ ({len(assignments())} assignments).")
    return 0


def book(extra_args: list[str]) -> int:
    """The course as a website (notebook_build/book.py): into DIR (default .course/book), every notebook or those
    whose numbers are given (`book site 01 02`)."""
    from notebook_build import book as website

    numbers = [arg for arg in extra_args if arg.isdigit()]
    folders = [Path(arg).resolve() for arg in extra_args if not arg.isdigit()]
    if len(folders) > 1:
        print("usage: python3.11 course.py book [DIR] [NN ...]")
        return 2
    out = folders[0] if folders else website.OUT
    pages = website.build(out, only=numbers or None)
    print(f"Wrote {len(pages)} page(s) and index.html into {out}")
    return 0


def grade(extra_args: list[str]) -> int:
    from autograder import cli  # needs the environment's nbgrader

    return cli.main(["grade", *extra_args])


def teach(extra_args: list[str]) -> int:
    from autograder import cli

    return cli.main(["class", *extra_args])


def new_class(extra_args: list[str]) -> int:
    return teach(["new", *extra_args])


COMMANDS = {
    "lab": lab,
    "check": check,
    "data": data,
    "generate": generate,
    "book": book,
    "grade": grade,
    "class": teach,
    "new-class": new_class,
    "hub-environment": hub_environment,
}


def missing_instructor_folder(command: str) -> str | None:
    """The first folder ``command`` needs that this copy of the course lacks (a student release lacks them)."""
    return next((name for name in INSTRUCTOR_FOLDERS.get(command, ()) if not (REPO / name).is_dir()), None)


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(__doc__)
        return 2
    missing = missing_instructor_folder(sys.argv[1])
    if missing:
        print(
            f"`course.py {sys.argv[1]}` belongs to the instructor's repository of the course, and this copy has no "
            f"{missing}/: run your checks in the notebooks (`python3.11 course.py lab`); your instructor grades them."
        )
        return 2
    if sys.argv[1] == "hub-environment":  # builds an environment of its own, not the course's .venv
        return hub_environment(sys.argv[2:])
    if not in_course_environment():
        set_up(CHECK_REQUIREMENTS if sys.argv[1] == "check" else REQUIREMENTS)
        # The caller's folder stays the working folder: paths given to grade and class are relative to it.
        return subprocess.run([str(venv_python()), __file__, *sys.argv[1:]]).returncode
    command, extra_args = COMMANDS[sys.argv[1]], sys.argv[2:]
    return command(extra_args)


if __name__ == "__main__":
    sys.exit(main())
