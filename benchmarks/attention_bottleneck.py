"""Where attention came from: a recurrent encoder-decoder with and without attention on notebook 08's task,
and its exact match against the length of the source sentence.

Model A is the RNN encoder-decoder of Cho et al. (2014) and Sutskever et al. (2014): a GRU reads the English
sentence, and all the decoder ever learns of it is the encoder's last state, one vector of `--hidden` numbers
(the decoder starts from it and sees it again at every step). Model B is the same model with the additive
attention of Bahdanau, Cho & Bengio (2015): at every step the decoder scores each encoder state h_j against its
own state s with vᵀ tanh(W s + U h_j) and reads the softmax-weighted sum of them instead of the fixed vector.
Everything else (sizes, data, optimiser, steps, seed) is the same, so the difference is the bottleneck.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/attention_bottleneck.py [--steps N] [--hidden H] [--seed S]
        [--output PATH]

Both models train for the same number of steps rather than the same time: the attention model is slower per
step (its decoder runs one word at a time), and on a machine shared with other work a time budget would
measure the load as much as the models. The checkpoint with the best validation exact match is scored on the
test split, bucketed by the number of English words. The results go to a JSON file that a notebook can draw
from without training. A benchmark, not a test.
"""

import argparse
import copy
import json
import time
from datetime import UTC, datetime
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from transformer_course.data.translation import BOS, EOS, MAX_WORDS, PAD, Vocabulary, endless_batches, splits
from transformer_course.evaluation import exact_match, translate_all

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "src/transformer_course/data/attention_bottleneck.json"
BUCKETS = ((3, 6), (7, 9), (10, 12), (13, 15), (16, 20))  # English words; each holds 230-540 test sentences
EMBEDDING = 64
BATCH_SIZE = 64
LEARNING_RATE = 1e-3
EVALUATE_EVERY = 500  # steps between validation scores


class Encoder(nn.Module):
    """Embeddings and a one-layer GRU over the source; returns every position's state and the last word's."""

    def __init__(self, vocabulary: int, hidden: int):
        super().__init__()
        self.embedding = nn.Embedding(vocabulary, EMBEDDING, padding_idx=PAD)
        self.gru = nn.GRU(EMBEDDING, hidden, batch_first=True)

    def forward(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        states, _ = self.gru(self.embedding(src))  # (batch, n_src, hidden)
        # Padding comes after the words, so a one-way GRU's state at a sentence's last token (its EOS) has seen
        # the whole sentence and no padding; the states after it are never read.
        last = (src != PAD).sum(dim=1) - 1  # (batch,)
        final = states[torch.arange(src.shape[0]), last]  # (batch, hidden)
        return states, final


class AdditiveAttention(nn.Module):
    """Bahdanau attention: score(s, h_j) = vᵀ tanh(W s + U h_j), softmax over the source's real positions."""

    def __init__(self, hidden: int):
        super().__init__()
        self.W = nn.Linear(hidden, hidden, bias=False)
        self.U = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def keys(self, states: torch.Tensor) -> torch.Tensor:
        """U h_j does not depend on the decoder, so it is computed once per sentence, not once per word."""
        return self.U(states)  # (batch, n_src, hidden)

    def forward(self, s, states, keys, padding) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.v(torch.tanh(self.W(s).unsqueeze(1) + keys)).squeeze(-1)  # (batch, n_src)
        weights = torch.softmax(scores.masked_fill(padding, float("-inf")), dim=-1)
        context = (weights.unsqueeze(-1) * states).sum(dim=1)  # (batch, hidden)
        return context, weights


class Seq2Seq(nn.Module):
    """A GRU encoder-decoder. At each step the decoder GRU gets the previous word and a context vector, and the
    output layer reads the new state and that context. Without attention the context is the encoder's final
    state at every step (Cho et al. 2014); with attention it is recomputed from the previous decoder state."""

    def __init__(self, source: int, target: int, hidden: int, attention: bool):
        super().__init__()
        self.encoder = Encoder(source, hidden)
        self.embedding = nn.Embedding(target, EMBEDDING, padding_idx=PAD)
        self.gru = nn.GRU(EMBEDDING + hidden, hidden, batch_first=True)
        self.output = nn.Linear(2 * hidden, target)
        self.attention = AdditiveAttention(hidden) if attention else None

    def encode(self, src: torch.Tensor) -> dict:
        states, final = self.encoder(src)
        memory = {"states": states, "final": final, "padding": src == PAD}
        if self.attention is not None:
            memory["keys"] = self.attention.keys(states)
        return memory

    def step(self, word: torch.Tensor, s: torch.Tensor, memory: dict) -> tuple[torch.Tensor, torch.Tensor]:
        """One decoder step: the previous word's ids (batch,) and state s (batch, hidden) to logits and new s."""
        if self.attention is None:
            context = memory["final"]
        else:
            context, _ = self.attention(s, memory["states"], memory["keys"], memory["padding"])
        inputs = torch.cat([self.embedding(word), context], dim=-1).unsqueeze(1)  # (batch, 1, emb + hidden)
        _, s = self.gru(inputs, s.unsqueeze(0))
        s = s.squeeze(0)
        return self.output(torch.cat([s, context], dim=-1)), s

    def forward(self, src: torch.Tensor, decoder_input: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: logits (batch, n_tgt, target vocabulary) for the target shifted right."""
        memory = self.encode(src)
        if self.attention is None:
            return self.fixed_context_forward(decoder_input, memory)
        s, logits = memory["final"], []
        for t in range(decoder_input.shape[1]):  # the context depends on the previous state: one word at a time
            step_logits, s = self.step(decoder_input[:, t], s, memory)
            logits.append(step_logits)
        return torch.stack(logits, dim=1)

    def fixed_context_forward(self, decoder_input: torch.Tensor, memory: dict) -> torch.Tensor:
        """Model A's teacher-forced decoder in one GRU call: the context does not change from step to step,
        so the whole sequence can be fed at once. The same arithmetic as calling step() word by word, faster."""
        n = decoder_input.shape[1]
        context = memory["final"].unsqueeze(1).expand(-1, n, -1)  # (batch, n_tgt, hidden)
        inputs = torch.cat([self.embedding(decoder_input), context], dim=-1)
        states, _ = self.gru(inputs, memory["final"].unsqueeze(0).contiguous())
        return self.output(torch.cat([states, context], dim=-1))

    @torch.no_grad()
    def greedy(self, src: torch.Tensor, max_length: int = MAX_WORDS + 1) -> torch.Tensor:
        """The most likely word at each step, for a batch, until every sentence has its EOS or max_length."""
        memory = self.encode(src)
        s = memory["final"]
        word = torch.full((src.shape[0],), BOS, dtype=torch.int64)
        finished = torch.zeros(src.shape[0], dtype=torch.bool)
        words = []
        for _ in range(max_length):
            logits, s = self.step(word, s, memory)
            word = logits.argmax(dim=-1).masked_fill(finished, PAD)  # after EOS: padding, which decode skips
            words.append(word)
            finished |= word == EOS
            if finished.all():
                break
        return torch.stack(words, dim=1)  # (batch, ≤ max_length)


def loss_of_batch(model: Seq2Seq, src: torch.Tensor, tgt: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of predicting each target word from the words before it; padding is not scored."""
    decoder_input = torch.cat([torch.full_like(tgt[:, :1], BOS), tgt[:, :-1]], dim=1)  # shifted right
    logits = model(src, decoder_input)
    return F.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD)


def translations(model: Seq2Seq, pairs, source: Vocabulary, target: Vocabulary) -> list[list[str]]:
    """Greedy translations of the pairs' English sentences."""
    model.eval()
    predictions = translate_all(model.greedy, [p.english for p in pairs], source, target)
    model.train()
    return predictions


def train(name: str, model: Seq2Seq, data, source, target, steps: int, seed: int) -> dict:
    """Adam, clipping at 1.0, validation every EVALUATE_EVERY steps; returns the best checkpoint's record."""
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    stream = endless_batches(data.train, source, target, batch_size=BATCH_SIZE, seed=seed)
    best = {"valid": -1.0}
    training_seconds = 0.0
    for step in range(1, steps + 1):
        started = time.perf_counter()
        loss = loss_of_batch(model, *next(stream))
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        training_seconds += time.perf_counter() - started
        if step % EVALUATE_EVERY == 0 or step == steps:
            valid = exact_match(translations(model, data.valid, source, target), [p.german for p in data.valid])
            print(f"  {name}: step {step:5d}, {training_seconds:6.1f} s, loss {loss.item():.3f}, "
                  f"valid exact match {100 * valid:5.1f}%", flush=True)  # fmt: skip
            if valid > best["valid"]:  # accuracy is not monotone between checkpoints: keep the best
                best = {"valid": valid, "step": step, "state": copy.deepcopy(model.state_dict())}
    model.load_state_dict(best.pop("state"))
    return best | {"training_seconds": training_seconds, "steps_per_second": steps / training_seconds}


def by_length(predictions: list[list[str]], pairs) -> tuple[list[int], list[float]]:
    """Test sentences and exact match in each bucket of English sentence length."""
    counts, matches = [], []
    for low, high in BUCKETS:
        inside = [index for index, pair in enumerate(pairs) if low <= len(pair.english) <= high]
        counts.append(len(inside))
        matches.append(exact_match([predictions[i] for i in inside], [pairs[i].german for i in inside]))
    return counts, matches


def markdown_table(results: dict) -> str:
    models = results["models"]
    lines = ["| English words | test sentences | " + " | ".join(models) + " |"]
    lines.append("|---|---|" + "---|" * len(models))
    for index, bucket in enumerate(results["buckets"]):
        cells = [f"{100 * model['exact_match_by_bucket'][index]:.1f}%" for model in models.values()]
        lines.append(f"| {bucket[0]}–{bucket[1]} | {results['counts'][index]} | " + " | ".join(cells) + " |")
    cells = [f"**{100 * model['exact_match']:.1f}%**" for model in models.values()]
    lines.append(f"| all | {sum(results['counts'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4000, help="training steps of each model")
    parser.add_argument("--hidden", type=int, default=128, help="GRU state size, the bottleneck's width")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and the batch order")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="where to write the JSON results")
    arguments = parser.parse_args()
    torch.set_num_threads(1)  # the measurement is for one core, and one thread repeats exactly
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), hidden {arguments.hidden}, "
          f"{arguments.steps} steps, seed {arguments.seed}")  # fmt: skip
    data = splits()
    assert max(len(p.english) for p in data.test) <= BUCKETS[-1][1] == MAX_WORDS
    source, target = Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])
    results = {
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "hidden": arguments.hidden,
        "embedding": EMBEDDING,
        "batch_size": BATCH_SIZE,
        "learning_rate": LEARNING_RATE,
        "steps": arguments.steps,
        "seed": arguments.seed,
        "buckets": [list(bucket) for bucket in BUCKETS],
        "counts": None,
        "models": {},
    }
    started = time.perf_counter()
    for name, attention in (("no attention", False), ("attention", True)):
        torch.manual_seed(arguments.seed)
        model = Seq2Seq(len(source), len(target), arguments.hidden, attention)
        parameters = sum(p.numel() for p in model.parameters())
        print(f"{name}: {parameters:,} parameters")
        record = train(name, model, data, source, target, arguments.steps, arguments.seed)
        predictions = translations(model, data.test, source, target)
        results["counts"], matches = by_length(predictions, data.test)
        results["models"][name] = {
            "parameters": parameters,
            "best_step": record["step"],
            "valid_exact_match": record["valid"],
            "exact_match": exact_match(predictions, [p.german for p in data.test]),
            "exact_match_by_bucket": matches,
            "training_seconds": round(record["training_seconds"], 1),
            "steps_per_second": round(record["steps_per_second"], 2),
        }
    results["seconds"] = round(time.perf_counter() - started, 1)
    print(markdown_table(results))
    for name, model in results["models"].items():
        print(f"{name}: {model['parameters']:,} parameters, {model['steps_per_second']:.1f} steps/s, "
              f"best validation {100 * model['valid_exact_match']:.1f}% at step {model['best_step']}")  # fmt: skip
    print(f"{results['seconds']:.0f} s in all")
    arguments.output.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {arguments.output}")


if __name__ == "__main__":
    main()
