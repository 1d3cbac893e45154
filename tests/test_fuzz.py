"""Fuzz: nothing a model writes can crash, stall or silently zero a rollout (issue 11).

1. The linear parsers find exactly what the old (quadratic) definitions found, on every small input hypothesis draws
   from the characters those parsers care about.
2. A catalogue of the worst completions (garbage, >= 1 MB, NUL, lone surrogates, deep nesting, backtick floods,
   unclosed fences, lists quoted in prose) and of hostile programs (children left running, a setsid daemon, kill(-1),
   kill of the parent, memory, output floods, files written outside the run dir, outputs that attack the action
   parsers) is played as a turn by every registered agent of every registered environment. Garbage must come out as
   a recorded format error (or infra error); a program that ran must carry a typed verdict; nothing solves the task;
   rewards stay finite; `parse` raises nothing but `FormatError`. The same catalogue goes through the agents of every
   preset, with the preset's env and agent kwargs (other games, the compact prompt style, datasets).
3. Whole rollouts, independent and tree, with policies that answer what hypothesis draws (the catalogue, random
   text with surrogates and control characters, near-miss answers, hostile programs), each within a time bound;
   the trace saves and loads back.
Environments and agents come from the registry (and presets from the configs): a new environment joins by registering.
One whose extra is missing is skipped with the reason; one that cannot be built offline with its default kwargs (or a
preset's) is skipped saying so.
After every test: no process carrying this session's marker is alive, no slot uid runs a process while its slot is
free, no file owned by a slot uid or named with the marker appeared, no temp file or dir this process made (with
`tempfile.mkdtemp`/`mkstemp`: run dirs, TemporaryDirectory) is left, and this process's sentinel child is alive.
The `slow` run (`pytest -m slow tests/test_fuzz.py`) draws many more examples and adds programs that run to their
time limit (an infinite loop, a sleep, a fork bomb).
"""
import json, math, os, re, subprocess, tempfile, threading, uuid

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pettingllms_nb import sandbox as sbx
from leaks import SLOT_UIDS, WATCHED, entries, marked_processes, sentinel, settled, slot_processes  # noqa: F401 (sentinel: a fixture)
from pettingllms_nb.core import parsing as P
from pettingllms_nb.core.agent import take_turn
from pettingllms_nb.core.registry import make_agent, make_env, registry
from pettingllms_nb.engine.policies import ScriptedPolicy
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.engine.trace import Trace

TURN_SECONDS = 120      # one agent turn, hostile programs included (the sandbox's limits end them far sooner)
ROLLOUT_SECONDS = 240   # one whole rollout; a quadratic parser on a 100 kB window takes minutes
FAST = settings(max_examples=4, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))
DEEP = settings(max_examples=60, derandomize=True, database=None, deadline=None,
                suppress_health_check=list(HealthCheck))


# ---- 1. the linear parsers agree with the old definitions ------------------------------------------------------
_OLD_FENCE = re.compile(r"```[ \t]*([\w+-]*)[^\n]*\n(.*?)```", re.S)

def old_last_bracketed(s):
    "The old definition: try each `]` from the right, scanning left from it (quadratic when none closes)."
    end = s.rfind(']')
    while end != -1:
        depth = 0
        for i in range(end, -1, -1):
            depth += {']': 1, '[': -1}.get(s[i], 0)
            if depth == 0: return s[i:end + 1]
        end = s.rfind(']', 0, end)
    return None

def old_all_boxed(s):
    "The old definition: count braces character by character after each `\\boxed{`."
    out, i, pat = [], 0, re.compile(r"\\(?:boxed|fbox)\s*\{")
    while (m := pat.search(s, i)):
        depth, j = 1, m.end()
        while j < len(s) and depth:
            depth += {'{': 1, '}': -1}.get(s[j], 0)
            j += 1
        if depth: break
        out.append(s[m.end():j - 1].strip())
        i = j
    return out

PIECES = ['`', '```', '``', '[', ']', '{', '}', '(', ')', '\\boxed{', '\\fbox {', '\\boxed ', ' ', '\t', '\n',
          'py', 'python', 'x', '####', '"', "'", ',', '1', 'U']
SMALL = st.lists(st.sampled_from(PIECES), max_size=30).map(''.join)

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(SMALL)
def test_fenced_blocks_find_what_the_regex_found(s):
    assert P.fenced_blocks(s) == _OLD_FENCE.findall(s)

_OLD_TEST_BLOCK = re.compile(r"```[ \t]*(input|output|in|out|stdin|stdout)[^\n]*\n(.*?)```", re.S | re.I)
TEST_PIECES = st.lists(st.sampled_from(PIECES + ['input', 'Output', 'in', 'stdout', 'inputs', 'out\n']), max_size=30)

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(TEST_PIECES.map(''.join))
def test_test_blocks_are_the_regex_blocks(s):
    from pettingllms_nb.envs.code.judge import _TEST_LABEL
    assert P.fenced_blocks(s, _TEST_LABEL) == _OLD_TEST_BLOCK.findall(s)

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(SMALL)
def test_last_bracketed_is_the_old_span(s):
    assert P._last_bracketed(s) == old_last_bracketed(s)

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(SMALL)
def test_all_boxed_finds_the_old_boxes(s):
    assert P.all_boxed(s) == old_all_boxed(s)


@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(st.text(st.sampled_from('1.a x'), max_size=30))
def test_the_decimal_rule_finds_what_the_old_pattern_found(s):
    from pettingllms_nb.envs.math.verify_worker import _DECIMAL
    assert bool(_DECIMAL.search(s)) == bool(re.search(r"\d*\.\d+|\d+\.(?!\d)", s))


def old_web_args(s, i):
    "web_env's argument reader before it read regex runs (character by character, any number of arguments)."
    args, n = [], len(s)
    while True:
        while i < n and s[i] in ' \t\r\n': i += 1
        if i < n and s[i] == ')' and not args: return args, i + 1
        if i < n and s[i] in '"\'':
            qc, j, buf = s[i], i + 1, []
            while j < n and s[j] != qc:
                if s[j] == '\\' and j + 1 < n:
                    buf.append({'n': '\n', 't': '\t'}.get(s[j + 1], s[j + 1]))
                    j += 2
                else:
                    buf.append(s[j])
                    j += 1
            if j >= n: raise P.FormatError("an unterminated quoted string")
            arg, i = ''.join(buf), j + 1
        else:
            j = i
            while j < n and s[j] not in ',)\n': j += 1
            arg, i = s[i:j].strip(), j
        args.append(arg)
        while i < n and s[i] in ' \t': i += 1
        if i < n and s[i] == ',': i += 1
        elif i < n and s[i] == ')': return args, i + 1
        else: raise P.FormatError("an action call must end with ')'")

@settings(max_examples=150, derandomize=True, database=None, deadline=None)
@given(st.text(st.sampled_from(' \t\n,()"\'\\ntx1'), max_size=30))
def test_web_arguments_are_the_old_arguments(s):
    "The same arguments as before, up to `MAX_ARGS` (more are not read: no action takes them)."
    web = pytest.importorskip('pettingllms_nb.envs.web.observation')
    try: old = old_web_args(s, 0)
    except P.FormatError as e: old = e
    try: new = web._args(s, 0)
    except P.FormatError as e: new = e
    if isinstance(old, Exception):
        assert (isinstance(new, Exception) and str(new) == str(old)) or len(new[0]) == web.MAX_ARGS, (old, new)
    elif len(old[0]) < web.MAX_ARGS: assert new == old
    else: assert new[0] == old[0][:web.MAX_ARGS]


# ---- the catalogue ----------------------------------------------------------------------------------------------
MARK = f"pllmfz{uuid.uuid4().hex[:9]}"    # 15 characters: all of it fits /proc/PID/comm
NESTED = '[' * 1500 + ']' * 1500
MARKERS = ['####', '**Actions List**:', 'Answer:', '\\boxed{']   # answer markers of the environments

GARBAGE = {
    'empty': '', 'whitespace': ' \n\t' * 1000, 'refusal': 'I refuse.', 'html': "<script>alert('x')</script>",
    'NUL': '\x00' * 100, 'NUL answer': '#### ["\x00"]', 'boxed NUL': '\\boxed{\x00}',
    'boxed surrogate': '\\boxed{\ud800}',
    'lone surrogates': '\ud800\udfff\udc00 ' * 10 + '#### ["\udc80"]', 'control characters': '\x1b[2J\x07\x08\x7f' * 50,
    'huge prose': 'lorem ipsum ' * 90_000, 'huge line': 'x' * 1_048_577, 'huge digits': '#### [' + '9' * 5000 + ']',
    'backticks': '`' * 1_000_000, 'spaces after fence': '```' + ' ' * 1_000_000,
    'unclosed fence': '```python\n' + 'x = 1\n' * 200_000, 'fences, no newline': '```a' * 250_000,
    'closing brackets': ']' * 1_000_000, 'opening brackets': '[' * 1_000_000, 'one [ then ]s': '[' + ']' * 999_999,
    'nested list': '#### ' + NESTED, 'nested list, no marker': NESTED,
    'nested dicts': '#### [' + '{"a": ' * 1500 + '1' + '}' * 1500 + ']',
    'unary chain': '#### [' + '-' * 19_000 + '1]', 'marker flood': '####' * 250_000,
    'open braces': '\\boxed{' + '{' * 1_000_000, 'box flood': '\\boxed{' * 150_000,
    'list in prose': 'The tool agent proposed ["U", "R", "D"], and it looks right to me.',
    'grid in prose': 'One option is [[1,2,3,4],[3,4,1,2],[2,1,4,3],[4,3,2,1]], I think.',
    'json object': '#### {"not": "a list"}', 'python, not fenced': 'import os\nos.system("echo hi")',
    'deep parens program': '```python\nprint(' + '(' * 5000 + ')' * 5000 + ')\n```',
    'huge program': '```python\n' + 'x = 1\n' * 100_000 + '```', 'empty program': '```python\n\n```',
    'markers, nested': ' '.join(m + ' ' + NESTED for m in MARKERS),
    'None': None, 'not a string': 42,
}

def _tag(body:str) -> str:
    "A program that names its process (and every child) after `MARK`, then runs `body`."
    return (f"import ctypes, os, sys, time\nctypes.CDLL(None).prctl(15, {MARK.encode()!r}, 0, 0, 0)\n{body}")

def _fenced(body:str) -> str: return f"I wrote a program.\n```python\n{_tag(body)}\n```"

_ACTION = 'print("#### [\\"U\\"]")\nprint("**Actions List**: [\\"U\\"]")\nprint(1)'   # looks like an answer
HOSTILE = {   # cheap programs: each ends (or is ended) within a second or two
    'children left running': f"for _ in range(20):\n    if os.fork() == 0:\n        time.sleep(1000)\n{_ACTION}",
    'setsid daemon': f"if os.fork() == 0:\n    os.setsid()\n    time.sleep(1000)\n{_ACTION}",
    'kill -1': f"{_ACTION}\nsys.stdout.flush()\nos.kill(-1, 9)",
    'kill parent': f"{_ACTION}\nsys.stdout.flush()\nos.kill(os.getppid(), 9)",
    'memory': "x = bytearray(64 * 1024**3)",
    'output flood': "while True:\n    sys.stdout.write('x' * 65536)",
    'writes outside': (f"for p in ('/tmp/{MARK}', os.path.expanduser('~/{MARK}'), '../{MARK}', '{MARK}'):\n"
                       "    try: open(p, 'w').write('x')\n    except OSError: pass\nos.chmod('.', 0)\n" + _ACTION),
    'nested list after markers': "n = '[' * 1500 + ']' * 1500\n" + '\n'.join(f"print({m!r}, n)" for m in MARKERS),
    'bracket flood output': "print('#### ' + ']' * 10**6)\nprint('**Actions List**: ' + '[' * 10**6)",
    'backtick flood output': "print('`' * 10**6)\nprint('\\\\boxed{' * 10**5)",
    'undecodable output': "sys.stdout.buffer.write(b'\\x00\\xff\\xfe\\xed#### [\\x00]' * 1000)",
}
SLOW_HOSTILE = {   # programs that run to their time limit
    'infinite loop': "while True: pass", 'sleep': "time.sleep(1000)",
    'fork bomb': "while True:\n    try: os.fork()\n    except OSError: pass",
}
DANGEROUS = {'children left running', 'setsid daemon', 'kill -1', 'kill parent', 'writes outside', 'fork bomb'}
CONTAINED = sbx.isolation_level() != 'rlimits-only'   # rlimits-only does not claim to contain these (SANDBOX.md)

def hostile(names) -> dict:
    return {n: _fenced(HOSTILE.get(n) or SLOW_HOSTILE[n]) for n in names if CONTAINED or n not in DANGEROUS}


# ---- what must hold after every test: nothing left behind --------------------------------------------------------
WATCHED_RUNS = WATCHED + [sbx._base_dir()]   # and the sandbox's run dirs, where a marked file may be left

def stray_files(before:dict) -> list:
    "New entries of the watched dirs owned by a slot uid or named with `MARK`, and marked files in run dirs."
    found = []
    for path, e in entries(WATCHED_RUNS).items():
        try: uid = e.stat(follow_symlinks=False).st_uid
        except OSError: continue
        if path not in before and (uid in SLOT_UIDS or MARK in path): found.append(path)
        if os.path.basename(path).startswith('run-') and os.path.dirname(path) == sbx._base_dir():
            try: found += [os.path.join(path, n) for n in os.listdir(path) if MARK in n]
            except OSError: pass
    return found

def _settled(check) -> list: return settled(check, timeout=10.0, poll=0.2)   # hostile programs take longer to go

@pytest.fixture(autouse=True)
def nothing_left_behind(sentinel, monkeypatch):
    "After each test: no marked or slot-uid process, no stray file, no temp file or dir this process made and left."
    made, real_mkdtemp, real_mkstemp = [], tempfile.mkdtemp, tempfile.mkstemp
    def mkdtemp(*a, **kw):
        made.append(real_mkdtemp(*a, **kw))
        return made[-1]
    def mkstemp(*a, **kw):
        fd, path = real_mkstemp(*a, **kw)
        made.append(path)
        return fd, path
    monkeypatch.setattr(tempfile, 'mkdtemp', mkdtemp)   # TemporaryDirectory and the sandbox's run dirs use these
    monkeypatch.setattr(tempfile, 'mkstemp', mkstemp)
    before = entries(WATCHED_RUNS)
    yield
    assert _settled(lambda: [p for p in made if os.path.exists(p)]) == [], "a temp file or dir was left behind"
    assert _settled(lambda: marked_processes(MARK)) == [], "a hostile program's process survived its run"
    assert _settled(slot_processes) == [], "a slot uid still runs processes after its run ended"
    assert _settled(lambda: stray_files(before)) == [], "a run left files outside its directory"
    assert sentinel.poll() is None, "the trainer's sentinel process died"


def test_the_leftover_checks_can_fail():
    "A marked process and a marked file outside any sandbox are seen by the checks that guard every test."
    prog = (f"import ctypes, time; ctypes.CDLL(None).prctl(15, {MARK.encode()!r}, 0, 0, 0); "
            "print(flush=True); time.sleep(60)")
    p = subprocess.Popen(['python3', '-c', prog], stdout=subprocess.PIPE)
    before, path = entries(WATCHED_RUNS), f"/tmp/{MARK}-probe"
    try:
        p.stdout.readline()   # the name is set
        assert p.pid in marked_processes(MARK)
        open(path, 'w').close()
        assert path in stray_files(before)
    finally:
        p.kill()
        p.wait()
        if os.path.exists(path): os.remove(path)
    assert p.pid not in marked_processes(MARK)


# ---- environments and agents, from the registry -------------------------------------------------------------------
def _unavailable(e) -> str:
    fix = f" (pip install 'pettingllms-nb[{e.extra}]')" if e.extra else ''
    return f"{e.kind} {e.name} unavailable: {e.reason}{fix}"

def env_params() -> list:
    registry.load()
    return [pytest.param(n, id=n, marks=() if e.available else pytest.mark.skip(reason=_unavailable(e)))
            for n, e in sorted(registry.entries['env'].items())]

def agent_params() -> list:
    out = []
    for p in env_params():
        env = p.values[0]
        if p.marks: out.append(pytest.param(env, None, id=f"{env}", marks=p.marks))
        else: out += [pytest.param(env, role, id=f"{env}/{role}") for role in registry.agents_for(env)]
    return out

_BASES = {}
def fresh_env(name:str, **kwargs):
    """A fresh env of `name` reset at seed 0: a clone of one built once with `make_env(name, **kwargs)` (a simulator's
    reset can take a second); skipped, saying why, when it cannot be built offline (defaults: small, no data)."""
    key = (name, json.dumps(kwargs, sort_keys=True, default=str))
    if key not in _BASES:
        try:
            env = make_env(name, **kwargs)
            env.reset(0)
            _BASES[key] = env
        except Exception as e: _BASES[key] = f"{type(e).__name__}: {e}"
    if isinstance(_BASES[key], str):
        pytest.skip(f"{name}{f' with {kwargs}' if kwargs else ''} cannot be built offline with "
                    f"{'these' if kwargs else 'its default'} kwargs: {_BASES[key]}")
    return _BASES[key].clone()

def _close(env):
    "Release what an env holds (a browser page, a simulator) if it has a `close`."
    close = getattr(env, 'close', None)
    if callable(close): close()

@pytest.fixture(scope='module', autouse=True)
def close_bases():
    yield
    for env in _BASES.values():
        if not isinstance(env, str): _close(env)

def turn_orders(name:str) -> list:
    """The env's default turn order, then each registered agent of it that is not in it, alone (single-agent baselines);
    a relay (its agents are the remote's) is played with its relayed roles."""
    env = make_env(name)
    if hasattr(env, 'relayed_roles'): return [tuple(env.relayed_roles())]   # any `remote.<role>` may play a relay, but only its remote's can
    default = tuple(env.default_turn_order)
    solo = getattr(env, 'single_agent_roles', None)   # an env may say which roles play alone (a game's players: none)
    return [default] + [(r,) for r in (registry.agents_for(name) if solo is None else solo) if r not in default]

def bounded(fn, seconds:float, what:str):
    "`fn()`, failing the test if it has not returned after `seconds` (a daemon thread: a stall cannot hang us)."
    box = {}
    def target():
        try: box['value'] = fn()
        except BaseException as e: box['error'] = e
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive(): pytest.fail(f"{what} did not finish within {seconds} s (a stall)")
    if 'error' in box: raise box['error']
    return box['value']

def verdicts_in(d) -> list:
    "Every value recorded under a key naming a verdict, anywhere in a state dict."
    out = []
    def walk(x, key=''):
        if isinstance(x, dict):
            for k, v in x.items(): walk(v, str(k))
        elif isinstance(x, (list, tuple)):
            for v in x: walk(v, key)
        elif 'verdict' in key.lower() and x is not None: out.append(x)
    walk(d)
    return out

def finite(x) -> bool: return isinstance(x, (int, float)) and math.isfinite(x)


# ---- 2. the catalogue through every agent --------------------------------------------------------------------------
def play(name, role, response, env_kwargs=None, agent_kwargs=None):
    "One turn of `role` on a fresh env with `response`; checks what holds for any response; returns (agent, verdicts)."
    env = fresh_env(name, **(env_kwargs or {}))
    agent = make_agent(role, **(agent_kwargs or {}))
    agent.update_from_env(env, 0)
    before = verdicts_in(env.state.to_dict())
    try: agent.parse(response)
    except P.FormatError: pass                      # the only exception a parser may raise
    reward = bounded(lambda: take_turn(agent, env, response), TURN_SECONDS, f"{name}/{role} turn")
    label = f"{name}/{role} on {str(response)[:60]!r}"
    assert finite(reward) and all(finite(v) for v in agent.reward_terms.values()), (label, reward, agent.reward_terms)
    assert not env.success, f"{label}: solved the task"
    after = verdicts_in(env.state.to_dict())
    assert all(v in sbx.VERDICTS for v in after), f"{label}: untyped verdicts {set(after) - set(sbx.VERDICTS)}"
    json.dumps(env.state.to_dict())                 # what a trace records stays serialisable
    _close(env)
    return agent, (after if after != before else [])

@pytest.mark.parametrize('name,role', agent_params())
def test_garbage_is_a_format_error_for_every_agent(name, role):
    for g in GARBAGE.values():
        agent, verdicts = play(name, role, g)   # a program the sandbox refused (CE) has its typed verdict
        assert agent.format_error or agent.infra_error or verdicts, \
            f"{name}/{role}: garbage {str(g)[:60]!r} was accepted as the action {str(agent.current_action)[:80]!r}"

def ran_program(agent) -> bool:
    "Whether the agent took the hostile program itself as its action (the agents that run programs do)."
    return agent.format_error is None and isinstance(agent.current_action, str) and MARK in agent.current_action

@pytest.mark.parametrize('name,role', agent_params())
def test_hostile_programs_get_a_typed_verdict(name, role):
    for what, prog in hostile(HOSTILE).items():
        agent, verdicts = play(name, role, prog)   # an agent that does not run programs just reads text
        assert not ran_program(agent) or agent.infra_error or verdicts, \
            f"{name}/{role}: the {what} program was taken as the action but no verdict or infra error was recorded"

@pytest.mark.slow
@pytest.mark.parametrize('name,role', agent_params())
def test_slow_hostile_programs_get_a_typed_verdict(name, role):
    for what, prog in hostile(SLOW_HOSTILE).items():
        agent, verdicts = play(name, role, prog)
        assert not ran_program(agent) or agent.infra_error or verdicts, f"{name}/{role}: {what}"


OUTPUT_ATTACKS = ['nested list after markers', 'bracket flood output', 'backtick flood output', 'undecodable output']

def preset_params() -> list:
    "One case per distinct (env, env kwargs, role, agent kwargs) that a preset names, with the first preset's name."
    from pettingllms_nb.core.config import list_presets
    from pettingllms_nb.engine.rollout import resolve_spec
    seen, out = set(), []
    for preset in list_presets():
        try: spec = resolve_spec(preset)
        except Exception as e:
            out.append(pytest.param(None, None, {}, {}, id=preset, marks=pytest.mark.skip(
                reason=f"preset {preset} does not load here: {type(e).__name__}: {e}")))
            continue
        for role in spec.turn_order:
            case = (spec.env_name, spec.env_kwargs, role, spec.agent_kwargs.get(role, {}))
            key = json.dumps(case, sort_keys=True, default=str)
            if key not in seen:
                seen.add(key)
                out.append(pytest.param(*case, id=f"{preset}/{role}"))
    return out

SAMPLE = ['NUL answer', 'lone surrogates', 'backticks', 'nested list', 'list in prose', 'markers, nested']

def check_preset(name, env_kwargs, role, agent_kwargs, garbage, attacks):
    kw = dict(env_kwargs=env_kwargs, agent_kwargs=agent_kwargs)
    for g in garbage:
        agent, verdicts = play(name, role, g, **kw)
        assert agent.format_error or agent.infra_error or verdicts, f"{name} {env_kwargs}/{role}: {g!r:.60} accepted"
    for what, prog in hostile(attacks).items():
        agent, verdicts = play(name, role, prog, **kw)
        assert not ran_program(agent) or agent.infra_error or verdicts, f"{name} {env_kwargs}/{role}: {what}"

@pytest.mark.parametrize('name,env_kwargs,role,agent_kwargs', preset_params())
def test_every_preset_takes_the_catalogue(name, env_kwargs, role, agent_kwargs):
    "The agents of each preset with its kwargs (other games, prompt styles, datasets): a sample of the catalogue."
    check_preset(name, env_kwargs, role, agent_kwargs, [GARBAGE[k] for k in SAMPLE], OUTPUT_ATTACKS[:2])

@pytest.mark.slow
@pytest.mark.parametrize('name,env_kwargs,role,agent_kwargs', preset_params())
def test_every_preset_takes_the_whole_catalogue(name, env_kwargs, role, agent_kwargs):
    check_preset(name, env_kwargs, role, agent_kwargs, list(GARBAGE.values()), OUTPUT_ATTACKS)


# ---- 3. whole rollouts with garbage policies -----------------------------------------------------------------------
TEXT = st.text(st.characters(codec=None, categories=None), max_size=200)      # any code point, surrogates included
NEAR_MISS = st.builds(lambda m, body, tail: f"{m} {body}{tail}", st.sampled_from(MARKERS + ['', '```python\n']),
                      st.lists(st.sampled_from(PIECES + ['"U"', '"R"', '0', '9']), max_size=40).map(''.join),
                      st.sampled_from(['', '\n```', '}', ']', '\x00']))
FLOOD = st.builds(lambda unit, k: unit * k, st.sampled_from(['`', ']', '[', '{', '```a', '####', '\\boxed{', '\x00']),
                  st.integers(1, 300_000))
COMPLETION = st.one_of(st.sampled_from([g for g in GARBAGE.values() if isinstance(g, str)]), TEXT, NEAR_MISS, FLOOD,
                       st.sampled_from(list(hostile(['kill -1', 'setsid daemon', 'nested list after markers',
                                                     'output flood', 'memory']).values())))

def garbage_policy(completions:list) -> ScriptedPolicy:
    "A scripted policy answering `completions` in turn, whatever it is asked."
    it = iter(range(10**9))
    return ScriptedPolicy(lambda request: completions[next(it) % len(completions)])

def run_garbage(name, order, mode, completions, tmp_path):
    max_turns = min(2, fresh_env(name).max_turns)
    def play_all():
        return rollout(name, garbage_policy(completions), mode=mode, sample_num=2, seeds=(0,), max_turns=max_turns,
                       turn_order=order)
    tr = bounded(play_all, ROLLOUT_SECONDS, f"{name} {mode} rollout {order}")
    assert len(tr) > 0 and all(e.done for e in tr.episodes)
    for s in tr:
        assert finite(s.reward) and all(finite(v) for v in s.reward_terms.values()), (s.role, s.reward, s.reward_terms)
        assert s.format_error or s.infra_error or s.action is not None, f"{s.role}: no action and no error recorded"
        assert all(v in sbx.VERDICTS for v in verdicts_in(s.state_after)), verdicts_in(s.state_after)
    back = Trace.load(tr.save(tmp_path / f"{mode}.jsonl"))
    assert len(back) == len(tr)

def _rollout_cases() -> list:
    out = []
    for p in env_params():
        out += [pytest.param(p.values[0], mode, id=f"{p.id}-{mode}", marks=p.marks) for mode in ('independent', 'tree')]
    return out

@pytest.mark.parametrize('name,mode', _rollout_cases())
def test_garbage_rollouts_finish(name, mode, tmp_path):
    fresh_env(name)
    @FAST
    @given(st.lists(COMPLETION, min_size=1, max_size=6))
    def check(completions):
        for order in turn_orders(name): run_garbage(name, order, mode, completions, tmp_path)
    check()

@pytest.mark.slow
@pytest.mark.parametrize('name,mode', _rollout_cases())
def test_garbage_rollouts_finish_deep(name, mode, tmp_path):
    fresh_env(name)
    @DEEP
    @given(st.lists(COMPLETION, min_size=1, max_size=12))
    def check(completions):
        for order in turn_orders(name): run_garbage(name, order, mode, completions, tmp_path)
    check()
