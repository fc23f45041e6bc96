"""Pretrain notebook 13's small BERT on the Python manual by masked language modelling, and measure what the
pretraining buys when fine-tuning on few labels (which group of topics a paragraph comes from).

    .venv/bin/python benchmarks/encoder_pretraining.py pretrain [--steps 5000] [--out PATH]
    .venv/bin/python benchmarks/encoder_pretraining.py transfer [--seeds 5] [--split test]

pretrain writes a BertForMaskedLM's state dict (float16) and its config as a dict to
src/transformer_course/data/pretrained_encoder.pt; transfer fine-tunes it and the same model from scratch on
10, 30, 100 and 300 balanced labels and prints the test accuracies, mean and spread over seeds. Choices were made
on the validation split. Runs with one thread, like the notebook. A benchmark, not a test.
"""

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import BertConfig, BertForMaskedLM, BertForSequenceClassification

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
from transformer_course.data.manual_words import (
    CLS,
    GROUPS,
    MASK,
    PAD,
    SEP,
    SPECIAL_TOKENS,
    Vocabulary,
    labelled_paragraphs,
    labelled_sample,
    pretraining_text,
)

WEIGHTS = Path(__file__).resolve().parent.parent / "src" / "transformer_course" / "data" / "pretrained_encoder.pt"
LENGTH = 64  # tokens per window and per labelled paragraph, [CLS] and [SEP] included
CONFIGURATION = {"hidden_size": 64, "num_hidden_layers": 2}
LABEL_COUNTS = (10, 30, 100, 300)


def random_windows(stream: torch.Tensor, count: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """count windows of a 1-d id stream starting at random positions, each [CLS] + length - 2 ids + [SEP]."""
    starts = torch.randint(0, len(stream) - length + 2, (count,), generator=generator)
    inner = torch.stack([stream[start : start + length - 2] for start in starts.tolist()])
    return torch.cat([torch.full((count, 1), CLS), inner, torch.full((count, 1), SEP)], dim=1)


def mask_tokens(ids: torch.Tensor, vocabulary_size: int, generator: torch.Generator, rate: float = 0.15):
    """BERT's masking: rate of the non-special positions become targets; of those 80% are replaced by [MASK],
    10% by a random word and 10% left as they are. Returns (inputs, labels), labels -100 where no target.
    The benchmark's own, with a generator of its own: notebook 13 asks learners to write it, so the released
    package must not hold it."""
    chosen = (torch.rand(ids.shape, generator=generator) < rate) & (ids >= len(SPECIAL_TOKENS))
    labels = torch.where(chosen, ids, -100)
    draw = torch.rand(ids.shape, generator=generator)
    inputs = torch.where(chosen & (draw < 0.8), MASK, ids)
    replaced = chosen & (draw >= 0.8) & (draw < 0.9)
    randoms = torch.randint(len(SPECIAL_TOKENS), vocabulary_size, ids.shape, generator=generator)
    return torch.where(replaced, randoms, inputs), labels


def bert_config(vocabulary_size: int, hidden_size: int, num_hidden_layers: int, **extra) -> BertConfig:
    return BertConfig(
        vocab_size=vocabulary_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=4,
        intermediate_size=4 * hidden_size,
        hidden_act="relu",
        layer_norm_eps=1e-5,
        type_vocab_size=1,
        max_position_embeddings=LENGTH,
        pad_token_id=PAD,
        **extra,
    )


def masked_lm_loss(model: BertForMaskedLM, inputs: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The MLM loss with the output layer applied to the masked positions only (same loss, less work)."""
    hidden = model.bert(inputs).last_hidden_state
    targets = labels != -100
    return F.cross_entropy(model.cls(hidden[targets]), labels[targets])


def pretrain(steps: int, batch_size: int, learning_rate: float, out: Path, configuration: dict) -> None:
    torch.manual_seed(0)
    vocabulary = Vocabulary()
    stream = torch.tensor(vocabulary.encode(pretraining_text()))
    valid_text = " ".join(p for p, _ in labelled_paragraphs()["valid"])
    valid_stream = torch.tensor(vocabulary.encode(valid_text))
    config = bert_config(len(vocabulary), **configuration)
    model = BertForMaskedLM(config)
    print(
        f"vocabulary {len(vocabulary)}, pretraining tokens {len(stream)}, parameters "
        f"{sum(p.numel() for p in model.parameters())}, {configuration}"
    )
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, betas=(0.9, 0.98), weight_decay=0.01)
    warmup = min(1000, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, max(0.0, (steps - step) / (steps - warmup)))
    )
    generator = torch.Generator().manual_seed(0)
    valid_generator = torch.Generator().manual_seed(1)
    valid_batches = [
        mask_tokens(random_windows(valid_stream, 64, LENGTH, valid_generator), len(vocabulary), valid_generator)
        for _ in range(8)
    ]
    started, running = time.perf_counter(), []
    print(f"{'step':>6} {'seconds':>8} {'train loss':>11} {'valid loss':>11} {'valid masked acc':>17}")
    for step in range(1, steps + 1):
        model.train()
        inputs, labels = mask_tokens(random_windows(stream, batch_size, LENGTH, generator), len(vocabulary), generator)
        loss = masked_lm_loss(model, inputs, labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        running.append(loss.item())
        if step % 1000 == 0 or step == steps:
            model.eval()
            with torch.no_grad():
                losses, correct, total = [], 0, 0
                for inputs, labels in valid_batches:
                    hidden = model.bert(inputs).last_hidden_state
                    targets = labels != -100
                    logits = model.cls(hidden[targets])
                    losses.append(F.cross_entropy(logits, labels[targets]).item())
                    correct += (logits.argmax(-1) == labels[targets]).sum().item()
                    total += targets.sum().item()
            print(
                f"{step:6d} {time.perf_counter() - started:8.1f} {statistics.mean(running):11.3f} "
                f"{statistics.mean(losses):11.3f} {100 * correct / total:16.1f}%",
                flush=True,
            )
            running = []
    state = {name: tensor.half() for name, tensor in model.state_dict().items()}
    torch.save({"config": config.to_dict(), "state_dict": state}, out)
    print(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB) after {time.perf_counter() - started:.0f} s")


def load_pretrained(path: Path = WEIGHTS) -> tuple[BertConfig, dict]:
    saved = torch.load(path)
    config = BertConfig.from_dict(saved["config"])
    return config, {name: tensor.float() for name, tensor in saved["state_dict"].items()}


def classifier(config: BertConfig, pretrained: dict | None, seed: int) -> BertForSequenceClassification:
    """A BertForSequenceClassification over the config; with the pretrained MLM's encoder weights if given
    (the pooler and the classification layer are new either way)."""
    torch.manual_seed(seed)
    labels = {"id2label": dict(enumerate(GROUPS)), "label2id": {name: i for i, name in enumerate(GROUPS)}}
    model = BertForSequenceClassification(BertConfig.from_dict(config.to_dict() | labels))
    if pretrained is not None:
        missing, _ = model.load_state_dict(pretrained, strict=False)
        assert all(name.startswith(("bert.pooler", "classifier")) for name in missing), missing
    return model


def logits_of(model: BertForSequenceClassification, ids: torch.Tensor, pooling: str) -> torch.Tensor:
    """'first': BERT's own head (the pooler over the [CLS] vector); 'mean': the classification layer over the
    mean of the last hidden states at the non-padding positions."""
    ids = ids[:, : int((ids != PAD).sum(1).max())]  # no column of padding only
    if pooling == "first":
        return model(ids, attention_mask=ids != PAD).logits
    keep = (ids != PAD).unsqueeze(-1).float()
    hidden = model.bert(ids, attention_mask=ids != PAD).last_hidden_state
    return model.classifier(model.dropout((hidden * keep).sum(1) / keep.sum(1)))


def fine_tune(
    model, ids, labels, pooling="mean", encoder_lr=1e-3, head_lr=1e-3, steps=100, batch_size=32, seed=0
) -> BertForSequenceClassification:
    head = [p for name, p in model.named_parameters() if not name.startswith("bert.") or "pooler" in name]
    encoder = [p for name, p in model.named_parameters() if name.startswith("bert.") and "pooler" not in name]
    optimizer = torch.optim.AdamW(
        [{"params": encoder, "lr": encoder_lr}, {"params": head, "lr": head_lr}], weight_decay=0.01
    )
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(steps):
        chosen = torch.randperm(len(ids), generator=generator)[:batch_size]  # the whole set if it is smaller
        loss = F.cross_entropy(logits_of(model, ids[chosen], pooling), labels[chosen])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()


def accuracy(model, ids, labels, pooling="mean") -> float:
    with torch.no_grad():
        return (logits_of(model, ids, pooling).argmax(-1) == labels).float().mean().item()


def transfer(seeds: int, split: str, path: Path, recipes: dict) -> None:
    vocabulary = Vocabulary()
    data = labelled_paragraphs()
    evaluation = data[split]
    eval_ids = vocabulary.batch([p for p, _ in evaluation], LENGTH)
    eval_labels = torch.tensor([label for _, label in evaluation])
    config, pretrained = load_pretrained(path)
    print(
        f"{split} split: {len(evaluation)} paragraphs, majority class "
        f"{100 * eval_labels.bincount().max().item() / len(evaluation):.0f}%"
    )
    for name, recipe in recipes.items():
        started = time.perf_counter()
        print(f"\n{name}: {recipe}")
        print(f"{'labels':>6} {'pretrained':>16} {'scratch':>16}")
        for count in LABEL_COUNTS:
            results = {"pretrained": [], "scratch": []}
            for seed in range(seeds):
                sample = labelled_sample(data["pool"], count, seed)
                ids = vocabulary.batch([p for p, _ in sample], LENGTH)
                labels = torch.tensor([label for _, label in sample])
                for kind, weights in (("pretrained", pretrained), ("scratch", None)):
                    options = dict(recipe.get(kind, {}))
                    if options.pop("skip", False):
                        results[kind].append(float("nan"))
                        continue
                    steps = options.pop("steps", {}).get(count, 100)
                    tokens = options.pop("tokens", LENGTH)  # the first tokens of each paragraph only
                    model = classifier(config, weights, seed)
                    fine_tune(model, ids[:, :tokens], labels, steps=steps, seed=seed, **options)
                    results[kind].append(
                        accuracy(model, eval_ids[:, :tokens], eval_labels, options.get("pooling", "mean"))
                    )
            cells = [
                "-" if math.isnan(r[0]) else f"{100 * statistics.mean(r):5.1f} ± {100 * statistics.pstdev(r):4.1f}"
                for r in results.values()
            ]
            print(f"{count:6d} {cells[0]:>16} {cells[1]:>16}", flush=True)
        print(f"{time.perf_counter() - started:.1f} s for {seeds} seeds")


MORE_STEPS = {10: 60, 30: 80, 100: 100, 300: 150}
FEWER_STEPS = {10: 40, 30: 40, 100: 50, 300: 60}
RECIPES = {
    "A first token, lr 1e-3": {"pretrained": {"pooling": "first"}, "scratch": {"pooling": "first"}},
    "B mean, lr 1e-3": {"pretrained": {}, "scratch": {}},
    "C mean, encoder 3e-4 head 3e-3, more steps": {
        "pretrained": {"encoder_lr": 3e-4, "head_lr": 3e-3, "steps": MORE_STEPS},
        "scratch": {"encoder_lr": 1e-3, "head_lr": 3e-3, "steps": MORE_STEPS},
    },
    "D mean, encoder 1e-4 head 3e-3, more steps": {
        "pretrained": {"encoder_lr": 1e-4, "head_lr": 3e-3, "steps": MORE_STEPS},
        "scratch": {"encoder_lr": 3e-3, "head_lr": 3e-3, "steps": MORE_STEPS},
    },
    "F as D, cheap enough for the notebook: 32 tokens, batches of 16, fewer steps": {
        "pretrained": {"encoder_lr": 1e-4, "head_lr": 3e-3, "steps": FEWER_STEPS, "tokens": 32, "batch_size": 16},
        "scratch": {"encoder_lr": 3e-3, "head_lr": 3e-3, "steps": FEWER_STEPS, "tokens": 32, "batch_size": 16},
    },
    "G scratch of C (pretrained side: see D, same seeds)": {
        "pretrained": {"skip": True},
        "scratch": {"encoder_lr": 1e-3, "head_lr": 3e-3, "steps": MORE_STEPS},
    },
    "H as F, scratch encoder at 1e-3": {
        "pretrained": {"encoder_lr": 1e-4, "head_lr": 3e-3, "steps": FEWER_STEPS, "tokens": 32, "batch_size": 16},
        "scratch": {"encoder_lr": 1e-3, "head_lr": 3e-3, "steps": FEWER_STEPS, "tokens": 32, "batch_size": 16},
    },
    "E frozen encoder (probe), mean, head 1e-2": {
        "pretrained": {"encoder_lr": 0.0, "head_lr": 1e-2, "steps": MORE_STEPS},
        "scratch": {"encoder_lr": 0.0, "head_lr": 1e-2, "steps": MORE_STEPS},
    },
}


def contextual_cosines(path: Path = WEIGHTS) -> None:
    """Cosine between one word's last-layer vectors in two sentences, with the pretrained encoder."""
    vocabulary = Vocabulary()
    config, state = load_pretrained(path)
    model = BertForMaskedLM(config)
    model.load_state_dict(state)
    model.eval()
    pairs = [
        ("class", "a class definition defines a class object .", "the result is true for a large class of objects ."),
        (
            "return",
            "the return statement leaves the current function call .",
            "these methods return the result of the comparison .",
        ),
        ("raise", "the raise statement raises an exception .", "comparisons raise a typeerror if the types differ ."),
        (
            "object",
            "every object has an identity , a type and a value .",
            "the object of the with statement must be a context manager .",
        ),
        (
            "type",
            "the type of an object determines the operations it supports .",
            "type the name of the variable at the prompt .",
        ),
        (
            "string",
            "a string literal is enclosed in quotes .",
            "return a copy of the string with leading characters removed .",
        ),
    ]
    print(f"{'word':>8} {'cosine of contextual vectors':>30} {'static embedding':>17}")
    for word, first, second in pairs:
        vectors = []
        for sentence in (first, second):
            ids = vocabulary.batch([sentence], LENGTH)
            ids = ids[:, : int((ids != PAD).sum())]
            with torch.no_grad():
                hidden = model.bert(ids).last_hidden_state[0]
            vectors.append(hidden[ids[0].tolist().index(vocabulary.ids[word])])
        print(f"{word:>8} {F.cosine_similarity(*vectors, dim=0).item():30.2f} {1.0:17.2f}")


def frozen_probe(path: Path = WEIGHTS, split: str = "test") -> None:
    """Without fine-tuning: a logistic regression on frozen vectors ([CLS], mean) trained on the whole pool."""
    vocabulary = Vocabulary()
    data = labelled_paragraphs()
    config, state = load_pretrained(path)
    for kind, weights in (("pretrained", state), ("random", None)):
        model = classifier(config, weights, 0).eval()
        features = {}
        for name in ("pool", split):
            ids = vocabulary.batch([p for p, _ in data[name]], LENGTH)
            with torch.no_grad():
                hidden = model.bert(ids, attention_mask=ids != PAD).last_hidden_state
            keep = (ids != PAD).unsqueeze(-1).float()
            features[name] = {"first token": hidden[:, 0], "mean": (hidden * keep).sum(1) / keep.sum(1)}
        for pooling in ("first token", "mean"):
            torch.manual_seed(0)
            x, y = features["pool"][pooling], torch.tensor([label for _, label in data["pool"]])
            mean, std = x.mean(0), x.std(0) + 1e-6
            probe = torch.nn.Linear(x.shape[1], len(GROUPS))
            optimizer = torch.optim.Adam(probe.parameters(), lr=1e-2)
            for _ in range(500):
                loss = F.cross_entropy(probe((x - mean) / std), y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
            xt, yt = features[split][pooling], torch.tensor([label for _, label in data[split]])
            accuracy_ = (probe((xt - mean) / std).argmax(-1) == yt).float().mean().item()
            print(f"{kind:>10} encoder, frozen, {pooling:>11} vector: {100 * accuracy_:5.1f}% on {split}")


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=("pretrain", "transfer", "analysis"))
    parser.add_argument("--recipes", default="ABCDE", help="letters of the RECIPES to run")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--hidden-size", type=int, default=CONFIGURATION["hidden_size"])
    parser.add_argument("--layers", type=int, default=CONFIGURATION["num_hidden_layers"])
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--split", default="test", choices=("valid", "test"))
    args = parser.parse_args()
    if args.what == "pretrain":
        configuration = {"hidden_size": args.hidden_size, "num_hidden_layers": args.layers}
        pretrain(args.steps, args.batch_size, args.lr, args.out, configuration)
    elif args.what == "transfer":
        transfer(args.seeds, args.split, args.out, {k: v for k, v in RECIPES.items() if k[0] in args.recipes})
    else:
        contextual_cosines(args.out)
        frozen_probe(args.out, args.split)


if __name__ == "__main__":
    main()
