"""Reference code of notebook 05, positional encoding: the sinusoidal encoding.

Notebook 07 imports it, and notebook 07's reference Transformer adds it to the embeddings. A student release
holds this module from assignment 06 on: the module's name says which notebook teaches it.
"""

import torch

__all__ = ["sinusoidal_encoding"]


def sinusoidal_encoding(length: int, d: int, n: float = 10000.0) -> torch.Tensor:
    """Notebook 05's positional encoding as reference code, (length, d): each pair of columns is the point
    e^{i k ω} on the unit circle, stored as (sin, cos)."""
    frequencies = n ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.outer(torch.arange(length, dtype=torch.float64), frequencies)  # (length, d/2)
    cos_sin = torch.view_as_real(torch.polar(torch.ones_like(angles), angles))  # (length, d/2, 2): cos, sin
    return cos_sin.flip(-1).reshape(length, d).float()
