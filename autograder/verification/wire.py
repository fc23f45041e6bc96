"""The only way values cross between the judge and the student's process: plain data, framed on a pipe.

A message is a tree of None, booleans, numbers, strings, bytes, lists, tuples, dicts, sets, PyTorch dtypes,
sizes, tensors and random generators (by their state). It travels as JSON (containers other than lists are
tagged) followed by each tensor's raw bytes, with its dtype and shape in the JSON. Decoding builds nothing else:
no pickle, no class looked up by a name the sender chose, no code run. A tensor arrives as a plain
``torch.Tensor`` whatever the sender's tensor was.

References to objects that stay on one side (a learner's function, a module) travel as ``Handle`` values: a number
that means something only to the side that made it.

Both sides use this file: the judge imports it, the student's process (``student.py``) loads it by its path, since
it runs with ``python -I`` and sees no other file of the autograder. Only the standard library is imported here;
PyTorch is imported when a message holds a tensor (a program of the tests' that never uses PyTorch never loads it).
"""

import json
import struct
import sys
from dataclasses import dataclass

HEADER = struct.Struct("<Q")  # the length of what follows
TAG = "§"  # marks a tagged container or value in the JSON; a dict's keys are never bare, so no clash is possible
MAX_MESSAGE = 2**28  # bytes: a larger message is a broken or hostile stream (the checks' tensors are far smaller)
# Bytes of a message's JSON at most: its structure, without the tensors' bytes. Decoding JSON builds a Python object
# per number, so a message of a few hundred MiB of it could take the judge's memory and seconds past the deadline.
MAX_STRUCTURE = 2**24


# Exact types a message may hold as they are. A list of only these (the ids of a text, say) crosses in one step,
# its items' types read in one pass in C, where each item would otherwise take a call of its own.
SCALARS = frozenset({type(None), bool, int, float, str})


def only_scalars(items) -> bool:
    """Whether every item of a list, tuple or set is a SCALARS value (exact types: no subclass)."""
    return set(map(type, items)) <= SCALARS


class WireError(ValueError):
    """A message that is not plain data, or a stream that broke."""


@dataclass(frozen=True)
class Handle:
    """An object that stays in the process that owns it; the number names it there."""

    number: int


def encode(value) -> bytes:
    """The message for ``value``, or WireError when it holds anything but plain data (or handles)."""
    tensors: list = []
    tree = _tree(value, tensors, depth=0)
    header = json.dumps([tree, [_tensor_header(tensor) for tensor in tensors]], allow_nan=True).encode("utf-8")
    parts = [HEADER.pack(len(header)), header]
    for tensor in tensors:
        raw = _tensor_bytes(tensor)
        parts += [HEADER.pack(len(raw)), raw]
    return b"".join(parts)


def _tree(value, tensors: list, depth: int):
    if depth > 64:
        raise WireError("a value nested more than 64 levels deep")
    kind = type(value)  # exact types only: a subclass of int or str may behave as anything
    if value is None or kind in (bool, int, float, str):
        return value
    if kind in (list, tuple, set, frozenset):
        items = list(value) if only_scalars(value) else [_tree(item, tensors, depth + 1) for item in value]
        return items if kind is list else {TAG: kind.__name__, "items": items}
    if kind is dict:
        pairs = [[_tree(k, tensors, depth + 1), _tree(v, tensors, depth + 1)] for k, v in value.items()]
        return {TAG: "dict", "items": pairs}
    if kind is bytes:
        return {TAG: "bytes", "hex": value.hex()}
    if kind is Handle:
        return {TAG: "handle", "number": value.number}
    torch = sys.modules.get("torch")
    if torch is not None:
        if kind in (torch.Tensor, torch.nn.Parameter):
            tensors.append(value)
            return {TAG: "tensor", "index": len(tensors) - 1}
        if kind is torch.dtype:
            return {TAG: "dtype", "name": str(value).removeprefix("torch.")}
        if kind is torch.Size:
            return {TAG: "size", "items": [int(item) for item in value]}
        if kind is torch.Generator:  # its state: the other side draws from a copy and sends the state back
            tensors.append(value.get_state())
            return {TAG: "generator", "index": len(tensors) - 1}
    raise WireError(f"a {kind.__name__} is not plain data")


def _tensor_header(tensor) -> dict:
    return {
        "dtype": str(tensor.dtype).removeprefix("torch."),
        "shape": list(tensor.shape),
        "requires_grad": bool(tensor.requires_grad),
    }


def _tensor_bytes(tensor) -> bytes:
    import torch

    flat = tensor.detach().contiguous().reshape(-1)
    if flat.dtype == torch.bool:
        flat = flat.to(torch.uint8)
    return flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b""


def decode(message: bytes):
    """The plain value of a message made by ``encode``; WireError for anything else."""
    try:
        (length,) = HEADER.unpack_from(message, 0)
        if length > MAX_STRUCTURE:
            raise WireError(f"a message whose structure takes {length} bytes")
        header = json.loads(message[HEADER.size : HEADER.size + length].decode("utf-8"))
        tree, tensor_headers = header
        offset = HEADER.size + length
        tensors = []
        for description in tensor_headers:
            (size,) = HEADER.unpack_from(message, offset)
            offset += HEADER.size
            tensors.append(_tensor(description, message[offset : offset + size]))
            offset += size
        return _value(tree, tensors, depth=0)
    except WireError:
        raise
    except Exception as error:  # any malformed message, whatever it broke
        raise WireError(f"a malformed message ({type(error).__name__}: {error})") from None


def _value(tree, tensors: list, depth: int):
    if depth > 64:
        raise WireError("a value nested more than 64 levels deep")
    if tree is None or type(tree) in (bool, int, float, str):
        return tree
    if type(tree) is list:
        return tree if only_scalars(tree) else [_value(item, tensors, depth + 1) for item in tree]
    tag = tree[TAG]
    if tag in ("tuple", "set", "frozenset"):
        items = tree["items"]
        items = items if only_scalars(items) else [_value(item, tensors, depth + 1) for item in items]
        return {"tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
    if tag == "dict":
        return {_value(k, tensors, depth + 1): _value(v, tensors, depth + 1) for k, v in tree["items"]}
    if tag == "bytes":
        return bytes.fromhex(tree["hex"])
    if tag == "handle":
        return Handle(int(tree["number"]))
    if tag == "tensor":
        return tensors[int(tree["index"])]
    import torch

    if tag == "dtype":
        return _dtype(torch, tree["name"])
    if tag == "size":
        return torch.Size([int(item) for item in tree["items"]])
    if tag == "generator":
        return torch.Generator().set_state(tensors[int(tree["index"])])
    raise WireError(f"unknown tag {tag!r}")


def _dtype(torch, name: str):
    dtype = getattr(torch, str(name), None)
    if type(dtype) is not torch.dtype:
        raise WireError(f"{name!r} is not a dtype")
    return dtype


def _tensor(description: dict, raw: bytes):
    import torch

    dtype = _dtype(torch, description["dtype"])
    shape = [int(size) for size in description["shape"]]
    stored = torch.uint8 if dtype == torch.bool else dtype
    if raw:
        flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8).view(stored)
    else:
        flat = torch.empty(0, dtype=stored)
    tensor = flat.reshape(shape).to(dtype)
    return tensor.requires_grad_() if description.get("requires_grad") and tensor.is_floating_point() else tensor


class Pipe:
    """Messages over a pair of file descriptors: each a length, then the message."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def send(self, value) -> None:
        self.send_bytes(encode(value))

    def send_bytes(self, message: bytes) -> None:
        import os

        data = HEADER.pack(len(message)) + message
        while data:
            written = os.write(self.write_fd, data)
            data = data[written:]

    def receive(self):
        return decode(self.receive_bytes())

    def receive_bytes(self) -> bytes:
        (length,) = HEADER.unpack(self._read(HEADER.size))
        if length > MAX_MESSAGE:
            raise WireError(f"a message of {length} bytes")
        return self._read(length)

    def wait_readable(self) -> None:
        """Called before each read; the judge's end waits there with a deadline (``judge.DeadlinePipe``)."""

    def _read(self, size: int) -> bytes:
        import os

        chunks, left = [], size
        while left:
            self.wait_readable()
            chunk = os.read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError("the other side closed the pipe")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
