"""The sealed verification and the structural comparison, on small programs and on the first notebook.

The sealed runner is tested here on programs of a few lines (no PyTorch), so that each kind of interference
is shown on its own and quickly; tests/end_to_end/test_grading.py shows the same on real submissions through nbgrader.
"""

import nbformat
import pytest

from autograder.cells import grade_id, is_answer, is_test
from autograder.repository import NOTEBOOKS, SOLUTIONS, assignments
from autograder.submissions import filled_in, solution_code
from autograder.verification import sealed_run, structure
from autograder.verification.findings import CellFailed, ForgedVerdicts, RunEnded, TimedOut
from autograder.verification.sandbox import Sandbox

FIRST = assignments()[0]
SQUARE = "def square(x):\n    return x * x\n"


def run(*student_cells: str, timeout: float = 20.0, tmp_path, assignment=None) -> sealed_run.SealedVerdict:
    """A program of a set-up cell, the student's cells, and one test cell, run sealed: the test in the judge."""
    cells = [sealed_run.role("course", "setup", "import math")]
    cells += [sealed_run.role("student", f"answer{number}", source) for number, source in enumerate(student_cells)]
    cells.append(sealed_run.role("test", "test_square", "assert square(3) == 9 and math.sqrt(16) == 4"))
    return sealed_run.verify(cells, tmp_path, timeout, Sandbox(), assignment)


def test_an_honest_answer_passes(tmp_path):
    verdict = run(SQUARE, tmp_path=tmp_path)
    assert verdict.passed == {"test_square"} and verdict.findings == []


def test_a_wrong_answer_fails_with_its_error(tmp_path):
    verdict = run("def square(x):\n    return x + x\n", tmp_path=tmp_path)
    assert verdict.passed == set() and verdict.failure("test_square") == "AssertionError: "


# Changes an answer cell can make to its own process: to what a test run there would rely on, to the kernel, to the
# tracing machinery, a thread left running, the notebook's name a test uses.
TAMPERING = [
    "import math\nmath.sqrt = lambda x: 4.0",
    "import builtins\nbuiltins.AssertionError = Warning",
    "import sys\nsys.settrace(lambda *args: None)",
    "get_ipython().set_custom_exc((Exception,), print)",
    "import threading, time\nthreading.Thread(target=lambda: time.sleep(60), daemon=True).start()",
    "math = None",
]


@pytest.mark.parametrize("tampering", TAMPERING)
def test_what_the_student_changes_in_their_process_cannot_reach_the_judge(tampering, tmp_path):
    honest = run(SQUARE + tampering, tmp_path=tmp_path / "honest")
    assert honest.passed == {"test_square"} and honest.findings == []
    wrong = run("def square(x):\n    return x + x\n" + tampering, tmp_path=tmp_path / "wrong")
    assert wrong.passed == set() and wrong.failure("test_square") == "AssertionError: "


def test_the_student_process_never_holds_a_test(tmp_path):
    """The test's source stays in the judge: an answer that searches the frames that run it, and the objects they
    hold, finds the program's other cells (the set-up's), and not the test."""
    search = (
        "import sys\n"
        "frame, texts = sys._getframe(), []\n"
        "while frame is not None:\n"
        "    for value in list(frame.f_locals.values()):\n"
        "        texts += [repr(value), repr(getattr(value, '__dict__', ''))]\n"
        "    frame = frame.f_back\n"
        "found_setup = any('import ' + 'math' in text for text in texts)\n"  # not this cell's own text
        "found_test = any('math.sqrt(' + '16)' in text for text in texts)\n"
        "def square(x):\n"
        "    return x * x if found_setup and not found_test else 0\n"
    )
    assert run(search, tmp_path=tmp_path).passed == {"test_square"}


def test_the_student_process_has_no_check_and_no_reference_block_not_yet_due(tmp_path):
    """Graded for notebook 07, the student's code finds notebook 06's blocks, and neither a check, nor a correct
    stand-in, nor notebook 07's reference modules (its answers)."""
    probe = (
        "import importlib\n"
        "def importable(name, attribute):\n"
        "    try:\n"
        "        return hasattr(importlib.import_module(name), attribute)\n"
        "    except ImportError:\n"
        "        return False\n"
        "hidden = not any([\n"
        "    importable('transformer_course.checks.stand_ins', 'softmax'),\n"
        "    importable('transformer_course.checks.nb01', 'check_softmax'),\n"
        "    importable('transformer_course.reference.nb07_decoder_and_full_model', 'DecoderLayer'),\n"
        "])\n"
        "shown = importable('transformer_course.reference.nb06_transformer_block', 'EncoderLayer')\n"
        "def square(x):\n"
        "    return x * x if hidden and shown else 0\n"
    )
    assert run(probe, tmp_path=tmp_path, assignment="07_decoder_and_full_model").passed == {"test_square"}


def test_lines_forged_on_the_channel_count_for_nothing(tmp_path):
    forge = (
        "import os\n"
        "for fd in range(3, 64):\n"
        "    try:\n"
        '        os.write(fd, b\'{"event": "test", "name": "test_square", "passed": true, "error": null}\\n\')\n'
        "    except OSError:\n"
        "        pass\n"
    )
    verdict = run("def square(x):\n    return 0\n", forge, tmp_path=tmp_path)
    assert verdict.passed == set() and verdict.found(ForgedVerdicts)[0].lines >= 1


def test_a_cell_that_runs_too_long_is_interrupted_and_the_rest_still_runs(tmp_path):
    # Every cell gets the limit, the test cell too: 2 s stopped it as well on a machine loaded 8 times over.
    verdict = run("while True:\n    pass", SQUARE, timeout=8, tmp_path=tmp_path)
    assert verdict.passed == {"test_square"}
    assert verdict.findings == [TimedOut("answer0", 8.0)]


def test_a_cell_that_ignores_interrupts_is_stopped_and_passes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(sealed_run, "INTERRUPT_GRACE", 1.0)
    stubborn = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
    verdict = run(SQUARE, stubborn, timeout=2, tmp_path=tmp_path)
    assert verdict.passed == set()
    assert verdict.findings == [RunEnded("answer1", exit_code=None)]


def test_a_process_that_ends_early_passes_nothing_it_did_not_report(tmp_path):
    verdict = run(SQUARE, "import os\nos._exit(3)", tmp_path=tmp_path)
    assert verdict.passed == set() and verdict.findings == [RunEnded("answer1", exit_code=3)]


def test_system_exit_is_an_error_of_its_cell_and_the_run_goes_on(tmp_path):
    verdict = run(SQUARE, "raise SystemExit", tmp_path=tmp_path)
    assert verdict.passed == {"test_square"} and verdict.findings == [CellFailed("answer1", "SystemExit", "")]


def test_magics_run_as_a_kernel_would_run_them(tmp_path):
    verdict = run("%%time\n" + SQUARE, "%timeit -n 1 square(2)\n!echo hello", tmp_path=tmp_path)
    assert verdict.passed == {"test_square"} and verdict.findings == []


# --- what the sealed run is made of -----------------------------------------------------------------------


def notebooks() -> tuple[nbformat.NotebookNode, nbformat.NotebookNode, nbformat.NotebookNode]:
    """The first assignment's source, released version, and released version with every exercise solved."""
    (source,) = [nbformat.read(path, as_version=4) for path in (SOLUTIONS / FIRST).glob("*.ipynb")]
    (name,) = [path.name for path in (NOTEBOOKS / FIRST).glob("*.ipynb")]
    released = nbformat.read(NOTEBOOKS / FIRST / name, as_version=4)
    return source, released, filled_in({name: released}, solution_code(FIRST))[name]


def test_the_program_takes_tests_from_the_source_and_code_from_the_student():
    source, released, submitted = notebooks()
    helper = nbformat.v4.new_code_cell("def helper():\n    return 1\n")
    first_answer = next(i for i, cell in enumerate(submitted.cells) if is_answer(cell))
    submitted.cells.insert(first_answer + 1, helper)
    submitted.cells[0].source = "import fake_checks as nb01"  # edits to the course's cells are not used
    cells = sealed_run.program(source, released, submitted)
    tests = [cell for cell in cells if cell["role"] == "test"]
    assert tests and all("### BEGIN HIDDEN TESTS" in cell["source"] for cell in tests)
    assert cells[0]["source"] == next(cell for cell in source.cells if cell.cell_type == "code").source
    names = [cell["name"] for cell in cells]
    assert names.index("the cell you added after softmax") == names.index("softmax") + 1


def test_a_decorated_answer_finds_the_correct_earlier_exercises(tmp_path):
    """The judge lends the correct earlier exercises under the notebook's names, so a function wrapped in a decorator
    (whose __globals__ are the decorator's module, not the notebook's) uses them too: softmax left undone, the
    weights decorated with @torch.no_grad() and self-attention with @torch.enable_grad() still earn theirs."""
    source, released, _ = notebooks()
    code = {name: answer for name, answer in solution_code(FIRST).items() if name != "softmax"}
    code["attention_weights"] = "@torch.no_grad()\n" + code["attention_weights"]
    code["self_attention"] = "@torch.enable_grad()\n" + code["self_attention"]
    submitted = filled_in({"notebook": released}, code)["notebook"]
    cells = sealed_run.program(source, released, submitted)
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), FIRST)
    assert {"test_attention_weights", "test_self_attention"} <= verdict.passed
    assert "test_softmax" not in verdict.passed


def test_a_module_converted_by_the_judge_is_converted_where_the_student_code_runs(tmp_path):
    """A check's gradcheck calls module.double(); the learner's forward, which runs in the student's process, must see
    float64 parameters, or a correct F.layer_norm answer fails with a mixed-dtype error."""
    cells = [sealed_run.role("course", "setup", "import torch\nfrom torch import nn")]
    norm = (
        "class Norm(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.gain = nn.Parameter(torch.ones(3))\n"
        "    def forward(self, x):\n        return nn.functional.layer_norm(x, (3,), self.gain)\n"
    )
    cells.append(sealed_run.role("student", "answer", norm))
    test = "norm = Norm().double()\nassert norm(torch.ones(2, 3, dtype=torch.float64)).dtype == torch.float64"
    cells.append(sealed_run.role("test", "test_norm", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_norm"}, verdict.findings


def test_a_module_that_names_its_childs_parameter_as_its_own_reaches_the_judge(tmp_path):
    """self.table = self.embedding.weight registers the child's parameter on the parent too: the judge's copy of the
    module holds the one parameter under both names."""
    cells = [sealed_run.role("course", "setup", "import torch\nfrom torch import nn")]
    table = (
        "class Table(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        self.embedding = nn.Embedding(4, 3)\n        self.table = self.embedding.weight\n"
        "    def forward(self, ids):\n        return self.table[ids]\n"
    )
    cells.append(sealed_run.role("student", "answer", table))
    test = (
        "module = Table()\nassert module.table is module.embedding.weight\n"
        "assert torch.equal(module(torch.tensor([1, 2])), module.embedding.weight[1:3])"
    )
    cells.append(sealed_run.role("test", "test_table", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_table"}, verdict.findings


def one_test(answer: str, test: str, tmp_path) -> sealed_run.SealedVerdict:
    cells = [sealed_run.role("course", "setup", "import collections")]
    cells.append(sealed_run.role("student", "answer", answer))
    cells.append(sealed_run.role("test", "test_answer", test))
    return sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)


def test_a_tensor_argument_whose_shape_the_student_changes_in_place_changes_for_the_judge(tmp_path):
    cells = [sealed_run.role("course", "setup", "import torch")]
    cells.append(sealed_run.role("student", "answer", "def flip(x):\n    return x.transpose_(0, 1)\n"))
    test = "x = torch.zeros(2, 3)\nflip(x)\nassert x.shape == (3, 2), x.shape"
    cells.append(sealed_run.role("test", "test_answer", test))
    assert sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None).passed == {"test_answer"}


def test_a_counter_from_the_student_is_a_dict_to_the_judge(tmp_path):
    answer = "def count(ids):\n    return collections.Counter(zip(ids, ids[1:]))\n"
    test = "counts = count([1, 2, 1, 2])\nassert isinstance(counts, dict) and counts == {(1, 2): 2, (2, 1): 1}"
    assert one_test(answer, test, tmp_path).passed == {"test_answer"}


@pytest.mark.parametrize(
    "changes", ["ids.pop(0)", "ids[0:2] = [9]", "table['new'] = 1", "seen.add(5)", "ids.append([1, (2, 3)])"]
)
def test_what_the_student_changes_in_a_list_dict_or_set_argument_the_judge_sees(changes, tmp_path):
    """A check that a function leaves its input list alone must see what the function did to it, as in one process."""
    answer = f"def change(ids, table, seen=None):\n    {changes}\n"
    test = "ids, table, seen = [1, 2, 3], {'a': 0}, {1}\nchange(ids, table, seen=seen)\n"
    test += "assert (ids, table, seen) != ([1, 2, 3], {'a': 0}, {1}), 'the change did not arrive'"
    assert one_test(answer, test, tmp_path).passed == {"test_answer"}


def test_an_untouched_submission_has_nothing_structural_to_report():
    _, released, submitted = notebooks()
    assert structure.compare(released, submitted) == []


def test_each_change_to_a_graded_cell_is_reported():
    _, released, submitted = notebooks()
    tests = [cell for cell in submitted.cells if is_test(cell)]
    tests[0].source = "pass"
    submitted.cells.remove(tests[1])
    index = submitted.cells.index(tests[2])
    submitted.cells[index] = nbformat.v4.new_markdown_cell(tests[2].source, metadata=tests[2].metadata, id=tests[2].id)
    tests[3].metadata["nbgrader"]["points"] = 100
    submitted.cells.insert(0, submitted.cells.pop(submitted.cells.index(tests[3])))
    kinds = {(finding.change, finding.cell) for finding in structure.compare(released, submitted)}
    names = [grade_id(cell) for cell in tests]
    assert kinds == {
        ("edited", names[0]),
        ("deleted", names[1]),
        ("retyped", names[2]),
        ("metadata", names[3]),
        ("reordered", names[3]),
    }


def test_a_learners_own_subclass_of_a_built_in_error_is_caught_as_that_error_in_the_judge(tmp_path):
    answer = "class TooLong(ValueError):\n    pass\n\ndef check_length(n):\n    if n > 3:\n        raise TooLong(n)\n"
    test = "try:\n    check_length(5)\nexcept ValueError as error:\n    assert type(error).__name__ == 'TooLong'\n"
    test += "else:\n    raise AssertionError('no ValueError')"
    assert one_test(answer, test, tmp_path).passed == {"test_answer"}


def test_a_learners_module_reaches_the_judge_with_its_forwards_parameters(tmp_path):
    """A check names a module's input changed in place by the module's own parameter names."""
    cells = [sealed_run.role("course", "setup", "import torch")]
    answer = "class Masking(torch.nn.Module):\n    def forward(self, x, mask=None):\n        return x\n"
    cells.append(sealed_run.role("student", "answer", answer))
    test = "from transformer_course.checks import tensor_arguments\n"
    test += "names = tensor_arguments(Masking(), (torch.ones(2),), {'mask': torch.ones(2)})\n"
    test += "assert names == ['x', 'mask'], names"
    cells.append(sealed_run.role("test", "test_answer", test))
    assert sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None).passed == {"test_answer"}


FORGED_DESCRIPTION = """
import sys
import torch

peer = sys.modules["_grading_peer"]
describe = peer.Peer.module_info


def module_info(self, number, module, objects):
    info = describe(self, number, module, objects)
    if type(module).__name__ == "Zeros":  # as if it were nn.Linear with nothing but plain state
        info.update({"class": "torch.nn.modules.linear:Linear", "complete": True, "attributes": {}})
    return info


peer.Peer.module_info = module_info


class Zeros(torch.nn.Linear):
    def forward(self, x):
        return torch.zeros(x.shape[:-1] + (self.out_features,))

    def extra_repr(self):
        return "mine"
"""


def test_the_judge_runs_no_forward_or_method_of_a_module_by_what_the_student_process_says_it_is(tmp_path):
    """A module whose description claims PyTorch's class with plain state only is an instance of that class for a
    check's isinstance, yet its forward and methods run in the student's process: the judge computes no answer."""
    cells = [sealed_run.role("course", "setup", "import torch")]
    cells.append(sealed_run.role("student", "answer", FORGED_DESCRIPTION))
    test = (
        "layer = Zeros(3, 2)\nassert isinstance(layer, torch.nn.Linear)\n"
        "assert torch.equal(layer(torch.ones(4, 3)), torch.zeros(4, 2)), 'the judge ran nn.Linear'\n"
        "assert layer.extra_repr() == 'mine'"
    )
    cells.append(sealed_run.role("test", "test_answer", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_answer"}, verdict.findings


def test_what_the_students_code_does_to_a_module_the_judge_lent_stays_in_the_students_process(tmp_path):
    """A learner's function handed one of the judge's modules may call it and read it; zeroing its weights, putting a
    hook on it or switching its mode changes the learner's copy only, and the judge's module computes as before."""
    cells = [sealed_run.role("course", "setup", "import torch")]
    answer = (
        "def tamper(layer):\n    with torch.no_grad():\n        layer.weight.zero_()\n        layer.bias.zero_()\n"
        "    layer.register_forward_hook(lambda module, inputs, output: output * 0)\n    layer.train()\n"
        "    return float(layer.weight.abs().sum())\n"
    )
    cells.append(sealed_run.role("student", "answer", answer))
    test = (
        "torch.manual_seed(0)\nlayer = torch.nn.Linear(3, 2).eval()\nweight = layer.weight.detach().clone()\n"
        "x = torch.ones(1, 3)\nexpected = layer(x).detach()\nassert tamper(layer) == 0.0\n"
        "assert torch.equal(layer.weight, weight) and not layer.training\n"
        "assert not layer._forward_hooks and torch.equal(layer(x), expected)"
    )
    cells.append(sealed_run.role("test", "test_answer", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_answer"}, verdict.findings


def test_the_learners_code_reads_only_public_attributes_of_what_the_judge_lent(tmp_path):
    """Through the grading pipe itself, the learner's code asks for a lent function's globals (the check's module), a
    private attribute, and a lent module's load_state_dict and register_forward_hook: each is refused; a public
    attribute of the judge's own is read."""
    cells = [sealed_run.role("course", "setup", "import torch")]
    answer = (
        "def probe(function, layer, holder):\n    refused = []\n"
        "    for target, name in [(function, '__globals__'), (function, '_secret'), (layer, 'load_state_dict'),\n"
        "                         (layer, 'register_forward_hook'), (holder, '_secret')]:\n"
        "        try:\n            target._peer.getattr(target, name)\n        except Exception:\n"
        "            refused.append(name)\n"
        "    return refused, holder.size\n"
    )
    cells.append(sealed_run.role("student", "answer", answer))
    test = (
        "class Holder:\n    size, _secret = 3, 'hidden'\n"
        "def helper(x):\n    return x\n"
        "helper._secret = 'hidden'\n"
        "refused, size = probe(helper, torch.nn.Linear(2, 2), Holder())\n"
        "assert refused == ['__globals__', '_secret', 'load_state_dict', 'register_forward_hook', '_secret'], refused\n"
        "assert size == 3"
    )
    cells.append(sealed_run.role("test", "test_answer", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_answer"}, verdict.findings


def test_what_the_judge_lends_shows_no_name_of_the_checks(tmp_path):
    """A scripted model of a check, recognised by its class name, could be answered by a formula fitted to it."""
    cells = [sealed_run.role("course", "setup", "import torch")]
    answer = "def names(model, function, table):\n"
    answer += "    return [type(x).__name__ for x in (model, table)] + [function.__name__]\n"
    cells.append(sealed_run.role("student", "answer", answer))
    test = (
        "class _ReversingModel(torch.nn.Module):\n    def forward(self, x):\n        return x.flip(-1)\n"
        "class _Table:\n    size = 2\n"
        "def _running_sum(x):\n    return x.cumsum(0)\n"
        "found = names(_ReversingModel(), _running_sum, _Table())\n"
        "assert not any('Reversing' in name or 'running' in name or 'Table' in name for name in found), found\n"
        "assert names(torch.nn.Linear(2, 2), _running_sum, _Table())[0] == 'Linear'"
    )
    cells.append(sealed_run.role("test", "test_answer", test))
    verdict = sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None)
    assert verdict.passed == {"test_answer"}, verdict.failure("test_answer")


def test_a_module_the_judge_passes_runs_in_the_judge_unless_a_check_hands_it_over(tmp_path):
    """The learner's code changes its copy of a module the judge passes; the judge's module runs its forward as the
    judge made it. A module a check hands over (a training loop's classifier) runs in the student's process, with
    what the learner's code did to it, and the judge's own stays as it was."""
    cells = [sealed_run.role("course", "setup", "import torch\nfrom transformer_course.checks import handed_over")]
    answer = "def zeroed_then_run(layer):\n    layer.weight.data.zero_()\n"
    answer += "    return layer(torch.ones(1, 2)).sum().item()"
    cells.append(sealed_run.role("student", "answer", answer))
    test = (
        "def ones():\n    layer = torch.nn.Linear(2, 1)\n    torch.nn.init.ones_(layer.weight)\n"
        "    torch.nn.init.zeros_(layer.bias)\n    return layer\n"
        "assert zeroed_then_run(ones()) == 2.0, 'the forward ran in the student process'\n"
        "handed = handed_over(ones())\n"
        "assert zeroed_then_run(handed) == 0.0, 'a module handed over ran in the judge'\n"
        "assert handed.weight.sum().item() == 2.0, 'the learner changed the judge module'"
    )
    cells.append(sealed_run.role("test", "test_answer", test))
    assert sealed_run.verify(cells, tmp_path, 60.0, Sandbox(), None).passed == {"test_answer"}
