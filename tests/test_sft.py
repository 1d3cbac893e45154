"SFT as a step of its own (`successful_pairs`, `sft_base`, `pettingllms-nb sft`): a scripted policy, a checkpoint train wrote, an OpenAI-compatible server."
import json, subprocess, sys
from pathlib import Path
import pytest
from pettingllms_nb.cli import main
from pettingllms_nb.core.config import load_config
from pettingllms_nb.core.registry import registry
from pettingllms_nb.models.tiny import load_tiny
from pettingllms_nb.training.trainer import Trainer, successful_pairs, sft_base

TOY = {'env': {'name': 'toy_relay', 'max_turns': 3}, 'base_models': {'p': {'path': 'tiny', 'name': 'm'}},
       'agent_policy_configs': {'agent_configs': {'a': {'name': 'scout', 'policy_name': 'm'},
                                                  'b': {'name': 'runner', 'policy_name': 'm'}}},
       'multi_agent_interaction': {'turn_order': ['scout', 'runner']}}


def test_only_the_solved_episodes_are_kept():
    cfg = load_config(TOY)
    rnd = registry.scripted('toy_relay', 'random')
    pairs, counts = successful_pairs(cfg, rnd, seeds=range(30))
    assert 0 < counts['solved'] < counts['episodes'] == 30 and counts['pairs'] == len(pairs)
    assert len(pairs) % 2 == 0 and len(pairs) >= 2 * counts['solved']   # whole episodes: a scout and a runner step a turn
    oracle = registry.scripted('toy_relay', 'oracle')
    o_pairs, oc = successful_pairs(cfg, oracle, seeds=range(6))
    assert oc == {'episodes': 6, 'solved': 6, 'pairs': 12}
    assert successful_pairs(cfg, oracle, seeds=range(6)) == (o_pairs, oc)   # deterministic


def test_sft_base_learns_the_pairs_and_saves_a_base_that_loads(tmp_path):
    cfg = load_config(TOY)
    pairs, _ = successful_pairs(cfg, registry.scripted('toy_relay', 'oracle'), seeds=range(16))
    path, losses = sft_base(cfg, pairs, tmp_path / 'b', base='tiny', steps=40, lr=3e-3)
    assert losses[-1] < 0.5 * losses[0]
    model, tok = load_tiny(path)
    again, losses2 = sft_base(cfg, pairs, tmp_path / 'c', base=path, steps=5, lr=3e-3)   # a saved base is a base again
    assert losses2[0] < losses[0] and sum(p.numel() for p in model.parameters()) > 0


def test_the_cli_fine_tunes_on_a_scripted_policy_and_refuses_when_nothing_was_solved(tmp_path, capsys):
    assert main(['sft', 'tiny_plan_path', '--policy', 'random', '--seeds', '32', '--steps', '10', '--out', str(tmp_path / 'r')]) == 0
    s = json.loads((tmp_path / 'r' / 'sft.json').read_text())
    assert 0 < s['solved'] < s['episodes'] == 32 and s['steps'] == 10 and (tmp_path / 'r' / 'model' / 'config.json').exists()
    assert 'base_models.policy_0.path=' in capsys.readouterr().out
    assert main(['sft', 'tiny_plan_path', '--policy', str(tmp_path), '--out', str(tmp_path / 'x')]) == 2   # not a checkpoint
    assert 'not a checkpoint' in capsys.readouterr().err
    assert main(['sft', 'tiny_plan_path', '--policy', 'http://127.0.0.1:9/v1', '--out', str(tmp_path / 'x')]) == 2
    assert '--model' in capsys.readouterr().err


def test_a_checkpoint_is_a_policy(tmp_path):
    ov = ['training.warmstart_steps=150', 'training.total_training_steps=1', 'training.train_batch_size=2',
          'training.train_sample_num=2', 'training.val_freq=1', 'training.val_size=2']
    tr = Trainer('tiny_plan_path', ov, out_dir=tmp_path / 'run', progress=False)
    list(tr.fit())
    ckpt = sorted((tmp_path / 'run').rglob('step_*'))[-1]
    out = tmp_path / 'sft'
    assert main(['sft', 'tiny_plan_path', *ov, '--policy', str(ckpt), '--temperature', '0', '--seeds', '32',
                 '--steps', '5', '--out', str(out)]) == 0
    s = json.loads((out / 'sft.json').read_text())
    assert s['solved'] > 0 and s['policy'] == str(ckpt)   # the warm-started, trained model solves some greedily


def test_an_openai_compatible_server_is_a_policy():
    pytest.importorskip('fastapi', reason="the scripted chat server needs the [interop] extra")
    from pettingllms_nb.interop.session import ServedApp
    from pettingllms_nb.interop.verifiers import scripted_chat
    from pettingllms_nb.models.openai import OpenAIPolicy
    cfg = load_config(TOY)
    oracle = registry.scripted('toy_relay', 'oracle')
    with ServedApp(scripted_chat(oracle)) as chat:
        pol = OpenAIPolicy(base_url=chat.url + '/v1', models={'scout': 'scout', 'runner': 'runner'}, logprobs=False)
        pairs, counts = successful_pairs(cfg, pol, seeds=range(6))
    assert counts == {'episodes': 6, 'solved': 6, 'pairs': 12}
    assert [c for _, c in pairs] == [c for _, c in successful_pairs(cfg, oracle, seeds=range(6))[0]]
