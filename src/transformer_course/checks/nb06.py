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
    broadcast_shape,
    built_with_seed,
    call_learner,
    earlier_exercises_replaced,
    expect_close,
    expect_differentiable,
    expect_tensor,
    learner_facing,
    matches,
    name_python_number_given_to_torch,
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
        gain, bias = norm_weights(stack.norm)
        pytorch_stack.norm.load_state_dict({"weight": gain.detach(), "bias": bias.detach()})


def norm_weights(norm: nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """(gain, bias) of the course's LayerNorm, or of torch's nn.LayerNorm (its weight and bias)."""
    return (norm.weight, norm.bias) if isinstance(norm, nn.LayerNorm) else (norm.gain, norm.bias)


def _is_layer_norm(norm) -> bool:
    """Whether ``norm`` holds a layer norm's gain and bias, under the course's names or nn.LayerNorm's."""
    if isinstance(norm, nn.LayerNorm):
        return norm.weight is not None and norm.bias is not None
    return all(isinstance(getattr(norm, part, None), torch.Tensor) for part in ("gain", "bias"))


def expect_stack(stack: nn.Module, call: str, norm_first: bool, num_layers: int = 3) -> None:
    """Fail unless the stack registers num_layers distinct layers (in an nn.ModuleList, or an nn.Sequential looped
    over) and has a final norm exactly for pre-LN."""
    layers = getattr(stack, "layers", None)
    if not isinstance(layers, nn.ModuleList | nn.Sequential):
        raise CheckFailed(
            f"{call} needs self.layers = nn.ModuleList of {num_layers} layers, so that their weights are registered."
        )
    if len(layers) != num_layers:
        raise CheckFailed(
            f"{call}: self.layers holds {len(layers)} layers; num_layers={num_layers} asks for {num_layers}. Build "
            "as many layers as the num_layers argument says."
        )
    if len({id(layer) for layer in layers}) != num_layers:
        raise CheckFailed(f"{call}: the {num_layers} layers are one and the same object; create a new layer for each.")
    final = getattr(stack, "norm", "missing")
    if norm_first and not (isinstance(final, nn.Module) and _is_layer_norm(final)):
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
                shape = broadcast_shape(given.shape, candidate.shape)
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


def _first_of_pair(module, args, output):
    return output[0] if isinstance(output, tuple) else None  # None: the output as it was


def _pair_swapped(module, args, output):
    return (output[1], output[0]) if isinstance(output, tuple) and len(output) == 2 else None


@contextlib.contextmanager
def outputs_only(parts: Sequence[nn.Module], hook: Callable = _first_of_pair) -> Iterator[None]:
    """Make each of ``parts`` (attention modules) return only the first item of the pair it returns (or what
    ``hook`` makes of it)."""
    handles = [part.register_forward_hook(hook) for part in parts]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def pair_used_whole(attentions: dict[str, nn.Module], run: Callable, expected: torch.Tensor) -> str | None:
    """The mistake, if the learner's code (``run()``) gives ``expected`` once the attentions named (by attribute)
    return their outputs alone: it used the (outputs, weights) pair where it needed the outputs; or once they return
    (weights, outputs): it took the weights, the pair's second item."""
    names = list(attentions)
    tried = [[name] for name in names] + ([names] if len(names) > 1 else [])
    for chosen in tried:
        which = " and ".join(f"self.{name}" for name in chosen)
        returns = f"return{'s' if len(chosen) == 1 else ''} a pair (outputs, weights)"
        mistakes = {
            _first_of_pair: f"{which} {returns}, and your layer used the whole pair where it needs the outputs (a "
            "tensor plus a tuple is a TypeError)",
            _pair_swapped: f"{which} {returns}, and your layer took the second item, the attention weights, where it "
            "needs the outputs, the first (index 0)",
        }
        for hook, mistake in mistakes.items():
            result = None
            with outputs_only([attentions[name] for name in chosen], hook), contextlib.suppress(Exception):
                with torch.no_grad():
                    result = run()
            if matches(result, expected):
                return f"{mistake}. With the outputs taken from the pair, your layer gives the expected result"
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


# eps=0.1 first: with eps=1e-5 where eps is added hardly changes the result, so its mistake would hide behind another
LAYER_NORM_CASES = [(6, 0.1, (3, 6)), (8, 1e-5, (2, 5, 8))]  # (d, eps, shape of x)


@learner_facing
def check_layer_norm(LayerNorm: type, seed: int = 0) -> None:
    """Check against nn.LayerNorm with the same gain and bias, for two eps values, and the gradients."""
    for d, eps, shape in LAYER_NORM_CASES:
        call = f"LayerNorm({d}, eps={eps})"
        norm = built_and_perturbed(LayerNorm, d, eps=eps, seed=seed, call=call)
        for name, default in (("gain", 1.0), ("bias", 0.0)):
            parameter = getattr(norm, name, None)
            if not isinstance(parameter, nn.Parameter) or parameter.shape != (d,):
                raise CheckFailed(
                    f"{call} needs a learnable self.{name} = nn.Parameter of shape ({d},), starting at {default:g}."
                )
            if not parameter.requires_grad:
                raise CheckFailed(
                    f"{call}: self.{name} is an nn.Parameter made with requires_grad=False, so it gets no gradient "
                    "and training never changes it; the gain and bias are learnable. Leave requires_grad at its "
                    "default, True."
                )
        twin = nn.LayerNorm(d, eps=eps)
        with torch.no_grad():
            twin.weight.copy_(norm.gain)
            twin.bias.copy_(norm.bias)
        x = 3 * seeded_randn(*shape, seed=seed) + 1  # features far from mean 0 and variance 1
        with torch.no_grad():
            expected = twin(x)
        out, failure = attempt(norm, x, call=f"{call}(x) with x {shape_of(x)}")
        if failure is not None:
            _diagnose_layer_norm_crash(norm, x, expected, call, failure)
            raise failure
        out = expect_tensor(out, "LayerNorm", x.shape, x.dtype)
        if not torch.allclose(out, expected, atol=1e-5):
            _diagnose_layer_norm(out, x, norm, eps, call)
        expect_close(out, expected, f"{call}(x), compared with nn.LayerNorm")
    _expect_starting_values(LayerNorm, seed)
    _expect_default_eps(LayerNorm, seed)
    _gradcheck(LayerNorm, seed)
    passed("LayerNorm", "equals nn.LayerNorm: biased variance, eps inside the square root, learnable gain and bias")


DEFAULT_EPS = 1e-5


def _diagnose_layer_norm_crash(norm, x: torch.Tensor, expected: torch.Tensor, call: str, failure: CheckFailed) -> None:
    """Fail naming the mistake, if the layer that crashed on a batch normalises one vector of shape (d,) right: its
    statistics lose the reduced axis, so they no longer line up with the features of a batch."""
    d = x.shape[-1]
    try:
        with torch.no_grad():
            each = [call_learner(norm, row, call=f"{call}(x) with x ({d},)") for row in x.reshape(-1, d)]
    except CheckFailed:
        return
    if all(matches(result, row) for result, row in zip(each, expected.reshape(-1, d), strict=True)):
        statistics, kept = tuple(x.shape[:-1]), (*x.shape[:-1], 1)
        raise CheckFailed(
            f"{call}: it normalises a single vector of shape ({d},) right, but raises an error on x "
            f"{shape_of(x)}: there a mean or variance over dim=-1 taken without keepdim=True has shape {statistics}, "
            f"which does not line up with x's features. Keep the reduced axis (keepdim=True), so that the "
            f"statistics have shape {kept} and broadcast against x."
        ) from failure.__cause__


# What an axis of the checks' inputs holds: x is (positions, d) or (batch, seq, d)
AXES = {2: {0: "the positions"}, 3: {0: "the sentences of the batch", 1: "the positions of a sentence"}}


def _diagnose_layer_norm(out, x, norm, eps, call: str) -> None:
    gain, bias = norm.gain.detach(), norm.bias.detach()
    mean = x.mean(dim=-1, keepdim=True)
    centred = x - mean
    variance = x.var(dim=-1, unbiased=False, keepdim=True)
    mistakes = {
        "the variance is the unbiased one (divided by d - 1), and eps is added to the standard deviation: layer "
        "normalisation divides by d, and eps goes inside the square root, sqrt(var + eps) with "
        "x.var(dim=-1, unbiased=False, keepdim=True)": centred / (x.std(dim=-1, keepdim=True) + eps),
        "the variance is the unbiased one (divided by d - 1): layer normalisation divides by d "
        "(x.var(dim=-1, unbiased=False, keepdim=True))": centred / torch.sqrt(x.var(dim=-1, keepdim=True) + eps),
        "eps is added to the standard deviation; it goes inside the square root: sqrt(var + eps)": centred
        / (x.std(dim=-1, unbiased=False, keepdim=True) + eps),
        "the statistics come from every position of a sentence together (the last two axes, positions and "
        "features); layer normalisation takes the mean and variance of each position's own d features only "
        "(dim=-1)": F.layer_norm(x, x.shape[-2:], eps=eps),
        "the features are divided by the variance plus eps, not by its square root: the result has standard "
        "deviation about 1/σ instead of 1. The denominator is the standard deviation, √(σ² + ε)": centred
        / (variance + eps),
        "the mean is not subtracted: the features are divided by their root mean square, sqrt(mean(x²) + eps), "
        "without being centred first. Layer normalisation centres each position's features, then divides by "
        "their standard deviation: (x - mean) / sqrt(var + eps)": x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps),
        "the mean is not subtracted: the features are divided by their standard deviation without being centred "
        "first, so their mean stays. Layer normalisation returns (x - mean) / sqrt(var + eps)": x
        / torch.sqrt(variance + eps),
        "the variance is the mean of the squared features, mean(x²), taken before centring them: that is the "
        "variance only when the mean is 0 (mean(x²) = var + mean²). The variance is the mean of the squared "
        "centred features, mean((x - mean)²)": centred / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + eps),
    }
    variance_first, mean_second = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
    swapped = (
        "the mean and the variance are swapped: torch.var_mean returns (variance, mean), in this order, so "
        "`mean, variance = torch.var_mean(...)` gives each the other's value. Unpack them as variance, mean"
    )
    mistakes[swapped] = (x - variance_first) / torch.sqrt(mean_second + eps)
    mistakes.update(_divided_by_first_axis(x, eps))
    d = x.shape[-1]
    length = (
        "the centred features are divided by their length (norm), the square root of the sum of their squares, "
        f"not by their standard deviation: the sum runs over the d = {d} features where the variance takes their "
        f"mean, so the result is about √d = {d**0.5:.3g} times too small. The variance is the mean of the squared "
        "centred features, their sum divided by d"
    )
    squares = centred.pow(2).sum(dim=-1, keepdim=True)
    ways = (torch.sqrt(squares + eps), torch.sqrt(squares) + eps, torch.sqrt(squares))  # eps inside, outside, none
    candidates = [*mistakes.items(), *((length, centred / by_length) for by_length in ways)]
    for dim, across in AXES[x.dim()].items():
        wrong_axis = (
            f"the statistics come from the wrong axis, dim={dim} of x {shape_of(x)}, across {across}; normalise "
            "each position over its own features, the last axis (dim=-1)"
        )
        candidates.append(
            (
                wrong_axis,
                (x - x.mean(dim=dim, keepdim=True)) / torch.sqrt(x.var(dim=dim, unbiased=False, keepdim=True) + eps),
            )
        )
    if eps != DEFAULT_EPS:
        ignored = (
            f"the result is the one a fixed eps of {DEFAULT_EPS:g} gives, not the eps={eps:g} this layer was built "
            "with: the layer ignores its eps argument. Keep the eps given to __init__ and use it in forward"
        )
        candidates.append((ignored, centred / torch.sqrt(variance + DEFAULT_EPS)))
    for mistake, normalised in candidates:  # equal_nan: a swapped mean and variance may take a negative's root
        if torch.allclose(out, normalised * gain + bias, atol=1e-5, equal_nan=True):
            raise CheckFailed(f"{call}: {mistake}.")
    plain = F.layer_norm(x, x.shape[-1:], eps=eps)
    if torch.allclose(out, plain, atol=1e-5):
        raise CheckFailed(f"{call}: the gain and bias are not applied: return normalised * self.gain + self.bias.")
    if torch.allclose(out, plain * bias + gain, atol=1e-5):
        raise CheckFailed(
            f"{call}: the gain and bias are swapped: the normalised features are multiplied by self.gain "
            "(the scale, starting at 1), then self.bias (the shift, starting at 0) is added."
        )


def _divided_by_first_axis(x: torch.Tensor, eps: float) -> dict[str, torch.Tensor]:
    """The normalised features a layer norm gives whose sums over the features are divided by len(x), the length of
    x's first axis, instead of by d: for the mean, the variance or both."""
    n, d = x.shape[0], x.shape[-1]
    right_mean = x.mean(dim=-1, keepdim=True)
    variants = {}
    for which, mean_by, variance_by in (
        ("the mean and the variance", n, n),
        ("the mean", n, d),
        ("the variance", d, n),
    ):
        mean = x.sum(dim=-1, keepdim=True) / mean_by if mean_by != d else right_mean
        variance = (x - mean).pow(2).sum(dim=-1, keepdim=True) / variance_by
        both = which.startswith("the mean and")
        mistake = (
            f"{which} {'divide their sums' if both else 'divides its sum'} over the features by {n}, the length of "
            f"the first axis of x {shape_of(x)} (what len(x) gives), not by the number of features, d = {d}, the "
            "length of the last axis. Use x.shape[-1], or take the mean over dim=-1"
        )
        variants[mistake] = (x - mean) / torch.sqrt(variance + eps)
    return variants


def _expect_starting_values(LayerNorm: type, seed: int) -> None:
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


def _expect_default_eps(LayerNorm: type, seed: int) -> None:
    """Fail unless LayerNorm(8), built without eps, equals nn.LayerNorm(8) (eps=1e-5) on features of variance about
    1e-6, where eps decides much of the result: EncoderLayer and Encoder build their norms so."""
    call = "LayerNorm(8)"
    norm = built_and_perturbed(LayerNorm, 8, seed=seed, call=call)
    twin = nn.LayerNorm(8)  # PyTorch's default eps
    with torch.no_grad():
        twin.weight.copy_(norm.gain)
        twin.bias.copy_(norm.bias)
    x = 1e-3 * seeded_randn(2, 5, 8, seed=seed + 3)  # (2, 5, 8): variance about 1e-6, below eps
    with torch.no_grad():
        out = expect_tensor(
            call_learner(norm, x, call=f"{call}(x) with x {shape_of(x)}"), "LayerNorm", x.shape, x.dtype
        )
        expected = twin(x)
    if torch.allclose(out, expected, atol=1e-5):
        return
    small = f"{call}(x), built without eps, on x {shape_of(x)} whose features have a variance of about 1e-6"
    default = getattr(norm, "eps", None)
    if isinstance(default, float | int) and not isinstance(default, bool) and default != DEFAULT_EPS:
        with torch.no_grad():
            theirs = F.layer_norm(x, (8,), twin.weight, twin.bias, eps=float(default))
        if torch.allclose(out, theirs, atol=1e-5):
            raise CheckFailed(
                f"{small}: your default is eps={default:g}, not PyTorch's 1e-5, and where the variance is as small "
                "as eps the two give clearly different results. EncoderLayer and Encoder build LayerNorm(d_model) "
                f"without eps, so they use the default: make it eps={DEFAULT_EPS:g}, as nn.LayerNorm's is."
            )
    expect_close(out, expected, f"{small}, compared with nn.LayerNorm(8), whose default eps is {DEFAULT_EPS:g}")


def _gradcheck(LayerNorm: type, seed: int) -> None:
    norm = built_and_perturbed(LayerNorm, 4, seed=seed, call="LayerNorm(4)").double()
    x = seeded_randn(3, 4, seed=seed + 1, dtype=torch.float64).requires_grad_()
    call = f"LayerNorm(4)(x) with x {shape_of(x)} that requires grad"
    expect_differentiable(call_learner(norm, x, call=call), call, source=x)
    _expect_gradient_through_statistics(norm, x, seed, call)
    if not torch.autograd.gradcheck(norm, (x,), raise_exception=False):
        raise CheckFailed("LayerNorm's gradients differ from numerical ones: is every step a tensor operation?")


def _expect_gradient_through_statistics(norm: nn.Module, x: torch.Tensor, seed: int, call: str) -> None:
    """Fail if the gradient that reaches x is the one a layer norm gives whose mean or variance is a constant
    (detached): right values, but a gradient that leaves out how the statistics change with x."""
    upstream = seeded_randn(*x.shape, seed=seed + 2, dtype=x.dtype)
    (gradient,) = torch.autograd.grad(call_learner(norm, x, call=call), x, upstream)
    for which, detach_mean, detach_variance in (
        ("mean and variance are constants", True, True),
        ("mean is a constant", True, False),
        ("variance is a constant", False, True),
    ):
        if torch.allclose(gradient, _gradient_with_constants(norm, x, upstream, detach_mean, detach_variance)):
            raise CheckFailed(
                f"{call}: the values are right, but the gradient that reaches x is the one of a layer norm whose "
                f"{which} (.detach() or .data). The statistics are computed from x, so changing x changes them "
                "too, and the gradient must flow through them: remove .detach() (or .data) from the statistics."
            )


def _gradient_with_constants(norm, x, upstream, detach_mean: bool, detach_variance: bool) -> torch.Tensor:
    """The gradient with respect to x of a layer norm (the module's gain and bias, the default eps: the check builds
    LayerNorm(4)) whose mean, variance or both are taken as constants."""
    x = x.detach().clone().requires_grad_()
    mean = x.mean(dim=-1, keepdim=True)
    variance = x.var(dim=-1, unbiased=False, keepdim=True)
    mean = mean.detach() if detach_mean else mean
    variance = variance.detach() if detach_variance else variance
    out = (x - mean) / torch.sqrt(variance + DEFAULT_EPS) * norm.gain.detach() + norm.bias.detach()
    (gradient,) = torch.autograd.grad(out, x, upstream)
    return gradient


# Exercise 2 ---------------------------------------------------------------------------------------------


FF_D_MODEL, FF_D_FF = 8, 16  # a hidden width that is not 4 * d_model, so that a width fixed at 4 * d_model shows
FF_D_FFS = (FF_D_FF, 24, 12)  # by the seed: a hidden test's width is not the visible test's either
OTHER_ACTIVATIONS = {
    "GELU": F.gelu,
    "GELU (its tanh approximation)": functools.partial(F.gelu, approximate="tanh"),
    "tanh": torch.tanh,
    "the sigmoid": torch.sigmoid,
    "SiLU": F.silu,
    "leaky ReLU": F.leaky_relu,
    "ELU": F.elu,
    "softplus": F.softplus,
}


@learner_facing
def check_feed_forward(FeedForward: type, seed: int = 0) -> None:
    """Check linear2(relu(linear1(x))) with the module's own layers, position by position; the hidden layer's width
    d_ff comes with the seed (16 for the visible test, never 4 * d_model)."""
    d_model, d_ff = FF_D_MODEL, FF_D_FFS[seed % len(FF_D_FFS)]
    call = f"FeedForward(d_model={d_model}, d_ff={d_ff})"
    ff = built_and_perturbed(FeedForward, d_model, d_ff, seed=seed, call=call)
    _expect_linears(ff, d_model, d_ff, call)
    x = seeded_randn(2, 5, d_model, seed=seed)  # (batch, seq, d_model)
    out, failure = attempt(ff, x, call=f"{call}(x) with x {shape_of(x)}")
    if failure is not None:
        _diagnose_feed_forward_crash(ff, x, call, failure)
        raise failure
    out = expect_tensor(out, "FeedForward", x.shape, x.dtype)
    expect_no_dropout(ff, (x,), out, f"{call}(x) with x {shape_of(x)}")
    with torch.no_grad():
        hidden = ff.linear1(x)
        expected = ff.linear2(F.relu(hidden))
        if not torch.allclose(out, expected, atol=1e-5):
            _diagnose_feed_forward(ff, x, out, expected, call)
    expect_close(out, expected, f"{call}(x), compared with linear2(relu(linear1(x)))")
    shuffle = torch.randperm(5, generator=torch.Generator().manual_seed(seed))
    expect_close(ff(x[:, shuffle]), out[:, shuffle], f"{call}: each position on its own (shuffled positions)")
    x = x.clone().requires_grad_()
    call = f"{call}(x) with x {shape_of(x)} that requires grad"
    expect_differentiable(call_learner(ff, x, call=call), call, source=x)
    passed("FeedForward", "linear2(relu(linear1(x))), the same network at every position")


def _expect_linears(ff: nn.Module, d_model: int, d_ff: int, call: str) -> None:
    """Fail unless linear1 and linear2 are nn.Linear(d_model, d_ff) and nn.Linear(d_ff, d_model), with biases."""
    layers = {name: getattr(ff, name, None) for name in ("linear1", "linear2")}
    widths = {
        name: (layer.in_features, layer.out_features) for name, layer in layers.items() if isinstance(layer, nn.Linear)
    }
    if widths == {"linear1": (d_model, 4 * d_model), "linear2": (4 * d_model, d_model)}:
        raise CheckFailed(
            f"{call}: the hidden layer has 4·d_model = {4 * d_model} units, not the d_ff={d_ff} the module was "
            "given. Four times d_model is only the usual choice of d_ff: use the d_ff argument, "
            "nn.Linear(d_model, d_ff) and nn.Linear(d_ff, d_model)."
        )
    for name, (d_in, d_out) in {"linear1": (d_model, d_ff), "linear2": (d_ff, d_model)}.items():
        if widths.get(name) != (d_in, d_out):
            raise CheckFailed(f"{call} needs self.{name} = nn.Linear({d_in}, {d_out}).")
    unbiased = [
        (f"self.{name}", f"b{number}") for number, (name, layer) in enumerate(layers.items(), 1) if layer.bias is None
    ]
    if unbiased:
        names, biases = (" and ".join(part) for part in zip(*unbiased, strict=True))
        raise CheckFailed(
            f"{call}: {names} {'has' if len(unbiased) == 1 else 'have'} no bias (bias=False), but the formula adds "
            f"{biases}: W2 ReLU(W1 x + b1) + b2. Keep nn.Linear's bias, which it has by default."
        )


def _diagnose_feed_forward_crash(ff: nn.Module, x: torch.Tensor, call: str, failure: CheckFailed) -> None:
    """Fail naming the mistake, if the crash comes from running linear2 first, on x; from a torch function given a
    Python number (torch.maximum(h, 0)); or from the formula's W x, which works on a single vector only."""
    name_python_number_given_to_torch(failure)
    order = []
    received_by({"linear1": ff.linear1, "linear2": ff.linear2}, lambda: ff(x), order)
    if order[:1] == ["linear2"]:
        raise CheckFailed(
            f"{call}(x): self.linear2 runs first, on x, whose {x.shape[-1]} features are d_model, not the d_ff it "
            "takes. The input goes through linear1 (d_model to d_ff), then ReLU, then linear2 (d_ff back to "
            "d_model)."
        ) from failure.__cause__
    if not order and _right_on_one_vector(ff, x[0, 0], call):  # the layers' weights used, the layers never called
        raise CheckFailed(
            f"{call}(x): it computes a single vector of shape ({x.shape[-1]},) right, but raises an error on x "
            f"{shape_of(x)}. weight @ x follows the formula's W1 x, where x is one column, and works for a single "
            "vector only. PyTorch keeps the positions in rows, with the features on the last axis, so a layer "
            "multiplies by its weight from the right, x @ W.T, which is what calling the layer, self.linear1(x), does."
        ) from failure.__cause__


def _right_on_one_vector(ff: nn.Module, vector: torch.Tensor, call: str) -> bool:
    """Whether the learner's network gives linear2(relu(linear1(v))) for one vector v of shape (d_model,)."""
    try:
        with torch.no_grad():
            out = call_learner(ff, vector, call=f"{call}(x) with x {shape_of(vector)}")
    except CheckFailed:
        return False
    with torch.no_grad():
        return matches(out, ff.linear2(F.relu(ff.linear1(vector))))


def _diagnose_feed_forward(ff: nn.Module, x: torch.Tensor, out: torch.Tensor, expected: torch.Tensor, call: str):
    """Fail naming the mistake, if it is one of the usual ones: no activation or another one, ReLU in the wrong
    place, a bias left out."""
    if torch.allclose(out, x + expected, atol=1e-5):
        raise CheckFailed(
            f"{call}: the output is x + linear2(relu(linear1(x))), with a residual connection inside the network. "
            "The feed-forward network returns linear2's output alone; the residual connection around it belongs to "
            "the encoder layer (section 3), which adds each sublayer's output to the sublayer's input."
        )
    hidden = ff.linear1(x)
    if torch.allclose(out, ff.linear2(hidden), atol=1e-5):
        raise CheckFailed(
            f"{call}: there is no activation between the two layers, so they collapse into one linear map. "
            "Apply ReLU to the hidden layer."
        )
    for name, activation in OTHER_ACTIVATIONS.items():
        if torch.allclose(out, ff.linear2(activation(hidden)), atol=1e-5):
            raise CheckFailed(
                f"{call}: you used {name}; the original transformer (and PyTorch's default) uses ReLU, as the "
                "formula says."
            )
    if torch.allclose(out, F.relu(expected), atol=1e-5):
        raise CheckFailed(
            f"{call}: ReLU is applied to the output too, so no output is ever negative; the network's output "
            "is linear2's, as it is. The ReLU goes on the hidden layer only, between linear1 and linear2."
        )
    if torch.allclose(out, F.relu(ff.linear2(hidden)), atol=1e-5):
        raise CheckFailed(
            f"{call}: ReLU is applied to the output only, after linear2: linear1 and linear2 follow each other with "
            "nothing between them and act as one linear map, and no output is ever negative. The ReLU goes on the "
            "hidden layer, between linear1 and linear2, and linear2's output is returned as it is."
        )
    if torch.allclose(out, ff.linear2(ff.linear1(F.relu(x))), atol=1e-5):
        raise CheckFailed(
            f"{call}: ReLU is applied to the input x, before linear1, so linear1 and linear2 still follow each "
            "other with nothing between them and act as one linear map. The ReLU goes on the hidden layer, "
            "between linear1 and linear2."
        )
    first, second = ff.linear1, ff.linear2
    for left_out, with_b1, with_b2 in (("b1 and b2 are", False, False), ("b1 is", False, True), ("b2 is", True, False)):
        hidden = F.relu(F.linear(x, first.weight, first.bias if with_b1 else None))
        if torch.allclose(out, F.linear(hidden, second.weight, second.bias if with_b2 else None), atol=1e-5):
            raise CheckFailed(
                f"{call}: {left_out} left out of W2 ReLU(W1 x + b1) + b2, where b1 is linear1's bias and b2 "
                "linear2's. Calling a layer, self.linear1(x), adds its bias; its weight alone leaves the bias out."
            )


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
D_MODEL, D_FF = 8, 16
# (norm_first, num_heads): pre-LN with other heads than post-LN, so that a layer that fixes num_heads shows
LAYER_CASES = ((False, 2), (True, 4))


def _encoder_layer_output(
    layer, heads: int, norm_first: bool, x, twin_kwargs: dict, norms_used: dict[str, str]
) -> torch.Tensor:
    return torch_encoder_layer(layer, heads, D_FF, norm_first, norms_used)(x, **twin_kwargs)


LAYER_PARTS = {
    "self_attention": MultiHeadAttention,
    "feed_forward": nn.Module,
    "norm1": nn.Module,
    "norm2": nn.Module,
}


@learner_facing
def check_encoder_layer(EncoderLayer: type, seed: int = 0) -> None:
    """Check post-LN and pre-LN against nn.TransformerEncoderLayer with copied weights, with and without a
    padding mask (with correct LayerNorm and FeedForward in place of the learner's)."""
    with earlier_exercises_replaced(EncoderLayer.__init__, "LayerNorm", "FeedForward"):
        for norm_first, heads in LAYER_CASES:
            call = f"EncoderLayer(d_model={D_MODEL}, num_heads={heads}, d_ff={D_FF}, norm_first={norm_first})"
            layer = built_and_perturbed(EncoderLayer, D_MODEL, heads, D_FF, norm_first=norm_first, seed=seed, call=call)
            _expect_parts(layer, call, heads)
            _compare_layer(layer, call, norm_first, heads, seed)
    passed("EncoderLayer", "equals nn.TransformerEncoderLayer, post-LN and pre-LN, with and without padding")


def _expect_parts(layer: nn.Module, call: str, heads: int, d_model: int = D_MODEL, d_ff: int = D_FF) -> None:
    for name, kind in LAYER_PARTS.items():
        if not isinstance(getattr(layer, name, None), kind):
            raise CheckFailed(
                f"{call} needs self.{name}; the layer's parts are self.self_attention = MultiHeadAttention(...), "
                "self.feed_forward = FeedForward(...), self.norm1 and self.norm2 = LayerNorm(d_model)."
            )
    for name in ("norm1", "norm2"):
        norm = getattr(layer, name)
        if isinstance(norm, nn.LayerNorm):
            raise CheckFailed(
                f"{call}: self.{name} is torch's nn.LayerNorm; the layer is built from your own LayerNorm of "
                f"exercise 1, self.{name} = LayerNorm(d_model). The check and section 5 copy weights into your "
                "layer through its norms' gain and bias, which nn.LayerNorm names weight and bias."
            )
        if not all(isinstance(getattr(norm, part, None), torch.Tensor) for part in ("gain", "bias")):
            raise CheckFailed(f"{call} needs self.{name} = LayerNorm(d_model), your layer norm with its gain and bias.")
    expect_separate_norms(layer, ("norm1", "norm2"), call)
    if layer.self_attention.num_heads != heads:
        raise CheckFailed(
            f"{call}: self.self_attention has {layer.self_attention.num_heads} heads, not the num_heads={heads} the "
            "layer was given: build it as MultiHeadAttention(d_model, num_heads)."
        )
    linears = [getattr(layer.feed_forward, name, None) for name in ("linear1", "linear2")]
    if not all(isinstance(linear, nn.Linear) for linear in linears):
        raise CheckFailed(
            f"{call} needs self.feed_forward = FeedForward(d_model, d_ff), the network of exercise 2 with its "
            "linear1 and linear2."
        )
    hidden = linears[0].out_features
    if hidden != d_ff:
        usual = " = 4·d_model, the usual choice" if hidden == 4 * d_model else ""
        raise CheckFailed(
            f"{call}: self.feed_forward has a hidden layer of {hidden} units{usual}, not the d_ff={d_ff} the layer "
            "was given: build it as FeedForward(d_model, d_ff)."
        )


def _compare_layer(layer: nn.Module, call: str, norm_first: bool, heads: int, seed: int) -> None:
    x = seeded_randn(2, 5, 8, seed=seed)  # (batch, seq, d_model)
    real = torch.tensor([[True] * 5, [True] * 3 + [False] * 2])  # (batch, seq): the second sequence has 3 words
    for mask, twin_kwargs, what in [
        (None, {}, ""),
        (real[:, None, :], {"src_key_padding_mask": ~real}, " and a padding mask"),
    ]:
        args = (x,) if mask is None else (x, mask)
        with torch.no_grad():
            expected = torch_encoder_layer(layer, heads, D_FF, norm_first)(x, **twin_kwargs)
            out, failure = attempt(layer, *args, call=f"{call}(x{what})")
            if failure is not None:
                _diagnose_crash(layer, args, expected, f"{call}(x{what})", failure)
                raise failure
            out = expect_tensor(out, "EncoderLayer", x.shape, x.dtype)
            expect_no_dropout(layer, args, out, f"{call}(x{what})")
            other_order = torch_encoder_layer(layer, heads, D_FF, not norm_first)(x, **twin_kwargs)
        if torch.allclose(out, other_order, atol=1e-5):
            built, wanted = (
                ("pre-LN", "post-LN: x = norm(x + sublayer(x))")
                if not norm_first
                else ("post-LN", "pre-LN: x = x + sublayer(norm(x))")
            )
            raise CheckFailed(f"{call}{what}: you built {built}; norm_first={norm_first} asks for {wanted}.")
        if mask is not None:
            with torch.no_grad():
                without_mask = torch_encoder_layer(layer, heads, D_FF, norm_first)(x)
            if torch.allclose(out, without_mask, atol=1e-5):
                raise CheckFailed(f"{call}{what}: the mask had no effect; pass it to self-attention.")
        if not torch.allclose(out, expected, atol=1e-5):
            with torch.no_grad():
                _diagnose_layer(layer, heads, out, args, norm_first, twin_kwargs, f"{call}(x{what})")
                computed_with = functools.partial(_encoder_layer_output, layer, heads, norm_first, x, twin_kwargs)
                expect_own_norms(out, computed_with, ENCODER_SUBLAYERS, f"{call}(x{what})")
        expect_close(out, expected, f"{call}(x{what}), compared with nn.TransformerEncoderLayer with the same weights")
    x = x.clone().requires_grad_()
    call = f"{call}(x, padding mask) with x {shape_of(x)} that requires grad"
    expect_differentiable(call_learner(layer, x, real[:, None, :], call=call), call, source=x)


def _diagnose_crash(layer: nn.Module, args: tuple, expected: torch.Tensor, call: str, failure: CheckFailed) -> None:
    """Fail naming the mistake behind a crash, if it is one of the usual ones: the mask passed where the attention
    takes its context, a tensor of numbers passed where it takes its mask (nn.MultiheadAttention's query, key,
    value), a mask given an axis for the heads, or the attention's (outputs, weights) pair used as a tensor."""
    received = received_by({"self-attention": layer.self_attention}, lambda: layer(*args))["self-attention"]
    mistake = (
        mask_as_context(received, "self-attention", "mask")
        or _numbers_as_mask(received)
        or _mask_with_head_axis(received, args[1] if len(args) > 1 else None)
        or pair_used_whole({"self_attention": layer.self_attention}, lambda: layer(*args), expected)
    )
    if mistake is not None:
        raise CheckFailed(f"{call}: {mistake}.") from failure.__cause__


def _numbers_as_mask(calls: list[list]) -> str | None:
    """The mistake, if the attention received a tensor of numbers (not True/False) as its mask, its third
    parameter: the call of nn.MultiheadAttention, attention(query, key, value)."""
    for arguments in calls:
        mask = arguments[2] if len(arguments) >= 3 else None
        if isinstance(mask, torch.Tensor) and mask.is_floating_point():
            return (
                f"the self-attention received a tensor of numbers, of shape {shape_of(mask)}, as its mask: its third "
                "positional parameter is the mask. This attention is called as forward(x, context=None, mask=None), "
                "not as nn.MultiheadAttention(query, key, value): for self-attention pass the sublayer's input once, "
                "and the mask by name"
            )
    return None


def _mask_with_head_axis(calls: list[list], mask: torch.Tensor | None) -> str | None:
    """The mistake, if the attention received the layer's mask with an axis added (for the heads): 4 axes where the
    module takes a mask broadcastable to (batch, seq, seq) and adds the head axis itself."""
    for arguments in calls:
        given = arguments[2] if len(arguments) >= 3 else None
        if (
            isinstance(given, torch.Tensor)
            and mask is not None
            and given.dim() == mask.dim() + 1
            and given.numel() == mask.numel()
            and torch.equal(given.flatten(), mask.flatten())
        ):
            return (
                f"the self-attention received the mask with an axis added, shape {shape_of(given)} instead of "
                f"{shape_of(mask)}. This attention adds the axis for the heads itself and takes a mask "
                "broadcastable to (batch, seq, seq): pass the mask on as it came"
            )
    return None


def _mask_transposed(calls: list[list], mask: torch.Tensor) -> str | None:
    """The mistake, if the attention received the padding mask (batch, 1, seq) transposed, (batch, seq, 1), which
    hides queries (rows of the scores) instead of keys (columns)."""
    for arguments in calls:
        given = arguments[2] if len(arguments) >= 3 else None
        if isinstance(given, torch.Tensor) and matches(given, mask.transpose(-2, -1)) and given.shape != mask.shape:
            return (
                f"the self-attention received the mask transposed, shape {shape_of(given)} instead of "
                f"{shape_of(mask)}: it hides queries (rows of the scores) instead of keys (columns), so a padding "
                "position sees no key at all, and its softmax over nothing but -inf gives nan. The padding mask "
                "(batch, 1, seq) hides the padded keys from every query: pass it on as it came"
            )
    return None


def _diagnose_layer(
    layer: nn.Module, heads: int, out: torch.Tensor, args: tuple, norm_first: bool, twin_kwargs, call: str
) -> None:
    """Fail naming the mistake, if it is one of the usual ones: an inverted mask, a residual connection wired to
    the wrong stream or missing, or (pre-LN) one that starts from the normalised stream, or a normalised output."""
    if len(args) > 1:
        received = received_by({"self-attention": layer.self_attention}, lambda: layer(*args))["self-attention"]
        given = which_mask(received[0][2], {"mask": args[1]}) if received and len(received[0]) >= 3 else None
        if given == "~mask":
            raise CheckFailed(f"{call}: {inverted_mask(given, 'self-attention')}.")
        transposed = _mask_transposed(received, args[1])
        if transposed is not None:
            raise CheckFailed(f"{call}: {transposed}.")
    padding = twin_kwargs.get("src_key_padding_mask")
    twin = torch_encoder_layer(layer, heads, D_FF, norm_first)
    received = received_by({"self-attention": layer.self_attention}, lambda: layer(*args))["self-attention"]
    context = other_context(received, {"the layer's input x": args[0], "norm1(x)": twin.norm1(args[0])})
    if context is not None:
        raise CheckFailed(f"{call}: {context}.")
    sublayers = _encoder_sublayers(twin, padding)
    for mistake, wrong in residual_variants(sublayers, args[0], norm_first):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    for mistake, wrong in step_variants(sublayers, args[0], norm_first):
        if torch.allclose(out, wrong, atol=1e-5):
            raise CheckFailed(f"{call}: {mistake}.")
    if torch.allclose(out, _side_by_side(sublayers, args[0], norm_first), atol=1e-5):
        raise CheckFailed(
            f"{call}: the feed-forward network reads the layer's input x, not the stream as the self-attention step "
            "left it, so the two sublayers work side by side. In this layer they work one after the other: the "
            "feed-forward network's input is x after the self-attention's residual step"
            + (", through norm2." if norm_first else ".")
        )
    if norm_first:
        normalised = normalised_output(out, twin(args[0], **twin_kwargs), {"norm1": twin.norm1, "norm2": twin.norm2})
        if normalised is not None:
            raise CheckFailed(f"{call}: {normalised}.")
    pre_ln = torch_encoder_layer(layer, heads, D_FF, norm_first=True)
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


STEPS = {
    "post-LN": "x = norm(x + sublayer(x))",
    "pre-LN": "x = x + sublayer(norm(x))",
    "normalised output": "x = x + norm(sublayer(x))",
    "norm beside": "x = norm(x) + sublayer(x)",
    "no norm": "x = x + sublayer(x)",
    "sandwich": "x = x + norm(sublayer(norm(x)))",
}


def _step(kind: str, norm: Callable, sublayer: Callable, x: torch.Tensor) -> torch.Tensor:
    if kind == "post-LN":
        return norm(x + sublayer(x))
    if kind == "pre-LN":
        return x + sublayer(norm(x))
    if kind == "normalised output":
        return x + norm(sublayer(x))
    if kind == "norm beside":
        return norm(x) + sublayer(x)
    if kind == "sandwich":
        return x + norm(sublayer(norm(x)))
    return x + sublayer(x)


def step_variants(
    sublayers: Sequence[tuple[str, Callable, Callable]], x: torch.Tensor, norm_first: bool
) -> Iterator[tuple[str, torch.Tensor]]:
    """(mistake, output) for a layer whose sublayers take steps of another kind than norm_first asks for: pre-LN
    steps in a post-LN layer (or the reverse) for some sublayers, x + norm(sublayer(x)), which normalises the
    sublayer's output before adding it, norm(x) + sublayer(x), which normalises x alone, or x + sublayer(x), whose
    norm never reaches the stream. ``sublayers`` are (name, norm, function), as for ``residual_variants``."""
    wanted = "pre-LN" if norm_first else "post-LN"
    other = "post-LN" if norm_first else "pre-LN"
    for kinds in itertools.product(STEPS, repeat=len(sublayers)):
        if set(kinds) in ({wanted}, {other}):  # right, or the other order throughout (told before)
            continue
        h = x
        for (_, norm, sublayer), kind in zip(sublayers, kinds, strict=True):
            h = _step(kind, norm, sublayer, h)
        yield _steps_mistake([name for name, _, _ in sublayers], kinds, norm_first), h


def _steps_mistake(names: Sequence[str], kinds: Sequence[str], norm_first: bool) -> str:
    wanted = "pre-LN" if norm_first else "post-LN"
    told = []
    for kind in STEPS:
        used_by = [number for number, used in enumerate(kinds, start=1) if used == kind]
        if kind == wanted or not used_by:
            continue
        subject = " and ".join(f"the {names[number - 1]}" for number in used_by)
        steps = "step is" if len(used_by) == 1 else "steps are"
        norms = " and ".join(f"norm{number}" for number in used_by)
        if kind == "normalised output":
            told.append(
                f"{subject} {steps} {STEPS[kind]}: the norm is applied to the sublayer's output before the "
                "addition, so the sum itself is never normalised"
            )
        elif kind == "norm beside":
            told.append(
                f"{subject} {steps} {STEPS[kind]}: the norm is applied to x alone, and the sublayer's output, "
                "computed from x, is added after it, so the sum itself is never normalised"
            )
        elif kind == "sandwich":
            told.append(
                f"{subject} {steps} {STEPS[kind]}: the norm is applied to the sublayer's output as well as to its "
                "input (a 'sandwich' norm, which some later models use with a second norm of its own). Here each "
                "sublayer's norm is applied once"
            )
        elif kind == "no norm":
            told.append(
                f"{subject} {steps} {STEPS[kind]}, with no norm: what {norms} returns never reaches the stream "
                "(computed and left unused, or never computed)"
            )
        else:
            told.append(f"{subject} {steps} {kind}, {STEPS[kind]}")
    return "; ".join(told) + f". norm_first={norm_first} asks for {wanted} around every sublayer: {STEPS[wanted]}"


def _side_by_side(sublayers: Sequence[tuple[str, Callable, Callable]], x: torch.Tensor, norm_first: bool):
    """What a layer computes whose feed-forward network reads the layer's input x, not the stream after
    self-attention (the sublayers side by side, as in a parallel block)."""
    (_, norm1, attention), (_, norm2, feed_forward) = sublayers
    if norm_first:
        return x + attention(norm1(x)) + feed_forward(norm2(x))
    return norm2(norm1(x + attention(x)) + feed_forward(x))


def other_context(calls: list[list], known: dict[str, torch.Tensor]) -> str | None:
    """The mistake, if a self-attention was given a context (its keys and values) other than its queries' input;
    ``known`` names tensors the two may be."""

    def named(tensor: torch.Tensor) -> str:
        return next((name for name, value in known.items() if matches(tensor, value)), "another tensor")

    for arguments in calls:
        query, context = arguments[0], arguments[1] if len(arguments) >= 2 else None
        if not isinstance(context, torch.Tensor) or context.dtype == torch.bool or not isinstance(query, torch.Tensor):
            continue
        if not matches(context, query):
            return (
                f"the self-attention takes its queries from {named(query)} but its keys and values from "
                f"{named(context)}, passed as its context. In self-attention all three come from the same "
                "sequence, the sublayer's input: call it without a context, self_attention(h, mask=mask)"
            )
    return None


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
def check_encoder(Encoder: type, seed: int = 0) -> None:
    """Check a stack of 3 layers against nn.TransformerEncoder, post-LN and pre-LN (with its final norm)."""
    with earlier_exercises_replaced(Encoder.__init__, "EncoderLayer", "LayerNorm"):
        for norm_first, heads in LAYER_CASES:
            call = f"Encoder(num_layers=3, d_model={D_MODEL}, num_heads={heads}, d_ff={D_FF}, norm_first={norm_first})"
            try:
                encoder = built_and_perturbed(
                    Encoder, 3, D_MODEL, heads, D_FF, norm_first=norm_first, seed=seed, call=call
                )
            except CheckFailed as failure:
                if failure.__cause__ is not None:
                    _diagnose_encoder_build(Encoder, norm_first, heads, seed, call, failure)
                raise
            expect_stack(encoder, call, norm_first)
            _expect_layers_as_asked(encoder, call, heads)
            _compare_encoder(encoder, call, norm_first, heads, seed)
    passed("Encoder", "equals nn.TransformerEncoder, post-LN and pre-LN with its final norm, with padding")


def _expect_layers_as_asked(encoder: nn.Module, call: str, heads: int) -> None:
    """Fail unless every layer has the encoder's num_heads and d_ff: a stack that builds its layers with sizes of
    its own (4 * d_model) cannot be compared with PyTorch's."""
    for number, layer in enumerate(encoder.layers, start=1):
        got = getattr(getattr(layer, "self_attention", None), "num_heads", heads)
        if got != heads:
            raise CheckFailed(
                f"{call}: layer {number}'s self-attention has {got} heads, not the num_heads={heads} the encoder was "
                "given: pass num_heads on to every EncoderLayer."
            )
        linear1 = getattr(getattr(layer, "feed_forward", None), "linear1", None)
        hidden = linear1.out_features if isinstance(linear1, nn.Linear) else D_FF
        if hidden != D_FF:
            usual = " = 4·d_model, the usual choice" if hidden == 4 * D_MODEL else ""
            raise CheckFailed(
                f"{call}: layer {number}'s feed-forward network has a hidden layer of {hidden} units{usual}, not the "
                f"d_ff={D_FF} the encoder was given: pass d_ff on to every EncoderLayer."
            )


def _compare_encoder(encoder: nn.Module, call: str, norm_first: bool, heads: int, seed: int) -> None:
    layer = torch_encoder_layer(encoder.layers[0], heads, D_FF, norm_first)
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
            _diagnose_encoder(encoder, twin, heads, x, mask, real, out, f"{call}(x, padding mask)")
    expect_close(out, expected, f"{call}(x, padding mask), compared with nn.TransformerEncoder with the same weights")
    x = x.clone().requires_grad_()
    call = f"{call}(x, padding mask) with x {shape_of(x)} that requires grad"
    expect_differentiable(call_learner(encoder, x, mask, call=call), call, source=x)


def _diagnose_encoder_build(
    Encoder: type,
    norm_first: bool,
    heads: int,
    seed: int,
    call: str,
    failure: CheckFailed,
) -> None:
    """Fail naming the mistake, if the stack that could not be built gives its layers num_heads and d_ff swapped. A
    probe with num_heads=4 and d_ff=2 builds in either order; layers with 2 heads and a hidden width of 4 got them
    swapped."""
    try:
        probe = built_with_seed(Encoder, 3, 8, 4, 2, norm_first=norm_first, seed=seed, call=call)
        first = probe.layers[0]
        probed = (first.self_attention.num_heads, first.feed_forward.linear1.out_features)
    except Exception:
        return
    if probed == (2, 4):
        raise CheckFailed(
            f"{call}: the layers get num_heads and d_ff swapped, so each layer's attention was asked for "
            f"d_ff={D_FF} heads ({D_MODEL} features do not split into {D_FF} heads) and its feed-forward network for "
            f"a hidden width of num_heads={heads}. EncoderLayer takes (d_model, num_heads, d_ff, norm_first), in "
            "this order: pass them so, or by name."
        ) from failure.__cause__


def _diagnose_encoder(encoder, twin, heads: int, x, mask, real, out, call: str) -> None:
    """Fail naming the mistake, if it is one of the usual ones: the mask missing, inverted or given to some layers
    only; layers that never run, that all get the stack's input, that run in reverse order or with a residual
    connection around each; the final norm applied after every layer or before the first; layers built without
    the stack's norm_first."""
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
    chained = _chaining_mistake(encoder, x, mask)
    if chained is not None:
        raise CheckFailed(f"{call}: {chained}.")
    layers = [functools.partial(layer, src_key_padding_mask=~real) for layer in twin.layers]
    final = twin.norm if twin.norm is not None else nn.Identity()
    if torch.allclose(out, final(_stream(x, layers[::-1])), atol=1e-5):
        raise CheckFailed(
            f"{call}: the layers run in reverse order, the last of self.layers first. The stack runs them in the "
            "order self.layers holds them, from self.layers[0], next to the input, to the last (section 5 numbers "
            "them so)."
        )
    if torch.allclose(out, final(_stream_with_residual(x, layers)), atol=1e-5):
        raise CheckFailed(
            f"{call}: each layer's output is added to the layer's input, x = x + layer(x, mask), a residual "
            "connection around the whole layer on top of the two inside it. The layers hold their residual "
            "connections; the stack hands each layer's output to the next as it is."
        )
    if twin.norm is not None:
        if torch.allclose(out, normalised_after_each_layer(x, layers, twin.norm), atol=1e-5):
            raise CheckFailed(f"{call}: {AFTER_EACH_LAYER}.")
        if torch.allclose(out, _stream(twin.norm(x), layers), atol=1e-5):
            raise CheckFailed(
                f"{call}: self.norm is applied to the input, before the first layer. The final norm goes after the "
                "last layer: pre-LN layers return their stream unnormalised, and self.norm normalises it once, at "
                "the end."
            )
    norm_first = twin.norm is not None
    other_order = [
        functools.partial(torch_encoder_layer(layer, heads, D_FF, not norm_first), src_key_padding_mask=~real)
        for layer in encoder.layers
    ]
    stream = _stream(x, other_order)
    if torch.allclose(out, stream if twin.norm is None else twin.norm(stream), atol=1e-5):
        built, other = ("post-LN", "pre-LN") if norm_first else ("pre-LN", "post-LN")
        raise CheckFailed(
            f"{call}: the layers are {built} although the encoder was given norm_first={norm_first} ({other}): "
            "pass norm_first on to every EncoderLayer."
        )


def _stream(x: torch.Tensor, layers: Sequence[Callable]) -> torch.Tensor:
    for layer in layers:
        x = layer(x)
    return x


def _stream_with_residual(x: torch.Tensor, layers: Sequence[Callable]) -> torch.Tensor:
    """What a stack computes that adds each layer's output to the layer's input."""
    for layer in layers:
        x = x + layer(x)
    return x


def _chaining_mistake(stack: nn.Module, x: torch.Tensor, *inputs) -> str | None:
    """The mistake, if some of the stack's layers never ran, or the layers after the first got the stack's input
    x instead of the layer before's output; ``inputs``: the stack's other inputs."""
    layers = {f"{number}": layer for number, layer in enumerate(stack.layers, start=1)}
    order = []
    received = received_by(layers, lambda: stack(x, *inputs), order)
    idle = [number for number in layers if number not in order]
    if idle and len(idle) < len(layers):  # none seen: the stack may call them in a way the hooks do not see
        ran = [number for number in layers if number in order]
        return (
            f"only layer{_numbers(ran)} ran: layer{_numbers(idle)} never ran, so the stack is not {len(layers)} "
            "layers deep. Run every layer, and return once the loop has gone through all of them"
        )
    later = [number for number, calls in received.items() if number != "1" and calls]
    if later and all(matches(received[number][0][0], x) for number in later):
        return (
            f"layer{_numbers(later)} received the stack's input x, not the output of the layer before, so each "
            "layer works on x alone and only the last one's work reaches the output. Hand each layer the stream "
            "as the layer before returned it, x = layer(x, ...)"
        )
    return None
