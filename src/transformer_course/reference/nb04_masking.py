"""Reference code of notebook 04, masking: the padding and decoder masks for token ids.

Notebook 08 imports them. A student release holds this module from assignment 05 on: the module's name says
which notebook teaches it.
"""

import torch

__all__ = ["source_mask", "target_mask"]


def source_mask(src: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Notebook 04's padding mask for token ids: (batch, 1, n_src), True at the source's real words."""
    return (src != pad_id).unsqueeze(-2)


def target_mask(tgt: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Notebook 04's decoder mask for token ids: (batch, n_tgt, n_tgt), True where position i may see
    position j: j <= i and j is not padding."""
    n = tgt.shape[-1]
    causal = torch.ones(n, n, dtype=torch.bool, device=tgt.device).tril()  # (n_tgt, n_tgt)
    return causal & (tgt != pad_id).unsqueeze(-2)
