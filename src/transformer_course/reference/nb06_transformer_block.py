"""Reference code of notebook 06, the transformer block: layer normalisation, the feed-forward network, the
encoder layer and the encoder stack.

Notebook 07 imports them, and notebook 07's reference layers and model are made of them. Each computes with
PyTorch's own modules (F.layer_norm, nn.TransformerEncoderLayer, nn.TransformerEncoder), so that the encoder stack
does not show notebook 07's decoder stack either. A student release holds this module from assignment 07 on: the
module's name says which notebook teaches it.
"""

import torch
import torch.nn.functional as F
from torch import nn

from .nb03_multi_head_attention import MultiHeadAttention
from .pytorch_layers import encoder_layer_parameters, pytorch_masks, sharing_parameters

__all__ = ["Encoder", "EncoderLayer", "FeedForward", "LayerNorm"]


class LayerNorm(nn.Module):
    """Notebook 06's layer normalisation as reference code: a learnable gain and bias around F.layer_norm."""

    def __init__(self, d: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.gain = nn.Parameter(torch.ones(d))
        self.bias = nn.Parameter(torch.zeros(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.gain.shape, self.gain, self.bias, self.eps)


class FeedForward(nn.Module):
    """Notebook 06's position-wise feed-forward network as reference code: linear2(relu(linear1(x)))."""

    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.linear1 = nn.Linear(d_model, d_ff)
        self.linear2 = nn.Linear(d_ff, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(F.relu(self.linear1(x)))


class EncoderLayer(nn.Module):
    """Notebook 06's encoder layer as reference code: self-attention and feed-forward, each with a residual
    connection and layer normalisation, after (post-LN) or before (pre-LN, norm_first=True) the sublayer.

    It holds its parameters in the course's modules and computes with PyTorch's nn.TransformerEncoderLayer.
    forward(x, mask=None): x (batch, seq, d_model); mask broadcastable to (batch, seq, seq).
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)
        template = nn.TransformerEncoderLayer(
            d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
        )
        self._pytorch = [sharing_parameters(template, encoder_layer_parameters(self))]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        hidden, padding = pytorch_masks(mask, x.shape[0], x.shape[1], x.shape[1], self.self_attention.num_heads)
        return self._pytorch[0](x, src_mask=hidden, src_key_padding_mask=padding)


class Encoder(nn.Module):
    """Notebook 06's encoder stack as reference code: num_layers encoder layers, and a final layer normalisation
    (self.norm) when the layers normalise first (pre-LN), None for post-LN, as nn.TransformerEncoder(norm=...) has.

    It holds its parameters in the course's modules and computes with PyTorch's nn.TransformerEncoder, made of the
    layers' own PyTorch layers. forward(x, mask=None): x (batch, seq, d_model); mask broadcastable to
    (batch, seq, seq).
    """

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        final_norm = nn.LayerNorm(d_model) if norm_first else None  # pre-LN layers leave their output unnormalised
        template = nn.TransformerEncoder(
            self.layers[0]._pytorch[0], num_layers, norm=final_norm, enable_nested_tensor=False
        )
        template.layers = nn.ModuleList(layer._pytorch[0] for layer in self.layers)
        self.norm = None if template.norm is None else LayerNorm(d_model)
        if self.norm is not None:
            sharing_parameters(template, {"norm.weight": self.norm.gain, "norm.bias": self.norm.bias})
        self._pytorch = [template]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        hidden, padding = pytorch_masks(
            mask, x.shape[0], x.shape[1], x.shape[1], self.layers[0].self_attention.num_heads
        )
        return self._pytorch[0](x, mask=hidden, src_key_padding_mask=padding)
