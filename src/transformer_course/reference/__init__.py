"""Reference building blocks that later notebooks use in place of earlier exercises.

They are built from PyTorch's own operations, so importing them reveals no exercise's answer; checks also
use them as oracles. A notebook never needs a learner's answer from an earlier notebook.
"""

import torch
import torch.nn.functional as F


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
    Returns outputs (..., n_q, d_v) and weights (..., n_q, n_k); a query row with no key allowed gets
    zero weights and a zero output.
    """
    n_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    identity = torch.eye(n_k, dtype=q.dtype).expand(*batch, n_k, n_k)  # (..., n_k, n_k)
    # With the identity as values, each output row is that query's row of weights.
    weights = F.scaled_dot_product_attention(q, k, identity, attn_mask=mask, scale=scale)  # (..., n_q, n_k)
    outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)  # (..., n_q, d_v)
    return outputs, weights
