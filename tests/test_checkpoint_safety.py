"""Issue 32, point 1: loading a checkpoint must not run code. A crafted pickle (`trainer_state.pkl` of the old format,
or a `weights.pt` / unit state whose pickle calls a function) is refused, and the payload never runs."""
import json, os, pickle
from pathlib import Path
import pytest

torch = pytest.importorskip("torch")
from pettingllms_nb.training.trainer import (Trainer, UnsafeCheckpoint, convert_checkpoint, STATE_FILE, OLD_STATE_FILE,
                                             state_to_json, state_from_json)

SMALL = ['training.total_training_steps=1', 'training.warmstart_steps=0', 'training.val_freq=0',
         'training.train_batch_size=1', 'training.train_sample_num=2', 'training.save_freq=1']


class Payload:
    "Unpickling this writes a file: the proof that loading ran code."
    def __init__(self, marker): self.marker = str(marker)
    def __reduce__(self): return (exec, (f"open({self.marker!r}, 'w').write('ran')",))


@pytest.fixture(scope='module')
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp('run')
    tr = Trainer('tiny_plan_path', SMALL, out_dir=out, progress=False)
    tr.fit()
    return out, tr.ckpt_dir / (tr.ckpt_dir / 'latest').read_text().strip()


def test_a_checkpoint_holds_no_pickle_and_resumes(trained):
    out, ck = trained
    assert (ck / STATE_FILE).exists() and not (ck / OLD_STATE_FILE).exists()
    state = json.loads((ck / STATE_FILE).read_text())
    assert state['step'] == 1 and len(state['torch_rng']) > 100
    again = Trainer('tiny_plan_path', SMALL, out_dir=out, progress=False)
    assert again.load_checkpoint(ck) == ck and again.step == 1
    assert torch.equal(torch.get_rng_state(), state_from_json(state)['torch_rng'])


def test_the_json_state_round_trips_every_random_state():
    import random
    st = {'step': 3, 'history': [{'step': 1, 'val/success_rate': float('nan')}], 'rng': random.Random(5).getstate(),
          'py_rng': random.getstate(), 'torch_rng': torch.get_rng_state(), 'policy_calls': [2]}
    back = state_from_json(json.loads(json.dumps(state_to_json(st))))
    assert back['rng'] == st['rng'] and back['py_rng'] == st['py_rng'] and torch.equal(back['torch_rng'], st['torch_rng'])
    r = random.Random(); r.setstate(back['rng']); assert r.random() == random.Random(5).random()


def test_an_old_pickle_state_is_refused_and_its_payload_never_runs(trained, tmp_path):
    import shutil
    out, ck = trained
    bad = tmp_path / 'step_000001'; shutil.copytree(ck, bad)
    (bad / STATE_FILE).unlink()
    marker = tmp_path / 'ran.txt'
    (bad / OLD_STATE_FILE).write_bytes(pickle.dumps(Payload(marker)))
    tr = Trainer('tiny_plan_path', SMALL, out_dir=tmp_path / 'other', progress=False)
    with pytest.raises(UnsafeCheckpoint, match='convert-checkpoint'): tr.load_checkpoint(bad)
    from pettingllms_nb.cli import main
    import contextlib, io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(['eval', 'tiny_plan_path'] + SMALL + ['--checkpoint', str(bad)])
    assert rc == 2 and 'loading a pickle can run code' in err.getvalue(), err.getvalue()
    assert not marker.exists()


def test_a_weights_file_that_would_run_code_is_refused(trained, tmp_path):
    import shutil
    out, ck = trained
    bad = tmp_path / 'step_000001'; shutil.copytree(ck, bad)
    marker = tmp_path / 'ran.txt'
    unit = next((bad / 'units').iterdir())
    torch.save({'w': Payload(marker)}, unit / 'weights.pt')
    tr = Trainer('tiny_plan_path', SMALL, out_dir=tmp_path / 'other', progress=False)
    with pytest.raises(pickle.UnpicklingError): tr.load_checkpoint(bad)
    assert not marker.exists()


def test_a_unit_state_that_would_run_code_is_refused(tmp_path):
    from pettingllms_nb.training.distributed import load_unit_state
    marker = tmp_path / 'ran.txt'
    torch.save({'params': [Payload(marker)]}, tmp_path / 'unit.pt')
    with pytest.raises(pickle.UnpicklingError): load_unit_state(tmp_path / 'unit.pt', [], None, None)
    assert not marker.exists()


def test_a_trusted_old_checkpoint_converts_on_request(trained, tmp_path):
    import shutil
    out, ck = trained
    old = tmp_path / 'step_000001'; shutil.copytree(ck, old)
    state = state_from_json(json.loads((old / STATE_FILE).read_text()))
    (old / STATE_FILE).unlink(); (old / OLD_STATE_FILE).write_bytes(pickle.dumps(state))   # as the old trainer wrote it
    from pettingllms_nb.cli import main
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()) as o: assert main(['convert-checkpoint', str(old)]) == 0
    assert STATE_FILE in o.getvalue() and not (old / OLD_STATE_FILE).exists()
    tr = Trainer('tiny_plan_path', SMALL, out_dir=tmp_path / 'other', progress=False)
    assert tr.load_checkpoint(old) == old and tr.step == 1


def test_remote_code_is_off_unless_asked_and_reaches_from_pretrained(tmp_path, monkeypatch):
    "Issue 32, point 10: `resource.trust_remote_code` defaulted to True and reached nothing."
    import transformers
    from pettingllms_nb.core.config import load_config
    from pettingllms_nb.models.hf import HFPolicy
    from pettingllms_nb.models.tiny import tiny_model
    assert load_config('tiny_plan_path').resource.trust_remote_code is False
    tiny_model(tmp_path / 'm')
    seen = []
    for cls in (transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        real = cls.from_pretrained.__func__
        monkeypatch.setattr(cls, 'from_pretrained', classmethod(lambda c, *a, _r=real, **k: seen.append(k.get('trust_remote_code')) or _r(c, *a, **k)))
    HFPolicy(str(tmp_path / 'm'), device='cpu')
    HFPolicy(str(tmp_path / 'm'), device='cpu', trust_remote_code=True)
    assert seen == [False, False, True, True], seen
