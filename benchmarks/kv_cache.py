"""Measure what notebook 11 measures, side by side in one process: greedy generation of 256 tokens with and without
the KV cache, and with Hugging Face's own cached generation of the same model; and the peak memory of blockwise
attention against attention written out.

    .venv/bin/python benchmarks/kv_cache.py [--threads 1] [--rounds 5] [--tokens 256]

The model is notebook 11's: notebook 10's size (d_model 96, 4 heads, 3 blocks), a context of 512, untrained. The
cached path is the solution notebook's code (its KVCache, cached_block_forward, cached_logits), the uncached one the
reference GPT run on every position at every step. The two alternate, round after round, from the same prompt; both
must write the same tokens. Hugging Face's is GPT2LMHeadModel built from a config holding the same weights,
``generate(..., do_sample=False, use_cache=True)``, timed as one call in the same rounds; it must write the same
tokens too. The best round of each is reported, with their ratios and the time per token at the first and the last
positions. Memory: the most bytes that the tensors created during one call held at once
(allocations_of), causal, one sentence, 4 heads of 16, no gradients. A benchmark, not a test: the figures quoted in
benchmarks/RESULTS.md come from here.
"""

import argparse
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from autograder.submissions import solved_namespace
from transformer_course.allocations import allocations_of
from transformer_course.checks.nb10 import gpt2_twin
from transformer_course.decoding_time import greedy_step_seconds
from transformer_course.reference import GPT

ASSIGNMENT = "11_fast_inference"


def generation_seconds(notebook: dict, rounds: int, tokens: int) -> None:
    torch.manual_seed(0)
    model = GPT(vocab_size=256, block_size=512, d_model=96, num_heads=4, num_layers=3).eval()
    prompt = torch.randint(256, (1, 16))  # (1, 16)

    def uncached(ids, newest):
        return model(ids)[:, -1]

    twin = gpt2_twin(model)
    best = {"without a cache": [math.inf], "with the KV cache": [math.inf], "Hugging Face's generate": [math.inf]}
    for _ in range(rounds):
        caches = [notebook["KVCache"]() for _ in model.blocks]

        def cached(ids, newest, caches=caches):
            return notebook["cached_logits"](model, newest, caches)[:, -1]

        written = {}
        for name, next_logits in (("without a cache", uncached), ("with the KV cache", cached)):
            written[name], seconds = greedy_step_seconds(next_logits, prompt, tokens)
            best[name] = min(best[name], seconds, key=sum)
        assert torch.equal(*written.values()), "the cached and the uncached model wrote different tokens"
        start = time.perf_counter()
        with torch.no_grad():
            theirs = twin.generate(prompt, max_new_tokens=tokens, do_sample=False, use_cache=True, pad_token_id=0)
        best["Hugging Face's generate"] = min(best["Hugging Face's generate"], [time.perf_counter() - start], key=sum)
        assert torch.equal(theirs, written["with the KV cache"]), "Hugging Face wrote other tokens"
    for name, seconds in best.items():
        if len(seconds) == 1:  # one call: no time per token
            print(f"{name}: {seconds[0]:.3f} s for {tokens} tokens")
            continue
        first, last = (1000 * sum(part) / len(part) for part in (seconds[1:11], seconds[-10:]))
        print(
            f"{name}: {sum(seconds):.3f} s for {tokens} tokens; {first:.2f} ms per token at the start, "
            f"{last:.2f} at the end"
        )
    ratio = sum(best["without a cache"]) / sum(best["with the KV cache"])
    print(f"speed-up: {ratio:.2f}× (best of {rounds} rounds each, {torch.get_num_threads()} thread(s))")
    against = sum(best["Hugging Face's generate"]) / sum(best["with the KV cache"])
    print(f"Hugging Face's cached generation takes {against:.2f}× the notebook's cached generation's time")


def peak_memory(notebook: dict) -> None:
    def written_out(q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (1, heads, n, n)
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril()  # (n, n)
        return torch.softmax(scores.masked_fill(~causal, -math.inf), dim=-1) @ v

    print("n: peak MiB written out / blockwise (block_size 64)")
    for n in (256, 512, 1024, 2048, 4096):
        q, k, v = torch.randn(3, 1, 4, n, 16).unbind()  # (1, heads, n, d_head) each
        with torch.no_grad():
            full = allocations_of(written_out, q, k, v)[1].peak / 2**20
            blocks = allocations_of(notebook["blockwise_attention"], q, k, v, is_causal=True)[1].peak / 2**20
        print(f"{n}: {full:.2f} / {blocks:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="PyTorch threads (the notebook uses 1)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=256)
    arguments = parser.parse_args()
    notebook = solved_namespace(ASSIGNMENT)  # the set-up cell (one thread, as the notebook) and the solutions
    torch.set_num_threads(arguments.threads)  # after the set-up cell, which sets one thread as the notebook does
    generation_seconds(notebook, arguments.rounds, arguments.tokens)
    peak_memory(notebook)


if __name__ == "__main__":
    main()
