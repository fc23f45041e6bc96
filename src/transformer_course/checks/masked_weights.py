"""A check of attention weights under a mask, shared by the notebooks that mask (02 and 04): it names the usual
mistakes by what they do to the weights."""

import torch

from . import CheckFailed


def expect_masked_weights(
    weights: torch.Tensor, mask: torch.Tensor, call: str, scores: torch.Tensor | None = None
) -> None:
    """Fail unless pairs where the mask is False get exactly zero weight and every row with a visible key
    still sums to 1.

    The usual mistakes are named by what they do to the weights: an inverted mask; a query with no visible key
    left with weights; masked scores that keep some weight. Given ``scores``, the correctly scaled q kᵀ / √d_k
    (broadcastable to the weights), the check works back from the weights to the score each masked pair acted
    as, and so tells apart the mask ignored, masking after the softmax, and a fill of 0 (or multiplying by the
    mask) or of another finite number; without it, the message lists those causes.
    """
    blocked = ~mask.expand_as(weights)
    finite = weights.nan_to_num(0.0)  # an inverted mask can block whole rows, which then hold nan
    empty_rows = blocked.all(dim=-1)  # (..., n_q): queries with no visible key
    in_visible_rows = blocked & ~empty_rows[..., None]  # masked pairs of queries that do see some key
    on_blocked = finite.masked_fill(~blocked, 0.0)  # the weights of the masked pairs
    # Said only where the case has such a query.
    empty_rows_too = (
        " A query with no visible key also needs its weights set to 0 after the softmax." if empty_rows.any() else ""
    )
    log_w = finite.double().log()
    s = None if scores is None else scores.double().expand_as(weights)
    if s is not None:
        # Each row's heaviest visible key j gives the row's normaliser: w_j = e^(s_j) / Z, so log Z = s_j - log w_j.
        heaviest = finite.masked_fill(blocked, -1.0).argmax(dim=-1, keepdim=True)  # (..., n_q, 1)
        log_z = s.gather(-1, heaviest) - log_w.gather(-1, heaviest)  # (..., n_q, 1)

    def single_number(values: torch.Tensor) -> float | None:
        """The value all of them agree on, to a float32 softmax's precision, or None."""
        if not values.numel() or not values.isfinite().all():
            return None
        if values.max() - values.min() <= 1e-2 * max(1.0, values.abs().max().item()):
            return values.mean().item()
        return None

    if on_blocked.any():
        if (~blocked).any() and (finite[~blocked] == 0).all():  # with nothing visible, nothing is inverted
            raise CheckFailed(
                f"{call}: only the blocked pairs get weight: your mask is inverted. Here, as in "
                "F.scaled_dot_product_attention, True means the query may attend to the key (nn.MultiheadAttention "
                "uses the opposite); fill the scores where the mask is False."
            )
        if not on_blocked[~empty_rows].any():  # the fill was negative enough; the clean-up is missing
            index = (empty_rows & on_blocked.any(dim=-1)).nonzero()[0].tolist()
            row = finite[tuple(index)]
            where = query_named(index)
            uniform = torch.allclose(row, torch.full_like(row, 1 / row.numel()), atol=1e-6)
            raise CheckFailed(
                f"{call}: {where} has no visible key, yet its weights are {[round(w, 3) for w in row.tolist()]}; "
                "it must get zero weights, and so a zero output."
                + (" The softmax of a row of equal scores (all filled with one number) is uniform." if uniform else "")
                + " After the softmax, set the weights of the masked pairs to 0 (masked_fill or torch.where)."
            )
        most = finite[in_visible_rows].max().item()
        if s is not None:
            # A masked pair's weight is e^f / Z, where f is the score it acted as: f = log w + log Z.
            acted_as = (log_w + log_z)[in_visible_rows & (finite > 1e-30)]  # float32's normal range
            if acted_as.numel() == in_visible_rows.sum() and torch.allclose(acted_as, s[in_visible_rows], atol=1e-2):
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, the weight they get with no mask at all: the mask "
                    "changed nothing. Replace the masked scores by -inf or torch.finfo(scores.dtype).min before "
                    "the softmax." + empty_rows_too
                )
            fill = single_number(acted_as)
            if fill is not None and abs(fill) < 1e-2:
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, as if their scores were 0: filling with 0 (or with a "
                    "tiny number such as -1e-9, a slip for -1e9), or multiplying the scores by the mask, leaves them "
                    "a score of about 0, and a score of 0 still gets "
                    "weight (e^0 = 1). Replace the masked scores by -inf or torch.finfo(scores.dtype).min before "
                    "the softmax." + empty_rows_too
                )
            if fill is not None:
                raise CheckFailed(
                    f"{call}: masked pairs get weight {most:.3g}, as if their scores were replaced by {fill:.3g}: a "
                    f"finite number not negative enough, since e^({fill:.3g} - s) is not 0 next to the visible "
                    "scores s. Replace them by -inf or torch.finfo(scores.dtype).min, whose exponential is 0."
                    + empty_rows_too
                )
        raise CheckFailed(
            f"{call}: masked pairs get weight {most:.3g}; they must get exactly 0. Replace the masked scores before "
            "the softmax by -inf or torch.finfo(scores.dtype).min, whose exponential is 0: a score of 0 still gets "
            "weight (e^0 = 1), and so does any finite number not far below the visible scores." + empty_rows_too
        )

    sums = finite.double().sum(dim=-1)  # (..., n_q)
    short = ~empty_rows & (sums < 1 - 1e-5)  # queries with visible keys whose weights sum to less than 1
    if not short.any() or (short & ~blocked.any(dim=-1)).any():
        return  # rows summing to more than 1, or short where nothing is masked: not the mask's doing
    lowest = f"rows with visible keys sum to less than 1 (down to {sums[short].min().item():.5g})"
    if s is not None:
        # The masked keys took a share X of the normaliser Z = Σ_visible e^s + X, and the row sums to 1 - X / Z.
        log_share = (log_z[..., 0] + torch.log1p(-sums))[short]  # (rows,): log X
        masked_scores = s.masked_fill(~blocked, float("-inf"))[short]  # (rows, n_k)
        if torch.allclose(log_share, masked_scores.logsumexp(dim=-1), atol=1e-2):  # X = Σ_masked e^s
            raise CheckFailed(
                f"{call}: masked pairs get zero weight, but {lowest}: the mask was applied after the softmax, where "
                "the masked keys had already taken their share of the normalisation. Mask the scores before the "
                "softmax, so the visible keys share all the weight."
            )
        fill = single_number(log_share - blocked[short].sum(dim=-1).double().log())  # X = (number masked) e^f
        if fill is None:
            return  # not a softmax over the keys with the masked keys' share in it: the caller's comparison says more
        given = (
            "0: filling with 0, or multiplying the scores by the mask, leaves a score of 0, and e^0 = 1"
            if abs(fill) < 1e-2
            else f"replaced by {fill:.3g}, a finite number not negative enough"
        )
        raise CheckFailed(
            f"{call}: masked pairs get zero weight, but {lowest}: before the softmax the masked scores were "
            f"{given}. So the masked keys took a share of the normalisation, which zeroing their weights "
            "afterwards does not give back. Replace the masked scores by -inf or torch.finfo(scores.dtype).min "
            "before the softmax."
        )
    raise CheckFailed(
        f"{call}: masked pairs get zero weight, but {lowest}, so the visible keys do not share all the weight. "
        "That happens when masked keys still take a share of the softmax's normalisation: when the mask is "
        "applied after the softmax, or when the masked scores are replaced by a number that is not negative enough "
        "(0, as multiplying the scores by the mask gives, or -10, say). Replace the masked scores by -inf or "
        "torch.finfo(scores.dtype).min before the softmax."
    )


def query_named(index: list[int]) -> str:
    """'query 1 of batch index (0, 0)' from the index of a row of weights; 'query 1 of sequence 0' for one
    leading axis, 'query 1' for none."""
    *batch, query = index
    if not batch:
        return f"query {query}"
    return f"query {query} of " + (f"sequence {batch[0]}" if len(batch) == 1 else f"batch index {tuple(batch)}")
