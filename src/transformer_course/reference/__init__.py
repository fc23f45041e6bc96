"""Reference building blocks that later notebooks use in place of earlier exercises.

A notebook never needs a learner's answer from an earlier notebook; checks also use these as oracles and
stand-ins. Attention, layer norm, the feed-forward network and the encoder and decoder layers compute with
PyTorch's own modules, so they reveal no exercise. The encoder and decoder stacks and the full Transformer
(notebooks 06 and 07) do show their structure; README.md tells instructors.
"""

import torch
import torch.nn.functional as F
from torch import nn


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


def pytorch_mask(mask: torch.Tensor | None, batch: int, n_q: int, n_k: int, num_heads: int) -> torch.Tensor | None:
    """The course's mask (True = may attend, broadcastable to (batch, n_q, n_k)) as PyTorch's layers want it:
    True = hidden, one (n_q, n_k) matrix per batch element and head."""
    if mask is None:
        return None
    return (~mask.expand(batch, n_q, n_k)).repeat_interleave(num_heads, dim=0)  # (batch * heads, n_q, n_k)


def source_mask(src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Notebook 04's padding mask for token ids: (batch, 1, n_src), True at the source's real words."""
    return (src != pad_id).unsqueeze(-2)


def target_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Notebook 04's decoder mask for token ids: (batch, n_tgt, n_tgt), True where position i may see
    position j: j <= i and j is not padding."""
    n = tgt.shape[-1]
    causal = torch.ones(n, n, dtype=torch.bool, device=tgt.device).tril()  # (n_tgt, n_tgt)
    return causal & (tgt != pad_id).unsqueeze(-2)


def pytorch_masks(
    mask: torch.Tensor | None, batch: int, n_q: int, n_k: int, num_heads: int
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The course's mask as PyTorch's layers take it fastest: (attn_mask, key_padding_mask), True = hidden.

    A mask that is one pattern shared by every sentence (such as the causal mask, or none) combined with each
    sentence's padding goes as that pattern (n_q, n_k) and the padding (batch, n_k): PyTorch's attention is
    several times faster so than with one (n_q, n_k) matrix per sentence and head, the general form.
    """
    if mask is None:
        return None, None
    full = mask.expand(batch, n_q, n_k)
    real_keys = full.any(dim=-2)  # (batch, n_k): keys that some query may see
    shared = (full | ~real_keys.unsqueeze(-2)).all(dim=0)  # (n_q, n_k)
    if not torch.equal(full, shared & real_keys.unsqueeze(-2)):
        return pytorch_mask(mask, batch, n_q, n_k, num_heads), None
    return (None if shared.all() else ~shared), ~real_keys


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


def _sharing_parameters(template: nn.Module, parameters: dict[str, nn.Parameter]) -> nn.Module:
    """Make PyTorch's layer compute with our parameters: the very same tensors, so that training ours trains it.

    The caller keeps the layer in a list, so that PyTorch does not register its parameters a second time.
    """
    for name, parameter in parameters.items():
        owner, _, attribute = name.rpartition(".")
        setattr(template.get_submodule(owner), attribute, parameter)
    return template


def norm_and_feed_forward_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """An encoder or decoder layer's layer norms (gain, bias) and feed-forward linears under the names
    nn.Transformer*Layer gives them: norm1 to norm3 where the layer has them, linear1 and linear2."""
    names = {}
    for number in (1, 2, 3):
        if hasattr(layer, f"norm{number}"):
            norm = getattr(layer, f"norm{number}")
            names |= {f"norm{number}.weight": norm.gain, f"norm{number}.bias": norm.bias}
    for number in (1, 2):
        linear = getattr(layer.feed_forward, f"linear{number}")
        names |= {f"linear{number}.weight": linear.weight, f"linear{number}.bias": linear.bias}
    return names


def encoder_layer_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """A course encoder layer's parameters under the names nn.TransformerEncoderLayer gives them."""
    attention = layer.self_attention.attention
    return {
        "self_attn.in_proj_weight": attention.in_proj_weight,
        "self_attn.in_proj_bias": attention.in_proj_bias,
        "self_attn.out_proj.weight": attention.out_proj.weight,
        "self_attn.out_proj.bias": attention.out_proj.bias,
    } | norm_and_feed_forward_parameters(layer)


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
        self._pytorch = [_sharing_parameters(template, encoder_layer_parameters(self))]

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        hidden, padding = pytorch_masks(mask, x.shape[0], x.shape[1], x.shape[1], self.self_attention.num_heads)
        return self._pytorch[0](x, src_mask=hidden, src_key_padding_mask=padding)


class Encoder(nn.Module):
    """Notebook 06's encoder stack as reference code: num_layers encoder layers, and a final layer
    normalisation when the layers normalise first (pre-LN), as nn.TransformerEncoder(norm=...) does."""

    def __init__(self, num_layers: int, d_model: int, num_heads: int, d_ff: int, norm_first: bool = False):
        super().__init__()
        self.layers = nn.ModuleList(EncoderLayer(d_model, num_heads, d_ff, norm_first) for _ in range(num_layers))
        self.norm = LayerNorm(d_model) if norm_first else None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, mask)
        return x if self.norm is None else self.norm(x)


def sinusoidal_encoding(length: int, d: int, n: float = 10000.0) -> torch.Tensor:
    """Notebook 05's positional encoding as reference code, (length, d): each pair of columns is the point
    e^{i k ω} on the unit circle, stored as (sin, cos)."""
    frequencies = n ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    angles = torch.outer(torch.arange(length, dtype=torch.float64), frequencies)  # (length, d/2)
    cos_sin = torch.view_as_real(torch.polar(torch.ones_like(angles), angles))  # (length, d/2, 2): cos, sin
    return cos_sin.flip(-1).reshape(length, d).float()


def decoder_layer_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """A course decoder layer's parameters under the names nn.TransformerDecoderLayer gives them."""
    names = {}
    for ours, theirs in (("self_attention", "self_attn"), ("cross_attention", "multihead_attn")):
        attention = getattr(layer, ours).attention
        names |= {
            f"{theirs}.in_proj_weight": attention.in_proj_weight,
            f"{theirs}.in_proj_bias": attention.in_proj_bias,
            f"{theirs}.out_proj.weight": attention.out_proj.weight,
            f"{theirs}.out_proj.bias": attention.out_proj.bias,
        }
    return names | norm_and_feed_forward_parameters(layer)


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
        self._pytorch = [_sharing_parameters(template, decoder_layer_parameters(self))]

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
