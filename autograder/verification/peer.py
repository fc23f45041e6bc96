"""Calls between the judge and the student's process, in both directions, with PyTorch's gradients across.

Each side is a ``Peer`` on one pipe (``wire.Pipe``). A request is ``{"op": ..., "id": n, ...}``; its reply is
``{"reply": n, "value": ...}`` or ``{"reply": n, "error": [type, message]}``. While a side waits for its reply it
answers the other side's requests, so calls nest: the judge calls the learner's function, which calls back a
correct earlier exercise that the judge lent it, and so on.

A call whose inputs need gradients runs as one node of PyTorch's graph on the caller's side
(``RemoteCall``): the callee keeps its own graph of the call, and the node's backward asks the callee for the
gradients of the call's inputs (the tensors among its arguments, and the parameters the caller names) given the
gradients of its outputs. So ``loss.backward()`` in the judge reaches the parameters of a learner's module in the
student's process, and the other way round.

The judge imports this file; the student's process loads it by its path, as it loads ``wire.py``.
"""

import builtins
import itertools
import weakref
from collections import OrderedDict

# Graphs of calls kept for a later backward, at most: each is dropped when the other side's node of it is freed
# (gradcheck keeps one for dozens of calls), and the oldest beyond this are dropped whatever the other side does.
MAX_GRAPHS = 4096


class RemoteError(Exception):
    """The other side reported an error: ``kind`` is its exception's class name there."""

    def __init__(self, kind: str, message: str):
        Exception.__init__(self, message)
        self.kind, self.message = kind, message

    def __str__(self) -> str:
        return self.message


_KINDS: dict[str, type] = {}


def remote_error(kind: str, message: str) -> RemoteError:
    """The other side's error as an exception here that is also of the built-in class it names, if any
    (``except NotImplementedError`` catches a learner's stub across the pipe). KeyboardInterrupt and SystemExit
    become plain errors here: they stopped the other side's code, not this side."""
    if kind not in _KINDS:
        builtin = getattr(builtins, kind, None)
        bases: tuple[type, ...] = (RemoteError,)
        if isinstance(builtin, type) and issubclass(builtin, Exception):
            bases = (RemoteError, builtin)
        try:
            _KINDS[kind] = type(kind, bases, {"__init__": RemoteError.__init__, "__str__": RemoteError.__str__})
        except TypeError:  # a built-in class whose layout cannot be combined
            _KINDS[kind] = type(kind, (RemoteError,), {})
    return _KINDS[kind](kind, message)


def describe(error: BaseException, limit: int = 2000) -> list[str]:
    """An error as [its type's name, its message], for a reply."""
    if isinstance(error, RemoteError):
        return [error.kind, str(error)[:limit]]
    try:
        message = str(error)
    except BaseException:  # noqa: B036 - an exception whose str() fails is still an error
        message = ""
    return [type(error).__name__, message[:limit]]


def tensors_in(tree, found: list | None = None) -> list:
    """The tensors of a plain value, depth first, in a fixed order (``with_tensors`` puts others in their places)."""
    import torch

    found = [] if found is None else found
    if type(tree) in (torch.Tensor, torch.nn.Parameter):
        found.append(tree)
    elif type(tree) in (list, tuple):
        for item in tree:
            tensors_in(item, found)
    elif type(tree) is dict:
        for item in tree.values():
            tensors_in(item, found)
    return found


def with_tensors(tree, replacements):
    """``tree`` with its tensors replaced, in ``tensors_in``'s order, by the items of the iterator ``replacements``."""
    import torch

    if type(tree) in (torch.Tensor, torch.nn.Parameter):
        return next(replacements)
    if type(tree) in (list, tuple):
        return type(tree)(with_tensors(item, replacements) for item in tree)
    if type(tree) is dict:
        return {key: with_tensors(item, replacements) for key, item in tree.items()}
    return tree


class Peer:
    """One side of the pipe. Subclasses say how to answer a request (``answer``) and may wait with a deadline."""

    def __init__(self, pipe):
        self.pipe = pipe
        self._ids = itertools.count(1)
        self.graphs: OrderedDict[int, tuple[list, list]] = OrderedDict()  # calls answered with a graph kept
        self._graph_ids = itertools.count(1)
        self.released: list[int] = []  # graphs of the other side whose nodes here were freed: it may drop them

    def receive(self):
        return self.pipe.receive()

    def request(self, op: str, **fields) -> dict:
        """Send a request and return its reply, answering the other side's requests meanwhile."""
        number = next(self._ids)
        released, self.released = self.released, []
        self.pipe.send({"op": op, "id": number, "release": released, **fields})
        while True:
            message = self.receive()
            if type(message) is not dict:
                raise RemoteError("WireError", "a message that is not a request or a reply")
            if "reply" in message:
                if message["reply"] == number:
                    if message.get("error") is not None:
                        kind, text = message["error"]
                        raise remote_error(str(kind), str(text))
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
        self.pipe.send({"reply": message.get("id"), **reply})

    def answer(self, message: dict) -> dict:
        raise NotImplementedError

    # --- gradients across ------------------------------------------------------------------------------------

    def call_with_gradients(self, fields: dict, inputs: list, make_value):
        """Make the call of ``fields`` as one node of the local graph over ``inputs`` (tensors that need gradients:
        those of the arguments, then the parameters named in ``fields``). ``make_value(reply, outputs)`` turns the
        reply into the caller's value, the node's outputs in place of the reply's tensors."""
        import torch

        box: dict = {}
        *outputs, _ = remote_call_function(torch).apply(self, fields, box, *inputs)
        return make_value(box["reply"], outputs)

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
