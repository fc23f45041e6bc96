"""An instructor's nbgrader course directory, outside the repository, and the steps run in it:
release the assignments, collect submissions, autograde, give feedback, export the grades."""

import fcntl
import hashlib
import html
import json
import os
import re
import shutil
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import nbformat
from nbgrader.api import Gradebook, MissingEntry
from nbgrader.apps import NbGraderAPI
from nbgrader.coursedir import CourseDirectory as NbgraderCourseDirectory
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from autograder import grading
from autograder.class_stats import AssignmentStats, assignment_stats
from autograder.feedback import shortened
from autograder.grades import Grade, class_grades, handed_out, read_not_graded, record_not_graded, write_grades_csv
from autograder.lms import (
    ROSTER,
    canvas_assignment_columns,
    canvas_columns,
    earlier_uploads,
    merge_roster,
    read_roster,
    roster_rows,
    stray_file,
    write_canvas_gradebook,
)
from autograder.report import Lateness, lateness_note, outcome_report
from autograder.repository import AUTOGRADER, SOLUTIONS, nbgrader
from autograder.verification.findings import HandedIn

CONFIG = """\
# nbgrader configuration of a class taught with the transformer course.
c = get_config()  # noqa: F821
# The course's own settings (cell timeout, stubs), then this class's folders.
load_subconfig({course_config!r})  # noqa: F821
c.CourseDirectory.root = {root!r}
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"
"""
# A class on JupyterHub also names the exchange, the folder every account of the hub can write to, through which
# students fetch assignments and submit them (nbgrader's exchange; see the README).
EXCHANGE_CONFIG = """\
c.CourseDirectory.course_id = {course_id!r}
c.Exchange.root = {exchange!r}
"""
EXCHANGE_MODE = 0o1777  # like /tmp: everyone may add, nobody may remove another's files
# What each submission was last graded from, so that grading again grades only what is new or changed.
LEDGER = "graded.json"
# Held by the command that grades: two gradings of one class at once would write one gradebook and ledger together.
GRADING_LOCK = ".grading.lock"
REPORTS = "reports"  # reports/<student>/<assignment>/report.txt: the last grading's report, as autograde printed it
NOT_GRADED_FEEDBACK = "not-graded.html"  # the feedback of a submission nbgrader did not grade: its report
# The assignment columns ("Title (id)") of the Canvas gradebook exports the roster came from, to export grades into.
CANVAS_ASSIGNMENTS = "canvas-assignments.json"
# assignment → student → the names of their collected files in an LMS download with upload ids (Canvas').
LMS_UPLOADS = "lms-uploads.json"
STRAY = "a stray file (macOS' archive metadata, or a hidden file), not a submission"
# "<student>/<assignment>" → true: the LMS named the submission late (Canvas' `late`), in a download with no times.
LATE_MARKS = "late-marks.json"


@dataclass(frozen=True)
class Collected:
    """What a collect did with every file of the download."""

    students: list[str]  # whose submissions are in submitted/ now
    new: list[str] = field(default_factory=list)  # whose files this download brought in
    left_out: dict[str, str] = field(default_factory=dict)  # a file of the download, as extracted → why not collected
    late: list[str] = field(default_factory=list)  # of this download's students, those the LMS marked late


class ClassBusy(RuntimeError):
    """Another command is grading this class right now."""


class UnknownAssignment(ValueError):
    """An assignment name that is not one of the class's (a typo, or a notebook of another course)."""


@dataclass(frozen=True)
class Imported:
    """What a roster import did."""

    students: int  # how many students the files list
    skipped: list[str] = field(default_factory=list)  # each row left out, with where and why


@dataclass(frozen=True)
class ClassFolder:
    root: Path

    @classmethod
    def create(cls, root: Path, exchange: Path | None = None, course_id: str | None = None) -> "ClassFolder":
        """Set up a course directory as an instructor would: the solutions as source, and a config."""
        root.mkdir(parents=True, exist_ok=True)
        shutil.copytree(SOLUTIONS, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        config = CONFIG.format(course_config=str(AUTOGRADER / "nbgrader_config.py"), root=str(root))
        if exchange is not None:
            if not exchange.exists():
                exchange.mkdir(parents=True)
                exchange.chmod(EXCHANGE_MODE)
            config += EXCHANGE_CONFIG.format(course_id=course_id or root.name, exchange=str(exchange))
        (root / "nbgrader_config.py").write_text(config, encoding="utf-8")
        return cls(root)

    @classmethod
    def existing(cls, root: Path) -> "ClassFolder":
        if not (root / "nbgrader_config.py").exists():
            raise FileNotFoundError(
                f"{root} is not a class folder (no nbgrader_config.py); create one with `class new`"
            )
        return cls(root)

    def assignments(self) -> list[str]:
        return sorted(path.name for path in (self.root / "source").iterdir() if path.is_dir())

    def require_known(self, assignments: list[str], what: str = "an assignment of this class") -> None:
        """Refuse names that are not the class's assignments, before a command does anything with them."""
        if unknown := [assignment for assignment in assignments if assignment not in self.assignments()]:
            names = ", ".join(repr(name) for name in unknown)
            raise UnknownAssignment(f"{names} is not {what} (its assignments: {', '.join(self.assignments())})")

    def write_student_versions(self, assignments: list[str] | None = None) -> None:
        """Write the student versions into release/: every assignment, or those named."""
        self.require_known(assignments or [])
        if not assignments or set(assignments) == set(self.assignments()):
            assignments = ["*"]  # one nbgrader run for all: each run costs seconds to start
        for assignment in assignments:
            nbgrader("generate_assignment", assignment, "--force", cwd=self.root)

    def hand_out(self, assignment: str) -> None:
        """Put an assignment's student version in the exchange for students to fetch (nbgrader release_assignment)."""
        self.require_known([assignment])
        self.require_exchange()
        nbgrader("release_assignment", assignment, "--force", cwd=self.root)

    def collect_from_exchange(self, assignment: str) -> list[str]:
        """Copy the latest submission of every student from the exchange into submitted/ (nbgrader collect), with
        the time it was submitted; returns the students who have one."""
        self.require_known([assignment])
        self.require_exchange()
        config = self.nbgrader_config()
        inbound = Path(config.Exchange.root) / config.CourseDirectory.course_id / "inbound"
        if not inbound.is_dir():  # nbgrader would stop with "Course not found"
            raise FileNotFoundError(
                f"The exchange has no inbound folder for course {config.CourseDirectory.course_id!r} ({inbound}): "
                "nothing has been handed out through it. Hand out an assignment first (`class hand-out`), or check "
                f"c.Exchange.root in {self.root / 'nbgrader_config.py'}."
            )
        nbgrader("collect", assignment, "--update", cwd=self.root)
        # nbgrader names each submission in the exchange <student>+<assignment>+<time>+<random>
        handed_in = [path.name.split("+") for path in inbound.iterdir()]
        return sorted({parts[0] for parts in handed_in if len(parts) > 1 and parts[1] == assignment})

    def release_feedback(self, assignment: str) -> list[str]:
        """Put the feedback of every student who submitted through the exchange there, where each fetches their own
        (nbgrader release_feedback); returns them. Feedback of a submission collected from an LMS download goes
        back through the LMS: nbgrader would stop on it, lacking the exchange's submission time and secret."""
        self.require_exchange()
        students = sorted(
            folder.parent.name
            for folder in (self.root / "feedback").glob(f"*/{assignment}")
            if all((folder / name).exists() for name in grading.NBGRADER_FILES)
        )
        api = self.nbgrader_api()  # in this process: a run of nbgrader per student would cost seconds each
        for student in students:
            result = api.release_feedback(assignment, student)
            if not result["success"]:
                raise RuntimeError(f"nbgrader release_feedback {assignment} --student {student}: {result['error']}")
        return students

    def nbgrader_config(self) -> Config:
        """The class's configuration as nbgrader reads it: its nbgrader_config.py, with the course's settings."""
        return PyFileConfigLoader("nbgrader_config.py", path=str(self.root)).load_config()

    def cell_timeout(self) -> float:
        """Seconds a cell may run when this class is graded: its nbgrader_config.py's c.ExecutePreprocessor.timeout,
        which nbgrader run by hand and the formgrader read too (the course's CELL_TIMEOUT unless the class sets its
        own), so that one setting holds for every way of grading it."""
        timeout = self.nbgrader_config().ExecutePreprocessor.get("timeout")
        return float(timeout) if isinstance(timeout, int | float) and timeout > 0 else grading.CELL_TIMEOUT

    def memory(self) -> int:
        """Bytes each process of a student's may write to when this class is graded: its nbgrader_config.py's
        c.GradingSandbox.memory, which nbgrader run by hand and the formgrader read too (the course's unless the class
        sets its own)."""
        memory = self.nbgrader_config().GradingSandbox.get("memory")
        return memory if isinstance(memory, int) and memory > 0 else grading.MEMORY_LIMIT

    def nbgrader_api(self) -> NbGraderAPI:
        """nbgrader's Python interface to this class, with its configuration, as the formgrader uses it."""
        config = self.nbgrader_config()
        return NbGraderAPI(NbgraderCourseDirectory(config=config), config=config)

    def require_exchange(self) -> None:
        if "root" not in self.nbgrader_config().get("Exchange", {}):
            raise ValueError(f"{self.root} has no exchange: create the class with `class new DIR --exchange PATH`")

    def released(self, assignment: str) -> dict[str, nbformat.NotebookNode]:
        """The student versions of an assignment's notebooks, by file name."""
        paths = sorted((self.root / "release" / assignment).glob("*.ipynb"))
        return {path.name: nbformat.read(path, as_version=4) for path in paths}

    def submit(
        self,
        student: str,
        assignment: str,
        notebooks: dict[str, nbformat.NotebookNode],
        files: dict[str, str] | None = None,
    ) -> None:
        """Place a student's notebooks (and any other files) where nbgrader collects them:
        submitted/<student>/<assignment>/."""
        folder = self.root / "submitted" / student / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for name, notebook in notebooks.items():
            nbformat.write(notebook, folder / name)
        for name, text in (files or {}).items():
            (folder / name).write_text(text, encoding="utf-8")

    def submissions(self, assignments: list[str] | None = None, students: list[str] | None = None) -> list[tuple]:
        """The (student, assignment) pairs in submitted/, optionally only of the given assignments or students."""
        return sorted(
            (folder.parent.name, folder.name)
            for folder in (self.root / "submitted").glob("*/*")
            if folder.is_dir()
            and (not assignments or folder.name in assignments)
            and (not students or folder.parent.name in students)
        )

    def collect(self, assignment: str, sources: list[Path], regexp: str | None = None) -> Collected:
        """Collect submissions with nbgrader's zip_collect from LMS downloads (zip files) or folders, into
        submitted/, and account for every file of the download. By default a student is the folder holding the
        notebook, or the start of the file's name up to the first underscore (<student>_..._<notebook>.ipynb).
        An assignment this class has not released is refused before anything is written."""
        self.require_known([assignment], what="a released assignment of this class")
        released = list(self.released(assignment))
        if not released:
            raise UnknownAssignment(
                f"{assignment!r} is not a released assignment of this class: write its student version first "
                f"(`class student-versions {assignment}`)"
            )
        archive = self.root / "downloaded" / assignment / "archive"
        shutil.rmtree(archive, ignore_errors=True)  # this download replaces the last one
        archive.mkdir(parents=True)
        for source in sources:
            for item in source.iterdir() if source.is_dir() else [source]:
                copy = shutil.copytree if item.is_dir() else shutil.copy
                copy(item, archive / item.name)
        regexp = regexp or submission_pattern(released)
        try:
            nbgrader(
                "zip_collect", assignment, "--force", f"--FileNameCollectorPlugin.named_regexp={regexp}", cwd=self.root
            )
        except RuntimeError as error:
            if clashes := self.clashes(assignment, regexp):
                raise ValueError(clashes) from error
            raise
        students = sorted({student for student, _ in self.submissions([assignment])})
        late = self.record_late_marks(assignment, regexp)
        left_out = self.left_out(assignment, regexp, released)
        matches = self.downloaded(assignment, regexp)
        collected = {name: match for name, match in matches.items() if match and name not in left_out}
        self.record_lms_uploads(assignment, collected)
        return Collected(students, sorted({match["student_id"] for match in collected.values()}), left_out, late)

    def record_lms_uploads(self, assignment: str, collected: dict[str, re.Match]) -> None:
        """Remember the name each student's collected file had in an LMS download that gives upload ids (Canvas'),
        for their feedback to go back by that name (feedback_for_canvas)."""
        path = self.root / LMS_UPLOADS
        record = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        uploads = record.setdefault(assignment, {})
        for match in collected.values():
            uploads.pop(match["student_id"], None)  # collected again: the old upload is no longer theirs
        for name, match in collected.items():
            if match.groupdict().get("upload"):
                uploads.setdefault(match["student_id"], []).append(Path(name).name)
        path.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")

    def feedback_for_canvas(self, assignment: str, bundle: Path) -> list[str]:
        """A zip of the assignment's feedback pages for Canvas' "Re-Upload Submissions", which attaches each file to
        a student's submission by the user id and upload id that start its name (the names of Canvas' download).
        Returns the students it holds: those collected from a Canvas download who have feedback (none: no zip)."""
        path = self.root / LMS_UPLOADS
        uploads = json.loads(path.read_text(encoding="utf-8")).get(assignment, {}) if path.exists() else {}
        pages = {
            student: sorted((self.root / "feedback" / student / assignment).glob("*.html"))
            for student in sorted(uploads)
        }
        bundled = [student for student, theirs in pages.items() if theirs]
        if bundled:
            with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as archive:
                for student in bundled:
                    prefix = canvas_prefix(uploads[student][0])  # <name>_[late_]<user id>_<upload id>
                    for page in pages[student]:
                        archive.write(page, f"{prefix}_{page.name}")
        return bundled

    def downloaded(self, assignment: str, regexp: str) -> dict[str, re.Match | None]:
        """Every file of the last download but the stray ones, as nbgrader extracted it, with how the pattern reads
        its name."""
        return {
            name: re.match(regexp, str(path))
            for name, path in self.extracted(assignment).items()
            if not stray_file(name)
        }

    def extracted(self, assignment: str) -> dict[str, Path]:
        """Every file of the last download, by its name in the download."""
        extracted = self.root / "downloaded" / assignment / "extracted"
        return {str(path.relative_to(extracted)): path for path in sorted(extracted.rglob("*")) if path.is_file()}

    def left_out(self, assignment: str, regexp: str, released: list[str]) -> dict[str, str]:
        reasons = {name: STRAY for name in self.extracted(assignment) if stray_file(name)}
        matches = self.downloaded(assignment, regexp)
        earlier = earlier_uploads(matches)
        for name, match in matches.items():
            if match is None:
                reasons[name] = self.unmatched(name, assignment, released)
            elif name in earlier:
                reasons[name] = f"an earlier upload of {match['student_id']}'s {match['file_id']} than {earlier[name]}"
            elif not (
                self.root / "submitted" / match["student_id"] / assignment / f"{match['file_id']}.ipynb"
            ).exists():
                reasons[name] = f"read as {match['student_id']}'s {match['file_id']}, but nbgrader did not collect it"
        return reasons

    def unmatched(self, name: str, assignment: str, released: list[str]) -> str:
        """Why a file whose name matches no notebook of the assignment was left out: of another assignment, or not."""
        for other in self.assignments():
            notebooks = [path.name for path in (self.root / "source" / other).glob("*.ipynb")]
            if other != assignment and notebooks and re.match(submission_pattern(notebooks), f"/download/{name}"):
                return f"it is a notebook of {other}, not of {assignment}: collect it with `class collect {other}`"
        return f"its name matches no notebook of this assignment ({', '.join(released)})"

    def clashes(self, assignment: str, regexp: str) -> str:
        """Files the pattern reads as the same student's same notebook (nbgrader stops on them), named."""
        by_student = defaultdict(list)
        matches = self.downloaded(assignment, regexp)
        earlier = earlier_uploads(matches)  # not collected, so no clash
        for name, match in matches.items():
            if match is not None and name not in earlier:
                by_student[match["student_id"], match["file_id"]].append(name)
        clashing = [f"{student}: {', '.join(names)}" for (student, _), names in by_student.items() if len(names) > 1]
        if not clashing:
            return ""
        return (
            "Nothing was collected: these files are read as one student's same notebook, with no time to tell which "
            "is later (two students with the same name, or two submissions of one):\n  "
            + "\n  ".join(clashing)
            + "\nRemove the older file, or collect with --regexp whose student_id group takes the LMS user id."
        )

    def record_late_marks(self, assignment: str, regexp: str) -> list[str]:
        """Remember whom the last download's file names mark late (the pattern's `late` group, Canvas' mark), for
        their reports: such a download has no submission times. Returns those students."""
        matches = self.downloaded(assignment, regexp)
        earlier = earlier_uploads(matches)
        marked = defaultdict(bool)
        for name, match in matches.items():
            if match is not None and name not in earlier:
                marked[match["student_id"]] |= bool(match.groupdict().get("late"))
        record = self.late_marks()
        for student, late in marked.items():
            if late:
                record[f"{student}/{assignment}"] = True
            else:
                record.pop(f"{student}/{assignment}", None)  # handed in again, on time
        (self.root / LATE_MARKS).write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
        return sorted(student for student, late in marked.items() if late)

    def late_marks(self) -> dict[str, bool]:
        path = self.root / LATE_MARKS
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def autograde(
        self,
        pairs: list[tuple[str, str]] | None = None,
        limits: grading.Limits | None = None,
        progress: Callable[[grading.Outcome], None] = lambda outcome: None,
    ) -> list[grading.Outcome]:
        """Autograde and verify the given (student, assignment) pairs, or every submission, in parallel; remember
        what each graded submission was graded from."""
        with self.grading_lock():
            return self.autograde_locked(self.submissions() if pairs is None else pairs, limits, progress)

    @contextmanager
    def grading_lock(self) -> Iterator[None]:
        """Refuse to grade while another process grades this class; the lock goes with the process that holds it,
        however it ends."""
        with open(self.root / GRADING_LOCK, "a+", encoding="utf-8") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                lock.seek(0)
                raise ClassBusy(
                    f"Another command is grading {self.root} (process {lock.read().strip() or '?'}): wait for it "
                    "to finish, then grade again; it grades only what is new."
                ) from None
            lock.truncate(0)
            lock.write(str(os.getpid()))
            lock.flush()
            yield

    def autograde_locked(
        self,
        pairs: list[tuple[str, str]],
        limits: grading.Limits | None,
        progress: Callable[[grading.Outcome], None],
    ) -> list[grading.Outcome]:
        limits = limits or grading.Limits()
        due = self.due_dates()
        fingerprints = {pair: self.fingerprint(*pair, limits, due.get(pair[1])) for pair in pairs}
        reported = set()

        def with_lateness(outcome: grading.Outcome) -> None:
            """Each outcome as it is merged into the gradebook, with its late penalty: progress shows the grade."""
            self.note_lateness([outcome])
            reported.add(id(outcome))
            progress(outcome)

        outcomes = grading.autograde(self.root, pairs, limits, with_lateness)
        self.note_lateness([outcome for outcome in outcomes if id(outcome) not in reported])  # its worker died twice
        ledger = self.ledger()
        for outcome in outcomes:
            report = self.root / REPORTS / outcome.student / outcome.assignment / "report.txt"
            report.parent.mkdir(parents=True, exist_ok=True)
            report.write_text(outcome_report(outcome) + "\n", encoding="utf-8")
            if outcome.graded:  # one that could not be graded is tried again next time
                ledger[f"{outcome.student}/{outcome.assignment}"] = fingerprints[outcome.student, outcome.assignment]
        (self.root / LEDGER).write_text(json.dumps(ledger, indent=1, sort_keys=True), encoding="utf-8")
        record_not_graded(
            self.root, {f"{outcome.student}/{outcome.assignment}": outcome.graded for outcome in outcomes}
        )
        return outcomes

    def note_lateness(self, outcomes: list[grading.Outcome]) -> None:
        """Add to each report, from the class gradebook, when the submission was handed in and due, how late it was
        and its late penalty; or that the LMS marked it late without a time."""
        marks = self.late_marks()
        with self.gradebook() as gradebook:
            for outcome in outcomes:
                marked = marks.get(f"{outcome.student}/{outcome.assignment}", False)
                late = lateness(gradebook, outcome.student, outcome.assignment, marked)
                outcome.late_penalty = late.penalty
                if note := lateness_note(late):
                    outcome.notes.append(HandedIn(note))

    def due_dates(self) -> dict[str, datetime]:
        """The assignments' due dates in the gradebook (UTC), of those that have one."""
        if not (self.root / "gradebook.db").exists():
            return {}
        with self.gradebook() as gradebook:
            return {assignment.name: assignment.duedate for assignment in gradebook.assignments if assignment.duedate}

    def gradebook(self) -> Gradebook:
        return Gradebook(f"sqlite:///{self.root / 'gradebook.db'}")  # nbgrader's default place

    def changed(self, pairs: list[tuple[str, str]], limits: grading.Limits) -> list[tuple[str, str]]:
        """The pairs not graded yet, or graded from other files, limits or due date than they have now."""
        ledger, due = self.ledger(), self.due_dates()
        return [
            pair for pair in pairs if ledger.get("/".join(pair)) != self.fingerprint(*pair, limits, due.get(pair[1]))
        ]

    def ledger(self) -> dict[str, str]:
        path = self.root / LEDGER
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}

    def fingerprint(self, student: str, assignment: str, limits: grading.Limits, due: datetime | None = None) -> str:
        """What a grade depends on: the submission's files, the assignment's source notebooks, the limits and the
        due date (the late penalty). (Not the course's checks: after updating the course, grade everything again
        with --all.)"""
        digest = hashlib.sha256(repr((limits.cell_timeout, limits.memory, limits.sandbox)).encode())
        if due is not None:  # only then, so that what was graded before there were due dates stays graded
            digest.update(f"due {due.isoformat()}".encode())
        for folder in (self.root / "submitted" / student / assignment, self.root / "source" / assignment):
            for path in sorted(path for path in folder.rglob("*") if path.is_file()):
                digest.update(f"{path.relative_to(folder)}\0{path.stat().st_size}\0".encode() + path.read_bytes())
        return digest.hexdigest()

    def generate_feedback(self, assignment: str, show_hidden_tests: bool = False) -> list[Path]:
        """Write nbgrader's feedback HTML for every autograded student (hidden tests' code only if asked), each
        beside its report; a student whose submission could not be graded gets a page with the report. Returns
        those pages."""
        if any(True for _ in (self.root / "autograded").glob(f"*/{assignment}/*.ipynb")):
            shown = ["--HideHiddenTests.enabled=False"] if show_hidden_tests else []
            nbgrader("generate_feedback", assignment, "--force", *shown, cwd=self.root)
        ungraded = []
        for report in sorted((self.root / REPORTS).glob(f"*/{assignment}/report.txt")):
            feedback = self.root / "feedback" / report.parent.parent.name / assignment
            feedback.mkdir(parents=True, exist_ok=True)
            text = shortened(report.read_text(encoding="utf-8"))
            (feedback / "report.txt").write_text(text, encoding="utf-8")
            page = feedback / NOT_GRADED_FEEDBACK
            if any(path != page for path in feedback.glob("*.html")):
                page.unlink(missing_ok=True)  # graded since
                continue
            page.write_text(
                f"<!DOCTYPE html>\n<title>{assignment}</title>\n<pre>{html.escape(text)}</pre>\n", encoding="utf-8"
            )
            ungraded.append(page)
        return ungraded

    def export(self, to: Path | None = None, assignments: list[str] | None = None) -> Path:
        """grades.csv (autograder/grades.py), one row per student and assignment handed out (or named); by default in
        the class folder."""
        path = (to or self.root / "grades.csv").resolve()
        with self.existing_gradebook(assignments) as gradebook:
            write_grades_csv(gradebook, self.grades(gradebook, assignments), path)
        return path

    def export_canvas(self, to: Path, assignments: list[str] | None = None) -> dict[str, str]:
        """Canvas' gradebook import file (autograder/lms.py) with a column for each assignment handed out (or named),
        that of Canvas' own assignment where the roster came from Canvas' export. Returns assignment → column."""
        roster = read_roster(self.root / ROSTER) if (self.root / ROSTER).exists() else []
        with self.existing_gradebook(assignments) as gradebook:
            grades = self.grades(gradebook, assignments)
            columns = canvas_columns(sorted({grade.assignment for grade in grades}), self.canvas_assignments())
            write_canvas_gradebook(gradebook, grades, columns, roster, to.resolve())
        return columns

    def existing_gradebook(self, assignments: list[str] | None) -> Gradebook:
        """The gradebook, to read grades of the named assignments from, once the names are known to be right."""
        self.require_known(assignments or [])
        if not (self.root / "gradebook.db").exists():
            raise FileNotFoundError(f"{self.root} has no grades yet: import the roster, then collect and autograde")
        return self.gradebook()

    def grades(self, gradebook: Gradebook, assignments: list[str] | None) -> list[Grade]:
        marked_late = frozenset(key for key, late in self.late_marks().items() if late)
        return class_grades(gradebook, assignments or handed_out(gradebook), read_not_graded(self.root), marked_late)

    def stats(self, assignments: list[str] | None = None) -> list[AssignmentStats]:
        """What the class got wrong in each assignment handed out (or named): autograder/class_stats.py."""
        with self.existing_gradebook(assignments) as gradebook:
            grades = self.grades(gradebook, assignments)
            names = sorted({grade.assignment for grade in grades})
            return [
                assignment_stats(self.root, gradebook, [grade for grade in grades if grade.assignment == name])
                for name in names
            ]

    def canvas_assignments(self) -> list[str]:
        """The assignment columns of the Canvas gradebook exports the roster was imported from."""
        path = self.root / CANVAS_ASSIGNMENTS
        return json.loads(path.read_text(encoding="utf-8")) if path.exists() else []

    def import_roster(self, paths: list[Path]) -> "Imported":
        """Add the students of rosters (nbgrader's student CSV, or Canvas' gradebook export) to the class's
        roster.csv and, with nbgrader's `db student import`, to the gradebook. Returns how many they list, and the
        rows left out."""
        if missing := [str(path) for path in paths if not path.is_file()]:
            raise FileNotFoundError(f"No such roster file: {', '.join(missing)}")
        read = [roster_rows(path) for path in paths]
        columns = {column for path in paths for column in canvas_assignment_columns(path)}
        if columns:
            known = set(self.canvas_assignments()) | columns
            (self.root / CANVAS_ASSIGNMENTS).write_text(json.dumps(sorted(known), indent=1), encoding="utf-8")
        students = [student for rows, _ in read for student in rows]
        merge_roster(self.root / ROSTER, students)
        nbgrader("db", "student", "import", str(self.root / ROSTER), cwd=self.root)
        return Imported(len(students), [row for _, skipped in read for row in skipped])

    def set_due(self, assignment: str, when: str) -> datetime:
        """Set an assignment's due date in the gradebook (nbgrader's `db assignment add --duedate`)."""
        self.require_known([assignment])
        due = zoned_time(when)
        nbgrader("db", "assignment", "add", assignment, f"--duedate={due.isoformat()}", cwd=self.root)
        return due


def lateness(gradebook: Gradebook, student: str, assignment: str, marked_late: bool) -> Lateness:
    try:
        submission = gradebook.find_submission(assignment, student)
    except MissingEntry:  # nbgrader could not register it
        return Lateness(marked_late=marked_late)
    return Lateness(
        submitted=submission.timestamp,
        due=submission.duedate,
        seconds_late=submission.total_seconds_late,
        penalty=submission.late_submission_penalty or 0.0,
        marked_late=marked_late,
    )


def zoned_time(text: str) -> datetime:
    """An ISO 8601 time with its zone: a due date without one would be read as UTC, hours off."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(f"{text!r} is not an ISO time with its zone, such as 2027-03-01T23:59+01:00 (Z for UTC)")
    return moment


def canvas_prefix(name: str) -> str:
    """The start of a Canvas download's file name up to its upload id: <name>_[late_]<user id>_<upload id>."""
    parts = name.split("_")
    numbers = [index for index, part in enumerate(parts) if part.isdigit()]
    return "_".join(parts[: numbers[1] + 1])


def submission_pattern(notebooks: list[str]) -> str:
    """nbgrader's FileNameCollector pattern (matched against the extracted file's full path). It reads three
    layouts, each with the suffixes LMSs and browsers add to repeated uploads and downloads (-1, " (1)"):

    - Canvas': <lastfirst>_[late_]<user id>_<upload id>_<original name>. A name is Canvas' when, after the name
      and Canvas' optional `late` (any case), come two numbers and then an original name ending in a notebook of the
      assignment. The student is then the user id, so two students of the same name are told apart. Group `late`
      is Canvas' late mark; group `upload` is the uploaded file's id, which grows with each upload (NewestUpload
      collects the newest).
    - <student>/<notebook>.ipynb: the student is the folder holding the notebook.
    - <student>_<anything>_<notebook>.ipynb: the start of the name up to the first underscore."""
    names = "|".join(re.escape(Path(name).stem) for name in notebooks)
    repeated = r"(?:-\d+| \(\d+\))?"
    canvas = rf"(?P<canvas_name>[^/]+?)_(?:(?P<late>(?i:late))_)?(?=\d+_\d+_[^/]*?(?:{names}){repeated}\.ipynb$)"
    student = r"(?P<student_id>(?(canvas_name)\d+|[^/]+?))"
    separator = r"(?(canvas_name)_(?P<upload>\d+)_[^/]*?|(?:/|_[^/]*?_?))"
    return rf".*/(?:{canvas})?{student}{separator}(?P<file_id>{names}){repeated}\.ipynb$"
