"""The sandbox's launcher as code: a module file that is linted, importable without side effects, standard library
only, and whose pure functions (the command line and the status pipe, shared with the trusted parent) are tested here.
"""
import ast, importlib.util, os, resource, subprocess, sys, tempfile
from pathlib import Path
import pytest
from pettingllms_nb.sandbox import LAUNCHER, launcher_argv, rlimits
from pettingllms_nb.sandbox import launcher as L
from pettingllms_nb.sandbox.runner import _parse_status
from pettingllms_nb.sandbox.verdicts import Outcome

ROOT = Path(__file__).resolve().parents[1]


def test_launcher_is_the_module_file():
    assert LAUNCHER == os.path.realpath(L.__file__) and LAUNCHER.endswith('pettingllms_nb/sandbox/launcher.py')
    argv = launcher_argv('/usr/bin/python3', 3, 61000, 2.5, True, rlimits(1.0))
    assert argv[:6] == ['/usr/bin/python3', '-s', '-S', '-B', LAUNCHER, 'supervise']


def test_ruff_check_launcher():
    pytest.importorskip('ruff', reason="ruff comes with the dev extra")
    p = subprocess.run([sys.executable, '-m', 'ruff', 'check', '--config', str(ROOT / 'pyproject.toml'), LAUNCHER],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr


def test_launcher_lines_fit_120_columns():
    "The house limit, for every hand-written line (nbdev's generated `__all__` block aside)."
    lines = Path(LAUNCHER).read_text().splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith('__all__'))
    end = next(i for i in range(start, len(lines)) if lines[i].rstrip().endswith(']'))
    long = [(i + 1, len(l)) for i, l in enumerate(lines) if len(l) > 120 and not start <= i <= end and i > 0]
    assert long == [], long   # line 1 is the module docstring nbdev writes from the notebook's title and summary


def test_standard_library_only_and_no_side_effects_on_import():
    "It runs under `python -S`: every import is a standard-library module; importing it runs nothing."
    tree = ast.parse(Path(LAUNCHER).read_text())
    names = {a.name.split('.')[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split('.')[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert names <= set(sys.stdlib_module_names), names - set(sys.stdlib_module_names)
    code = f"import runpy, sys; sys.argv = ['x']; runpy.run_path({LAUNCHER!r}, run_name='__main__'); print('quiet')"
    p = subprocess.run([sys.executable, '-S', '-c', code], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and p.stdout == 'quiet\n', p   # without a mode word, even __main__ runs nothing
    spec = importlib.util.spec_from_file_location('launcher_copy', LAUNCHER)
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


def test_limits_round_trip():
    lim = rlimits(1.0, memory_limit=64, max_procs=8)
    parsed = L.parse_limits(L.format_limits(lim))
    assert parsed == [(getattr(resource, 'RLIMIT_' + k), s, h) for k, (s, h) in lim.items()]
    for bad in (['CPU:1'], ['CPU:a:b'], ['NOPE:1:1'], ['CPU:1:2:3']):
        with pytest.raises(ValueError): L.parse_limits(bad)


@pytest.mark.parametrize('data, marks, error, report', [
    (b'', '', '', None),                                       # the launcher never started
    (b'S', 'S', '', None),                                     # the supervisor died before the child said anything
    (b'SR' + L.format_report(0, 0), 'SR', '', {'status': 0, 'fired': False}),
    (b'SR' + L.format_report(9, 1), 'SR', '', {'status': 9, 'fired': True}),
    (b'SC' + L.format_report(97 << 8, 0), 'SC', '', {'status': 97 << 8, 'fired': False}),
    (b"SLPermissionError('no')" + L.format_report(99 << 8, 0), 'SL', "PermissionError('no')",
     {'status': 99 << 8, 'fired': False}),
    (b'SRX garbage\n', 'SR', '', None),                        # not a report: the markers still count
    (b'SRX 1 2 3\n', 'SR', '', None),
])
def test_split_status(data, marks, error, report):
    s = L.split_status(data)
    assert (s['marks'], s['error'], s['report']) == (marks, error, report)


def test_the_parent_reads_what_the_launcher_writes():
    o = Outcome()
    _parse_status(b'SR' + L.format_report(3 << 8, 1), o)
    assert (o.marks, o.status, o.wall_fired) == ('SR', 3 << 8, True)


def test_exit_status_matches_the_interpreter():
    for code in (None, 0, 1, 3, 255, 256, 257, -1, True, False, 'bye', [1]):
        want = subprocess.run([sys.executable, '-S', '-c', f'import sys; sys.exit({code!r})'], capture_output=True,
                              text=True)
        status, text = L.exit_status(code)
        assert status == want.returncode, code
        assert (text or '') == want.stderr.strip(), code


def test_parse_args():
    a = L.parse_args(['supervise', '4', '61000', '2.000', '0', '0', 'CPU:1:2', 'CORE:0:0'])
    assert a == dict(mode='supervise', st=4, uid=61000, wall=2.0, sweep=False, parent_uid=0,
                     limits=[(resource.RLIMIT_CPU, 1, 2), (resource.RLIMIT_CORE, 0, 0)])
    with pytest.raises(ValueError, match='usage'): L.parse_args(['supervise', '4'])
    assert L.parse_args(['serve', '3', '61001']) == dict(mode='serve', ctrl=3, uid=61001)
    with pytest.raises(ValueError, match='usage'): L.parse_args(['serve', '3'])


def test_request_round_trip():
    lim = rlimits(0.5, max_procs=8)
    req = L.parse_request(L.format_request(1.5, 8 << 20, lim))
    assert req == dict(wall=1.5, disk_limit=8 << 20, limits=L.parse_limits(L.format_limits(lim)))
    for bad in (b'', b'RUN', b'RUN x 1', b'run 1 1', b'RUN 1 1 NOPE:1:1', b'\xff\xfe'):
        with pytest.raises(ValueError): L.parse_request(bad)


def test_report_with_cpu_and_memory():
    s = L.split_status(b'SR' + L.format_report(0, 0, 1_500_000, 2048))
    assert s['report'] == {'status': 0, 'fired': False, 'cpu': 1.5, 'maxrss': 2.0}
    o = Outcome()
    _parse_status(b'SR' + L.format_report(0, 0, 1_500_000, 2048), o)
    assert o.status == 0


def test_unpack_fds():
    import socket
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    r, w = os.pipe()
    try:
        socket.send_fds(a, [b'x'], [r, w])
        msg, anc, _, _ = b.recvmsg(16, socket.CMSG_SPACE(4 * 5))
        got = L.unpack_fds(anc)
        assert msg == b'x' and len(got) == 2 and all(os.fstat(fd) for fd in got)
        for fd in got: os.close(fd)
    finally:
        for x in (a, b): x.close()
        for fd in (r, w): os.close(fd)


def test_children_and_libc_function():
    assert L.libc_function('getpid')() == os.getpid()
    assert L.libc_function('no_such_symbol_anywhere') is None
    p = subprocess.Popen(['sleep', '5'])
    try: assert p.pid in L._children(os.getpid())
    finally:
        p.kill()
        p.wait()


def test_launcher_runs_a_program_by_hand(tmp_path):
    "The module file, run as the sandbox runs it (no isolation here): a program's output and the report."
    (tmp_path / 'solution.py').write_text("import sys\nprint(input()[::-1])\nsys.exit(4)")
    r, w = os.pipe()
    with tempfile.TemporaryFile() as fin, tempfile.TemporaryFile() as fout:
        fin.write(b'abc\n')
        fin.seek(0)
        argv = launcher_argv(sys.executable, w, None, 5.0, False, rlimits(1.0, max_procs=0))
        p = subprocess.run(argv, cwd=tmp_path, stdin=fin, stdout=fout, pass_fds=(w,), env={'PATH': '/usr/bin'},
                           timeout=30)
        os.close(w)
        s = L.split_status(os.read(r, 4096))
        os.close(r)
        fout.seek(0)
        assert (p.returncode, fout.read(), s['marks']) == (0, b'cba\n', 'SR')
        assert os.WEXITSTATUS(s['report']['status']) == 4 and not s['report']['fired']
