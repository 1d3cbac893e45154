"""Training throughput: one AT-GRPO update batched in micro-batches against one sequence at a time, side by side.

Collects one real rollout of the tiny two-agent Plan-Path preset, computes AT-GRPO advantages, then times the
trainer's update of the shared unit on exactly those steps with `micro_batch_size` = 64 and = 1 (the same
sequences, the same loss), and a whole `train_step` (rollout + update). Prints updates/s and the ratio, in CPU time
of this process (what a loaded machine disturbs least; torch runs on `--threads` threads) and in wall time. The two
sizes take turns over the repeats and the best of each is kept. `--profile` adds where one batched update's time
goes (cProfile, by function).

    python bench/bench_trainer.py [--repeat 3] [--threads 1] [--profile]
"""
import argparse, cProfile, io, os, pstats, tempfile, time
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import torch
from _load import load_report
from pettingllms_nb.core.config import load_config
from pettingllms_nb.training.trainer import Trainer
from pettingllms_nb.training.advantages import at_grpo


def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--repeat', type=int, default=3); ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--profile', action='store_true')
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    ov = ['training.total_training_steps=100', 'training.val_freq=0', 'training.warmstart_steps=100', 'training.lr_schedule=constant']
    with load_report('bench_trainer'), tempfile.TemporaryDirectory() as d:
        tr = Trainer('tiny_plan_path', ov, out_dir=d, progress=False)
        trace = tr.collect()
        advs = at_grpo(trace.steps)
        unit = tr.units[0]
        cfgs = {mbs: load_config(tr.cfg, [f'training.micro_batch_size={mbs}']) for mbs in (64, 1)}
        cpu, wall = {}, {}
        for _ in range(a.repeat):
            for mbs in (64, 1):
                c0, w0 = time.process_time(), time.perf_counter()
                _update(tr, unit, trace, advs, cfgs[mbs])
                c, w = time.process_time() - c0, time.perf_counter() - w0
                cpu[mbs], wall[mbs] = min(cpu.get(mbs, c), c), min(wall.get(mbs, w), w)
        prof = _profile(tr, unit, trace, advs, cfgs[64]) if a.profile else None
        t0 = time.perf_counter(); tr.train_step(); full = time.perf_counter() - t0
        n = len(trace.steps)
        print(f"one update of the shared unit on {n} sequences ({sum(len(s.token_ids) for s in trace.steps)} tokens), "
              f"torch threads {a.threads}:")
        for mbs, name in ((64, 'micro-batches of 64'), (1, 'one sequence a time')):
            print(f"  {name} : {cpu[mbs]:.3f} CPU s, {wall[mbs]:.3f} wall s  ({1 / cpu[mbs]:.2f} updates/CPU s)")
        print(f"  ratio (batched / one at a time) = {cpu[1] / cpu[64]:.1f}x in CPU time, {wall[1] / wall[64]:.1f}x in wall time")
        print(f"a whole train_step (rollout with sandboxed tool programs + update): {full:.2f} s ({1 / full:.2f} steps/s)")
        if prof: print(prof)


def _update(tr, unit, trace, advs, cfg):
    "The trainer's update of `unit` under `cfg` (the trainer's config with another `micro_batch_size`)."
    old, tr.cfg = tr.cfg, cfg
    try: tr._unit_update(unit, trace.steps, list(advs))
    finally: tr.cfg = old


def _profile(tr, unit, trace, advs, cfg, top=18) -> str:
    "Where one batched update's time goes: cProfile's functions by internal time."
    p = cProfile.Profile(); p.enable(); _update(tr, unit, trace, advs, cfg); p.disable()
    out = io.StringIO(); pstats.Stats(p, stream=out).sort_stats('tottime').print_stats(top)
    return "where one batched update's time goes (cProfile, internal time):\n" + out.getvalue().split('\n', 6)[-1]


if __name__ == '__main__':
    main()
