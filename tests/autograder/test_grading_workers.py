"""When every grading process dies, the report says why if the likely cause is the instructor's script: the grading
workers start by importing the script that grades, and one without a main guard grades again as it is imported."""

import sys
import types

import pytest

from autograder import grading

GUARDED = 'from autograder import grading\n\nif __name__ == "__main__":\n    grading.autograde(...)\n'
GUARDED_THE_OTHER_WAY = "def main():\n    pass\n\n\nif '__main__' == __name__:\n    main()\n"
UNGUARDED = "from autograder import grading\n\ngrading.autograde(...)\n"
GUARD_INSIDE_A_FUNCTION = 'def main():\n    if __name__ == "__main__":\n        pass\n\n\nmain()\n'


@pytest.mark.parametrize(
    ("source", "guarded"),
    [(GUARDED, True), (GUARDED_THE_OTHER_WAY, True), (UNGUARDED, False), (GUARD_INSIDE_A_FUNCTION, False)],
)
def test_a_main_guard_is_found_at_the_top_level_only(source, guarded):
    assert grading.has_main_guard(source) is guarded


@pytest.mark.parametrize(("source", "named"), [(UNGUARDED, True), (GUARDED, False)])
def test_the_reason_names_a_script_without_a_guard(tmp_path, monkeypatch, source, named):
    script = tmp_path / "grade_my_class.py"
    script.write_text(source, encoding="utf-8")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    monkeypatch.setitem(sys.modules, "__main__", main)
    explained = grading._unguarded_script_explained()
    assert (str(script) in explained and 'if __name__ == "__main__":' in explained) is named
    assert bool(explained) is named


def test_nothing_is_claimed_without_a_script(monkeypatch):
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))  # python -c, a notebook's kernel
    assert grading._unguarded_script_explained() == ""
