"""Measure whether notebook 08's post-LN Transformer needs the learning-rate warm-up: train it with and without
the ramp, at two depths and three peak learning rates, and compare loss, divergence and validation exact match.

Notebook 08's schedule rises linearly to its peak over 400 steps, then decays as 1/sqrt(step). "Without warm-up"
keeps that decay and removes the ramp: peak · min(1, sqrt(400 / step)), the notebook's own schedule evaluated at
max(step, 400). Everything else is notebook 08's: reference.Transformer (post-LN, d_model 64, 4 heads, d_ff 256),
the training loop of transformer_course.training (Adam β = 0.9, 0.98, clipping at 1.0), batches of 64, and the
solution notebook's learning_rate, loss_of_batch (label smoothing 0.1) and greedy_decode. At one depth every run
starts from the same weights and sees the same batches, so two rows differ only in their schedule.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/warmup.py [--steps N] [--layers 2 6] [--peaks 1e-3 3e-3 1e-2]
        [--norms post pre] [--seed 0] [--quick]

Without --steps, 2-layer models train 1000 steps and 6-layer models 600: about 10 minutes on one idle core for
the 12 runs. --norms post pre adds pre-LN models (reference.Transformer(norm_first=True)) as a control, another 10
minutes. The runs are deterministic: the same seed prints the same table. A benchmark, not a test.
"""

import argparse
import contextlib
import io
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.translation_training import notebook_functions
from transformer_course import reference
from transformer_course.data.translation import MAX_WORDS, Vocabulary, endless_batches, splits
from transformer_course.evaluation import exact_match, translate_all
from transformer_course.training import train

CONFIGURATION = {"d_model": 64, "num_heads": 4, "d_ff": 256}  # notebook 08's, without the depth
WARMUP_STEPS = 400
DEFAULT_STEPS = {2: 1000, 6: 600}  # past the 400-step ramp, and about 10 minutes in all on one core
LAST = 50  # the final loss is the mean over this many last steps


@dataclass
class Run:
    norm: str
    layers: int
    peak: float
    warmup: bool
    start_loss: float
    losses: list[float]
    exact_match: float
    seconds: float

    @property
    def final_loss(self) -> float:
        return sum(self.losses[-LAST:]) / len(self.losses[-LAST:])

    @property
    def worst_rise(self) -> float:
        """How far the loss, averaged over 50 steps, ever rose above its lowest earlier average: a blow-up shows
        here even when the run recovers, while a steady descent gives about 0."""
        smoothed = torch.tensor(self.losses).unfold(0, LAST, 1).mean(dim=1)  # (steps - LAST + 1,)
        if len(smoothed) == 0:
            return math.nan
        return (smoothed - smoothed.cummin(dim=0).values).max().item()

    @property
    def diverged(self) -> str:
        """'nan@k' if the loss became nan or inf at step k, 'yes' if it ended no lower than it started."""
        for step, loss in enumerate(self.losses, start=1):
            if not math.isfinite(loss):
                return f"nan@{step}"
        return "yes" if self.final_loss >= self.start_loss else "no"


def schedule(learner: dict, peak: float, warmup: bool):
    """The notebook's learning rate at each step, or the same curve with the ramp replaced by the peak."""
    if warmup:
        return lambda step: learner["learning_rate"](step, peak, WARMUP_STEPS)
    return lambda step: learner["learning_rate"](max(step, WARMUP_STEPS), peak, WARMUP_STEPS)


def untrained_loss(learner: dict, model, batches, count: int = 10) -> float:
    """The starting value: the initial model's mean loss on the first batches of its run (one batch is noisy)."""
    with torch.no_grad():
        return sum(learner["loss_of_batch"](model, *next(batches)).item() for _ in range(count)) / count


def train_once(learner: dict, data, source, target, norm: str, layers: int, peak: float, warmup: bool,
               steps: int, valid, seed: int) -> Run:  # fmt: skip
    started = time.perf_counter()
    torch.manual_seed(seed)
    model = reference.Transformer(len(source), len(target), **CONFIGURATION, num_layers=layers,
                                  norm_first=norm == "pre")  # fmt: skip
    start_loss = untrained_loss(learner, model, endless_batches(data.train, source, target, batch_size=64, seed=seed))
    batches = endless_batches(data.train, source, target, batch_size=64, seed=seed)
    with contextlib.redirect_stdout(io.StringIO()):  # train's progress bar would fill the log
        history = train(model, batches, learner["loss_of_batch"], schedule(learner, peak, warmup), steps)
    english, german = [pair.english for pair in valid], [pair.german for pair in valid]
    decode = lambda src: learner["greedy_decode"](model, src, MAX_WORDS + 1)  # noqa: E731
    score = exact_match(translate_all(decode, english, source, target), german)
    return Run(norm, layers, peak, warmup, start_loss, history.losses, score, time.perf_counter() - started)


LEGEND = f"""start loss: the untrained model's on the first 10 batches; final loss: the mean over the last {LAST} steps;
worst rise: the most the {LAST}-step mean loss ever rose above its lowest earlier value (0 for a steady descent);
diverged: nan@k if the loss was nan or inf at step k, yes if the final loss is not below the start loss, else no"""
HEADER = (f"{'norm':>4} {'layers':>6} {'steps':>5} {'peak lr':>7} {'warm-up':>7} {'start loss':>10} {'final loss':>10} "
          f"{'worst rise':>10} {'diverged':>8} {'exact match':>11} {'seconds':>7}")  # fmt: skip


def row(run: Run) -> str:
    return (f"{run.norm:>4} {run.layers:6d} {len(run.losses):5d} {run.peak:7.0e} {'yes' if run.warmup else 'no':>7} "
            f"{run.start_loss:10.3f} {run.final_loss:10.3f} {run.worst_rise:10.3f} {run.diverged:>8} "
            f"{100 * run.exact_match:10.1f}% {run.seconds:7.0f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, help="training steps of every run (default: 1000 for 2 layers, 600 for 6)")
    parser.add_argument("--layers", type=int, nargs="+", default=[2, 6], help="encoder and decoder layers each")
    parser.add_argument("--peaks", type=float, nargs="+", default=[1e-3, 3e-3, 1e-2], help="peak learning rates")
    parser.add_argument("--norms", nargs="+", choices=["post", "pre"], default=["post"], help="pre adds pre-LN")
    parser.add_argument("--valid", type=int, default=500, help="validation sentences scored (the first ones)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial weights and of the batch order")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 20 steps, 50 validation sentences")
    arguments = parser.parse_args()
    if arguments.quick:
        arguments.steps, arguments.valid = 20, 50
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, seed {arguments.seed}; greedy exact match "
          f"on the first {arguments.valid} validation sentences")  # fmt: skip
    print(LEGEND)
    learner = notebook_functions()
    data = splits()
    source, target = Vocabulary([p.english for p in data.train]), Vocabulary([p.german for p in data.train])
    valid = data.valid[: arguments.valid]
    print(HEADER, flush=True)
    started = time.perf_counter()
    for norm in arguments.norms:
        for layers in arguments.layers:
            steps = arguments.steps or DEFAULT_STEPS.get(layers, 600)
            for peak in arguments.peaks:
                for warmup in (True, False):
                    run = train_once(learner, data, source, target, norm, layers, peak, warmup, steps, valid,
                                     arguments.seed)  # fmt: skip
                    print(row(run), flush=True)
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
