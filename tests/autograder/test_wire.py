"""What crosses between the judge and the student's process (autograder/verification/wire.py): plain values, as
they were, and nothing else."""

import pytest
import torch

from autograder.verification import wire

UNKNOWN_TAG = '[{"§": "pickle", "data": ""}, []]'.encode()


@pytest.mark.parametrize(
    "value",
    [
        None,
        [True, 3, -2.5, "naïve 🙂", b"\x00\xff"],
        {"tuple": (1, (2, 3)), "set": {4, 5}, "frozen": frozenset({6}), (7, 8): "a tuple as a key"},
        [torch.float16, torch.Size([2, 3]), wire.Handle(-4)],
        float("inf"),
    ],
)
def test_plain_values_arrive_as_they_were_sent(value):
    assert wire.decode(wire.encode(value)) == value


def test_tensors_arrive_with_their_values_dtype_shape_and_whether_they_need_gradients():
    sent = [torch.randn(2, 3, requires_grad=True), torch.tensor([True, False]), torch.zeros(0, 4, dtype=torch.int64)]
    received = wire.decode(wire.encode(sent))
    for before, after in zip(sent, received, strict=True):
        assert type(after) is torch.Tensor and after.dtype == before.dtype and after.shape == before.shape
        assert torch.equal(after, before.detach()) and after.requires_grad == before.requires_grad


def test_a_tensor_subclass_arrives_as_a_plain_tensor():
    class Sneaky(torch.Tensor):
        pass

    received = wire.decode(wire.encode(torch.nn.Parameter(torch.ones(2))))
    assert type(received) is torch.Tensor
    with pytest.raises(wire.WireError):
        wire.encode(torch.ones(2).as_subclass(Sneaky))  # only exact types are plain data


def test_a_generator_arrives_by_its_state():
    generator = torch.Generator().manual_seed(3)
    copy = wire.decode(wire.encode(generator))
    assert torch.equal(torch.rand(3, generator=copy), torch.rand(3, generator=generator))


@pytest.mark.parametrize("value", [print, object(), type("Number", (int,), {})(3), [lambda: 0]])
def test_anything_but_plain_data_is_refused(value):
    with pytest.raises(wire.WireError):
        wire.encode(value)


def test_values_nested_too_deep_are_refused():
    nested: list = []
    for _ in range(70):
        nested = [nested]
    with pytest.raises(wire.WireError):
        wire.encode(nested)


@pytest.mark.parametrize(
    "message",
    [
        b"",
        wire.HEADER.pack(5) + b"[1, 2",
        wire.HEADER.pack(len(UNKNOWN_TAG)) + UNKNOWN_TAG,
        wire.HEADER.pack(wire.MAX_STRUCTURE + 1) + b"[",
    ],
    ids=["empty", "broken JSON", "unknown tag", "too much structure"],
)
def test_a_malformed_or_oversized_message_is_a_wire_error(message):
    with pytest.raises(wire.WireError):
        wire.decode(message)
