"""Reference code of notebook 07, the decoder and the full model: the decoder layer, the decoder stack and the
encoder-decoder Transformer that notebook 08 trains.

The decoder layer computes with PyTorch's nn.TransformerDecoderLayer; the stack and the model show their
structure. A student release holds this module from assignment 08 on: the module's name says which notebook
teaches it.
"""

import torch
from torch import nn

from .nb03_multi_head_attention import MultiHeadAttention
from .nb05_positional_encoding import sinusoidal_encoding
from .nb06_transformer_block import Encoder, FeedForward, LayerNorm
from .pytorch_layers import decoder_layer_parameters, pytorch_masks, sharing_parameters

__all__ = ["Decoder", "DecoderLayer", "Transformer"]


class DecoderLayer(nn.Module):
    """Notebook 07's decoder layer as reference code: masked self-attention, cross-attention to the encoder's
    output (queries from the decoder, keys and values from the memory), and the feed-forward network, each
    with a residual connection and layer normalisation (post-LN, or pre-LN with norm_first=True).

    forward(x, memory, self_mask=None, memory_mask=None): x (batch, n_tgt, d_model), memory
    (batch, n_src, d_model); self_mask broadcastable to (batch, n_tgt, n_tgt), memory_mask to
    (batch, n_tgt, n_src). Computes with PyTorch's nn.TransformerDecoderLayer.
    """

    def __init__(self, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.self_attention = MultiHeadAttention(d_model, num_heads)
        self.cross_attention = MultiHeadAttention(d_model, num_heads)
        self.feed_forward = FeedForward(d_model, d_ff)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)
        template = nn.TransformerDecoderLayer(
            d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first
        )
        self._pytorch = [sharing_parameters(template, decoder_layer_parameters(self))]

    def cross_attention_weights(self, x, memory, self_mask=None, memory_mask=None) -> torch.Tensor:
        """The weights (batch, heads, n_tgt, n_src) with which this layer's target positions attend to the
        source when it computes forward(x, memory, self_mask, memory_mask)."""
        if self._pytorch[0].norm_first:
            x = x + self.self_attention(self.norm1(x), mask=self_mask)[0]
            queries = self.norm2(x)
        else:
            queries = self.norm1(x + self.self_attention(x, mask=self_mask)[0])
        return self.cross_attention(queries, context=memory, mask=memory_mask)[1]

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        batch, n_tgt, n_src, heads = x.shape[0], x.shape[1], memory.shape[1], self.self_attention.num_heads
        tgt_mask, tgt_padding = pytorch_masks(self_mask, batch, n_tgt, n_tgt, heads)
        memory_mask, memory_padding = pytorch_masks(memory_mask, batch, n_tgt, n_src, heads)
        return self._pytorch[0](
            x,
            memory,
            tgt_mask=tgt_mask,
            memory_mask=memory_mask,
            tgt_key_padding_mask=tgt_padding,
            memory_key_padding_mask=memory_padding,
        )


class Decoder(nn.Module):
    """Notebook 07's decoder stack as reference code: num_layers decoder layers, and a final layer norm for
    pre-LN, as nn.TransformerDecoder(norm=...) does."""

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(DecoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        for layer in self.layers:
            x = layer(x, memory, self_mask, memory_mask)
        return x if self.norm is None else self.norm(x)


class Transformer(nn.Module):
    """Notebook 07's encoder-decoder as reference code, the model notebook 08 trains.

    Token ids to logits: embeddings (initialised N(0, 1/d_model), scaled by sqrt(d_model)) plus the sinusoidal
    encoding, the encoder and decoder stacks, and a linear map to the target vocabulary. src_mask is the
    source padding mask (batch, 1, n_src); tgt_mask the decoder mask (batch, n_tgt, n_tgt).
    """

    def __init__(
        self,
        src_vocab: int,
        tgt_vocab: int,
        d_model: int = 64,
        num_heads: int = 4,
        d_ff: int = 256,
        num_layers: int = 2,
        norm_first: bool = False,
    ):
        super().__init__()
        self.d_model = d_model
        self.src_embedding = nn.Embedding(src_vocab, d_model)
        self.tgt_embedding = nn.Embedding(tgt_vocab, d_model)
        for table in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(table.weight, std=d_model**-0.5)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.decoder = Decoder(num_layers, d_model, num_heads, d_ff, norm_first)
        self.output = nn.Linear(d_model, tgt_vocab)

    def embed(self, tokens: torch.Tensor, table: nn.Embedding) -> torch.Tensor:
        return table(tokens) * self.d_model**0.5 + sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def encode(self, src: torch.Tensor, src_mask: torch.Tensor | None = None) -> torch.Tensor:
        return self.encoder(self.embed(src, self.src_embedding), src_mask)  # (batch, n_src, d_model)

    def decode(self, tgt, memory, tgt_mask=None, src_mask=None) -> torch.Tensor:
        hidden = self.decoder(self.embed(tgt, self.tgt_embedding), memory, tgt_mask, src_mask)
        return self.output(hidden)  # (batch, n_tgt, tgt_vocab)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None) -> torch.Tensor:
        return self.decode(tgt, self.encode(src, src_mask), tgt_mask, src_mask)

    def cross_attention_weights(self, src, tgt, src_mask=None, tgt_mask=None) -> list[torch.Tensor]:
        """For every decoder layer, the weights (batch, heads, n_tgt, n_src) of its cross-attention: which
        source words each target position looks at when predicting the next word."""
        memory = self.encode(src, src_mask)
        x, weights = self.embed(tgt, self.tgt_embedding), []
        for layer in self.decoder.layers:
            weights.append(layer.cross_attention_weights(x, memory, tgt_mask, src_mask))
            x = layer(x, memory, tgt_mask, src_mask)
        return weights
