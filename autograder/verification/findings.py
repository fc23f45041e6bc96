"""What grading finds about a submission besides its tests' scores, as types.

Each kind of finding words itself in one place (``text``), for the report and the feedback; the tests and the
demo's sample submissions match on the kind and its fields, never on the words. Findings travel from nbgrader's
process to the course's in the autograded notebook's metadata, as JSON (``as_json``, ``from_json``).
"""

import signal
from dataclasses import asdict, dataclass, fields

SIGNAL_EXIT = 128  # exit codes above this stand for a death by signal (code - 128), as shells report them


@dataclass(frozen=True)
class Finding:
    @property
    def text(self) -> str:
        raise NotImplementedError

    def as_json(self) -> dict:
        return {"finding": type(self).__name__, **asdict(self)}

    @staticmethod
    def from_json(data: dict) -> "Finding":
        kind = KINDS[data["finding"]]
        values = {field.name: data[field.name] for field in fields(kind) if field.name in data}  # older: defaults
        return kind(**{name: tuple(value) if isinstance(value, list) else value for name, value in values.items()})


# --- the files handed in -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NotSubmitted(Finding):
    notebook: str

    @property
    def text(self) -> str:
        return f"{self.notebook} was not submitted"


@dataclass(frozen=True)
class Unreadable(Finding):
    notebook: str
    error: str

    @property
    def text(self) -> str:
        return f"{self.notebook} could not be read as a notebook: {self.error}"


@dataclass(frozen=True)
class NotOfThisAssignment(Finding):
    path: str
    expected: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.path} is not a notebook of this assignment (expected {', '.join(self.expected)}); not graded"


@dataclass(frozen=True)
class ExtraFile(Finding):
    path: str
    could_shadow: bool  # a .py file, or one in a folder: in the kernel's folder it could replace a module

    @property
    def text(self) -> str:
        if self.could_shadow:
            return f"extra file {self.path} was left out: its name could shadow a module the checks import"
        return f"extra file {self.path} was left out (only the assignment's notebooks are graded)"


# --- cells the student was not meant to change (structure.py) ------------------------------------------------


@dataclass(frozen=True)
class ChangedCell(Finding):
    change: str  # deleted, edited, retyped, metadata, reordered, duplicated
    cell: str  # the grade_id (or cell id) concerned
    what: str  # what happened, in the report's words

    @property
    def text(self) -> str:
        return self.what


# --- the student's cells, in nbgrader's kernel (nbgrader_steps.py) or the sealed run (sealed_run.py) ---------


@dataclass(frozen=True)
class CellFailed(Finding):
    """One of the student's cells raised."""

    cell: str  # its grade_id, or "the cell you added after ..."
    error_type: str  # the exception's class name
    message: str

    @property
    def text(self) -> str:
        return f"{your_cell(self.cell)} failed: {self.error_type}: {self.message}"


@dataclass(frozen=True)
class TimedOut(Finding):
    """One of the student's cells ran past the time limit and was interrupted."""

    cell: str
    seconds: float
    processor_time: bool = False  # True: it used up its processor time (job_watch.CellWatch); False: its wall clock

    @property
    def text(self) -> str:
        used = "used more than {:g} s of processor time" if self.processor_time else "ran longer than {:g} s"
        return f"{your_cell(self.cell)} {used.format(self.seconds)} and was interrupted"


@dataclass(frozen=True)
class ForgedVerdicts(Finding):
    lines: int

    @property
    def text(self) -> str:
        return f"your code wrote {self.lines} malformed message(s) to the judge's pipe, which ended the run"


@dataclass(frozen=True)
class RunEnded(Finding):
    """The sealed run's process ended before its last cell."""

    cell: str  # the cell it was running
    exit_code: int | None  # None: it ignored an interrupt and was stopped

    @property
    def signal(self) -> str | None:
        """The signal that killed it (SIGSEGV), if one did. In the sandbox, a process killed by signal N ends bwrap
        with code 128 + N, as a shell reports it; a process that chose such an exit code is reported the same."""
        code = self.exit_code
        number = -code if code is not None and code < 0 else code - SIGNAL_EXIT if code and code > SIGNAL_EXIT else None
        if number is None:
            return None
        try:
            return signal.Signals(number).name
        except ValueError:
            return f"signal {number}"

    @property
    def why(self) -> str:
        if self.exit_code is None:
            return f"{self.cell} did not stop when interrupted, so the run was stopped"
        ended = f"was killed by {self.signal}" if self.signal else f"exited with code {self.exit_code}"
        return f"the process {ended} while running {self.cell}"

    @property
    def text(self) -> str:
        return f"in the sealed run, {self.why}"


# --- grading (grading.py) ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HandedIn(Finding):
    """When the submission was handed in and due, and its late penalty (report.lateness_note)."""

    note: str

    @property
    def text(self) -> str:
        return self.note


@dataclass(frozen=True)
class NotGradedByNbgrader(Finding):
    reason: str  # the line of nbgrader's log that says why

    @property
    def text(self) -> str:
        return f"nbgrader could not grade it: {self.reason}"


@dataclass(frozen=True)
class JobTimedOut(Finding):
    """The whole graded run of the notebook used more processor time than the job's limit, or took longer than its
    wall-clock limit, and was stopped (autograder/job_watch.py)."""

    cell: str  # the cell it was running ("" when not known)
    whose: str  # "student", "course" or "test": whose code the cell holds
    seconds: float
    processor_time: bool = True  # which limit it reached: processor time, or wall-clock time

    @property
    def text(self) -> str:
        where = {"student": your_cell(self.cell), "test": f"the test {self.cell}"}.get(self.whose, self.cell)
        stopped = f"was stopped while running {where}" if self.cell else "was stopped"
        took = (
            f"used more than {self.seconds:g} s of processor time in all (the grading job's limit)"
            if self.processor_time
            else f"took longer than {self.seconds:g} s in all (the grading job's limit on waiting)"
        )
        return f"your code ran too long: the notebook's graded run {took} and {stopped}"


@dataclass(frozen=True)
class NotVerified(Finding):
    @property
    def text(self) -> str:
        return "no judge ran (the class's nbgrader_config.py leaves out the course's steps): its tests earn nothing"


@dataclass(frozen=True)
class NotGraded(Finding):
    reason: str  # why the autograder could not grade the submission at all

    @property
    def text(self) -> str:
        return f"not graded: {self.reason}"


def your_cell(name: str) -> str:
    """A student's cell as the report names it: by its exercise, or as "the cell you added after ..."."""
    return name if name.startswith("the cell") else f"your cell {name}"


KINDS = {kind.__name__: kind for kind in Finding.__subclasses__()}
