"""Notebook 13's small BERT, pretrained on the Python manual by masked language modelling, and the names that map
the notebook's model onto Hugging Face's BERT.

``benchmarks/encoder_pretraining.py`` trained it once (the command and what it measured are in
benchmarks/RESULTS.md) and saved a ``BertForMaskedLM``'s weights in float16 with its configuration, in
``data/pretrained_encoder.pt``: minutes of training that the notebook does not repeat. Nothing is downloaded.

The notebook's ``EncoderForMaskedLM`` names its parts (``token_embedding``, ``position_embedding``,
``embedding_norm``, ``encoder``, ``head_transform``, ``head_norm``, ``head_bias``); ``bert_names`` gives its tensors
under BERT's names. The checks of notebook 13 copy a learner's weights into BERT with it, and ``load_pretrained``
copies the pretrained weights the other way.
"""

from pathlib import Path

import torch
from torch import nn

from .reference.pytorch_layers import norm_parameters

WEIGHTS = Path(__file__).resolve().parent / "data" / "pretrained_encoder.pt"

# BERT adds a learned "segment" vector to every position's embedding; with one segment it is one vector added
# everywhere, which the notebook's model folds into its position embeddings.
SEGMENT = "bert.embeddings.token_type_embeddings.weight"


def bert_names(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's parameters (or views of them: BERT keeps the query, key and value weights apart) under the names
    of ``BertForMaskedLM``'s state dict, all but the segment embedding and the tied decoder."""
    named = {
        "embeddings.word_embeddings.weight": model.token_embedding.weight,
        "embeddings.position_embeddings.weight": model.position_embedding.weight,
    }
    named |= dict(
        zip(
            ("embeddings.LayerNorm.weight", "embeddings.LayerNorm.bias"),
            norm_parameters(model.embedding_norm),
            strict=True,
        )
    )
    for number, layer in enumerate(model.encoder.layers):
        attention = layer.self_attention.attention  # notebook 03's reference holds an nn.MultiheadAttention
        start = f"encoder.layer.{number}."
        pieces = zip(
            ("query", "key", "value"), attention.in_proj_weight.chunk(3), attention.in_proj_bias.chunk(3), strict=True
        )
        for name, weight, bias in pieces:
            named |= {f"{start}attention.self.{name}.weight": weight, f"{start}attention.self.{name}.bias": bias}
        linear1, linear2 = layer.feed_forward.linear1, layer.feed_forward.linear2
        for name, (weight, bias) in {
            "attention.output.dense": (attention.out_proj.weight, attention.out_proj.bias),
            "attention.output.LayerNorm": norm_parameters(layer.norm1),
            "intermediate.dense": (linear1.weight, linear1.bias),
            "output.dense": (linear2.weight, linear2.bias),
            "output.LayerNorm": norm_parameters(layer.norm2),
        }.items():
            named |= {f"{start}{name}.weight": weight, f"{start}{name}.bias": bias}
    named = {f"bert.{name}": tensor for name, tensor in named.items()}
    if hasattr(model, "head_transform"):
        transform = "cls.predictions.transform."
        named |= {
            f"{transform}dense.weight": model.head_transform.weight,
            f"{transform}dense.bias": model.head_transform.bias,
            "cls.predictions.bias": model.head_bias,
        }
        named |= dict(
            zip(
                (f"{transform}LayerNorm.weight", f"{transform}LayerNorm.bias"),
                norm_parameters(model.head_norm),
                strict=True,
            )
        )
    return named


def pretrained_config() -> dict:
    """The pretrained model's BertConfig, as a dict."""
    return torch.load(WEIGHTS)["config"]


def pretrained_sizes() -> dict[str, int]:
    """The pretrained model's sizes, as EncoderForMaskedLM takes them."""
    config = pretrained_config()
    return {
        "vocab_size": config["vocab_size"],
        "max_len": config["max_position_embeddings"],
        "d_model": config["hidden_size"],
        "num_heads": config["num_attention_heads"],
        "d_ff": config["intermediate_size"],
        "num_layers": config["num_hidden_layers"],
    }


@torch.no_grad()
def load_pretrained(model: nn.Module, path: Path | None = None) -> nn.Module:
    """Copy the pretrained weights (or those that the benchmark wrote to ``path``) into an EncoderForMaskedLM of
    ``pretrained_sizes()``; returns it in eval mode."""
    state = {name: tensor.float() for name, tensor in torch.load(path or WEIGHTS)["state_dict"].items()}
    for name, target in bert_names(model).items():
        target.copy_(state[name])
    model.position_embedding.weight.add_(state[SEGMENT][0])  # the one segment's vector, added at every position
    return model.eval()
