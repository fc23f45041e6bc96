"""The course's grading product, for instructors and for learners' own scores: the class folder, parallel autograding,
the verification that keeps grades out of students' reach (``verification/``), feedback, reports, LMS and JupyterHub
support, the student release and the commands over all of it (``cli.py``). Students never import it."""
