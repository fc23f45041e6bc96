"""How the course's conventions meet PyTorch's layers: its masks as PyTorch takes them, and its modules'
parameters under the names PyTorch's layers give them.

Support code of the reference modules and of the checks that copy a learner's weights into PyTorch's layers. It
belongs to no notebook and reveals no exercise, so every student release holds it (autograder/release.py), and the
grading sandbox shows it to every student's process.
"""

import torch
from torch import nn

__all__ = [
    "decoder_layer_parameters",
    "encoder_layer_parameters",
    "norm_and_feed_forward_parameters",
    "norm_parameters",
    "pytorch_mask",
    "pytorch_masks",
    "sharing_parameters",
    "torch_twin",
]


def pytorch_mask(mask: torch.Tensor | None, batch: int, n_q: int, n_k: int, num_heads: int) -> torch.Tensor | None:
    """The course's mask (True = may attend, broadcastable to (batch, n_q, n_k)) as PyTorch's layers want it:
    True = hidden, one (n_q, n_k) matrix per batch element and head."""
    if mask is None:
        return None
    return (~mask.expand(batch, n_q, n_k)).repeat_interleave(num_heads, dim=0)  # (batch * heads, n_q, n_k)


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


def sharing_parameters(template: nn.Module, parameters: dict[str, nn.Parameter]) -> nn.Module:
    """Make PyTorch's layer compute with our parameters: the very same tensors, so that training ours trains it.

    The caller keeps the layer in a list, so that PyTorch does not register its parameters a second time.
    """
    for name, parameter in parameters.items():
        owner, _, attribute = name.rpartition(".")
        setattr(template.get_submodule(owner), attribute, parameter)
    return template


def norm_parameters(norm: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """(gain, bias) of a layer norm: nn.LayerNorm's (weight, bias) or the course's LayerNorm's (gain, bias)."""
    return (norm.weight if hasattr(norm, "weight") else norm.gain), norm.bias


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


def attention_parameters(attention: nn.Module, pytorch_name: str) -> dict[str, torch.Tensor]:
    """A reference MultiHeadAttention's parameters (it holds an nn.MultiheadAttention) under pytorch_name."""
    pytorch = attention.attention
    return {
        f"{pytorch_name}.in_proj_weight": pytorch.in_proj_weight,
        f"{pytorch_name}.in_proj_bias": pytorch.in_proj_bias,
        f"{pytorch_name}.out_proj.weight": pytorch.out_proj.weight,
        f"{pytorch_name}.out_proj.bias": pytorch.out_proj.bias,
    }


def encoder_layer_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """A course encoder layer's parameters under the names nn.TransformerEncoderLayer gives them."""
    return attention_parameters(layer.self_attention, "self_attn") | norm_and_feed_forward_parameters(layer)


def decoder_layer_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """A course decoder layer's parameters under the names nn.TransformerDecoderLayer gives them."""
    return (
        attention_parameters(layer.self_attention, "self_attn")
        | attention_parameters(layer.cross_attention, "multihead_attn")
        | norm_and_feed_forward_parameters(layer)
    )


def torch_twin(module: nn.Module, num_heads: int) -> nn.MultiheadAttention:
    """An nn.MultiheadAttention holding a copy of the module's W_Q, W_K, W_V and W_O with their biases."""
    d_model = module.query.in_features
    twin = nn.MultiheadAttention(d_model, num_heads, batch_first=True)
    with torch.no_grad():
        twin.in_proj_weight.copy_(torch.cat([module.query.weight, module.key.weight, module.value.weight]))
        twin.in_proj_bias.copy_(torch.cat([module.query.bias, module.key.bias, module.value.bias]))
        twin.out_proj.weight.copy_(module.output.weight)
        twin.out_proj.bias.copy_(module.output.bias)
    return twin.eval()
