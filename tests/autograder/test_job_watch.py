"""A grading job's limits (autograder/job_watch.py): processor time for code that computes, wall-clock time for code
that waits, and neither for a job that is only slowed down by a busy machine; and a cell's share of processor time."""

import subprocess
import sys
import time

from autograder.job_watch import CellWatch, communicate_within

BUSY = "import time\nstart = time.process_time()\nwhile time.process_time() - start < 30: pass\n"
SLEEPY = "import time; time.sleep(30)"
PAUSED_CHILD = (  # a child process that waits, then computes briefly: a job held up by others, not by itself
    "import subprocess, sys\n"
    "subprocess.run([sys.executable, '-c', 'import time; time.sleep(2); print(sum(range(10**6)))'])\n"
)


def run(code: str, processor_seconds: float, wall_seconds: float):
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    start = time.monotonic()
    output, stopped = communicate_within(process, processor_seconds, wall_seconds)
    return output, stopped, time.monotonic() - start, process


def test_code_that_computes_is_stopped_at_its_processor_time():
    _, stopped, _, process = run(BUSY, processor_seconds=1.0, wall_seconds=25.0)
    assert stopped and stopped.processor_time and "1 s of processor time" in stopped.text  # not the wall clock's
    assert process.returncode is not None


def test_code_that_waits_is_stopped_at_the_wall_clock_limit():
    _, stopped, took, _ = run(SLEEPY, processor_seconds=1.0, wall_seconds=2.0)
    assert stopped and not stopped.processor_time and stopped.text == "2 s"
    assert took < 25  # well before its sleep would end, however busy the machine


def test_a_job_within_its_processor_time_is_not_stopped_however_long_it_waits_for_the_machine():
    output, stopped, took, _ = run(PAUSED_CHILD, processor_seconds=1.5, wall_seconds=20.0)
    assert stopped is None and took > 2 and output.strip() == str(sum(range(10**6)))


def test_the_processes_below_it_count_and_are_stopped_with_it():
    code = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BUSY!r}])\n"
    _, stopped, _, _ = run(code, processor_seconds=1.0, wall_seconds=25.0)
    assert stopped and stopped.processor_time


# A kernel's cell: computes (or waits) until interrupted, then says so. It takes interrupts as a kernel does, even
# where its parent ignores them (a pytest-xdist worker: an ignored signal stays ignored across exec). (Python 3.11
# does not catch the interrupt of a bare `while True: pass` here, hence the call in the loop.)
INTERRUPTIBLE = (
    "import signal, sys, time\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "try:\n    {}\nexcept KeyboardInterrupt:\n    sys.exit(3)\n"
)


def watched(code: str, seconds: float) -> tuple[int | None, CellWatch]:
    process = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    watch = CellWatch(process.pid, process.pid, seconds)
    with watch.cell():
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.returncode, watch


def test_a_cell_that_computes_past_its_processor_time_is_interrupted():
    code, watch = watched(INTERRUPTIBLE.format("while True: time.process_time()"), seconds=1.0)
    assert code == 3 and watch.interrupted


def test_a_cell_that_only_waits_is_left_to_its_wall_clock_limit():
    code, watch = watched(INTERRUPTIBLE.format("time.sleep(2)"), seconds=1.0)
    assert code == 0 and not watch.interrupted
