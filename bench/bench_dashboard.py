"""TrainingDashboard overhead: `Trainer.fit` steps/s on the tiny preset with and without the dashboard callback.

Two fresh trainers with the same seed and config (tiny_plan_path_single: 6 steps, batch 4, warm start 40, no
validation), after a one-step warm-up; one runs `fit()`, the other `fit(callback=TrainingDashboard(every=1))` (a redraw every step: the worst
case). Prints both rates, their ratio, and the time spent inside the callback itself (the precise number: the
ratio also carries run-to-run noise).

    python bench/bench_dashboard.py [--steps 6] [--every 1]
"""
import argparse, os, tempfile, time
os.environ.setdefault('HF_HUB_OFFLINE', '1')
import torch
from _load import load_report
from pettingllms_nb.training.trainer import Trainer
from pettingllms_nb.widgets.stepthrough import TrainingDashboard


def run(steps:int, dash=None) -> float:
    ov = [f'training.total_training_steps={steps}', 'training.train_batch_size=4', 'training.warmstart_steps=40',
          'training.val_freq=0', 'training.save_freq=0', 'training.lr_schedule=constant']
    with tempfile.TemporaryDirectory() as d:
        tr = Trainer('tiny_plan_path_single', ov, out_dir=d, progress=False)
        t0 = time.perf_counter(); tr.fit(callback=dash); return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(); ap.add_argument('--steps', type=int, default=6); ap.add_argument('--every', type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(1)
    dash, spent = TrainingDashboard(every=a.every), [0.0]
    def timed(trainer, m):
        t0 = time.perf_counter(); dash(trainer, m); spent[0] += time.perf_counter() - t0
    run(1)   # warm-up: the first trainer pays one-off costs (imports, sandbox start) that would bias the first timing
    plain = run(a.steps)
    with_dash = run(a.steps, timed)
    print(f"Trainer.fit on tiny_plan_path_single, {a.steps} steps, batch 4:")
    print(f"  without dashboard: {a.steps / plain:.2f} steps/s ({plain:.2f} s)")
    print(f"  with dashboard   : {a.steps / with_dash:.2f} steps/s ({with_dash:.2f} s), {dash.draws} redraws")
    print(f"  ratio (with / without, steps/s) = {plain / with_dash:.3f}")
    print(f"  time inside the dashboard callback: {spent[0] * 1e3:.2f} ms total, {spent[0] * 1e3 / a.steps:.2f} ms/step "
          f"({100 * spent[0] / with_dash:.3f}% of the run)")


if __name__ == '__main__':
    with load_report('bench_dashboard'): main()
