"""Reference code of notebook 02, queries, keys and values: scaled dot-product attention, by PyTorch.

Notebooks 03 to 05 import it. A student release holds this module from assignment 03 on: the module's name says
which notebook teaches it (autograder/release.py reads the number from there).
"""

import torch
import torch.nn.functional as F

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
    v of different lengths. Every query must see at least one key: what a query with none should get is notebook
    04's exercise (masked attention), so this refuses it.
    """
    if k.shape[-2] != v.shape[-2]:
        # PyTorch's own kernel for 4-D inputs may accept this and return numbers: refuse it here instead.
        raise ValueError(
            f"attention: {k.shape[-2]} keys but {v.shape[-2]} values (k {tuple(k.shape)}, v {tuple(v.shape)}). "
            "Every key needs its value: take k and v from the same sequence."
        )
    if mask is not None and not mask.any(dim=-1).all():
        raise ValueError(
            "attention: under this mask some query may attend to no key at all. The reference attention does "
            "not handle such rows: what they should give is notebook 04's exercise, masked attention."
        )
    n_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    identity = torch.eye(n_k, dtype=q.dtype).expand(*batch, n_k, n_k)  # (..., n_k, n_k)
    # With the identity as values, each output row is that query's row of weights.
    weights = F.scaled_dot_product_attention(q, k, identity, attn_mask=mask, scale=scale)  # (..., n_q, n_k)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale), weights  # (..., n_q, d_v)
