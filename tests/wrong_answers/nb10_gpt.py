"""Wrong answers to notebook 10: the GPT block, the GPT model, the next-token loss, and sampling."""

import math

import torch
import torch.nn.functional as F
from torch import nn

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import GPTBlock, next_token_probabilities
from transformer_course.reference import LayerNorm, MultiHeadAttention
from wrong_answers import wrong_answer

ASSIGNMENT = "10_gpt"

# Exercise 1: GPTBlock ------------------------------------------------------------------------------------


@wrong_answer("GPTBlock", message="The attention needs the causal mask")
class GPTBlockWithoutTheCausalMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="must not see the future")
class GPTBlockWithTheMaskInverted(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        future = torch.ones(seq, seq, dtype=torch.bool).triu(1)  # True above the diagonal: the later positions
        x = x + self.attention(self.ln_1(x), mask=~future.T)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="you built post-LN")
class GPTBlockPostLN(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = self.ln_1(x + self.attention(x, mask=causal)[0])
        return self.ln_2(x + self.mlp(x))


@wrong_answer("GPTBlock", message="the residual path carries the normalised x")
class GPTBlockAddingToTheNormalisedX(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = LayerNorm(d_model), LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = self.ln_1(x)
        x = x + self.attention(x, mask=causal)[0]
        x = self.ln_2(x)
        return x + self.mlp(x)


@wrong_answer("GPTBlock", message="ln_1 and ln_2 are swapped")
class GPTBlockWithTheNormsSwapped(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_2(x), mask=causal)[0]
        return x + self.mlp(self.ln_1(x))


@wrong_answer("GPTBlock", message="one and the same LayerNorm")
class GPTBlockWithOneNormForBoth(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1 = self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="the MLP uses ReLU")
class GPTBlockWithReLU(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.ReLU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="the tanh approximation of GELU")
class GPTBlockWithTanhGELU(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(
            nn.Linear(d_model, 4 * d_model), nn.GELU(approximate="tanh"), nn.Linear(4 * d_model, d_model)
        )

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="four times wider than the model")
class GPTBlockWithAnMLPOfWidthD(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="has dtype torch.float32; the mask must be a bool tensor")
class GPTBlockWithAFloatMask(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.tril(torch.ones(seq, seq))  # 0/1 floats, the habit of many tutorials
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="returns a tuple (outputs, weights); add only its outputs to x")
class GPTBlockAddingTheAttentionsTuple(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)  # the [0] is missing
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="its third positional argument, which is the value, not the attention mask")
class GPTBlockPassingTheMaskAsTheValue(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        blocked = torch.ones(seq, seq, dtype=torch.bool).triu(1)  # nn.MultiheadAttention: True = may not attend
        h = self.ln_1(x)
        x = x + self.attention.attention(h, h, blocked)[0]  # PyTorch's own module, mask passed by position
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="its second positional argument, which is the context")
class GPTBlockPassingTheMaskAsTheContext(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="the mask's size was taken from the batch axis")
class GPTBlockWithTheMaskSizedByTheBatch(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        n = x.size(0)
        causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="there is no residual connection around the MLP")
class GPTBlockWithoutTheMLPsResidual(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="there is no residual connection around the attention")
class GPTBlockWithoutTheAttentionsResidual(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="changing self.ln_2's weights leaves the output as it was")
class GPTBlockNormalisingWithLn1Twice(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_1(x))


@wrong_answer("GPTBlock", message="has no activation between its two nn.Linear layers")
class GPTBlockWithoutAnActivation(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="the GELU comes after the MLP's second nn.Linear")
class GPTBlockWithTheGELULast(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model), nn.GELU())

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="(tril(), not tril(diagonal=-1))")
class GPTBlockWithoutTheDiagonal(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        before = torch.ones(seq, seq, dtype=torch.bool).tril(diagonal=-1)  # strictly before: position 0 sees nothing
        x = x + self.attention(self.ln_1(x), mask=before)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="the layer norms are applied to the sublayers' outputs")
class GPTBlockNormalisingTheOutputs(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.ln_1(self.attention(x, mask=causal)[0])
        return x + self.ln_2(self.mlp(x))


@wrong_answer("GPTBlock", message="self.attention was built with its two sizes the other way round")
class GPTBlockWithTheAttentionSizesSwapped(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(num_heads, d_model)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_2(x))


@wrong_answer("GPTBlock", message="changed its input x in place (with `+=`")
class GPTBlockAddingInPlace(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x += self.attention(self.ln_1(x), mask=causal)[0]
        x += self.mlp(self.ln_2(x))
        return x


# Exercise 2: GPT -----------------------------------------------------------------------------------------


@wrong_answer("GPT", message="holds a copy of the token embedding's values")
class GPTTiedByCopying(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = nn.Parameter(self.token_embedding.weight.clone())

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="is not the token embedding's weight")
class GPTUntied(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="one row per position: nn.Embedding(block_size, d_model), here (8, 8); found (9, 8)")
class GPTWithPositionsFromOne(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size + 1, d_model)  # room for position block_size
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(1, seq + 1))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="the positions are counted from 1")
class GPTWithPositionsFromOneInATableOfBlockSize(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(1, seq + 1))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="a length was taken from the batch axis")
class GPTWithPositionsAlongTheBatch(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        batch, seq = ids.shape
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(batch))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="each sequence got the position of its row in the batch")
class GPTWithOnePositionPerSequence(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        positions = self.position_embedding(torch.arange(len(ids)))[:, None]  # (batch, 1, d_model)
        x = self.token_embedding(ids) + positions
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="there are no position embeddings")
class GPTWithoutPositions(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        if ids.shape[1] > self.block_size:
            raise ValueError(f"{ids.shape[1]} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="multiplied by √d_model")
class GPTScalingTheEmbeddings(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq, d_model = ids.shape[1], self.token_embedding.embedding_dim
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) * math.sqrt(d_model) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="ln_f is not applied")
class GPTWithoutTheFinalNorm(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(x)


@wrong_answer("GPT", message="the 2 blocks are one and the same object")
class GPTRepeatingOneBlock(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList([GPTBlock(d_model, num_heads)] * num_layers)
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="raised AssertionError; raise a ValueError")
class GPTAssertingTheLength(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        assert seq <= self.block_size, "the sequence is longer than block_size"
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="stopped with an IndexError inside the position table")
class GPTWithoutTheLengthCheck(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="This is nn.Embedding's N(0, 1): with it the tied output layer starts with logits")
class GPTWithEmbeddingsOfStandardDeviationOne(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="the model returns probabilities, a softmax of the logits")
class GPTReturningProbabilities(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return F.softmax(self.lm_head(self.ln_f(x)), dim=-1)


@wrong_answer("GPT", message="the model returns log-probabilities")
class GPTReturningLogProbabilities(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return F.log_softmax(self.lm_head(self.ln_f(x)), dim=-1)


@wrong_answer("GPT", message="which is nn.Linear's default initialisation")
class GPTTiedTheOtherWayAfterTheInitialisation(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.token_embedding.weight = self.lm_head.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="A sequence of block_size tokens fits")
class GPTRejectingAFullBlock(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq >= self.block_size:
            raise ValueError(f"{seq} tokens is longer than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="ln_f is applied after every block")
class GPTNormalisingAfterEveryBlock(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = self.ln_f(block(x))
        return self.lm_head(x)


@wrong_answer("GPT", message="ln_f is applied before the blocks")
class GPTNormalisingBeforeTheBlocks(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.ln_f(self.token_embedding(ids) + self.position_embedding(torch.arange(seq)))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(x)


@wrong_answer("GPT", message="the position vectors were taken for all block_size positions")
class GPTAddingEveryPosition(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(self.block_size))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="the position vectors start far larger than the token vectors")
class GPTWithPositionsOfStandardDeviationOne(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="the blocks are not chained")
class GPTWithTheBlocksNotChained(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            h = block(x)  # every block reads the embeddings
        return self.lm_head(self.ln_f(h))


@wrong_answer("GPT", message="does not register the blocks as parts of the model")
class GPTWithAPythonListOfBlocks(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, std=0.02)
        nn.init.normal_(self.position_embedding.weight, std=0.02)
        self.blocks = [GPTBlock(d_model, num_heads) for _ in range(num_layers)]
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


@wrong_answer("GPT", message="its second positional argument is the mean")
class GPTInitialisedWithTheMeanAt002(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(block_size, d_model)
        nn.init.normal_(self.token_embedding.weight, 0.02)
        nn.init.normal_(self.position_embedding.weight, 0.02)
        self.blocks = nn.ModuleList(GPTBlock(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.token_embedding.weight

    def forward(self, ids):
        seq = ids.shape[1]
        if seq > self.block_size:
            raise ValueError(f"{seq} tokens is more than block_size = {self.block_size}")
        x = self.token_embedding(ids) + self.position_embedding(torch.arange(seq))
        for block in self.blocks:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# Exercise 3: next_token_loss -----------------------------------------------------------------------------


@wrong_answer("next_token_loss", message="there is no shift")
def next_token_loss_without_the_shift(logits, ids):
    return F.cross_entropy(logits.flatten(0, 1), ids.flatten())


@wrong_answer("next_token_loss", message="the shift goes the wrong way")
def next_token_loss_shifted_the_wrong_way(logits, ids):
    return F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, :-1].flatten())


@wrong_answer("next_token_loss", message="you dropped the first position's logits instead of the last")
def next_token_loss_dropping_the_first_position(logits, ids):
    return F.cross_entropy(logits[:, 1:].flatten(0, 1), ids[:, 1:].flatten())


@wrong_answer("next_token_loss", message="you shifted by two")
def next_token_loss_shifted_by_two(logits, ids):
    return F.cross_entropy(logits[:, :-2].flatten(0, 1), ids[:, 2:].flatten())


@wrong_answer("next_token_loss", message="you summed the losses over each sequence's positions")
def next_token_loss_summed_per_sequence(logits, ids):
    losses = F.cross_entropy(logits[:, :-1].transpose(1, 2), ids[:, 1:], reduction="none")  # (batch, seq - 1)
    return losses.sum(dim=1).mean()


@wrong_answer("next_token_loss", message="you summed the per-token losses")
def next_token_loss_summed(logits, ids):
    return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten(), reduction="sum")


@wrong_answer("next_token_loss", message="you shifted along the batch axis")
def next_token_loss_shifted_along_the_batch(logits, ids):
    return F.cross_entropy(logits[:-1].flatten(0, 1), ids[1:].flatten())


@wrong_answer("next_token_loss", message="underflows to log(0)")
def next_token_loss_with_log_of_softmax(logits, ids):
    probabilities = torch.softmax(logits[:, :-1], dim=-1)  # (batch, seq - 1, vocab)
    chosen = probabilities.gather(-1, ids[:, 1:, None])[..., 0]  # (batch, seq - 1)
    return -chosen.log().mean()


@wrong_answer("next_token_loss", message="the loss is not connected to the logits")
def next_token_loss_as_a_new_tensor(logits, ids):
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
    return torch.tensor(loss.item())


@wrong_answer("next_token_loss", message="does not lie in memory in order")
def next_token_loss_viewing_a_slice(logits, ids):
    vocab = logits.size(-1)
    return F.cross_entropy(logits[:, :-1].view(-1, vocab), ids[:, 1:].view(-1))


@wrong_answer("next_token_loss", message="F.cross_entropy takes the classes on axis 1")
def next_token_loss_with_the_vocabulary_last(logits, ids):
    return F.cross_entropy(logits[:, :-1], ids[:, 1:])


@wrong_answer("next_token_loss", message="F.nll_loss was given the logits")
def next_token_loss_by_nll_of_the_logits(logits, ids):
    return F.nll_loss(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


@wrong_answer("next_token_loss", message="you flattened before shifting")
def next_token_loss_flattened_before_the_shift(logits, ids):
    vocab = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, vocab)[:-1], ids.reshape(-1)[1:])


@wrong_answer("next_token_loss", message="the log-softmax ran over the positions (dim=1)")
def next_token_loss_normalised_over_the_positions(logits, ids):
    log_probs = F.log_softmax(logits, dim=1)  # (batch, seq, vocab)
    return -log_probs[:, :-1].gather(-1, ids[:, 1:, None]).mean()


@wrong_answer("next_token_loss", message="you divided the summed loss by batch · seq")
def next_token_loss_divided_by_every_token(logits, ids):
    vocab = logits.shape[-1]
    total = F.cross_entropy(logits[:, :-1].reshape(-1, vocab), ids[:, 1:].reshape(-1), reduction="sum")
    return total / ids.numel()


# Exercise 4: next_token_probabilities -----------------------------------------------------------------------


@wrong_answer("next_token_probabilities", message="you dropped the token that takes the total past top_p")
def top_p_dropping_the_crossing_token(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) > top_p
        remove[:, 0] = False
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="raised the probabilities to the power 1/temperature")
def temperature_as_a_power_of_the_probabilities(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1) ** (1 / temperature)


@wrong_answer("next_token_probabilities", message="underflows to 0")
def temperature_as_a_renormalised_power(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    probs = logits.softmax(dim=-1) ** (1 / temperature)
    probs = probs / probs.sum(dim=-1, keepdim=True)
    if top_k is not None:
        kth = probs.topk(min(top_k, probs.shape[-1]), dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p is not None:
        probs = probs / probs.sum(dim=-1, keepdim=True)
        ordered, order = probs.sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        probs = probs.masked_fill(remove.scatter(-1, order, remove), 0.0)
    return probs / probs.sum(dim=-1, keepdim=True)


@wrong_answer("next_token_probabilities", message="you divided the probabilities by the temperature")
def probabilities_divided_by_the_temperature(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1) / temperature


@wrong_answer("next_token_probabilities", message="you multiplied the logits by the temperature")
def temperature_multiplying_the_logits(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits * temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="dividing by a temperature of 0 does")
def temperature_zero_not_handled(logits, temperature=1.0, top_k=None, top_p=None):
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="that is k + 1")
def top_k_keeping_one_too_many(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.sort(dim=-1, descending=True).values[:, top_k : top_k + 1]  # one place too far
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="you kept exactly top_k=2 tokens")
def top_k_keeping_exactly_k_indices(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        keep = torch.zeros_like(logits, dtype=torch.bool)
        keep.scatter_(-1, logits.topk(top_k, dim=-1).indices, True)  # the top_k positions, ties or not
        logits = logits.masked_fill(~keep, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="that is k - 1")
def top_k_keeping_one_too_few(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits <= kth, float("-inf"))  # removes the k-th as well
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="you applied top-p before top-k")
def top_p_before_top_k(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="you added up the probabilities in vocabulary order")
def top_p_on_unsorted_probabilities(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        probs = logits.softmax(dim=-1)
        logits = logits.masked_fill(probs.cumsum(dim=-1) - probs >= top_p, float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="the rest was not renormalised")
def filtered_probabilities_not_renormalised(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    probs = (logits / temperature).softmax(dim=-1)
    if top_k is not None:
        kth = probs.topk(min(top_k, probs.shape[-1]), dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p is not None:
        ordered, order = probs.sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        probs = probs.masked_fill(remove.scatter(-1, order, remove), 0.0)
    return probs


@wrong_answer("next_token_probabilities", message="torch.topk cannot choose more values than there are")
def top_k_not_limited_to_the_vocabulary(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="you applied the temperature after filtering")
def temperature_after_filtering(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return (logits / temperature).softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="one token per row; return a distribution")
def greedy_returning_token_ids(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return logits.argmax(dim=-1)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="applied that mask to the logits in vocabulary order")
def top_p_mask_left_in_sorted_order(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered = logits.softmax(dim=-1).sort(dim=-1, descending=True).values
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove, float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="Given one row at a time, it is right")
def top_k_threshold_without_its_axis(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1]  # (batch,)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=-1)


@wrong_answer("next_token_probabilities", message="you applied a softmax to probabilities")
def filtered_probabilities_through_a_second_softmax(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    probs = (logits / temperature).softmax(dim=-1)
    if top_k is not None:
        kth = probs.topk(min(top_k, probs.shape[-1]), dim=-1).values[:, -1:]
        probs = probs.masked_fill(probs < kth, 0.0)
    if top_p is not None:
        ordered, order = probs.sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        probs = probs.masked_fill(remove.scatter(-1, order, remove), 0.0)
    return probs.softmax(dim=-1)  # meant to renormalise


@wrong_answer("next_token_probabilities", message="the softmax ran over the batch axis (dim=0)")
def softmax_over_the_batch(logits, temperature=1.0, top_k=None, top_p=None):
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.shape[-1]).to(logits.dtype)
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None:
        ordered, order = logits.softmax(dim=-1).sort(dim=-1, descending=True)
        remove = ordered.cumsum(dim=-1) - ordered >= top_p
        logits = logits.masked_fill(remove.scatter(-1, order, remove), float("-inf"))
    return logits.softmax(dim=0)


# Exercise 5: generate ---------------------------------------------------------------------------------------


@wrong_answer("generate", message="logits at the first position")
def generate_from_the_first_position(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, 0]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="you averaged the logits over the positions of the context")
def generate_from_the_mean_of_the_positions(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :]).mean(dim=1)  # (batch, vocab)
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="more than its block_size")
def generate_ignoring_block_size(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids)[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="keep the last model.block_size tokens instead")
def generate_cropping_to_the_first_tokens(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, : model.block_size])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="you always took the most probable token")
def generate_always_greedy(model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, probs.argmax(dim=-1, keepdim=True)], dim=1)
    return ids


@wrong_answer("generate", message="drew from PyTorch's global random generator")
def generate_ignoring_the_generator(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1)], dim=1)
    return ids


@wrong_answer("generate", message="the model ran with autograd recording")
def generate_with_autograd_on(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    for _ in range(max_new_tokens):
        logits = model(ids[:, -model.block_size :])[:, -1].detach()
        probs = next_token_probabilities(logits, temperature, top_k, top_p)
        ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="return the prompt followed by the new tokens")
def generate_returning_only_the_new_tokens(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids, new = prompt_ids, []
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            new.append(torch.multinomial(probs, 1, generator=generator))
            ids = torch.cat([ids, new[-1]], dim=1)
    return torch.cat(new, dim=1)


@wrong_answer("generate", message="do not squeeze that axis away")
def generate_squeezing_the_new_tokens(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            next_ids = torch.multinomial(probs, num_samples=1, generator=generator).squeeze(-1)
            ids = torch.cat([ids, next_ids], dim=1)
    return ids


@wrong_answer("generate", message="passes top_k and top_p on to next_token_probabilities in the wrong order")
def generate_passing_top_p_as_top_k(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_p, top_k)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate", message="the model was called once for")
def generate_from_one_forward_pass(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    with torch.no_grad():
        logits = model(prompt_ids[:, -model.block_size :])[:, -1]
        probs = next_token_probabilities(logits, temperature, top_k, top_p)
        new = torch.multinomial(probs, max_new_tokens, replacement=True, generator=generator)
    return torch.cat([prompt_ids, new], dim=1)


@wrong_answer("generate", message="third positional argument is replacement")
def generate_passing_the_generator_by_position(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probs, 1, generator)], dim=1)
    return ids


@wrong_answer("next_token_loss", message="the targets were transposed before they were flattened")
def next_token_loss_with_the_targets_transposed(logits, ids):
    predictions = logits[:, :-1].flatten(0, 1)
    targets = ids[:, 1:].T.flatten()
    return F.cross_entropy(predictions, targets)


@wrong_answer("GPTBlock", message="changing self.ln_2's weights leaves the output as it was, so ln_2 is never applied")
class GPTBlockReusingLn1BeforeTheMlp(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.attention = MultiHeadAttention(d_model, num_heads)
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        seq = x.shape[1]
        causal = torch.ones(seq, seq, dtype=torch.bool).tril()
        x = x + self.attention(self.ln_1(x), mask=causal)[0]
        return x + self.mlp(self.ln_1(x))


@wrong_answer("generate", message="as if all were drawn from the first row's distribution")
def generate_from_the_first_rows_distribution(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids[:, -model.block_size :])[:, -1]
            probs = next_token_probabilities(logits, temperature, top_k, top_p)
            next_ids = torch.multinomial(probs[0], num_samples=ids.shape[0], replacement=True, generator=generator)
            ids = torch.cat([ids, next_ids[:, None]], dim=1)
    return ids
