"The CPU-testable parts of scripts/gpu-check.sh: arguments, the model and trainer configs it builds, the refusal without a GPU, the JSON report."
import importlib.util, json, subprocess, sys
from pathlib import Path
import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location('gpu_check', ROOT / 'scripts' / 'gpu_check.py')
gc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gc)
needs_torch = pytest.mark.skipif(importlib.util.find_spec('torch') is None, reason='needs the [train] extra')


def test_arguments_defaults_and_errors(capsys):
    a = gc.parse_args([])
    assert a.sections == list(gc.SECTIONS) and a.out == 'gpu-check.json' and a.max_seconds == 540.0
    assert gc.parse_args(['--sections', 'vllm, parity']).sections == ['vllm', 'parity']
    with pytest.raises(SystemExit): gc.parse_args(['--sections', 'vlm'])
    assert "did you mean ['vllm']" in capsys.readouterr().err
    with pytest.raises(SystemExit): gc.parse_args(['--max-seconds', '0'])
    assert '--max-seconds=0.0' in capsys.readouterr().err


@needs_torch
def test_model_is_qwen3_0_6b_sized_and_every_id_decodes():
    tok = gc.big_tokenizer()
    cfg = gc.qwen3_config(tok)
    assert len(tok) == cfg.vocab_size == 151936 and cfg.num_hidden_layers == 28 and cfg.head_dim == 128
    n = gc.count_params(cfg)
    assert 5.5e8 < n < 6.5e8, n                                     # Qwen3-0.6B: 0.6 billion with tied embeddings
    assert tok.decode([cfg.vocab_size - 1]) == f"<x{cfg.vocab_size - 1}>"   # sampled ids past the characters decode
    from pettingllms_nb.models.tiny import chat_ids
    ids = chat_ids(tok, 'hi')
    assert max(ids) < cfg.vocab_size and cfg.eos_token_id == tok.eos_token_id
    assert gc.qwen3_config(layers=2).num_hidden_layers == 2


def test_trainer_config_is_valid_on_the_built_model(tmp_path):
    from pettingllms_nb.core.config import load_config
    cfg = load_config(gc.TRAINER_PRESET, gc.trainer_overrides(tmp_path / 'base', tmp_path / 'run'))
    assert cfg.base_models.policy_0.path == str(tmp_path / 'base') and cfg.specialization == 'lora'
    assert cfg.training.device == 'cuda' and cfg.training.total_training_steps == 2 and cfg.training.val_freq == 0


def test_report_is_written_atomically(tmp_path):
    report = {'sections': {'build': {'ok': True, 'params': 3}}, 'p': Path('x')}
    out = gc.write_report(tmp_path / 'sub' / 'r.json', report)
    assert json.loads(out.read_text()) == {'sections': {'build': {'ok': True, 'params': 3}}, 'p': 'x'}
    assert not list(out.parent.glob('*.tmp'))


def test_sections_fail_alone_and_the_budget_skips(tmp_path, monkeypatch):
    calls = []
    def ok(ctx):
        calls.append('build')
        return {'params': 1}
    def boom(ctx):
        calls.append('vllm')
        raise RuntimeError('no vllm here')
    monkeypatch.setattr(gc, 'RUNNERS', {**gc.RUNNERS, 'build': ok, 'vllm': boom, 'parity': ok})
    args = gc.parse_args(['--out', str(tmp_path / 'r.json'), '--sections', 'vllm,parity', '--workdir', str(tmp_path)])
    rep = gc.run(args, {'name': 'test'})
    assert list(rep['sections']) == ['build', 'vllm', 'parity'] and calls == ['build', 'vllm', 'build']
    assert rep['sections']['vllm'] == {**rep['sections']['vllm'], 'ok': False, 'error': 'RuntimeError: no vllm here'}
    assert rep['ok'] is False and json.loads((tmp_path / 'r.json').read_text())['partial'] is True
    args.max_seconds = 1e-9
    assert gc.run(args, {})['sections']['vllm']['skipped'].startswith('time budget')


@pytest.mark.skipif(importlib.util.find_spec('torch') is not None and __import__('torch').cuda.is_available(),
                    reason='a GPU is visible: the refusal cannot be checked here')
def test_refuses_clearly_without_a_gpu(tmp_path):
    out = tmp_path / 'r.json'
    p = subprocess.run(['bash', str(ROOT / 'scripts' / 'gpu-check.sh'), '--out', str(out)], capture_output=True,
                       text=True, env={'PATH': '/usr/bin:/bin', 'PYTHON': sys.executable}, timeout=300)
    assert p.returncode == 2, p.stderr
    assert 'no CUDA GPU is visible' in p.stderr and 'Nothing was run' in p.stderr
    assert json.loads(out.read_text())['refused'].startswith('gpu-check: no CUDA GPU')


def test_the_envs_section_covers_every_demo_game_with_valid_overrides(tmp_path):
    "Every demo game's two-agent preset accepts the one-step CUDA overrides (checked on the CPU: the config only)."
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.demo import DEMO_GAMES
    assert 'envs' in gc.SECTIONS and gc.RUNNERS['envs'] is gc.envs
    for g in DEMO_GAMES.values():
        cfg = load_config(g['pair'], gc.env_overrides(tmp_path))
        assert cfg.training.device == 'cuda' and cfg.training.total_training_steps == 1
