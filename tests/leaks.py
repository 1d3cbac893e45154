"""What the hostile-program suites (test_sandbox.py, test_fuzz.py) look for after every test: a process still running
under a slot uid that no run holds, a process carrying the test's marker, a new file in the watched folders, and
whether the trainer's own sentinel process survived. Shared here so both suites check the same things the same way.
"""
import fcntl, os, subprocess, time

import pytest

from pettingllms_nb import sandbox as sbx

SLOT_UIDS = frozenset(sbx._slot_uids())   # the uids runs get (those of the range no account uses)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WATCHED = ['/tmp', '/var/tmp', '/dev/shm', REPO, os.path.join(REPO, 'tests'), os.path.expanduser('~')]

def comm_of(mark:str) -> str: return mark[-15:]   # /proc/PID/comm keeps 15 characters

def marked_processes(mark:str) -> list:
    "Pids, other than this process, whose command line or (15-character) name carries `mark`; zombies are dead."
    found = []
    for pid in os.listdir('/proc'):
        if not pid.isdigit() or int(pid) == os.getpid(): continue
        try:
            with open(f'/proc/{pid}/cmdline', 'rb') as f: cmd = f.read()
            with open(f'/proc/{pid}/stat', 'rb') as f: stat = f.read()
        except OSError: continue
        name, state = stat[stat.index(b'(') + 1:stat.rindex(b')')], stat[stat.rindex(b')') + 2:][:1]
        if state != b'Z' and (mark.encode() in cmd or name == comm_of(mark).encode()): found.append(int(pid))
    return found

def uid_of(pid:str):
    "The uid of live process `pid` (None once it is gone or a zombie)."
    try:
        with open(f'/proc/{pid}/status') as f: st = dict(l.split(':', 1) for l in f if ':' in l)
    except OSError: return None
    return None if st.get('State', '').strip().startswith('Z') else int(st['Uid'].split()[0])

def slot_free(uid:int) -> bool:
    "Is no run holding slot `uid` now (its lock file is free)? Another session's run may hold it legitimately."
    fd = os.open(os.path.join(sbx._base_dir(), 'slots', str(uid)), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError: return False
    finally: os.close(fd)

def slot_processes() -> list:
    "Live processes of a slot uid whose slot no run holds: a run left them behind."
    found = [(int(p), u) for p in os.listdir('/proc') if p.isdigit() and (u := uid_of(p)) in SLOT_UIDS]
    return [(p, u) for p, u in found if slot_free(u)]

def entries(dirs=WATCHED) -> dict:
    "Path -> `os.DirEntry` of everything directly in `dirs` (folders that cannot be read are passed over)."
    out = {}
    for d in dirs:
        try: out.update({e.path: e for e in os.scandir(d)})
        except OSError: pass
    return out

def settled(check, timeout:float=5.0, poll:float=0.1) -> list:
    """What `check()` finds now and still finds after up to `timeout` s: what a killed run leaves may take a moment to
    vanish, and other sessions' runs come and go (only what is found now is followed), but a leak stays."""
    deadline, left = time.monotonic() + timeout, check()
    while left and time.monotonic() < deadline:
        time.sleep(poll)
        now = set(check())
        left = [x for x in left if x in now]
    return left

@pytest.fixture(scope='module')
def sentinel():
    "One of the trainer's own processes: no run may kill it."
    p = subprocess.Popen(['sleep', '3600'])
    yield p
    p.kill(); p.wait()
