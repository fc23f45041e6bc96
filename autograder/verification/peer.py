"""Calls between the judge and the student's process, in both directions, with PyTorch's gradients across.

Each side is a ``Peer`` on one pipe (``wire.Pipe``). A request is ``{"op": ..., "id": n, ...}``; its reply is
``{"reply": n, "value": ...}`` or ``{"reply": n, "error": [type, message]}``. While a side waits for its reply it
answers the other side's requests, so calls nest: the judge calls the learner's layer, whose ``__init__`` builds the
correct LayerNorm that the judge lent it, whose forward runs in the judge, and so on.

Objects stay with the side that made them. The other side holds a handle (positive numbers for the student's
objects, negative for the judge's) and stands for it with a proxy (``RemoteFunction``, ``RemoteClass``,
``RemoteObject``) or, for a ``torch.nn.Module``, a mirror: a module of its own with copies of the parameters and
buffers, the same children (mirrored too, or a real PyTorch module of the same class and settings, such as
``nn.Linear``), and a forward that calls the original. Every message carries what changed in the modules known to
both sides since the last one (weights copied in, ``.eval()``, a buffer updated), so both keep the same values.

A call whose inputs need gradients runs as one node of the caller's graph (``RemoteCall``): the callee keeps its
own graph of the call, and the node's backward asks the callee for the gradients of the call's inputs (the tensors
among its arguments, and the parameters of the module called) given the gradients of its outputs.

The judge imports this file; the student's process loads it by its path, as it loads ``wire.py``. Only the
standard library is imported here; PyTorch when a value needs it.
"""

import builtins
import contextlib
import functools
import itertools
import numbers
import sys
import weakref
from collections import OrderedDict

try:
    from autograder.verification import wire
except ImportError:  # in the student's process, which loaded wire.py by its path first
    wire = sys.modules["_grading_wire"]

# Graphs of calls kept for a later backward, at most: each is dropped when the other side's node of it is freed
# (gradcheck keeps one for dozens of calls), and the oldest beyond this are dropped whatever the other side does.
MAX_GRAPHS = 4096
HOOK_KINDS = ("forward_pre", "forward")  # the hooks of a mirror that its original runs too
# Modules whose classes both sides trust and have: a mirror of one is an instance of the very class, which runs here.
TRUSTED_MODULES = ("torch.nn.modules.", "transformer_course.reference.")
MODULE_INTERNALS = {"training", "_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"}
PROXY_FIELDS = ("_peer", "_handle", "_info")  # what a mirror keeps of its original; never taken from the other side


class RemoteError(Exception):
    """The other side reported an error: ``kind`` is its exception's class name there, ``base`` the name of the
    nearest built-in class it derives from (a learner's ``class TooLong(ValueError)`` has the base ValueError)."""

    def __init__(self, kind: str, message: str, base: str | None = None):
        Exception.__init__(self, message)
        self.kind, self.message, self.base = kind, message, base

    def __str__(self) -> str:
        return self.message


_KINDS: dict[tuple[str, str | None], type] = {}


def remote_error(kind: str, message: str, base: str | None = None) -> RemoteError:
    """The other side's error as an exception here that is also of the built-in class it names or derives from, if
    any (``except NotImplementedError`` catches a learner's stub across the pipe, ``except ValueError`` a learner's
    own subclass of it). KeyboardInterrupt and SystemExit become plain errors here: they stopped the other side's
    code, not this side."""
    if (kind, base) not in _KINDS:
        builtin = getattr(builtins, base or kind, None)
        bases: tuple[type, ...] = (RemoteError,)
        if isinstance(builtin, type) and issubclass(builtin, Exception):
            bases = (RemoteError, builtin)
        try:
            made = type(kind, bases, {"__init__": RemoteError.__init__, "__str__": RemoteError.__str__})
        except TypeError:  # a built-in class whose layout cannot be combined
            made = type(kind, (RemoteError,), {})
        _KINDS[kind, base] = made
    return _KINDS[kind, base](kind, message, base)


def builtin_base(kind: type) -> str | None:
    """The name of the nearest built-in exception class among ``kind`` and its bases."""
    for candidate in kind.__mro__:
        if getattr(builtins, candidate.__name__, None) is candidate and issubclass(candidate, Exception):
            return candidate.__name__
    return None


def describe(error: BaseException, limit: int = 2000) -> list[str | None]:
    """An error as [its type's name, its message, its nearest built-in class's name], for a reply."""
    if isinstance(error, RemoteError):
        return [error.kind, str(error)[:limit], error.base]
    try:
        message = str(error)
    except BaseException:  # noqa: B036 - an exception whose str() fails is still an error
        message = ""
    return [type(error).__name__, message[:limit], builtin_base(type(error))]


def _plain_tensor(value) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and type(value) in (torch.Tensor, torch.nn.Parameter)


def tensors_in(tree) -> list:
    """The tensors of a plain value, depth first, in a fixed order (``with_tensors`` puts others in their places)."""
    return leaves_in(tree, _plain_tensor)


def generators_in(tree) -> list:
    """The random generators among a call's arguments, in a fixed order."""
    torch = sys.modules.get("torch")
    return leaves_in(tree, lambda value: torch is not None and type(value) is torch.Generator)


def containers_in(args, kwargs: dict) -> list:
    """A call's arguments that are lists, dicts or sets, with their places (position or keyword): a function may
    change them in place, and the caller must see that as it would in one process."""
    places = [*enumerate(args), *kwargs.items()]
    return [(place, value) for place, value in places if isinstance(value, list | dict | set)]


NOT_PLAIN = object()


def plain_copy(value, depth: int = 0):
    """A copy of a container made only of numbers, strings and such containers, to compare before and after a call;
    NOT_PLAIN for anything else (tensors come back as changed inputs; objects are the other side's own)."""
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if type(value) in (list, tuple, set, frozenset) and wire.only_scalars(value):
        return type(value)(value)
    if depth < 64 and isinstance(value, list | tuple | set | frozenset | dict):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        items = {key: plain_copy(item, depth + 1) for key, item in pairs}
        if any(item is NOT_PLAIN for item in items.values()):
            return NOT_PLAIN
        return items if isinstance(value, dict) else type(value)(items.values())
    return NOT_PLAIN


def refill(container, contents) -> None:
    """Give the caller's container what the callee's became."""
    if container is None:
        return
    if isinstance(container, list):
        container[:] = contents
    else:
        container.clear()
        container.update(contents)


def leaves_in(tree, wanted, found: list | None = None) -> list:
    """The items of ``tree`` (lists, tuples and dict values, nested) for which ``wanted`` holds, depth first.
    ``wanted`` picks tensors or generators, never a number, a string or None: a list of only those is skipped."""
    found = [] if found is None else found
    if type(tree) in (list, tuple) and wire.only_scalars(tree):
        return found
    if wanted(tree):
        found.append(tree)
    elif type(tree) in (list, tuple):
        for item in tree:
            leaves_in(item, wanted, found)
    elif type(tree) is dict:
        for item in tree.values():
            leaves_in(item, wanted, found)
    return found


def with_tensors(tree, replacements):
    """``tree`` with its tensors replaced, in ``tensors_in``'s order, by the items of the iterator ``replacements``."""
    if _plain_tensor(tree):
        return next(replacements)
    if type(tree) in (list, tuple):
        return type(tree)(with_tensors(item, replacements) for item in tree)
    if type(tree) is dict:
        return {key: with_tensors(item, replacements) for key, item in tree.items()}
    return tree


class Peer:
    """One side of the pipe: its own objects by handle, proxies and mirrors of the other side's, and the calls
    between them. ``SIGN`` is +1 for the student's handles, -1 for the judge's."""

    SIGN = 1
    # Whether a module that the other side describes as one of PyTorch's or the reference classes, holding plain
    # state only, runs here as that class. The judge says no: what the student's process says of its own modules
    # decides nothing there, and their forwards and methods run where they were made.
    RUNS_DESCRIBED_MODULES = True
    # Whether what the other side does to its copy of one of this side's modules (weights, buffers, mode, hooks)
    # stays there. The judge keeps its modules as it made them: a check computes its expected values from them.
    KEEPS_OWN_MODULES = False

    def __init__(self, pipe):
        self.pipe = pipe
        self._ids = itertools.count(1)
        self.graphs: OrderedDict[int, tuple[list, list]] = OrderedDict()  # calls answered with a graph kept
        self._graph_ids = itertools.count(1)
        self._handles = itertools.count(1)  # never reused: the other side keeps its proxies by handle
        self.released: list[int] = []  # graphs of the other side whose nodes here were freed: it may drop them
        self.own: dict[int, object] = {}  # handle → this side's object the other side holds a handle of
        self.own_numbers: dict[int, int] = {}  # id(object) → its handle
        self.described: set[int] = set()  # handles whose description the other side has
        self.proxies: dict[int, object] = {}  # the other side's handle → its proxy or mirror here
        self.proxy_numbers: dict[int, int] = {}  # id(proxy or mirror) → the other side's handle
        self.modules: dict[int, object] = {}  # handle → module known to both sides: this side's, or a mirror
        self.versions: dict[tuple, object] = {}  # (handle, kind, name) → what the other side last saw
        self.parameter_owners: dict[int, tuple] = {}  # id(parameter) → (it, the module and name it was sent as)
        self.hooks: dict[tuple, object] = {}  # (mirror's handle, kind, hook id) → the hook's handle on either side

    # --- messages ---------------------------------------------------------------------------------------------

    def receive(self):
        message = self.pipe.receive()
        if type(message) is not dict:
            raise RemoteError("WireError", "a message that is not a request or a reply")
        self.apply_changes(message.get("changes") or [])
        return message

    def send(self, message: dict) -> None:
        message["changes"] = self.changes()
        self.pipe.send(message)

    def request(self, op: str, **fields) -> dict:
        """Send a request and return its reply, answering the other side's requests meanwhile."""
        number = next(self._ids)
        released, self.released = self.released, []
        self.send({"op": op, "id": number, "release": released, **fields})
        while True:
            message = self.receive()
            if "reply" in message:
                if message["reply"] == number:
                    if message.get("error") is not None:
                        kind, text, *base = message["error"]
                        raise remote_error(str(kind), str(text), str(base[0]) if base and base[0] else None)
                    return message
                continue  # the reply to a request given up on (interrupted); nothing waits for it
            self.serve(message)

    def serve(self, message: dict) -> None:
        for graph in message.get("release") or []:
            self.graphs.pop(graph, None)
        try:
            reply = self.answer(message)
        except BaseException as error:  # noqa: B036 - every failure of a request is the other side's to hear
            reply = {"error": describe(error)}
        self.send({"reply": message.get("id"), **reply})

    def answer(self, message: dict) -> dict:
        """What this side does for the other: call or read its own objects, and the gradients of such calls."""
        op = message.get("op")
        if op not in ("call", "getattr", "backward", "deepcopy"):
            raise PermissionError(f"{op!r} is not something this side answers")
        return getattr(self, "on_" + op)(message)

    def forget(self) -> None:
        """Drop every handle, of both sides, and every hook put on this side's modules for the other side."""
        for key, hook in list(self.hooks.items()):
            if key[0] * self.SIGN > 0:
                hook.remove()
        for table in (self.own, self.own_numbers, self.proxies, self.proxy_numbers, self.modules, self.versions):
            table.clear()
        self.described.clear()
        self.parameter_owners.clear()
        self.hooks.clear()
        self.graphs.clear()

    def on_deepcopy(self, message: dict) -> dict:
        """``copy.deepcopy`` of a mirror: a copy of the original, where it lives, and a mirror of the copy."""
        import copy

        return self.reply(copy.deepcopy(self.own_target(message)))

    # --- calls to the other side --------------------------------------------------------------------------

    def call(self, proxy, args: tuple, kwargs: dict):
        """Call the other side's object that ``proxy`` stands for; gradients flow back when inputs need them."""
        torch = sys.modules.get("torch")
        gradients = torch is not None and torch.is_grad_enabled()
        arguments = tensors_in((list(args), kwargs))
        inputs = [tensor for tensor in arguments if tensor.requires_grad] if gradients else []
        params = (
            [(n, p) for n, p in proxy.named_parameters() if p.requires_grad] if gradients and is_mirror(proxy) else []
        )
        objects: dict[int, dict] = {}
        fields = {
            "target": wire.Handle(proxy._handle),
            "args": self.exported(list(args), objects, bool(inputs)),
            "kwargs": self.exported(kwargs, objects, bool(inputs)),
            "lent": self.lent_for_call(objects),
            "grad": gradients,
            "params": [name for name, _ in params],
        }
        fields["objects"] = list(objects.items())  # last: every handle above described
        record = allocations_recording()
        if record is not None:  # the caller measures what the call allocates: so must the callee
            fields["probe"] = "allocations"
        if torch is not None:
            fields["rng"] = torch.get_rng_state()
        generators = generators_in((list(args), kwargs))

        def value(reply: dict, outputs: list | None):
            if record is not None and reply.get("probe") is not None:
                record.add(*reply["probe"])
            if torch is not None and reply.get("rng") is not None:
                torch.set_rng_state(reply["rng"])
            with torch.no_grad() if torch is not None else contextlib.nullcontext():
                for index, changed in reply.get("changed_inputs") or []:
                    argument = arguments[int(index)]
                    if argument.shape == changed.shape:
                        argument.copy_(changed)
                    else:  # transpose_, unsqueeze_ and the like change the shape in place
                        argument.data = changed
            changed = dict(containers_in(args, kwargs))
            for place, contents in reply.get("changed_containers") or []:
                refill(changed.get(place if isinstance(place, str) else int(place)), contents)
            for generator, state in zip(generators, reply.get("generators") or [], strict=False):
                generator.set_state(state)
            return self.value_of(reply, outputs)

        differentiable = inputs + [p for _, p in params]
        if differentiable:
            return self.call_with_gradients(fields, differentiable, value)
        return value(self.request("call", **fields, keep_graph=False), None)

    def getattr(self, proxy, name: str):
        return self.value_of(self.request("getattr", target=wire.Handle(proxy._handle), name=name), None)

    def call_with_gradients(self, fields: dict, inputs: list, make_value):
        """Make the call of ``fields`` as one node of the local graph over ``inputs``; ``make_value(reply,
        outputs)`` turns the reply into the caller's value, the node's outputs in place of the reply's tensors."""
        import torch

        box: dict = {}
        *outputs, _ = remote_call_function(torch).apply(self, fields, box, *inputs)
        return make_value(box["reply"], outputs)

    # --- calls from the other side ------------------------------------------------------------------------

    def on_call(self, message: dict) -> dict:
        torch = sys.modules.get("torch")
        infos = dict(message.get("objects") or [])
        target = self.own_target(message)
        args, kwargs = self.imported(message["args"], infos), self.imported(message["kwargs"], infos)
        arguments = tensors_in((args, kwargs))
        versions = [tensor._version for tensor in arguments]
        containers = containers_in(args, kwargs)
        snapshots = [plain_copy(container) for _, container in containers]
        params = [target.get_parameter(str(name)) for name in message.get("params") or []]
        inputs = [tensor for tensor in arguments if tensor.requires_grad] + params
        if torch is not None and message.get("rng") is not None:
            torch.set_rng_state(message["rng"])
        keep = bool(message.get("keep_graph"))
        probe = message.get("probe") == "allocations"
        with self.lending(message.get("lent") or [], infos), GradMode(torch, keep or bool(message.get("grad", True))):
            if probe:  # only this call's own exercise relies on what it reports
                from transformer_course.allocations import allocations_of

                result, allocations = allocations_of(target, *args, **kwargs)
            else:
                result = target(*args, **kwargs)
        reply = self.reply(result)
        if probe:
            reply["probe"] = [allocations.shapes, allocations.sizes, allocations.peak]
        if keep:
            outputs = tensors_in(result)
            reply["graph"] = self.keep_graph(outputs, inputs)
            reply["differentiable"] = [tensor.requires_grad for tensor in outputs]
        reply["changed_inputs"] = [
            [index, tensor.detach()]
            for index, (tensor, version) in enumerate(zip(arguments, versions, strict=True))
            if tensor._version != version
        ]
        reply["changed_containers"] = [
            [place, after]
            for (place, container), before in zip(containers, snapshots, strict=True)
            if (after := plain_copy(container)) is not NOT_PLAIN and after != before
        ]
        reply["generators"] = [generator.get_state() for generator in generators_in((args, kwargs))]
        if torch is not None:
            reply["rng"] = torch.get_rng_state()
        return reply

    def on_getattr(self, message: dict) -> dict:
        return self.reply(getattr(self.own_target(message), str(message["name"])))

    def on_backward(self, message: dict) -> dict:
        grads = self.backward(message["graph"], message["grads"])
        return {"value": [None if grad is None else grad.detach() for grad in grads]}

    def lending(self, names: list, infos: dict):
        """Names under which the called code finds objects the caller lends (only the student's side has names)."""
        return contextlib.nullcontext()

    def lent_for_call(self, objects: dict) -> list:
        """[name, handle] of the objects this side lends the code it calls (only the judge lends)."""
        return []

    def own_target(self, message: dict):
        """The object of this side's that a request names; only those may be called or read."""
        target = message.get("target")
        if not isinstance(target, wire.Handle) or target.number * self.SIGN <= 0 or target.number not in self.own:
            raise PermissionError("that is not an object this side gave out")
        return self.own[target.number]

    # --- values out and in -------------------------------------------------------------------------------------

    def reply(self, value) -> dict:
        objects: dict[int, dict] = {}
        return {"value": self.exported(value, objects), "objects": list(objects.items())}

    def exported(self, value, objects: dict, gradients: bool = False, depth: int = 0):
        """``value`` as plain data for the other side: handles for objects (described in ``objects`` for the other
        side's proxies), tensors that need gradients saying so when ``gradients``."""
        torch = sys.modules.get("torch")
        kind = type(value)
        if value is None or kind in (bool, int, float, str, bytes):
            return value
        if kind in (list, tuple, set, frozenset) and depth < 64:
            if wire.only_scalars(value):
                return kind(value)
            return kind(self.exported(item, objects, gradients, depth + 1) for item in value)
        if (kind is dict or (isinstance(value, dict) and kind.__module__ == "collections")) and depth < 64:
            # Counter, OrderedDict, defaultdict arrive as a plain dict, in their order: isinstance(value, dict) holds
            return {
                self.exported(k, objects, False, depth + 1): self.exported(v, objects, gradients, depth + 1)
                for k, v in value.items()
            }
        if torch is not None:
            if kind in (torch.Tensor, torch.nn.Parameter):
                return value.detach().requires_grad_() if gradients and value.requires_grad else value.detach()
            if kind in (torch.dtype, torch.Size, torch.Generator):
                return value
        if id(value) in self.proxy_numbers and self.proxies.get(self.proxy_numbers[id(value)]) is value:
            return wire.Handle(self.proxy_numbers[id(value)])  # the other side's object, back to it
        if isinstance(value, numbers.Number) and not isinstance(value, type | complex):  # numpy's numbers
            return (
                bool(value)
                if "bool" in kind.__name__
                else int(value)
                if isinstance(value, numbers.Integral)
                else float(value)
            )
        return self.handle_of(value, objects)

    def handle_of(self, value, objects: dict) -> "wire.Handle":
        number = self.own_numbers.get(id(value))
        if number is None:
            number = self.SIGN * next(self._handles)
            self.own[number], self.own_numbers[id(value)] = value, number
        if number not in self.described:  # once: the other side keeps its proxy by the handle
            self.described.add(number)
            objects[number] = self.info(number, value, objects)
        return wire.Handle(number)

    def info(self, number: int, value, objects: dict) -> dict:
        """What the other side needs to stand in for an object: its kind and name, and all of a module."""
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(value, torch.nn.Module):
            return self.module_info(number, value, objects)
        if isinstance(value, type):
            return {"kind": "class", "name": value.__name__}
        if callable(value):
            name = str(getattr(value, "__name__", type(value).__name__))
            return {"kind": "function", "name": name, "parameters": parameters_of(value)}
        return {"kind": "object", "name": type(value).__name__}

    def module_info(self, number: int, module, objects: dict) -> dict:
        torch = sys.modules["torch"]
        kind = type(module)
        defined_in = sys.modules.get(kind.__module__)
        trusted = kind.__module__.startswith(TRUSTED_MODULES) and getattr(defined_in, kind.__qualname__, None) is kind
        self.share(number, module)
        parameters = []
        for name, p in module._parameters.items():
            owner = self.parameter_owners.get(id(p))
            if p is not None and owner is not None and owner[0] is p:  # tied: the Parameter of a module sent before
                parameters.append([name, wire.Handle(owner[1]), owner[2]])
                continue
            if p is not None:
                self.parameter_owners[id(p)] = (p, number, name)  # holding it, so that its id means it alone
            parameters.append([name, None if p is None else p.detach(), bool(getattr(p, "requires_grad", False))])
        buffers = [
            [name, None if b is None else b.detach(), name not in module._non_persistent_buffers_set]
            for name, b in module._buffers.items()
        ]
        children = [[name, None if c is None else self.exported(c, objects)] for name, c in module._modules.items()]
        state = {name: value for name, value in vars(module).items() if name not in MODULE_INTERNALS}
        state = {name: value for name, value in state.items() if not name.endswith(("_hooks", "_hooks_with_kwargs"))}
        attributes = {name: value for name, value in state.items() if is_plain(value, torch)}
        return {
            "kind": "module",
            "name": kind.__name__,
            "class": f"{kind.__module__}:{kind.__qualname__}" if trusted else None,
            # All of its state is plain, so a copy there could run there. PyTorch's own hook settings
            # (_forward_hooks_always_called) are not plain: only Judge.info makes the judge's modules complete.
            "complete": len(attributes) == len(state),
            "training": bool(module.training),
            "forward": parameters_of(module.forward),  # a check names the inputs by it
            "parameters": parameters,
            "buffers": buffers,
            "children": children,
            "attributes": attributes,
        }

    def value_of(self, reply: dict, outputs: list | None):
        tree = reply.get("value")
        if outputs is not None:
            tree = with_tensors(tree, iter(outputs))
        return self.imported(tree, dict(reply.get("objects") or []))

    def imported(self, tree, infos: dict):
        """A value from the other side: its handles become this side's objects, or proxies of the other side's."""
        if isinstance(tree, wire.Handle):
            if tree.number * self.SIGN > 0:
                if tree.number not in self.own:
                    raise RemoteError("LookupError", "a handle this side never gave out (or has taken back)")
                return self.own[tree.number]
            return self.proxy(tree.number, infos)
        kind = type(tree)
        if kind in (list, tuple, set, frozenset):
            if wire.only_scalars(tree):
                return kind(tree)
            return kind(self.imported(item, infos) for item in tree)
        if kind is dict:
            return {self.imported(k, infos): self.imported(v, infos) for k, v in tree.items()}
        return tree

    def proxy(self, number: int, infos: dict):
        if number in self.proxies:
            return self.proxies[number]
        info = infos.get(number)
        if not info:
            raise RemoteError("WireError", "a handle the other side never described")
        if info.get("kind") == "module":
            return self.mirror(number, info, infos)
        made = named_class(str(info.get("name")), PROXIES.get(info.get("kind"), RemoteObject))(self, number, info)
        self.keep_proxy(number, made)
        return made

    def keep_proxy(self, number: int, proxy) -> None:
        self.proxies[number] = proxy
        self.proxy_numbers[id(proxy)] = number

    # --- mirrors -------------------------------------------------------------------------------------------

    def mirror(self, number: int, info: dict, infos: dict):
        """A module here for the other side's module: PyTorch's own class or the course's reference class where it
        is one and its description says a copy can run here (its forward runs here, on the same parameters and
        settings), else a ``Mirror`` whose forward calls the original. Of the judge's modules, only those a check
        hands over are described so (``Judge.info``); the judge runs none of the student's (RUNS_DESCRIBED_MODULES)."""
        import torch

        trusted = trusted_class(info.get("class"))
        if trusted is not None and info.get("complete") and self.RUNS_DESCRIBED_MODULES:
            kind = trusted  # nn.Linear, nn.LayerNorm: its forward runs here
        elif trusted is not None:  # an instance of its class here (isinstance), which runs nothing of it here
            kind = remote_subclass(trusted)
        else:
            kind = named_class(str(info.get("name")), mirror_base())
        module = kind.__new__(kind)
        torch.nn.Module.__init__(module)
        if issubclass(kind, mirror_base()):
            module.__dict__.update(_peer=self, _handle=number, _info=info)
            if trusted is None and (signature := signature_from(info.get("forward"))) is not None:
                forward = functools.partial(kind.forward, module)  # the original's parameters, for a check to name
                forward.__signature__ = signature
                module.__dict__["forward"] = forward
        self.keep_proxy(number, module)
        self.modules[number] = module  # a child's parameter may be tied to one of this module's (self.table = ...)
        module.training = bool(info.get("training"))
        for name, value in (info.get("attributes") or {}).items():
            if str(name) not in PROXY_FIELDS and not hasattr(kind, str(name)):
                module.__dict__[str(name)] = value  # sizes and flags (in_features, eps), never a method's name
        for name, tensor, requires_grad in info.get("parameters") or []:
            if isinstance(tensor, wire.Handle):  # tied to a parameter described before it
                module._parameters[name] = self.modules[tensor.number]._parameters[str(requires_grad)]
                continue
            module._parameters[name] = None if tensor is None else torch.nn.Parameter(tensor, requires_grad)
        for name, tensor, persistent in info.get("buffers") or []:
            module._buffers[name] = tensor
            if not persistent:
                module._non_persistent_buffers_set.add(name)
        for name, child in info.get("children") or []:
            module._modules[name] = None if child is None else self.imported(child, infos)
        self.share(number, module)
        return module

    def share(self, number: int, module) -> None:
        """Keep ``module`` equal on both sides from now on: its state as the other side has it now."""
        self.modules[number] = module
        self.versions.update(self.state_of(number, module))

    def state_of(self, number: int, module) -> dict:
        state = {(number, "training", ""): bool(module.training)}
        for kind, table in (("parameter", module._parameters), ("buffer", module._buffers)):
            for name, tensor in table.items():
                # .data replaced (module.double(), .to()) keeps the object and its version, not its storage
                storage = tensor.data_ptr() if tensor is not None else None
                state[number, kind, name] = (id(tensor), getattr(tensor, "_version", 0), storage)
        return state

    def changes(self) -> list:
        """What changed here in the shared modules since the other side last saw them: state, and hooks put on
        mirrors (a check that watches what reaches a learner's part), which run where the module runs."""
        found = self.hook_changes()
        for number, module in self.modules.items():
            for key, now in self.state_of(number, module).items():
                if self.versions.get(key) != now:
                    _, kind, name = key
                    table = module._parameters if kind == "parameter" else module._buffers
                    value = bool(module.training) if kind == "training" else table[name]
                    found.append([wire.Handle(number), kind, name, value.detach() if _plain_tensor(value) else value])
                    self.versions[key] = now
        return found

    def hook_changes(self) -> list:
        found = []
        mirrors = {number: module for number, module in self.modules.items() if number * self.SIGN < 0}
        current = {}
        for number, module in mirrors.items():
            for kind in HOOK_KINDS:
                for hook_id, hook in getattr(module, f"_{kind}_hooks").items():
                    current[number, kind, hook_id] = hook
        for key, hook in current.items():
            if key not in self.hooks:
                number, kind, hook_id = key
                objects: dict[int, dict] = {}
                lent = self.exported(hook, objects)
                with_kwargs = bool(getattr(mirrors[number], f"_{kind}_hooks_with_kwargs", {}).get(hook_id))
                put = [lent, objects.get(lent.number), with_kwargs]
                found.append([wire.Handle(number), "hook", [kind, hook_id], put])
                self.hooks[key] = lent
        for key in [key for key in self.hooks if key[0] * self.SIGN < 0 and key not in current]:
            del self.hooks[key]
            number, kind, hook_id = key
            found.append([wire.Handle(number), "hook", [kind, hook_id], None])
        return found

    def apply_hook(self, module, number: int, name: list, value) -> None:
        """Put on this side's module a hook the other side put on its mirror of it (or take it off)."""
        kind, hook_id = str(name[0]), int(name[1])
        if kind not in HOOK_KINDS:
            return
        if value is None:
            removable = self.hooks.pop((number, kind, hook_id), None)
            if removable is not None:
                removable.remove()
            return
        lent, info, with_kwargs = value
        hook = self.imported(lent, {lent.number: info})
        register = getattr(module, f"register_{kind}_hook")
        self.hooks[number, kind, hook_id] = register(hook, with_kwargs=bool(with_kwargs))

    def apply_changes(self, changes: list) -> None:
        """What the other side changed in shared modules (weights loaded into a mirror, a training step)."""
        torch = sys.modules.get("torch")
        for handle, kind, name, value in changes:
            module = self.modules.get(getattr(handle, "number", None))
            if module is None or (self.KEEPS_OWN_MODULES and handle.number * self.SIGN > 0):
                continue
            if kind == "hook":
                self.apply_hook(module, handle.number, name, value)
                continue
            if kind == "training":
                module.training = bool(value)
            elif kind in ("parameter", "buffer"):
                table = module._parameters if kind == "parameter" else module._buffers
                current = table.get(name)
                with torch.no_grad():
                    if current is not None and value is not None and current.shape == value.shape:
                        if current.dtype == value.dtype:
                            current.copy_(value)
                        else:  # module.double(): as Module._apply does, same tensor object, new data
                            current.data = value
                    elif kind == "parameter":
                        table[name] = None if value is None else torch.nn.Parameter(value)
                    else:
                        table[name] = value
            self.versions.update(self.state_of(handle.number, module))

    # --- gradients across ------------------------------------------------------------------------------------

    def keep_graph(self, outputs: list, inputs: list) -> int | None:
        """Remember the graph of a call answered here, for the other side's backward; its number, or None."""
        if not any(output.requires_grad for output in outputs) or not inputs:
            return None
        number = next(self._graph_ids)
        self.graphs[number] = (outputs, inputs)
        while len(self.graphs) > MAX_GRAPHS:
            self.graphs.popitem(last=False)
        return number

    def backward(self, graph: int, grads: list) -> list:
        """The gradients of a kept call's inputs, given the gradients of its outputs."""
        import torch

        if graph not in self.graphs:
            raise RuntimeError("the graph of that call is no longer kept; run the forward again")
        outputs, inputs = self.graphs[graph]
        pairs = [(o, g) for o, g in zip(outputs, grads, strict=True) if o.requires_grad and g is not None]
        if not pairs:
            return [None] * len(inputs)
        found = torch.autograd.grad(
            [o for o, _ in pairs], inputs, [g.to(o.dtype) for o, g in pairs], retain_graph=True, allow_unused=True
        )
        return list(found)


class GradMode:
    """Gradients on or off while a call runs, as its caller had them (on where the caller keeps a graph of it)."""

    def __init__(self, torch, enabled: bool):
        self.torch, self.enabled = torch, enabled

    def __enter__(self):
        if self.torch is not None:
            self.previous = self.torch.is_grad_enabled()
            self.torch.set_grad_enabled(self.enabled)

    def __exit__(self, *exc):
        if self.torch is not None:
            self.torch.set_grad_enabled(self.previous)


def is_plain(value, torch, depth: int = 0) -> bool:
    """Whether a module's attribute is plain data to show the other side (sizes, flags, names; no tensors)."""
    kind = type(value)
    if value is None or kind in (bool, int, float, str) or kind is torch.dtype:
        return True
    if kind in (tuple, list) and depth < 4:
        return all(is_plain(item, torch, depth + 1) for item in value)
    return False


def trusted_class(path) -> type | None:
    """The class ``module:qualname`` when its module is one both sides trust and it is a torch.nn.Module; None
    where this side cannot have it (the student's process does not see every reference module)."""
    import importlib

    import torch

    if not isinstance(path, str) or ":" not in path or not path.startswith(TRUSTED_MODULES):
        return None
    module_name, qualname = path.split(":", 1)
    try:
        kind = getattr(importlib.import_module(module_name), qualname, None)
    except ImportError:
        return None
    return kind if isinstance(kind, type) and issubclass(kind, torch.nn.Module) else None


def allocations_recording():
    """The record of ``transformer_course.allocations.allocations_of`` under way here, if any."""
    allocations = sys.modules.get("transformer_course.allocations")
    return allocations.recording() if allocations is not None else None


def remote_subclass(trusted: type) -> type:
    """A mirror that is an instance of ``trusted`` for a check's isinstance, but whose forward and every other
    method of ``trusted``'s own (not torch.nn.Module's) are the original's, run where the original lives."""
    import torch

    kind = named_class(trusted.__name__, mirror_base(), trusted)
    kind.forward = forward_like(trusted.forward)
    for cls in trusted.__mro__:
        if cls in torch.nn.Module.__mro__:
            break
        for name, value in vars(cls).items():
            remote = name != "forward" and not name.startswith("__") and name not in vars(kind)
            if remote and (callable(value) or isinstance(value, property | staticmethod | classmethod)):
                setattr(kind, name, property(functools.partial(_remote_attribute, name=name)))
    return kind


def _remote_attribute(module, name: str):
    return module._peer.getattr(module, name)


def forward_like(original):
    """A mirror's forward with the signature of the original class's (a check binds arguments by it)."""
    import inspect

    def forward(self, *args, **kwargs):
        return self._peer.call(self, args, kwargs)

    forward.__signature__ = inspect.signature(original)
    return forward


def parameters_of(function) -> list | None:
    """A function's parameters as plain values: [name, kind, whether it has a default] each; None if unknown."""
    import inspect

    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return None
    return [[parameter.name, int(parameter.kind), parameter.default is not parameter.empty] for parameter in parameters]


def signature_from(parameters):
    """The inspect.Signature that the other side's ``parameters_of`` described, or None if it is not one."""
    import inspect

    kinds = type(inspect.Parameter.POSITIONAL_ONLY)  # the enum of parameter kinds
    try:
        return inspect.Signature(
            [
                inspect.Parameter(name, kinds(kind), default=None if has_default else inspect.Parameter.empty)
                for name, kind, has_default in parameters
            ]
        )
    except (TypeError, ValueError):  # not a list of [str, int, bool], or not a valid signature
        return None


def is_mirror(value) -> bool:
    """Whether ``value`` is a module standing for one of the other side's (not PyTorch's own class)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.nn.Module) and "_peer" in value.__dict__


# --- proxies ----------------------------------------------------------------------------------------------------


class Remote:
    """An object of the other side's, by its handle there."""

    def __init__(self, peer: Peer, handle: int, info: dict):
        self._peer, self._handle, self._info = peer, handle, info
        self.__name__ = self.__qualname__ = str(info.get("name"))
        signature = signature_from(info.get("parameters"))
        if signature is not None:  # a check names a learner's arguments by it
            self.__signature__ = signature

    def __getattr__(self, name: str):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._peer.getattr(self, name)

    def __call__(self, *args, **kwargs):
        return self._peer.call(self, args, kwargs)

    def __repr__(self) -> str:
        return f"<{self._info.get('kind')} {self.__name__} of the other process>"

    def lend_while_checked(self, parts: dict):
        """``checks.earlier_exercises_replaced``: the learner's code finds ``parts`` under their names."""
        return self._peer.lending_names(parts)


class RemoteFunction(Remote):
    pass


class RemoteClass(Remote):
    pass


class RemoteObject(Remote):
    def __len__(self) -> int:
        return self._peer.getattr(self, "__len__")()

    def __getitem__(self, item):  # iteration too, until the other side's IndexError
        return self._peer.getattr(self, "__getitem__")(item)


PROXIES = {"function": RemoteFunction, "class": RemoteClass, "object": RemoteObject}
_CLASSES: dict[tuple, type] = {}


def mirror_base() -> type:
    """The base class of mirrors of the other side's modules (made once PyTorch is there)."""
    if "mirror" not in _FUNCTIONS:
        import torch

        class Mirror(torch.nn.Module):
            """The other side's module: its parameters and children here, its forward there."""

            def forward(self, *args, **kwargs):
                return self._peer.call(self, args, kwargs)

            def __getattr__(self, name: str):
                try:
                    return torch.nn.Module.__getattr__(self, name)
                except AttributeError:
                    if name.startswith("_"):
                        raise
                return self._peer.getattr(self, name)

            def __repr__(self) -> str:
                return f"<module {type(self).__name__} of the other process>"

            def lend_while_checked(self, parts: dict):
                return self._peer.lending_names(parts)

            def __deepcopy__(self, memo):
                peer = self._peer
                return peer.value_of(peer.request("deepcopy", target=wire.Handle(self._handle)), None)

        _FUNCTIONS["mirror"] = Mirror
    return _FUNCTIONS["mirror"]


def named_class(name: str, *bases: type) -> type:
    """A subclass of ``bases`` named as the original's class (checks name a result by ``type(result).__name__``)."""
    if (name, bases) not in _CLASSES:
        _CLASSES[name, bases] = type(name if name.isidentifier() else "Unnamed", bases, {})
    return _CLASSES[name, bases]


_FUNCTIONS: dict = {}


def remote_call_function(torch):
    """The autograd Function of a call to the other side (made once, when PyTorch is there)."""
    if "call" in _FUNCTIONS:
        return _FUNCTIONS["call"]

    class RemoteCall(torch.autograd.Function):
        @staticmethod
        def forward(ctx, peer, fields, box, *inputs):
            reply = peer.request("call", **fields, keep_graph=True)
            box["reply"] = reply
            outputs = [tensor.detach() for tensor in tensors_in(reply.get("value"))]
            ctx.peer, ctx.graph, ctx.count = peer, reply.get("graph"), len(inputs)
            if ctx.graph is not None:
                weakref.finalize(ctx, peer.released.append, ctx.graph)
            flags = reply.get("differentiable") or [tensor.is_floating_point() for tensor in outputs]
            ctx.mark_non_differentiable(*[tensor for tensor, flag in zip(outputs, flags, strict=True) if not flag])
            return (*outputs, torch.zeros(()))  # a Function must return a tensor; this last one stands for none

        @staticmethod
        def backward(ctx, *grads):
            grads = grads[:-1]
            if ctx.graph is None:
                return (None, None, None, *([None] * ctx.count))
            reply = ctx.peer.request("backward", graph=ctx.graph, grads=list(grads))
            found = list(reply["value"])
            if len(found) != ctx.count:
                raise RuntimeError("the other side returned gradients for the wrong number of inputs")
            return (None, None, None, *found)

    _FUNCTIONS["call"] = RemoteCall
    return RemoteCall
