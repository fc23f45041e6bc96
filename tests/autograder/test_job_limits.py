"""How long a grading job may take in all (grading.Limits.job_time_limit)."""

import json

from autograder.grading import JOB_TIME_FACTOR, JOB_TIME_FLOOR, NORMAL_RUNS, Limits
from autograder.repository import assignments


def test_every_notebook_has_its_measured_graded_run_and_a_limit_several_times_longer():
    normal = json.loads(NORMAL_RUNS.read_text(encoding="utf-8"))
    assert set(normal) == set(assignments())  # benchmarks/grading_times.py --write-normal-runs
    for assignment, seconds in normal.items():
        assert Limits().job_time_limit(assignment) == max(JOB_TIME_FLOOR, JOB_TIME_FACTOR * seconds) >= 5 * seconds


def test_the_instructors_limit_wins():
    assert Limits(job_timeout=12.5).job_time_limit(assignments()[0]) == 12.5
