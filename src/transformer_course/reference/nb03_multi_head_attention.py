"""Reference code of notebook 03, multi-head attention: PyTorch's nn.MultiheadAttention with the course's
conventions.

Notebooks 06 and 07 import it, and the reference layers of notebooks 06 and 07 are made of it. A student release
holds this module from assignment 04 on: the module's name says which notebook teaches it.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .pytorch_layers import pytorch_mask

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Notebook 03's module as reference code: PyTorch's nn.MultiheadAttention with the course's conventions.

    forward(x, context=None, mask=None): queries from x (batch, n_q, d_model), keys and values from context
    (default x); mask broadcastable to (batch, n_q, n_k), True where a query may attend to a key. Returns
    outputs (batch, n_q, d_model) and the weights of every head (batch, heads, n_q, n_k). Every query must
    see at least one key.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.num_heads = num_heads
        self.attention = nn.MultiheadAttention(d_model, num_heads, dropout=0.0, batch_first=True)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None, mask: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        context = x if context is None else context
        hidden = pytorch_mask(mask, x.shape[0], x.shape[1], context.shape[1], self.num_heads)
        return self.attention(x, context, context, attn_mask=hidden, average_attn_weights=False)

    def project_heads(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Self-attention's first step on its own: x (batch, seq, d_model) to the queries, keys and values of every
        head, each (batch, heads, seq, d_head), by the same projections as forward (notebook 11 caches the keys and
        values)."""
        projected = F.linear(x, self.attention.in_proj_weight, self.attention.in_proj_bias)  # (batch, seq, 3 d_model)
        return tuple(
            part.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)  # (batch, heads, seq, d_head)
            for part in projected.chunk(3, dim=-1)
        )

    def project_output(self, heads: torch.Tensor) -> torch.Tensor:
        """Self-attention's last step on its own: the heads' outputs (batch, heads, seq, d_head) side by side, then
        the output projection, to (batch, seq, d_model)."""
        return self.attention.out_proj(heads.transpose(1, 2).flatten(2))  # (batch, seq, d_model)
