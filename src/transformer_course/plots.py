"""Figures used across the notebooks."""

import os
from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch

from . import GRADING


def show() -> None:
    """plt.show(), except while nbgrader grades (it sets NBGRADER_EXECUTION): then the figures are closed undrawn.
    Grading needs a run that works, not the picture, and drawing costs every graded run a few tenths of a second."""
    if os.environ.get(GRADING):
        plt.close("all")
    else:
        plt.show()


def _query_key_grid(
    matrix: torch.Tensor, query_labels: Sequence[str], key_labels: Sequence[str], title: str, ax: plt.Axes | None
) -> plt.Axes:
    """Axes for a (queries, keys) matrix: checked shape, labelled ticks, queries down and keys across."""
    if tuple(matrix.shape) != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"expected a matrix of shape ({len(query_labels)}, {len(key_labels)}) to match the labels, "
            f"got {tuple(matrix.shape)}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.8 * len(key_labels) + 2, 0.6 * len(query_labels) + 1.5))
    ax.set_xticks(range(len(key_labels)), key_labels, rotation=45, ha="right")
    ax.set_yticks(range(len(query_labels)), query_labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (output position)")
    ax.set_title(title)
    return ax


def attention_heatmap(
    weights: torch.Tensor,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "attention weights",
    ax: plt.Axes | None = None,
    annotate: bool = True,
) -> plt.Axes:
    """Draw a (queries, keys) weight matrix, rows are queries; with annotate=True (for small matrices) the
    values are written in the cells."""
    weights = weights.detach().cpu().numpy()
    ax = _query_key_grid(weights, query_labels, key_labels, title, ax)
    image = ax.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0)
    cells = ((r, c) for r in range(len(query_labels)) for c in range(len(key_labels)))
    for row, col in cells if annotate else ():
        value = float(weights[row, col])
        ax.text(col, row, f"{value:.2f}", ha="center", va="center", color="white" if value > 0.6 else "black")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def curves(
    x: Sequence[float],
    series: dict[str, Sequence[float]],
    xlabel: str,
    ylabel: str,
    title: str = "",
    ax: plt.Axes | None = None,
    log_x: bool = False,
    log_y: bool = False,
    marker: str = "o",
) -> plt.Axes:
    """Plot several named curves over the same x values, with markers at the measured points (marker="" for
    none, for dense curves)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(5, 3.5))
    for label, values in series.items():
        if len(values) != len(x):
            raise ValueError(f"series {label!r} has {len(values)} values for {len(x)} x values")
        ax.plot(x, values, marker=marker, label=label)
    ax.set_xscale("log" if log_x else "linear")
    ax.set_yscale("log" if log_y else "linear")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    if len(series) > 1:
        ax.legend()
    return ax


def attention_heads(
    weights: torch.Tensor,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    titles: Sequence[str] | None = None,
) -> plt.Figure:
    """One heatmap per head, side by side, for weights of shape (heads, queries, keys)."""
    num_heads = weights.shape[0]
    titles = titles or [f"head {head}" for head in range(num_heads)]
    fig, axes = plt.subplots(1, num_heads, figsize=(5.5 * num_heads, 4.5), squeeze=False)
    for head, ax in enumerate(axes[0]):
        attention_heatmap(weights[head], query_labels, key_labels, title=titles[head], ax=ax)
    fig.tight_layout()
    return fig


def mask_heatmap(
    mask: torch.Tensor,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "mask",
    ax: plt.Axes | None = None,
) -> plt.Axes:
    """Draw a boolean (queries, keys) mask: a filled cell where the query may attend to the key."""
    mask = mask.detach().cpu()
    ax = _query_key_grid(mask, query_labels, key_labels, title, ax)
    ax.imshow(mask.float().numpy(), cmap="Greens", vmin=0.0, vmax=1.4)
    for row, col in ((r, c) for r in range(len(query_labels)) for c in range(len(key_labels))):
        ax.text(col, row, "✓" if mask[row, col] else "·", ha="center", va="center")
    return ax
