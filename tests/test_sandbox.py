"""Hostile programs against the sandbox (SANDBOX.md, "Cases it must get right").

Every case checks its verdict and, where a program tries to leave something behind, that nothing is left: no process
(found by a marker string in /proc/*/cmdline), no file outside its directory. Cheap cases run at every isolation level
this machine offers; cases that are unsafe without isolation (kill(-1), fork bombs, writes outside the run dir) are
skipped at `rlimits-only`, which does not claim to contain them.
"""
import asyncio, os, shutil, socket, subprocess, sys, time, uuid
import pytest
from pettingllms_nb import sandbox as sbx
from pettingllms_nb.sandbox import (LEVELS, RunResult, Sandbox, SandboxWorker, isolation_level, outputs_match, run_code)

BEST = isolation_level()
ROOT = os.geteuid() == 0
SYS_PY = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else None


def _available_levels():
    "(level, python) pairs that work here; the uid fallback may need an interpreter the slot uid can reach."
    out = []
    if BEST == 'bwrap': out.append(('bwrap', None))
    if ROOT:
        for py in (None, SYS_PY):
            if run_code('import json\nprint(1)', expected='1', isolation='rlimits+uid', python=py).verdict == 'AC':
                out.append(('rlimits+uid', py)); break
    out.append(('rlimits-only', None))
    return out

AVAILABLE = _available_levels()
IDS = [l for l, _ in AVAILABLE]
CONTAINED = [(l, p) for l, p in AVAILABLE if l != 'rlimits-only']
CONTAINED_IDS = [l for l, _ in CONTAINED]


@pytest.fixture(params=AVAILABLE, ids=IDS)
def run(request):
    "run_code at one isolation level."
    level, py = request.param
    return lambda code, *a, **kw: run_code(code, *a, isolation=level, python=py, **kw)

@pytest.fixture(params=CONTAINED or [None], ids=CONTAINED_IDS or ['none'])
def crun(request):
    "run_code at a level that contains hostile programs (skipped where only rlimits-only exists)."
    if request.param is None: pytest.skip("no containing isolation level on this machine (install bubblewrap)")
    level, py = request.param
    return lambda code, *a, **kw: run_code(code, *a, isolation=level, python=py, **kw)


def leftovers(marker:str) -> list:
    "Pids whose command line contains `marker`."
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid(): continue
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f: cmd = f.read()
        except OSError: continue
        if marker.encode() in cmd: found.append(int(pid))
    return found

def marker() -> str: return f"PLLM_MARK_{uuid.uuid4().hex}"

def spawn_marked(mark:str, body:str) -> str:
    "Python source (for the sandboxed program) that execs a fresh interpreter running `body`, tagged with `mark`."
    return f"os.execv(sys.executable, [sys.executable, '-S', '-c', {body!r}, {mark!r}])"


# ---- correct and wrong answers
def test_ac_wa(run):
    add = "a, b = map(int, input().split())\nprint(a + b)"
    r = run(add, "2 3\n", "5")
    assert r.verdict == 'AC' and r.passed and r.exit_code == 0 and r.isolation in LEVELS
    assert run(add, "2 3\n", "6").verdict == 'WA'
    assert run("print('x')").verdict == 'OK'

def test_whitespace_rule(run):
    assert run("print('1 2  ', end='\\r\\n'); print('3\\t'); print(); print()", expected="1 2\n3").verdict == 'AC'
    assert run("print(' 1 2')", expected="1 2").verdict == 'WA'
    assert outputs_match("a\r\nb  \n\n", "a\nb") and not outputs_match("a\n\nb", "a\nb")

def test_exit_early_is_not_a_pass(run):
    assert run("import sys; sys.exit(0)\nprint(5)", expected="5").verdict == 'WA'
    assert run("import os; os._exit(0)\nprint(5)", expected="5").verdict == 'WA'

def test_program_end_like_interpreter_shutdown(run):
    "Threads joined, atexit run, and files left open at module level flushed, as a normal exit would."
    assert run("out = open(1, 'w')\nout.write('5\\n')", expected="5").verdict == 'AC'
    assert run("import os\nf = os.fdopen(1, 'w', buffering=1 << 16)\nf.write('5')", expected="5").verdict == 'AC'
    src = "import atexit, threading, time\natexit.register(print, 'bye')\nthreading.Thread(target=lambda: (time.sleep(0.1), print('t'))).start()"
    assert run(src, expected="t\nbye").verdict == 'AC'
    assert run("import sys; sys.exit('message')").stderr.strip() == 'message'

def test_always_equal_object(run):
    src = "class E:\n  __eq__ = lambda s, o: True\n  __str__ = lambda s: 'anything'\nprint(E())"
    assert run(src, expected="5").verdict == 'WA'


# ---- runtime errors
def test_runtime_errors(run):
    r = run("raise ValueError('boom')")
    assert r.verdict == 'RE' and 'ValueError: boom' in r.stderr and r.exit_code == 1
    assert run("print(5)\nraise SystemExit(3)", expected="5").verdict == 'RE'
    r = run("print(5)\n1/0", expected="5")
    assert r.verdict == 'RE' and 'ZeroDivisionError' in r.message
    assert run("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").signal == 11

def test_input_on_empty_stdin_is_re_not_hang(run):
    t = time.monotonic()
    r = run("input()", time_limit=1)
    assert r.verdict == 'RE' and 'EOFError' in r.stderr and time.monotonic() - t < 3


# ---- compile errors
def test_compile_errors(run):
    assert run("def f(:\n  pass").verdict == 'CE'
    r = run("x = 1\n" + "  y = 2\n")
    assert r.verdict == 'CE' and 'IndentationError' in r.message
    assert run(b"\xff\xfe\x00\x01garbage\x80\x81").verdict == 'CE'            # binary garbage, NULs
    assert run(b"print('\xe9')").verdict == 'CE'                               # invalid UTF-8
    assert run("print('\ud800')").verdict == 'CE'                              # a lone surrogate
    latin = "# -*- coding: latin-1 -*-\nprint('caf\xe9')".encode('latin-1')     # a declared encoding is honoured
    assert run(latin, expected="caf\xe9").verdict == 'AC'

def test_huge_source_is_ce_without_running():
    t = time.monotonic()
    r = run_code("x = 1\n" * ((10 << 20) // 6 + 1))   # ~10 MB
    assert r.verdict == 'CE' and 'max_source' in r.message and time.monotonic() - t < 1


# ---- time
def test_infinite_loop_tle(run):
    r = run("while True: pass", time_limit=0.5)
    assert r.verdict == 'TLE' and r.cpu_time >= 0.5

def test_sleep_tle_by_wall_backstop(crun):
    t = time.monotonic()
    r = crun("import time; time.sleep(1000)", time_limit=0.5)
    assert r.verdict == 'TLE' and 'wall' in r.message and time.monotonic() - t < 5

def test_signal_ignoring_loop_tle():
    src = ("import signal\n"
           "for s in (signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP):\n"
           "    signal.signal(s, signal.SIG_IGN)\n"
           "while True:\n"
           "    try:\n"
           "        while True: pass\n"
           "    except BaseException: pass\n")
    r = run_code(src, time_limit=0.5)
    assert r.verdict == 'TLE'

def test_regex_backtracking_tle():
    assert run_code("import re; re.match(r'(a+)+$', 'a' * 40 + 'b')", time_limit=0.5).verdict == 'TLE'

def test_bigint_power_contained():
    assert run_code("x = 10 ** (10 ** 10)", time_limit=0.5).verdict in ('TLE', 'MLE')

def test_correct_cpu_heavy_programs_under_load_are_accepted():
    "Three CPU-bound programs per core at once: each takes more wall time than its limit, yet is judged by CPU time."
    src = "x = 0\nfor i in range(2_000_000): x += i\nprint(x)"
    want = str(sum(range(2_000_000)))
    n = 3 * sbx._cores()
    with Sandbox(workers=n, time_limit=0.5) as sb:
        rs = sb.run_many([(src, '', want) for _ in range(n)])
    assert [r.verdict for r in rs] == ['AC'] * n, [str(r) for r in rs]
    assert max(r.wall_time for r in rs) > max(r.cpu_time for r in rs)   # the cores really were shared


# ---- memory
def test_memory_limits(run):
    r = run("x = bytearray(1 << 30)", memory_limit=128)
    assert r.verdict == 'MLE', r
    r = run("l = []\nwhile True: l.append(' ' * 10000)", memory_limit=128, time_limit=2)
    assert r.verdict == 'MLE', r

def test_thread_bomb_contained(crun):
    src = "import threading, time\nwhile True: threading.Thread(target=time.sleep, args=(100,), daemon=True).start()"
    assert crun(src, time_limit=0.5).verdict in ('RE', 'MLE', 'TLE')


# ---- output
def test_output_limits(run):
    assert run("while True: print('x' * 1000)", output_limit=1 << 20).verdict == 'OLE'
    assert run("import sys\nwhile True: sys.stderr.write('y' * 1000)", output_limit=1 << 20).verdict == 'OLE'
    r = run("print('z' * 200_000_000)", output_limit=1 << 20, memory_limit=1024)
    assert r.verdict == 'OLE' and len(r.stdout) <= 1 << 20

def test_huge_file_limited(run):
    r = run("open('big', 'wb').write(b'0' * (50 << 20))", output_limit=1 << 20, memory_limit=512)
    assert r.verdict == 'OLE'


# ---- processes
def test_child_left_sleeping_is_killed(run):
    m = marker()
    src = f"import os, sys\nprint(5)\nsys.stdout.flush()\nif os.fork() == 0:\n    {spawn_marked(m, 'import time; time.sleep(1000)')}\n"
    r = run(src, expected="5")
    assert r.verdict == 'AC', r
    assert leftovers(m) == []

@pytest.mark.parametrize('escape', ['os.setsid()', 'os.setpgrp()'])
def test_setsid_escapee_is_killed(run, escape):
    m = marker()
    src = (f"import os, sys\nif os.fork() == 0:\n    {escape}\n    if os.fork() == 0:\n"
           f"        {spawn_marked(m, 'while True: pass')}\n    os._exit(0)\nprint(5)")
    r = run(src, expected="5")
    assert r.verdict == 'AC', r
    assert leftovers(m) == []

def test_setpgrp_then_spin_is_tle_and_killed(crun):
    m = marker()
    src = f"import os, sys\nos.setpgrp()\nif os.fork() == 0:\n    {spawn_marked(m, 'while True: pass')}\nwhile True: pass"
    assert crun(src, time_limit=0.5).verdict == 'TLE'
    assert leftovers(m) == []

def test_fork_bomb_contained(crun):
    src = "import os\nwhile True:\n    try: os.fork()\n    except OSError: pass"
    t = time.monotonic()
    r = crun(src, time_limit=0.5)
    assert r.verdict in ('TLE', 'RE'), r
    assert time.monotonic() - t < 10
    assert run_code("print(1)", expected="1").verdict == 'AC'   # the machine still answers

def test_kill_everything_only_kills_the_run(crun):
    sentinel = subprocess.Popen(['sleep', '30'])
    try:
        for src in ("import os, signal; os.kill(-1, signal.SIGKILL); print(5)",
                    "import os, signal; os.kill(os.getppid(), signal.SIGKILL); print(5)",
                    f"import os, signal; os.kill({os.getpid()}, signal.SIGKILL); print(5)",
                    f"import os, signal; os.kill({sentinel.pid}, signal.SIGKILL); print(5)"):
            assert crun(src, expected="5").verdict in ('AC', 'RE')
        assert sentinel.poll() is None   # the trainer's other processes are alive (and so is this one)
    finally: sentinel.kill(); sentinel.wait()


# ---- environment, files, network
def test_secrets_not_visible(run, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'secret-sk-12345')
    r = run("import os\nprint(dict(os.environ))\nprint(os.environ.get('CUDA_VISIBLE_DEVICES') == '')")
    assert r.verdict == 'OK' and 'secret-sk-12345' not in r.stdout and 'OPENAI' not in r.stdout
    assert r.stdout.strip().endswith('True')

def test_only_standard_fds(run):
    r = run("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))")
    assert r.stdout.strip() in ('[0, 1, 2]', '[0, 1, 2, 3]')   # 3 is the listdir handle itself

def test_run_dir_removed_even_if_chmod_0(run):
    before = set(os.listdir(sbx._base_dir()))
    src = "import os\nos.makedirs('a/b')\nopen('a/b/f', 'w').write('x')\nos.chmod('a/b', 0)\nos.chmod('a', 0)\nprint(os.getcwd())"
    r = run(src)
    assert r.verdict == 'OK', r
    assert set(os.listdir(sbx._base_dir())) - before == set()
    assert os.stat(sbx._base_dir()).st_mode & 0o777 == 0o711   # cleanup never loosens or tightens the base dir

def test_writes_outside_run_dir(crun):
    here = os.path.dirname(os.path.abspath(__file__))
    m = marker()
    targets = [f"/tmp/{m}", os.path.join(here, m), f"/var/tmp/{m}", f"/dev/shm/{m}"]
    src = ("import os\n"
           f"for p in {targets!r} + [os.path.join(os.path.expanduser('~'), '..', '{m}')]:\n"
           "    try: open(p, 'w').write('x'); print('wrote', p)\n"
           "    except OSError as e: print('denied', p, type(e).__name__)\n")
    r = crun(src)
    assert r.verdict == 'OK', r
    assert f"denied {os.path.join(here, m)}" in r.stdout       # the repository is never writable
    for t in targets: assert not os.path.exists(t), t

@pytest.mark.skipif(BEST != 'bwrap', reason="reading and network isolation need bubblewrap")
def test_bwrap_cannot_read_trainer_files_or_network():
    here = os.path.abspath(__file__)
    r = run_code(f"import os\ntry: open({here!r}).read(); print('read')\nexcept OSError: print('denied')\n"
                 f"print(os.path.exists('/root/.ssh'), os.path.exists({os.path.dirname(here)!r}))")
    assert r.stdout.split() == ['denied', 'False', 'False']
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(1)
    try:
        port = srv.getsockname()[1]
        r = run_code(f"import socket\ntry: socket.create_connection(('127.0.0.1', {port}), timeout=1); print('connected')\n"
                     "except OSError as e: print('denied')")
        assert r.stdout.strip() == 'denied'
    finally: srv.close()
    r = run_code("import glob; print(glob.glob('/dev/nvidia*'))")
    assert r.stdout.strip() == '[]'

@pytest.mark.skipif(BEST != 'bwrap', reason="mounts need bubblewrap")
def test_bwrap_expose_mounts_read_only(tmp_path):
    data = tmp_path / 'data.txt'; data.write_text('payload')
    tmp_path.chmod(0o755); data.chmod(0o644)   # readable by the run's uid: exposing keeps file permissions
    src = f"print(open({str(data)!r}).read())\ntry: open({str(data)!r}, 'w')\nexcept OSError: print('read-only')"
    assert run_code(src, expose=[str(tmp_path)]).stdout.split() == ['payload', 'read-only']
    assert run_code(src).verdict == 'RE'   # not exposed: not there

@pytest.mark.skipif(BEST != 'bwrap', reason="the tmpfs cap needs bubblewrap")
def test_bwrap_many_small_files_and_disk_cap():
    r = run_code("import os\nfor i in range(20000): open(f'f{i}', 'w').write('x')\nprint(len(os.listdir('.')))",
                 expected="20001", time_limit=2)
    assert r.verdict == 'AC', r
    r = run_code("for i in range(100): open(f'f{i}', 'wb').write(b'0' * (1 << 20))", disk_limit=8 << 20)
    assert r.verdict == 'RE' and 'No space left' in r.stderr


# ---- the sandbox's own failures are IE, never an exception or a silent zero
def test_infrastructure_error(run):
    r = run_code("print(1)", expected="1", python='/nonexistent/python3', isolation=IDS[0])
    assert r.verdict == 'IE' and r.message and not r.passed

def test_unknown_isolation_level():
    with pytest.raises(ValueError, match='not one of'): run_code("print(1)", isolation='chroot')


# ---- the pool and the worker
def test_sandbox_pool_and_worker():
    with Sandbox(workers=2, time_limit=1.0) as sb:
        rs = sb.run_many([("print(1)", "", "1"), dict(code="print(2)", expected="3"), ("1/0",)])
        assert [r.verdict for r in rs] == ['AC', 'WA', 'RE']
        assert sb.canary()
        async def many(): return await asyncio.gather(*[sb.arun(f"print({i})", expected=str(i)) for i in range(4)])
        assert [r.verdict for r in asyncio.run(many())] == ['AC'] * 4
        assert sb.counts['AC'] >= 5
    from pettingllms_nb.core.registry import make_worker
    w = make_worker('sandbox', workers=1)
    assert isinstance(w, SandboxWorker)
    assert w.run_sync("print(input())", "hi", "hi").verdict == 'AC'
    assert asyncio.run(w.run("print(2)", expected="2")).passed
    w.close()

def test_trainer_alive():
    assert run_code("print('still here')", expected="still here").verdict == 'AC'
