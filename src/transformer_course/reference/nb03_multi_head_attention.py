"""Reference code of notebook 03, multi-head attention: PyTorch's nn.MultiheadAttention with the course's
conventions.

Notebooks 06 and 07 import it, and the reference layers of notebooks 06 and 07 are made of it. A student release
holds this module from assignment 04 on: the module's name says which notebook teaches it.
"""

import torch
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
