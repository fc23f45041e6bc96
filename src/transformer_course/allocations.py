"""What a computation allocates, seen from inside PyTorch: every tensor that an operation creates, with its size.

Time depends on the machine and on what else runs; the tensors a computation creates do not. Notebook 03 uses
this to show that attention's weights grow as n², and notebook 11 to prove that blockwise attention never builds
an n × n matrix and to measure the memory it holds at once.
"""

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch.utils._python_dispatch import TorchDispatchMode


@dataclass
class Allocations:
    """The tensors created while the probe was on: their shapes and sizes in bytes, in the order they came."""

    shapes: list[tuple[int, ...]] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    peak: int = 0  # the most bytes that the created tensors held at one time
    _alive: int = 0  # the bytes of the created tensors that still exist

    def created(self, tensor: torch.Tensor) -> None:
        """Count a tensor with new storage, and follow it until it is freed."""
        size = tensor.untyped_storage().nbytes()
        self.shapes.append(tuple(tensor.shape))
        self.sizes.append(size)
        self._alive += size
        self.peak = max(self.peak, self._alive)
        weakref.finalize(tensor, self._freed, size)

    def _freed(self, size: int) -> None:
        self._alive -= size

    def add(self, shapes: list, sizes: list, peak: int) -> None:
        """Count what a computation recorded elsewhere (the autograder runs a learner's code in a process of its
        own and records there): its tensors, and its peak on top of what is alive here."""
        self.shapes += [tuple(int(size) for size in shape) for shape in shapes]
        self.sizes += [int(size) for size in sizes]
        self.peak = max(self.peak, self._alive + int(peak))

    @property
    def largest(self) -> int:
        """The bytes of the largest tensor created (0 if none was)."""
        return max(self.sizes, default=0)

    @property
    def largest_shape(self) -> tuple[int, ...] | None:
        return self.shapes[self.sizes.index(self.largest)] if self.sizes else None

    @property
    def total(self) -> int:
        """The bytes of all tensors created, whether or not they were alive at the same time."""
        return sum(self.sizes)


class _Probe(TorchDispatchMode):
    def __init__(self, allocations: Allocations):
        super().__init__()
        self.allocations = allocations

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        inputs = {t.untyped_storage()._cdata for t in _tensors((args, kwargs)) if _has_storage(t)}
        for tensor in _tensors(result):
            # A view or an in-place result shares its input's memory: only new storage is an allocation.
            if _has_storage(tensor) and tensor.untyped_storage()._cdata not in inputs:
                self.allocations.created(tensor)
        return result


def _tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [tensor for item in value for tensor in _tensors(item)]
    if isinstance(value, dict):
        return [tensor for item in value.values() for tensor in _tensors(item)]
    return []


def _has_storage(tensor: torch.Tensor) -> bool:
    return tensor.layout == torch.strided and tensor.device.type != "meta"


_RECORDING: list[Allocations] = []  # the records of the allocations_of calls under way, innermost last


def allocations_of(function: Callable, *args, **kwargs) -> tuple[object, Allocations]:
    """Call ``function(*args, **kwargs)`` and return its result and the tensors it created."""
    allocations = Allocations()
    _RECORDING.append(allocations)
    try:
        with _Probe(allocations):
            result = function(*args, **kwargs)
    finally:
        _RECORDING.pop()
    return result, allocations


def recording() -> Allocations | None:
    """The record that the innermost ``allocations_of`` under way keeps, or None."""
    return _RECORDING[-1] if _RECORDING else None
