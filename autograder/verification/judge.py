"""The judge of the sealed run: runs a notebook's graded tests in the grader's process, where no student code runs.

The student's code runs in a process of its own (``student.py``), in the grading sandbox. The judge sends it the
notebook's cells to run, one at a time, except the test cells, which it runs itself: their source comes from the
instructor's notebook, and the checks they call, with their oracles and the correct stand-ins for earlier
exercises, are imported here. A name a test cell uses that the course's imports do not define (the learner's
function or class) is looked up in the student's process and stands here as a proxy:

- ``RemoteFunction`` and ``RemoteClass``: calling one sends the arguments as plain values and returns the result
  as plain values (``wire.py``), with gradients across (``peer.py``);
- ``RemoteModule``: a learner's module, mirrored. Its parameters and buffers are tensors here, kept equal to the
  learner's in both directions, and its PyTorch children (``nn.Linear`` ...) are real PyTorch modules here holding
  the same parameters. Its ``forward`` runs in the student's process;
- ``RemoteObject``: anything else, its attributes and methods asked for one at a time.

The global random state travels with every call, so a learner's module built after ``torch.manual_seed`` starts
from the same weights as it would in one process. While a check lends correct earlier exercises
(``checks.earlier_exercises_replaced``), the learner's code finds them under their names; they run here and only
their values cross. Nothing the student's process sends is run or unpickled: a compromised process can only lie
about its own results, which are its answers anyway.
"""

import ast
import builtins
import contextlib
import io
import os
import select
import signal
import subprocess
import sys
import time
import types
from dataclasses import dataclass
from pathlib import Path

from autograder.verification import peer, wire
from autograder.verification.peer import RemoteError, tensors_in, with_tensors

HERE = Path(__file__).resolve().parent
STUDENT_FILES = tuple(str(HERE / name) for name in ("student.py", "wire.py", "peer.py", "runner.py"))


class Stopped(Exception):
    """The student's process is gone (ended, killed after ignoring an interrupt, or broke the pipe's framing)."""


@dataclass
class Clock:
    """The time limit of the cell being run, and what happened to it."""

    timeout: float
    deadline: float = 0.0
    interrupted: bool = False

    def start(self) -> None:
        self.deadline, self.interrupted = time.monotonic() + self.timeout, False


class DeadlinePipe(wire.Pipe):
    """The judge's end: every read and write waits at most until the cell's deadline (``wait``)."""

    def __init__(self, read_fd: int, write_fd: int, wait):
        super().__init__(read_fd, write_fd)
        self.wait = wait
        os.set_blocking(write_fd, False)

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            self.wait(self.read_fd, readable=True)
            chunk = os.read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                raise Stopped("the student's process ended")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def send_bytes(self, message: bytes) -> None:
        data = wire.HEADER.pack(len(message)) + message
        while data:
            self.wait(self.write_fd, readable=False)
            try:
                written = os.write(self.write_fd, data)
            except BlockingIOError:
                continue
            except BrokenPipeError:
                raise Stopped("the student's process ended") from None
            data = data[written:]


class Judge(peer.Peer):
    """Runs test cells here and everything else in the student's process."""

    def __init__(self, process: subprocess.Popen, read_fd: int, write_fd: int, cell_timeout: float, grace: float):
        super().__init__(DeadlinePipe(read_fd, write_fd, self.wait))
        self.process, self.clock, self.grace = process, Clock(cell_timeout), grace
        self.killed = False  # stopped for ignoring an interrupt
        self.proxies: dict[int, object] = {}  # the student's handle → its proxy here, one per object
        self.mirrors: dict[int, object] = {}  # the student's handle → the module mirroring it
        self.handles: dict[int, int] = {}  # id(mirror) → the student's handle, for mirrors of PyTorch's classes
        self.versions: dict[tuple, tuple[int, int]] = {}  # (handle, kind, name) → (id, _version) last synchronised
        self.lent: dict[int, object] = {}  # negative handle → an object of the judge's the student may call
        self.lent_names: dict[str, int] = {}  # names under which the student's code finds lent objects
        self.imports: dict = {"__builtins__": builtins}
        self.malformed = 0

    # --- the pipe, with the cell's time limit -------------------------------------------------------------------

    def receive(self):
        try:
            return self.pipe.receive()
        except wire.WireError:
            self.malformed += 1
            raise Stopped("the student's process sent a malformed message") from None

    def wait(self, fd: int, readable: bool) -> None:
        """Block until the pipe can be read or written, interrupting the student's code at the deadline and
        killing its process when it does not stop."""
        while True:
            left = self.clock.deadline - time.monotonic()
            ready = select.select([fd] if readable else [], [] if readable else [fd], [], max(0.0, left))
            if ready[0] or ready[1]:
                return
            if self.clock.interrupted:
                stop_group(self.process)
                self.killed = True
                raise Stopped("it did not stop when interrupted")
            self.clock.interrupted = True
            self.clock.deadline = time.monotonic() + self.grace
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGINT)

    # --- cells ----------------------------------------------------------------------------------------------

    def run_cell(self, index: int) -> list[str] | None:
        """Run the program's cell ``index`` in the student's process; its error, or None."""
        self.clock.start()
        return self.request("run_cell", index=index)["value"]

    def run_test(self, source: str) -> list[str] | None:
        """Run a test cell here, the learner's names as proxies; its error as [type, message], or None."""
        self.clock.start()
        namespace = dict(self.imports)
        for name in sorted(names_used(source) - set(namespace) - set(vars(builtins))):
            with contextlib.suppress(RemoteError):
                namespace[name] = self.value_of(self.request("lookup", name=name), None)
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(source, "<test>", "exec"), namespace)
        except Stopped:
            raise
        except BaseException as error:  # noqa: B036 - any error fails the test
            return peer.describe(error)
        finally:
            self.lent.clear()
            self.lent_names.clear()
        return None

    def import_course_modules(self, sources: list[str]) -> None:
        """Import here what the course's cells import (the checks among them): the names test cells use."""
        for source in sources:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                continue
            for node in tree.body:
                if isinstance(node, ast.Import | ast.ImportFrom):
                    exec(compile(ast.Module([node], []), "<imports>", "exec"), self.imports)

    # --- calls into the student's process -----------------------------------------------------------------

    def call(self, proxy, args: tuple, kwargs: dict):
        torch = sys.modules.get("torch")
        gradients = torch is not None and torch.is_grad_enabled()
        arguments = tensors_in((list(args), kwargs)) if torch is not None else []
        inputs = [tensor for tensor in arguments if tensor.requires_grad] if gradients else []
        params = []
        if is_mirror(proxy) and gradients:
            params = [(name, p) for name, p in proxy.named_parameters() if p.requires_grad]
        fields = {
            "target": wire.Handle(proxy._handle),
            "args": self.exported(list(args), bool(inputs)),
            "kwargs": self.exported(kwargs, bool(inputs)),
            "updates": self.updates(),
            "grad": gradients,
            "lent": [[name, wire.Handle(number)] for name, number in self.lent_names.items()],
            "params": [[wire.Handle(proxy._handle), name] for name, _ in params],
        }
        if torch is not None:
            fields["rng"] = torch.get_rng_state()

        def value(reply: dict, outputs: list | None):
            if torch is not None and reply.get("rng") is not None:
                torch.set_rng_state(reply["rng"])
            with torch.no_grad() if torch is not None else contextlib.nullcontext():
                for index, changed in reply.get("changed_inputs") or []:
                    arguments[int(index)].copy_(changed)
            return self.value_of(reply, outputs)

        differentiable = inputs + [p for _, p in params]
        if differentiable:
            return self.call_with_gradients(fields, differentiable, value)
        return value(self.request("call", **fields, keep_graph=False), None)

    def getattr(self, proxy, name: str):
        return self.value_of(self.request("getattr", target=wire.Handle(proxy._handle), name=name), None)

    @contextlib.contextmanager
    def lending(self, parts: dict):
        """While a check runs, the learner's code finds these correct versions under their names."""
        before = dict(self.lent_names)
        self.lent_names.update({name: self.lend(value) for name, value in parts.items()})
        try:
            yield
        finally:
            self.lent_names = before

    def lend(self, value) -> int:
        number = -(len(self.lent) + 1)
        self.lent[number] = value
        return number

    # --- values out and in ----------------------------------------------------------------------------------

    def exported(self, value, gradients: bool):
        """A value for the student's process: plain data, proxies as the handles they stand for, and the judge's
        own callables lent for the current check (a function the check passes, such as a running sum)."""
        import torch

        kind = type(value)
        if value is None or kind in (bool, int, float, str, bytes, torch.dtype, torch.Size):
            return value
        if kind in (list, tuple, set, frozenset):
            return kind(self.exported(item, gradients) for item in value)
        if kind is dict:
            return {self.exported(k, gradients): self.exported(v, gradients) for k, v in value.items()}
        if isinstance(value, torch.Tensor):
            plain = value.detach()
            return plain.requires_grad_() if gradients and value.requires_grad else plain
        if isinstance(value, Remote) or is_mirror(value):
            return wire.Handle(value._handle)
        if self.handles.get(id(value)) is not None and self.proxies.get(self.handles[id(value)]) is value:
            return wire.Handle(self.handles[id(value)])  # a PyTorch module mirrored here (module.query)
        if callable(value):
            return wire.Handle(self.lend(value))
        raise TypeError(f"the check cannot pass a {kind.__name__} to the learner's code")

    def value_of(self, reply: dict, outputs: list | None):
        """The reply's value here: mirrors brought up to date, handles as proxies."""
        infos = {int(number): info for number, info in reply.get("objects") or []}
        self.apply_state(reply.get("state") or [])
        tree = reply.get("value")
        if outputs is not None:
            tree = with_tensors(tree, iter(outputs))
        return self.imported(tree, infos)

    def imported(self, tree, infos: dict):
        if isinstance(tree, wire.Handle):
            if tree.number < 0:
                return self.lent[tree.number]
            return self.proxy(tree.number, infos)
        kind = type(tree)
        if kind in (list, tuple, set, frozenset):
            return kind(self.imported(item, infos) for item in tree)
        if kind is dict:
            return {self.imported(k, infos): self.imported(v, infos) for k, v in tree.items()}
        return tree

    def proxy(self, number: int, infos: dict):
        if number in self.proxies:
            return self.proxies[number]
        info = infos.get(number)
        if info is None:
            raise RemoteError("WireError", "the student's process named an object it never described")
        kind = info.get("kind")
        if kind == "module":
            made = self.mirror(number, info, infos)
        else:
            made = proxy_class(str(info.get("name")), PROXIES.get(kind, RemoteObject))(self, number, info)
        self.proxies[number] = made
        return made

    # --- mirrors of the learner's modules ------------------------------------------------------------------

    def mirror(self, number: int, info: dict, infos: dict):
        import torch

        pytorch = info.get("pytorch")
        if pytorch is not None:
            kind = getattr(torch.nn, str(pytorch).removeprefix("torch.nn."), None)
            if not (isinstance(kind, type) and issubclass(kind, torch.nn.Module)):
                raise RemoteError("WireError", f"{pytorch} is not one of PyTorch's modules")
        else:
            kind = proxy_class(str(info.get("name")), RemoteModule)
        module = kind.__new__(kind)
        torch.nn.Module.__init__(module)
        if pytorch is None:
            module.__dict__.update(_judge=self, _handle=number, _info=info)
        self.proxies[number] = self.mirrors[number] = module
        self.handles[id(module)] = number
        module.training = bool(info.get("training"))
        for name, value in (info.get("attributes") or {}).items():
            if not (str(name).startswith("_judge") or str(name) in ("_handle", "_info") or hasattr(kind, str(name))):
                module.__dict__[str(name)] = value  # sizes and flags (in_features, eps), never a method's name
        for name, tensor, requires_grad in info.get("parameters") or []:
            module._parameters[name] = None if tensor is None else torch.nn.Parameter(tensor, requires_grad)
        for name, tensor, persistent in info.get("buffers") or []:
            module._buffers[name] = tensor
            if not persistent:
                module._non_persistent_buffers_set.add(name)
        for name, child in info.get("children") or []:
            module._modules[name] = None if child is None else self.proxy(child.number, infos)
        self.remember(number, module)
        return module

    def remember(self, number: int, module) -> None:
        for kind, table in (("parameter", module._parameters), ("buffer", module._buffers)):
            for name, tensor in table.items():
                self.versions[number, kind, name] = (id(tensor), getattr(tensor, "_version", 0))
        self.versions[number, "training", ""] = (int(module.training), 0)

    def updates(self) -> list:
        """What the checks changed in the mirrors since the student's process last saw them (weights copied in,
        ``.eval()``): sent before each call."""
        found = []
        for number, module in self.mirrors.items():
            for kind, table in (("parameter", module._parameters), ("buffer", module._buffers)):
                for name, tensor in table.items():
                    if self.versions.get((number, kind, name)) != (id(tensor), getattr(tensor, "_version", 0)):
                        found.append([wire.Handle(number), kind, name, None if tensor is None else tensor.detach()])
            if self.versions.get((number, "training", "")) != (int(module.training), 0):
                found.append([wire.Handle(number), "training", "", bool(module.training)])
            self.remember(number, module)
        return found

    def apply_state(self, changes: list) -> None:
        """What the learner's code changed in mirrored modules (a training step, a buffer it updates)."""
        import torch

        for handle, kind, name, value in changes:
            module = self.mirrors.get(handle.number)
            if module is None or kind not in ("parameter", "buffer"):
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
            self.remember(handle.number, module)

    # --- what the student's process may ask of the judge ---------------------------------------------------

    def answer(self, message: dict) -> dict:
        """Only calls of what the current check lent, and the gradients of those calls."""
        import torch

        op = message.get("op")
        if op == "backward":
            grads = self.backward(message["graph"], message["grads"])
            return {"value": [None if grad is None else grad.detach() for grad in grads]}
        if op != "call":
            raise PermissionError(f"the judge does not answer {op!r}")
        target = message.get("target")
        if not isinstance(target, wire.Handle) or target.number not in self.lent:
            raise PermissionError("that is not something the current check lent")
        infos = {int(number): info for number, info in message.get("objects") or []}
        args, kwargs = self.imported(message["args"], infos), self.imported(message["kwargs"], infos)
        keep = bool(message.get("keep_graph"))
        with torch.set_grad_enabled(keep or bool(message.get("grad", True))):
            result = self.lent[target.number](*args, **kwargs)
        reply = {"value": self.exported(result, gradients=False)}
        if keep:
            inputs = [tensor for tensor in tensors_in((args, kwargs)) if tensor.requires_grad]
            outputs = tensors_in(result)
            reply["graph"] = self.keep_graph(outputs, inputs)
            reply["differentiable"] = [tensor.requires_grad for tensor in outputs]
        return reply


# --- proxies --------------------------------------------------------------------------------------------------


class Remote:
    """An object of the student's process, by its handle there."""

    def __init__(self, judge: Judge, handle: int, info: dict):
        self._judge, self._handle, self._info = judge, handle, info
        self.__name__ = self.__qualname__ = str(info.get("name"))

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._judge.getattr(self, name)

    def __call__(self, *args, **kwargs):
        return self._judge.call(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<the learner's {self._info.get('kind')} {self.__name__}>"

    def lend_while_checked(self, parts: dict):
        """``checks.earlier_exercises_replaced``: the learner's code finds ``parts`` under their names."""
        return self._judge.lending(parts)


class RemoteFunction(Remote):
    pass


class RemoteClass(Remote):
    pass


class RemoteObject(Remote):
    def __len__(self) -> int:
        return self._judge.getattr(self, "__len__")()

    def __getitem__(self, item):
        return self._judge.getattr(self, "__getitem__")(item)


PROXIES = {"function": RemoteFunction, "class": RemoteClass, "object": RemoteObject}


def _module_base():
    import torch

    class Mirror(torch.nn.Module):
        """A learner's module: parameters and children here, forward in the student's process."""

        def forward(self, *args, **kwargs):
            return self._judge.call(self, args, kwargs)

        def __getattr__(self, name: str):
            try:
                return torch.nn.Module.__getattr__(self, name)
            except AttributeError:
                if name.startswith("_"):
                    raise
            return self._judge.getattr(self, name)

        def __repr__(self) -> str:
            return f"<the learner's module {type(self).__name__}>"

        def lend_while_checked(self, parts: dict):
            return self._judge.lending(parts)

    return Mirror


class RemoteModule:
    """Stands for the base class of mirrors (``Mirror``, a ``torch.nn.Module``), which is made when PyTorch is first
    needed; ``is_mirror`` tells a mirror."""


def is_mirror(value) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module) and "_judge" in value.__dict__


_CLASSES: dict[tuple[str, type], type] = {}


def proxy_class(name: str, base: type) -> type:
    """A class named as the learner's (checks name a result by ``type(result).__name__``)."""
    if base is RemoteModule:
        base = _CLASSES.setdefault(("", RemoteModule), _module_base())
    if (name, base) not in _CLASSES:
        _CLASSES[name, base] = type(name if name.isidentifier() else "Learners", (base,), {})
    return _CLASSES[name, base]


def names_used(source: str) -> set[str]:
    """The global names a cell's code reads."""
    try:
        code = compile(source, "<test>", "exec")
    except SyntaxError:
        return set()
    names, pending = set(), [code]
    while pending:
        code = pending.pop()
        names.update(code.co_names)
        pending += [const for const in code.co_consts if isinstance(const, types.CodeType)]
    return names


def stop_group(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
