"""Figures used across the notebooks."""

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch


def attention_heatmap(
    weights: torch.Tensor,
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "attention weights",
    ax: plt.Axes | None = None,
) -> plt.Axes:
    """Draw a (queries, keys) weight matrix with its values written in the cells; rows are queries."""
    weights = weights.detach().cpu().numpy()
    if weights.ndim != 2 or weights.shape != (len(query_labels), len(key_labels)):
        raise ValueError(
            f"expected weights of shape ({len(query_labels)}, {len(key_labels)}) to match the labels, "
            f"got {tuple(weights.shape)}"
        )
    if ax is None:
        _, ax = plt.subplots(figsize=(0.8 * len(key_labels) + 2, 0.6 * len(query_labels) + 1.5))
    image = ax.imshow(weights, cmap="Blues", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(len(key_labels)), key_labels, rotation=45, ha="right")
    ax.set_yticks(range(len(query_labels)), query_labels)
    ax.set_xlabel("key (attended to)")
    ax.set_ylabel("query (output position)")
    ax.set_title(title)
    for row, col in ((r, c) for r in range(len(query_labels)) for c in range(len(key_labels))):
        value = float(weights[row, col])
        ax.text(col, row, f"{value:.2f}", ha="center", va="center", color="white" if value > 0.6 else "black")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax
