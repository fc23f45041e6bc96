"""How a submission's grade is kept out of its student's reach.

- ``sandbox.py``: the grading sandbox (bubblewrap) that every run of a student's code starts in;
- ``structure.py``: what the student changed in cells they were not meant to change;
- ``sealed_run.py``: the sealed run, a notebook run by the judge without nbgrader: the student's code in a process
  of its own (where nbgrader's kernel died, and for the trials of the kept wrong answers);
- ``judge.py``: the judge, which runs the test cells in the grader's process with the checks and their oracles;
- ``student.py`` and ``runner.py``: the student's side, in nbgrader's kernel or the sealed run's process, which
  runs the notebook's other cells and the learner's code for the judge, and how it runs a cell without IPython;
- ``wire.py`` and ``peer.py``: what crosses between the two (plain values only) and the calls that carry it;
- ``nbgrader_steps.py``: the two steps of nbgrader's autograde (the sandboxed kernel with the judge for its test
  cells, and the judge's notes) that put all of it into every way of grading.
"""
