"""Hostile programs against the sandbox (SANDBOX.md, "Cases it must get right").

Every case checks its verdict, and the autouse `guard` checks after every test that the run left nothing behind: no
live process of a free slot uid, no process carrying the test's marker (in /proc/*/cmdline, or in /proc/*/comm for
programs that `tag` themselves), no new file owned by a slot uid or named with a marker in /tmp, /var/tmp, /dev/shm
or the repository, and the trainer (this process and a sentinel child of it) alive. The catalogue-to-test map is in
nbs/sandbox/054_run_code.ipynb ("The catalogue, case by case"). Cheap cases run at every isolation level this machine
offers; cases that are unsafe without isolation (kill(-1), fork bombs, writes outside the run dir) are skipped at
`rlimits-only`, which does not claim to contain them.
"""
import asyncio, os, signal, socket, subprocess, sys, threading, time, tracemalloc, uuid
import pytest
from pettingllms_nb import sandbox as sbx
from leaks import (REPO, SLOT_UIDS, comm_of, entries, marked_processes, sentinel, settled,  # noqa: F401 (sentinel: a fixture)
                   slot_processes)
from pettingllms_nb.sandbox import (LEVELS, VERDICTS, RunResult, Sandbox, SandboxWorker, isolation_level, outputs_match,
                                    run_code)

BEST = isolation_level()
ROOT = os.geteuid() == 0
SYS_PY = '/usr/bin/python3' if os.path.exists('/usr/bin/python3') else None


def _available_levels():
    """(level, python, launch) triples that work here; the uid fallback may need an interpreter the slot uid can reach.
    Under bubblewrap the default launch (a fork server, as root) and the per-run launch (`launch='fresh'`) both run."""
    out = []
    if BEST == 'bwrap':
        out.append(('bwrap', None, None))
        if sbx.runner._default_launch('bwrap', sbx.runner._default_python()) == 'server': out.append(('bwrap', None, 'fresh'))
    if ROOT:
        for py in (None, SYS_PY):
            if run_code('import json\nprint(1)', expected='1', isolation='rlimits+uid', python=py).verdict == 'AC':
                out.append(('rlimits+uid', py, None))
                break
    out.append(('rlimits-only', None, None))
    return out

AVAILABLE = _available_levels()
IDS = [l + (f'-{x}' if x else '') for l, _, x in AVAILABLE]
CONTAINED = [t for t in AVAILABLE if t[0] != 'rlimits-only']
CONTAINED_IDS = [i for i, t in zip(IDS, AVAILABLE) if t[0] != 'rlimits-only']


def runner(level:str, py:str|None, launch:str|None=None):
    "run_code at `level` (and `launch`), checking that every result reports the level it ran at."
    def run(code, *a, **kw):
        r = run_code(code, *a, isolation=level, python=py, **({'launch': launch} if launch else {}), **kw)
        assert r.isolation == level and r.verdict in VERDICTS, r
        return r
    run.level = level
    return run

@pytest.fixture(params=AVAILABLE, ids=IDS)
def run(request):
    "run_code at one isolation level."
    return runner(*request.param)

@pytest.fixture(params=CONTAINED or [None], ids=CONTAINED_IDS or ['none'])
def crun(request):
    "run_code at a level that contains hostile programs (skipped where only rlimits-only exists)."
    if request.param is None: pytest.skip("no containing isolation level on this machine (install bubblewrap)")
    return runner(*request.param)


def marker() -> str: return f"PLLM_MARK_{uuid.uuid4().hex}"

leftovers = marked_processes   # this suite's name for it

def spawn_marked(mark:str, body:str) -> str:
    "Python source (for the sandboxed program) that execs a fresh interpreter running `body`, tagged with `mark`."
    return f"os.execv(sys.executable, [sys.executable, '-S', '-c', {body!r}, {mark!r}])"

MARK = marker()   # the current test's marker (renewed by `guard`); `tag` puts it on a program

def tag(src:str) -> str:
    "`src`, first naming its process (and every process it forks) after the current test's marker."
    return f"import ctypes; ctypes.CDLL(None).prctl(15, {comm_of(MARK).encode()!r}, 0, 0, 0)\n" + src   # PR_SET_NAME


# ---- the invariants every case must keep: nothing left behind, the trainer alive (checks in tests/leaks.py)
def stray_files(before:dict) -> list:
    "New entries of the watched dirs that a run made: owned by a slot uid, or named with a marker."
    found = []
    for path, e in entries().items():
        if path in before: continue
        try: uid = e.stat(follow_symlinks=False).st_uid
        except OSError: continue
        if uid in SLOT_UIDS or 'PLLM_MARK' in path or comm_of(MARK) in path: found.append(path)
    return found

@pytest.fixture(autouse=True)
def guard(sentinel):
    "After every test: no process and no file left behind, and the trainer (this process, its sentinel) alive."
    global MARK
    MARK, before = marker(), entries()
    yield
    assert settled(lambda: leftovers(MARK)) == [], "a tagged process of this test survived"
    assert settled(slot_processes) == [], "a slot uid still runs processes after its run ended"
    assert settled(lambda: stray_files(before)) == [], "a run left files outside its directory"
    assert sentinel.poll() is None, "the trainer's sentinel process died"
    os.kill(os.getpid(), 0)


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
    assert run("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)").signal == 11

def test_correct_answer_then_exception_is_re(run):
    "The right output does not excuse a crash after it."
    r = run("print(5)\n1/0", expected="5")
    assert r.verdict == 'RE' and 'ZeroDivisionError' in r.message and r.stdout.strip() == '5'
    assert run("print(5)\nraise SystemExit(3)", expected="5").verdict == 'RE'
    assert run("import sys\nprint(5)\nsys.stdout.flush()\nsys.exit('done')", expected="5").verdict == 'RE'

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

@pytest.mark.parametrize('src', [
    b"print('caf\xe9')",                            # latin-1 bytes without a declaration
    "print('caf\xe9')".encode('utf-16'),            # a UTF-16 BOM and UTF-16 text
    b"\xef\xbb\xbf# coding: latin-1\nprint(1)",     # a UTF-8 BOM that contradicts the declared encoding
    b"print(1)\x00\n",                              # a NUL byte
    b"\x00" * 1000,                                 # nothing but NULs
    "print('\udcff')",                              # a lone (low) surrogate, as str
    b"print('\xed\xa0\x80')",                       # a surrogate encoded as UTF-8 (invalid UTF-8)
    b"# coding: no-such-codec\nprint(1)",           # an unknown declared encoding
], ids=['latin1', 'utf16-bom', 'bom-vs-coding', 'nul', 'all-nul', 'surrogate', 'utf8-surrogate', 'bad-codec'])
def test_odd_encodings_are_a_clean_ce(run, src):
    "Undecodable source is a compile error with a message, not a crash of the launcher (IE) or a runtime error."
    r = run(src)
    assert r.verdict == 'CE' and r.message and r.exit_code == sbx.EXIT_CE, r

def test_utf8_bom_is_valid_python(run):
    "A UTF-8 BOM is legal Python: the program runs (the catalogue's 'clean' means no crash, not 'always CE')."
    assert run(b"\xef\xbb\xbfprint('caf\xc3\xa9')", expected="caf\xe9").verdict == 'AC'

def test_huge_source_is_ce_without_running(run):
    t = time.monotonic()
    r = run("x = 1\n" * ((10 << 20) // 6 + 1))   # ~10 MB
    assert r.verdict == 'CE' and 'max_source' in r.message and time.monotonic() - t < 1
    r = run(b"\xff" * (10 << 20))                 # ~10 MB of undecodable bytes
    assert r.verdict == 'CE' and 'max_source' in r.message


# ---- time
def test_infinite_loop_tle(run):
    r = run(tag("while True: pass"), time_limit=0.5)
    # on a heavily overcommitted machine the wall-clock backstop can fire before the loop has had 0.5 s of CPU
    assert r.verdict == 'TLE' and (r.cpu_time >= 0.5 or 'wall-clock backstop' in r.message)

def test_sleep_tle_by_wall_backstop(crun):
    t = time.monotonic()
    r = crun(tag("import time; time.sleep(1000)"), time_limit=0.5)
    assert r.verdict == 'TLE' and 'wall' in r.message and time.monotonic() - t < 5

def test_signal_ignoring_loop_tle():
    src = ("import signal\n"
           "for s in (signal.SIGTERM, signal.SIGALRM, signal.SIGXCPU, signal.SIGINT, signal.SIGHUP):\n"
           "    signal.signal(s, signal.SIG_IGN)\n"
           "while True:\n"
           "    try:\n"
           "        while True: pass\n"
           "    except BaseException: pass\n")
    r = run_code(tag(src), time_limit=0.5)
    assert r.verdict == 'TLE'

def test_regex_backtracking_tle():
    assert run_code(tag("import re; re.match(r'(a+)+$', 'a' * 40 + 'b')"), time_limit=0.5).verdict == 'TLE'

def test_bigint_power_contained(run):
    assert run(tag("x = 10 ** (10 ** 10)"), time_limit=0.5).verdict in ('TLE', 'MLE')
    if run.level == BEST: assert run(tag("print(7 ** (7 ** 9) % 10)"), time_limit=0.5).verdict in ('TLE', 'MLE')

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

def test_growing_list_mle(run):
    r = run(tag("l = []\nwhile True: l.append(' ' * 10000)"), memory_limit=128, time_limit=2)
    assert r.verdict == 'MLE', r
    r = run(tag("l = []\nwhile True: l.append(len(l))"), memory_limit=128, time_limit=5)   # many small objects
    assert r.verdict == 'MLE', r

def test_thread_bomb_contained(crun):
    src = "import threading, time\nwhile True: threading.Thread(target=time.sleep, args=(100,), daemon=True).start()"
    t = time.monotonic()
    assert crun(tag(src), time_limit=0.5).verdict in ('RE', 'MLE', 'TLE')
    assert time.monotonic() - t < 10
    assert crun("print(1)", expected="1").verdict == 'AC'   # the machine still answers


# ---- output
def test_output_limits(run):
    assert run("while True: print('x' * 1000)", output_limit=1 << 20).verdict == 'OLE'
    assert run("import sys\nwhile True: sys.stderr.write('y' * 1000)", output_limit=1 << 20).verdict == 'OLE'

def test_one_huge_line_is_ole_without_reading_it(run):
    "One 200 MB line: OLE, and the parent reads at most the cap (traced: its peak allocation stays far below 200 MB)."
    tracemalloc.start()
    try: r = run("print('z' * 200_000_000)", output_limit=1 << 20, memory_limit=1024)
    finally: peak = tracemalloc.get_traced_memory()[1]; tracemalloc.stop()
    assert r.verdict == 'OLE' and 0 < len(r.stdout) <= 1 << 20, r
    assert peak < 16 << 20, f"the parent allocated {peak >> 20} MiB while judging"

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
    r = crun(tag(src), time_limit=0.5)
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

def test_kill_parent_only_the_run_dies(crun):
    "`kill(getppid())` reaches at most the run's own supervisor; the run's processes die with it, the trainer lives."
    m = marker()
    src = (f"import os, signal, sys\nif os.fork() == 0:\n    {spawn_marked(m, 'import time; time.sleep(1000)')}\n"
           "import time; time.sleep(0.2)\nos.kill(os.getppid(), signal.SIGKILL)\nprint(5)")
    r = crun(src, expected="5")
    assert r.verdict in ('AC', 'RE'), r   # AC: the parent survives the signal (pid 1 of a namespace); RE: it died
    assert leftovers(m) == []


# ---- environment, files, network
def test_secrets_not_visible(run, monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'secret-sk-12345')
    r = run("import os\nprint(dict(os.environ))\nprint(os.environ.get('CUDA_VISIBLE_DEVICES') == '')\n"
            "print(os.environ['OPENAI_API_KEY'])")
    assert r.verdict == 'RE' and 'KeyError' in r.stderr and r.stdout.count('\n') == 2
    assert 'secret-sk-12345' not in r.stdout + r.stderr and 'OPENAI' not in r.stdout
    assert r.stdout.strip().endswith('True')

def test_secrets_of_other_processes_not_readable(crun):
    "A trainer process holding an API key in its environment: the run cannot read it through /proc."
    secret = f"sk-{uuid.uuid4().hex}"
    holder = subprocess.Popen(['sleep', '60'], env={'PATH': '/usr/bin:/bin', 'OPENAI_API_KEY': secret})
    try:
        src = ("import glob\nfor p in glob.glob('/proc/*/environ'):\n"
               "    try: print(open(p, 'rb').read().decode('latin-1'))\n    except OSError: pass\n")
        r = crun(src)
        assert r.verdict == 'OK' and secret not in r.stdout, r
    finally: holder.kill(); holder.wait()

def test_own_tests_and_conftest_are_wa(run):
    "A program that writes a conftest.py and its own passing tests, and prints what a passing run prints: WA."
    src = ("open('conftest.py', 'w').write('def pytest_collection_modifyitems(items): items.clear()')\n"
           "open('test_solution.py', 'w').write('def test_ok(): assert True')\n"
           "print('1 passed in 0.01s')\nprint('OK')")
    r = run(src, stdin="3\n", expected="9")
    assert r.verdict == 'WA', r

def test_program_sees_its_own_proc_entries(run):
    "The program is dumpable at every level (after the uid drop too), so it can read its own /proc entries; the supervisor's stay closed."
    r = run("import os\nprint(len(open('/proc/self/io').read()) > 0)\nopen('/proc/self/comm', 'w').write('x')\n"
            "try: os.listdir(f'/proc/{os.getppid()}/fd'); print('supervisor open')\nexcept OSError: print('supervisor closed')")
    # rlimits-only runs as the trainer's uid (root here), which may open the supervisor's fds; its last-line report still wins
    assert r.stdout.split()[:2] == ['True', 'supervisor'] and r.verdict == 'OK', r
    if run.level != 'rlimits-only': assert r.stdout.split()[2] == 'closed', r

def test_guard_sees_a_leak():
    "The invariants the guard checks can fail: a process of a free slot uid and a tagged process are both seen."
    uid = max(SLOT_UIDS)
    p = subprocess.Popen(['sleep', '30'], user=uid, group=uid, extra_groups=[])
    q = subprocess.Popen([sys.executable, '-c', tag("import time; time.sleep(30)")])
    try:
        deadline = time.monotonic() + 5
        while q.pid not in leftovers(MARK) and time.monotonic() < deadline: time.sleep(0.05)
        assert (p.pid, uid) in slot_processes() and q.pid in leftovers(MARK)
    finally:
        for x in (p, q): x.kill(); x.wait()

def test_only_standard_fds(run):
    r = run("import os\nprint(sorted(int(f) for f in os.listdir('/proc/self/fd')))")
    assert r.stdout.strip() in ('[0, 1, 2]', '[0, 1, 2, 3]')   # 3 is the listdir handle itself

def new_run_dirs(before:set, timeout=20.0) -> set:
    "Run dirs that appeared since `before` and stay: other sessions' runs share the base dir, but theirs go away."
    return set(settled(lambda: sorted(set(os.listdir(sbx._base_dir())) - before - {'slots'}), timeout))

def test_run_dir_removed_even_if_chmod_0(run):
    before = set(os.listdir(sbx._base_dir()))
    src = "import os\nos.makedirs('a/b')\nopen('a/b/f', 'w').write('x')\nos.chmod('a/b', 0)\nos.chmod('a', 0)\nprint(os.getcwd())"
    r = run(src)
    assert r.verdict == 'OK', r
    assert new_run_dirs(before) == set()
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

READ_PROBE = """import os, sys
for p in sys.argv[1:] if len(sys.argv) > 1 else PATHS:
    try:
        with open(p, 'rb') as f: f.read(1)
        print('read', p)
    except OSError as e: print('denied', p, type(e).__name__)
"""

def _up(path:str) -> str:
    "`path` reached from the run's cwd by `../..`: enough `..` to climb to / from any run dir, then down."
    return '../' * 12 + path.lstrip('/')

def test_reading_the_dataset_is_denied(run, tmp_path):
    """The datasets and the trainer's files, by absolute and by `../..` path. Under bubblewrap nothing of the host
    outside /usr, /etc and the interpreter is there at all; with a slot uid, files the trainer keeps private (a 0700
    directory, as pytest's tmp_path and /root are) stay unreadable; world-readable files are readable there."""
    if run.level == 'rlimits-only': pytest.skip("rlimits-only runs as the trainer's uid and can read what it can")
    data = tmp_path / 'dataset'; data.mkdir(); (data / 'test.jsonl').write_text('{"expected": "42"}\n')
    private = [str(data / 'test.jsonl')]
    public = [os.path.abspath(__file__), os.path.join(REPO, 'pyproject.toml'), os.path.join(REPO, 'settings.ini')]
    public = [p for p in public if os.path.exists(p)]
    paths = private + [_up(p) for p in private]
    if run.level == 'bwrap': paths += public + [_up(p) for p in public]
    r = run(READ_PROBE.replace('PATHS', repr(paths)))
    assert r.verdict == 'OK', r
    assert [l.split()[0] for l in r.stdout.splitlines()] == ['denied'] * len(paths), r.stdout
    if run.level != 'bwrap': return
    r = run(f"import os\nprint(os.path.exists({REPO!r}), os.path.exists({str(tmp_path)!r}), sorted(os.listdir('/')))")
    exists_repo, exists_tmp, *root = r.stdout.split(maxsplit=2)
    assert (exists_repo, exists_tmp) == ('False', 'False'), r.stdout

def test_loopback_service_denied(run):
    "A service the trainer listens on (a socket server in this process) is unreachable from the run."
    if run.level != 'bwrap': pytest.skip(f"{run.level} has no network namespace: loopback is reachable (needs bubblewrap)")
    srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(4); srv.settimeout(0.5)
    got = []
    def accept():
        try: got.append(srv.accept()[0])
        except OSError: pass
    t = threading.Thread(target=accept); t.start()
    try:
        port = srv.getsockname()[1]
        src = (f"import socket\ntry: socket.create_connection(('127.0.0.1', {port}), timeout=1).sendall(b'hi'); print('connected')\n"
               "except OSError as e: print('denied', type(e).__name__)\n"
               "try: socket.create_connection(('1.1.1.1', 53), timeout=1); print('internet')\n"
               "except OSError as e: print('denied', type(e).__name__)")
        r = run(src)
        assert [l.split()[0] for l in r.stdout.splitlines()] == ['denied', 'denied'], r.stdout
    finally:
        t.join(); srv.close()
        for c in got: c.close()
    assert got == [], "the sandboxed program reached the trainer's server"

GPU_VARS = ('CUDA_VISIBLE_DEVICES', 'NVIDIA_VISIBLE_DEVICES', 'ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES',
            'GPU_DEVICE_ORDINAL', 'NVIDIA_DRIVER_CAPABILITIES')

def test_no_gpu_visible(run, monkeypatch):
    "No GPU variable from the trainer, CUDA told there are no devices (''), and under bubblewrap no GPU device nodes."
    for v in GPU_VARS: monkeypatch.setenv(v, '0,1')
    r = run("import os, glob, json\n"
            f"print(json.dumps({{v: os.environ.get(v) for v in {GPU_VARS!r}}}))\n"
            "print(json.dumps(sorted(glob.glob('/dev/nvidia*') + glob.glob('/dev/dri*') + glob.glob('/dev/kfd'))))\n"
            "print(json.dumps(sorted(os.listdir('/dev'))))")
    import json
    env, gpus, dev = map(json.loads, r.stdout.splitlines())
    assert env == {'CUDA_VISIBLE_DEVICES': '', **{v: None for v in GPU_VARS[1:]}}, env
    if run.level == 'bwrap':
        assert gpus == [] and set(dev) <= {'core', 'fd', 'full', 'null', 'ptmx', 'pts', 'random', 'shm', 'stderr',
                                           'stdin', 'stdout', 'tty', 'urandom', 'zero', 'mqueue'}, dev

@pytest.mark.skipif(BEST != 'bwrap', reason="mounts need bubblewrap")
def test_bwrap_expose_mounts_read_only(tmp_path):
    data = tmp_path / 'data.txt'; data.write_text('payload')
    tmp_path.chmod(0o755); data.chmod(0o644)   # readable by the run's uid: exposing keeps file permissions
    src = f"print(open({str(data)!r}).read())\ntry: open({str(data)!r}, 'w')\nexcept OSError: print('read-only')"
    assert run_code(src, expose=[str(tmp_path)]).stdout.split() == ['payload', 'read-only']
    assert run_code(src).verdict == 'RE'   # not exposed: not there

@pytest.mark.slow
def test_million_small_files_cleaned_up(run):
    "A program that tries to make a million files: stopped by its limits (CPU time, or the tmpfs), and all removed."
    before = set(os.listdir(sbx._base_dir()))
    src = tag("import os\nfor i in range(1_000_000):\n    open(f'f{i}', 'w').close()\n"
              "    if i % 1000 == 0: print(i, flush=True)\nprint('done')")
    r = run(src, time_limit=3)
    assert r.verdict in ('TLE', 'RE', 'OK'), r
    assert len(r.stdout.split()) > 2, r                 # it did make thousands
    assert new_run_dirs(before) == set()

@pytest.mark.skipif(BEST != 'bwrap', reason="the tmpfs cap needs bubblewrap")
def test_bwrap_many_small_files_and_disk_cap():
    r = run_code("import os\nfor i in range(20000): open(f'f{i}', 'w').write('x')\nprint(len(os.listdir('.')))",
                 expected="20001", time_limit=2)
    assert r.verdict == 'AC', r
    r = run_code("for i in range(100): open(f'f{i}', 'wb').write(b'0' * (1 << 20))", disk_limit=8 << 20)
    assert r.verdict == 'RE' and 'No space left' in r.stderr


# ---- the sandbox's own failures are IE, never an exception or a silent zero
def test_infrastructure_error(run):
    r = run_code("print(1)", expected="1", python='/nonexistent/python3', isolation=run.level)
    assert r.verdict == 'IE' and r.message and not r.passed

def test_infrastructure_errors_are_counted():
    "The pool counts IE like any verdict, so a broken sandbox shows up; it never becomes a silent WA or a zero."
    with Sandbox(workers=1, python='/nonexistent/python3') as sb:
        rs = sb.run_many([("print(1)", "", "1")] * 2)
    assert [r.verdict for r in rs] == ['IE', 'IE'] and sb.counts == {'IE': 2}

def test_verdicts_are_typed():
    assert set(VERDICTS) == {'AC', 'WA', 'RE', 'TLE', 'MLE', 'OLE', 'CE', 'INVALID', 'IE', 'OK'}
    assert [v for v in VERDICTS if RunResult(v).passed] == ['AC', 'OK']   # INVALID and IE are never a pass
    assert BEST in LEVELS

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

def test_pool_is_sized_to_the_cores_and_runs_in_parallel():
    assert Sandbox().workers == sbx._cores()
    src = "import time; time.sleep(0.6); print(1)"   # waits, so only the pool's parallelism matters
    with Sandbox(workers=4, time_limit=1.0) as sb:
        t = time.monotonic(); rs = sb.run_many([(src, '', '1')] * 4); dt = time.monotonic() - t
    assert [r.verdict for r in rs] == ['AC'] * 4 and dt < 1.8, (dt, [str(r) for r in rs])

def test_trainer_alive():
    assert run_code("print('still here')", expected="still here").verdict == 'AC'


# ---- the fork server (launch='server'): one pre-started launcher per slot, a fresh child per program
SERVER = sbx.runner._default_launch('bwrap', sbx.runner._default_python()) == 'server' if BEST == 'bwrap' else False
needs_server = pytest.mark.skipif(not SERVER, reason="the fork server needs bubblewrap as root")

def _inner_pid(fs) -> int:
    "The server's own pid (PID 1 of its namespace), the child of its bubblewrap."
    with open(f'/proc/{fs.proc.pid}/task/{fs.proc.pid}/children') as f: return int(f.read().split()[0])

def _srun(fs, src, stdin=b'', time_limit=1.0, wall=5.0, expected=None):
    lim = sbx.rlimits(time_limit)
    return sbx.judge(fs.run(src.encode(), stdin, wall, 8 << 20, lim, 1 << 20), expected, time_limit, 1 << 20)

@pytest.fixture
def fork_server():
    fs = sbx.ForkServer(sbx.runner._default_python())
    yield fs
    fs.close()

@needs_server
def test_fork_server_runs_share_nothing(fork_server):
    "Files (run dir and /tmp), SysV IPC, and processes of one run are gone before the next run on the same server."
    first = ("import ctypes, os, time\nopen('/tmp/left', 'w').write('x'); open('here', 'w').write('x')\n"
             "libc = ctypes.CDLL(None)\nprint(libc.shmget(424242, 4096, 0o1666) >= 0)\n"
             "if os.fork() == 0:\n    os.setsid()\n    time.sleep(100)\nprint(os.getpid())")
    v, *_ = _srun(fork_server, first)
    assert v == 'OK'
    second = ("import ctypes, os\nprint(os.path.exists('/tmp/left'), os.path.exists('here'), sorted(os.listdir('/tmp')))\n"
              "print(ctypes.CDLL(None).shmget(424242, 0, 0))\n"
              "print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()))")
    o = fork_server.run(second.encode(), b'', 5.0, 8 << 20, sbx.rlimits(1.0), 1 << 20)
    assert o.stdout.decode().split('\n')[:3] == ["False False ['run']", '-1', '[1]'], o   # only the server is left

@needs_server
def test_fork_server_never_holds_a_programs_source_stdin_or_expected_output(fork_server):
    "What a later run's child inherits is the server's memory: it must never have seen a program's data."
    secret = [uuid.uuid4().hex.encode() for _ in range(3)]
    src = f"x = input()\nprint(x == {secret[1].decode()!r})  # {secret[0].decode()}"
    o = fork_server.run(src.encode(), secret[1] + b'\n', 5.0, 8 << 20, sbx.rlimits(1.0), 1 << 20)
    assert sbx.judge(o, 'True', 1.0, 1 << 20)[0] == 'AC', o
    pid, found = _inner_pid(fork_server), []
    with open(f'/proc/{pid}/maps') as maps, open(f'/proc/{pid}/mem', 'rb', 0) as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if 'r' not in perms or line.rstrip().endswith(('[vvar]', '[vsyscall]')): continue
            lo, hi = (int(x, 16) for x in span.split('-'))
            try:
                mem.seek(lo)
                chunk = mem.read(hi - lo)
            except OSError: continue
            found += [s for s in secret if s in chunk]
    assert found == []

@needs_server
def test_fork_server_child_has_no_privileges(fork_server):
    src = ("import os\nst = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
           "print(st['CapEff'].strip(), st['CapPrm'].strip(), st['NoNewPrivs'].strip(), os.getuid(), os.getppid())\n"
           "try: os.kill(1, 9)\nexcept OSError as e: print(type(e).__name__)")
    o = fork_server.run(src.encode(), b'', 5.0, 8 << 20, sbx.rlimits(1.0), 1 << 20)
    caps_eff, caps_prm, nnp, uid, ppid, err = o.stdout.decode().split()
    assert (int(caps_eff, 16), int(caps_prm, 16), nnp, int(uid), ppid, err) == (0, 0, '1', fork_server.uid, '1',
                                                                                 'PermissionError'), o
    assert fork_server.alive() and _srun(fork_server, "print(1)", expected='1')[0] == 'AC'

@needs_server
def test_fork_server_backstop_kills_a_stuck_server(fork_server):
    "A server that stops answering is killed by the parent's backstop; its slot is swept; the run is never a pass."
    os.kill(_inner_pid(fork_server), signal.SIGSTOP)
    t = time.monotonic()
    v, msg, *_ = _srun(fork_server, "print(1)", wall=0.5, expected='1')
    assert v == 'IE' and time.monotonic() - t < 10 and not fork_server.alive(), msg   # it never started the program

@needs_server
def test_a_dead_server_is_replaced_before_the_program_runs():
    "An idle pooled server that died is found out (or fails on send) and replaced: the run is judged, not IE."
    py = sbx.runner._default_python()
    with Sandbox(workers=1) as sb: assert sb.run("print(1)", expected='1').verdict == 'AC'
    idle = [s for s in sbx.forkserver._idle if s.python == py]
    assert idle
    for s in idle: os.kill(_inner_pid(s), signal.SIGKILL)
    assert run_code("print(2)", expected='2').verdict == 'AC'

@needs_server
def test_fork_server_slots_are_skipped_by_fresh_runs(fork_server):
    "A slot a server owns is never handed to a fresh run, in this process or another, even between its runs."
    assert sbx.isolation._served_elsewhere(fork_server.uid)   # its run lock is free between runs (to anyone's check)
    code = ("from pettingllms_nb.sandbox.isolation import _Slot\nwith _Slot() as s: print(s.uid)")
    got = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=60)
    assert got.returncode == 0 and int(got.stdout) not in {s.uid for s in sbx.forkserver._idle} | {fork_server.uid}
    with sbx.isolation._Slot() as s: assert s.uid != fork_server.uid

@needs_server
def test_a_forked_trainer_uses_its_own_servers():
    assert run_code("print(1)", expected='1').verdict == 'AC'   # the parent has a server now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try: os.write(w, run_code("print(3)", expected='3').verdict.encode())
        finally: os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    got = os.read(r, 10)
    os.close(r)
    assert got == b'AC' and run_code("print(4)", expected='4').verdict == 'AC'

def test_launch_modes():
    with pytest.raises(ValueError, match='not one of'): run_code("print(1)", launch='spawn')
    with pytest.raises(ValueError, match="launch='server' needs"): run_code("print(1)", isolation='rlimits-only', launch='server')
    if SERVER: assert run_code("print(1)", expected='1', launch='fresh').verdict == 'AC'

@needs_server
def test_no_free_slot_for_a_server_launches_fresh(monkeypatch):
    "When every slot uid is taken no server starts, and the run launches bubblewrap itself: judged, not IE."
    def taken(): raise sbx.forkserver.NoFreeSlot("all taken")
    monkeypatch.setattr(sbx.forkserver, '_own_slot', taken)
    monkeypatch.setattr(sbx.forkserver, '_idle', [])
    assert run_code("print(1)", expected='1').verdict == 'AC'


def test_without_bubblewrap_model_code_runs_only_when_the_user_opts_in(monkeypatch):
    "Issue 32, point 9: the rlimits-only fallback is refused (an IE that says how to opt in) unless asked for."
    from pettingllms_nb.sandbox import runner
    from pettingllms_nb.core.config import load_config
    monkeypatch.setitem(runner._levels, runner._default_python(), 'rlimits-only')
    monkeypatch.delenv(runner.UNISOLATED_ENV, raising=False)
    r = runner.run_code("open('/tmp/pllm-unisolated-marker', 'w').write('ran')", time_limit=2)
    assert r.verdict == 'IE' and 'sandbox.allow_unisolated=true' in r.message
    assert load_config('tiny_plan_path').sandbox.allow_unisolated is False
    monkeypatch.setenv(runner.UNISOLATED_ENV, '1')
    assert runner.run_code('print(6 * 7)', expected='42').verdict == 'AC'
    assert runner.run_code('print(1)', expected='1', isolation='rlimits-only').isolation == 'rlimits-only'
