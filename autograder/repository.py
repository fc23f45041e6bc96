"""Where the course's files are, and how its nbgrader runs: the paths every part of the repository shares."""

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
NOTEBOOKS = REPO / "notebooks"
AUTOGRADER = REPO / "autograder"  # nbgrader reads nbgrader_config.py from here


def this_python_first(environment: dict[str, str] | None = None) -> dict[str, str]:
    """``environment`` (default: this process's) with this Python's programs first on PATH: nbgrader starts some by
    name (``alembic``), and so do the kernels and servers it starts."""
    environment = dict(os.environ if environment is None else environment)
    environment["PATH"] = str(Path(sys.executable).parent) + os.pathsep + environment.get("PATH", "")
    return environment


def nbgrader(*args: str, cwd: Path = AUTOGRADER) -> subprocess.CompletedProcess:
    """Run an nbgrader command of this environment; fail with its log if it fails."""
    command = [sys.executable, "-m", "nbgrader", *args]
    result = subprocess.run(command, cwd=cwd, env=this_python_first(), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"nbgrader {' '.join(args)} failed (exit {result.returncode}):\n{result.stderr}")
    return result


def assignments() -> list[str]:
    """The assignments in teaching order: the numbered folders of solutions/."""
    return sorted(path.name for path in SOLUTIONS.iterdir() if path.is_dir() and path.name[:2].isdigit())


def notebook_paths(root: Path) -> list[Path]:
    return sorted(path for path in root.glob("*/*.ipynb") if ".ipynb_checkpoints" not in path.parts)
