"""One GPU, under ten minutes, no hub: vLLM with two LoRA adapters against one base (tokens/s and their ratio), an
HF+PEFT training step per adapter, the vLLM/HF adapter parity check, and a short Trainer run, on a model built
locally at realistic size from Qwen3-0.6B's config (random weights); then one training step of every environment's
tiny preset on CUDA (and a vLLM rollout of it where vLLM is installed). Writes its figures to a JSON file.

Run it as `bash scripts/gpu-check.sh [--out FILE] [--sections a,b] [--max-seconds N]`; it refuses when no CUDA GPU
is visible. A section that fails records its error and the others still run."""
from __future__ import annotations
import argparse, difflib, json, os, platform, sys, tempfile, time, traceback
from pathlib import Path

SECTIONS = ('build', 'train_step', 'vllm', 'parity', 'trainer', 'envs')
ADAPTERS = ('planner', 'executor')
# Qwen3-0.6B's published architecture (its config.json), so the check runs at the size users train.
QWEN3_0_6B = dict(vocab_size=151936, hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                  num_attention_heads=16, num_key_value_heads=8, head_dim=128, max_position_embeddings=40960,
                  rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, hidden_act='silu')


class Refused(SystemExit):
    "The machine cannot run the check (no GPU); nothing was run."


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog='gpu-check', description=__doc__.split('\n\n')[0])
    p.add_argument('--out', default='gpu-check.json', help='where to write the figures (JSON)')
    p.add_argument('--sections', default=','.join(SECTIONS), help=f"comma-separated subset of {','.join(SECTIONS)}")
    p.add_argument('--workdir', default=None, help='where the model and adapters are built (default: a temp dir)')
    p.add_argument('--max-seconds', type=float, default=540.0, help='skip sections once this budget is spent')
    p.add_argument('--layers', type=int, default=None, help="override num_hidden_layers (default: Qwen3-0.6B's 28)")
    p.add_argument('--prompts', type=int, default=64, help='prompts per vLLM throughput run')
    p.add_argument('--max-tokens', type=int, default=128, help='new tokens per vLLM completion')
    a = p.parse_args(argv)
    a.sections = [s.strip() for s in a.sections.split(',') if s.strip()]
    bad = [s for s in a.sections if s not in SECTIONS]
    if bad:
        hint = {b: difflib.get_close_matches(b, SECTIONS, n=1) for b in bad}
        near = [h[0] for h in hint.values() if h]
        p.error(f"--sections: unknown {bad} (did you mean {near}?); allowed: {list(SECTIONS)}")
    if a.max_seconds <= 0: p.error(f"--max-seconds={a.max_seconds}: expected a number of seconds > 0")
    if a.layers is not None and a.layers < 1: p.error(f"--layers={a.layers}: expected an integer >= 1")
    return a


def qwen3_config(tokenizer=None, layers:int|None=None, **over):
    "A `Qwen3Config` with Qwen3-0.6B's architecture (vocabulary and special ids from `tokenizer` when given)."
    from transformers import Qwen3Config
    kw = {**QWEN3_0_6B, **({'num_hidden_layers': layers} if layers else {}), **over}
    if tokenizer is not None:
        kw.update(vocab_size=len(tokenizer), eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return Qwen3Config(bos_token_id=None, **kw)


def big_tokenizer(vocab_size:int=QWEN3_0_6B['vocab_size']):
    "The project's character tokenizer padded with filler tokens to `vocab_size`, so every sampled id decodes."
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from pettingllms_nb.models.tiny import CHARS, SPECIALS, UNK, _wrap
    vocab = {t: i for i, t in enumerate(SPECIALS + CHARS)}
    vocab.update({f"<x{i}>": i for i in range(len(vocab), vocab_size)})
    tok = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    tok.decoder = decoders.Fuse()
    return _wrap(tok)


def count_params(config) -> int:
    "Parameters of a model of `config`, counted on the meta device (nothing allocated)."
    import torch
    from transformers import AutoModelForCausalLM
    with torch.device('meta'): m = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in m.parameters())


def trainer_overrides(model_path, out_dir) -> list:
    "Overrides of the one-GPU LoRA preset for a two-step Trainer run on the locally built model."
    return [f"base_models.policy_0.path={model_path}", f"training.output_dir={out_dir}",
            'training.total_training_steps=2',
            'training.train_batch_size=4', 'training.train_sample_num=4', 'training.val_freq=0', 'training.save_freq=0',
            'training.max_response_length=32', 'training.micro_batch_size=8', 'training.lr=1.0e-5',
            'training.experiment_name=gpu_check']

TRAINER_PRESET = 'gpu_plan_path_qwen3_1.7b_lora'


def write_report(path, report:dict) -> Path:
    "Write `report` as JSON to `path` atomically (a half-written file never replaces a good one)."
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + '.tmp')
    tmp.write_text(json.dumps(report, indent=2, sort_keys=True, default=str) + '\n')
    os.replace(tmp, path)
    return path


def gpu_or_refuse() -> dict:
    "The GPU's facts, or `Refused` with what is missing."
    try: import torch
    except ImportError:
        raise Refused("gpu-check: torch is not installed (source scripts/venv.sh dev,train); nothing was run") from None
    if not torch.cuda.is_available():
        raise Refused("gpu-check: no CUDA GPU is visible (torch.cuda.is_available() is False; torch "
                      f"{torch.__version__}, CUDA build {torch.version.cuda}); this check needs one GPU. "
                      "Nothing was run.")
    p = torch.cuda.get_device_properties(0)
    return {'name': p.name, 'memory_gib': round(p.total_memory / 2**30, 1), 'count': torch.cuda.device_count(),
            'torch': torch.__version__, 'cuda': torch.version.cuda}


# --- the GPU sections: each returns its figures (a dict); run() times them and records failures ---

def build(ctx):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    tok = big_tokenizer()
    cfg = qwen3_config(tok, ctx['args'].layers)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    base = ctx['work'] / 'base'
    model.save_pretrained(base)
    tok.save_pretrained(base)
    ctx['base'], ctx['adapters'] = base, {}
    for i, name in enumerate(ADAPTERS):   # random A and B: the adapters change the outputs, so parity means something
        torch.manual_seed(100 + i)
        lcfg = LoraConfig(r=16, lora_alpha=32, target_modules='all-linear', init_lora_weights=False)
        peft = get_peft_model(AutoModelForCausalLM.from_pretrained(base, dtype=torch.bfloat16), lcfg, adapter_name=name)
        peft.save_pretrained(ctx['work'] / 'adapters')
        ctx['adapters'][name] = ctx['work'] / 'adapters' / name
    return {'params': sum(p.numel() for p in model.parameters()), 'layers': cfg.num_hidden_layers,
            'vocab': cfg.vocab_size, 'dtype': 'bfloat16', 'adapters': list(ADAPTERS)}


def train_step(ctx):
    import torch
    from pettingllms_nb.models.hf import HFPolicy
    from pettingllms_nb.training.distributed import synthetic_rows, update_unit
    pol = HFPolicy(str(ctx['base']), device='cuda', adapters={n: str(p) for n, p in ctx['adapters'].items()})
    out = {}
    for name in ADAPTERS:
        ps = pol.parameters(name)
        opt = torch.optim.AdamW(ps, lr=1e-5)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        rows = synthetic_rows(pol, name, n=32, prompt_len=(64, 256), completion_len=(64, 256))
        torch.cuda.synchronize()
        t = time.perf_counter()
        m = update_unit(pol, name, ps, opt, sched, rows, micro_batch_size=8)
        torch.cuda.synchronize()
        dt = time.perf_counter() - t
        out[name] = {'seconds': round(dt, 3), 'tokens': m['tokens'], 'tokens_per_s': round(m['tokens'] / dt, 1),
                     'grad_norm': m['grad_norm'], 'pg_loss': m['pg_loss']}
    out['peak_memory_gib'] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    ctx['hf'] = pol
    return out


def _vllm_policy(ctx):
    if 'vllm' not in ctx:
        from pettingllms_nb.models.vllm import VLLMPolicy
        ctx['vllm'] = VLLMPolicy(str(ctx['base']), adapters={n: str(p) for n, p in ctx['adapters'].items()},
                                 max_tokens=ctx['args'].max_tokens, gpu_memory_utilization=0.4, max_model_len=2048)
    return ctx['vllm']


def vllm(ctx):
    from pettingllms_nb.engine.policies import Request
    pol, a = _vllm_policy(ctx), ctx['args']
    samp = {'temperature': 1.0, 'max_tokens': a.max_tokens}
    def run(adapters):
        reqs = [Request(adapters[i % len(adapters)] or 'base', {'text': f"Task {i}: plan the route."}, sampling=samp,
                        adapter=adapters[i % len(adapters)]) for i in range(a.prompts)]
        pol.generate(reqs[:4])   # warm-up
        t = time.perf_counter()
        outs = pol.generate(reqs)
        dt = time.perf_counter() - t
        n = sum(len(c.token_ids) for o in outs for c in o)
        return {'tokens': n, 'seconds': round(dt, 3), 'tokens_per_s': round(n / dt, 1)}
    base, two = run([None]), run(list(ADAPTERS))
    return {'base': base, 'two_adapters': two, 'ratio': round(two['tokens_per_s'] / base['tokens_per_s'], 3),
            'backend': pol.backend}


def parity(ctx):
    if 'hf' not in ctx: train_step(ctx)
    pol = _vllm_policy(ctx)
    out = {}
    for name in ADAPTERS:   # the adapters the HF policy just trained, saved and served as new versions
        d = ctx['work'] / 'trained' / name
        saved = ctx['hf'].save_adapter(name, d)
        pol.sync_adapter(name, saved)
        out[name] = pol.check_parity(ctx['hf'], adapter=name, tol=5e-2, raise_error=False)
    return out


def trainer(ctx):
    from pettingllms_nb.training.trainer import Trainer
    tr = Trainer(TRAINER_PRESET, trainer_overrides(ctx['base'], ctx['work'] / 'run'), progress=False)
    t = time.perf_counter()
    hist = tr.fit()
    dt = time.perf_counter() - t
    last = hist[-1] if hist else {}
    return {'steps': tr.step, 'seconds': round(dt, 2), 'seconds_per_step': round(dt / max(1, tr.step), 2),
            'last': {k: v for k, v in last.items() if isinstance(v, (int, float))}}

def env_overrides(out_dir) -> list:
    "One CUDA training step of a tiny_* preset: a short warm start, two problems, no validation or checkpoint."
    return ['training.device=cuda', 'training.total_training_steps=1', 'training.warmstart_steps=20',
            'training.warmstart_problems=16', 'training.train_batch_size=2', 'training.train_sample_num=2',
            'training.val_freq=0', 'training.save_freq=0', f'training.output_dir={out_dir}']


def envs(ctx):
    "Every demo game's two-agent preset: one AT-GRPO step of the tiny model on CUDA, and a vLLM rollout where installed."
    import importlib.util
    from pettingllms_nb.demo import DEMO_GAMES
    from pettingllms_nb.training.trainer import Trainer
    out, has_vllm = {}, importlib.util.find_spec('vllm') is not None
    for game, g in DEMO_GAMES.items():
        t, res = time.perf_counter(), {}
        try:
            tr = Trainer(g['pair'], env_overrides(ctx['work'] / 'envs' / game), progress=False)
            last = tr.fit()[-1]
            res = {'ok': True, 'train_seconds': round(time.perf_counter() - t, 2),
                   'train_success_rate': last.get('train/success_rate')}
            if has_vllm:
                from pettingllms_nb.engine.rollout import rollout
                from pettingllms_nb.models.vllm import VLLMPolicy
                t1 = time.perf_counter()
                pol = VLLMPolicy(str(tr.out / 'base'), enable_lora=False, max_tokens=32, gpu_memory_utilization=0.2,
                                 max_model_len=1024)
                trace = rollout(tr.cfg, pol, seeds=range(4))
                res.update(vllm_episodes=len(trace.episodes), vllm_seconds=round(time.perf_counter() - t1, 2))
                del pol
        except Exception as e: res = {'ok': False, 'error': f"{type(e).__name__}: {e}"}
        out[game] = res
    bad = [g for g, r in out.items() if not r['ok']]
    if bad: raise RuntimeError(f"envs failed: {bad}: " + '; '.join(out[g]['error'] for g in bad))
    return {'games': out, 'vllm': has_vllm}

RUNNERS = {'build': build, 'train_step': train_step, 'vllm': vllm, 'parity': parity, 'trainer': trainer, 'envs': envs}


def run(args, gpu:dict) -> dict:
    "Run the chosen sections within the time budget; the report."
    t0 = time.perf_counter()
    work = Path(args.workdir or tempfile.mkdtemp(prefix='gpu-check-'))
    ctx = {'args': args, 'work': work}
    report = {'gpu': gpu, 'python': platform.python_version(), 'sections': {}, 'config': dict(QWEN3_0_6B)}
    todo = list(args.sections)
    if 'build' not in todo and todo: todo.insert(0, 'build')   # every other section needs the model
    for name in todo:
        if time.perf_counter() - t0 > args.max_seconds:
            report['sections'][name] = {'ok': False, 'skipped': f"time budget of {args.max_seconds} s spent"}
            continue
        t = time.perf_counter()
        try: res = {'ok': True, **RUNNERS[name](ctx)}
        except Exception as e:
            res = {'ok': False, 'error': f"{type(e).__name__}: {e}", 'traceback': traceback.format_exc()[-2000:]}
        res['section_seconds'] = round(time.perf_counter() - t, 2)
        report['sections'][name] = res
        said = 'ok' if res['ok'] else res.get('error') or res.get('skipped')
        print(f"[gpu-check] {name}: {said} ({res['section_seconds']} s)", file=sys.stderr)
        write_report(args.out, {**report, 'total_seconds': round(time.perf_counter() - t0, 2), 'partial': True})
    report['total_seconds'] = round(time.perf_counter() - t0, 2)
    report['ok'] = all(s.get('ok') for s in report['sections'].values())
    return report


def main(argv=None) -> int:
    args = parse_args(argv)
    try: gpu = gpu_or_refuse()
    except Refused as r:
        print(str(r), file=sys.stderr)
        write_report(args.out, {'refused': str(r), 'ok': False, 'sections': {}})
        return 2
    report = run(args, gpu)
    write_report(args.out, report)
    print(f"[gpu-check] wrote {args.out} ({'ok' if report['ok'] else 'with failures'}, {report['total_seconds']} s)",
          file=sys.stderr)
    return 0 if report['ok'] else 1


if __name__ == '__main__':
    sys.exit(main())
