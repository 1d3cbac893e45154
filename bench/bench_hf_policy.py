"""HFPolicy throughput: batched sampling against one prompt at a time, on the tiny local model.

The same prompts and the same total number of samples, two ways:
  batched   one `generate` call: every prompt × n samples, left-padded into batches of --max-batch-size rows
  single    one `generate` call per sample (a Request with n=1): what a naive policy does
Both sample at temperature 1 with the same max_tokens; rollouts/s counts completions, tokens/s generated tokens
(a completion may stop early at <|im_end|>). Printed side by side from one run; the ratio is what to quote.

    python bench/bench_hf_policy.py [--prompts 8] [--n 8] [--max-tokens 16] [--repeat 3] [--threads 1] [--device cpu]
"""
import argparse, os, tempfile, time
os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
from _load import load
from pettingllms_nb.engine.policies import Request
from pettingllms_nb.models.tiny import build_tiny
from pettingllms_nb.models.hf import HFPolicy

TOPICS = ["up", "the goal", "a wall at (1, 2)", "row 0 of the grid", "the next move", "the Sudoku clue in the corner",
          "where the box must go", "a path around the walls"]


def prompts(k):
    "Prompts of different lengths, shaped like the games' (so padding matters)."
    return [f"Grid (row 0 is the top):\n{'.' * (3 + i % 4)}\n#.G\nQuestion {i}: what about {TOPICS[i % len(TOPICS)]}? "
            f"Answer #### [\"U\"]" for i in range(k)]


def batched(pol, texts, n, sampling):
    outs = pol.generate([Request("plan_agent", t, n=n, sampling=sampling) for t in texts])
    return [c for o in outs for c in o]


def single(pol, texts, n, sampling):
    return [pol.generate([Request("plan_agent", t, n=1, sampling=sampling)])[0][0] for t in texts for _ in range(n)]


def timed(fn, *a, repeat=3):
    "Best of `repeat` runs: (completions, tokens, seconds)."
    best = None
    for _ in range(repeat):
        t0 = time.perf_counter(); comps = fn(*a); dt = time.perf_counter() - t0
        if best is None or dt < best[2]: best = (len(comps), sum(len(c.token_ids) for c in comps), dt)
    return best


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", type=int, default=8); ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=16); ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--max-batch-size", type=int, default=64); ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="auto"); ap.add_argument("--hidden-size", type=int, default=64)
    ap.add_argument("--head-dim", type=int, default=16)
    a = ap.parse_args()
    print(f"bench_hf_policy: load average at start {load()}")
    if a.threads: torch.set_num_threads(a.threads)
    path = build_tiny(tempfile.mkdtemp() + "/tiny", seed=0, hidden_size=a.hidden_size, head_dim=a.head_dim)
    pol = HFPolicy(path, device=a.device, max_batch_size=a.max_batch_size)
    texts, sampling = prompts(a.prompts), {"temperature": 1.0, "max_tokens": a.max_tokens}
    batched(pol, texts[:2], 2, sampling); single(pol, texts[:2], 1, sampling)         # warm-up
    rows = [(name, *timed(fn, pol, texts, a.n, sampling, repeat=a.repeat)) for name, fn in (("batched", batched), ("single", single))]
    print(f"{pol}\n{a.prompts} prompts × {a.n} samples, max_tokens {a.max_tokens}, max_batch_size {a.max_batch_size}, "
          f"torch threads {torch.get_num_threads()}\n")
    print(f"{'method':<8} {'rollouts':>8} {'tokens':>7} {'seconds':>8} {'rollouts/s':>11} {'tokens/s':>9}")
    for name, n, tok, dt in rows: print(f"{name:<8} {n:>8} {tok:>7} {dt:>8.3f} {n / dt:>11.1f} {tok / dt:>9.0f}")
    (_, nb, tb, db), (_, ns, ts, ds) = rows
    print(f"\nbatched / single = {(nb / db) / (ns / ds):.1f}x rollouts/s, {(tb / db) / (ts / ds):.1f}x tokens/s")
    print(f"bench_hf_policy: load average at end {load()}")
