"""A student release of the course: a folder to hand out to a class that holds no answer.

The rule: the release for assignment NN holds
- notebooks 01 to NN, the student versions of notebooks/ (no solutions, no hidden tests);
- the helper package, with the checks of notebooks 01 to NN and the reference modules of the notebooks before NN
  (``reference/nbMM_<assignment>.py`` for MM < NN), but never ``checks/stand_ins.py``, whose correct stand-ins
  are answers to import;
- course.py and the files it installs from, the students' Jupyter settings (nbgrader's instructor parts off), and
  a short README for students.
The checks' oracles that answer an exercise (marked ``@oracle``) come without their code, as the results they gave
the released notebooks' visible checks (``recorded_oracles.py``).
A reference block thus arrives only once the notebook that teaches it is due: build assignment NN's release once
NN-1 is due (notebook 08's release holds the model of notebook 07, which it trains). A module's notebook is the
number its name starts with (``nb06_transformer_block.py``, ``nb06.py``); a module without one belongs to none and
is always released.
"""

import fnmatch
import re
import shutil
from pathlib import Path

from autograder import recorded_oracles
from autograder.repository import NOTEBOOKS, REPO, assignments

PACKAGE = REPO / "src" / "transformer_course"
# What course.py needs to set up and open the course: itself and what it installs from.
TOP_LEVEL_FILES = ("course.py", "requirements.txt", "pyproject.toml", "environment.yml")
STUDENT_JUPYTER_CONFIG = "jupyter-student-config"  # what `lab` and the hub's students' environment start with
NEVER_RELEASED = ("checks/stand_ins.py",)  # relative to the package
NOTEBOOK_NUMBER = re.compile(r"nb(\d\d)")  # the start of a module's name that says which notebook it belongs to
CACHES = ("__pycache__", "*.pyc", ".ipynb_checkpoints")


def build(out: Path, through: int) -> list[str]:
    """Write the release for assignment ``through`` into the new or empty folder ``out``; return its assignments."""
    released = assignments_through(through)
    if out.exists() and any(out.iterdir()):
        raise ValueError(f"{out} exists and is not empty; choose a new folder.")
    out.mkdir(parents=True, exist_ok=True)
    for name in TOP_LEVEL_FILES:
        shutil.copy2(REPO / name, out / name)
    shutil.copytree(REPO / STUDENT_JUPYTER_CONFIG, out / STUDENT_JUPYTER_CONFIG)
    copy_package(out / "src" / "transformer_course", through)
    recorded_oracles.write(out / "src" / "transformer_course" / "checks", released)
    for assignment in released:
        shutil.copytree(NOTEBOOKS / assignment, out / "notebooks" / assignment, ignore=shutil.ignore_patterns(*CACHES))
    (out / "README.md").write_text(student_readme(released), encoding="utf-8")
    return released


def assignments_through(through: int) -> list[str]:
    """The assignments 01 to ``through``; fail on a number the course does not have."""
    every = assignments()
    if not 1 <= through <= len(every):
        raise ValueError(f"--through {through}: the course has assignments 01 to {len(every):02d}.")
    return every[:through]


def copy_package(target: Path, through: int) -> None:
    """Copy the files of the helper package that the release for assignment ``through`` holds."""
    for path in sorted(PACKAGE.rglob("*")):
        relative = path.relative_to(PACKAGE)
        if path.is_file() and not is_cache(relative) and is_released(relative, through):
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            if relative.parts[0] == "checks" and path.suffix == ".py":
                source = path.read_text(encoding="utf-8")
                (target / relative).write_text(recorded_oracles.without_oracle_bodies(source), encoding="utf-8")
            else:
                shutil.copy2(path, target / relative)


def is_cache(relative: Path) -> bool:
    return any(fnmatch.fnmatch(part, pattern) for part in relative.parts for pattern in CACHES)


def is_released(relative: Path, through: int) -> bool:
    """Whether the package's file ``relative`` belongs in the release for assignment ``through``."""
    if relative.as_posix() in NEVER_RELEASED:
        return False
    number = NOTEBOOK_NUMBER.match(relative.name)
    if number is None:
        return True
    if relative.parts[0] == "reference":
        return int(number[1]) < through  # a block is released once the notebook that teaches it is due
    return int(number[1]) <= through  # a notebook's checks come with the notebook


def student_readme(released: list[str]) -> str:
    notebooks = "\n".join(f"- `notebooks/{name}/{name}.ipynb`" for name in released)
    return f"""# Transformers from first principles: your notebooks

Notebooks that build the transformer one idea at a time. In each you write the key functions yourself; the
checks in the notebook tell you at once whether they work and, if not, what is wrong.

## Start

You need Python 3.11. From this folder:

```bash
python3.11 course.py lab
```

The first time it creates the environment `.venv/` from `requirements.txt` (a few minutes, mostly for
PyTorch); then it opens notebook 01 in JupyterLab. Run the same command each time you work on the course.

## Working

Complete each function where it says `raise NotImplementedError()`, then run the check cell below it: it prints
`✔ ...` or says what is wrong. A check of a later exercise runs your earlier ones too, and says so when it fails:
make the checks pass in order. Hand in your notebooks as your instructor asks; your instructor grades them, with
tests of their own besides the checks you see. **Keep each notebook's file name** when you save or hand it in
(no "Copy of", no "(1)"): the grader finds your work by it.

The notebooks of this release:

{notebooks}

## The next release

Later notebooks come with later releases, each with the building blocks of the notebooks before it. A release
holds blank copies of the earlier notebooks too, for students who start late: **unpack each new release into a
new folder beside this one, never over it**, or its blank copies replace your work. Then copy your own earlier
notebooks into the new folder's `notebooks/`, each into the folder of its name, and work there.
"""
