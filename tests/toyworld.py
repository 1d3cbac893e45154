"A tiny two-agent world for engine tests: a scout hints how much is missing, a runner adds it."
from dataclasses import dataclass
from pettingllms_nb.core.state import EnvState
from pettingllms_nb.core.env import Env
from pettingllms_nb.core.agent import Agent
from pettingllms_nb.core.parsing import parse_literal, FormatError
from pettingllms_nb.core.rewards import RewardSpec, local, team, process
from pettingllms_nb.core.registry import registry


@dataclass
class RelayState(EnvState):
    target: int = 0
    count: int = 0
    hint: int | None = None
    log: list = None


class RelayEnv(Env):
    state_cls, default_max_turns = RelayState, 3
    default_turn_order = ['scout', 'runner']
    def make_state(self, rng): return RelayState(target=rng.randint(1, 9), log=[])
    def is_success(self): return self.state.count == self.state.target
    def is_terminal(self): return self.state.count > self.state.target


def _number(resp):
    v = parse_literal(resp)
    if len(v) != 1 or not isinstance(v[0], int) or isinstance(v[0], bool): raise FormatError("expected #### [k]")
    return v[0]


class Scout(Agent):
    reward_spec = RewardSpec([local('hint_right', lambda e, a: float(e.state.hint == e.state.target - e.state.count)),
                              process('format', lambda e, a: -0.5 if a.format_error else 0.)])
    def build_prompt(self, env, t): return f"target {env.state.target}, count {env.state.count}, turn {t}"
    def parse(self, r): return _number(r)
    async def step(self, env, worker=None):
        env.state.hint = self.current_action
        env.state.log.append(('scout', self.current_action))


class Runner(Agent):
    reward_spec = RewardSpec([local('gap', lambda e, a: -abs(e.state.target - e.state.count)),
                              team('solved', lambda e, a: float(e.success)),
                              process('format', lambda e, a: -0.5 if a.format_error else 0.)])
    def build_prompt(self, env, t): return f"count {env.state.count}, hint {env.state.hint}"
    def parse(self, r): return _number(r)
    async def step(self, env, worker=None):
        if self.current_action is not None:
            env.state.count += self.current_action
            env.state.log.append(('runner', self.current_action))


def register():
    if 'toy_relay' not in registry.names('env'):
        registry.add('env', 'toy_relay', RelayEnv); RelayEnv.name = 'toy_relay'
        registry.add('agent', 'scout', Scout, env='toy_relay'); Scout.role = 'scout'
        registry.add('agent', 'runner', Runner, env='toy_relay'); Runner.role = 'runner'


def truth(req):
    t, rest = req.text.split('target ')[1].split(', count ')
    return f"#### [{int(t) - int(rest.split(',')[0])}]"


def trust(req):
    h = req.text.split('hint ')[1]
    return f"#### [{h}]" if h != 'None' else "#### [0]"
