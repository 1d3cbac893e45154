"Config loading, presets, overrides and the validation checklist (pettingllms_nb.core.config)."
import pickle
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from pettingllms_nb.core.agent import Agent
from pettingllms_nb.core.config import (ConfigError, Config, agent_config, agent_kwargs, agent_policies, agent_roles,
                                        env_kwargs, list_presets, load_config, validation_seeds)
from pettingllms_nb.core.env import Env
from pettingllms_nb.core.registry import Registry, registry as global_registry

PRESETS = ['gpu_blocksworld_qwen3_1.7b_lora', 'gpu_eight_queens_qwen3_1.7b_lora', 'stateful_blocksworld', 'stateful_blocksworld_single',
           'stateful_eight_queens', 'stateful_eight_queens_single', 'tiny_blocksworld', 'tiny_blocksworld_lora',
           'tiny_blocksworld_single', 'tiny_eight_queens', 'tiny_eight_queens_lora', 'tiny_eight_queens_single',
           'gpu_plan_path_qwen3_1.7b', 'gpu_plan_path_qwen3_1.7b_lora', 'gpu_sokoban_qwen3_8b_lora', 'gpu_sudoku_qwen3_1.7b_lora',
           'stateful_plan_path', 'stateful_plan_path_lora', 'stateful_plan_path_single', 'stateful_sokoban',
           'stateful_sokoban_single', 'stateful_sudoku', 'stateful_sudoku_single',
           'tiny_plan_path', 'tiny_plan_path_lora', 'tiny_plan_path_single', 'tiny_plan_path_tool',
           'tiny_plan_path_tool_lora', 'tiny_plan_path_tool_single', 'tiny_sokoban', 'tiny_sokoban_lora',
           'tiny_sokoban_single', 'tiny_sudoku', 'tiny_sudoku_lora', 'tiny_sudoku_single']
MATH_PRESETS = ['tiny_math', 'tiny_math_lora', 'tiny_math_single']   # checked in test_math_generated.py
CODE_PRESETS = ['code_env', 'code_env_single', 'gpu_code_qwen3_1.7b_lora', 'tiny_code', 'tiny_code_lora', 'tiny_code_single']   # checked in test_code_env.py
SEARCH_PRESETS = ['gpu_search_qwen3_1.7b_lora', 'search_env', 'search_env_single', 'tiny_search', 'tiny_search_lora',
                  'tiny_search_single']   # checked in test_search_env.py
DATA_PRESETS = ['tiny_search_hotpotqa']   # presets that name a data source: checked in test_data_sources.py
INTEROP_PRESETS = ['gpu_reasoning_gym_qwen3_1.7b_lora', 'reasoning_gym', 'reasoning_gym_single',   # test_interop_reasoning_gym.py
                   'tiny_openenv']   # a relay to a remote: checked in test_interop_train.py
ALFWORLD_PRESETS = ['alfworld', 'alfworld_single', 'gpu_alfworld_qwen3_1.7b_lora', 'gpu_alfworld_real_qwen3_1.7b_lora',
                    'tiny_alfworld', 'tiny_alfworld_lora', 'tiny_alfworld_single']   # checked in test_alfworld.py
WEB_PRESETS = ['gpu_web_shop_qwen3_1.7b_lora', 'tiny_web_forms', 'tiny_web_forms_lora', 'tiny_web_forms_single',
               'tiny_web_shop', 'tiny_web_shop_lora', 'tiny_web_shop_single', 'web_miniwob', 'web_shop', 'web_shop_single']   # test_web.py


class StandInEnv(Env):
    def make_state(self, rng): return self.state_cls()


class StandInAgent(Agent):
    def build_prompt(self, env, turn_idx): return ''
    async def step(self, env, worker=None): pass


@pytest.fixture(scope='module')
def reg():
    "A private registry with stand-ins for stateful_env and its agents (the real ones may not exist yet)."
    r = Registry(builtins={}, plugin_group=None)
    r.add('env', 'stateful_env', StandInEnv)
    for role in ('plan_agent', 'tool_call_agent', 'stateful_single_agent'): r.add('agent', role, StandInAgent, env='stateful_env')
    r.add('env', 'other_env', StandInEnv)
    r.add('agent', 'other_agent', StandInAgent, env='other_env')
    return r


def errors(reg, overrides, preset='stateful_plan_path'):
    with pytest.raises(ConfigError) as info: load_config(preset, overrides, registry=reg)
    return str(info.value)


# -- presets -----------------------------------------------------------------------------------

def test_list_presets():
    assert list_presets() == sorted(PRESETS + MATH_PRESETS + CODE_PRESETS + SEARCH_PRESETS + ALFWORLD_PRESETS + WEB_PRESETS + DATA_PRESETS + INTEROP_PRESETS)


@pytest.mark.parametrize('name', PRESETS)
def test_every_preset_loads(reg, name):
    cfg = load_config(name, registry=reg)
    assert isinstance(cfg, Config)
    gpu = name.startswith('gpu_')
    assert cfg.env.name == 'stateful_env' and cfg.training.device == ('cuda' if gpu else 'cpu')
    assert cfg.base_models.policy_0.path.startswith('Qwen/Qwen3-') if gpu else cfg.base_models.policy_0.path == 'tiny'
    if gpu:   # the reference's AT-GRPO settings (shared/reference/RESULTS.md)
        t = cfg.training
        assert (t.total_training_steps, t.train_batch_size, t.lr, t.clip_ratio, cfg.lora_rank, cfg.lora_alpha) == (200, 32, 5e-6, 0.2, 16, 32)
        assert t.train_sample_num == (4 if 'sokoban' in name else 8)
    assert cfg.env.source in name
    assert cfg.training.experiment_name == name
    single = name.endswith('_single')
    assert agent_roles(cfg) == (['stateful_single_agent'] if single else ['tool_call_agent', 'plan_agent'])
    assert cfg.agent_policy_configs.num_agents == cfg.multi_agent_interaction.num_interacting_agents == (1 if single else 2)
    assert cfg.specialization == ('lora' if name.endswith('_lora') else 'prompt')


@pytest.mark.skipif('stateful_env' not in global_registry.names('env'),
                    reason='pettingllms_nb.envs.stateful is not importable yet')
@pytest.mark.parametrize('name', PRESETS)
def test_presets_with_the_real_registry(name):
    assert load_config(name).env.name == 'stateful_env'


def test_lora_preset_is_one_adapter_per_agent_on_one_model(reg):
    pol = agent_policies(load_config('stateful_plan_path_lora', registry=reg))
    assert {p['model'] for p in pol.values()} == {'shared_model'}
    assert {r: p['adapter'] for r, p in pol.items()} == {'tool_call_agent': 'tool_call_agent', 'plan_agent': 'plan_agent'}
    assert all(p['adapter'] is None for p in agent_policies(load_config('stateful_plan_path', registry=reg)).values())


def test_unknown_preset_did_you_mean():
    with pytest.raises(ConfigError, match="did you mean 'stateful_sudoku'"): load_config('stateful_sudokku')


# -- overrides and interpolation ---------------------------------------------------------------

def test_overrides(reg):
    cfg = load_config('stateful_sudoku', ['training.lr=1e-4', 'env.max_turns=2'], registry=reg)
    assert cfg.training.lr == 1e-4 and isinstance(cfg.training.lr, float)
    assert cfg.env.max_turns == 2
    fresh = load_config('stateful_sudoku', registry=reg)   # overrides never leak into the shared schema or preset
    assert (fresh.training.lr, fresh.env.max_turns) == (1e-3, 4)
    assert env_kwargs(cfg) == {'max_turns': 2, 'benchmark': 'sudoku', 'size': 4}
    assert load_config('stateful_sudoku', 'env.kwargs.holes=6', registry=reg).env.kwargs.holes == 6   # a single string works too
    assert load_config('stateful_sudoku', ['multi_agent_interaction.turn_order=[plan_agent, tool_call_agent]'],
                       registry=reg).multi_agent_interaction.turn_order == ['plan_agent', 'tool_call_agent']


def test_interpolation_resolves(reg):
    cfg = load_config('stateful_plan_path_lora', ['lora_rank=4'], registry=reg)
    assert (cfg.training.lora_rank, cfg.training.lora_alpha) == (4, 16)
    assert cfg.training.output_dir == 'runs/stateful_plan_path_lora'
    assert '${' not in cfg.to_yaml()


def test_bad_override_syntax(reg):
    with pytest.raises(ConfigError, match="override 'training.lr'"): load_config('stateful_sudoku', ['training.lr'], registry=reg)


def test_wrong_type(reg):
    msg = errors(reg, ['training.lr=fast'])
    assert "training.lr='fast': allowed values are numbers" in msg and 'Float' not in msg   # our words, not OmegaConf's


def test_readonly(reg):
    cfg = load_config('stateful_sudoku', registry=reg)
    with pytest.raises(AttributeError, match='read-only'): cfg.lora_rank = 3
    with pytest.raises(Exception, match='[Rr]ead-only'): cfg.training.lr = 3.0


# -- unknown keys ------------------------------------------------------------------------------

@pytest.mark.parametrize('overrides,expected', [
    (['training.lerning_rate=1e-4'], "'training.lerning_rate': did you mean 'training.lr'"),
    (['training.learning_rate=1e-4'], "did you mean 'training.lr'"),
    (['training.max_turns=3'], "did you mean 'env.max_turns'"),
    (['env.grid=5'], 'free-form arguments go under env.kwargs'),
    (['specialisation=lora'], "did you mean 'specialization'"),
    (['agent_policy_configs.agent_configs.agent_0.policy=shared_model'],
     "did you mean 'agent_policy_configs.agent_configs.agent_0.policy_name'"),
])
def test_unknown_key_in_override(reg, overrides, expected):
    msg = errors(reg, overrides)
    assert 'unknown key' in msg and expected in msg


def test_unknown_key_in_file(reg, tmp_path):
    p = tmp_path/'typo.yaml'
    p.write_text('defaults: [stateful_sudoku]\ntraining: {kl_coeff: 0.1}\n')
    with pytest.raises(ConfigError, match="'training.kl_coeff': did you mean 'training.kl_coef'"): load_config(p, registry=reg)


# -- the checklist: each error names the key, the bad value and what is allowed -----------------

TWO_MODELS = ['base_models.policy_1={path: tiny, name: tool_model}', 'agent_policy_configs.agent_configs.agent_1.policy_name=tool_model']

@pytest.mark.parametrize('overrides,key,allowed', [
    (['specialization=lroa'], "specialization='lroa'", "['prompt', 'lora', 'full']"),
    (['specialization=lora', 'lora_rank=0'], 'lora_rank=0', '>= 1'),
    (['specialization=lora', 'lora_alpha=-2'], 'lora_alpha=-2', '>= 1'),
    (['multi_agent_interaction.turn_order=[]'], 'multi_agent_interaction.turn_order=[]', "non-empty list of agent names from ['plan_agent', 'tool_call_agent']"),
    (['multi_agent_interaction.turn_order=[plan_agent, tool_call_agent, plan_agent]'],
     "multi_agent_interaction.turn_order=['plan_agent', 'tool_call_agent', 'plan_agent']", "each agent at most once"),
    (['multi_agent_interaction.turn_order=[tool_call_agent, planner]'], "turn_order: 'planner'", "allowed values are ['plan_agent', 'tool_call_agent']"),
    (['multi_agent_interaction.num_interacting_agents=3'], 'multi_agent_interaction.num_interacting_agents=3', 'allowed value is 2'),
    (['agent_policy_configs.num_agents=1'], 'agent_policy_configs.num_agents=1', 'allowed value is 2'),
    (['agent_policy_configs.policy_list=[plan_agent, coder]'], "agent_policy_configs.policy_list=['plan_agent', 'coder']",
     "['plan_agent', 'tool_call_agent']"),
    (['agent_policy_configs.agent_configs.agent_1.name=plan_agent'], "agent_configs.agent_1.name='plan_agent'", 'names not used by another agent'),
    (['agent_policy_configs.agent_configs.agent_0.policy_name=big_model'], "agent_configs.agent_0.policy_name='big_model'",
     "base_models names ['shared_model']"),
    (['specialization=full'], "agent_configs.agent_1.policy_name='shared_model'", 'base_models names no other agent uses'),
    (TWO_MODELS, "agent_configs.agent_1.policy_name='tool_model'", "allowed value is 'shared_model'"),
    (['env.name=stateful'], "env.name='stateful'", "did you mean 'stateful_env'"),
    (['agent_policy_configs.agent_configs.agent_0.name=other_agent', 'multi_agent_interaction.turn_order=[tool_call_agent, other_agent]'],
     "agent_configs.agent_0.name='other_agent'", "not an agent registered for env 'stateful_env'; allowed values are ['plan_agent'"),
    (['env.max_turns=0'], 'env.max_turns=0', '>= 1'),
    (['agent_policy_configs.agent_configs.agent_0.train_temperature=-1'], 'agent_0.train_temperature=-1.0', '>= 0'),
    (['agent_policy_configs.agent_configs.agent_1.val_temperature=-0.5'], 'agent_1.val_temperature=-0.5', '>= 0'),
    (['training.sample_temperature=-1'], 'training.sample_temperature=-1.0', '>= 0'),
    (['training.train_sample_num=0'], 'training.train_sample_num=0', '>= 1'),
    (['training.train_batch_size=0'], 'training.train_batch_size=0', '>= 1'),
    (['training.total_training_steps=-1'], 'training.total_training_steps=-1', '>= 0'),
    (['training.rollout_mode=trees'], "training.rollout_mode='trees'", "['tree', 'independent']"),
    (['multi_agent_interaction.schedule=parallel'], "multi_agent_interaction.schedule='parallel'", "['sequential', 'simultaneous']"),
    (['resource.n_gpus_per_node=-1'], 'resource.n_gpus_per_node=-1', '>= 0'),
    (['training.device=gpu'], "training.device='gpu'", "'cpu', 'cuda', 'cuda:N' or 'mps'"),
    (['training.logger=[console, tensorbord]'], "training.logger='tensorbord'", "did you mean 'tensorboard'"),
    (['training.lr=0'], 'training.lr=0.0', '> 0'),
    (['training.clip_ratio=0'], 'training.clip_ratio=0.0', '> 0'),
    (['training.val_seeds=[1, 1]'], 'training.val_seeds=[1, 1]', 'distinct integers'),
    (['training.val_size=0'], 'training.val_size=0', '>= 1'),
])
def test_checklist_rule(reg, overrides, key, allowed):
    msg = errors(reg, overrides)
    assert key in msg, msg
    assert allowed in msg, msg


def test_lora_rank_only_checked_with_lora(reg):
    assert load_config('stateful_plan_path', ['lora_rank=0'], registry=reg).lora_rank == 0


def test_full_with_one_model_per_agent(reg):
    cfg = load_config('stateful_plan_path', ['specialization=full'] + TWO_MODELS, registry=reg)
    assert {r: p['model'] for r, p in agent_policies(cfg).items()} == {'tool_call_agent': 'tool_model', 'plan_agent': 'shared_model'}


def test_all_problems_reported_at_once(reg):
    with pytest.raises(ConfigError) as info:
        load_config('stateful_plan_path', ['training.rollout_mode=trees', 'env.max_turns=0', 'env.name=nope'], registry=reg)
    assert len(info.value.errors) == 3


def test_missing_required(reg):
    with pytest.raises(ConfigError, match=r"env.name='\?\?\?'"): load_config({'training': {'lr': 1e-3}}, registry=reg)


def test_unavailable_env_says_why():
    r = Registry(builtins={'no_such_module_for_test': (None, [('env', 'ghost_env')])}, plugin_group=None)
    with pytest.raises(ConfigError, match="ghost_env' is unavailable"):
        load_config('stateful_sudoku', ['env.name=ghost_env'], registry=r)


# -- sources, round trips and helpers ----------------------------------------------------------

def test_dict_dictconfig_and_config_sources(reg):
    cfg = load_config('stateful_sudoku', registry=reg)
    d = cfg.to_dict()
    assert load_config(d, registry=reg) == cfg
    assert load_config(OmegaConf.create(d), registry=reg) == cfg
    assert load_config(cfg, registry=reg) == cfg
    assert load_config(cfg, ['training.seed=3'], registry=reg).training.seed == 3


def test_save_and_reload(reg, tmp_path):
    cfg = load_config('stateful_sokoban_single', registry=reg)
    assert load_config(cfg.save(tmp_path/'run.yaml'), registry=reg) == cfg


def test_pickle(reg):
    cfg = load_config('stateful_sudoku', registry=reg)
    assert pickle.loads(pickle.dumps(cfg)) == cfg


def test_reprs(reg):
    cfg = load_config('stateful_sudoku', registry=reg)
    assert cfg._repr_markdown_().startswith('**Config** `stateful_sudoku`') and '```yaml' in cfg._repr_markdown_()
    assert 'stateful_env/sudoku' in repr(cfg)


def test_agent_helpers(reg):
    cfg = load_config('stateful_plan_path', ['training.alpha=0.5', 'agent_policy_configs.agent_configs.agent_0.alpha=0.2',
                                             'agent_policy_configs.agent_configs.agent_0.system_prompt=You plan.'], registry=reg)
    assert agent_kwargs(cfg, 'plan_agent') == {'alpha': 0.2, 'system_prompt': 'You plan.'}
    assert agent_kwargs(cfg, 'tool_call_agent') == {'alpha': 0.5}
    assert agent_config(cfg, 'tool_call_agent').policy_name == 'shared_model'
    with pytest.raises(KeyError, match='plan_agent'): agent_config(cfg, 'plan_agnet')


def test_validation_seeds(reg):
    cfg = load_config('stateful_sudoku', registry=reg)
    seeds = validation_seeds(cfg)
    assert len(seeds) == cfg.training.val_size and len(set(seeds)) == len(seeds)
    assert validation_seeds(load_config(cfg, ['training.val_seeds=[5, 2]'], registry=reg)) == [5, 2]


REFERENCE_L2 = '''
defaults:
  - ../ppo_trainer@models.model_0.ppo_trainer_config: eval
  - _self_
lora_rank: 16
lora_alpha: 32
specialization: "lora" # prompt, lora, full
resource: {nnodes: 1, n_gpus_per_node: 8, trust_remote_code: true}
env: {name: stateful_env, dataset: "polaris", benchmark: "plan_path", max_turns: 5, resolve: false, multi_modal: false, batched_init: true}
base_models:
  policy_0: {path: "your base model path", name: "shared_model"}
agent_policy_configs:
  num_agents: 2
  policy_list: ["plan_agent", "tool_call_agent"]
  agent_configs:
    agent_0: {name: "plan_agent", policy_name: "shared_model", enable_thinking: false, train_temperature: 1.0, val_temperature: 0}
    agent_1: {name: "tool_call_agent", policy_name: "shared_model", enable_thinking: false, train_temperature: 1.0, val_temperature: 0}
multi_agent_interaction:
  turn_order: ["tool_call_agent", "plan_agent"]
  num_interacting_agents: 2
training:
  device: cuda
  total_training_steps: 200
  project_name: pettingllms
  experiment_name: stateful_L2_lora
  logger: [ 'console', 'wandb' ]
  model_checkpoints_dir: checkpoints
  ray_wait_register_center_timeout: 300
  train_batch_size: 32
  train_sample_num: 8
  validate_sample_num: 1
  sample_temperature: 1
  val_freq: 10
  resample_freq: 3
  max_prompt_length: 4096
  max_response_length: 2048
  lora_rank: ${lora_rank}
  lora_alpha: ${lora_alpha}
models:
  model_0:
    path: ${base_models.policy_0.path}
    name: ${base_models.policy_0.name}
'''


def test_reference_config_ports(reg, tmp_path):
    p = tmp_path/'stateful_L2_lora.yaml'
    p.write_text(REFERENCE_L2)
    cfg = load_config(p, registry=reg)
    assert (cfg.specialization, cfg.training.lora_rank, cfg.training.lora_alpha) == ('lora', 16, 32)
    assert 'models' not in cfg and agent_roles(cfg) == ['tool_call_agent', 'plan_agent']


def test_circular_defaults(tmp_path, reg):
    (tmp_path/'a.yaml').write_text('defaults: [b]\n')
    (tmp_path/'b.yaml').write_text('defaults: [a]\n')
    with pytest.raises(ConfigError, match='circular'): load_config(tmp_path/'a.yaml', registry=reg)


# -- the catalogue of bad configs that used to fail deep inside construction (issue 11) --------
# Each is refused by load_config itself, against the real environments' own parameter declarations (core.params),
# with the key, the value and what is allowed; nothing is built.
CATALOGUE = [
    ('tiny_plan_path', ['env.source=chess'], "env.source='chess'", "allowed values are ['blocksworld', 'eight_queens', 'plan_path', 'sokoban', 'sudoku', 'suduku']"),
    ('tiny_plan_path', ['env.kwargs.foo=1'], 'env.kwargs.foo=1', "not a parameter of environment 'stateful_env'; allowed parameters are"),
    ('tiny_sudoku', ['env.size=5'], 'env.size=5', 'allowed values are [4, 9]'),
    ('tiny_plan_path', ['env.size=1'], 'env.size=1', 'allowed values are integers >= 2'),
    ('tiny_plan_path_lora', ['training.full_finetune=true'], "training.full_finetune=True with specialization='lora'",
     'allowed value is false'),
    ('tiny_plan_path', ['agent_policy_configs.agent_configs.agent_1.kwargs.time_limit=-1'],
     'agent_policy_configs.agent_configs.agent_1.kwargs.time_limit=-1', 'allowed values are numbers > 0 and <= 600'),
    ('code_env', ['env.kwargs.time_limit=-2.5'], 'env.kwargs.time_limit=-2.5', 'allowed values are numbers > 0 and <= 600'),
    ('tiny_sokoban', ['env.kwargs.num_boxes=9'], 'env.kwargs.num_boxes=9', 'expected an integer in [1, 2] for size 5'),
    ('tiny_sudoku', ['env.kwargs.num_boxes=2'], 'env.kwargs.num_boxes=2', "not a parameter of the sudoku game; allowed parameters are ['max_holes', 'size']"),
    ('tiny_plan_path', ['env.kwargs.prompt_style=tiny'], "env.kwargs.prompt_style='tiny'", "allowed values are ['full', 'compact']"),
    ('tiny_search', ['env.kwargs.topk=0'], 'env.kwargs.topk=0', 'allowed values are integers >= 1 and <= 20'),
    ('tiny_search', ['env.kwargs.retriever=http'], 'env.kwargs.retriever_url=None', "retriever='http' needs it"),
    ('code_env', ['env.kwargs.reward_tests=hiden'], "env.kwargs.reward_tests='hiden'", "did you mean 'hidden'"),
    ('code_env', ['agent_policy_configs.agent_configs.agent_1.kwargs.max_tests=0'],
     'agent_policy_configs.agent_configs.agent_1.kwargs.max_tests=0', 'allowed values are integers >= 1'),
    ('tiny_plan_path', ['agent_policy_configs.agent_configs.agent_0.kwargs.temprature=1'],
     'agent_policy_configs.agent_configs.agent_0.kwargs.temprature=1', "not a parameter of agent"),
    ('tiny_plan_path', ['training.max_infra_error_share=2'], 'training.max_infra_error_share=2.0', 'allowed values are in [0, 1]'),
    ('tiny_plan_path', ['training.tiny_vocab=bytes'], "training.tiny_vocab='bytes'", "allowed values are ['char', 'bpe']"),
    ('tiny_alfworld', ['training.warmstart_lr_schedule=cosin'], "training.warmstart_lr_schedule='cosin'", "did you mean 'cosine'"),
    ('tiny_plan_path', ['training.tiny_vocab_size=100'], 'training.tiny_vocab_size=100', 'allowed values are numbers >= 260'),
]


@pytest.mark.parametrize('preset,overrides,key,allowed', CATALOGUE)
def test_bad_configs_are_refused_at_load_with_key_value_and_allowed(preset, overrides, key, allowed):
    with pytest.raises(ConfigError) as info: load_config(preset, overrides)
    msg = str(info.value)
    assert key in msg and allowed in msg, msg
    assert len(info.value.errors) == 1, info.value.errors     # one mistake, one line


# The same for the environments with an extra of their own (alfworld_env, web_env): skipped where it is not installed.
_AGENT = 'agent_policy_configs.agent_configs.agent_{}.kwargs.'
EXTRA_CATALOGUE = [
    ('alfworld_env', 'tiny_alfworld', ['env.kwargs.task_types=[7]'], 'env.kwargs.task_types=[7]',
     'are not task types; allowed are [1, 2, 3, 4, 5, 6]'),
    ('alfworld_env', 'tiny_alfworld', ['env.source=alfworld', 'env.split=vaild_seen'], "env.split='vaild_seen'",
     "allowed values are the splits of 'alfworld', ['valid_seen', 'valid_unseen', 'train']; did you mean 'valid_seen'?"),
    ('alfworld_env', 'tiny_alfworld', ['env.split=train'], "env.split='train'",
     "a parameter of benchmark='alfworld', not of 'generated'"),
    ('alfworld_env', 'tiny_alfworld', ['env.source=chess'], "env.source='chess'",
     "allowed values are ['generated', 'alfworld', 'textworld']"),
    ('alfworld_env', 'tiny_alfworld', ['env.max_turns=-1'], 'env.max_turns=-1', 'allowed values are numbers >= 1'),
    ('alfworld_env', 'tiny_alfworld', ['env.kwargs.history=-1'], 'env.kwargs.history=-1', 'allowed values are integers >= 0'),
    ('alfworld_env', 'tiny_alfworld', ['env.kwargs.histroy=2'], 'env.kwargs.histroy=2', "did you mean 'history'?"),
    ('alfworld_env', 'tiny_alfworld', ['env.kwargs.timeout=0'], 'env.kwargs.timeout=0', 'allowed values are numbers > 0'),
    ('alfworld_env', 'alfworld', [_AGENT.format(1) + 'prompt_style=compact'], _AGENT.format(1) + "prompt_style='compact'",
     "not a parameter of agent 'alfworld_executor'; allowed parameters are ['alpha', 'credit', 'credit_gamma', 'system_prompt']"),
    ('web_env', 'tiny_web_shop', ['env.split=dev'], "env.split='dev'", "allowed values are ['train', 'test']"),
    ('web_env', 'tiny_web_shop', ['env.kwargs.backend=chromium'], "env.kwargs.backend='chromium'",
     "allowed values are ['text', 'browser']"),
    ('web_env', 'tiny_web_shop', ['env.kwargs.family=miniwob'], "env.kwargs.catalogue='tiny-0'",
     "not a parameter of family='miniwob'"),
    ('web_env', 'tiny_web_forms', ['env.kwargs.tasks=[click-tab]'], "env.kwargs.tasks=['click-tab']",
     "are not in text mode's pages (the others run scripts: backend='browser')"),
    ('web_env', 'web_miniwob', ['env.kwargs.tasks=[click-moon]'], "env.kwargs.tasks=['click-moon']",
     'are not in the documented MiniWoB++ subset; allowed are tasks of'),
    ('web_env', 'tiny_web_shop', ['env.kwargs.catalogue=webshop-small'], "env.kwargs.catalogue='webshop-small'",
     'needs webshop_path'),
    ('web_env', 'tiny_web_shop', ['env.kwargs.screenshot=false'], 'env.kwargs.screenshot=False', "did you mean 'screenshots'?"),
    ('web_env', 'tiny_web_shop', [_AGENT.format(0) + 'prompt_style=tiny'], _AGENT.format(0) + "prompt_style='tiny'",
     "allowed values are ['full', 'compact'] (or null)"),
]


@pytest.mark.parametrize('env,preset,overrides,key,allowed', EXTRA_CATALOGUE)
def test_bad_configs_of_alfworld_and_web_are_refused_at_load(env, preset, overrides, key, allowed):
    if env not in global_registry.names('env'): pytest.skip(f"{env} is unavailable here (its extra is not installed)")
    load_config(preset)                                       # the preset itself is fine
    with pytest.raises(ConfigError) as info: load_config(preset, overrides)
    msg = str(info.value)
    assert key in msg and allowed in msg, msg
    assert len(info.value.errors) == 1, info.value.errors     # one mistake, one line


def test_every_preset_passes_its_environments_declarations():
    for name in list_presets(): load_config(name)             # the real registry: every declared parameter allowed


def test_yaml_syntax_error_is_a_config_error_with_line_and_column(tmp_path):
    p = tmp_path / 'broken.yaml'
    p.write_text("description: a run\nenv:\n  name: stateful_env\n  kwargs: {prompt_style: compact\ntraining:\n  lr: 1e-3\n")
    with pytest.raises(ConfigError) as info: load_config(p)
    (msg,) = info.value.errors
    assert msg.startswith('YAML syntax error at line 5, column 9:'), msg
    assert str(p) in str(info.value)
    p.write_text("env:\n  name: stateful_env\n  name: code_env\n")  # a duplicate key is a YAML error too
    with pytest.raises(ConfigError, match='YAML syntax error at line 3'): load_config(p)
    with pytest.raises(ConfigError, match="override 'env.kwargs=.size: 4': the value is not valid YAML"):
        load_config('tiny_plan_path', ['env.kwargs={size: 4'])


def test_the_old_keys_that_chose_problems_still_read_and_warn():
    "`env.benchmark` and `env.dataset` still choose the problems, with a warning that names `env.source`."
    import warnings
    from pettingllms_nb.core.config import env_kwargs
    with pytest.warns(DeprecationWarning, match=r"env.benchmark is deprecated; use env.source \(with env.split\): write env.source: sudoku"):
        old = load_config('stateful_sudoku', ['env.source=null', 'env.benchmark=sudoku'])
    with warnings.catch_warnings():
        warnings.simplefilter('error')                  # the presets themselves use env.source: no warning
        new = load_config('stateful_sudoku')
    assert env_kwargs(old) == env_kwargs(new) == {'max_turns': 4, 'benchmark': 'sudoku', 'size': 4}
    with pytest.warns(DeprecationWarning, match=r"env.dataset is deprecated; use env.source \(with env.split\): remove it"):
        load_config('code_env', ['env.dataset=original'])   # the same problems as env.source: read, with the advice
    # another set than env.source names is refused at load (issue 25: it was ignored, or failed after the warm start)
    with pytest.raises(ConfigError, match=r"env.dataset='humaneval': contradicts env.source='original', which chooses "
                                          r"the problems; write env.source=humaneval"):
        load_config('code_env', ['env.dataset=humaneval'])
    with pytest.raises(ConfigError, match=r"env.benchmark='alfworld': contradicts env.source='generated'.*write env.source=alfworld"):
        load_config('tiny_alfworld', ['env.benchmark=alfworld', 'env.size=null'])


def test_core_config_keeps_its_star_import_surface():
    "`from pettingllms_nb.core.config import *` gives what it gave before the split (and check_source, with a warning)."
    import warnings
    ns = {}
    exec('from pettingllms_nb.core.config import *', ns)
    assert {'ConfigError', 'merge_config', 'check_config', 'env_kwargs', 'RunConfig', 'WORKERS', 'VAL_SEED_BASE', 'load_config'} <= set(ns)
    from pettingllms_nb.core import config
    from pettingllms_nb.data.sources import check_source
    with pytest.warns(DeprecationWarning, match='check_source is deprecated'): assert config.check_source is check_source
