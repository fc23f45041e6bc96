"""Reference code of notebook 10, the decoder-only language model: the GPT block, the GPT model, the next-token
distribution and generation without a cache, which notebook 11 uses.

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

__all__ = ["GPT", "GPTBlock", "generate", "next_token_probabilities"]

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


def next_token_probabilities(
    logits: torch.Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> torch.Tensor:
    """Notebook 10's distribution of the next token: logits (batch, vocab) divided by temperature, then top-k, then
    top-p (the order of transformers' generate), renormalised; temperature 0 puts all the probability on the argmax.
    Plain PyTorch: importing transformers would cost every notebook seconds."""
    if temperature == 0:
        return torch.zeros_like(logits).scatter(-1, logits.argmax(dim=-1, keepdim=True), 1.0)  # (batch, vocab)
    scores = logits / temperature  # (batch, vocab)
    if top_k is not None and top_k < scores.shape[-1]:
        kth_best = scores.topk(top_k, dim=-1).values[..., -1:]  # (batch, 1)
        scores = scores.masked_fill(scores < kth_best, float("-inf"))
    if top_p is not None:
        probs, order = scores.softmax(dim=-1).sort(dim=-1, descending=True)  # (batch, vocab) each
        reached = probs.cumsum(dim=-1) - probs >= top_p  # the more probable tokens already hold top_p
        scores = scores.masked_fill(torch.zeros_like(reached).scatter(-1, order, reached), float("-inf"))
    return scores.softmax(dim=-1)  # (batch, vocab)


@torch.no_grad()
def generate(
    model: nn.Module,
    prompt_ids: torch.Tensor,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Notebook 10's generation, without a cache: every new token runs the model on the whole context again (the
    last block_size tokens). prompt_ids (batch, seq) → (batch, seq + max_new_tokens)."""
    ids = prompt_ids  # (batch, seq)
    while ids.shape[1] < prompt_ids.shape[1] + max_new_tokens:
        last = model(ids[:, -model.block_size :])[:, -1]  # (batch, vocab)
        drawn = torch.multinomial(next_token_probabilities(last, temperature, top_k, top_p), 1, generator=generator)
        ids = torch.cat([ids, drawn], dim=1)  # (batch, seq + 1)
    return ids
