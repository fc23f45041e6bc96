"""What an untouched exercise looks like to a check: a function or a class that raises NotImplementedError."""

from torch import nn


def raise_not_implemented(*args, **kwargs):
    raise NotImplementedError()


class StubModule(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()
