"""The autograder's commands, reached through course.py (which sets up the environment first).

    python3.11 course.py grade [NOTEBOOK ...]          grade your own notebooks (default: all of notebooks/)
    python3.11 course.py class new DIR                  create a class folder (nbgrader course directory)
    python3.11 course.py class student-versions [ASSIGNMENT ...]   (again) write release/ from source/
    python3.11 course.py class roster FILE ...             import students (nbgrader's CSV or Canvas' export)
    python3.11 course.py class due ASSIGNMENT WHEN         set a due date (ISO time with zone)
    python3.11 course.py class hand-out ASSIGNMENT ...  put student versions in the JupyterHub exchange
    python3.11 course.py class collect ASSIGNMENT [SOURCE ...]   collect submissions (LMS zip files, folders, or
                                                        with no SOURCE the exchange)
    python3.11 course.py class autograde [ASSIGNMENT ...]  autograde and verify new or changed submissions
    python3.11 course.py class formgrader               open nbgrader's formgrader on the class folder
    python3.11 course.py class feedback [ASSIGNMENT ...]   write feedback HTML into feedback/
    python3.11 course.py class export [--to FILE]          export the grades to CSV
    python3.11 course.py class export --canvas FILE        the grades as Canvas' gradebook import file
    python3.11 course.py class stats [ASSIGNMENT ...]      what the class got wrong: a table and stats.html
    python3.11 course.py class demo                        the whole loop on sample submissions, in a temp folder
    python3.11 course.py class release-package OUT --through NN   a student release: notebooks 01..NN and the
                                                        helper package with no answers (autograder/release.py)

The class commands work on the class folder given by --class-folder (default: the current folder). Each is a thin
layer over nbgrader's own command of the same purpose; grading adds parallel workers, limits, the sandbox
(autograder/verification/sandbox.py) and the sealed verification (autograder/verification/).

Grading a class runs every submission in the sandbox and refuses where none can run; --no-sandbox grades anyway,
and the report says so. A learner's own notebooks are graded in the sandbox when there is one, else without.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder import release as student_release
from autograder.class_folder import ClassBusy, ClassFolder
from autograder.class_stats import page as stats_page
from autograder.class_stats import table as stats_table
from autograder.grading import CELL_TIMEOUT, MEMORY_LIMIT, Limits, Outcome
from autograder.report import class_summary, notebook_table, outcome_report
from autograder.repository import NOTEBOOKS, SOLUTIONS, assignments, notebook_paths, this_python_first
from autograder.samples import reports, samples
from autograder.verification.sandbox import unavailable

LEARNER = "you"  # the student id a learner's own notebooks are graded under
DEMO_CELL_TIMEOUT = 30.0  # the demo's infinite loop should not hold it up for the course's full limit


def main(argv: list[str] | None = None) -> int:
    args, extra = parser().parse_known_args(argv)
    if extra and args.command is not open_formgrader:  # only the formgrader passes options on (to jupyter lab)
        parser().parse_args(argv)  # says what it does not know, and exits 2
    args.jupyter_options = [option for option in extra if option != "--"]
    try:
        return args.command(args)
    except (FileNotFoundError, ValueError, SandboxUnavailable, ClassBusy) as problem:
        print(problem, file=sys.stderr)
        return 2


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="course.py", description="Grade notebooks of the transformer course.")
    commands = top.add_subparsers(required=True, metavar="{grade,class}")
    grade = commands.add_parser("grade", help="grade your own notebooks, without changing them")
    grade.add_argument(
        "notebooks", nargs="*", type=Path, help=f"notebooks to grade (default: every one in {NOTEBOOKS.name}/)"
    )
    add_limits(grade)
    grade.set_defaults(command=grade_own)

    teaching = commands.add_parser("class", help="an instructor's commands for a class").add_subparsers(required=True)
    new = teaching.add_parser("new", help="create a class folder: source/ (the solutions) and release/")
    new.add_argument("folder", type=Path)
    new.add_argument("--exchange", type=Path, help="on JupyterHub: the exchange folder every account can write to")
    new.add_argument("--course-id", help="the course's name in the exchange (default: the folder's name)")
    new.set_defaults(command=new_class)
    for name, command, what in (
        ("student-versions", student_versions, "write the student versions into release/ (generate_assignment)"),
        ("autograde", autograde, "autograde and verify submissions in parallel, then report"),
        ("feedback", feedback, "write feedback HTML into feedback/ (nbgrader generate_feedback)"),
    ):
        sub = teaching.add_parser(name, help=what)
        sub.add_argument("assignments", nargs="*", help="assignments (default: all, or all handed in)")
        sub.set_defaults(command=command)
        add_class_folder(sub)
        if name == "autograde":
            sub.add_argument("--student", action="append", help="grade only this student (repeatable)")
            sub.add_argument("--all", action="store_true", help="grade every submission again, changed or not")
            add_limits(sub, cell_timeout=None)
            add_sandbox_choice(sub)
        if name == "feedback":
            sub.add_argument(
                "--show-hidden-tests", action="store_true", help="show the code of hidden tests in the feedback"
            )
            sub.add_argument("--release", action="store_true", help="also put it in the exchange for students to fetch")
            sub.add_argument(
                "--canvas",
                type=Path,
                metavar="FOLDER",
                help="also write <assignment>-feedback.zip here, for Canvas' Re-Upload Submissions",
            )
    collect = teaching.add_parser("collect", help="collect submissions into submitted/ (nbgrader zip_collect)")
    collect.add_argument("assignment")
    collect.add_argument(
        "sources", nargs="*", type=Path, help="LMS downloads (zip files) or folders (none: from the exchange)"
    )
    collect.add_argument("--regexp", help="nbgrader FileNameCollectorPlugin pattern with student_id and file_id groups")
    collect.set_defaults(command=collect_submissions)
    add_class_folder(collect)
    hand_out = teaching.add_parser("hand-out", help="put student versions in the exchange (release_assignment)")
    hand_out.add_argument("assignments", nargs="+")
    hand_out.set_defaults(command=hand_out_assignments)
    add_class_folder(hand_out)
    grader = teaching.add_parser(
        "formgrader",
        help="open nbgrader's formgrader on the class folder, in JupyterLab",
        epilog="Other options are JupyterLab's own, passed on: --no-browser, --port 8899, ...",
    )
    grader.set_defaults(command=open_formgrader)
    add_class_folder(grader)
    export = teaching.add_parser("export", help="export the grades to CSV (nbgrader export)")
    export.add_argument("--to", type=Path, help="CSV file to write (default: grades.csv in the class folder)")
    export.add_argument("--canvas", type=Path, help="write Canvas' gradebook import file here instead")
    export.add_argument(
        "assignments", nargs="*", help="assignments (default: those handed out: with a due date or a submission)"
    )
    export.set_defaults(command=export_grades)
    add_class_folder(export)
    stats = teaching.add_parser("stats", help="what the class got wrong: a short table, and a page in HTML")
    stats.add_argument("assignments", nargs="*", help="assignments (default: those handed out)")
    stats.add_argument("--to", type=Path, help="the page to write (default: stats.html in the class folder)")
    stats.set_defaults(command=class_stats)
    add_class_folder(stats)
    roster = teaching.add_parser("roster", help="import students into the gradebook (nbgrader db student import)")
    roster.add_argument(
        "files", nargs="+", type=Path, help="nbgrader's student CSV (id,first_name,last_name,email) or Canvas' export"
    )
    roster.set_defaults(command=import_roster)
    add_class_folder(roster)
    due = teaching.add_parser("due", help="set an assignment's due date (nbgrader db assignment add --duedate)")
    due.add_argument("assignment")
    due.add_argument("when", help="ISO time with its zone: 2027-03-01T23:59+01:00 (Z for UTC)")
    due.set_defaults(command=set_due)
    add_class_folder(due)
    demo = teaching.add_parser("demo", help="the whole loop on the sample submissions, in a throw-away folder")
    demo.add_argument("--keep", type=Path, help="make the class folder here and keep it, to look at afterwards")
    demo.set_defaults(command=run_demo)
    add_limits(demo, cell_timeout=DEMO_CELL_TIMEOUT)
    add_sandbox_choice(demo)
    package = teaching.add_parser("release-package", help="write a student release: notebooks, package, no answers")
    package.add_argument("folder", type=Path, help="a new or empty folder")
    package.add_argument("--through", type=int, required=True, help="the last assignment it holds (NN)")
    package.set_defaults(command=release_package)
    return top


def add_class_folder(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--class-folder", type=Path, default=Path("."), help="the class folder (default: the current folder)"
    )


def add_limits(sub: argparse.ArgumentParser, cell_timeout: float | None = CELL_TIMEOUT) -> None:
    """The limits' options; ``cell_timeout`` None: a class's command, whose cell timeout and memory are by default
    the class's own settings (``ClassFolder.cell_timeout``, ``ClassFolder.memory``)."""
    sub.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="parallel grading processes")
    where = (
        "the class's c.ExecutePreprocessor.timeout in its nbgrader_config.py, which nbgrader run by hand and the "
        f"formgrader read too; {CELL_TIMEOUT:g} unless the class sets its own"
        if cell_timeout is None
        else f"{cell_timeout:g}"
    )
    sub.add_argument("--cell-timeout", type=float, default=cell_timeout, help=f"seconds per cell (default: {where})")
    sub.add_argument(
        "--job-timeout",
        type=float,
        default=None,
        help="processor seconds per (student, assignment) in all, and five times that in wall-clock seconds "
        "(default: a few times the notebook's normal graded run)",
    )
    memory = None if cell_timeout is None else MEMORY_LIMIT / 2**30  # a class's: its c.GradingSandbox.memory
    default = f"{MEMORY_LIMIT / 2**30:g}" if memory else "the class's c.GradingSandbox.memory, 2 unless it sets its own"
    sub.add_argument("--memory-gib", type=float, default=memory, help=f"memory per kernel (GiB; default: {default})")


def add_sandbox_choice(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--no-sandbox",
        dest="sandbox",
        action="store_false",
        help="grade without the sandbox: student code can then read and change this machine's files",
    )


def limits(args: argparse.Namespace, sandbox: bool) -> Limits:
    memory = int(args.memory_gib * 2**30)
    return Limits(
        cell_timeout=args.cell_timeout,
        memory=memory,
        workers=max(1, args.workers),
        sandbox=sandbox,
        job_timeout=args.job_timeout,
    )


class SandboxUnavailable(Exception):
    """No sandbox can run on this machine, and the instructor did not choose to grade without one."""


NO_SANDBOX = "Graded WITHOUT the sandbox (--no-sandbox): the submissions' code could read and change this machine."


def class_sandbox(args: argparse.Namespace) -> bool:
    """Whether a class is graded in the sandbox: always, unless the instructor said --no-sandbox; where none can run,
    grading stops here with what to install."""
    if not args.sandbox:
        print(f"!! {NO_SANDBOX}", flush=True)
        return False
    if reason := unavailable():
        raise SandboxUnavailable(f"Not grading: {reason}")
    return True


def class_folder_of(args: argparse.Namespace) -> ClassFolder:
    return ClassFolder.existing(args.class_folder.expanduser().resolve())


# --- learners ---------------------------------------------------------------------------------------------


def grade_own(args: argparse.Namespace) -> int:
    """Grade a learner's notebooks as the instructor's autograder would, hidden tests included, in a
    throw-away class folder; the learner's files are only read."""
    paths = [path.resolve() for path in args.notebooks] or notebook_paths(NOTEBOOKS)
    by_name = {path.name: path.parent.name for path in notebook_paths(SOLUTIONS)}
    unknown = [path for path in paths if path.name not in by_name or not path.is_file()]
    if unknown:
        names = ", ".join(sorted(by_name))
        print(f"Not a notebook of the course: {', '.join(map(str, unknown))}\nThe notebooks are: {names}")
        return 2
    if reason := unavailable():  # a learner's own code may run unsandboxed: it is theirs
        print(f"Grading without a sandbox ({reason.split('. ')[0]}).", flush=True)
    with tempfile.TemporaryDirectory(prefix="course-grade-") as scratch:
        class_folder = ClassFolder.create(Path(scratch) / "class")
        wanted = sorted({by_name[path.name] for path in paths})
        print(f"Grading {len(paths)} notebook(s), visible and hidden tests ...", flush=True)
        class_folder.write_student_versions(wanted)
        students = learner_ids(paths)
        for path in paths:
            folder = class_folder.root / "submitted" / students[path] / by_name[path.name]
            folder.mkdir(parents=True, exist_ok=True)
            (folder / path.name).write_bytes(path.read_bytes())
        outcomes = class_folder.autograde(limits=limits(args, sandbox=reason is None))
    graded = {(outcome.student, notebook.name): notebook for outcome in outcomes for notebook in outcome.notebooks}
    results = {path: graded[students[path], path.name] for path in paths if (students[path], path.name) in graded}
    same_names = len({path.name for path in paths}) < len(paths)
    tables = [(f"{path}\n" if same_names else "") + notebook_table(result) for path, result in results.items()]
    print("\n\n".join(tables))
    earned = sum(result.points for result in results.values())
    possible = sum(result.max_points for result in results.values())
    print(f"\nTotal: {earned:g} / {possible:g} points.")
    return 0 if earned == possible else 1


def learner_ids(paths: list[Path]) -> dict[Path, str]:
    """The student id each notebook is graded under in the throw-away class: one learner, unless several notebooks
    share a file name (copies from several students), which then count as learners of their own."""
    names = [path.name for path in paths]
    counts: dict[str, int] = {}
    ids = {}
    for path in paths:
        if names.count(path.name) == 1:
            ids[path] = LEARNER
        else:
            counts[path.name] = counts.get(path.name, 0) + 1
            ids[path] = f"{LEARNER}-{counts[path.name]}"
    return ids


# --- instructors ------------------------------------------------------------------------------------------


def new_class(args: argparse.Namespace) -> int:
    root = args.folder.expanduser().resolve()
    if root.exists() and any(root.iterdir()):
        print(f"{root} exists and is not empty; choose a new folder.")
        return 2
    exchange = args.exchange.expanduser().resolve() if args.exchange else None
    ClassFolder.create(root, exchange, args.course_id).write_student_versions()
    print(f"Created {root}: source/ (the solutions), release/ (student versions), nbgrader_config.py.")
    if exchange:
        print(f"Students fetch and submit through the exchange {exchange}; hand assignments out with `class hand-out`.")
    return 0


def student_versions(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    class_folder.write_student_versions(args.assignments or None)
    print(f"Student versions written to {class_folder.root / 'release'}.")
    return 0


def hand_out_assignments(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    class_folder.require_known(args.assignments)
    for assignment in args.assignments:
        class_folder.hand_out(assignment)
        print(f"{assignment}: in the exchange; students fetch it in JupyterLab's Assignments tab (nbgrader fetch).")
    return 0


def collect_submissions(args: argparse.Namespace) -> int:
    if not args.sources:
        students = class_folder_of(args).collect_from_exchange(args.assignment)
        if not students:
            print(f"{args.assignment}: nothing collected: no student has submitted it through the exchange yet.")
            return 1
        print(f"{args.assignment}: submissions of {len(students)} student(s) from the exchange: {', '.join(students)}")
        return 0
    sources = [path.resolve() for path in args.sources]
    if missing := [str(path) for path in sources if not path.exists()]:
        raise FileNotFoundError(f"No such download: {', '.join(missing)}")
    collected = class_folder_of(args).collect(args.assignment, sources, args.regexp)
    for name, reason in collected.left_out.items():
        print(f"!! not collected: {name}: {reason}")
    if not collected.new:
        print(
            f"{args.assignment}: nothing collected from this download"
            + (": see above." if collected.left_out else ": it holds no file.")
        )
        return 1
    students = collected.students
    print(f"{args.assignment}: collected {', '.join(collected.new)}; {len(students)} student(s) in submitted/ now.")
    if collected.late:
        print(f"Marked late by the LMS (no submission time in the download): {', '.join(collected.late)}")
    return 0


def autograde(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    class_folder.require_known(args.assignments)
    pairs = class_folder.submissions(args.assignments or None, args.student)
    if not pairs:
        print("No submissions to grade in submitted/.")
        return 2
    if args.cell_timeout is None:
        args.cell_timeout = class_folder.cell_timeout()
    if args.memory_gib is None:
        args.memory_gib = class_folder.memory() / 2**30
    chosen = limits(args, sandbox=class_sandbox(args))
    if not args.all:
        changed = class_folder.changed(pairs, chosen)
        if unchanged := len(pairs) - len(changed):
            print(f"{unchanged} submission(s) unchanged since they were graded: skipped (--all grades them again).")
        if not changed:
            print("Nothing new to grade.")
            return 0
        pairs = changed
    outcomes = graded_with_progress(class_folder, pairs, chosen)
    print("\n" + "\n\n".join(outcome_report(outcome) for outcome in outcomes))
    print("\n" + class_summary(outcomes))
    if not chosen.sandbox:
        print(NO_SANDBOX)
    if ungraded := [outcome for outcome in outcomes if not outcome.graded]:
        print(f"{len(ungraded)} submission(s) could not be graded; their reports say why.")
    return 1 if ungraded else 0


def graded_with_progress(class_folder: ClassFolder, pairs: list[tuple], chosen: Limits) -> list[Outcome]:
    print(f"Grading {len(pairs)} submission(s) with {chosen.workers} worker(s) ...", flush=True)
    start, finished = time.monotonic(), []

    def progress(outcome: Outcome) -> None:
        finished.append(outcome)
        late = f", {outcome.points:g} less the late penalty" if outcome.late_penalty and outcome.graded else ""
        print(
            f"  [{len(finished)}/{len(pairs)}] {outcome.student} · {outcome.assignment}: "
            f"{outcome.grade:g} / {outcome.max_points:g}{late}  ({time.monotonic() - start:.0f} s)",
            flush=True,
        )

    return class_folder.autograde(pairs, chosen, progress)


def feedback(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    class_folder.require_known(args.assignments)
    for assignment in args.assignments or sorted({assignment for _, assignment in class_folder.submissions()}):
        for path in class_folder.generate_feedback(assignment, show_hidden_tests=args.show_hidden_tests):
            print(f"{path.parent.parent.name} · {assignment} was not graded; {path.name} says why.")
        if args.release:
            released = class_folder.release_feedback(assignment)
            print(f"{assignment}: feedback of {len(released)} student(s) in the exchange, for them to fetch.")
        if args.canvas:
            args.canvas.mkdir(parents=True, exist_ok=True)
            bundle = args.canvas.resolve() / f"{assignment}-feedback.zip"
            if students := class_folder.feedback_for_canvas(assignment, bundle):
                print(
                    f"{assignment}: feedback of {len(students)} Canvas student(s) in {bundle}: in Canvas, the "
                    "assignment's Re-Upload Submissions takes it."
                )
            else:
                print(f"{assignment}: no student of it was collected from a Canvas download: no bundle.")
    print(f"Feedback written to {class_folder.root / 'feedback'}/<student>/<assignment>/, each beside its report.txt.")
    return 0


def open_formgrader(args: argparse.Namespace) -> int:
    """JupyterLab on the class folder: the formgrader reads nbgrader_config.py from the folder it is started in, so
    its Autograde button grades as `class autograde` does (the sandbox and the sealed verification)."""
    root = class_folder_of(args).root
    as_root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []  # as course.py lab does
    server = [f"--ServerApp.root_dir={root}", "--LabApp.default_url=/formgrader", *as_root, *args.jupyter_options]
    env = this_python_first()
    return subprocess.run([sys.executable, "-m", "jupyter", "lab", *server], cwd=root, env=env).returncode


def export_grades(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    if args.canvas:
        columns = class_folder.export_canvas(args.canvas, args.assignments)
        for assignment, column in columns.items():
            into = "Canvas' own column" if column != assignment else "a new assignment in Canvas"
            print(f"  {assignment} → {into} {column!r}")
        print(f"Canvas gradebook import file written to {args.canvas.resolve()}: Grades → Import.")
        return 0
    print(f"Grades written to {class_folder.export(args.to, args.assignments)}.")
    return 0


def class_stats(args: argparse.Namespace) -> int:
    class_folder = class_folder_of(args)
    every = class_folder.stats(args.assignments)
    if not every:
        print("Nothing handed out yet: no assignment has a due date or a submission.")
        return 1
    print("\n\n".join(stats_table(stats) for stats in every))
    path = (args.to or class_folder.root / "stats.html").resolve()
    path.write_text(stats_page(class_folder.root.name, every), encoding="utf-8")
    print(f"\nThe most common failures of every exercise, and the grades' distribution: {path}")
    return 0


def import_roster(args: argparse.Namespace) -> int:
    imported = class_folder_of(args).import_roster([path.resolve() for path in args.files])
    for row in imported.skipped:
        print(f"!! not imported: {row}")
    print(f"Imported {imported.students} student(s) into the gradebook.")
    return 0


def set_due(args: argparse.Namespace) -> int:
    due = class_folder_of(args).set_due(args.assignment, args.when)
    print(f"{args.assignment} is due {due.isoformat()}; later submissions get the late penalty when graded.")
    return 0


def release_package(args: argparse.Namespace) -> int:
    """Write the student release for assignment NN (autograder/release.py): hand it out once NN-1 is due."""
    folder = args.folder.expanduser().resolve()
    released = student_release.build(folder, args.through)
    print(f"Wrote {folder}: notebooks {', '.join(released)}, the helper package without answers, course.py.")
    print("Students start it with `python3.11 course.py lab` in that folder.")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """Grade the sample submissions of the first assignment in a new class folder, and say for each whether
    the autograder did what the sample expects."""
    if args.keep:
        return demo_in(args.keep.expanduser().resolve(), args)
    with tempfile.TemporaryDirectory(prefix="course-demo-") as scratch:
        return demo_in(Path(scratch) / "class", args)


def demo_in(root: Path, args: argparse.Namespace) -> int:
    """The hostile samples are graded only in the sandbox; without one they would do what they try."""
    sandboxed = class_sandbox(args)
    assignment = assignments()[0]
    class_folder = ClassFolder.create(root)
    class_folder.write_student_versions([assignment])
    chosen = samples(assignment, class_folder.released(assignment), sandboxed=sandboxed)
    for sample in chosen:
        class_folder.submit(sample.submission.student, assignment, sample.submission.notebooks, sample.submission.files)
    outcomes = {
        outcome.student: outcome
        for outcome in graded_with_progress(class_folder, class_folder.submissions(), limits(args, sandboxed))
    }
    class_folder.generate_feedback(assignment)
    grades = class_folder.export()
    unexpected = 0
    print()
    for sample in chosen:
        outcome = outcomes[sample.submission.student]
        as_expected = meets(sample, outcome)
        unexpected += not as_expected
        print(f"{'as expected' if as_expected else 'NOT AS EXPECTED'}: {sample.what}")
        print(outcome_report(outcome) + "\n")
    print(class_summary(list(outcomes.values())))
    print(f"\nFeedback in {root / 'feedback'}, grades in {grades}" + ("" if args.keep else " (removed on exit)"))
    print("Every sample graded as expected." if not unexpected else f"{unexpected} sample(s) NOT graded as expected.")
    return 1 if unexpected else 0


def meets(sample, outcome: Outcome) -> bool:
    """Whether a sample earned exactly the tests it should, and its report says what happened."""
    earned = {test.name for test in outcome.tests if test.points == test.max_points > 0}
    return earned == sample.earns and reports(outcome, sample.reported)
