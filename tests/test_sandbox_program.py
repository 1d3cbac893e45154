"""`run_program`, the one helper environments use to run a model's program, and the sandbox canaries: every failure of
the machinery (a worker that raises, returns garbage or an unknown verdict, a sandbox that says IE, a missing
interpreter) is an `infra_error` with its reason, never an exception and never a verdict that scores the program."""
import asyncio, logging
from types import SimpleNamespace
import pytest
from pettingllms_nb.sandbox import (CANARY_PROGRAMS, INFRA_VERDICTS, MAX_CODE_CHARS, OK_VERDICTS, ProgramResult,
                                    RunResult, SandboxWorker, VERDICTS, arun_canaries, arun_program, default_worker,
                                    normalise_verdict, run_canaries, run_program)
from pettingllms_nb.core.registry import shared_worker


class Recording:
    "A worker double that records its calls and answers with `answer` (or raises it)."
    def __init__(self, answer): self.answer, self.calls = answer, []
    async def run(self, code, **kw):
        self.calls.append((code, kw))
        if isinstance(self.answer, BaseException): raise self.answer
        return self.answer


def test_constants_are_the_sandbox_vocabulary():
    assert set(OK_VERDICTS) | set(INFRA_VERDICTS) <= set(VERDICTS)
    assert not set(OK_VERDICTS) & set(INFRA_VERDICTS) and MAX_CODE_CHARS == 20_000
    assert default_worker() is shared_worker('sandbox')


def test_real_sandbox_runs():
    r = run_program("print(6 * 7)")
    assert (r.verdict, r.ok, r.stdout, r.infra_error) == ('OK', True, '42\n', None)
    assert isinstance(r.result, RunResult) and r.result.isolation
    r = run_program("print(input()[::-1])", stdin="abc", expected="cba")
    assert (r.verdict, r.ok) == ('AC', True)
    assert run_program("print(1)", expected="2").verdict == 'WA'
    r = run_program("1/0")
    assert (r.verdict, r.ok, r.infra_error) == ('RE', False, None) and 'ZeroDivisionError' in r.error_text
    r = run_program("while True: pass", time_limit=0.5)
    assert (r.verdict, r.infra_error) == ('TLE', None)


def test_the_program_is_capped_before_it_runs():
    w = Recording(RunResult('OK'))
    r = run_program("x = 1\n" * 4000, worker=w)
    assert r.verdict == 'CE' and 'too long' in r.message and r.infra_error is None and w.calls == []
    assert run_program("x = 1\n" * 4000, worker=w, max_chars=None).verdict == 'OK' and len(w.calls) == 1


def test_arguments_reach_the_worker_by_keyword():
    w = Recording(RunResult('OK', stdout='x'))
    run_program("print(1)", worker=w, time_limit=1.5)
    run_program("print(1)", stdin="in", expected="out", worker=w, memory_limit=64)
    assert w.calls == [("print(1)", {'stdin': '', 'time_limit': 1.5}),
                       ("print(1)", {'stdin': 'in', 'time_limit': 5.0, 'expected': 'out', 'memory_limit': 64})]


@pytest.mark.parametrize('answer, reason', [
    (ConnectionError("the actor died"), 'execution worker failed: ConnectionError: the actor died'),
    (ValueError("bad"), 'execution worker failed: ValueError'),
    (None, 'returned NoneType, not a result with a verdict'),
    ("AC", 'returned str, not a result with a verdict'),
    (SimpleNamespace(verdict='worker_error', stdout=''), "unknown verdict 'worker_error'"),
    (SimpleNamespace(verdict=None), "unknown verdict 'None'"),
    (RunResult('IE', message='bwrap: no namespaces'), 'sandbox infrastructure error: bwrap: no namespaces'),
    (SimpleNamespace(verdict='ie', stderr='boom'), 'sandbox infrastructure error: boom'),
])
def test_machinery_failures_are_infra_errors(answer, reason, caplog):
    with caplog.at_level(logging.WARNING):
        r = run_program("print(1)", worker=Recording(answer))
    assert r.verdict == 'IE' and not r.ok and reason in r.infra_error, r
    assert reason in caplog.text   # logged, so a broken sandbox shows up


def test_missing_interpreter_is_an_infra_error():
    w = SandboxWorker(workers=1, python='/nonexistent/python3')
    try: r = run_program("print(1)", worker=w)
    finally: w.close()
    assert r.verdict == 'IE' and r.infra_error and not r.ok


def test_foreign_verdict_spellings():
    r = run_program("print(1)", worker=Recording(SimpleNamespace(verdict='ok', stdout=b'1\n', stderr=None)))
    assert (r.verdict, r.ok, r.stdout, r.stderr, r.result) == ('OK', True, '1\n', '', None)
    assert [normalise_verdict(v) for v in ('accepted', 'Wrong Answer', 'tle', 'INVALID', 'nope')] == \
        ['AC', 'WA', 'TLE', 'INVALID', None]


def test_cancellation_passes_through():
    async def main():
        t = asyncio.ensure_future(arun_program("print(1)", worker=Recording(asyncio.CancelledError())))
        with pytest.raises(asyncio.CancelledError): await t
    asyncio.run(main())


def test_sync_inside_a_running_loop():
    async def main(): return run_program("print(2)", worker=Recording(RunResult('OK', stdout='2\n')))
    assert asyncio.run(main()).stdout == '2\n'


def test_canaries_on_the_real_sandbox():
    report = run_canaries()
    assert report.healthy and bool(report) and report.reason is None
    assert report.got == {name: want for name, *_, want in CANARY_PROGRAMS}


class Judging:
    "A worker double that judges like a sandbox whose comparison is `compare`."
    def __init__(self, compare): self.compare, self.codes = compare, []
    async def run(self, code, stdin='', expected=None, **kw):
        self.codes.append(code)
        return RunResult('AC' if self.compare(code, expected) else 'WA', stdout='5\n')


def test_canaries_catch_a_judge_that_lies_or_a_broken_sandbox():
    report = run_canaries(Judging(lambda code, expected: True))   # accepts everything
    assert not report.healthy and set(report.failures) == {'wrong', 'crash', 'early_exit'}
    assert "canary 'wrong': expected WA, got AC" in report.reason
    broken = run_canaries(Recording(OSError("pool down")))
    assert not broken.healthy and set(broken.failures) == {n for n, *_ in CANARY_PROGRAMS}
    assert all(v == 'IE' for v in broken.got.values()) and 'pool down' in broken.reason


def test_canaries_are_never_the_same_program_twice():
    "A caching worker (the trainer's) would answer a repeated canary from its cache without running it."
    w = Judging(lambda code, expected: True)
    asyncio.run(arun_canaries(w))
    asyncio.run(arun_canaries(w))
    assert len(set(w.codes)) == len(w.codes) == 2 * len(CANARY_PROGRAMS)
