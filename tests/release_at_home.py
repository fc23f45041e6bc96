"""Run visible checks as a student's Python runs them in a release: with the released package, whose oracles are
recorded results.

    python tests/release_at_home.py CASES.json

Run by tests/end_to_end/test_release.py in a process of its own, with PYTHONPATH=RELEASE/src, so that
``transformer_course`` is the released package. Each case is a solved notebook (its set-up cell and solution cells),
optionally one exercise replaced by a wrong answer, and a visible test cell; ``message`` is None where the test must
pass, else a phrase its failure must show. Prints a line for each case that went otherwise, then how many it ran.
"""

import contextlib
import io
import json
import sys
import warnings

from transformer_course.checks import CheckFailed


def outcome(case: dict) -> str | None:
    """What went wrong with the case, or None."""
    namespace = {}
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for source in [case["setup"], *case["solutions"], case["answer"] or ""]:
            exec(compile(source, case["label"], "exec"), namespace)
        try:
            exec(compile(case["test"], case["label"], "exec"), namespace)
        except CheckFailed as failure:
            if case["message"] is None:
                return f"a correct answer failed: {failure}"
            return None if case["message"] in str(failure) else f"the message lacks {case['message']!r}: {failure}"
    return None if case["message"] is None else "a wrong answer passed"


def main(path: str) -> None:
    cases = json.loads(open(path, encoding="utf-8").read())
    for case in cases:
        problem = outcome(case)
        if problem is not None:
            print(f"WRONG {case['label']}: {problem}", flush=True)
    print(f"ran {len(cases)} cases")


if __name__ == "__main__":
    main(sys.argv[1])
