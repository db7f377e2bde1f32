"""Our multi-agent envs as PettingZoo `ParallelEnv`s: numpy in and out, every learner seat an agent.

    env = jaxrl.envs.pettingzoo.parallel_env("arena", ruleset="royale")   # 4 snakes, each an agent
    obs, infos = env.reset(seed=0)
    while env.agents:
        obs, rewards, terminations, truncations, infos = env.step({a: env.action_space(a).sample() for a in env.agents})

Which envs: the arena (every seat an agent unless `num_agents` says fewer; the rest are its bots), the
grid (`num_agents` learners, `num_bots` bots), the open arena (every snake), and any other registered
env (one agent). Agent names: `snake_0 ..` in the arenas, `agent_0 ..` elsewhere, in seat order.

One jitted call a step. An agent leaves `env.agents` after the step that ends it: its death (terminated),
the game's end (the last snake standing is terminated too, as the engine ends the game there), or the step
limit (truncated). The open arena's snakes are born again, so none leaves before its window's truncation.
Observations are the env's own per seat (a dead seat's last one is its all-zero view); infos carry the
world's info at that step (the same for every agent). No env here has illegal moves (a move into a wall
or a body is legal and loses), so none offers an `action_mask`. `render_mode="rgb_array"` gives the env's
own frames, as its replays draw them.

pettingzoo is optional: `pip install "jaxrl[pettingzoo]"`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import jax
import jax.numpy as jnp
import numpy as np
from pettingzoo import ParallelEnv

from jaxrl.envs.base import hook, offers
from jaxrl.envs.gymnasium_adapter import to_space
from jaxrl.envs.registry import spec
from jaxrl.envs.render import GIF_PIXELS, upscale

EVERY_SEAT = {"arena": "num_snakes"}  # envs whose seats are all agents by default: the setting that counts them
SNAKES = ("arena", "arena_open")  # envs whose agents are named snake_i


def parallel_env(name: str, render_mode: str | None = None, **settings: Any) -> JaxParallelEnv:
    """`name` (a registered env; settings as for `envs.make`) as a PettingZoo `ParallelEnv`."""
    return JaxParallelEnv(name, render_mode=render_mode, **settings)


class JaxParallelEnv(ParallelEnv):
    """A jaxrl env as a `pettingzoo.ParallelEnv` (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10, "is_parallelizable": True}

    def __init__(self, name: str, render_mode: str | None = None, **settings: Any):
        described = spec(name)
        if name in EVERY_SEAT and "num_agents" not in settings:
            count = EVERY_SEAT[name]
            settings = {**settings, "num_agents": settings.get(count, described.shape_keys[count])}
        self.env, self.env_params = described.make(**settings)
        self.name, self.settings = name, settings
        modes = ["rgb_array"] if offers(self.env, "render_rgb") else []
        if render_mode is not None and render_mode not in modes:
            allowed = ", ".join(modes) if modes else "none: it does not draw itself"
            raise ValueError(f"render_mode={render_mode!r} is not supported by {name}; allowed: {allowed}")
        self.render_mode = render_mode
        self.metadata = {**self.metadata, "name": f"jaxrl/{name}", "render_modes": modes}
        self.num_seats = int(hook(self.env, "num_agents") or 1)
        prefix = "snake" if name in SNAKES else "agent"
        self.possible_agents = [f"{prefix}_{i}" for i in range(self.num_seats)]
        self.agents: list[str] = []
        self._index = {agent: i for i, agent in enumerate(self.possible_agents)}
        obs_space = self.env.observation_space(self.env_params)
        act_space = self.env.action_space(self.env_params)
        one_obs, one_act = to_space(obs_space), to_space(act_space)
        if self.num_seats > 1:  # the agent axis comes off: each agent's space is one seat's
            one_obs = gymnasium.spaces.Box(one_obs.low[0], one_obs.high[0], one_obs.shape[1:], one_obs.dtype)
            one_act = gymnasium.spaces.Discrete(int(act_space.n))
        # One space object per agent, the same object every call (PettingZoo seeds them one by one).
        self._obs_spaces = {a: _copy_space(one_obs) for a in self.possible_agents}
        self._act_spaces = {a: _copy_space(one_act) for a in self.possible_agents}
        env, params, k = self.env, self.env_params, self.num_seats

        def seats(x: jax.Array) -> jax.Array:
            return jnp.reshape(x, (k, *jnp.shape(x)[1:])) if k > 1 else jnp.reshape(x, (1, *jnp.shape(x)))

        def alive(state: Any) -> jax.Array:
            return env.seat_alive(state)[:k] if offers(env, "seat_alive") else jnp.ones(k, bool)

        def reset(key: jax.Array):
            key, sub = jax.random.split(key)
            obs, state = env.reset(sub, params)
            return key, state, seats(obs)

        def step(key: jax.Array, state: Any, action: jax.Array):
            key, sub = jax.random.split(key)
            obs, state, reward, terminated, info = env.step_env(sub, state, action if k > 1 else action[0], params)
            truncated = env.is_truncated(state, params)
            reward = jnp.broadcast_to(jnp.asarray(reward, jnp.float32), (k,))
            return key, state, (seats(obs), reward, terminated, truncated, alive(state), info)

        self._reset, self._step = jax.jit(reset), jax.jit(step)
        self._draw = jax.jit(env.render_rgb) if modes else None
        self._key = self._state = None

    def observation_space(self, agent: str) -> gymnasium.Space:
        return self._obs_spaces[self._agent(agent)]

    def action_space(self, agent: str) -> gymnasium.Space:
        return self._act_spaces[self._agent(agent)]

    def _agent(self, agent: str) -> str:
        if agent not in self._index:
            raise KeyError(f"agent {agent!r} is not an agent of {self.name}: {', '.join(self.possible_agents)}")
        return agent

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None or self._key is None:
            self._key = jax.random.key(int(np.random.SeedSequence().generate_state(1)[0]) if seed is None else seed)
        self._key, self._state, obs = self._reset(self._key)
        obs = np.asarray(obs)
        self.agents = list(self.possible_agents)
        return {a: obs[self._index[a]] for a in self.agents}, {a: {} for a in self.agents}

    def step(self, actions: dict[str, Any]):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        if not self.agents:
            raise RuntimeError("every agent has left: the game is over, call reset()")
        unknown = [a for a in actions if a not in self._index]
        if unknown:
            raise KeyError(f"agent {unknown[0]!r} is not an agent of {self.name}: {', '.join(self.possible_agents)}")
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise KeyError(f"no action for live agent {missing[0]!r}: step() takes one for each of env.agents")
        action = np.zeros(self.num_seats, np.int32)  # a seat out of the game: its move is not read
        for agent in self.agents:
            action[self._index[agent]] = int(actions[agent])
        self._key, self._state, out = self._step(self._key, self._state, action)
        obs, reward, terminated, truncated, alive, info = jax.device_get(out)  # one transfer
        info = {key: np.asarray(value) for key, value in info.items()}
        live, self.agents = self.agents, []
        observations, rewards, terminations, truncations, infos = {}, {}, {}, {}, {}
        for agent in live:
            i = self._index[agent]
            observations[agent], rewards[agent] = obs[i], float(reward[i])
            terminations[agent] = bool(terminated) or not bool(alive[i])
            truncations[agent] = bool(truncated) and not terminations[agent]
            infos[agent] = dict(info)
            if not (terminations[agent] or truncations[agent]):
                self.agents.append(agent)
        return observations, rewards, terminations, truncations, infos

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return upscale(np.asarray(jax.device_get(self._draw(self._state)))[None], GIF_PIXELS)[0]

    def close(self) -> None:
        self._state = None


def _copy_space(space: gymnasium.Space) -> gymnasium.Space:
    """A fresh space equal to `space`, with its own random generator."""
    if isinstance(space, gymnasium.spaces.Discrete):
        return gymnasium.spaces.Discrete(int(space.n), start=int(space.start))
    if isinstance(space, gymnasium.spaces.MultiDiscrete):
        return gymnasium.spaces.MultiDiscrete(space.nvec.copy())
    return gymnasium.spaces.Box(space.low.copy(), space.high.copy(), space.shape, space.dtype)
