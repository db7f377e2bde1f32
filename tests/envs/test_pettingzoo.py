"""The multi-agent envs as PettingZoo ParallelEnvs: PettingZoo's own API and seed tests, dying agents, frames."""

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import parallel_api_test, parallel_seed_test  # noqa: E402

from jaxrl.envs.pettingzoo import parallel_env  # noqa: E402

RULESETS = ["standard", "solo", "wrapped", "constrictor", "wrapped_constrictor", "royale"]
ENVS = [
    pytest.param("arena", {}, id="arena-standard"),
    *[pytest.param("arena", {"ruleset": r}, id=f"arena-{r}", marks=pytest.mark.slow) for r in RULESETS[1:]],
    pytest.param("arena", {"num_snakes": 2, "size": 7}, id="arena-duel", marks=pytest.mark.slow),
    pytest.param("arena", {"num_snakes": 4, "num_agents": 2}, id="arena-two-agents-two-bots", marks=pytest.mark.slow),
    pytest.param("grid", {"num_agents": 3, "num_bots": 1, "max_steps_in_episode": 40}, id="grid"),
    pytest.param(
        "arena_open",
        {"width": 24, "height": 20, "num_snakes": 6, "num_food": 12, "max_steps_in_episode": 60},
        id="arena_open",
    ),
    pytest.param(
        "arena_open",
        {"width": 24, "height": 20, "num_snakes": 6, "num_food": 12, "rules": "pufferlib", "max_steps_in_episode": 60},
        id="arena_open-pufferlib",
        marks=pytest.mark.slow,
    ),
]


@pytest.mark.filterwarnings("error::UserWarning")  # PettingZoo's test warns where an agent was skipped or revived
@pytest.mark.parametrize(("name", "settings"), ENVS)
def test_pettingzoos_own_tests_pass(name, settings):
    parallel_api_test(parallel_env(name, **settings), num_cycles=1000)
    parallel_seed_test(lambda: parallel_env(name, **settings))


def test_every_arena_seat_is_an_agent_and_the_dead_leave_the_live_list():
    env = parallel_env("arena", num_snakes=4)
    assert env.possible_agents == ["snake_0", "snake_1", "snake_2", "snake_3"]
    assert env.observation_space("snake_2").shape == (11, 11, 8) and env.action_space("snake_2").n == 4
    ended_alone = 0
    for seed in range(6):
        obs, infos = env.reset(seed=seed)
        assert set(obs) == set(infos) == set(env.possible_agents)
        gone: set[str] = set()
        while env.agents:
            live = list(env.agents)
            # Straight on into the wall: each snake dies once it reaches an edge.
            obs, rewards, terms, truncs, infos = env.step({a: 1 for a in live})
            assert set(obs) == set(rewards) == set(terms) == set(truncs) == set(live)
            alive = np.asarray(env._state.alive)
            for i, a in enumerate(env.possible_agents):
                if a not in live:
                    continue
                if terms[a] or truncs[a]:
                    gone.add(a)
                    assert a not in env.agents
                    if alive[i]:  # a live snake ends only with the game: it won, or the step limit came
                        assert not env.agents
                        ended_alone += bool(terms[a]) and rewards[a] > 0
                else:
                    assert a in env.agents and alive[i]
        assert gone == set(env.possible_agents)
    assert ended_alone >= 1  # some game was won by its last snake, which then left the list too
    with pytest.raises(RuntimeError, match="every agent has left"):
        env.step({})


def test_frames_are_the_envs_own_and_bad_input_is_one_line():
    env = parallel_env("arena", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.std() > 0
    assert parallel_env("arena").render() is None
    with pytest.raises(ValueError, match="render_mode='human' is not supported by arena; allowed: rgb_array"):
        parallel_env("arena", render_mode="human")
    with pytest.raises(KeyError, match="agent 'snake_9' is not an agent of arena"):
        env.step({"snake_9": 0})
    with pytest.raises(KeyError, match="no action for live agent 'snake_1'"):
        env.step({"snake_0": 0})
    with pytest.raises(ValueError, match="num_snakes"):
        parallel_env("arena", num_snakes=0)
