"""Wrong answers to notebook 11: the KV cache, cached decoding, and blockwise attention."""

import math

import torch
import torch.nn.functional as F

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import KVCache, cached_block_forward, cached_logits, next_token_probabilities
from wrong_answers import wrong_answer

ASSIGNMENT = "11_fast_inference"

# Exercise 1: KVCache -------------------------------------------------------------------------------------


@wrong_answer("KVCache", message="returned only the new keys")
class KVCacheReturningOnlyTheNewPositions:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return keys, values


@wrong_answer("KVCache", message="store each position once")
class KVCacheStoringTheNewKeysTwice:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        self.keys = torch.cat([self.keys, keys], dim=2)
        self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values


@wrong_answer("KVCache", message="the cache grows along dim 2")
class KVCacheJoiningAlongTheHeads:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=1)
            self.values = torch.cat([self.values, values], dim=1)
        return self.keys, self.values


@wrong_answer("KVCache", message="an attribute set in the class body")
class KVCacheKeptInTheClass:
    keys, values = [], []

    def __len__(self):
        return sum(part.shape[2] for part in self.keys)

    def append(self, keys, values):
        self.keys.append(keys)
        self.values.append(values)
        return torch.cat(self.keys, dim=2), torch.cat(self.values, dim=2)


@wrong_answer("KVCache", message="returned the values first")
class KVCacheReturningTheValuesFirst:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.values, self.keys


@wrong_answer("KVCache", message="count the positions along the sequence axis")
class KVCacheCountingTheAppends:
    def __init__(self):
        self.keys, self.values, self.appends = None, None, 0

    def __len__(self):
        return self.appends

    def append(self, keys, values):
        self.appends += 1
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values


@wrong_answer("KVCache", message="or a default argument such as def __init__(self, keys=[])")
class KVCacheWithListsAsDefaultArguments:
    def __init__(self, keys=[], values=[]):
        self.keys, self.values = keys, values  # the parts appended so far

    def __len__(self):
        return sum(part.shape[2] for part in self.keys)

    def append(self, keys, values):
        self.keys.append(keys)
        self.values.append(values)
        return torch.cat(self.keys, dim=2), torch.cat(self.values, dim=2)


@wrong_answer("KVCache", message="put the new keys in front of the cached ones")
class KVCachePuttingTheNewPositionsFirst:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is not None:
            keys = torch.cat([keys, self.keys], dim=2)
            values = torch.cat([values, self.values], dim=2)
        self.keys, self.values = keys, values
        return keys, values


@wrong_answer("KVCache", message="the cache counts or keeps only the newest positions")
class KVCacheKeepingOnlyTheNewestPositions:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
            return keys, values
        all_keys = torch.cat([self.keys, keys], dim=2)
        all_values = torch.cat([self.values, values], dim=2)
        self.keys, self.values = keys, values  # the joined tensors are returned, not kept
        return all_keys, all_values


@wrong_answer("KVCache", message="the values returned for the new positions are their keys")
class KVCacheJoiningTheKeysToTheValues:
    def __init__(self):
        self.keys, self.values = None, None

    def __len__(self):
        return 0 if self.keys is None else self.keys.shape[2]

    def append(self, keys, values):
        if self.keys is None:
            self.keys, self.values = keys, values
        else:
            self.keys = torch.cat([self.keys, keys], dim=2)
            self.values = torch.cat([self.values, keys], dim=2)  # a copy-paste slip
        return self.keys, self.values


@wrong_answer("KVCache", message="That was len() of an empty cache, which must be 0")
class KVCacheCountingTheThirdAxisOfAnEmptyTensor:
    def __init__(self):
        self.keys, self.values = torch.tensor([]), torch.tensor([])  # shape (0,): torch.cat skips it

    def __len__(self):
        return self.keys.shape[2]

    def append(self, keys, values):
        self.keys = torch.cat([self.keys, keys], dim=2)
        self.values = torch.cat([self.values, values], dim=2)
        return self.keys, self.values


# Exercise 2: cached_block_forward --------------------------------------------------------------------------


@wrong_answer("cached_block_forward", message="without a causal mask")
def cached_block_forward_without_a_mask(block, x, cache):
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="aligned to the first key, as is_causal=True does")
def cached_block_forward_with_is_causal(block, x, cache):
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, is_causal=True))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="attend only to the new keys")
def cached_block_forward_ignoring_the_cached_keys(block, x, cache):
    q, k, v = block.attention.project_heads(block.ln_1(x))
    cache.append(k, v)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, k, v, is_causal=True))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="are not those of the new positions")
def cached_block_forward_caching_keys_of_the_unnormalised_input(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, _, _ = block.attention.project_heads(block.ln_1(x))
    _, k, v = block.attention.project_heads(x)
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="append the new positions' keys and values once")
def cached_block_forward_appending_twice(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    cache.append(k, v)
    keys, values = cache.append(k, v)
    visible = torch.ones(new, keys.shape[2], dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="If you built the mask with torch.tril, its diagonal is too far right")
def cached_block_forward_with_the_diagonal_at_the_total(block, x, cache):
    past, new = len(cache), x.shape[1]
    total = past + new
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, total, dtype=torch.bool).tril(diagonal=total)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="does not see its own key")
def cached_block_forward_hiding_each_query_from_itself(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past - 1)  # the keys before each query
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="len(cache) was read after cache.append")
def cached_block_forward_reading_the_length_after_appending(block, x, cache):
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    past, new = len(cache), x.shape[1]
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="len(cache) was read after cache.append")
def cached_block_forward_shifting_the_mask_by_the_length_after_appending(block, x, cache):
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(x.shape[1], keys.shape[2], dtype=torch.bool).tril(diagonal=len(cache))
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the mask is inverted: each new position sees only the keys after it")
def cached_block_forward_with_a_mask_of_the_hidden_keys(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    future = torch.ones(new, past + new, dtype=torch.bool).triu(diagonal=past + 1)  # True = hidden
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=future))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="replaces x instead of being added to it")
def cached_block_forward_without_the_attention_residual(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="divided by √d_model")
def cached_block_forward_scaled_by_the_model_width(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(x.shape[-1])
    weights = scores.masked_fill(~visible, -math.inf).softmax(dim=-1)
    x = x + block.attention.project_output(weights @ values)
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the MLP gets x without its layer norm")
def cached_block_forward_without_the_second_norm(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(x)


@wrong_answer("cached_block_forward", message="the MLP's input goes through ln_1")
def cached_block_forward_with_the_first_norm_twice(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_1(x))


@wrong_answer("cached_block_forward", message="F.scaled_dot_product_attention ADDS a float attn_mask")
def cached_block_forward_with_a_mask_of_ones_and_zeros(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new).tril(diagonal=past)  # 1.0 and 0.0, not True and False
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the mask's diagonal is one place too far right")
def cached_block_forward_letting_each_position_see_the_next(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past + 1)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="without the output projection")
def cached_block_forward_merging_the_heads_without_the_projection(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    heads = F.scaled_dot_product_attention(q, keys, values, attn_mask=visible)  # (batch, heads, new, d_head)
    batch, num_heads, _, d_head = heads.shape
    x = x + heads.transpose(1, 2).reshape(batch, new, num_heads * d_head)
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the queries are projected from x without ln_1")
def cached_block_forward_with_queries_of_the_unnormalised_input(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, _, _ = block.attention.project_heads(x)
    _, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the MLP's output is added to the block's input x")
def cached_block_forward_adding_the_mlp_to_the_input(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    h = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(h))


@wrong_answer("cached_block_forward", message="the MLP's output replaces its input")
def cached_block_forward_without_the_mlp_residual(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="It is wrong already with nothing cached")
def cached_block_forward_with_the_residual_from_the_normalised_input(block, x, cache):
    past, new = len(cache), x.shape[1]
    h = block.ln_1(x)
    q, k, v = block.attention.project_heads(h)
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    x = h + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="tril and triu are swapped")
def cached_block_forward_with_triu(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).triu(diagonal=past)
    x = x + block.attention.project_output(F.scaled_dot_product_attention(q, keys, values, attn_mask=visible))
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="divided by d_head = 6, not by its square root")
def cached_block_forward_scaled_by_d_head(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    scores = q @ keys.transpose(-2, -1) / q.shape[-1]  # the square root forgotten
    weights = scores.masked_fill(~visible, -math.inf).softmax(dim=-1)
    x = x + block.attention.project_output(weights @ values)
    return x + block.mlp(block.ln_2(x))


@wrong_answer("cached_block_forward", message="the softmax runs over the queries (dim=-2)")
def cached_block_forward_with_the_softmax_over_the_queries(block, x, cache):
    past, new = len(cache), x.shape[1]
    q, k, v = block.attention.project_heads(block.ln_1(x))
    keys, values = cache.append(k, v)
    visible = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
    scores = q @ keys.transpose(-2, -1) / math.sqrt(q.shape[-1])
    weights = torch.nan_to_num(scores.masked_fill(~visible, -math.inf).softmax(dim=-2))
    x = x + block.attention.project_output(weights @ values)
    return x + block.mlp(block.ln_2(x))


# Exercise 3: cached_logits -------------------------------------------------------------------------------


@wrong_answer("cached_logits", message="count on from the positions already cached")
def cached_logits_with_positions_from_zero(model, ids, caches):
    positions = torch.arange(ids.shape[1])
    x = model.token_embedding(ids) + model.position_embedding(positions)
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="already with empty caches")
def cached_logits_adding_the_positions_twice(model, ids, caches):
    past = len(caches[0])
    positions = model.position_embedding(torch.arange(past, past + ids.shape[1]))
    x = model.token_embedding(ids) + positions
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x + positions, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="every block reads and appends to its own cache")
def cached_logits_with_one_cache_for_every_block(model, ids, caches):
    past = len(caches[0])
    x = model.token_embedding(ids) + model.position_embedding(torch.arange(past, past + ids.shape[1]))
    for block in model.blocks:
        x = cached_block_forward(block, x, caches[0])
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="the final norm model.ln_f")
def cached_logits_without_the_final_norm(model, ids, caches):
    past = len(caches[0])
    x = model.token_embedding(ids) + model.position_embedding(torch.arange(past, past + ids.shape[1]))
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(x)


@wrong_answer("cached_logits", message="one place too far")
def cached_logits_with_positions_from_one(model, ids, caches):
    past = len(caches[0])
    positions = torch.arange(past + 1, past + ids.shape[1] + 1)  # the positions after those cached
    x = model.token_embedding(ids) + model.position_embedding(positions)
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="every new token gets the same position embedding")
def cached_logits_with_one_position_for_all_new_tokens(model, ids, caches):
    x = model.token_embedding(ids) + model.position_embedding(torch.tensor(len(caches[0])))
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="the number of sentences, ids.shape[0]")
def cached_logits_counting_the_new_tokens_along_the_batch(model, ids, caches):
    past = len(caches[0])
    positions = torch.arange(past, past + ids.shape[0])
    x = model.token_embedding(ids) + model.position_embedding(positions)
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="crashed before it used the model's embeddings")
def cached_logits_with_positions_ending_at_the_number_of_new_tokens(model, ids, caches):
    past, new = len(caches[0]), ids.shape[1]
    positions = torch.arange(past, new)
    x = model.token_embedding(ids) + model.position_embedding(positions)
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="is len(caches), the number of blocks")
def cached_logits_counting_the_caches(model, ids, caches):
    past = len(caches)  # meant: the positions cached
    x = model.token_embedding(ids) + model.position_embedding(torch.arange(past, past + ids.shape[1]))
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


@wrong_answer("cached_logits", message="give it a 1-D tensor of the")
def cached_logits_with_the_positions_as_a_column(model, ids, caches):
    past = len(caches[0])
    positions = torch.arange(past, past + ids.shape[1])[:, None]  # (new, 1)
    x = model.token_embedding(ids) + model.position_embedding(positions)
    for block, cache in zip(model.blocks, caches):
        x = cached_block_forward(block, x, cache)
    return model.lm_head(model.ln_f(x))


# Exercise 4: generate_cached -----------------------------------------------------------------------------


@wrong_answer("generate_cached", message="only the newest token")
def generate_cached_running_the_whole_sequence(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(ids)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate_cached", message="only the newest token")
def generate_cached_feeding_every_token_again(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            caches = [KVCache() for _ in model.blocks]
            logits = cached_logits(model, ids, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate_cached", message="draw each token with torch.multinomial")
def generate_cached_always_greedy(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            newest = cached_logits(model, newest, caches)[:, -1:].argmax(dim=-1)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="draw each token with torch.multinomial")
def generate_cached_from_the_global_generator(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, newest, caches)[:, -1]
            newest = torch.multinomial(next_token_probabilities(logits, temperature, top_k, top_p), 1)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="new token 0 is")
def generate_cached_reading_the_first_position(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, newest, caches)[:, 0]
            newest = torch.multinomial(
                next_token_probabilities(logits, temperature, top_k, top_p), 1, generator=generator
            )
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="the model ran with autograd recording")
def generate_cached_with_autograd_on(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    for _ in range(max_new_tokens):
        logits = cached_logits(model, newest, caches)[:, -1].detach()
        newest = torch.multinomial(next_token_probabilities(logits, temperature, top_k, top_p), 1, generator=generator)
        ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="give it the whole prompt once")
def generate_cached_feeding_every_token_to_the_same_caches(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, ids, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)], dim=1)
    return ids


@wrong_answer("generate_cached", message="Keep the axis of the tokens")
def generate_cached_feeding_the_newest_token_without_its_axis(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = prompt_ids
    with torch.no_grad():
        logits = cached_logits(model, prompt_ids, caches)[:, -1]
        for _ in range(max_new_tokens):
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)], dim=1)
            logits = cached_logits(model, ids[:, -1], caches)[:, -1]
    return ids


@wrong_answer("generate_cached", message="repeats one and the same cache n times")
def generate_cached_with_one_cache_repeated(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache()] * len(model.blocks)
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, newest, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="every token is the one drawn without top_p=0.8")
def generate_cached_without_top_p(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, newest, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k)
            newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="Pass temperature, top_k and top_p on in next_token_probabilities's order")
def generate_cached_with_top_k_and_top_p_swapped(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = cached_logits(model, newest, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_p, top_k)
            newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="max_new_tokens counts the new tokens only")
def generate_cached_up_to_max_new_tokens_in_all(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    ids = newest = prompt_ids
    with torch.no_grad():
        while ids.shape[1] < max_new_tokens:
            logits = cached_logits(model, newest, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids


@wrong_answer("generate_cached", message="that is one token more than asked")
def generate_cached_with_one_step_too_many(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    caches = [KVCache() for _ in model.blocks]
    with torch.no_grad():
        logits = cached_logits(model, prompt_ids, caches)[:, -1]
        first = torch.multinomial(next_token_probabilities(logits, temperature, top_k, top_p), 1, generator=generator)
        ids = torch.cat([prompt_ids, first], dim=1)
        for _ in range(max_new_tokens):  # the prompt's step already wrote one
            logits = cached_logits(model, ids[:, -1:], caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            ids = torch.cat([ids, torch.multinomial(probabilities, 1, generator=generator)], dim=1)
    return ids


# Exercise 5: blockwise_attention -------------------------------------------------------------------------


@wrong_answer("blockwise_attention", message="multiply both its running sum and its running output")
def blockwise_attention_not_rescaling_the_sum(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="Subtract the running maximum before exp()")
def blockwise_attention_without_a_running_maximum(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        weights = torch.exp(scores)  # no shift: the sum of exps is the softmax's denominator all the same
        running_sum = running_sum + weights.sum(dim=-1, keepdim=True)
        out = out + weights @ v[..., start:end, :]
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="starting it at -inf (not at 0")
def blockwise_attention_with_a_maximum_starting_at_zero(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.zeros(*shape, n_q, 1)  # no score is below 0 in my examples
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        weights = torch.exp(scores - new_max)
        rescale = torch.exp(running_max - new_max)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="gets the mean of all the values, not zeros")
def blockwise_attention_hiding_scores_with_minus_1e9(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -1e9)  # a large finite number: no nan to handle
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -1e9)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        weights = torch.exp(scores - new_max)
        rescale = torch.exp(running_max - new_max)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum


@wrong_answer("blockwise_attention", message="keys are left out")
def blockwise_attention_dropping_the_partial_block(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for block in range(n_k // block_size):
        start, end = block * block_size, (block + 1) * block_size
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the causal mask is wrong across blocks")
def blockwise_attention_with_a_causal_mask_inside_each_block(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            visible = torch.ones(n_q, end - start, dtype=torch.bool).tril()
            scores = scores.masked_fill(~visible, -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="gives nan")
def blockwise_attention_subtracting_an_infinite_maximum(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        weights = torch.exp(scores - new_max)
        rescale = torch.exp(running_max - new_max)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum


@wrong_answer("blockwise_attention", message="the gradient of")
def blockwise_attention_choosing_zero_after_dividing(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return torch.where(running_sum > 0, out / running_sum, 0.0)


@wrong_answer("blockwise_attention", message="divided by √n_k = √")
def blockwise_attention_scaled_by_the_number_of_keys(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(n_k)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the n × n")
def blockwise_attention_masking_with_a_full_causal_mask(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    if is_causal:
        causal = torch.ones(n_q, n_k, dtype=torch.bool).tril()
        mask = causal if mask is None else mask & causal
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="use block_size for the blocks")
def blockwise_attention_ignoring_block_size(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, 64):
        end = min(start + 64, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the n × n")
def blockwise_attention_by_the_whole_matrix(q, k, v, mask=None, is_causal=False, block_size=64):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    if is_causal:
        scores = scores.masked_fill(torch.ones_like(scores, dtype=torch.bool).triu(1), -math.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ v


@wrong_answer("blockwise_attention", message="query i does not see key i, its own position")
def blockwise_attention_hiding_the_diagonal(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) >= torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the mask is inverted: the keys it marks True are hidden")
def blockwise_attention_hiding_where_the_mask_is_true(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="divided by √d_v")
def blockwise_attention_scaled_by_the_value_size(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(v.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="does not require gradients")
def blockwise_attention_without_autograd(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    with torch.no_grad():  # as @torch.no_grad() on the function does
        for start in range(0, n_k, block_size):
            end = min(start + block_size, n_k)
            scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(~mask[..., start:end], -math.inf)
            if is_causal:
                scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
            new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
            shift = new_max.masked_fill(new_max == -math.inf, 0.0)
            weights = torch.exp(scores - shift)
            rescale = torch.exp(running_max - shift)
            running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
            out = out * rescale + weights @ v[..., start:end, :]
            running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="combine the blocks correctly")
def blockwise_attention_averaging_the_blocks_softmaxes(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    outputs = []
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        outputs.append(torch.softmax(scores, dim=-1).nan_to_num(0.0) @ v[..., start:end, :])
    return sum(outputs) / len(outputs)


@wrong_answer("blockwise_attention", message=".T reverses every axis of a 4-D tensor")
def blockwise_attention_transposing_with_dot_t(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].T / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="look at what is sliced per block")
def blockwise_attention_slicing_the_mask_along_the_queries(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end, :], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="scores of a block of queries against every key")
def blockwise_attention_over_blocks_of_queries(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    outputs = []
    for start in range(0, n_q, block_size):  # blocks of queries, each with a softmax over every key
        end = min(start + block_size, n_q)
        scores = q[..., start:end, :] @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (..., block, n_k)
        if mask is not None:
            scores = scores.masked_fill(~(mask if mask.shape[-2] == 1 else mask[..., start:end, :]), -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(n_k) > torch.arange(start, end)[:, None], -math.inf)
        largest = scores.amax(dim=-1, keepdim=True)
        weights = torch.exp(scores - largest.masked_fill(largest == -math.inf, 0.0))
        total = weights.sum(dim=-1, keepdim=True)
        outputs.append(weights @ v / total.masked_fill(total == 0, 1.0))
    return torch.cat(outputs, dim=-2)


@wrong_answer("blockwise_attention", message="feature by feature")
def blockwise_attention_with_scores_by_broadcasting(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        products = q[..., :, None, :] * k[..., None, start:end, :]  # (..., n_q, block, d_k)
        scores = products.sum(dim=-1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="look at its sign, exp(m - m')")
def blockwise_attention_rescaling_by_the_inverse_factor(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(shift - running_max)  # the sign flipped
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the causal mask is transposed, (block, n_q)")
def blockwise_attention_with_the_causal_mask_transposed(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            later = torch.arange(start, end)[:, None] > torch.arange(n_q)  # (block, n_q)
            scores = scores.masked_fill(later, -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="Keep the axis (keepdim=True)")
def blockwise_attention_summing_without_keepdim(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1)  # (..., n_q): the key axis dropped
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("blockwise_attention", message="the square root of the number of keys (or of a block's keys)")
def blockwise_attention_scaled_by_the_block_width(q, k, v, mask=None, is_causal=False, block_size=64):
    n_q, n_k = q.shape[-2], k.shape[-2]
    shape = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    running_max = torch.full((*shape, n_q, 1), -math.inf)
    running_sum = torch.zeros(*shape, n_q, 1)
    out = torch.zeros(*shape, n_q, v.shape[-1])
    for start in range(0, n_k, block_size):
        end = min(start + block_size, n_k)
        scores = q @ k[..., start:end, :].transpose(-2, -1) / math.sqrt(end - start)
        if mask is not None:
            scores = scores.masked_fill(~mask[..., start:end], -math.inf)
        if is_causal:
            scores = scores.masked_fill(torch.arange(start, end) > torch.arange(n_q)[:, None], -math.inf)
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        shift = new_max.masked_fill(new_max == -math.inf, 0.0)
        weights = torch.exp(scores - shift)
        rescale = torch.exp(running_max - shift)
        running_sum = running_sum * rescale + weights.sum(dim=-1, keepdim=True)
        out = out * rescale + weights @ v[..., start:end, :]
        running_max = new_max
    return out / running_sum.masked_fill(running_sum == 0, 1.0)


@wrong_answer("generate_cached", message="new, empty caches during the generation")
def generate_cached_with_a_fresh_cache_at_every_step(
    model, prompt_ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
):
    ids = newest = prompt_ids
    with torch.no_grad():
        for _ in range(max_new_tokens):
            caches = [KVCache() for _ in model.blocks]
            logits = cached_logits(model, newest, caches)[:, -1]
            probabilities = next_token_probabilities(logits, temperature, top_k, top_p)
            newest = torch.multinomial(probabilities, 1, generator=generator)
            ids = torch.cat([ids, newest], dim=1)
    return ids
