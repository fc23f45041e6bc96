"""Reference code of notebook 10, the decoder-only language model: the GPT block and the GPT model that notebook
11 uses.

The block holds its parameters in the course's modules (notebook 03's MultiHeadAttention, LayerNorm, two nn.Linear)
and computes with PyTorch's nn.TransformerEncoderLayer (pre-LN, exact GELU, a causal mask), so that it shows
little; the model shows its structure. A student release holds this module from assignment 11 on: the module's
name says which notebook teaches it.
"""

import torch
from torch import nn

from .nb03_multi_head_attention import MultiHeadAttention
from .nb06_transformer_block import LayerNorm
from .pytorch_layers import attention_parameters, sharing_parameters

__all__ = ["GPT", "GPTBlock"]

INIT_STD = 0.02  # Hugging Face's GPT-2 initialisation of both embedding tables


class GPTBlock(nn.Module):
    """Notebook 10's block as reference code: x + attention(ln_1(x)) under a causal mask, then x + mlp(ln_2(x)),
    with mlp = Linear(d, 4d), exact GELU, Linear(4d, d).

    forward(x): x (batch, seq, d_model) → (batch, seq, d_model); position t sees positions 0 to t only.
    """

    def __init__(self, d_model: int, num_heads: int):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = LayerNorm(d_model), LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
        template = nn.TransformerEncoderLayer(
            d_model, num_heads, 4 * d_model, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        parameters = attention_parameters(self.attention, "self_attn") | {
            "norm1.weight": self.ln_1.gain,
            "norm1.bias": self.ln_1.bias,
            "norm2.weight": self.ln_2.gain,
            "norm2.bias": self.ln_2.bias,
            "linear1.weight": self.mlp[0].weight,
            "linear1.bias": self.mlp[0].bias,
            "linear2.weight": self.mlp[2].weight,
            "linear2.bias": self.mlp[2].bias,
        }
        self._pytorch = [sharing_parameters(template, parameters)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        seq = x.shape[1]
        hidden = torch.ones(seq, seq, dtype=torch.bool, device=x.device).triu(1)  # (seq, seq): True = future
        return self._pytorch[0](x, src_mask=hidden, is_causal=True)  # (batch, seq, d_model)


class GPT(nn.Module):
    """Notebook 10's decoder-only language model as reference code.

    Token ids (batch, seq) to logits (batch, seq, vocab): token embeddings plus learned position embeddings (both
    initialised N(0, 0.02²)), num_layers GPT blocks, a final layer norm, and an output layer whose weight is the
    token embedding table itself (tied). seq may be at most block_size.
    """

    def __init__(self, vocab_size: int, block_size: int, d_model: int, num_heads: int, num_layers: int):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        for table in (self.token_embedding, self.position_embedding):
            nn.init.normal_(table.weight, std=INIT_STD)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight  # one Parameter for both: tied

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"a sequence of {seq} tokens is longer than block_size = {self.block_size}")
        positions = torch.arange(seq, device=ids.device)  # (seq,)
        x = self.token_embedding(ids) + self.position_embedding(positions)  # (batch, seq, d_model)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))  # (batch, seq, vocab)
