"Scale-out on a private Ray cluster of two CPUs on this machine (no dashboard, loopback only): the Ray sandbox pool gives the local pool's verdicts and rewards, a killed actor's program is re-run (an infrastructure retry, never a zero), simulator-style envs run in actors, and no Ray process is left."
import asyncio, os, tempfile, time
from importlib.util import find_spec
import pytest

if find_spec('ray') is None:
    pytest.skip("needs the [ray] extra: pip install 'pettingllms-nb[ray]'", allow_module_level=True)

from pettingllms_nb.core.config import load_config
from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.engine.rollout import rollout
from pettingllms_nb.sandbox import SandboxWorker, arun_program
from pettingllms_nb.scale.ray_pool import RayWorker
from pettingllms_nb.scale.cluster import make_run_worker, ray_init, ray_shutdown

TEMP = tempfile.mkdtemp(prefix='rpnb-', dir='/tmp')    # short: Ray's socket paths must stay under 108 bytes
SLOW = "import time\nt = time.time()\nwhile time.time() - t < 1.0: pass\nprint('done')"


def _pids_with(marker:str) -> list:
    "Processes whose command line mentions `marker` (this cluster's files), other than this one."
    out = []
    for d in os.listdir('/proc'):
        if not d.isdigit() or int(d) == os.getpid(): continue
        try:
            with open(f'/proc/{d}/cmdline', 'rb') as f: cmd = f.read().replace(b'\0', b' ').decode('utf-8', 'replace')
        except OSError: continue
        if marker in cmd: out.append((int(d), cmd[:120]))
    return out


def _alive(pid:int) -> bool:
    try:
        with open(f'/proc/{pid}/stat') as f: return f.read().rsplit(')', 1)[1].split()[0] != 'Z'
    except OSError: return False


@pytest.fixture(scope='module')
def cluster():
    ray = ray_init(num_cpus=2, temp_dir=TEMP)
    yield ray
    ray_shutdown()


@pytest.fixture(scope='module')
def ray_worker(cluster):
    # Half a CPU each: this pool lives for the whole module, and the other tests' actors need the cluster's other CPU
    # (with a whole CPU each it held both, and the next actor waited for a CPU forever).
    w = RayWorker(actors=2, slots=1, cpus_per_actor=0.5, time_limit=2.0)
    yield w
    w.close()


def test_code_env_rollout_same_through_ray(ray_worker):
    from pettingllms_nb.envs.code import refine_policy
    local = SandboxWorker(workers=2, time_limit=2.0)
    try:
        trs = [rollout('code_env', refine_policy, seeds=range(3), worker=w) for w in (local, ray_worker)]
    finally: local.close()
    def verdicts(st):   # what the sandbox decided (messages may carry timings, which differ run to run)
        return (st['gt_verdicts'], st['gen_pass_rate'], st['gt_pass_rate'], st['hidden_pass_rate'], st['infra_errors'],
                [t['verdict'] for t in st['test_results']], st['code'], st['tests'])
    got = [[(s.id, s.reward, s.reward_terms, verdicts(s.state_after), s.infra_error) for s in tr.steps] for tr in trs]
    assert got[0] == got[1] and len(got[0]) == 9
    assert [e.success for e in trs[1].episodes] == [True] * 3
    assert sum(ray_worker.counts.values()) > 0 and ray_worker.counts['IE'] == 0


def test_same_verdicts_limits_and_cleanup_as_the_local_pool(ray_worker):
    jobs = [("print(sum(map(int, input().split())))", "2 3\n", "5"), ("print(7)", "", "5"),
            ("raise ValueError('no')", "", "5"), ("while True: pass", "", "5"), ("def f(:", "", "5"),
            ("x = bytearray(1 << 31)", "", "5"),
            ("import os, time\nif os.fork() == 0: time.sleep(60)\nprint(5)", "", "5")]
    local = SandboxWorker(workers=2, time_limit=2.0)
    async def verdicts(w): return [r.verdict for r in await asyncio.gather(*[w.run(c, i, e) for c, i, e in jobs])]
    try: got = [run_sync(verdicts(w)) for w in (local, ray_worker)]
    finally: local.close()
    assert got[0] == got[1] == ['AC', 'WA', 'RE', 'TLE', 'CE', 'MLE', 'AC']
    infos = ray_worker.info()
    assert {i['isolation'] for i in infos} == {ray_worker.run_sync('print(1)').isolation}
    assert all(i['pid'] != os.getpid() for i in infos)                      # the programs ran in the actors


def test_killed_actor_is_replaced_and_its_program_rerun(ray_worker):
    async def go():
        task = asyncio.ensure_future(ray_worker.run(SLOW, expected='done', time_limit=5.0))
        while not any(ray_worker.inflight): await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        ray_worker.ray.kill(ray_worker.actors[ray_worker.inflight.index(1)])
        return await task
    retries, replaced = ray_worker.retries, ray_worker.replaced
    r = run_sync(go())
    assert (r.verdict, ray_worker.retries - retries, ray_worker.replaced - replaced) == ('AC', 1, 1)
    assert ray_worker.run_sync("print(2)", expected='2').verdict == 'AC'    # the pool is whole again


def test_an_actor_that_keeps_dying_is_an_infra_error_never_a_zero(cluster):
    w = RayWorker(actors=1, slots=1, max_retries=0)
    try:
        async def go():
            task = asyncio.ensure_future(arun_program(SLOW, expected='done', worker=w))
            while not any(w.inflight): await asyncio.sleep(0.05)
            await asyncio.sleep(0.3)
            w.ray.kill(w.actors[0])
            return await task
        r = run_sync(go())
        assert r.verdict == 'IE' and r.infra_error and 'died' in r.infra_error and not r.ok
    finally: w.close()


def test_config_selects_the_ray_worker(cluster):
    cfg = load_config('tiny_plan_path', ['resource.worker=ray', 'resource.sandbox_actors=1',
                                         'resource.sandbox_slots=1'])
    w = make_run_worker(cfg)
    try:
        assert isinstance(w, RayWorker) and len(w.actors) == 1 and w.slots == 1
        assert w.run_sync("print(6 * 7)", expected='42').verdict == 'AC'
    finally: w.close()


@pytest.mark.parametrize('env, scripted', [('toy_relay', 'toy_relay'), ('stateful_plan_path', 'stateful_env')])
def test_env_actors_play_the_same_episodes(cluster, env, scripted):
    from pettingllms_nb.core.registry import registry
    from pettingllms_nb.scale.env_actors import EnvActorPool, remote_rollout
    oracle = registry.scripted(scripted, 'oracle')
    pool = EnvActorPool(env, actors=2, cpus_per_actor=0.5)
    try: remote = remote_rollout(pool, oracle, seeds=range(3))
    finally: pool.close()
    local = rollout(env, oracle, seeds=range(3))
    fields = lambda tr: [(s.id, s.role, s.prompt, s.action, s.reward, s.reward_terms, s.state_after, s.done)
                         for s in tr.steps]
    assert fields(remote) == fields(local) and len(local.steps) > 0
    assert [(e.success, e.turns, e.rewards) for e in remote.episodes] == [(e.success, e.turns, e.rewards)
                                                                           for e in local.episodes]


def test_no_ray_process_is_left(cluster, ray_worker):
    "Last in this file: stop the workers and the cluster, and find none of their processes."
    pids = [i['pid'] for i in ray_worker.info()]
    ray_worker.close()
    ray_shutdown()
    deadline = time.monotonic() + 30
    while (left := _pids_with(TEMP) + [(p, 'actor') for p in pids if _alive(p)]) and \
            time.monotonic() < deadline:
        time.sleep(0.5)
    assert not left, left


def test_a_failed_remote_rollout_closes_its_episodes(cluster):
    "A policy that raises mid-rollout: the error reaches the caller, and no actor keeps an episode open."
    from pettingllms_nb.scale.env_actors import EnvActorPool, remote_rollout
    def broken(req): raise RuntimeError('the policy server went away')
    pool = EnvActorPool('toy_relay', actors=2, cpus_per_actor=0.5)
    try:
        with pytest.raises(RuntimeError, match='went away'): remote_rollout(pool, broken, seeds=range(3))
        left = pool.ray.get([a.__ray_call__.remote(lambda self: len(self.episodes)) for a in pool.actors])
        assert left == [0, 0]
    finally: pool.close()
