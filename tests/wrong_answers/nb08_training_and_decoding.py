"""Wrong answers to notebook 08: the shifted decoder input, the loss, the learning-rate schedule, greedy
decoding and beam search."""

import math

import torch

from transformer_course.reference import source_mask, target_mask
from wrong_answers import wrong_answer

ASSIGNMENT = "08_training_and_decoding"
PAD, BOS, EOS = 0, 1, 2  # the notebook imports them from transformer_course.data.translation

# Exercise 1: shift_right ----------------------------------------------------------------------------------


@wrong_answer("shift_right", message="one column too many")
def shift_right_keeping_the_last_word(target, bos_id):
    bos = torch.full_like(target[:, :1], bos_id)
    return torch.cat([bos, target], dim=1)


@wrong_answer("shift_right", message="torch.roll moved the last word to the front")
def shift_right_with_roll(target, bos_id):
    return target.roll(1, dims=1)


@wrong_answer("shift_right", message="you shifted left")
def shift_left(target, bos_id):
    return torch.cat([target[:, 1:], torch.full_like(target[:, :1], 0)], dim=1)


@wrong_answer("shift_right", message="the first column must be bos_id=7")
def shift_right_with_a_fixed_bos(target, bos_id):
    return torch.cat([torch.full_like(target[:, :1], BOS), target[:, :-1]], dim=1)


@wrong_answer("shift_right", message="shift_right changed its input target in place")
def shift_right_in_place(target, bos_id):
    target[:, 1:] = target[:, :-1].clone()
    target[:, 0] = bos_id
    return target


@wrong_answer("shift_right", message="you replaced the target's first word by bos_id")
def shift_right_replacing_the_first_word(target, bos_id):
    bos = torch.full_like(target[:, :1], bos_id)
    return torch.cat([bos, target[:, 1:]], dim=1)


@wrong_answer("shift_right", message="needs one row per sentence, (batch, 1)")
def shift_right_with_one_bos_for_the_batch(target, bos_id):
    return torch.cat([torch.tensor([[bos_id]]), target[:, :-1]], dim=1)


@wrong_answer("shift_right", message="you shifted along the batch axis (dim 0)")
def shift_right_along_the_batch_axis(target, bos_id):
    bos = torch.full_like(target[:1], bos_id)  # (1, n_tgt)
    return torch.cat([bos, target[:-1]], dim=0)


@wrong_answer("shift_right", message="the EOS of the shorter sentences became PAD")
def shift_right_turning_eos_into_pad(target, bos_id):
    without_eos = target.masked_fill(target == EOS, PAD)  # the decoder never needs to read EOS
    bos = torch.full_like(target[:, :1], bos_id)
    return torch.cat([bos, without_eos[:, :-1]], dim=1)


# Exercise 2: sequence_loss ---------------------------------------------------------------------------------


@wrong_answer("sequence_loss", message="padding positions count in your loss")
def loss_over_padding_too(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token.mean()


@wrong_answer("sequence_loss", message="divided by the number of all positions, padding included")
def loss_divided_by_all_positions(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return (per_token * (target != pad_id)).sum() / target.numel()


@wrong_answer("sequence_loss", message="you summed over the tokens")
def loss_summed(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].sum()


@wrong_answer("sequence_loss", message="label smoothing is missing")
def loss_without_smoothing(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return right[target != pad_id].mean()


@wrong_answer("sequence_loss", message="spread the smoothing over the vocab - 1 wrong words")
def loss_smoothing_only_the_wrong_words(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    wrong = -log_p.sum(dim=-1) - right
    per_token = (1 - smoothing) * right + smoothing * wrong / (logits.shape[-1] - 1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="underflows to log(0)")
def loss_with_log_of_softmax(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log(torch.softmax(logits, dim=-1))
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="the loss is not connected to the logits")
def loss_as_a_new_tensor(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return torch.tensor(per_token[target != pad_id].mean().item())


@wrong_answer("sequence_loss", message="you used the Annotated Transformer's convention")
def loss_smoothing_over_the_words_neither_right_nor_padding(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    others = -log_p.sum(dim=-1) - right + log_p[..., pad_id]  # every word but the right one and PAD
    per_token = (1 - smoothing) * right + smoothing * others / (logits.shape[-1] - 2)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="your smoothing term sums -log p over the vocabulary")
def loss_smoothing_summed_over_the_vocabulary(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.sum(dim=-1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="you left out the positions where target == 0, the usual padding id")
def loss_leaving_out_id_0(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != 0].mean()


@wrong_answer("sequence_loss", message="padding positions receive")
def loss_smoothing_every_position(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    return (1 - smoothing) * right[target != pad_id].mean() + smoothing * -log_p.mean()


@wrong_answer("sequence_loss", message="read the classes (here the vocabulary) on dim 1")
def loss_with_the_vocabulary_on_the_last_axis(logits, target, pad_id, smoothing=0.0):
    return torch.nn.functional.cross_entropy(logits, target, ignore_index=pad_id, label_smoothing=smoothing)


@wrong_answer("sequence_loss", message="you averaged the loss within each sentence, then over the sentences")
def loss_mean_of_the_sentences_means(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_position = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    real = (target != pad_id).float()
    per_sentence = (per_position * real).sum(dim=1) / real.sum(dim=1)
    return per_sentence.mean()


@wrong_answer("sequence_loss", message="you computed the KL divergence KL(q || p)")
def loss_as_the_kl_divergence_from_the_smoothed_target(logits, target, pad_id, smoothing=0.0):
    vocab = logits.shape[-1]
    log_p = torch.log_softmax(logits, dim=-1)
    q = torch.full_like(log_p, smoothing / vocab)
    q.scatter_add_(-1, target.unsqueeze(-1), torch.full_like(log_p[..., :1], 1 - smoothing))
    divergence = torch.nn.functional.kl_div(log_p, q, reduction="none").sum(dim=-1)  # (batch, n_tgt)
    return divergence[target != pad_id].mean()


@wrong_answer("sequence_loss", message="the right word's term is not multiplied by 1 - smoothing")
def loss_without_one_minus_smoothing_on_the_right_word(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_position = right + smoothing * -log_p.mean(dim=-1)
    return per_position[target != pad_id].mean()


@wrong_answer("sequence_loss", message="you normalised over the positions (dim 1), not over the vocabulary")
def loss_normalised_over_the_positions(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="you normalised over the sentences (dim 0), not over the vocabulary")
def loss_normalised_over_the_sentences(logits, target, pad_id, smoothing=0.0):
    log_p = logits.softmax(dim=0).log()
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="does not move the vocabulary to dim 1")
def loss_with_the_vocabulary_moved_by_view(logits, target, pad_id, smoothing=0.0):
    batch, n_tgt, vocab = logits.shape
    classes_on_dim_1 = logits.view(batch, vocab, n_tgt)  # cross_entropy wants the classes on dim 1
    return torch.nn.functional.cross_entropy(classes_on_dim_1, target, ignore_index=pad_id, label_smoothing=smoothing)


@wrong_answer("sequence_loss", message="your loss mixes positions")
def loss_flattened_after_moving_the_vocabulary(logits, target, pad_id, smoothing=0.0):
    vocab = logits.shape[-1]
    rows = logits.transpose(1, 2).reshape(-1, vocab)  # one row per position, or so it seems
    return torch.nn.functional.cross_entropy(rows, target.reshape(-1), ignore_index=pad_id, label_smoothing=smoothing)


@wrong_answer("sequence_loss", message="the axis of the positions (n_tgt)")
def loss_gathering_along_the_positions(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(1, target.unsqueeze(1)).squeeze(1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="your smoothing term is divided by the vocabulary size twice")
def loss_smoothing_divided_by_the_vocabulary_twice(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    every = -log_p.mean(dim=-1)
    per_token = (1 - smoothing) * right + smoothing / logits.shape[-1] * every  # smoothing / V on each word
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="you kept the positions where target > pad_id")
def loss_keeping_ids_above_the_padding_id(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target > pad_id].mean()


@wrong_answer("sequence_loss", message="the smoothing term, smoothing times the mean of -log p, passes no gradient")
def loss_with_the_smoothing_term_detached(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=-1)
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    every = -log_p.mean(dim=-1).detach()  # the uniform target is a constant
    per_token = (1 - smoothing) * right + smoothing * every
    return per_token[target != pad_id].mean()


@wrong_answer("sequence_loss", message="the value of your loss is right, but not its gradient with respect to")
def loss_with_a_detached_normaliser(logits, target, pad_id, smoothing=0.0):
    normaliser = logits.logsumexp(dim=-1, keepdim=True).detach()  # kept out of the graph, for stability
    log_p = logits - normaliser
    right = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    per_token = (1 - smoothing) * right + smoothing * -log_p.mean(dim=-1)
    return per_token[target != pad_id].mean()


# Exercise 3: learning_rate ---------------------------------------------------------------------------------


@wrong_answer("learning_rate", message="there is no warm-up")
def learning_rate_without_warmup(step, peak, warmup_steps):
    return peak * min(1.0, (warmup_steps / step) ** 0.5)


@wrong_answer("learning_rate", message="the rate must decay after the warm-up")
def learning_rate_without_decay(step, peak, warmup_steps):
    return peak * min(step / warmup_steps, 1.0)


@wrong_answer("learning_rate", message="it decays as warmup_steps / step")
def learning_rate_decaying_too_fast(step, peak, warmup_steps):
    return peak * min(step / warmup_steps, warmup_steps / step)


@wrong_answer("learning_rate", message="the first update would change nothing")
def learning_rate_counting_from_zero(step, peak, warmup_steps):
    step = step - 1
    return peak * min(step / warmup_steps, (warmup_steps / max(step, 1)) ** 0.5)


@wrong_answer("learning_rate", message="learning_rate is one step ahead")
def learning_rate_one_step_ahead(step, peak, warmup_steps):
    step = step + 1  # the optimiser has taken `step` steps, so this is the next one
    return peak * min(step / warmup_steps, (warmup_steps / step) ** 0.5)


@wrong_answer("learning_rate", message="Integer division, step // warmup_steps")
def learning_rate_with_integer_division(step, peak, warmup_steps):
    return peak * min(step // warmup_steps, (warmup_steps / step) ** 0.5)


@wrong_answer("learning_rate", message="your warm-up grows as the square root")
def learning_rate_with_a_square_root_warmup(step, peak, warmup_steps):
    return peak * min(step / warmup_steps, warmup_steps / step) ** 0.5


@wrong_answer("learning_rate", message="takes the larger of the two pieces")
def learning_rate_with_max_for_min(step, peak, warmup_steps):
    return peak * max(step / warmup_steps, math.sqrt(warmup_steps / step))


@wrong_answer("learning_rate", message="its square root covers step alone")
def learning_rate_with_the_square_root_of_step_alone(step, peak, warmup_steps):
    return peak * min(step / warmup_steps, warmup_steps / step**0.5)


@wrong_answer("learning_rate", message="your decay is peak / √step")
def learning_rate_decaying_from_the_wrong_height(step, peak, warmup_steps):
    if step <= warmup_steps:
        return peak * step / warmup_steps
    return peak / math.sqrt(step)


# Exercise 4: greedy_decode ---------------------------------------------------------------------------------


@wrong_answer("greedy_decode", message="the output starts with BOS")
def greedy_decode_keeping_bos(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words


@wrong_answer("greedy_decode", message="model.decode only ever saw one word")
def greedy_decode_feeding_only_the_last_word(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    last = torch.full((src.shape[0], 1), BOS)
    outputs = []
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(last, memory, target_mask(last, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        outputs.append(next_word)
        last = next_word[:, None]
        finished |= next_word == EOS
        if finished.all():
            break
    return torch.stack(outputs, dim=1)


@wrong_answer("greedy_decode", message="every word repeats the first prediction")
def greedy_decode_reading_the_first_position(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, 0].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="stop as soon as every row has produced EOS")
def greedy_decode_always_to_max_len(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
    return words[:, 1:]


@wrong_answer("greedy_decode", message="a row went on after its EOS")
def greedy_decode_without_padding_finished_rows(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="model.decode got no tgt_mask")
def greedy_decode_without_the_causal_mask(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, None, src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="model.encode got no source mask")
def greedy_decode_without_the_source_mask(model, src, max_len):
    memory = model.encode(src)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD))
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="you stopped as soon as one row produced EOS")
def greedy_decode_stopping_when_one_row_finishes(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.any():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="the exercise asks you to encode the source once")
def greedy_decode_running_the_whole_model_each_step(model, src, max_len):
    src_mask = source_mask(src, PAD)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model(src, words, src_mask, target_mask(words, PAD))
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="the source does not change while the words are written")
def greedy_decode_encoding_at_every_step(model, src, max_len):
    src_mask = source_mask(src, PAD)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        memory = model.encode(src, src_mask)
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="one word short of max_len")
def greedy_decode_one_word_short(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len - 1):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="every row's EOS became PAD")
def greedy_decode_padding_over_the_eos(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1)
        finished |= next_word == EOS
        next_word = next_word.masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="after its EOS it wrote PAD, then words again")
def greedy_decode_forgetting_rows_finished_earlier(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished = next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="returned rows of 6 words, more than max_len=4")
def greedy_decode_ignoring_max_len(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    while not finished.all() and words.shape[1] < 50:  # a bound of its own, to be safe
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
    return words[:, 1:]


@wrong_answer("greedy_decode", message="One of your tensors has 12 numbers, the size of the vocabulary")
def greedy_decode_with_argmax_over_the_batch(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=0).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="token ids are integers, torch.long (int64)")
def greedy_decode_with_a_float_prefix(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.ones(src.shape[0], 1) * BOS
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="`finished | next_word == EOS` reads `(finished | next_word) == EOS`")
def greedy_decode_with_or_binding_before_the_comparison(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished = finished | next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="so was the mask made from src?")
def greedy_decode_with_the_target_mask_of_the_source(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(src, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, PAD)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


@wrong_answer("greedy_decode", message="after its EOS, the row's later places hold EOS again")
def greedy_decode_filling_finished_rows_with_eos(model, src, max_len):
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = torch.full((src.shape[0], 1), BOS)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    for _ in range(max_len):
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        next_word = logits[:, -1].argmax(dim=-1).masked_fill(finished, EOS)
        words = torch.cat([words, next_word[:, None]], dim=1)
        finished |= next_word == EOS
        if finished.all():
            break
    return words[:, 1:]


# Exercise 5: beam_search -----------------------------------------------------------------------------------


@wrong_answer("beam_search", message="the first word with the highest probability does not lead to the best")
def beam_search_that_is_greedy(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    words = [BOS]
    for _ in range(max_len):
        prefix = torch.tensor([words])
        logits = model.decode(prefix, memory, target_mask(prefix, PAD), src_mask)
        words.append(logits[0, -1].argmax().item())
        if words[-1] == EOS:
            break
    return words[1:]


@wrong_answer("beam_search", message="length counts its EOS")
def beam_search_leaving_eos_out_of_the_length(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([hypothesis for hypothesis, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        scores = torch.tensor([score for _, score in alive])[:, None] + log_p
        best = scores.flatten().topk(min(beam_size, scores.numel()))
        alive = []
        for score, index in zip(best.values.tolist(), best.indices.tolist(), strict=True):
            hypothesis, word = divmod(index, log_p.shape[-1])
            extended = (words[hypothesis].tolist() + [word], score)
            (finished if word == EOS else alive).append(extended)
        if not alive:
            break

    def words_of(hypothesis):  # the words after BOS, not counting EOS
        return max(1, len([word for word in hypothesis if word not in (BOS, EOS)]))

    best_words, _ = max(finished + alive, key=lambda h: h[1] / words_of(h[0]) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="with alpha=1, hypotheses compare by their log-probability per word")
def beam_search_without_length_normalisation(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1])
    return best_words[1:]


@wrong_answer("beam_search", message="a hypothesis that ends with EOS is finished")
def beam_search_extending_finished_hypotheses(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    beam = [([BOS], 0.0)]
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in beam])
        logits = model.decode(words, memory.expand(len(beam), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in beam])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        beam = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            beam.append((words[hyp].tolist() + [word], total))
    best_words, _ = max(beam, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="ranked by their summed log-probability, not their last word")
def beam_search_ranking_by_the_last_word(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        best = log_p.flatten().topk(min(beam_size, log_p.numel()))
        alive = []
        for score, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], score))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="when no hypothesis has finished within max_len=3 words")
def beam_search_returning_only_finished_hypotheses(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    if not finished:
        return []
    best_words, _ = max(finished, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="Yours ranks first under a length that counts BOS")
def beam_search_counting_bos_in_the_length(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / len(c[0]) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="each row of words attends to its own row of memory")
def beam_search_without_expanding_the_memory(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory, target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="when max_len is reached the unfinished hypotheses compete with the finished")
def beam_search_preferring_finished_hypotheses(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished or alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="no hypothesis ends within max_len words; the best unfinished one is returned")
def beam_search_choosing_among_finished_hypotheses_only(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="your search adds raw logits")
def beam_search_adding_raw_logits(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1]  # raw logits, not log-probabilities
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="your search stopped while it was still growing")
def beam_search_stopping_when_one_finishes(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if finished or not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="stops one step short of max_len")
def beam_search_one_step_short(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len - 1):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="the last axis, not across the hypotheses")
def beam_search_normalising_across_the_hypotheses(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=0)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="it is the size of the vocabulary, whatever beam_size is")
def beam_search_splitting_the_flat_index_by_beam_size(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, beam_size)
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="under Google's penalty, ((5 + length) / 6)**alpha")
def beam_search_with_the_gnmt_length_penalty(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / ((5 + len(c[0]) - 1) / 6) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="if the running score is divided by length**alpha at every step")
def beam_search_keeping_the_normalised_score_as_it_goes(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        length = words.shape[1]  # the words after BOS once the next one is added
        totals = (torch.tensor([s for _, s in alive])[:, None] + log_p) / length**alpha
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1])
    return best_words[1:]


@wrong_answer("beam_search", message="not beam_size per hypothesis")
def beam_search_keeping_the_best_extensions_of_each_hypothesis(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        top = log_p.topk(beam_size, dim=-1)  # the best words of each hypothesis
        extended = []
        for hyp, (w, s) in enumerate(alive):
            for lp, word in zip(top.values[hyp].tolist(), top.indices[hyp].tolist()):
                (finished if word == EOS else extended).append((w + [word], s + lp))
        alive = extended
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="What went wrong is the choice of the result")
def beam_search_returning_the_lowest_score(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = min(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="Yours is unfinished and scores")
def beam_search_preferring_unfinished_hypotheses(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(alive or finished, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="topk on the 2-D scores (hypotheses, vocab) works along the last axis")
def beam_search_with_topk_of_each_row(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.topk(min(beam_size, totals.shape[-1]))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            (finished if word == EOS else alive).append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="without its EOS. A finished hypothesis is returned with its EOS")
def beam_search_setting_finished_hypotheses_aside_without_eos(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([w for w, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        totals = torch.tensor([s for _, s in alive])[:, None] + log_p
        best = totals.flatten().topk(min(beam_size, totals.numel()))
        alive = []
        for total, index in zip(best.values.tolist(), best.indices.tolist()):
            hyp, word = divmod(index, log_p.shape[-1])
            if word == EOS:
                finished.append((words[hyp].tolist(), total))  # done: the EOS has served its purpose
            else:
                alive.append((words[hyp].tolist() + [word], total))
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda c: c[1] / (len(c[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("learning_rate", message="a number fixed in your function stands where an argument should be used")
def learning_rate_with_the_warmup_fixed_at_400(step, peak, warmup_steps):
    return peak * min(step / 400, math.sqrt(400 / step))


@wrong_answer("sequence_loss", message="you normalised over the positions (dim 1), not over the vocabulary")
def loss_with_the_log_softmax_over_the_positions(logits, target, pad_id, smoothing=0.0):
    log_p = torch.log_softmax(logits, dim=1)
    right_word = -log_p.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    every_word = -log_p.mean(dim=-1)
    per_position = (1 - smoothing) * right_word + smoothing * every_word
    return per_position[target != pad_id].mean()


@wrong_answer("beam_search", message="your search stopped as soon as a hypothesis finished")
def beam_search_returning_the_first_finished(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive = [([BOS], 0.0)]
    for _ in range(max_len):
        words = torch.tensor([hypothesis for hypothesis, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        scores = torch.tensor([score for _, score in alive])[:, None] + log_p
        best = scores.flatten().topk(min(beam_size, scores.numel()))
        alive = []
        for score, index in zip(best.values.tolist(), best.indices.tolist(), strict=True):
            hypothesis, word = divmod(index, log_p.shape[-1])
            extended = (words[hypothesis].tolist() + [word], score)
            if word == EOS:
                return extended[0][1:]
            alive.append(extended)
    best_words, _ = max(alive, key=lambda h: h[1] / (len(h[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="product of its words' probabilities divided by length**alpha")
def beam_search_multiplying_probabilities(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 1.0)], []
    for _ in range(max_len):
        words = torch.tensor([hypothesis for hypothesis, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        p = logits[:, -1].softmax(dim=-1)
        scores = torch.tensor([score for _, score in alive])[:, None] * p
        best = scores.flatten().topk(min(beam_size, scores.numel()))
        alive = []
        for score, index in zip(best.values.tolist(), best.indices.tolist(), strict=True):
            hypothesis, word = divmod(index, p.shape[-1])
            extended = (words[hypothesis].tolist() + [word], score)
            (finished if word == EOS else alive).append(extended)
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda h: h[1] / (len(h[0]) - 1) ** alpha)
    return best_words[1:]


@wrong_answer("beam_search", message="divmod(index, vocab) gives (hypothesis, word)")
def beam_search_decoding_the_flat_index_the_wrong_way_round(model, src, beam_size, max_len, alpha=0.6):
    src = src[None]
    src_mask = source_mask(src, PAD)
    memory = model.encode(src, src_mask)
    alive, finished = [([BOS], 0.0)], []
    for _ in range(max_len):
        words = torch.tensor([hypothesis for hypothesis, _ in alive])
        logits = model.decode(words, memory.expand(len(alive), -1, -1), target_mask(words, PAD), src_mask)
        log_p = logits[:, -1].log_softmax(dim=-1)
        scores = torch.tensor([score for _, score in alive])[:, None] + log_p
        best = scores.flatten().topk(min(beam_size, scores.numel()))
        alive = []
        for score, index in zip(best.values.tolist(), best.indices.tolist(), strict=True):
            word, hypothesis = divmod(index, len(words))
            if hypothesis >= len(words) or word >= log_p.shape[-1]:
                continue
            extended = (words[hypothesis].tolist() + [word], score)
            (finished if word == EOS else alive).append(extended)
        if not alive:
            break
    best_words, _ = max(finished + alive, key=lambda h: h[1] / (len(h[0]) - 1) ** alpha)
    return best_words[1:]
