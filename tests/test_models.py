"Tiny local models and the HF policy: save/reload, chat template, batched plain sampling, log-probs, adapters."
import math, os, subprocess, sys
os.environ["HF_HUB_OFFLINE"] = "1"          # nothing may download
os.environ["TRANSFORMERS_OFFLINE"] = "1"
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from pettingllms_nb.engine.policies import Request
from pettingllms_nb.models.tiny import tiny_model, build_tiny, load_tiny, chat_ids, bpe_tokenizer, sft, IM_END
from pettingllms_nb.models.hf import HFPolicy, lora_config, plain_generation_config, _left_pad, _check_plain

GREEDY = {"temperature": 0, "max_tokens": 10}


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    "Tiny matrices gain nothing from threads, and on a busy 2-core machine threads spin."
    n = torch.get_num_threads(); torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def path(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "m", seed=0)


@pytest.fixture(scope="module")
def pol(path): return HFPolicy(path, max_tokens=12)


def lora_policy(path):
    return HFPolicy(path, adapters={"plan_agent": lora_config(4, 8), "tool_call_agent": lora_config(4, 8)}, max_tokens=10)


def greedy_ids(policy, role, prompt="Where to?"):
    return policy.generate([Request(role, prompt, sampling=GREEDY)])[0][0].token_ids


def test_tiny_save_reload_gives_equal_logits(path):
    model, tok = tiny_model(seed=0)
    model2, tok2 = load_tiny(path)
    x = torch.tensor([chat_ids(tok, "Move?")])
    with torch.no_grad(): assert torch.equal(model(x).logits, model2(x).logits)
    assert chat_ids(tok2, "Move?") == chat_ids(tok, "Move?")
    assert {f.name for f in path.iterdir()} >= {"config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"}


def test_tiny_is_deterministic_and_sized():
    a, b, c = tiny_model(seed=3)[0], tiny_model(seed=3)[0], tiny_model(seed=4)[0]
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.model.embed_tokens.weight, c.model.embed_tokens.weight)
    assert 60_000 < sum(p.numel() for p in a.parameters()) < 120_000
    assert tiny_model(hidden_size=128, head_dim=32)[0].config.head_dim == 32


def test_chat_template(path):
    _, tok = load_tiny(path)
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    assert text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(chat_ids(tok, {"text": "U", "system": "S"})) == text
    assert len(chat_ids(tok, "U")) == len("user\nU\nassistant\n") + 3    # one token per character + 3 specials
    assert tok.eos_token == IM_END


def test_bpe_tokenizer_round_trips_and_is_deterministic():
    tok = bpe_tokenizer(vocab_size=300)
    s = 'Grid:\n.#S\n..G\nAnswer #### ["U", "R"] héllo'
    assert tok.decode(tok(s)["input_ids"]) == s
    assert tok.get_vocab() == bpe_tokenizer(vocab_size=300).get_vocab()


def test_n_completions_text_tokens_and_logprobs(pol):
    reqs = [Request("a", "Where to?", n=3, sampling={"temperature": 1.0}), Request("b", {"text": "Grid:\n.#", "system": "S"}, n=2)]
    outs = pol.generate(reqs)
    assert [len(o) for o in outs] == [3, 2]
    comps = [c for o in outs for c in o]
    for r, o in zip(reqs, outs):
        for c in o:
            assert pol.tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text
            assert len(c.logprobs) == len(c.token_ids) > 0
            assert all(math.isfinite(x) and x <= 0 for x in c.logprobs)
            assert c.meta["prompt_ids"] == chat_ids(pol.tokenizer, r.prompt)
    tf = pol.logprobs([c.meta["prompt_ids"] for c in comps], [c.token_ids for c in comps])
    for c, x in zip(comps, tf):
        assert torch.allclose(torch.tensor(c.logprobs), x, atol=1e-4), (c.logprobs, x)


def test_logprobs_use_the_sampling_temperature(pol):
    c = pol.generate([Request("a", "Where to?", n=2, sampling={"temperature": 0.7})])[0][1]
    assert c.meta["logprob_temperature"] == 0.7
    tf = pol.logprobs([c.meta["prompt_ids"]], [c.token_ids], temperature=0.7)[0]
    assert torch.allclose(torch.tensor(c.logprobs), tf, atol=1e-4)
    t1 = pol.logprobs([c.meta["prompt_ids"]], [c.token_ids])[0]
    assert not torch.allclose(t1, tf, atol=1e-3)


def test_padded_logprobs_and_grad(pol):
    p = [chat_ids(pol.tokenizer, "a"), chat_ids(pol.tokenizer, "a longer prompt")]
    c = [[5, 6, 7], [8]]
    lp, m = pol.logprobs(p, c, padded=True, batch_size=1)
    assert lp.shape == (2, 3) and m.tolist() == [[True] * 3, [True, False, False]]
    single = pol.logprobs(p, c)
    assert torch.allclose(lp[1, :1], single[1], atol=1e-5)
    g = pol.logprobs(p, c, grad=True)
    assert g[0].requires_grad and not single[0].requires_grad


def test_greedy_is_deterministic(pol):
    a = pol.generate([Request("a", "Where to?", n=2, sampling=GREEDY)])[0]
    b = pol.generate([Request("a", "Where to?", sampling=GREEDY)])[0]
    assert a[0].token_ids == a[1].token_ids == b[0].token_ids


def test_greedy_does_not_depend_on_the_batch(pol):
    alone = pol.generate([Request("a", "Where to?", sampling=GREEDY)])[0][0]
    outs = pol.generate([Request("a", "x", sampling=GREEDY), Request("a", "Where to?", sampling=GREEDY),
                         Request("a", "a much, much longer prompt than the others", n=3, sampling=GREEDY)])
    assert outs[1][0].token_ids == alone.token_ids
    assert torch.allclose(torch.tensor(outs[1][0].logprobs), torch.tensor(alone.logprobs), atol=1e-4)
    small = HFPolicy(pol.model, pol.tokenizer, max_batch_size=2, max_tokens=12)
    assert [o[0].token_ids for o in small.generate([Request("a", "x", sampling=GREEDY), Request("a", "Where to?", sampling=GREEDY)])][1] == alone.token_ids


def test_sampling_is_seeded(path):
    reqs = [Request("a", "Where to?", n=4, sampling={"temperature": 1.0, "max_tokens": 8})]
    assert [c.token_ids for c in HFPolicy(path).generate(reqs)[0]] == [c.token_ids for c in HFPolicy(path).generate(reqs)[0]]
    p = HFPolicy(path)
    assert [c.token_ids for c in p.generate(reqs)[0]] != [c.token_ids for c in p.generate(reqs)[0]]
    seeded = [Request("a", "Where to?", n=4, sampling={"temperature": 1.0, "max_tokens": 8, "seed": 5})]
    assert [c.token_ids for c in p.generate(seeded)[0]] == [c.token_ids for c in p.generate(seeded)[0]]


def test_sampling_is_plain(pol):
    assert pol.model.generation_config.top_k is None      # the model's defaults are gone
    ids, mask = _left_pad([chat_ids(pol.tokenizer, "Where to?")], pol.pad_id, pol.device)
    for top_k, ok in ((0, True), (50, False)):
        gc = plain_generation_config(1.0, 4, pol.eos_ids, pol.pad_id); gc.top_k = top_k
        with torch.no_grad(): o = pol.model.generate(input_ids=ids, attention_mask=mask, generation_config=gc)
        if ok: [_check_plain(s, l, 1.0) for s, l in zip(o.scores, o.logits)]
        else:
            with pytest.raises(RuntimeError, match="plain sampling"): [_check_plain(s, l, 1.0) for s, l in zip(o.scores, o.logits)]
    with pytest.raises(ValueError, match="plain sampling"): Request("a", "x", sampling={"top_k": 50})


def test_stop_strings(pol):
    outs = pol.generate([Request("a", "Where to?", n=8, sampling={"temperature": 1.0, "max_tokens": 40, "stop": ["e"]})])[0]
    assert any("stop" in c.meta for c in outs)
    for c in outs:
        assert pol.tokenizer.decode(c.token_ids, skip_special_tokens=True) == c.text
        if "stop" in c.meta: assert c.text.endswith("e") and c.text.count("e") == 1 and c.finish_reason == "stop"
        else: assert "e" not in c.text


def test_switching_adapters_changes_outputs(path, pol):
    lp = lora_policy(path)
    assert greedy_ids(lp, "plan_agent") == greedy_ids(lp, "tool_call_agent") == greedy_ids(pol, "x")   # B starts at 0
    with torch.no_grad():
        for n, p in lp.model.named_parameters():
            if "lora_B" in n and ".tool_call_agent." in n: p.add_(torch.randn_like(p) * 0.5)
    assert greedy_ids(lp, "plan_agent") != greedy_ids(lp, "tool_call_agent")
    outs = lp.generate([Request("tool_call_agent", "Where to?", sampling=GREEDY), Request("plan_agent", "Where to?", sampling=GREEDY)])
    assert [o[0].meta["adapter"] for o in outs] == ["tool_call_agent", "plan_agent"]
    assert outs[0][0].token_ids == greedy_ids(lp, "tool_call_agent") and outs[1][0].token_ids == greedy_ids(pol, "x")
    c = outs[0][0]
    with lp.adapter_disabled():
        ref = lp.logprobs([c.meta["prompt_ids"]], [c.token_ids], adapter="tool_call_agent")[0]
        assert lp.generate([Request("tool_call_agent", "Where to?", sampling=GREEDY)])[0][0].token_ids == greedy_ids(pol, "x")
    assert torch.allclose(ref, pol.logprobs([c.meta["prompt_ids"]], [c.token_ids])[0], atol=1e-5)


def test_step_on_one_adapter_leaves_the_other_bit_identical(path):
    lp = lora_policy(path)
    with torch.no_grad():
        for p in lp.parameters("tool_call_agent"): p.add_(torch.randn_like(p) * 0.1)
    before = {n: p.detach().clone() for n, p in lp.model.named_parameters()}
    opt = torch.optim.AdamW(lp.parameters("plan_agent"), lr=1e-2)
    comps = lp.generate([Request("plan_agent", "Where to?", n=4, sampling={"temperature": 1.0, "max_tokens": 8})])[0]
    loss = -torch.cat(lp.logprobs([c.meta["prompt_ids"] for c in comps], [c.token_ids for c in comps], adapter="plan_agent", grad=True)).mean()
    loss.backward(); opt.step()
    changed = {n for n, p in lp.model.named_parameters() if not torch.equal(before[n], p)}
    assert changed and all(".plan_agent." in n for n in changed), changed


def test_adapter_resolution_errors(path, pol):
    lp = lora_policy(path)
    with pytest.raises(ValueError, match="role_adapters"): lp.generate([Request("judge", "?")])
    with pytest.raises(ValueError, match="not loaded"): lp.generate([Request("judge", "?", adapter="nope")])
    with pytest.raises(ValueError, match="no adapters"): pol.generate([Request("judge", "?", adapter="x")])
    assert HFPolicy(path, adapters={"shared": lora_config()}).adapter_for(Request("anyone", "?")) == "shared"
    assert HFPolicy(path, adapters={"first": lora_config(), "second": lora_config()}, role_adapters={"judge": "second"}).adapter_for(Request("judge", "?")) == "second"
    with pytest.raises(RuntimeError, match="frozen copy"): pol.adapter_disabled().__enter__()


def test_saved_adapter_reloads(path, tmp_path):
    lp = lora_policy(path)
    with torch.no_grad():
        for p in lp.parameters("plan_agent"): p.add_(torch.randn_like(p) * 0.3)
    d = lp.save_adapter("plan_agent", tmp_path / "ad")
    assert (d / "adapter_config.json").exists()
    assert greedy_ids(HFPolicy(path, adapters={"plan_agent": d}), "plan_agent") == greedy_ids(lp, "plan_agent")


def test_full_weights_step_changes_generation(path):
    fp = HFPolicy(path, max_tokens=10)
    before = greedy_ids(fp, "a")
    opt = torch.optim.SGD(fp.parameters(), lr=1.0)
    (-fp.logprobs([chat_ids(fp.tokenizer, "Where to?")], [fp.tokenizer("UUUU")["input_ids"]], grad=True)[0].sum()).backward()
    opt.step()
    assert greedy_ids(fp, "a") != before


def test_sft_lowers_the_target_loss():
    model, tok = tiny_model(seed=0)
    losses = sft(model, tok, [(f"Which letter is {w}?", c) for w, c in {"up": "U", "down": "D"}.items()], steps=40, lr=3e-3, batch_size=4)
    assert len(losses) == 40 and sum(losses[-5:]) / 5 < 0.3 * losses[0]


def test_registered_as_hf():
    from pettingllms_nb.core.registry import registry
    assert registry.entries["policy"]["hf"].obj is HFPolicy


def test_importing_the_models_is_light():
    code = ("import sys, pettingllms_nb.models.hf, pettingllms_nb.models.tiny; "
            "print([m for m in ('torch', 'transformers', 'peft', 'tokenizers') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", f"heavy modules imported eagerly: {out}"


def test_sft_on_a_lora_policy_trains_only_the_active_adapter(path):
    lp = lora_policy(path)
    lp.activate("plan_agent")
    before = {n: p.detach().clone() for n, p in lp.model.named_parameters()}
    losses = sft(lp.model, lp.tokenizer, [("Which letter is up?", "U")], steps=5, lr=1e-2, batch_size=2)
    changed = {n for n, p in lp.model.named_parameters() if not torch.equal(before[n], p)}
    assert len(losses) == 5 and changed and all(".plan_agent." in n for n in changed), changed


def test_sft_with_no_steps_leaves_the_model_as_it_was_on_either_schedule():
    import torch
    for schedule in ('constant', 'cosine'):
        model, tok = tiny_model(seed=0)
        before = [p.detach().clone() for p in model.parameters()]
        assert sft(model, tok, [({'text': 'ab', 'image': None, 'system': ''}, 'c')], steps=0, lr_schedule=schedule) == []
        assert all(torch.equal(a, b) for a, b in zip(before, model.parameters()))
