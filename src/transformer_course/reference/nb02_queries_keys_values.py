"""Reference code of notebook 02, queries, keys and values: scaled dot-product attention, by PyTorch.

Notebooks 03 to 05 import it. A student release holds this module from assignment 03 on: the module's name says
which notebook teaches it (autograder/release.py reads the number from there).
"""

import torch

from .pytorch_layers import pytorch_attention

__all__ = ["attention"]


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scaled dot-product attention returning (outputs, weights), by PyTorch.

    q: (..., n_q, d_k), k: (..., n_k, d_k), v: (..., n_k, d_v); mask: boolean, broadcastable to
    (..., n_q, n_k), True where a query may attend to a key. scale defaults to 1/sqrt(d_k).
    Returns outputs (..., n_q, d_v) and weights (..., n_q, n_k). Every key needs its value, so this refuses k and
    v of different lengths (``pytorch_attention`` does). Every query must see at least one key: what a query with
    none should get is notebook 04's exercise (masked attention), so this refuses it.
    """
    if mask is not None and not mask.any(dim=-1).all():
        raise ValueError(
            "attention: under this mask some query may attend to no key at all. The reference attention does "
            "not handle such rows: what they should give is notebook 04's exercise, masked attention."
        )
    return pytorch_attention(q, k, v, mask=mask, scale=scale)
