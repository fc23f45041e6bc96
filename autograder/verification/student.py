"""The student's process of the sealed run: the notebook's own cells and the learner's code, and no judge.

The judge (``judge.py``) starts this file as ``python -I student.py READ_FD WRITE_FD`` in the grading sandbox and
talks to it over the two pipes (``wire.py``, ``peer.py``). It sends the program first: the notebook's code cells in
the source's order, with the test cells' source left out, so that no hidden test ever enters this process. Then it
asks, one request at a time: run cell i; what is the value of a name; call this object with these arguments;
the gradients of that call. Values go back as plain data, objects as handles that mean something only here.

The sandbox shows this process neither the course's checks nor their correct stand-ins (``sandbox.Sandbox.hidden``).
A set-up cell still imports ``transformer_course.checks``: it gets an empty module, whose names the judge holds.

Whatever the learner's code does here, to PyTorch, to this file or to the pipes, it can only change the values
this process sends: the learner's own answers. The judge decides what they earn.
"""

import builtins
import importlib.abc
import importlib.machinery
import importlib.util
import numbers
import signal
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
HIDDEN_PACKAGE = "transformer_course.checks"  # the judge's; an empty module here


def load(name: str) -> types.ModuleType:
    """One of the autograder's files beside this one: with ``python -I`` this folder is not on the import path."""
    spec = importlib.util.spec_from_file_location(f"_grading_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wire = load("wire")
peer = load("peer")
runner = load("runner")  # how a notebook's cell runs without IPython: magics, figures, forks


class Student(peer.Peer):
    """Runs the cells it is asked to, and calls the learner's objects for the judge."""

    def __init__(self, pipe, cells: list[dict]):
        super().__init__(pipe)
        self.cells = cells
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.kernel = runner.KernelStandIn(self.namespace)
        self.namespace.update(get_ipython=self.kernel.get_ipython, display=runner.print_nothing)
        self.objects: dict[int, object] = {}  # handle → object the judge holds a handle of
        self.numbers: dict[int, int] = {}  # id(object) → handle
        self.modules: dict[int, object] = {}  # handle → module, whose parameters the judge mirrors
        self.versions: dict[tuple, tuple[int, int]] = {}  # (handle, kind, name) → (id, _version) last sent or set

    def answer(self, message: dict) -> dict:
        try:
            return getattr(self, "on_" + str(message.get("op")))(message)
        finally:
            runner.stay_out_if_forked()

    def on_run_cell(self, message: dict) -> dict:
        return {"value": runner.execute(self.cells[int(message["index"])], self.namespace, self.kernel)}

    def on_lookup(self, message: dict) -> dict:
        name = str(message["name"])
        if name not in self.namespace:
            raise NameError(f"name {name!r} is not defined")
        return self.reply(self.namespace[name])

    def on_getattr(self, message: dict) -> dict:
        return self.reply(getattr(self.imported(message["target"]), str(message["name"])))

    def on_backward(self, message: dict) -> dict:
        return {
            "value": [
                None if grad is None else grad.detach() for grad in self.backward(message["graph"], message["grads"])
            ]
        }

    def on_call(self, message: dict) -> dict:
        torch = sys.modules.get("torch")
        self.apply_updates(message.get("updates") or [])
        target = self.imported(message["target"])
        args, kwargs = self.imported(message["args"]), self.imported(message["kwargs"])
        arg_tensors = peer.tensors_in((args, kwargs))
        versions = [tensor._version for tensor in arg_tensors]
        params = [self.objects[handle.number].get_parameter(name) for handle, name in message.get("params") or []]
        inputs = [tensor for tensor in arg_tensors if tensor.requires_grad] + params
        if torch is not None and message.get("rng") is not None:
            torch.set_rng_state(message["rng"])
        with self.lent(message.get("lent") or []), grad_mode(torch, message):
            result = target(*args, **kwargs)
        reply = self.reply(result, keep=bool(message.get("keep_graph")))
        if message.get("keep_graph"):
            outputs = peer.tensors_in(result)
            reply["graph"] = self.keep_graph(outputs, inputs)
            reply["differentiable"] = [tensor.requires_grad for tensor in outputs]
        reply["changed_inputs"] = [
            [index, tensor.detach()]
            for index, (tensor, version) in enumerate(zip(arg_tensors, versions, strict=True))
            if tensor._version != version
        ]
        if torch is not None:
            reply["rng"] = torch.get_rng_state()
        return reply

    # --- values out and in -------------------------------------------------------------------------------------

    def reply(self, value, keep: bool = False) -> dict:
        """The reply carrying ``value``: plain data, handles for everything else, what the judge needs of each new
        handle, and what changed in the modules it mirrors."""
        objects: dict[int, dict] = {}
        tree = self.exported(value, objects)
        return {
            "value": tree,
            "objects": [[number, info] for number, info in objects.items()],
            "state": self.state_changes(),
        }

    def exported(self, value, objects: dict, depth: int = 0, gradients: bool = False):
        """``value`` as plain data, with handles for objects; tensors that need gradients say so when
        ``gradients`` (the other side then keeps the graph of its call)."""
        torch = sys.modules.get("torch")
        kind = type(value)
        if value is None or kind in (bool, int, float, str, bytes):
            return value
        if kind in (list, tuple, set, frozenset) and depth < 64:
            return kind(self.exported(item, objects, depth + 1, gradients) for item in value)
        if kind is dict and depth < 64:
            return {
                self.exported(k, objects, depth + 1): self.exported(v, objects, depth + 1, gradients)
                for k, v in value.items()
            }
        if torch is not None:
            if kind in (torch.Tensor, torch.nn.Parameter):
                return value.detach().requires_grad_() if gradients and value.requires_grad else value.detach()
            if kind in (torch.dtype, torch.Size):
                return value
        if isinstance(value, bool | numbers.Integral) and not isinstance(value, type):  # numpy's integers and bools
            return bool(value) if isinstance(value, bool) or "bool" in kind.__name__ else int(value)
        if isinstance(value, numbers.Real) and not isinstance(value, type):  # numpy's floats
            return float(value)
        return self.handle_of(value, objects)

    def handle_of(self, value, objects: dict) -> "wire.Handle":
        number = self.numbers.get(id(value))
        if number is None:
            number = len(self.objects) + 1
            self.objects[number], self.numbers[id(value)] = value, number
        objects[number] = self.info(number, value, objects)
        return wire.Handle(number)

    def info(self, number: int, value, objects: dict) -> dict:
        """What the judge needs to stand in for an object: its kind and name, and all of a module."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.nn.Module):
            return self.module_info(number, value, objects)
        if isinstance(value, type):
            is_module = torch is not None and issubclass(value, torch.nn.Module)
            return {"kind": "class", "name": value.__name__, "module": is_module}
        if callable(value):
            return {"kind": "function", "name": str(getattr(value, "__name__", type(value).__name__))}
        return {"kind": "object", "name": type(value).__name__}

    def module_info(self, number: int, module, objects: dict) -> dict:
        torch = sys.modules["torch"]
        self.modules[number] = module
        kind = type(module)
        pytorch_class = getattr(torch.nn, kind.__name__, None) is kind and kind.__module__.startswith("torch.nn.")
        parameters = []
        for name, parameter in module._parameters.items():
            parameters.append(
                [
                    name,
                    None if parameter is None else parameter.detach(),
                    bool(getattr(parameter, "requires_grad", False)),
                ]
            )
            self.remember(number, "parameter", name, parameter)
        buffers = []
        for name, buffer in module._buffers.items():
            buffers.append(
                [name, None if buffer is None else buffer.detach(), name not in module._non_persistent_buffers_set]
            )
            self.remember(number, "buffer", name, buffer)
        children = [
            [name, None if child is None else self.handle_of(child, objects)] for name, child in module._modules.items()
        ]
        attributes = {}
        for name, value in vars(module).items():
            if name in MODULE_INTERNALS or name.endswith("_hooks"):
                continue
            plain = self.exported(value, {}) if is_plain(value, torch) else None
            if plain is not None or value is None:
                attributes[name] = plain
        return {
            "kind": "module",
            "name": kind.__name__,
            "pytorch": f"torch.nn.{kind.__name__}" if pytorch_class else None,
            "training": bool(module.training),
            "parameters": parameters,
            "buffers": buffers,
            "children": children,
            "attributes": attributes,
        }

    def imported(self, tree):
        """A value from the judge: its handles become the objects they name here, or stand-ins for the judge's."""
        if isinstance(tree, wire.Handle):
            if tree.number > 0:
                return self.objects[tree.number]
            return self.judge_function(tree.number, "a function the check passed")
        kind = type(tree)
        if kind in (list, tuple, set, frozenset):
            return kind(self.imported(item) for item in tree)
        if kind is dict:
            return {self.imported(key): self.imported(value) for key, value in tree.items()}
        return tree

    # --- the modules the judge mirrors ----------------------------------------------------------------------

    def remember(self, number: int, kind: str, name: str, tensor) -> None:
        self.versions[number, kind, name] = (id(tensor), getattr(tensor, "_version", 0))

    def state_changes(self) -> list:
        """Parameters and buffers of mirrored modules that changed here since the judge last saw them."""
        changes = []
        for number, module in self.modules.items():
            for kind, table in (("parameter", module._parameters), ("buffer", module._buffers)):
                for name, tensor in table.items():
                    if self.versions.get((number, kind, name)) != (id(tensor), getattr(tensor, "_version", 0)):
                        changes.append([wire.Handle(number), kind, name, None if tensor is None else tensor.detach()])
                        self.remember(number, kind, name, tensor)
        return changes

    def apply_updates(self, updates: list) -> None:
        """The judge changed these parameters or buffers of its mirrors (loaded weights into them, say)."""
        torch = sys.modules.get("torch")
        for handle, kind, name, value in updates:
            module = self.modules[handle.number]
            if kind == "training":
                module.training = bool(value)
                continue
            table = module._parameters if kind == "parameter" else module._buffers
            current = table.get(name)
            with torch.no_grad():
                if current is not None and value is not None and current.shape == value.shape:
                    current.copy_(value)
                elif kind == "parameter":
                    table[name] = None if value is None else torch.nn.Parameter(value)
                else:
                    table[name] = value
            self.remember(handle.number, kind, name, table[name])

    # --- what the judge lends ---------------------------------------------------------------------------------

    def judge_function(self, number: int, name: str):
        def lent(*args, **kwargs):
            return self.call_judge(number, args, kwargs)

        lent.__name__ = lent.__qualname__ = name
        return lent

    def call_judge(self, number: int, args: tuple, kwargs: dict):
        torch = sys.modules.get("torch")
        gradients = torch is not None and torch.is_grad_enabled()
        inputs = (
            [tensor for tensor in peer.tensors_in((list(args), kwargs)) if tensor.requires_grad] if gradients else []
        )
        objects: dict[int, dict] = {}
        fields = {
            "target": wire.Handle(number),
            "args": self.exported(list(args), objects, gradients=bool(inputs)),
            "kwargs": self.exported(kwargs, objects, gradients=bool(inputs)),
            "objects": [[n, info] for n, info in objects.items()],
            "grad": gradients,
        }
        if inputs:
            return self.call_with_gradients(fields, inputs, self.value_of)
        return self.value_of(self.request("call", **fields, keep_graph=False), None)

    def value_of(self, reply: dict, outputs: list | None):
        tree = reply.get("value")
        if outputs is not None:
            tree = peer.with_tensors(tree, iter(outputs))
        return self.imported(tree)

    def lent(self, names: list):
        """The judge's correct versions of earlier exercises, in the notebook's names while the call runs."""
        return Lent(
            self.namespace, {str(name): self.judge_function(handle.number, str(name)) for name, handle in names}
        )


class Lent:
    def __init__(self, namespace: dict, parts: dict):
        self.namespace, self.parts, self.saved = namespace, parts, {}

    def __enter__(self):
        absent = object()
        self.saved = {name: self.namespace.get(name, absent) for name in self.parts}
        self.namespace.update(self.parts)

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if type(value) is object:
                self.namespace.pop(name, None)
            else:
                self.namespace[name] = value


MODULE_INTERNALS = {"training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"}


def is_plain(value, torch, depth: int = 0) -> bool:
    """Whether a module's attribute is plain data to show the judge (sizes, flags, names; no tensors)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str) or kind is torch.dtype:
        return True
    if kind in (tuple, list) and depth < 4:
        return all(is_plain(item, torch, depth + 1) for item in value)
    return False


class grad_mode:
    """Gradients on when the judge keeps a graph of the call, else as the judge had them."""

    def __init__(self, torch, message: dict):
        self.torch, self.enabled = torch, bool(message.get("keep_graph")) or bool(message.get("grad", True))

    def __enter__(self):
        if self.torch is not None:
            self.previous = self.torch.is_grad_enabled()
            self.torch.set_grad_enabled(self.enabled)

    def __exit__(self, *exc):
        if self.torch is not None:
            self.torch.set_grad_enabled(self.previous)


class NoChecksHere(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """``transformer_course.checks`` and its modules, empty: the checks are the judge's."""

    def find_spec(self, name, path=None, target=None):
        if name == HIDDEN_PACKAGE or name.startswith(HIDDEN_PACKAGE + "."):
            return importlib.machinery.ModuleSpec(name, self, is_package=name == HIDDEN_PACKAGE)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        def absent(name):
            raise AttributeError(f"{module.__name__}.{name}: the course's checks run in the judge, not in this process")

        module.__getattr__ = absent
        if module.__name__ == HIDDEN_PACKAGE:
            module.__path__ = []


def main() -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # how the judge stops a cell that runs too long
    sys.meta_path.insert(0, NoChecksHere())
    pipe = wire.Pipe(int(sys.argv[1]), int(sys.argv[2]))
    student = Student(pipe, pipe.receive())
    while True:
        try:
            message = pipe.receive()
        except KeyboardInterrupt:  # an interrupt that came after its cell ended
            continue
        except EOFError:
            return
        if type(message) is not dict or message.get("op") == "stop":
            return
        student.serve(message)


if __name__ == "__main__":
    main()
