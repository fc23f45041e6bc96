"""Wrong answers to notebook 13: the masking, the encoder with its head, the masked loss, the classifier."""

import torch
import torch.nn.functional as F
from torch import nn

# Later exercises call earlier ones by name, as they do in the notebook; these stand for those names.
from transformer_course.checks.stand_ins import EncoderForMaskedLM
from transformer_course.reference import Encoder, LayerNorm
from wrong_answers import wrong_answer

ASSIGNMENT = "13_encoder_only"

# Exercise 1: mask_tokens ---------------------------------------------------------------------------------


@wrong_answer("mask_tokens", message="half of the REST")
def mask_tokens_with_independent_draws(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    labels = ids.masked_fill(~chosen, -100)
    to_mask = chosen & (torch.rand(ids.shape) < 0.8)
    to_random = chosen & ~to_mask & (torch.rand(ids.shape) < 0.1)  # 10% of the remaining 20%
    inputs = ids.masked_fill(to_mask, mask_id)
    inputs = torch.where(to_random, torch.randint(vocab_size, ids.shape), inputs)
    return inputs, labels


@wrong_answer("mask_tokens", message="Expected 80%, 10% and 10%")
def mask_tokens_always_mask(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    return ids.masked_fill(chosen, mask_id), ids.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="0 is a token id like any other")
def mask_tokens_labels_zero(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    fate = torch.rand(ids.shape)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    inputs = torch.where(chosen & (fate >= 0.8) & (fate < 0.9), torch.randint(vocab_size, ids.shape), inputs)
    return inputs, ids.masked_fill(~chosen, 0)


@wrong_answer("mask_tokens", message="chose positions where can_mask is False")
def mask_tokens_ignoring_can_mask(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = torch.rand(ids.shape) < probability
    fate = torch.rand(ids.shape)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    inputs = torch.where(chosen & (fate >= 0.8) & (fate < 0.9), torch.randint(vocab_size, ids.shape), inputs)
    return inputs, ids.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="as if probability were always 0.15")
def mask_tokens_fixed_rate(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < 0.15) & can_mask
    fate = torch.rand(ids.shape)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    inputs = torch.where(chosen & (fate >= 0.8) & (fate < 0.9), torch.randint(vocab_size, ids.shape), inputs)
    return inputs, ids.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="a chosen position's label must be the token that was there")
def mask_tokens_labels_from_inputs(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    fate = torch.rand(ids.shape)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    inputs = torch.where(chosen & (fate >= 0.8) & (fate < 0.9), torch.randint(vocab_size, ids.shape), inputs)
    return inputs, inputs.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="only 1 different ids")
def mask_tokens_one_random_token(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    fate = torch.rand(ids.shape)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    random_token = torch.randint(vocab_size, ()).item()  # one draw for the whole batch
    inputs = inputs.masked_fill(chosen & (fate >= 0.8) & (fate < 0.9), random_token)
    return inputs, ids.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="draw every random number from PyTorch's global generator")
def mask_tokens_own_generator(ids, can_mask, mask_id, vocab_size, probability=0.15):
    generator = torch.Generator()
    generator.seed()  # a fresh seed from the system on every call
    chosen = (torch.rand(ids.shape, generator=generator) < probability) & can_mask
    fate = torch.rand(ids.shape, generator=generator)
    random_tokens = torch.randint(vocab_size, ids.shape, generator=generator)
    inputs = ids.masked_fill(chosen & (fate < 0.8), mask_id)
    inputs = torch.where(chosen & (fate >= 0.8) & (fate < 0.9), random_tokens, inputs)
    return inputs, ids.masked_fill(~chosen, -100)


@wrong_answer("mask_tokens", message="changed its input ids in place")
def mask_tokens_in_place(ids, can_mask, mask_id, vocab_size, probability=0.15):
    chosen = (torch.rand(ids.shape) < probability) & can_mask
    labels = ids.masked_fill(~chosen, -100)
    fate = torch.rand(ids.shape)
    random_tokens = torch.randint(vocab_size, ids.shape)
    ids[chosen & (fate < 0.8)] = mask_id
    to_random = chosen & (fate >= 0.8) & (fate < 0.9)
    ids[to_random] = random_tokens[to_random]
    return ids, labels


# Exercise 2: EncoderForMaskedLM --------------------------------------------------------------------------


@wrong_answer("EncoderForMaskedLM", message="lets every position attend to the padding")
class EncoderIgnoringThePadding(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        return self.encoder(self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions)))

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="multiplies the token embeddings by √d_model")
class EncoderScalingTheEmbeddings(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.d_model = d_model
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.token_embedding(ids) * self.d_model**0.5 + self.position_embedding(positions)
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(self.embedding_norm(x), mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="differs from BertModel's last hidden states")
class EncoderWithoutTheEmbeddingNorm(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.token_embedding(ids) + self.position_embedding(positions)
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="has a second table of one vector per word")
class EncoderWithAnUntiedHead(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))
        self.output = nn.Linear(d_model, vocab_size, bias=False)

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return self.output(h) + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="leaves out the ReLU after self.head_transform")
class EncoderWithoutTheHeadActivation(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(self.head_transform(self.encode(ids, padding_mask)))
        return h @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="leaves out the head")
class EncoderWithoutTheHeadTransform(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        return self.encode(ids, padding_mask) @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="leaves out self.head_bias")
class EncoderWithoutTheHeadBias(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T


@wrong_answer("EncoderForMaskedLM", message="BERT's layers normalise after each sublayer")
class EncoderPreLN(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff, norm_first=True)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else padding_mask[:, None, :]
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T + self.head_bias


@wrong_answer("EncoderForMaskedLM", message="not its negation")
class EncoderWithTheMaskNegated(nn.Module):
    def __init__(self, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(max_len, d_model)
        self.embedding_norm = LayerNorm(d_model)
        self.encoder = Encoder(num_layers, d_model, num_heads, d_ff)
        self.head_transform = nn.Linear(d_model, d_model)
        self.head_norm = LayerNorm(d_model)
        self.head_bias = nn.Parameter(torch.zeros(vocab_size))

    def encode(self, ids, padding_mask=None):
        positions = torch.arange(ids.shape[1])
        x = self.embedding_norm(self.token_embedding(ids) + self.position_embedding(positions))
        mask = None if padding_mask is None else ~padding_mask[:, None, :]  # True = padding, as PyTorch's layers
        return self.encoder(x, mask)

    def forward(self, ids, padding_mask=None):
        h = self.head_norm(F.relu(self.head_transform(self.encode(ids, padding_mask))))
        return h @ self.token_embedding.weight.T + self.head_bias


# Exercise 3: masked_lm_loss ------------------------------------------------------------------------------


@wrong_answer("masked_lm_loss", message="by the number of ALL positions")
def masked_lm_loss_over_all_positions(logits, labels):
    each = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="none")
    return each.mean()


@wrong_answer("masked_lm_loss", message="returns the SUM")
def masked_lm_loss_summed(logits, labels):
    return F.cross_entropy(logits.flatten(0, 1), labels.flatten(), ignore_index=-100, reduction="sum")


@wrong_answer("masked_lm_loss", message="F.cross_entropy reads the classes on axis 1")
def masked_lm_loss_unflattened(logits, labels):
    return F.cross_entropy(logits, labels, ignore_index=-100)


@wrong_answer("masked_lm_loss", message="which is no word")
def masked_lm_loss_gathering_every_label(logits, labels):
    log_probabilities = logits.log_softmax(dim=-1)
    picked = log_probabilities.gather(-1, labels.unsqueeze(-1)).squeeze(-1)
    return -picked[labels != -100].mean()


# Exercise 4: SequenceClassifier --------------------------------------------------------------------------


@wrong_answer("SequenceClassifier", message="averages the positions' vectors")
class ClassifierOnTheMean(nn.Module):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        h = self.encoder.encode(ids, padding_mask)
        real = padding_mask.unsqueeze(-1).float()
        mean = (h * real).sum(1) / real.sum(1)
        return self.classifier(torch.tanh(self.pooler(mean)))


@wrong_answer("SequenceClassifier", message="leaves out the tanh")
class ClassifierWithoutTanh(nn.Module):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        return self.classifier(self.pooler(self.encoder.encode(ids, padding_mask)[:, 0]))


@wrong_answer("SequenceClassifier", message="reads the last real token's vector")
class ClassifierOnTheLastToken(nn.Module):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        h = self.encoder.encode(ids, padding_mask)
        last = h[torch.arange(ids.shape[0]), padding_mask.sum(1) - 1]
        return self.classifier(torch.tanh(self.pooler(last)))


@wrong_answer("SequenceClassifier", message="does not pass the padding mask to the encoder")
class ClassifierWithoutThePaddingMask(nn.Module):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        return self.classifier(torch.tanh(self.pooler(self.encoder.encode(ids)[:, 0])))


@wrong_answer("SequenceClassifier", message="not the vectors: the classifier reads self.encoder.encode")
class ClassifierOnTheLogits(nn.Module):
    def __init__(self, num_labels, vocab_size, max_len, d_model, num_heads, d_ff, num_layers):
        super().__init__()
        self.encoder = EncoderForMaskedLM(vocab_size, max_len, d_model, num_heads, d_ff, num_layers)
        self.pooler = nn.Linear(d_model, d_model)
        self.classifier = nn.Linear(d_model, num_labels)

    def forward(self, ids, padding_mask=None):
        return self.classifier(torch.tanh(self.pooler(self.encoder(ids, padding_mask)[:, 0])))


# Exercise 5: fine_tune -----------------------------------------------------------------------------------


@wrong_answer("fine_tune", message="call classifier.train()")
def fine_tune_in_evaluation_mode(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="loss.backward() accumulates into .grad")
def fine_tune_without_zero_grad(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="never changes the weights")
def fine_tune_zeroing_before_the_step(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        loss.backward()
        optimizer.zero_grad()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="makes a new optimizer at every step")
def fine_tune_with_an_optimizer_per_step(classifier, batches, learning_rate, weight_decay=0.01):
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="use torch.optim.AdamW")
def fine_tune_with_adam(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.Adam(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="leaves out the weight decay")
def fine_tune_without_weight_decay(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=0.0)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="always decays by 0.01")
def fine_tune_with_the_default_decay(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="without the padding mask")
def fine_tune_ignoring_the_padding(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, _padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="clips the gradients")
def fine_tune_clipping(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(classifier.parameters(), 1.0)
        optimizer.step()
        losses.append(loss.item())
    return losses


@wrong_answer("fine_tune", message="take loss.item()")
def fine_tune_keeping_loss_tensors(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss)
    return losses


@wrong_answer("fine_tune", message="after its step's update")
def fine_tune_losses_after_the_update(classifier, batches, learning_rate, weight_decay=0.01):
    optimizer = torch.optim.AdamW(classifier.parameters(), lr=learning_rate, weight_decay=weight_decay)
    classifier.train()
    losses = []
    for ids, padding_mask, labels in batches:
        loss = F.cross_entropy(classifier(ids, padding_mask), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            losses.append(F.cross_entropy(classifier(ids, padding_mask), labels).item())
    return losses
