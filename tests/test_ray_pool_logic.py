"RayWorker's and remote_rollout's own logic (least-busy routing, a dead actor replaced and its program re-run, IE after max_retries, clean close) against a stand-in for the `ray` module whose actors are in-process objects: no cluster needed, so it runs wherever the sandbox runs."
import asyncio, sys, threading, types
import pytest

from pettingllms_nb.engine.policies import run_sync
from pettingllms_nb.sandbox import arun_program
import pettingllms_nb.scale.ray_pool as rp

SLOW = "import time\nt = time.time()\nwhile time.time() - t < 0.8: pass\nprint('done')"


class RayActorError(Exception): pass
class ActorDiedError(RayActorError): pass


class _Method:
    def __init__(self, handle, name): self.handle, self.name = handle, name
    def remote(self, *args):
        h, name = self.handle, self.name
        async def call():
            if h.dead: raise ActorDiedError("the actor is dead")
            fut = asyncio.ensure_future(asyncio.to_thread(getattr(h.obj, name), *args))
            while not fut.done():
                if h.dead: raise ActorDiedError("the actor died while running the task")
                await asyncio.sleep(0.01)
            return fut.result()
        return call()


class _Handle:
    def __init__(self, cls, args, options): self.obj, self.options, self.dead = cls(*args), options, False
    def __getattr__(self, name): return _Method(self, name)


class FakeRay(types.ModuleType):
    "The parts of `ray` RayWorker uses; actors are objects in this process, `kill` marks them dead."
    def __init__(self):
        super().__init__('ray')
        self.exceptions = types.SimpleNamespace(RayActorError=RayActorError)
        self.started, self.killed, self.lock = [], [], threading.Lock()
    def is_initialized(self): return True
    def remote(self, cls):
        ray = self
        class ActorClass:
            def options(self, **kw):
                return types.SimpleNamespace(remote=lambda *a: ray._start(cls, a, kw))
        return ActorClass()
    def _start(self, cls, args, kw):
        h = _Handle(cls, args, kw)
        with self.lock: self.started.append(h)
        return h
    def kill(self, h, no_restart=True):
        h.dead = True
        self.killed.append(h)
    def get(self, refs, timeout=None):
        async def all(): return await asyncio.gather(*refs)
        return run_sync(all())
    def shutdown(self): raise AssertionError("RayWorker must not shut down a Ray it did not start")


@pytest.fixture
def fake(monkeypatch):
    ray = FakeRay()
    monkeypatch.setitem(sys.modules, 'ray', ray)
    monkeypatch.setattr(rp, 'ray_init', lambda address=None: ray)
    return ray


def _kill_busy(w):
    async def go(coro):
        task = asyncio.ensure_future(coro)
        while not any(w.inflight): await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        w.ray.kill(w.actors[w.inflight.index(1)])
        return await task
    return go


def test_actors_get_the_options_and_programs_their_verdicts(fake):
    w = rp.RayWorker(actors=2, slots=3, cpus_per_actor=0.5, time_limit=1.0)
    assert [h.options for h in fake.started] == [{'num_cpus': 0.5, 'max_concurrency': 3, 'max_restarts': 0}] * 2
    async def both(): return await asyncio.gather(w.run("print(6 * 7)", expected='42'), w.run("print(1)", expected='2'))
    assert [r.verdict for r in run_sync(both())] == ['AC', 'WA']
    assert w.inflight == [0, 0] and w.counts == {'AC': 1, 'WA': 1}
    assert sorted(h.obj.runs for h in fake.started) == [1, 1]            # least busy: one program each
    w.close()
    assert all(h.dead for h in fake.started) and w.actors == []


def test_a_killed_actor_is_replaced_and_its_program_rerun(fake):
    w = rp.RayWorker(actors=2, slots=1)
    r = run_sync(_kill_busy(w)(w.run(SLOW, expected='done', time_limit=5.0)))
    assert (r.verdict, w.retries, w.replaced, len(fake.started)) == ('AC', 1, 1, 3)
    assert w.counts == {'AC': 1} and all(not h.dead for h in w.actors)
    w.close()


def test_an_actor_that_keeps_dying_is_an_infra_error_never_a_zero(fake):
    w = rp.RayWorker(actors=1, slots=1, max_retries=0)
    r = run_sync(_kill_busy(w)(arun_program(SLOW, expected='done', worker=w)))
    assert r.verdict == 'IE' and not r.ok and 'died 1 times' in r.infra_error
    assert w.counts == {'IE': 1} and w.replaced == 1
    w.close()


def test_other_failures_are_infra_errors_and_arguments_are_checked(fake):
    w = rp.RayWorker(actors=1, slots=1)
    def broken(*a): raise RuntimeError("disk full")
    w.actors[0].obj.run = broken
    r = w.run_sync("print(1)")
    assert r.verdict == 'IE' and 'RuntimeError: disk full' in r.message and w.retries == 0
    with pytest.raises(ValueError, match='actors=0'): rp.RayWorker(actors=0)
    with pytest.raises(ValueError, match='slots=0'): rp.RayWorker(slots=0)


@pytest.mark.parametrize('env, seeds, schedule', [('toy_relay', range(4), None),
                                                  ('toy_relay', range(3), 'simultaneous'),
                                                  ('stateful_plan_path', range(3), None)])
def test_remote_rollout_plays_the_engines_episodes(fake, monkeypatch, env, seeds, schedule):
    from pettingllms_nb.core.registry import registry
    from pettingllms_nb.engine.rollout import rollout
    from pettingllms_nb.scale.env_actors import EnvActorPool, remote_rollout
    import pettingllms_nb.scale.env_actors as ea
    monkeypatch.setattr(ea, 'ray_init', lambda address=None: fake)
    name = 'toy_relay' if env == 'toy_relay' else 'stateful_env'
    oracle = registry.scripted(name, 'oracle')
    pool = EnvActorPool(env, actors=2, schedule=schedule)
    remote = remote_rollout(pool, oracle, seeds=seeds, sample_num=2)
    local = rollout(env, oracle, seeds=seeds, sample_num=2, schedule=schedule)
    fields = lambda tr: [(s.id, s.parent_id, s.group_id, s.role, s.prompt, s.action, s.format_error, s.reward,
                          s.reward_terms, s.state_after, s.done, s.success) for s in tr.steps]
    assert fields(remote) == fields(local) and len(local.steps) > 0
    assert [(e.problem_uid, e.rollout_idx, e.success, e.turns, e.rewards, e.final_id) for e in remote.episodes] == \
           [(e.problem_uid, e.rollout_idx, e.success, e.turns, e.rewards, e.final_id) for e in local.episodes]
    assert remote.roots == local.roots
    assert sum(h.obj.steps for h in fake.started) == len(local.steps)          # every move was played in an actor
    assert all(not h.obj.episodes for h in fake.started)                      # and every episode closed
    pool.close()
    assert all(h.dead for h in fake.started)
