"""Watching a grading job's processes: how much processor time they used, and stopping them at the job's limits.

Why processor time. A job's limit exists to stop a submission whose code runs for ever, not to punish one graded
on a busy machine. Wall-clock time grows with everything else the machine runs (other workers, other programs),
so a correct notebook could be stopped on a loaded machine and told that its code ran too long. The processor
time of the job's own processes (nbgrader, the kernel in its sandbox, the judge) grows only with their work.

Why a wall-clock limit as well. Code that sleeps, or waits on a pipe, uses no processor time. It is stopped by a
wall-clock limit several times the processor-time limit (``WALL_FACTOR``).

Why a limit per cell as well (``CellWatch``). Code that runs for ever in one cell would use up the job's whole
limit there, and the job's stop would leave every test unscored. Interrupted once it has used a share of that
limit, the cell fails alone, and the cells after it still run and count.

What it cannot see. Times are read every ``POLL`` seconds from each process still alive, so a process that starts
and ends between two readings is not counted; code that hides its work in many such processes is still stopped
at the wall-clock limit.
"""

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psutil  # IPython's dependency, so present wherever nbgrader runs

POLL = 0.5  # seconds between two readings of the processes' times
WALL_FACTOR = 5  # a job may take this many times its processor-time limit in wall-clock time


@dataclass(frozen=True)
class Stopped:
    """Why a job's processes were stopped: which limit they reached, in seconds."""

    seconds: float
    processor_time: bool  # True: the processor-time limit; False: the wall-clock one

    @property
    def text(self) -> str:
        return f"{self.seconds:g} s of processor time" if self.processor_time else f"{self.seconds:g} s"


class ProcessTree:
    """A process and every process below it (a kernel runs in a session of its own, so its group is not enough)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.used: dict[tuple[int, float], float] = {}  # (pid, start time) -> processor seconds when last seen

    def members(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.pid)
            return [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def processor_seconds(self) -> float:
        """User and system time of every process of the tree seen so far (of ended ones, as last seen)."""
        for member in self.members():
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                times = member.cpu_times()
                self.used[(member.pid, member.create_time())] = times.user + times.system
        return sum(self.used.values())

    def kill(self) -> None:
        for member in self.members():
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()


def communicate_within(
    process: subprocess.Popen, processor_seconds: float, wall_seconds: float
) -> tuple[str, Stopped | None]:
    """The process's output once it ends, or, if its tree reaches either limit first, once it is stopped."""
    tree, start = ProcessTree(process.pid), time.monotonic()
    while True:
        try:
            return process.communicate(timeout=POLL)[0], None
        except subprocess.TimeoutExpired:
            stopped = None
            if tree.processor_seconds() > processor_seconds:
                stopped = Stopped(processor_seconds, processor_time=True)
            elif time.monotonic() - start > wall_seconds:
                stopped = Stopped(wall_seconds, processor_time=False)
            if stopped:
                tree.kill()
                return process.communicate()[0], stopped


class CellWatch:
    """Interrupts a kernel (SIGINT to its process group, as a time-out does) whose processes use more than
    ``seconds`` of processor time while one cell runs; ``seconds`` 0: never."""

    def __init__(self, pid: int, group: int, seconds: float) -> None:
        self.tree, self.group, self.seconds = ProcessTree(pid), group, seconds
        self.interrupted = False  # the last cell watched used its processor time up

    @contextlib.contextmanager
    def cell(self) -> Iterator["CellWatch"]:
        self.interrupted = False
        if not self.seconds:
            yield self
            return
        done = threading.Event()
        watching = threading.Thread(target=self._watch, args=(self.tree.processor_seconds(), done), daemon=True)
        watching.start()
        try:
            yield self
        finally:
            done.set()
            watching.join()

    def _watch(self, start: float, done: threading.Event) -> None:
        while not done.wait(POLL):
            if self.tree.processor_seconds() - start > self.seconds:
                self.interrupted = True
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.group, signal.SIGINT)
                return
