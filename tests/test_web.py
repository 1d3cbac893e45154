"""web_env: WebShop's reward, the oracle and random policies, text mode against Chromium, hostile actions, crashes and hangs.

Browser tests skip without Playwright or Chromium (`pip install 'pettingllms-nb[web]'`, `apt-get install chromium`);
the module's fixture closes every browser and checks that no Chromium process of ours is left."""
import asyncio, math, os, random, signal, time
import pytest
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.core.parsing import FormatError
from pettingllms_nb.core.registry import make_agent, registry
from pettingllms_nb.engine.check_env import check_env
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.training.advantages import at_grpo, grpo
from pettingllms_nb.envs.web.data import make_catalogue, webshop_reward
from pettingllms_nb.envs.web.env import WebEnv
from pettingllms_nb.envs.web.observation import Action, El, TextBrowser, parse_action
from pettingllms_nb.envs.web.oracle import oracle_policy, random_policy
from pettingllms_nb.envs.web.browser import (BrowserError, BrowserPage, BrowserPool, browser_available, browser_processes,
                                             close_browsers, shared_pool)
from pettingllms_nb.envs.web.shop import close_shop_servers

NO_BROWSER = browser_available()
needs_browser = pytest.mark.skipif(NO_BROWSER is not None, reason=str(NO_BROWSER))


@pytest.fixture(scope='module', autouse=True)
def no_browser_left():
    "Every browser this module starts is closed at its end, and no Chromium process of ours survives."
    yield
    close_browsers()
    close_shop_servers()
    for _ in range(20):
        if not browser_processes(): break
        time.sleep(0.25)
    assert browser_processes() == [], f"Chromium processes left running: {browser_processes()}"


# -- WebShop's reward, by hand ------------------------------------------------------------------------------------------
GOAL = {'query': 'hiking socks', 'product_category': 'clothing › socks › hiking socks', 'name': 'Tidewell Merino Wool Hiking Socks',
        'attributes': ['merino wool', 'cushioned', 'seamless toe'], 'goal_options': {'color': 'grey', 'size': 'm'}, 'price_upper': 30.0}
ITEM = {'asin': 'T1', 'name': 'Tidewell Merino Wool Cushioned Hiking Socks', 'Title': 'Tidewell Merino Wool Cushioned Hiking Socks',
        'query': 'hiking socks', 'product_category': 'clothing › socks › hiking socks', 'Attributes': ['merino wool', 'cushioned'],
        'BulletPoints': ['Merino wool', 'Cushioned'], 'Description': 'Warm socks.', 'options': {}, 'price': 19.99}

@pytest.mark.parametrize('item, price, options, expected', [
    (ITEM, 19.99, {'color': 'grey', 'size': 'm'}, (2 + 2 + 1) / 6),                       # seamless toe missing
    (ITEM, 35.00, {'color': 'grey', 'size': 'm'}, (2 + 2 + 0) / 6),                       # over the price limit
    (ITEM, 19.99, {'color': 'heather grey', 'size': 'l'}, (2 + 1 + 1) / 6),               # colour normalised; wrong size
    ({**ITEM, 'Description': 'A seamless toe.'}, 19.99, {'color': 'grey', 'size': 'm'}, 1.0),   # found in the text
    ({**ITEM, 'query': 'yoga mat', 'product_category': 'sports › fitness › yoga mats', 'name': 'Zephra Yoga Mat'},
     5.0, {'color': 'grey', 'size': 'm'}, 0.0),                                           # another kind of thing
    ({**ITEM, 'query': 'socks', 'product_category': 'x › y', 'name': 'Generic Hiking Sock Set'}, 19.99,
     {'color': 'grey', 'size': 'm'}, (2 + 2 + 1) / 6 * 0.5),         # query, category miss; 1 of 5 title words (not > 0.2): 0.5
])
def test_webshop_reward_by_hand(item, price, options, expected):
    assert webshop_reward(item, GOAL, price, options)[0] == pytest.approx(expected)


# -- text mode ----------------------------------------------------------------------------------------------------------
def test_oracle_solves_every_heldout_shop_task():
    for order in (['web_navigator', 'web_verifier'], ['web_single_agent']):
        t = rollout('web_env', oracle_policy, seeds=range(100), split='test', max_turns=14, turn_order=order)
        assert [e.problem_uid for e in t.episodes if not e.success] == []
        assert len({e.problem_uid for e in t.episodes}) == 100


def test_random_actions_rarely_succeed():
    t = rollout('web_env', random_policy, seeds=range(100), split='test', max_turns=14)
    assert sum(e.success for e in t.episodes) <= 2
    assert any(s.reward_terms.get('invalid') for s in t)       # random clicks do hit invalid actions


def test_check_env_text_mode():
    for policy in (None, random_policy, oracle_policy):
        assert check_env('web_env', policy=policy).ok
    assert check_env('web_env', turn_order=['web_single_agent'], policy=random_policy).ok


def test_action_parser_is_total():
    rng = random.Random(0)
    alphabet = 'click(fill, select)scroll"\'\\press[]0123456789 stop\n\x00é'
    for _ in range(3000):
        s = ''.join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        try: parse_action(s)
        except FormatError: pass
    t0 = time.perf_counter()
    for s in ('click(' * 50_000, '"' * 200_000, 'fill(1, "' + '\\' * 200_000):
        with pytest.raises(FormatError): parse_action(s)
    assert time.perf_counter() - t0 < 5


def _hostile_links(tb:TextBrowser):
    "Add a link off the site and a javascript: link to a text-mode page (a compromised page would carry them)."
    main = next(e for e in tb.body.elements() if e.tag == 'main')
    for n, (href, text) in enumerate([('https://example.org/steal', 'elsewhere'), ('javascript:alert(1)', 'run'),
                                      ('//evil.example/x', 'protocol-relative')]):
        el = El('a', {'href': href, 'data-pllm-id': str(900 + n)}, [text], main)
        main.children.append(el)


def test_hostile_actions_stay_on_the_site_in_text_mode():
    env = WebEnv(split='test')
    env.reset(0)
    tb = env.driver
    _hostile_links(tb)
    for i in (900, 901, 902):
        r = tb.act(Action('click', i))
        assert not r.ok and r.error.startswith('blocked'), r
    assert tb.url.startswith('http://127.0.0.1/s/')
    box = next(n for n in tb.observe().nodes if n['role'] == 'textbox')
    assert tb.act(Action('fill', box['id'], 'javascript:alert(document.cookie)')).ok
    assert tb.act(Action('press', text='Enter')).ok
    env.sync()
    obs = tb.observe()
    assert obs.title == 'Results for javascript:alert(document.cookie) (page 1 of 1)'
    assert tb.url.startswith(tb.base)                            # a search for the text, on the site
    nav = make_agent('web_navigator')
    nav.update_from_env(env, 0)
    take_turn(nav, env, 'goto("https://example.org")')           # not an action at all
    assert nav.format_error is not None and env.state.title == obs.title
    env.close()


def test_tree_branches_step_their_own_copies():
    "Tree sampling in text mode: each branch's state is the result of its own action (defect 1 of the reference)."
    def mixed(request, rng): return oracle_policy(request) if rng.random() < 0.5 else random_policy(request, rng)
    t = rollout('web_env', mixed, mode='tree', sample_num=3, seeds=range(4), split='test', max_turns=6)
    for s in t:
        if s.role == 'web_navigator' and s.format_error is None:
            mine = [h for h in s.state_after['history'] if h['role'] == 'web_navigator']
            assert mine and mine[-1]['action'] == str(Action(**s.action)), (s.id, mine[-1], s.action)
    groups = {}
    for s in t: groups.setdefault(s.group_id, []).append(s)
    assert any(len({str(x.state_after['history']) for x in g}) > 1 for g in groups.values())


# -- the browser --------------------------------------------------------------------------------------------------------
def _play(backend:str, policy, seed:int, turn_order=('web_navigator', 'web_verifier'), max_turns=12):
    return rollout('web_env', policy, seeds=[seed], split='test', backend=backend, max_turns=max_turns, turn_order=list(turn_order),
                   screenshots=False)

@needs_browser
@pytest.mark.parametrize('policy, seed', [(oracle_policy, 3), (random_policy, 7)])
def test_text_and_browser_modes_agree(policy, seed):
    "The same episode in text mode and in Chromium: the same observation, actions, rewards and reward terms at every step."
    text, browser = _play('text', policy, seed), _play('browser', policy, seed)
    assert len(text.steps) == len(browser.steps) > 4
    for a, b in zip(text.steps, browser.steps):
        assert (a.role, a.completion) == (b.role, b.completion)
        assert a.state_after['observation'] == b.state_after['observation'], a.id
        assert (a.reward, a.reward_terms) == (b.reward, b.reward_terms), a.id
        assert b.infra_error is None
    assert [(e.success, e.rewards) for e in text.episodes] == [(e.success, e.rewards) for e in browser.episodes]


@needs_browser
def test_browser_shop_sessions_end_with_their_episodes_in_tree_mode():
    "A browser episode, and every branch (rebuilt in a session of its own), leaves no shop session behind."
    from pettingllms_nb.envs.web import env as W
    def mixed(request, rng): return oracle_policy(request) if rng.random() < 0.5 else random_policy(request, rng)
    live = lambda: sum(len(app.sessions) for app in set(W._APPS.values()))
    before = live()
    t = rollout('web_env', mixed, mode='tree', sample_num=2, seeds=range(2), split='test', backend='browser', max_turns=4,
                screenshots=False)
    assert len(t.episodes) == 2 and len(t) > 4
    assert live() == before


@needs_browser
def test_hostile_pages_cannot_take_the_browser_off_the_site():
    env = WebEnv(split='test', backend='browser', screenshots=False)
    env.reset(0)
    bp = env.driver
    page = bp._slot[0].page
    bp.pool.call(page.evaluate("""() => { for (const [h, t] of [['https://example.org/steal', 'elsewhere'],
        ['javascript:alert(1)', 'run']]) { const a = document.createElement('a'); a.href = h; a.textContent = t;
        document.querySelector('main').appendChild(a); } }"""))
    bp.pool.call(bp._read(page))
    nav = make_agent('web_navigator')
    for name in ('elsewhere', 'run'):
        link = next(n for n in bp.observe().nodes if n['name'] == name)
        nav.update_from_env(env, 0)
        take_turn(nav, env, f"click({link['id']})")
        assert nav.reward_terms['invalid'] == -1.0 and 'blocked' in env.state.last_result
        assert bp.url.startswith(bp.start.allowed[0])
    bp.pool.call(page.evaluate("() => { window.location.href = 'https://example.org/steal'; }"))
    nav.update_from_env(env, 0)
    take_turn(nav, env, 'scroll(down)')
    assert 'left the site' in env.state.last_result and bp.url.startswith(bp.start.allowed[0])
    assert env.state.title == 'Shop'                             # rebuilt from the history
    env.close()


def _kill_chromium():
    for pid in browser_processes():
        try: os.kill(pid, signal.SIGKILL)
        except OSError: pass

@needs_browser
def test_a_crashed_browser_is_an_infra_error_not_a_reward():
    """Chromium killed in the middle of an episode: that step is marked `infra_error` and not scored, the episode goes on
    to succeed, and is left out of the success rate."""
    killed = []
    def crashing(request):
        if request.role == 'web_navigator' and request.turn_idx == 2 and not killed:
            killed.append(request.turn_idx)
            _kill_chromium()
        return oracle_policy(request)
    t = rollout('web_env', crashing, seeds=[1], split='test', backend='browser', max_turns=14, screenshots=False)
    bad = [s for s in t if s.infra_error]
    assert killed and len(bad) == 1 and bad[0].turn_idx == 2 and bad[0].infra_error.startswith('browser:')
    assert bad[0].reward is None and bad[0].reward_terms == {}   # not scored: no reward, no term
    assert bad[0].state_after['infra_errors'] == 1
    assert all(s.reward is not None for s in t if not s.infra_error)   # the other steps were carried out and scored
    for adv in (at_grpo(t), grpo(t)):
        assert all(adv[i] is None for i, s in enumerate(t) if s.infra_error)   # in no advantage group
    assert t.episodes[0].success                                  # the page was rebuilt and the oracle carried on
    assert t.episodes[0].infra_errors == 1 and math.isnan(t.success_rate())   # ... but it counts in no success rate
    assert t.summary()['infra_episodes'] == 1


@needs_browser
def test_a_hung_browser_is_an_infra_error(monkeypatch):
    import pettingllms_nb.envs.web.browser as B
    env = WebEnv(split='test', backend='browser', screenshots=False)
    env.reset(2)                                     # opened within the pool's usual time limit
    pool = env.driver.pool
    async def hang(self, page, a, replay=False): await asyncio.sleep(3600)
    monkeypatch.setattr(B.BrowserPage, '_do', hang)
    monkeypatch.setattr(pool, 'op_timeout', 3)
    nav = make_agent('web_navigator')
    nav.update_from_env(env, 0)
    t0 = time.monotonic()
    take_turn(nav, env, 'press(Enter)')
    assert nav.infra_error and 'did not answer within 3 s' in nav.infra_error and time.monotonic() - t0 < 30
    assert env.state.infra_errors == 1 and not env.done
    env.close()


@needs_browser
def test_evicted_shop_pages_come_back_by_restore_not_replay(monkeypatch):
    """Issue 26: 4 shop episodes in lockstep on 2 contexts replayed their whole history (a page read after every action)
    each time they came back. Now an evicted page reloads its last page in its own session: no episode is rebuilt from
    its start, each return costs a read or two (in a context handed over, not a new one), and the episodes end exactly
    as with a context each."""
    import pettingllms_nb.envs.web.browser as B
    made, real = [], B.BrowserPage.__init__
    def counted(self, *a, **kw): real(self, *a, **kw); made.append(self)
    monkeypatch.setattr(B.BrowserPage, '__init__', counted)
    runs = {}
    for size in (4, 2):
        pool = B.set_pool_size(size, max_active=2)
        made.clear()
        t = rollout('web_env', oracle_policy, seeds=range(4), split='test', backend='browser', max_turns=14, screenshots=False)
        runs[size] = (t, pool.evictions, sum(p.reads for p in made), sum(p.restores for p in made), sum(p.replays for p in made),
                      pool.handovers)
    (t4, ev4, reads4, _, _, _), (t2, ev2, reads2, restores, replays, handovers) = runs[4], runs[2]
    assert all(e.success for e in t2.episodes) and not any(s.infra_error for s in t2)
    assert [(s.id, s.reward, s.action) for s in t2] == [(s.id, s.reward, s.action) for s in t4]   # nothing done twice
    assert ev4 == 0 and ev2 > 0 and replays == 0 and 0 < restores <= ev2     # evicted, and never rebuilt by replay
    assert reads2 - reads4 <= 2 * restores, (reads2, reads4, restores)       # a return costs at most two page reads
    assert 0 < handovers <= ev2            # an evicted shop context is handed over, not closed and opened again
    B.set_pool_size(B.default_pool_size())


@needs_browser
@pytest.mark.slow
def test_check_env_browser_mode():
    assert check_env('web_env', backend='browser', policy=random_policy, screenshots=False).ok
    assert len(shared_pool()._leases) <= shared_pool().max_contexts


@needs_browser
@pytest.mark.slow
def test_miniwob_oracle_solves_the_subset():
    "Five held-out episodes of every task of the documented subset: the oracle (navigator + verifier) solves them all."
    from pettingllms_nb.envs.web.data import MINIWOB_TASKS
    episodes, failed, infra = 0, [], 0
    for task in MINIWOB_TASKS:          # a task at a time: five episodes at once fit the pool (no eviction, no replay)
        t = rollout('web_env', oracle_policy, seeds=range(5), family='miniwob', backend='browser', split='test',
                    tasks=[task], max_turns=8, screenshots=False)
        episodes, infra = episodes + len(t.episodes), infra + sum(bool(s.infra_error) for s in t)
        failed += [e.problem_uid for e in t.episodes if not e.success]
    assert (episodes, failed, infra) == (100, [], 0)


# -- presets ------------------------------------------------------------------------------------------------------------
WEB_PRESETS = ['gpu_web_shop_qwen3_1.7b_lora', 'tiny_web_forms', 'tiny_web_forms_lora', 'tiny_web_forms_single',
               'tiny_web_shop', 'tiny_web_shop_lora', 'tiny_web_shop_single', 'web_miniwob', 'web_shop', 'web_shop_single']
TINY_WEB = ['tiny_web_shop', 'tiny_web_shop_single', 'tiny_web_shop_lora']

@pytest.mark.parametrize('name', WEB_PRESETS)
def test_presets_load(name):
    from pettingllms_nb.core.config import agent_policies, agent_roles, env_kwargs, load_config
    cfg = load_config(name)
    kw = env_kwargs(cfg)
    assert cfg.env.name == 'web_env' and cfg.training.experiment_name == name
    assert agent_roles(cfg) == (['web_single_agent'] if name.endswith('_single') else ['web_navigator', 'web_verifier'])
    assert kw['backend'] == ('browser' if 'miniwob' in name else 'text')
    assert kw['family'] == ('miniwob' if 'miniwob' in name or 'forms' in name else 'shop')
    if name.startswith('gpu_'):      # the reference's AT-GRPO settings, one LoRA adapter per agent
        t = cfg.training
        assert (t.total_training_steps, t.train_batch_size, t.train_sample_num, t.lr, t.clip_ratio) == (200, 32, 8, 5e-6, 0.2)
        assert (cfg.specialization, cfg.lora_rank, cfg.lora_alpha, t.device) == ('lora', 16, 32, 'cuda')
        assert {r: p['adapter'] for r, p in agent_policies(cfg).items()} == {'web_navigator': 'web_navigator', 'web_verifier': 'web_verifier'}
        assert cfg.base_models.policy_0.path.startswith('Qwen/Qwen3-')
    if name.startswith('tiny_web_forms'):   # MiniWoB++'s pages in text mode: one or two oracle turns, short replies
        t = cfg.training
        assert cfg.base_models.policy_0.path == 'tiny' and kw['prompt_style'] == 'compact' and 'catalogue' not in kw
        assert cfg.env.max_turns == 4 and t.max_response_length == 24 and t.warmstart_steps > 0
    elif name.startswith('tiny_'):
        t = cfg.training
        assert cfg.base_models.policy_0.path == 'tiny' and kw['prompt_style'] == 'compact' and kw['catalogue'] == 'tiny-0'
        assert cfg.env.max_turns <= 8 and t.max_response_length == 32 and t.warmstart_steps > 0
        assert t.rollout_mode == 'independent'       # the task is credited to earlier steps (credit: episode)
        if name.endswith('_lora'): assert (cfg.specialization, cfg.lora_rank, cfg.lora_alpha) == ('lora', 8, 16)
        else: assert cfg.specialization == 'prompt'


def test_text_presets_play_with_the_oracle():
    from pettingllms_nb.core.config import load_config
    for name in ('web_shop', 'web_shop_single', *TINY_WEB):
        t = rollout(load_config(name), oracle_policy, seeds=[0, 1, 1_000_000])
        assert all(e.success for e in t.episodes), name


# -- the compact style on the tiny catalogue (the tiny_web_shop presets) --------------------------------------------------
def _tiny_rollout(name, policy, seeds):
    from pettingllms_nb.core.config import load_config
    return rollout(load_config(name), policy, seeds=seeds)

def _quoted_args(reply): return [a for a in reply.split('"')[1::2]]

@pytest.mark.parametrize('name', ['tiny_web_shop', 'tiny_web_shop_single'])
def test_tiny_shop_oracle_solves_every_heldout_goal_and_random_does_not(name):
    held_out = range(1_000_000, 1_000_050)                     # the tiny catalogue's 50 test goals
    good, bad = _tiny_rollout(name, oracle_policy, held_out), _tiny_rollout(name, random_policy, held_out)
    assert len({e.problem_uid for e in good.episodes}) == 50
    assert all(e.success for e in good.episodes) and max(e.turns for e in good.episodes) <= 6
    assert sum(e.success for e in bad.episodes) <= 1


def test_compact_oracle_replies_are_short_and_copied_from_the_prompt():
    "Every reply the oracle makes to a compact prompt is short, and what it types or picks is in the prompt."
    from pettingllms_nb.envs.web.data import get_catalogue
    from pettingllms_nb.envs.web.oracle import read_page
    from pettingllms_nb.envs.web.prompts import compact_task
    cat = get_catalogue('tiny-0')
    t = _tiny_rollout('tiny_web_shop', oracle_policy, range(1_000_000, 1_000_050))
    for s in t:
        text, reply = s.prompt['text'], s.completion
        assert len(reply) <= 32 and len(text) <= 450, (reply, len(text))
        if s.role == 'web_verifier':
            assert reply == ('pass' if text.startswith('Nothing to check') else 'approve'), (text, reply)
            continue
        task, nodes = text.splitlines()[0][len('Task: '):], {n['id']: n for n in read_page(text)}
        goal = cat.goal(s.problem_uid.split('/')[-1])
        assert task == compact_task(goal['instruction_text']) and cat.by_id[goal['target']]['Title'] not in text
        a = parse_action(reply)
        assert a.id in nodes, (reply, text)                        # the id is on the page
        for word in _quoted_args(reply): assert word in task, (reply, task)   # the words typed or selected are the task's
        if nodes[a.id]['role'] == 'link' and 'results for' in text:   # the result opened is the one whose title has the task's attributes
            links = [n for n in nodes.values() if n['role'] == 'link' and all(w in n['name'] for w in goal['attributes'])]
            assert [n['id'] for n in links] == [a.id], (text, reply)


def test_compact_prompts_are_a_few_short_lines():
    t = _tiny_rollout('tiny_web_shop', oracle_policy, [1_000_003])
    first = t.steps[0].prompt['text']
    assert first == ('Task: ' + first.splitlines()[0][6:] + '\nPage: shop\n[7] textbox "search" value=""\n[8] button "search"\nAction:')
    order = next(s.prompt['text'] for s in t if s.role == 'web_verifier' and 'Order:' in s.prompt['text'])
    assert len(order.splitlines()) == 3 and order.endswith('\nVerdict:'), order
    assert [s.completion for s in t if s.role == 'web_verifier'][-1] == 'approve'


@pytest.mark.parametrize('role', ['web_navigator', 'web_verifier', 'web_single_agent'])
def test_compact_garbage_is_a_format_error(role):
    "Garbage replies to compact prompts are format errors with their reward, never exceptions."
    from pettingllms_nb.core.config import env_kwargs, load_config
    rng = random.Random(0)
    junk = ['', 'approve(', 'click(', 'fill(7, "abc', 'select(', '"""', 'click(99999999999)', '\x00\n', 'verdict', 'fill(7)']
    junk += [''.join(rng.choice('click(fill,"7) approve reject\n') for _ in range(rng.randint(1, 40))) for _ in range(40)]
    for k, reply in enumerate(junk):
        env = WebEnv(**{k_: v for k_, v in env_kwargs(load_config('tiny_web_shop')).items() if k_ != 'max_turns'})
        env.reset(1_000_000 + k % 50)
        if role == 'web_verifier':           # something to judge: the oracle's own order, waiting for a verdict
            nav = make_agent('web_navigator')
            while env.state.pending is None:
                nav.update_from_env(env, env.turn)
                take_turn(nav, env, oracle_policy(_Req('web_navigator', nav.current_prompt['text'], env.problem_uid)))
        agent = make_agent(role)
        agent.update_from_env(env, env.turn)
        take_turn(agent, env, reply)
        if agent.format_error is not None: assert agent.reward_terms['format'] == -1.0, reply
        env.close()


class _Req:
    def __init__(self, role, text, problem_uid): self.role, self.text, self.problem_uid = role, text, problem_uid


# -- MiniWoB++ tasks in text mode (the tiny_web_forms presets) ----------------------------------------------------------
FORMS = ['tiny_web_forms', 'tiny_web_forms_single']

@pytest.mark.parametrize('name', FORMS)
def test_forms_oracle_solves_every_heldout_page_and_random_rarely_does(name):
    "60 held-out pages (20 of each task): the oracle solves all in one or two turns; random actions solve few."
    held_out = range(1_000_000, 1_000_060)
    good, bad = _tiny_rollout(name, oracle_policy, held_out), _tiny_rollout(name, random_policy, held_out)
    assert len({e.problem_uid for e in good.episodes}) == 60 and {e.problem_uid.split('/')[2] for e in good.episodes} == {
        'click-button', 'click-option', 'enter-text'}
    assert all(e.success for e in good.episodes) and max(e.turns for e in good.episodes) <= 2
    assert sum(e.success for e in bad.episodes) <= 12


def test_forms_pages_are_seeded_and_held_out_pages_differ_from_training_ones():
    from pettingllms_nb.envs.web.shop import FORM_TASKS, form_session
    assert form_session('a', 'click-button', 7).choices == form_session('b', 'click-button', 7).choices
    train = {(t, tuple(form_session('x', t, s).choices), form_session('x', t, s).target) for t in FORM_TASKS for s in range(200)}
    test = {(t, tuple(form_session('x', t, s).choices), form_session('x', t, s).target)
            for t in FORM_TASKS for s in range(1_000_000, 1_000_200)}
    assert len(train) > 500 and len(test - train) > 0.8 * len(test)   # enter-text draws from 580 texts


def test_a_wrong_button_is_a_wrong_answer_and_the_verifier_can_stop_it():
    "click-button: the single agent's wrong press ends the episode unsolved (reward 0); with the verifier, a rejected wrong"
    " press changes nothing, and the right one then wins."
    env = WebEnv(family='miniwob', tasks='click-button', prompt_style='compact')
    env.reset(3)
    buttons = [n for n in env.driver.observe().nodes if n['role'] == 'button']
    right = next(n for n in buttons if n['name'] == env.driver.session.target)
    wrong = next(n for n in buttons if n['name'] != right['name'])
    nav, ver, single = (make_agent(r, env='web_env') for r in ('web_navigator', 'web_verifier', 'web_single_agent'))
    take_turn(single, env, f"click({wrong['id']})")
    assert env.state.finished and env.state.reward == 0.0 and not env.is_success()
    env.reset(3)
    take_turn(nav, env, f"click({wrong['id']})")
    assert env.state.pending is not None and env.state.pending_ok is False and not env.state.finished
    take_turn(ver, env, "reject: wrong label")
    assert not env.state.finished and env.state.note == 'wrong label' and ver.judged is True
    take_turn(nav, env, f"click({right['id']})")
    take_turn(ver, env, "approve")
    assert env.is_success() and env.state.reward == 1.0


@pytest.mark.parametrize('task', ['click-button', 'click-option', 'enter-text'])
def test_compact_forms_prompts_put_each_id_after_its_label_and_show_the_verifier_the_submission(task):
    "The navigator's compact page reads back to the page's own elements (ids last); the verifier reads what pressing"
    " would submit, and the oracle approves exactly the submission the grader scores 1."
    from pettingllms_nb.envs.web.oracle import read_page
    env = WebEnv(family='miniwob', tasks=task, prompt_style='compact')
    env.reset(1_000_003)
    nav, ver = make_agent('web_navigator', env='web_env'), make_agent('web_verifier', env='web_env')
    nav.update_from_env(env, env.turn)
    page = nav.current_prompt['text'].split('\n')[2:-1]
    nodes = [n for n in env.driver.observe().nodes if n['role'] not in ('heading', 'text')]
    assert all(l.endswith(f" [{n['id']}]") for l, n in zip(page, nodes)) and len(page) == len(nodes)
    assert [(n['id'], n['name']) for n in read_page('\n'.join(page))] == [(n['id'], n['name']) for n in nodes]
    target = env.driver.session.target
    submit = next(n for n in nodes if n['role'] == 'button' and (n['name'] == 'Submit' or n['name'] != target))
    take_turn(nav, env, f"click({submit['id']})")                         # a wrong submission: the wrong label, or empty
    ver.update_from_env(env, env.turn)
    sent = submit['name'] if submit['name'] != 'Submit' else ''
    assert ver.current_prompt['text'] == f'Task: {env.state.instruction}\nSubmits: "{sent}"\nVerdict:'
    assert oracle_policy(_Req('web_verifier', ver.current_prompt['text'], env.problem_uid)) == f'reject: not "{sent}"'
    env.close()


def test_click_by_label_clicks_the_one_element_of_that_name_and_an_unknown_label_is_an_invalid_action():
    env = WebEnv(family='miniwob', tasks='click-button', prompt_style='compact')
    env.reset(1_000_000)
    single = make_agent('web_single_agent', env='web_env')
    take_turn(single, env, 'click("no such label")')
    assert single.invalid and not env.state.finished and 'no element named "no such label"' in env.state.last_result
    take_turn(single, env, f'click("{env.driver.session.target.upper()}")')   # case and spaces do not matter
    assert env.is_success()
    assert parse_action("click('x')") == Action('click', text='x') and parse_action('click(12)') == Action('click', 12)
    with pytest.raises(FormatError): parse_action('click("")')
    env.close()


def test_forms_sessions_end_with_their_episodes_in_tree_mode():
    "Tree sampling copies a page's session per branch; every one is dropped when its episode or branch is done."
    from pettingllms_nb.envs.web.env import forms_app
    def mixed(request, rng): return oracle_policy(request) if rng.random() < 0.5 else random_policy(request, rng)
    before = len(forms_app().sessions)
    t = rollout('tiny_web_forms', mixed, mode='tree', sample_num=3, seeds=range(6))
    assert t.episodes and len(forms_app().sessions) == before


def test_check_env_forms():
    for policy in (None, random_policy, oracle_policy):
        assert check_env('web_env', policy=policy, family='miniwob', prompt_style='compact').ok
