"""An instructor's nbgrader course directory, outside the repository, and the steps run in it:
release the assignments, take in submissions, autograde, export the grades."""

import csv
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

from autograder.pipeline import AUTOGRADER, SOLUTIONS, nbgrader

CONFIG = """\
# nbgrader configuration of a class taught with the transformer course.
c = get_config()  # noqa: F821
# The course's own settings (cell timeout, stubs), then this class's folders.
load_subconfig({course_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
"""


@dataclass(frozen=True)
class CourseDirectory:
    root: Path

    @classmethod
    def create(cls, root: Path) -> "CourseDirectory":
        """Set up a course directory as an instructor would: the solutions as source, and a config."""
        root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SOLUTIONS, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        config = CONFIG.format(course_config=str(AUTOGRADER / "nbgrader_config.py"), root=str(root))
        (root / "nbgrader_config.py").write_text(config, encoding="utf-8")
        return cls(root)

    def release(self) -> None:
        nbgrader("generate_assignment", "*", "--force", cwd=self.root)

    def released(self, assignment: str) -> dict[str, nbformat.NotebookNode]:
        """The student versions of an assignment's notebooks, by file name."""
        paths = sorted((self.root / "release" / assignment).glob("*.ipynb"))
        return {path.name: nbformat.read(path, as_version=4) for path in paths}

    def submit(self, student: str, assignment: str, notebooks: dict[str, nbformat.NotebookNode]) -> None:
        """Place a student's notebooks where nbgrader collects them: submitted/<student>/<assignment>/."""
        folder = self.root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for name, notebook in notebooks.items():
            nbformat.write(notebook, folder / name)

    def autograde(self, assignment: str) -> None:
        nbgrader("autograde", assignment, "--force", cwd=self.root)

    def generate_feedback(self, assignment: str) -> None:
        """Write nbgrader's feedback HTML for every autograded student."""
        nbgrader("generate_feedback", assignment, "--force", cwd=self.root)

    def feedback_files(self, assignment: str) -> list[Path]:
        """The feedback HTML written so far: feedback/<student>/<assignment>/<notebook>.html."""
        return sorted((self.root / "feedback").glob(f"*/{assignment}/*.html"))

    def grades(self) -> list[dict[str, str]]:
        """The rows of nbgrader's exported grades CSV: one per student and assignment."""
        nbgrader("export", "--to", "grades.csv", cwd=self.root)
        with open(self.root / "grades.csv", newline="", encoding="utf-8") as file:
            return list(csv.DictReader(file))

    def failed_tests(self, student: str, assignment: str) -> dict[str, str]:
        """For each graded test cell that failed in the autograded notebooks: its grade_id and error text."""
        failed = {}
        for path in sorted((self.root / "autograded" / student / assignment).glob("*.ipynb")):
            for cell in nbformat.read(path, as_version=4).cells:
                grading = cell.metadata.get("nbgrader", {})
                errors = [output for output in cell.get("outputs", []) if output.output_type == "error"]
                if grading.get("grade") and errors:
                    failed[grading["grade_id"]] = "\n".join(f"{e.ename}: {e.evalue}" for e in errors)
        return failed
