"""Measure notebook 08's training on this machine: accuracy against training time, training speed against
torch.nn.Transformer with the same configuration and weights, and that a run repeats exactly.

Three models are timed against nn.Transformer: the one notebook 08 trains (reference.Transformer, made of
PyTorch's layers); the from-scratch model a learner has written by the end of notebook 07 (the solutions
of notebooks 02-07: attention heads, masked attention, layer norm, feed-forward, encoder, decoder and the
full model); and the same from-scratch model with PyTorch's fused kernels for the two pieces that notebooks
04 and 06 show equal to them (F.scaled_dot_product_attention, F.layer_norm).

    .venv/bin/python benchmarks/translation_training.py [--seconds 120] [--rounds 5]

The learner's functions are taken from the solution notebook, so this measures what the notebook runs. A
benchmark, not a test: the figures in benchmarks/RESULTS.md come from here.
"""

import argparse
import copy
import math
import sys
import time
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.repository import assignments
from autograder.submissions import solution_code, solution_notebooks, solved_namespace
from transformer_course import reference
from transformer_course.checks.nb06 import load_stack
from transformer_course.data.translation import PAD, Vocabulary, endless_batches, splits
from transformer_course.evaluation import exact_match, token_accuracy, translate_all

ASSIGNMENT = "08_training_and_decoding"
CONFIGURATION = {"d_model": 64, "num_heads": 4, "d_ff": 256, "num_layers": 2}


def notebook_functions() -> dict:
    """The solution notebook's set-up cell, its solutions and its loss of one batch, run as the notebook runs
    them."""
    namespace = solved_namespace(ASSIGNMENT)
    (notebook,) = solution_notebooks(ASSIGNMENT).values()
    exec(next(cell.source for cell in notebook.cells if cell.get("id") == "loss-of-batch"), namespace)
    return namespace


def from_scratch_transformer(pytorch_kernels: bool = False) -> type:
    """Notebook 07's Transformer with every part from the solutions instead of reference code: notebook 03's
    heads over notebook 04's masked attention, notebook 05's encoding, notebook 06's layer norm,
    feed-forward and encoder. With pytorch_kernels, masked attention and the layer norm's arithmetic are
    PyTorch's fused kernels instead; the modules, their parameters and everything else stay the learner's."""
    namespace: dict = {"math": math, "torch": torch, "nn": nn, "F": F}
    for assignment in assignments()[1:7]:  # notebooks 02-07, in teaching order
        for source in solution_code(assignment).values():
            exec(source, namespace)
    namespace["attention"] = fused_attention if pytorch_kernels else namespace["masked_attention"]
    if pytorch_kernels:
        namespace["LayerNorm"] = type("FusedLayerNorm", (namespace["LayerNorm"],), {"forward": fused_layer_norm})
    return namespace["Transformer"]


def fused_attention(q, k, v, mask=None) -> tuple[torch.Tensor, None]:
    """Masked attention in one kernel; no weights, which training does not need."""
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None  # (..., n_q, d_v)


def fused_layer_norm(self, x: torch.Tensor) -> torch.Tensor:
    """The from-scratch LayerNorm's forward in one kernel, with its own gain, bias and eps."""
    return F.layer_norm(x, self.gain.shape, self.gain, self.bias, self.eps)  # (..., d)


def from_scratch_layer_parameters(layer: nn.Module) -> dict[str, torch.Tensor]:
    """A from-scratch encoder or decoder layer's parameters under the names nn.Transformer*Layer gives them."""
    names = {}
    for ours, theirs in (("self_attention", "self_attn"), ("cross_attention", "multihead_attn")):
        if hasattr(layer, ours):
            heads = getattr(layer, ours)
            projections = (heads.query, heads.key, heads.value)
            names |= {
                f"{theirs}.in_proj_weight": torch.cat([projection.weight for projection in projections]),
                f"{theirs}.in_proj_bias": torch.cat([projection.bias for projection in projections]),
                f"{theirs}.out_proj.weight": heads.output.weight,
                f"{theirs}.out_proj.bias": heads.output.bias,
            }
    return names | reference.norm_and_feed_forward_parameters(layer)


class PyTorchTransformer(nn.Module):
    """The same model built on nn.Transformer, used the way PyTorch documents it (key padding masks)."""

    def __init__(self, model: nn.Module, encoder_parameters=reference.encoder_layer_parameters,
                 decoder_parameters=reference.decoder_layer_parameters):  # fmt: skip
        super().__init__()
        self.embeddings = copy.deepcopy(nn.ModuleList([model.src_embedding, model.tgt_embedding]))
        self.output = copy.deepcopy(model.output)
        self.d_model, layers = model.d_model, len(model.encoder.layers)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            self.transformer = nn.Transformer(
                self.d_model, CONFIGURATION["num_heads"], layers, layers, CONFIGURATION["d_ff"], dropout=0.0,
                batch_first=True,
            )  # fmt: skip
        self.transformer.encoder.norm = self.transformer.decoder.norm = None  # post-LN stacks have no final norm
        load_stack(model.encoder, self.transformer.encoder, encoder_parameters)
        load_stack(model.decoder, self.transformer.decoder, decoder_parameters)

    def embed(self, tokens, table):
        return table(tokens) * self.d_model**0.5 + reference.sinusoidal_encoding(tokens.shape[-1], self.d_model)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None):
        """Takes the course's masks like reference.Transformer, but builds PyTorch's own from the tokens."""
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        hidden = self.transformer(
            self.embed(src, self.embeddings[0]), self.embed(tgt, self.embeddings[1]), tgt_mask=causal,
            src_key_padding_mask=src == PAD, tgt_key_padding_mask=tgt == PAD, memory_key_padding_mask=src == PAD,
            tgt_is_causal=True,
        )  # fmt: skip
        return self.output(hidden)


def accuracy_against_time(learner: dict, data, source, target, seconds: float) -> None:
    torch.manual_seed(0)
    model = reference.Transformer(len(source), len(target), **CONFIGURATION)
    optimizer = torch.optim.Adam(model.parameters(), betas=(0.9, 0.98), eps=1e-9)
    stream = endless_batches(data.train, source, target, batch_size=64, seed=0)
    english, german = [p.english for p in data.test], [p.german for p in data.test]
    print(f"{'step':>6} {'training s':>11} {'test exact match':>17} {'token accuracy':>15}")
    trained, step = 0.0, 0
    while trained < seconds:
        started = time.perf_counter()
        for _ in range(250):
            step += 1
            for group in optimizer.param_groups:
                group["lr"] = learner["learning_rate"](step, 1e-3, 400)
            model.train()
            loss = learner["loss_of_batch"](model, *next(stream))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        trained += time.perf_counter() - started
        model.eval()
        predictions = translate_all(lambda src: learner["greedy_decode"](model, src, 21), english, source, target)
        print(f"{step:6d} {trained:11.1f} {100 * exact_match(predictions, german):16.1f}% "
              f"{100 * token_accuracy(predictions, german):14.1f}%")  # fmt: skip


def steps_per_second(model, loss_of_batch, batches) -> float:
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))
    started = time.perf_counter()
    for src, tgt in batches:
        loss = loss_of_batch(model, src, tgt)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return len(batches) / (time.perf_counter() - started)


def throughput(learner: dict, data, source, target, rounds: int) -> None:
    torch.manual_seed(0)
    course = reference.Transformer(len(source), len(target), **CONFIGURATION)
    torch.manual_seed(0)
    scratch = from_scratch_transformer()(len(source), len(target), **CONFIGURATION)
    torch.manual_seed(0)
    scratch_fused = from_scratch_transformer(pytorch_kernels=True)(len(source), len(target), **CONFIGURATION)
    models = {
        "course model (reference.Transformer)": course,
        "from-scratch model (solutions 02-07)": scratch,
        "from-scratch model, PyTorch's kernels": scratch_fused,
        "torch.nn.Transformer": PyTorchTransformer(course),
    }
    stream = endless_batches(data.train, source, target, batch_size=64, seed=1)
    batches = [next(stream) for _ in range(100)]
    twins = [PyTorchTransformer(course)]
    twins += [PyTorchTransformer(model, *[from_scratch_layer_parameters] * 2) for model in (scratch, scratch_fused)]
    for (name, model), twin in zip(models.items(), twins, strict=False):
        print(f"{name} gives nn.Transformer's logits with its weights: {same_logits(learner, batches[0], model, twin)}")
    speeds = {name: [] for name in models}
    for _ in range(rounds):  # alternating, so that all see the same machine load
        for name, model in models.items():
            speeds[name].append(steps_per_second(model, learner["loss_of_batch"], batches))
    best = {name: max(runs) for name, runs in speeds.items()}
    for name, speed in best.items():
        print(f"{name:38s} {speed:5.1f} steps/s (best of {rounds} rounds of 100 steps)")
    for name in list(models)[:3]:
        print(f"ratio {name} / nn.Transformer: {best[name] / best['torch.nn.Transformer']:.2f}")
    where_from_scratch_loses(scratch, models["torch.nn.Transformer"], batches[0][0])


def microseconds_forward_backward(compute, x: torch.Tensor, repeats: int = 300) -> float:
    for _ in range(20):  # warm-up
        compute(x).sum().backward()
    started = time.perf_counter()
    for _ in range(repeats):
        compute(x).sum().backward()
    return (time.perf_counter() - started) / repeats * 1e6


def where_from_scratch_loses(scratch: nn.Module, theirs: nn.Module, src: torch.Tensor) -> None:
    """Where the from-scratch model spends more than nn.Transformer: not in attention, which costs the same,
    but in layer norm made of small operations instead of one fused kernel, and in separate W_Q, W_K, W_V
    for Adam to update."""
    x = torch.randn(*src.shape, CONFIGURATION["d_model"], requires_grad=True)  # (batch, n_src, d_model)
    ours, pytorch = scratch.encoder.layers[0], theirs.transformer.encoder.layers[0]
    attention = [
        microseconds_forward_backward(lambda x: ours.self_attention(x, mask=reference.source_mask(src, PAD))[0], x),
        microseconds_forward_backward(
            lambda x: pytorch.self_attn(x, x, x, key_padding_mask=src == PAD, need_weights=False)[0], x
        ),
    ]
    print(f"multi-head attention, forward and backward on {tuple(x.shape)}: from scratch {attention[0]:.0f} µs, "
          f"nn.MultiheadAttention {attention[1]:.0f} µs")  # fmt: skip
    norms = sum(name.split(".")[-1].startswith("norm") for name, _ in scratch.named_modules())
    timings = [microseconds_forward_backward(norm, x) for norm in (ours.norm1, pytorch.norm1)]
    print(f"layer norm, forward and backward: from scratch {timings[0]:.0f} µs, nn.LayerNorm {timings[1]:.0f} µs; "
          f"{norms} layer norms per step")  # fmt: skip
    tensors = [len(list(model.parameters())) for model in (scratch, theirs)]
    print(f"parameter tensors for Adam: from scratch {tensors[0]}, nn.Transformer {tensors[1]}")


def same_logits(learner: dict, batch, model: nn.Module, twin: nn.Module) -> bool:
    src, tgt = batch
    decoder_input = learner["shift_right"](tgt, learner["BOS"])
    masks = (reference.source_mask(src, PAD), reference.target_mask(decoder_input, PAD))
    with torch.no_grad():
        return torch.allclose(model(src, decoder_input, *masks), twin(src, decoder_input, *masks), atol=1e-5)


def repeatability(learner: dict, data, source, target) -> None:
    def losses() -> list[float]:
        torch.manual_seed(0)
        model = reference.Transformer(len(source), len(target), **CONFIGURATION)
        stream = endless_batches(data.train, source, target, batch_size=64, seed=0)
        schedule = lambda step: learner["learning_rate"](step, 1e-3, 400)  # noqa: E731
        history = learner["train"](model, stream, learner["loss_of_batch"], schedule, steps=100)
        return history.losses

    print(f"two runs of 100 steps give the same loss curve: {losses() == losses()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120, help="training time to measure accuracy over")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds of the speed comparison")
    arguments = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    learner = notebook_functions()
    data = splits()
    source, target = Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])
    throughput(learner, data, source, target, arguments.rounds)
    repeatability(learner, data, source, target)
    accuracy_against_time(learner, data, source, target, arguments.seconds)


if __name__ == "__main__":
    main()
