"""Checks for notebook 06, the transformer block.

Oracles: ``nn.LayerNorm``, ``nn.TransformerEncoderLayer`` and ``nn.TransformerEncoder`` (dropout off, post-LN
and pre-LN) with the learner's weights copied in; ``torch.autograd.gradcheck``.
"""

import contextlib
import functools
import inspect
import itertools
from collections.abc import Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from torch import nn

from ..reference.nb03_multi_head_attention import MultiHeadAttention
from ..reference.pytorch_layers import encoder_layer_parameters
from . import (
    CheckFailed,
    NotImplementedYet,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_tensor,
    learner_facing,
    matches,
    passed,
    seeded_randn,
    shape_of,
)


def built_and_perturbed(cls: type, *args, seed: int, call: str, **kwargs) -> nn.Module:
    """Build a learner's module with a private seed, then move every gain and bias away from 1 and 0, each by its
    own seeded noise: forgetting one shows, and so does using one part's in place of another's (norm1 for norm2)."""
    module = built_with_seed(cls, *args, seed=seed, call=call, **kwargs)
    noise = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in module.named_parameters():
            if name.endswith(("gain", "bias")):
                parameter.add_(0.1 * torch.randn(parameter.shape, generator=noise, dtype=parameter.dtype))
    return module.eval()


def copy_layer(
    ours: nn.Module, theirs: nn.Module, layer_parameters: Callable, norms_used: dict[str, str] | None = None
) -> None:
    """Copy a course layer's weights into PyTorch's layer of the same kind, named by ``layer_parameters``.

    norms_used gives PyTorch's norms the gain and bias of other norms of ours ({"norm2": "norm1"}: its norm2 gets
    our norm1's), to compute what a layer that mixes up its norms computes.
    """
    own = layer_parameters(ours)
    parameters = dict(own)
    for theirs_norm, ours_norm in (norms_used or {}).items():
        for kind in ("weight", "bias"):
            parameters[f"{theirs_norm}.{kind}"] = own[f"{ours_norm}.{kind}"]
    theirs.load_state_dict({name: value.detach() for name, value in parameters.items()})


def expect_separate_norms(layer: nn.Module, norms: Sequence[str], call: str, kind: str = "LayerNorm") -> None:
    """Fail if two of the layer's norms are one and the same module (one set of weights for two sublayers): no
    output can show it, since both would hold equal weights anyway, but training would tie them."""
    for first, second in itertools.combinations(norms, 2):
        if getattr(layer, first) is getattr(layer, second):
            raise CheckFailed(
                f"{call}: self.{first} and self.{second} are one and the same {kind}; each sublayer has its own "
                f"norm, with its own weights: create a new {kind}(d_model) for each."
            )


def expect_own_norms(out: torch.Tensor, computed_with: Callable, sublayers: Sequence[str], call: str) -> None:
    """Fail, naming the mix-up, if ``out`` is what the layer computes when a sublayer uses another sublayer's norm.

    computed_with(norms_used) is PyTorch's layer's output with its norms given our norms as ``copy_layer`` does.
    """
    norms = [f"norm{number}" for number in range(1, len(sublayers) + 1)]
    for used in itertools.product(norms, repeat=len(norms)):
        if list(used) != norms and torch.allclose(out, computed_with(dict(zip(norms, used, strict=True))), atol=1e-5):
            raise CheckFailed(f"{call}: {_norms_mixed_up(norms, used, sublayers)}")


def _norms_mixed_up(norms: Sequence[str], used: Sequence[str], sublayers: Sequence[str]) -> str:
    if len(set(used)) == 1:
        mistake = f"every sublayer uses {used[0]}"
    else:
        parts = zip(sublayers, used, norms, strict=True)
        mistake = " and ".join(f"the {sublayer} uses {norm}" for sublayer, norm, own in parts if norm != own)
    own = ", ".join(f"{norm} for the {sublayer}" for norm, sublayer in zip(norms, sublayers, strict=True))
    return f"{mistake}; each sublayer has its own norm: {own}."


def load_stack(stack: nn.Module, pytorch_stack: nn.Module, layer_parameters: Callable) -> None:
    """Copy a course stack (its layers, and its final norm if it has one) into nn.TransformerEncoder/Decoder."""
    for ours, theirs in zip(stack.layers, pytorch_stack.layers, strict=True):
        copy_layer(ours, theirs, layer_parameters)
    if stack.norm is not None:
        pytorch_stack.norm.load_state_dict({"weight": stack.norm.gain.detach(), "bias": stack.norm.bias.detach()})


def expect_stack(stack: nn.Module, call: str, norm_first: bool, num_layers: int = 3) -> None:
    """Fail unless the stack registers num_layers distinct layers and has a final norm exactly for pre-LN."""
    layers = getattr(stack, "layers", None)
    if not isinstance(layers, nn.ModuleList) or len(layers) != num_layers:
        raise CheckFailed(
            f"{call} needs self.layers = nn.ModuleList of {num_layers} layers, so that their weights are registered."
        )
    if len({id(layer) for layer in layers}) != num_layers:
        raise CheckFailed(f"{call}: the {num_layers} layers are one and the same object; create a new layer for each.")
    final = getattr(stack, "norm", "missing")
    if norm_first and not isinstance(final, nn.Module):
        raise CheckFailed(
            f"{call} needs a final self.norm = LayerNorm(d_model): pre-LN layers leave their output "
            "unnormalised, so the stack normalises once at the end."
        )
    if not norm_first and final is not None:
        raise CheckFailed(f"{call}: post-LN layers already end with a norm; set self.norm = None.")


# What a learner's code did, for naming its mistake ----------------------------------------------------------


def received_by(parts: dict[str, nn.Module], run: Callable, order: list[str] | None = None) -> dict[str, list[list]]:
    """Run ``run()`` (an error is fine) and return, for each part, the arguments of each of its calls, in the
    order of its forward's parameters, defaults filled in: [x, context, mask] for a MultiHeadAttention. ``order``,
    if given, receives the parts' names in the order in which they were called."""
    received = {name: [] for name in parts}
    with contextlib.ExitStack() as hooks:
        for name, part in parts.items():
            record = functools.partial(_record, received[name], inspect.signature(part.forward), order, name)
            hooks.callback(part.register_forward_pre_hook(record, with_kwargs=True).remove)
        with contextlib.suppress(Exception), torch.no_grad():
            run()
    return received


def _record(
    calls: list, signature: inspect.Signature, order: list | None, name: str, module: nn.Module, args, kwargs
) -> None:
    if order is not None:
        order.append(name)
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return
    bound.apply_defaults()
    calls.append(list(bound.arguments.values()))


def which_mask(given, masks: dict[str, torch.Tensor]) -> str | None:
    """Which of ``masks`` a part received: its name, "~name" if inverted, "no mask" for None; None if unknown."""
    if given is None:
        return "no mask"
    if not isinstance(given, torch.Tensor) or given.dtype != torch.bool:
        return None
    for name, mask in masks.items():
        for candidate, label in ((mask, name), (~mask, f"~{name}")):
            try:
                shape = torch.broadcast_shapes(given.shape, candidate.shape)
            except RuntimeError:
                continue
            if torch.equal(given.expand(shape), candidate.expand(shape)):
                return label
    return None


def inverted_mask(given: str, part: str) -> str:
    return (
        f"the {part} received {given}: the mask is inverted. Here True means a position may attend (as in "
        "the boolean masks of F.scaled_dot_product_attention); pass the mask on as it is"
    )


def attempt(function: Callable, *args, call: str):
    """(result, None) from a learner's call, or (None, the failure) when their code raised an error: a crash may
    come from a mistake that a look at what the parts received can name."""
    try:
        return call_learner(function, *args, call=call), None
    except NotImplementedYet:
        raise
    except CheckFailed as failure:
        if failure.__cause__ is None:  # not a crash: an input changed in place, or an exotic result
            raise
        return None, failure


def mask_as_context(calls: list[list], part: str, mask_name: str) -> str | None:
    """The mistake, if an attention received a boolean tensor (a mask) as its context: forward(x, context=None,
    mask=None) takes its second positional argument as the sequence to attend to."""
    for arguments in calls:
        context = arguments[1] if len(arguments) >= 2 else None
        if isinstance(context, torch.Tensor) and context.dtype == torch.bool:
            unmasked = ", and its mask stayed None" if len(arguments) >= 3 and arguments[2] is None else ""
            return (
                f"the {part}'s mask went in as `context`, the second parameter of forward(x, context=None, "
                f"mask=None), so the module took it for the sequence to attend to{unmasked}; pass mask={mask_name} "
                "by name"
            )
    return None


@contextlib.contextmanager
def outputs_only(parts: Sequence[nn.Module]) -> Iterator[None]:
    """Make each of ``parts`` (attention modules) return only the first item of the pair it returns."""

    def first_of_pair(module, args, output):
        return output[0] if isinstance(output, tuple) else None  # None: the output as it was

    handles = [part.register_forward_hook(first_of_pair) for part in parts]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def pair_used_whole(attentions: dict[str, nn.Module], run: Callable, expected: torch.Tensor) -> str | None:
    """The mistake, if the learner's code (``run()``) gives ``expected`` once the attentions named (by attribute)
    return their outputs alone: it used the (outputs, weights) pair where it needed the outputs."""
    names = list(attentions)
    tried = [[name] for name in names] + ([names] if len(names) > 1 else [])
    for chosen in tried:
        result = None
        with outputs_only([attentions[name] for name in chosen]), contextlib.suppress(Exception), torch.no_grad():
            result = run()
        if matches(result, expected):
            which = " and ".join(f"self.{name}" for name in chosen)
            return (
                f"{which} return{'s' if len(chosen) == 1 else ''} a pair (outputs, weights), and your layer used the "
                "whole pair where it needs the outputs (a tensor plus a tuple is a TypeError). With the outputs "
                "taken from the pair, your layer gives the expected result"
            )
    return None


def residual_variants(
    sublayers: Sequence[tuple[str, Callable, Callable]], x: torch.Tensor, norm_first: bool
) -> Iterator[tuple[str, torch.Tensor]]:
    """(mistake, output) for every wrong wiring of a layer's residual connections: a sublayer's output added to
    nothing, or to an earlier stream than its own input. ``sublayers`` are (name, norm, function) in order,
    computed with PyTorch's modules holding the learner's weights."""
    right = tuple(range(len(sublayers)))
    for sources in itertools.product(*[(None, *range(i + 1)) for i in right]):
        if sources != right:
            yield _wiring_mistake(sublayers, sources), _wired(sublayers, sources, x, norm_first)


def _wired(sublayers, sources: tuple, x: torch.Tensor, norm_first: bool) -> torch.Tensor:
    streams = [x]  # streams[i]: the input of sublayer i
    for (_, norm, function), source in zip(sublayers, sources, strict=True):
        added_to = 0.0 if source is None else streams[source]
        h = streams[-1]
        streams.append(added_to + function(norm(h)) if norm_first else norm(added_to + function(h)))
    return streams[-1]


def _wiring_mistake(sublayers, sources: tuple) -> str:
    names = [name for name, _, _ in sublayers]
    mistakes = []
    for i, source in enumerate(sources):
        if source is None:
            mistakes.append(
                f"there is no residual connection around the {names[i]}: its output replaces the stream instead "
                "of being added to it"
            )
        elif source != i:
            stream = "the layer's input x" if source == 0 else f"the stream as the {names[source - 1]} left it"
            skipped = names[source:i]
            results = (
                f"the {skipped[0]}'s result"
                if len(skipped) == 1
                else f"the {skipped[0]}'s and the {skipped[1]}'s results"
            )
            mistakes.append(
                f"the {names[i]}'s output is added to {stream}, not to its own input, so {results} "
                f"{'is' if len(skipped) == 1 else 'are'} left off the residual path (going on only through the "
                f"{names[i]})"
            )
    return "; ".join(mistakes) + (
        ". Each sublayer's output is added to its own input, the stream as the sublayer before it left it"
    )


def normalised_output(out: torch.Tensor, expected: torch.Tensor, norms: dict[str, nn.Module]) -> str | None:
    """The mistake, if a pre-LN layer's output is the right one passed through one of its norms."""
    for name, norm in norms.items():
        if torch.allclose(out, norm(expected), atol=1e-5):
            return (
                f"the pre-LN layer ends with {name}, so its output is normalised. A pre-LN layer leaves its output "
                "unnormalised, as the sum of its input and its sublayers' outputs; the stack's final norm normalises "
                "once, after the last layer"
            )
    return None


def stack_masks_mistake(
    stack: nn.Module, run: Callable, masks: dict[str, torch.Tensor], position: int, sees: str
) -> str | None:
    """The mistake, if some of the stack's layers got the first of ``masks`` (``position``: its place among a layer's
    forward arguments; ``sees``: what an attention without it sees) and others none: 'the mask reached layer 1
    only'."""
    layers = {f"{number}": layer for number, layer in enumerate(stack.layers, start=1)}
    received = received_by(layers, run)
    given = {
        number: which_mask(calls[0][position], masks) if calls and len(calls[0]) > position else None
        for number, calls in received.items()
    }
    name = next(iter(masks))
    reached = [number for number, label in given.items() if label == name]
    missed = [number for number, label in given.items() if label == "no mask"]
    if reached and missed:
        return (
            f"the {name} reached layer{_numbers(reached)} only; layer{_numbers(missed)} got no {name}, so "
            f"{'its' if len(missed) == 1 else 'their'} {sees}. Pass {name} to every layer"
        )
    return None


def _numbers(numbers: list[str]) -> str:
    return f" {numbers[0]}" if len(numbers) == 1 else f"s {', '.join(numbers[:-1])} and {numbers[-1]}"


def normalised_after_each_layer(x: torch.Tensor, layers: Callable, norm: nn.Module) -> torch.Tensor:
    """What a stack computes that applies its final norm after every layer: ``layers`` are PyTorch's, as
    functions of the stream."""
    for layer in layers:
        x = norm(layer(x))
    return x


AFTER_EACH_LAYER = (
    "the final norm is applied after every layer, not once after the last: a pre-LN stack passes its "
    "unnormalised stream from layer to layer, and self.norm normalises only what the last layer returns"
)


def expect_no_dropout(module: nn.Module, args: tuple, first: torch.Tensor, call: str) -> None:
    """Fail if a second call with the same inputs gives another result: randomness, in practice dropout that
    stays on although the module is in eval mode, as the checks run it."""
    with torch.no_grad():
        again = call_learner(module, *args, call=call)
    if (
        isinstance(again, torch.Tensor)
        and again.shape == first.shape
        and not torch.allclose(again, first, rtol=0.0, atol=0.0, equal_nan=True)
    ):
        raise CheckFailed(
            f"{call}: the same input gave two different outputs, so dropout is still on although the check runs "
            "your module in eval mode, as it runs PyTorch's layers. nn.functional.dropout keeps dropping unless it "
            "is given training=self.training; an nn.Dropout module stops after .eval(). This exercise needs no "
            "dropout."
        )


# Exercise 1 ---------------------------------------------------------------------------------------------


@learner_facing
def check_layer_norm(LayerNorm: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check against nn.LayerNorm with the same gain and bias, for two eps values, and the gradients."""
    for d, eps, shape in [(8, 1e-5, (2, 5, 8)), (6, 0.1, (3, 6))]:
        call = f"LayerNorm({d}, eps={eps})"
        norm = built_and_perturbed(LayerNorm, d, eps=eps, seed=seed, call=call)
        for name, default in (("gain", 1.0), ("bias", 0.0)):
            parameter = getattr(norm, name, None)
            if not isinstance(parameter, nn.Parameter) or parameter.shape != (d,):
                raise CheckFailed(
                    f"{call} needs a learnable self.{name} = nn.Parameter of shape ({d},), starting at {default:g}."
                )
        twin = nn.LayerNorm(d, eps=eps)
        with torch.no_grad():
            twin.weight.copy_(norm.gain)
            twin.bias.copy_(norm.bias)
        x = 3 * seeded_randn(*shape, seed=seed) + 1  # features far from mean 0 and variance 1
        out = expect_tensor(
            call_learner(norm, x, call=f"{call}(x) with x {shape_of(x)}"), "LayerNorm", x.shape, x.dtype
        )
        with torch.no_grad():
            expected = twin(x)
        if not torch.allclose(out, expected, atol=1e-5):
            _diagnose_layer_norm(out, x, norm, eps, call)
        expect_close(out, expected, f"{call}(x), compared with nn.LayerNorm")
    _expect_starting_values(LayerNorm, seed)
    _gradcheck(LayerNorm, seed)
    passed("LayerNorm", "equals nn.LayerNorm: biased variance, eps inside the square root, learnable gain and bias")


DEFAULT_EPS = 1e-5


def _diagnose_layer_norm(out, x, norm, eps, call: str) -> None:
    gain, bias = norm.gain.detach(), norm.bias.detach()
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    mistakes = {
        "the variance is the unbiased one (divided by d - 1): layer normalisation divides by d "
        "(x.var(dim=-1, unbiased=False, keepdim=True))": centred / torch.sqrt(x.var(dim=-1, keepdim=True) + eps),
        "eps is added to the standard deviation; it goes inside the square root: sqrt(var + eps)": centred
        / (x.std(dim=-1, unbiased=False, keepdim=True) + eps),
        "the statistics come from the wrong axis; normalise each position over its features (dim=-1)": (
            x - x.mean(dim=0, keepdim=True)
        )
        / torch.sqrt(x.var(dim=0, unbiased=False, keepdim=True) + eps),
        "the statistics come from every position of a sentence together (the last two axes, positions and "
        "features); layer normalisation takes the mean and variance of each position's own d features only "
        "(dim=-1)": F.layer_norm(x, x.shape[-2:], eps=eps),
        "the features are divided by the variance plus eps, not by its square root: the result has standard "
        "deviation about 1/σ instead of 1. The denominator is the standard deviation, √(σ² + ε)": centred
        / (x.var(dim=-1, unbiased=False, keepdim=True) + eps),
    }
    if eps != DEFAULT_EPS:
        ignored = (
            f"the result is the one a fixed eps of {DEFAULT_EPS:g} gives, not the eps={eps:g} this layer was built "
            "with: the layer ignores its eps argument. Keep the eps given to __init__ and use it in forward"
        )
        mistakes[ignored] = centred / torch.sqrt(x.var(dim=-1, unbiased=False, keepdim=True) + DEFAULT_EPS)
    for mistake, normalised in mistakes.items():
        if torch.allclose(out, normalised * gain + bias, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    plain = F.layer_norm(x, x.shape[-1:], eps=eps)
    if torch.allclose(out, plain, atol=1e-5):
        raise CheckFailed(f"{call}: the gain and bias are not applied: return normalised * self.gain + self.bias.")
    if torch.allclose(out, plain * bias + gain, atol=1e-5):
        raise CheckFailed(
            f"{call}: the gain and bias are swapped: the normalised features are multiplied by self.gain "
            "(the scale, starting at 1), then self.bias (the shift, starting at 0) is added."
        )


def _expect_starting_values(LayerNorm: type, seed: int) -> None:  # noqa: N803
    call = "LayerNorm(8)"
    norm = built_with_seed(LayerNorm, 8, seed=seed, call=call)
    gain, bias = norm.gain.detach(), norm.bias.detach()
    if torch.equal(gain, torch.zeros(8)) and torch.equal(bias, torch.ones(8)):
        raise CheckFailed(
            f"{call}: self.gain starts at 0 and self.bias at 1; they are swapped. A new layer norm must change "
            "nothing after normalising: the gain starts at ones, the bias at zeros."
        )
    for name, value, start in (("gain", gain, torch.ones(8)), ("bias", bias, torch.zeros(8))):
        if not torch.equal(value, start):
            raise CheckFailed(
                f"{call}: self.{name} starts at {value.tolist()}; it must start at {start[0].item():g} for every "
                "feature, so that a new layer norm changes nothing after normalising."
            )


def _gradcheck(LayerNorm: type, seed: int) -> None:  # noqa: N803
    norm = built_and_perturbed(LayerNorm, 4, seed=seed, call="LayerNorm(4)").double()
    x = seeded_randn(3, 4, seed=seed + 1, dtype=torch.float64).requires_grad_()
    if not torch.autograd.gradcheck(norm, (x,), raise_exception=False):
        raise CheckFailed("LayerNorm's gradients differ from numerical ones: is every step a tensor operation?")


# Exercise 2 ---------------------------------------------------------------------------------------------


@learner_facing
def check_feed_forward(FeedForward: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check linear2(relu(linear1(x))) with the module's own layers, position by position."""
    call = "FeedForward(d_model=8, d_ff=32)"
    ff = built_and_perturbed(FeedForward, 8, 32, seed=seed, call=call)
    for name, (d_in, d_out) in {"linear1": (8, 32), "linear2": (32, 8)}.items():
        layer = getattr(ff, name, None)
        if not isinstance(layer, nn.Linear) or (layer.in_features, layer.out_features) != (d_in, d_out):
            raise CheckFailed(f"{call} needs self.{name} = nn.Linear({d_in}, {d_out}).")
    x = seeded_randn(2, 5, 8, seed=seed)  # (batch, seq, d_model)
    out = expect_tensor(call_learner(ff, x, call=f"{call}(x) with x {shape_of(x)}"), "FeedForward", x.shape, x.dtype)
    expect_no_dropout(ff, (x,), out, f"{call}(x) with x {shape_of(x)}")
    with torch.no_grad():
        hidden = ff.linear1(x)
        expected = ff.linear2(F.relu(hidden))
        if torch.allclose(out, ff.linear2(hidden), atol=1e-5):
            raise CheckFailed(
                f"{call}: there is no activation between the two layers, so they collapse into one linear map. "
                "Apply ReLU to the hidden layer."
            )
        if torch.allclose(out, ff.linear2(F.gelu(hidden)), atol=1e-5):
            raise CheckFailed(f"{call}: you used GELU; the original transformer (and PyTorch's default) uses ReLU.")
        if torch.allclose(out, F.relu(expected), atol=1e-5):
            raise CheckFailed(
                f"{call}: ReLU is applied to the output too, so no output is ever negative; the network's output "
                "is linear2's, as it is. The ReLU goes on the hidden layer only, between linear1 and linear2."
            )
        if torch.allclose(out, ff.linear2(ff.linear1(F.relu(x))), atol=1e-5):
            raise CheckFailed(
                f"{call}: ReLU is applied to the input x, before linear1, so linear1 and linear2 still follow each "
                "other with nothing between them and act as one linear map. The ReLU goes on the hidden layer, "
                "between linear1 and linear2."
            )
    expect_close(out, expected, f"{call}(x), compared with linear2(relu(linear1(x)))")
    shuffle = torch.randperm(5, generator=torch.Generator().manual_seed(seed))
    expect_close(ff(x[:, shuffle]), out[:, shuffle], f"{call}: each position on its own (shuffled positions)")
    passed("FeedForward", "linear2(relu(linear1(x))), the same network at every position")


# Exercise 3 ---------------------------------------------------------------------------------------------


def torch_encoder_layer(
    layer: nn.Module, num_heads: int, d_ff: int, norm_first: bool, norms_used: dict[str, str] | None = None
) -> nn.TransformerEncoderLayer:
    """An nn.TransformerEncoderLayer (dropout off) holding a copy of a course encoder layer's weights."""
    d_model = layer.norm1.gain.shape[0]
    twin = nn.TransformerEncoderLayer(d_model, num_heads, d_ff, dropout=0.0, batch_first=True, norm_first=norm_first)
    copy_layer(layer, twin, encoder_layer_parameters, norms_used)
    return twin.eval()


ENCODER_SUBLAYERS = ("self-attention", "feed-forward network")


def _encoder_layer_output(layer, norm_first: bool, x, twin_kwargs: dict, norms_used: dict[str, str]) -> torch.Tensor:
    return torch_encoder_layer(layer, 2, 16, norm_first, norms_used)(x, **twin_kwargs)


LAYER_PARTS = {
    "self_attention": MultiHeadAttention,
    "feed_forward": nn.Module,
    "norm1": nn.Module,
    "norm2": nn.Module,
}


@learner_facing
def check_encoder_layer(EncoderLayer: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check post-LN and pre-LN against nn.TransformerEncoderLayer with copied weights, with and without a
    padding mask (with correct LayerNorm and FeedForward in place of the learner's)."""
    with earlier_exercises_replaced(EncoderLayer.__init__, "LayerNorm", "FeedForward"):
        for norm_first in (False, True):
            call = f"EncoderLayer(d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
            layer = built_and_perturbed(EncoderLayer, 8, 2, 16, norm_first=norm_first, seed=seed, call=call)
            _expect_parts(layer, call)
            _compare_layer(layer, call, norm_first, seed)
    passed("EncoderLayer", "equals nn.TransformerEncoderLayer, post-LN and pre-LN, with and without padding")


def _expect_parts(layer: nn.Module, call: str) -> None:
    for name, kind in LAYER_PARTS.items():
        if not isinstance(getattr(layer, name, None), kind):
            raise CheckFailed(
                f"{call} needs self.{name}; the layer's parts are self.self_attention = MultiHeadAttention(...), "
                "self.feed_forward = FeedForward(...), self.norm1 and self.norm2 = LayerNorm(d_model)."
            )
    expect_separate_norms(layer, ("norm1", "norm2"), call)


def _compare_layer(layer: nn.Module, call: str, norm_first: bool, seed: int) -> None:
    x = seeded_randn(2, 5, 8, seed=seed)  # (batch, seq, d_model)
    real = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])  # (batch, seq): the second sequence has 3 words
    for mask, twin_kwargs, what in [
        (None, {}, ""),
        (real[:, None, :], {"src_key_padding_mask": ~real}, " and a padding mask"),
    ]:
        args = (x,) if mask is None else (x, mask)
        with torch.no_grad():
            expected = torch_encoder_layer(layer, 2, 16, norm_first)(x, **twin_kwargs)
            out, failure = attempt(layer, *args, call=f"{call}(x{what})")
            if failure is not None:
                _diagnose_crash(layer, args, expected, f"{call}(x{what})", failure)
                raise failure
            out = expect_tensor(out, "EncoderLayer", x.shape, x.dtype)
            expect_no_dropout(layer, args, out, f"{call}(x{what})")
            other_order = torch_encoder_layer(layer, 2, 16, not norm_first)(x, **twin_kwargs)
        if torch.allclose(out, other_order, atol=1e-5):
            built, wanted = (
                ("pre-LN", "post-LN: x = norm(x + sublayer(x))")
                if not norm_first
                else ("post-LN", "pre-LN: x = x + sublayer(norm(x))")
            )
            raise CheckFailed(f"{call}{what}: you built {built}; norm_first={norm_first} asks for {wanted}.")
        if mask is not None and torch.allclose(out, torch_encoder_layer(layer, 2, 16, norm_first)(x), atol=1e-5):
            raise CheckFailed(f"{call}{what}: the mask had no effect; pass it to self-attention.")
        if not torch.allclose(out, expected, atol=1e-5):
            with torch.no_grad():
                _diagnose_layer(layer, out, args, norm_first, twin_kwargs, f"{call}(x{what})")
                computed_with = functools.partial(_encoder_layer_output, layer, norm_first, x, twin_kwargs)
                expect_own_norms(out, computed_with, ENCODER_SUBLAYERS, f"{call}(x{what})")
        expect_close(out, expected, f"{call}(x{what}), compared with nn.TransformerEncoderLayer with the same weights")


def _diagnose_crash(layer: nn.Module, args: tuple, expected: torch.Tensor, call: str, failure: CheckFailed) -> None:
    """Fail naming the mistake behind a crash, if it is one of the usual ones: the mask passed where the attention
    takes its context, or the attention's (outputs, weights) pair used as a tensor."""
    received = received_by({"self-attention": layer.self_attention}, lambda: layer(*args))["self-attention"]
    mistake = mask_as_context(received, "self-attention", "mask") or pair_used_whole(
        {"self_attention": layer.self_attention}, lambda: layer(*args), expected
    )
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from failure.__cause__


def _diagnose_layer(layer: nn.Module, out: torch.Tensor, args: tuple, norm_first: bool, twin_kwargs, call: str) -> None:
    """Fail naming the mistake, if it is one of the usual ones: an inverted mask, a residual connection wired to
    the wrong stream or missing, or (pre-LN) one that starts from the normalised stream, or a normalised output."""
    if len(args) > 1:
        received = received_by({"self-attention": layer.self_attention}, lambda: layer(*args))["self-attention"]
        given = which_mask(received[0][2], {"mask": args[1]}) if received and len(received[0]) >= 3 else None
        if given == "~mask":
            raise CheckFailed(f"{call}: {inverted_mask(given, 'self-attention')}.")
    padding = twin_kwargs.get("src_key_padding_mask")
    twin = torch_encoder_layer(layer, 2, 16, norm_first)
    for mistake, wrong in residual_variants(_encoder_sublayers(twin, padding), args[0], norm_first):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    if norm_first:
        normalised = normalised_output(out, twin(args[0], **twin_kwargs), {"norm1": twin.norm1, "norm2": twin.norm2})
        if normalised is not None:
            raise CheckFailed(f"{call}: {normalised}.")
    pre_ln = torch_encoder_layer(layer, 2, 16, norm_first=True)
    for wrong in ((True, True), (True, False), (False, True)):
        if torch.allclose(out, _residual_from_normalised(pre_ln, args[0], padding, wrong), atol=1e-5):
            sublayers = zip(("self-attention", "feed-forward network"), ("norm1", "norm2"), wrong, strict=True)
            added = " and ".join(f"the {name}'s output to {norm}(x)" for name, norm, bad in sublayers if bad)
            order = (
                "In pre-LN only the sublayer's input is normalised; its output is added to x itself, which stays "
                "unnormalised from layer to layer: x = x + sublayer(norm(x))."
                if norm_first
                else "Post-LN normalises after the addition: the sublayer's output is added to x itself, and the "
                "sum is normalised: x = norm(x + sublayer(x))."
            )
            raise CheckFailed(f"{call}: the residual connection adds {added}, the normalised stream. {order}")


def _encoder_sublayers(twin: nn.TransformerEncoderLayer, padding) -> list[tuple[str, Callable, Callable]]:
    """The layer's sublayers as (name, norm, function), computed by PyTorch's layer holding the learner's weights."""

    def attention(h):
        return twin.self_attn(h, h, h, key_padding_mask=padding, need_weights=False)[0]

    def feed_forward(h):
        return twin.linear2(F.relu(twin.linear1(h)))

    return [("self-attention", twin.norm1, attention), ("feed-forward network", twin.norm2, feed_forward)]


def _residual_from_normalised(twin: nn.TransformerEncoderLayer, x, padding, wrong: tuple[bool, bool]) -> torch.Tensor:
    """What a layer computes when the residual connections marked in ``wrong`` (self-attention, feed-forward) start
    from the normalised stream, norm(x) + sublayer(norm(x)), and the others are pre-LN's; PyTorch's modules (``twin``)
    holding the learner's weights."""
    for (_, norm, sublayer), from_normalised in zip(_encoder_sublayers(twin, padding), wrong, strict=True):
        normalised = norm(x)
        x = (normalised if from_normalised else x) + sublayer(normalised)
    return x


# Exercise 4 ---------------------------------------------------------------------------------------------


@learner_facing
def check_encoder(Encoder: type, seed: int = 0) -> None:  # noqa: N803 (a class)
    """Check a stack of 3 layers against nn.TransformerEncoder, post-LN and pre-LN (with its final norm)."""
    with earlier_exercises_replaced(Encoder.__init__, "EncoderLayer", "LayerNorm"):
        for norm_first in (False, True):
            call = f"Encoder(num_layers=3, d_model=8, num_heads=2, d_ff=16, norm_first={norm_first})"
            encoder = built_and_perturbed(Encoder, 3, 8, 2, 16, norm_first=norm_first, seed=seed, call=call)
            expect_stack(encoder, call, norm_first)
            _compare_encoder(encoder, call, norm_first, seed)
    passed("Encoder", "equals nn.TransformerEncoder, post-LN and pre-LN with its final norm, with padding")


def _compare_encoder(encoder: nn.Module, call: str, norm_first: bool, seed: int) -> None:
    layer = torch_encoder_layer(encoder.layers[0], 2, 16, norm_first)
    twin = nn.TransformerEncoder(layer, 3, norm=nn.LayerNorm(8) if norm_first else None, enable_nested_tensor=False)
    load_stack(encoder, twin, encoder_layer_parameters)
    x = seeded_randn(2, 5, 8, seed=seed + 1)
    real = torch.tensor([[True] * 5, [True] * 2 + [False] * 3])
    mask = real[:, None, :]  # (batch, 1, seq)
    with torch.no_grad():
        out = call_learner(encoder, x, mask, call=f"{call}(x, padding mask)")
        expected = twin.eval()(x, src_key_padding_mask=~real)
        expect_tensor(out, "Encoder", x.shape, x.dtype)
        if not torch.allclose(out, expected, atol=1e-5):
            _diagnose_encoder(encoder, twin, x, mask, real, out, f"{call}(x, padding mask)")
    expect_close(out, expected, f"{call}(x, padding mask), compared with nn.TransformerEncoder with the same weights")


def _diagnose_encoder(encoder, twin, x, mask, real, out, call: str) -> None:
    """Fail naming the mistake, if it is one of the usual ones: the mask missing, inverted or given to some layers
    only, or the final norm applied after every layer."""
    received = received_by({"layer": encoder.layers[0]}, lambda: encoder(x, mask))["layer"]
    given = which_mask(received[0][1], {"mask": mask}) if received and len(received[0]) >= 2 else None
    if given == "~mask":
        raise CheckFailed(f"{call}: {inverted_mask(given, 'layers')}.")
    partly = stack_masks_mistake(
        encoder, lambda: encoder(x, mask), {"mask": mask}, 1, "self-attention sees the padding"
    )
    if partly is not None:
        raise CheckFailed(f"{call}: {partly}.")
    if given == "no mask":
        raise CheckFailed(
            f"{call}: the layers got no mask, so they attend to the padding; pass the mask to every layer."
        )
    if twin.norm is not None:
        layers = [functools.partial(layer, src_key_padding_mask=~real) for layer in twin.layers]
        if torch.allclose(out, normalised_after_each_layer(x, layers, twin.norm), atol=1e-5):
            raise CheckFailed(f"{call}: {AFTER_EACH_LAYER}.")
