"""How a submission's grade is kept out of its student's reach.

- ``sandbox.py``: the grading sandbox (bubblewrap) that every run of a student's code starts in;
- ``structure.py``: what the student changed in cells they were not meant to change;
- ``sealed_run.py``: the sealed run, the graded tests run again in a fresh process that reports on a private channel;
- ``runner.py``: the program of that process, the one file of the autograder the sandbox lets it see;
- ``nbgrader_steps.py``: the two steps of nbgrader's autograde (the sandboxed kernel, the sealed verification) that
  put all of it into every way of grading.
"""
