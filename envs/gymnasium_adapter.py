"""Our envs, a registered env or any gymnax id as Gymnasium envs: numpy in and out, for SB3 and
other libraries that step envs from Python.

    env = envs.to_gymnasium("snake", size=10, render_mode="rgb_array")
    vec = envs.to_gymnasium_vector("snake", num_envs=512)

The single env steps one jitted call per `step` and does not reset itself (Gymnasium's contract:
call `reset` after `terminated` or `truncated`). The vector env steps every env in one jitted
call and resets finished ones in that same call: Gymnasium's `AutoresetMode.SAME_STEP`, with the
last observation of a finished episode in `info["final_obs"]` (mask `info["_final_obs"]`).
gymnax's own `GymnaxToGymWrapper` does not fit a Gymnasium single env (it steps eagerly, returns jax
arrays and resets itself inside `step`), so these adapters are written here. Spaces come from
gymnax's own converter (`gymnax_space_to_gym_space`), except that an agent axis
(`AgentsDiscrete`, the grid with several agents) becomes a `MultiDiscrete`, and discrete actions
are Gymnasium's usual int64.

gymnasium is optional: `pip install gymnasium` (or jaxrl[bench]).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium
import jax
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space
from gymnax.environments import spaces

from jaxrl.envs.base import offers
from jaxrl.envs.registry import spec
from jaxrl.envs.render import GIF_PIXELS, upscale
from jaxrl.envs.spaces import AgentsDiscrete

KEYS_AT_ONCE = 1024  # the single env's keys are split this many at a time


def to_space(space: Any) -> gymnasium.Space:
    """A gymnax space as a Gymnasium space."""
    if isinstance(space, AgentsDiscrete):
        return gymnasium.spaces.MultiDiscrete(np.full(space.shape, space.n, dtype=np.int64))
    if isinstance(space, spaces.Discrete):
        return gymnasium.spaces.Discrete(int(space.n))
    if isinstance(space, spaces.Box):
        dtype = np.dtype(space.dtype)
        low = np.broadcast_to(np.asarray(space.low, dtype), space.shape)
        high = np.broadcast_to(np.asarray(space.high, dtype), space.shape)
        return gymnasium.spaces.Box(low, high, space.shape, dtype)
    return spaces.gymnax_space_to_gym_space(space)


class _Adapted:
    """What both adapters share: the env built from the registry, its spaces, action conversion."""

    def _build(self, name: str, settings: dict[str, Any]) -> None:
        self.env, self.env_params = spec(name).make(**settings)
        self.name = name
        self._action_space = self.env.action_space(self.env_params)
        self._action_dtype = np.dtype(self._action_space.dtype)

    def _action(self, action: Any) -> np.ndarray:
        return np.asarray(action).astype(self._action_dtype, copy=False)  # jit takes numpy as it is

    def _frame(self, state: Any) -> np.ndarray:
        return upscale(np.asarray(jax.device_get(self._draw(state)))[None], GIF_PIXELS)[0]  # the replay GIF's pictures


def _check_render_mode(env: Any, name: str, render_mode: str | None) -> list[str]:
    modes = ["rgb_array"] if offers(env, "render_rgb") else []
    if render_mode is not None and render_mode not in modes:
        allowed = ", ".join(modes) if modes else "none: it does not draw itself"
        raise ValueError(f"render_mode={render_mode!r} is not supported by {name}; allowed: {allowed}")
    return modes


class GymnasiumEnv(_Adapted, gymnasium.Env):
    """One env as a `gymnasium.Env` (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, name: str, render_mode: str | None = None, **settings: Any):
        self._build(name, settings)
        self.metadata = {**self.metadata, "render_modes": _check_render_mode(self.env, name, render_mode)}
        self.render_mode = render_mode
        # A spec, so gymnasium.make(env.spec, render_mode=...) (and check_env) can build it again.
        self.spec = EnvSpec(
            f"jaxrl/{name}" if "-v" in name else f"jaxrl/{name}-v0",
            entry_point=GymnasiumEnv,
            kwargs={"name": name, **settings},
        )
        self.observation_space = to_space(self.env.observation_space(self.env_params))
        self.action_space = to_space(self._action_space)
        env, params = self.env, self.env_params

        def reset(key_data: jax.Array) -> tuple[jax.Array, Any]:
            return env.reset(jax.random.wrap_key_data(key_data), params)

        def step(key_data: jax.Array, state: Any, action: jax.Array):
            key = jax.random.wrap_key_data(key_data)
            obs, state, reward, terminated, info = env.step_env(key, state, action, params)
            return state, (obs, reward, terminated, env.is_truncated(state, params), info)

        def keys(key: jax.Array) -> tuple[jax.Array, jax.Array]:
            key, batch = jax.random.split(key)
            return key, jax.random.key_data(jax.random.split(batch, KEYS_AT_ONCE))

        self._reset, self._step, self._keys_fn = jax.jit(reset), jax.jit(step), jax.jit(keys)
        self._draw = jax.jit(env.render_rgb) if self.metadata["render_modes"] else None
        self._key = self._state = None
        self._keys, self._next = np.zeros((0, 2), np.uint32), 0

    def _next_key(self) -> np.ndarray:
        """The next key of this env's stream, as key data: keys are split KEYS_AT_ONCE at a time
        (a threefry split inside every step was most of a step's cost on the CPU)."""
        if self._next == len(self._keys):
            self._key, keys = self._keys_fn(self._key)
            self._keys, self._next = np.asarray(keys), 0
        self._next += 1
        return self._keys[self._next - 1]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None or self._key is None:
            self._key = jax.random.key(int(self.np_random.integers(2**31)) if seed is None else seed)
            self._keys, self._next = self._keys[:0], 0
        obs, self._state = self._reset(self._next_key())
        return np.asarray(obs), {}

    def step(self, action: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        self._state, out = self._step(self._next_key(), self._state, self._action(action))
        obs, reward, terminated, truncated, info = jax.device_get(out)  # one transfer
        info = {k: np.asarray(v) for k, v in info.items()}
        if np.ndim(reward):  # several agents in a world: the world's reward, each agent's in info
            info["agent_rewards"] = np.asarray(reward)
        return np.asarray(obs), float(np.sum(reward)), bool(terminated), bool(truncated), info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return self._frame(self._state)


class GymnasiumVectorEnv(_Adapted, VectorEnv):
    """`num_envs` envs as a `gymnasium.vector.VectorEnv`, stepped in one jitted call (same-step autoreset)."""

    metadata: ClassVar[dict[str, Any]] = {
        "render_modes": ["rgb_array"],
        "render_fps": 10,
        "autoreset_mode": AutoresetMode.SAME_STEP,
    }

    def __init__(self, name: str, num_envs: int, render_mode: str | None = None, **settings: Any):
        if int(num_envs) < 1:
            raise ValueError(f"num_envs={num_envs} is invalid: must be >= 1")
        self._build(name, settings)
        self.metadata = {**self.metadata, "render_modes": _check_render_mode(self.env, name, render_mode)}
        self.render_mode = render_mode
        self.num_envs = int(num_envs)
        self.single_observation_space = to_space(self.env.observation_space(self.env_params))
        self.single_action_space = to_space(self._action_space)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        env, params, n = self.env, self.env_params, self.num_envs

        def reset(key: jax.Array):
            key, sub = jax.random.split(key)
            return key, *jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(sub, n), params)

        def step(key: jax.Array, state: Any, action: jax.Array):
            key, sub = jax.random.split(key)
            step_one = jax.vmap(env.step, in_axes=(0, 0, 0, None))
            obs, state, reward, terminated, truncated, info = step_one(jax.random.split(sub, n), state, action, params)
            final_obs = info.pop("final_observation")
            info = {k: v for k, v in info.items() if k not in ("terminated", "truncated")}
            return key, state, (obs, reward, terminated, truncated, info), final_obs

        self._reset, self._step = jax.jit(reset), jax.jit(step)
        self._draw = jax.jit(env.render_rgb) if self.metadata["render_modes"] else None
        self._key = self._state = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        if seed is not None or self._key is None:
            self._key = jax.random.key(int(np.random.SeedSequence().generate_state(1)[0]) if seed is None else seed)
        self._key, obs, self._state = self._reset(self._key)
        return np.asarray(obs), {}

    def step(self, actions: Any):
        if self._state is None:
            raise RuntimeError("call reset() before step()")
        self._key, self._state, out, final_obs = self._step(self._key, self._state, self._action(actions))
        obs, reward, terminated, truncated, info = jax.device_get(out)  # one transfer
        info = {k: np.asarray(v) for k, v in info.items()}
        info = {**info, **{f"_{k}": np.ones(self.num_envs, bool) for k in info}}
        done = terminated | truncated
        if done.any():  # the finished episodes' last observations are fetched only then
            info.update(final_obs=np.asarray(final_obs), _final_obs=done)
        return np.asarray(obs), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        """The first env's frame."""
        if self.render_mode != "rgb_array" or self._state is None:
            return None
        return self._frame(jax.tree.map(lambda x: x[0], self._state))


def to_gymnasium(name: str, render_mode: str | None = None, **settings: Any) -> GymnasiumEnv:
    """`name` (ours, a registered env or a gymnax id; settings as for `envs.make`) as a `gymnasium.Env`."""
    return GymnasiumEnv(name, render_mode=render_mode, **settings)


def to_gymnasium_vector(
    name: str, num_envs: int, render_mode: str | None = None, **settings: Any
) -> GymnasiumVectorEnv:
    """`num_envs` copies of `name` as a `gymnasium.vector.VectorEnv`, all stepped in one jitted call."""
    return GymnasiumVectorEnv(name, num_envs, render_mode=render_mode, **settings)
