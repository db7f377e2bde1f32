"""The contract every env meets: ours compile once, vmap, stay in their spaces with finite values; every registered
env (ours and a gymnax id) keeps the hooks envs/base.py declares, with their signatures and return types."""

import inspect
import re
from pathlib import Path

import chex
import gymnax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from gymnax.environments import environment, spaces

from jaxrl import envs
from jaxrl.envs.base import HOOKS, Env, hook, offers

OUR_ENVS = [name for name in envs.registered_names() if name not in gymnax.registered_envs]

CASES = [
    ("snake", {}),
    ("snake", {"size": 6}),
    ("snake", {"view": "ego", "actions": "relative"}),
    ("snake", {"size": 5, "actions": "relative"}),
    ("grid", {}),
    ("grid", {"size": 6, "view": 7}),
    ("grid", {"num_agents": 4}),
    ("arena", {}),
    ("arena", {"size": 9, "num_snakes": 6, "num_agents": 2, "view": 5}),
    ("arena_open", {"width": 24, "height": 16, "num_snakes": 12, "num_food": 16, "view": 7}),
    ("arena_open", {"width": 8, "height": 8, "num_snakes": 1, "num_food": 2, "view": 3}),
    ("arena_open", {"rules": "pufferlib", "width": 24, "height": 16, "num_snakes": 12, "num_food": 16, "view": 5}),
    ("arena_open", {"rules": "pufferlib", "width": 11, "height": 11, "num_snakes": 1, "num_food": 2, "view": 3}),
]
assert {name for name, _ in CASES} == set(OUR_ENVS), "every env of ours needs a contract case"


@pytest.mark.parametrize("name,kwargs", CASES)
def test_compiles_once_over_100_steps(name, kwargs):
    env, params = envs.make(name, **kwargs)
    chex.clear_trace_counter()

    @jax.jit
    @chex.assert_max_traces(n=1)
    def step(key, state, action):
        return env.step(key, state, action, params)

    key = jax.random.key(0)
    obs, state = env.reset(key, params)
    space = env.observation_space(params)
    for i in range(100):
        key, act_key, step_key = jax.random.split(key, 3)
        action = env.action_space(params).sample(act_key)
        assert action.shape == env.action_space(params).shape and bool(env.action_space(params).contains(action))
        obs, state, reward, terminated, truncated, info = step(step_key, state, action)
        assert obs.shape == space.shape and obs.dtype == space.dtype
        assert bool(space.contains(obs)), f"step {i}: observation outside the space"
        assert bool(space.contains(info["final_observation"]))
        assert np.isfinite(np.asarray(reward)).all()
        assert terminated.dtype == jnp.bool_ and truncated.dtype == jnp.bool_


@pytest.mark.parametrize("name,kwargs", CASES)
def test_vmaps_over_64(name, kwargs):
    env, params = envs.make(name, **kwargs)
    n = 64
    obs, state = jax.vmap(env.reset, in_axes=(0, None))(jax.random.split(jax.random.key(1), n), params)
    space = env.observation_space(params)
    assert obs.shape == (n,) + space.shape

    def body(carry, key):
        state = carry
        act_key, step_key = jax.random.split(key)
        actions = jax.vmap(env.action_space(params).sample)(jax.random.split(act_key, n))
        obs, state, reward, term, trunc, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
            jax.random.split(step_key, n), state, actions, params
        )
        ok = jax.vmap(space.contains)(obs).all()
        return state, (ok, reward, term | trunc)

    _, (ok, rewards, done) = jax.lax.scan(body, state, jax.random.split(jax.random.key(2), 300))
    assert bool(ok.all())
    assert np.isfinite(np.asarray(rewards)).all()
    assert bool(done.any()), "a random policy should end some episodes in 300 steps"
    assert rewards.shape[:2] == (300, n)


def test_unknown_name_lists_valid_ones():
    with pytest.raises(envs.UnknownEnvError, match="unknown env 'snak'.*snake.*grid.*CartPole-v1"):
        envs.make("snak")


def test_gymnax_ids_pass_through():
    env, params = envs.make("CartPole-v1")
    obs, _ = env.reset(jax.random.key(0), params)
    assert obs.shape == (4,)


# -- the hooks of envs/base.py --------------------------------------------------------------------------------

HOOK_CASES = [  # small settings, every hook an env of ours offers exercised at least once
    ("snake", {"size": 5}),
    ("grid", {"size": 5, "num_agents": 2, "num_bots": 1, "view": 3}),
    ("arena", {"size": 7, "num_snakes": 3, "num_agents": 2, "view": 5}),
    ("arena_open", {"width": 8, "height": 8, "num_snakes": 2, "num_food": 2, "view": 3}),
    ("arena_open", {"rules": "pufferlib", "width": 12, "height": 12, "num_snakes": 2, "num_food": 2, "view": 3}),
    ("CartPole-v1", {}),  # a plain gymnax env: every hook is Env's default
]
assert set(OUR_ENVS) < {name for name, _ in HOOK_CASES}, "every env of ours needs a hook case"
GYMNAX_METHODS = ("step_env", "reset_env", "get_obs", "is_truncated", "action_space", "observation_space")
VALUE_HOOKS = {
    "num_agents": int,
    "observation_codes": int,
    "bot_policy": str,
    "opponent_slots": (int, type(None)),
    "num_seats": int,
    "game_settings": tuple,
    "bot_kinds": tuple,
}


def parameter_names(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


def base_default(env, name: str):
    """Env's (or, for gymnax's own methods, gymnax's) declaration of `name`, bound to `env` as the env's own is."""
    base = Env if name in HOOKS else environment.Environment
    return inspect.getattr_static(base, name).__get__(env, type(env))


def defines(env, name: str) -> bool:
    """Whether `env`'s class has its own `name`, not the base's."""
    base = Env if name in HOOKS else environment.Environment
    own = inspect.getattr_static(type(env), name, None)
    return own is not None and own is not inspect.getattr_static(base, name)


@pytest.mark.parametrize("name", [*OUR_ENVS, "CartPole-v1"])
def test_every_registered_env_builds_with_default_settings_names_itself_and_passes_its_checks(name):
    env, params = envs.make(name)  # only built: the default open arena is large to step
    assert isinstance(env.name, str) and (env.name == name or name not in OUR_ENVS)
    assert hook(env, "check_params")(params) is None
    envs.spec(name).check(env, params)


def test_every_hook_is_declared_on_env_and_documented():
    text = (Path(__file__).resolve().parents[2] / "docs" / "envs.md").read_text()
    contract = text.split("## The env contract", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(\w+)", contract, re.MULTILINE)
    assert listed == list(HOOKS), "docs/envs.md's contract table lists the hooks of envs.base.HOOKS, in order"
    for name in HOOKS:
        declared = inspect.getattr_static(Env, name)
        assert name in VALUE_HOOKS or (declared.__doc__ or "").strip(), f"Env.{name} says who calls it"


@pytest.mark.parametrize("name,kwargs", HOOK_CASES)
def test_overridden_hooks_keep_the_declared_signatures(name, kwargs):
    env, _ = envs.make(name, **kwargs)
    for hook_name in (*HOOKS, *GYMNAX_METHODS):
        if hook_name in VALUE_HOOKS:
            assert isinstance(hook(env, hook_name), VALUE_HOOKS[hook_name]), hook_name
        elif defines(env, hook_name):
            own, declared = parameter_names(getattr(env, hook_name)), parameter_names(base_default(env, hook_name))
            assert own == declared, f"{name}.{hook_name}{own}: declared as {hook_name}{declared}"


@pytest.mark.parametrize("name,kwargs", HOOK_CASES)
def test_spaces_steps_and_offered_hooks_agree(name, kwargs):
    env, params = envs.make(name, **kwargs)
    agents = hook(env, "num_agents")
    action_space, obs_space = env.action_space(params), env.observation_space(params)
    assert isinstance(action_space, spaces.Discrete) and action_space.n == env.num_actions
    assert action_space.shape == (() if agents == 1 else (agents,))
    assert agents == 1 or obs_space.shape[0] == agents
    per_world = () if agents == 1 else (agents,)

    @jax.jit
    def episode(key):
        obs, state = env.reset(key, params)

        def body(state, key):
            act_key, step_key = jax.random.split(key)
            obs, state, reward, terminated, truncated, info = env.step(
                step_key, state, action_space.sample(act_key), params
            )
            return state, (obs, state, reward, terminated, truncated, info)

        return obs, state, jax.lax.scan(body, state, jax.random.split(key, 3))[1]

    first, start, (obs, states, reward, terminated, truncated, info) = episode(jax.random.key(0))
    for o in (first, obs[0]):
        assert o.shape == obs_space.shape and o.dtype == obs_space.dtype
    assert reward.shape == (3, *per_world) and terminated.shape == truncated.shape == (3,)
    state = jax.tree.map(lambda x: x[-1], states)

    evaluated = hook(env, "eval_params")(params)
    assert type(evaluated) is type(params)
    assert jax.tree.structure(evaluated) == jax.tree.structure(params)
    fresh = jax.jit(hook(env, "autoreset_state"))(jax.random.key(1), state, params)  # compiled, not op by op
    assert jax.tree.map(jnp.shape, fresh) == jax.tree.map(jnp.shape, start)
    if offers(env, "render_rgb"):
        frames = jax.jit(jax.vmap(env.render_rgb))(states)
        assert frames.dtype == jnp.uint8 and frames.ndim == 4 and frames.shape[0] == 3 and frames.shape[-1] == 3
    for drawn in ("render_text", "caption"):
        if offers(env, drawn):
            assert isinstance(getattr(env, drawn)(state), str)
    if offers(env, "with_bot_policy"):
        assert type(env.with_bot_policy(lambda obs, key: jnp.ones(obs.shape[0], jnp.int32))) is type(env)
    slots = hook(env, "opponent_slots")
    if slots:
        assert type(env.versus()) is type(env)
        seen = jax.jit(env.opponent_obs)(state)
        assert seen.shape == (slots, *obs_space.shape[len(per_world) :]) and seen.dtype == obs_space.dtype
        acts = jax.jit(env.opponent_actions)(jax.random.key(2), state)
        assert acts.shape == (slots,) and jnp.issubdtype(acts.dtype, jnp.integer)
        assert bool(jnp.all((acts >= 0) & (acts < env.num_actions)))
        result = env.learner_result(jax.tree.map(lambda x: x[-1], info))
        assert result.shape == () and result.dtype == jnp.float32 and 0 <= float(result) <= 1
    assert not offers(env, "vectorized"), "an env steps as a VectorEnv; only wrappers (self-play's) batch themselves"
    if name not in OUR_ENVS:
        absent = [h for h in HOOKS if h not in VALUE_HOOKS and not hasattr(env, h)]
        assert absent and not any(offers(env, h) for h in absent)


@pytest.mark.parametrize("name,kwargs", HOOK_CASES)
def test_seat_and_person_hooks_answer_in_their_shapes_at_the_envs_table(name, kwargs):
    from jaxrl.envs.base import table_params
    from jaxrl.envs.controls import MOVES

    env, params = envs.make(name, **kwargs)
    seats = hook(env, "num_seats")
    assert isinstance(seats, int) and seats >= hook(env, "num_agents")
    assert len(hook(env, "action_names")()) == env.num_actions
    obs, state = env.reset(jax.random.key(0), params)
    concrete = jax.device_get(state)
    for move in (None, *MOVES):  # every key the play page sends
        assert 0 <= hook(env, "person_action")(concrete, 0, move) < env.num_actions, move
    numbers = np.arange(env.num_actions, dtype=np.float64)
    assert sorted(hook(env, "shown_numbers")(concrete, numbers)) == list(numbers)
    status = hook(env, "seat_status")(concrete)
    assert isinstance(status, list) and status and all(isinstance(s, dict) for s in status)
    step = env.step(jax.random.key(1), state, env.action_space(params).sample(jax.random.key(2)), params)
    assert isinstance(hook(env, "result_line")(jax.device_get(step[-1]), ["a"] * seats, None), str)
    try:
        table = hook(env, "table")()
    except ValueError:
        assert hook(env, "opponent_slots"), "only an env with bot seats of its own may set no table"
        return
    n = hook(table, "num_seats")
    assert hook(table, "num_agents") == n and hook(table, "game_seats")(params) >= 1
    _, at_table = table.reset(jax.random.key(3), table_params(table, params))
    assert hook(table, "seat_obs")(at_table).shape[0] == n
    for kind in hook(table, "bot_kinds"):  # jitted: op by op, a searching bot is slow
        actions = jax.jit(hook(table, "bot_actions"), static_argnums=2)(jax.random.key(4), at_table, kind)
        assert actions.shape == (n,) and bool(((actions >= 0) & (actions < table.num_actions)).all()), kind
    alive = hook(table, "seat_alive")(at_table)
    assert alive.shape == (n,) and alive.dtype == jnp.bool_
    place = hook(table, "seat_placement")(at_table, jnp.zeros(n, jnp.float32))
    assert place.shape == (n,) and place.dtype == jnp.float32 and bool((place >= 1).all())


@pytest.mark.parametrize("name,kwargs", [c for c in HOOK_CASES if c[0] == "arena"])
def test_board_hooks_read_back_what_they_write(name, kwargs):
    """An env that reads Battlesnake boards sees its own request of a state as that state (the same view for
    `you`), and turns each engine move into the action that makes it."""
    from jaxrl.envs.base import table_params

    env, params = envs.make(name, **kwargs)
    table = hook(env, "table")()
    at_table = table_params(table, params)
    state = table.reset_env(jax.random.key(5), at_table)[1]
    for t in range(3):  # past the stacked start, whose heading (the view's turn) no board shows
        moves = hook(table, "bot_actions")(jax.random.key(t), state, "greedy")
        state = table.step_env(jax.random.key(t), state, moves, at_table)[1]
    state = jax.device_get(state)
    alive = np.flatnonzero(np.asarray(hook(table, "seat_alive")(state)))
    assert alive.size, "a seat still in the game after 3 turns"
    names = [f"player {k}" for k in range(hook(table, "num_seats"))]
    for seat in map(int, alive):
        request = env.board_request(state, seat, {"id": "g", "timeout": 500}, names, at_table)
        assert request["game"]["id"] == "g" and isinstance(request["game"]["ruleset"]["name"], str)
        assert request["you"]["name"] == names[seat] and {s["name"] for s in request["board"]["snakes"]} <= set(names)
        seen = env.board_game(request)  # under the ruleset the env wrote into the request
        mine = hook(table, "seat_obs")(state)[seat]
        np.testing.assert_array_equal(np.asarray(hook(seen["env"], "seat_obs")(seen["state"])[seen["seat"]]), mine)
        for move in ("up", "down", "left", "right"):
            action = env.board_action(state, seat, move)
            assert env.board_move(state, seat, action) == move
