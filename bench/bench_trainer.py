"""Training throughput: one AT-GRPO update batched in micro-batches against one sequence at a time, side by side.

Collects one real rollout of the tiny two-agent Plan-Path preset, computes AT-GRPO advantages, then times the
trainer's update of the shared unit on exactly those steps with `micro_batch_size` = 64 and = 1 (the same
sequences, the same loss), and a whole `train_step` (rollout + update). Prints updates/s and the ratio.

    python bench/bench_trainer.py [--repeat 3]
"""
import argparse, os, tempfile, time
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import torch
from pettingllms_nb.training.trainer import Trainer
from pettingllms_nb.training.advantages import at_grpo


def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--repeat', type=int, default=3); ap.add_argument('--threads', type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ov = ['training.total_training_steps=100', 'training.val_freq=0', 'training.warmstart_steps=100', 'training.lr_schedule=constant']
    with tempfile.TemporaryDirectory() as d:
        tr = Trainer('tiny_plan_path', ov, out_dir=d, progress=False)
        trace = tr.collect()
        advs = at_grpo(trace.steps)
        unit = tr.units[0]
        rows = {}
        for mbs in (64, 1):
            best = None
            for _ in range(a.repeat):
                t0 = time.perf_counter()
                _update(tr, unit, trace, advs, mbs)
                dt = time.perf_counter() - t0
                best = dt if best is None else min(best, dt)
            rows[mbs] = best
        t0 = time.perf_counter(); tr.train_step(); full = time.perf_counter() - t0
    n = len(trace.steps)
    print(f"one update of the shared unit on {n} sequences ({sum(len(s.token_ids) for s in trace.steps)} tokens):")
    print(f"  micro-batches of 64 : {rows[64]:.3f} s  ({1 / rows[64]:.2f} updates/s)")
    print(f"  one sequence a time : {rows[1]:.3f} s  ({1 / rows[1]:.2f} updates/s)")
    print(f"  ratio (batched / one at a time) = {rows[1] / rows[64]:.1f}x faster")
    print(f"a whole train_step (rollout with sandboxed tool programs + update): {full:.2f} s ({1 / full:.2f} steps/s)")


def _update(tr, unit, trace, advs, mbs):
    from pettingllms_nb.core.config import load_config
    cfg = tr.cfg
    tr.cfg = load_config(cfg, [f'training.micro_batch_size={mbs}'])
    try: tr._unit_update(unit, trace.steps, list(advs))
    finally: tr.cfg = cfg


if __name__ == '__main__':
    main()
