"""The env contract: `Env`, the gymnax Environment our envs subclass, declares every hook jaxrl may call on
an env, each with its default; `hook` and `offers` read them from any env, plain gymnax ones included.

docs/envs.md (The env contract) lists the hooks, who calls each and which envs offer it;
tests/envs/test_env_contract.py checks every registered env against them.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from gymnax.environments import environment, spaces

from jaxrl.envs import kernels
from jaxrl.envs.spaces import agents_discrete


def absent(method: Callable) -> Callable:
    """A hook declared without a default: calling it raises until an env defines it (`offers` tells)."""

    @functools.wraps(method)
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"this env does not offer {method.__name__}")

    return missing


class Env(environment.Environment):
    """gymnax 1.0 base class with a cheaper auto-reset for envs whose `get_obs` is a pure function of state.

    gymnax's `step` builds the observation of the reset state and of the stepped state and then
    selects between them. Here the states are selected first and observed once; the stepped
    observation is still returned as `info["final_observation"]` (XLA drops it when unread). The
    stepped state passes a `fusion_boundary` before it is observed, so XLA does not recompute the step
    for every observed cell (a second boundary on the continued state gained nothing, so there is none).
    Subclasses fill `step_env`, `reset_env`, `get_obs`, `is_truncated`, `name`, `num_actions` and
    `observation_space`; the hooks below are optional.

    Randomness: `step` hands the same key to `step_env` and `reset_env`, which must draw with
    `uniform(key, salt, n)` using different salts. Hashing the key's bits is a few integer
    operations, where a threefry split per env per step costs as much as the whole Snake step.
    """

    STEP_SALT = 0x5EED_0001
    RESET_SALT = 0x5EED_0002

    @staticmethod
    def uniform(key: jax.Array, salt: int, count: int) -> jax.Array:
        """(count,) float32 uniform in [0, 1) from the key's bits and a salt (distinct salts, independent draws)."""
        draws = kernels.hash32(kernels.mix(key, salt) ^ (jnp.arange(count, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)))
        return (draws >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)

    # -- agents -------------------------------------------------------------------------

    observation_codes: int = 0
    """> 0: each observation byte is one of this many codes, and networks one-hot it in their first layer
    (`core/networks.py`, `Torso`), so the env and the rollout keep one byte a cell. Default: 0, numbers as they are."""

    num_agents: int = 1
    """Agents per world (core/vector.py, trained/evaluation.py): with K > 1, actions, rewards and observations gain a
    leading (K,) axis. Default: 1."""

    def action_space(self, params: Any = None) -> spaces.Discrete:
        """`Discrete(num_actions)` for one agent; `AgentsDiscrete(num_actions, K)`, shape `(K,)`, for K agents."""
        return agents_discrete(self.num_actions, self.num_agents)

    # -- params -------------------------------------------------------------------------

    def check_params(self, params: Any) -> None:
        """ValueError naming the first parameter out of range and what is allowed; concrete (host) params only.
        The registry calls it on every env's params, the trainer on every curriculum phase's. Default: no checks."""

    def eval_params(self, params: Any) -> Any:
        """The params to evaluate a policy with, from the trained ones (trained/evaluation.py). Default: unchanged."""
        return params

    # -- episodes -----------------------------------------------------------------------

    def autoreset_state(self, key: jax.Array, stepped: Any, params: Any) -> Any:
        """The state an episode that just ended continues from (`step`, beside every step). Default: `reset_env`'s."""
        return self.reset_env(key, params)[1]

    @functools.partial(jax.jit, static_argnames=("self",))
    def step(
        self, key: jax.Array, state: Any, action: jax.Array, params: Any = None
    ) -> tuple[jax.Array, Any, jax.Array, jax.Array, jax.Array, dict[str, Any]]:
        if params is None:
            params = self.default_params
        _, stepped, reward, terminated, info = self.step_env(key, state, action, params)
        stepped = kernels.fusion_boundary(stepped)  # observed from buffers, not recomputed per cell
        truncated = self.is_truncated(stepped, params)
        done = terminated | truncated
        fresh = self.autoreset_state(key, stepped, params)
        state = jax.tree.map(lambda new, old: jnp.where(done, new, old), fresh, stepped)
        info = {
            **info,
            "terminated": terminated,
            "truncated": truncated,
            "final_observation": self.get_obs(stepped, params),
        }
        return self.get_obs(state, params), state, reward, terminated, truncated, info

    # -- pictures -----------------------------------------------------------------------

    @absent
    def render_rgb(self, state: Any) -> jax.Array:
        """(H, W, 3) uint8 picture of a state, jittable: the replay GIF, Gymnasium's rgb_array. Default: none."""

    @absent
    def render_text(self, state: Any) -> str:
        """A state (concrete arrays) as text for a terminal: evaluation's render=terminal. Default: none."""

    @absent
    def caption(self, state: Any) -> str:
        """A line for a replay frame (concrete arrays), beside the step and score: evaluation. Default: none."""

    # -- bots and opponents -------------------------------------------------------------

    bot_policy: str = ""
    """A finished run whose greedy policy drives the env's bots (trained/frozen.py attaches it). Default: "", none."""

    @absent
    def with_bot_policy(self, policy: Callable) -> Env:
        """This env with `policy(obs, key) -> actions` driving its bots: frozen bots, evaluation. Default: none."""

    @absent
    def with_script(self, kind: str) -> Env:
        """This env with its bots playing scripted kind `kind` (one of `bot_kinds`) in its step: evaluation against
        a kind the run did not train with (`opponents=`). Default: none."""

    opponent_slots: int | None = None
    """Seats self-play can fill with past policies (algos/selfplay.py). Default: None, the env has no opponents."""

    @absent
    def versus(self) -> Env:
        """This env taking every seat's action, `(num_agents + opponent_slots,)`: self-play. Default: none."""

    @absent
    def opponent_obs(self, state: Any, like: Any = None) -> jax.Array:
        """(opponent_slots, *one agent's observation): what each opponent seat sees, for self-play; `like`: an env of
        the same kind and board whose learners see otherwise (a league's frozen agent's own env: another width), as
        its learners would see it. Default: none."""

    @absent
    def opponent_actions(self, key: jax.Array, state: Any) -> jax.Array:
        """(opponent_slots,) int: the env's own bots' actions in those seats, for self-play. Default: none."""

    @absent
    def opponent_kind_actions(self, key: jax.Array, state: Any, kind: str) -> jax.Array:
        """(opponent_slots,) int: scripted kind `kind`'s actions (one of `bot_kinds`) in the opponents' seats, for a
        self-play league that draws a kind per game (`selfplay.league`). Default: none."""

    @staticmethod
    @absent
    def learner_result(info: dict) -> jax.Array:
        """() float32 from a game's last step's info: 1 learners won, 0.5 level, 0 lost (self-play). Default: none."""

    # -- seats: the games played after training -----------------------------------------
    # Head-to-head games, ratings, the play page and the Battlesnake server seat players through these,
    # never through an env's name. A "table" is the env with every seat taking an action.

    @property
    def num_seats(self) -> int:
        """Players in one game, the learners and the bots' seats (trained/headtohead.py, play/). Default:
        `num_agents + opponent_slots`."""
        return _agents(self) + (getattr(self, "opponent_slots", None) or 0)

    def game_seats(self, params: Any) -> int:
        """Seats that play a game under these concrete params (play/: the learners and the bots that take part).
        Default: `num_seats`."""
        return hook(self, "num_seats")

    game_settings: tuple[str, ...] = ()
    """Constructor settings two players must share to sit at one table (head to head, rating, play); the others
    are a player's own (what it sees). Default: none, beyond states of one shape."""

    def table(self, seats: int | None = None) -> Env:
        """This env with each of `seats` seats (None: `num_seats`) taking an action and no bots of its own:
        head-to-head games, ratings, the play page. Default: the env itself when every seat is already an agent."""
        if getattr(self, "opponent_slots", None) or seats not in (None, _agents(self)):
            raise ValueError(
                f"{self.name} sets no table of {hook(self, 'num_seats') if seats is None else seats} seats: its"
                " bots' seats take no given actions (it offers no table hook)"
            )
        return self

    def seat_obs(self, state: Any) -> jax.Array:
        """(num_agents, *observation) what each seat of a table sees (trained/headtohead.py, play/). Default:
        `get_obs` with a seat axis."""
        obs = self.get_obs(state, self.default_params)
        return obs if _agents(self) > 1 else obs[None]

    bot_kinds: tuple[str, ...] = ("random",)
    """The scripted players `bot_actions` knows, by name, the weakest last (ratings are anchored at it): head to
    head, rating, play, `opponents=`. Default: ("random",)."""

    def bot_actions(self, key: jax.Array, state: Any, kind: str) -> jax.Array:
        """(num_agents,) int32: scripted player `kind`'s action in every seat of a table (head to head, play).
        Default: "random", uniform over the actions."""
        return jax.random.randint(key, (_agents(self),), 0, self.num_actions, jnp.int32)

    def seat_alive(self, state: Any) -> jax.Array:
        """(num_agents,) bool: the seats still in a table's game; a side with none left has lost (head to head).
        Default: all, until the episode ends."""
        return jnp.ones(_agents(self), bool)

    def seat_placement(self, state: Any, returns: jax.Array) -> jax.Array:
        """(num_agents,) float32 at a game's end, 1 the best, ties shared (head to head: the side holding the best
        seat wins). Default: 1 + the seats whose return so far is higher."""
        return 1.0 + jnp.sum(returns[None, :] > returns[:, None], axis=1).astype(jnp.float32)

    def seat_status(self, state: Any) -> list[dict[str, Any]]:
        """Per seat of a table, concrete arrays: what the play page and head-to-head captions show, any of
        "mark" (a short label), "colour" ([r, g, b]), "length", "alive", "placement". Default: each seat's number."""
        return [{"mark": str(k)} for k in range(hook(self, "num_seats"))]

    @absent
    def set_bots(self, params: Any, kind: str | None, count: int | None) -> Any:
        """The params with `count` of the env's own bots in a game, played by `kind` (one of `bot_kinds`, or
        "policy": the attached `with_bot_policy`); ValueError naming what is allowed (`opponents=`, `num_bots=`).
        Default: none."""

    # -- a person at the table -----------------------------------------------------------

    def action_names(self) -> tuple[str, ...]:
        """The actions by name, in their order (the play page's readout). Default: their numbers."""
        return tuple(str(a) for a in range(self.num_actions))

    def person_action(self, state: Any, seat: int, move: str | None) -> int:
        """The action of a person's key `move` (one the page sends: up, right, down, left, turn_left, straight,
        turn_right, collect, stay; None: go on) at `seat`, from concrete state (play/). Default: the action whose
        name (`action_names`) is the key, else 0."""
        names = hook(self, "action_names")()
        return names.index(move) if move in names else 0

    def shown_numbers(self, state: Any, numbers: np.ndarray) -> np.ndarray:
        """The policy's numbers per action as the board lies (play/: Snake swaps a mirrored episode's left and
        right back). Default: unchanged."""
        return numbers

    def result_line(self, info: dict[str, Any], names: list[str], you: int | None) -> str:
        """A finished game in a line for the play page, from the last step's concrete info. Default: the score
        where the info has one, else "game over"."""
        if "score" in info:
            won = bool(np.asarray(info.get("won", False)))
            return f"score {float(np.asarray(info['score'])):g}" + (" (won)" if won else "")
        return "game over"

    # -- a game outside jaxrl (the Battlesnake API) ----------------------------------------

    @absent
    def board_game(self, request: dict[str, Any]) -> dict[str, Any]:
        """A Battlesnake API v1 request body (game, turn, board, you) as this env's player sees that game:
        {"env": the env of its board and ruleset (this env's own settings, such as its view, kept), "state",
        "seat": you, "allowed": (num_actions,) bool, the moves that are not certain suicide into one's own neck,
        "exact": whether the env plays that game as the engine does}. ValueError naming what it cannot read
        (jaxrl/battlesnake/server.py). Default: none."""

    @absent
    def board_request(
        self, state: Any, seat: int, game: dict[str, Any], names: list[str] | None = None, params: Any = None
    ) -> dict[str, Any]:
        """A concrete state as the Battlesnake API v1 request body the engine would send `seat` (the inverse of
        `board_game`; `you` is None once the seat is out). `game` is the request's game object (id, timeout),
        which the env completes with the ruleset, its settings under `params` (default: the env's) and the map;
        `names`, each seat's snake name. jaxrl as the host of games with HTTP snakes (trained/hosted.py), the
        server's bench. Default: none."""

    @absent
    def board_move(self, state: Any, seat: int, action: int) -> str:
        """The engine's move ("up", "down", "left", "right") of `action` at `seat` (jaxrl/battlesnake/server.py).
        Default: none."""

    @absent
    def board_action(self, state: Any, seat: int, move: str) -> int:
        """The action at `seat` of the engine's move (the inverse of `board_move`): jaxrl hosting games between
        HTTP snakes (jaxrl/battlesnake/host.py). Default: none."""

    # -- batching -----------------------------------------------------------------------

    @absent
    def vectorized(self, num_envs: int) -> Any:
        """The env's own batch of `num_envs` worlds (core/vector.py; self-play's). Default: none, a `VectorEnv`."""


# The optional hooks, in the order docs/envs.md lists them.
HOOKS = (
    "num_agents",
    "observation_codes",
    "check_params",
    "eval_params",
    "autoreset_state",
    "render_rgb",
    "render_text",
    "caption",
    "bot_policy",
    "with_bot_policy",
    "with_script",
    "opponent_slots",
    "versus",
    "opponent_obs",
    "opponent_actions",
    "opponent_kind_actions",
    "learner_result",
    "num_seats",
    "game_seats",
    "game_settings",
    "table",
    "seat_obs",
    "bot_kinds",
    "bot_actions",
    "seat_alive",
    "seat_placement",
    "seat_status",
    "set_bots",
    "action_names",
    "person_action",
    "shown_numbers",
    "result_line",
    "board_game",
    "board_request",
    "board_move",
    "board_action",
    "vectorized",
)


def hook(env: Any, name: str) -> Any:
    """`env`'s hook `name`, or `Env`'s default for an env without it (any gymnax env that is not an `Env`)."""
    if hasattr(env, _known(name)):
        return getattr(env, name)
    default = inspect.getattr_static(Env, name)
    return default.__get__(env, type(env)) if hasattr(default, "__get__") else default


def offers(env: Any, name: str) -> bool:
    """Whether `env` has hook `name` of its own: not missing, not None, and not `Env`'s declaration."""
    if isinstance(inspect.getattr_static(Env, _known(name)), property):  # a computed default: the class's own
        return inspect.getattr_static(type(env), name, None) not in (None, inspect.getattr_static(Env, name))
    found, declared = getattr(env, name, None), getattr(Env, name)
    if found is None:
        return False
    return getattr(found, "__func__", found) is not declared if callable(declared) else found != declared


def table_params(table: Any, params: Any) -> Any:
    """The params of a game at `table` (an env's `table()`): none of the env's own bots take part, every seat
    being given its action (`set_bots(params, None, 0)` where the table offers it)."""
    return hook(table, "set_bots")(params, None, 0) if offers(table, "set_bots") else params


def _agents(env: Any) -> int:
    return getattr(env, "num_agents", 1)


def _known(name: str) -> str:
    if name not in HOOKS:
        raise ValueError(f"{name!r} is not an env hook; the hooks: {', '.join(HOOKS)}")
    return name
