"""The play page's games: who holds each seat, the env's own jitted step, and what a frame shows.

A `Table` is what every page of one `python -m jaxrl.play` server shares: the env as the run trained it (or as
`env=` builds it), its params, the policies and the compiled steps. A `Game` is one page's game: its state,
seed and actions. Nothing of the rules is copied: every step is the env's `step_env`, every picture its
`render_rgb`.

A game is stepped in one of two ways:
- `env`: the env as evaluation plays it. The run's policy acts for every learner, the env's own bots play
  inside its step, and a seated person takes learner 0's action. With seed S the agent's moves are those of
  `python -m jaxrl.eval RUN episodes=1 seed=S` (the same key chain: `jaxrl.trained.episodes.KeyChain`).
- `table`: the env's table (`env.table(seats)`, every seat's action given), so that a person sits beside the
  run's policy and the opponents (`opponents=`: the env's bots, another run, a shelf agent), or two runs play
  head-to-head (`vs=`), seats rotated each game as `python -m jaxrl.eval vs=` rotates them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.config.compose import UsageError
from jaxrl.envs.base import hook, offers, table_params
from jaxrl.play import controls
from jaxrl.trained.episodes import Episode, KeyChain, plain_params, step_held

# Table-mode seat owners: a person, the run's policy, then the env's bots (BOT + their index in `bot_kinds`),
# then the other players (`Table.others_from` on).
PERSON, POLICY, BOT = 0, 1, 2
WALL = (110, 110, 110)  # the page's ring around the board: what lies beyond it


@dataclasses.dataclass(frozen=True)
class Agent:
    """A policy at the table: `act(params, carry, obs, key) -> (carry, actions)`, `read(params, carry, obs) ->
    (numbers, value)` (None for a frozen opponent), its params and carry, and the env it trained in (how it
    sees a seat of the table)."""

    name: str
    act: Any
    params: Any
    initial_carry: Any
    read: Any = None
    kind: str = "probabilities"  # what `read`'s numbers are: probabilities, or Q-values
    env: Any = None


def run_agent(run: Any, step: int | None = None, member: int | None = None) -> tuple[Agent, Any, Any, Any]:
    """(the run's greedy policy as an Agent, its env, its env params as evaluation plays them (seed 0), the
    program); the same policy and params `python -m jaxrl.eval` plays."""
    from jaxrl.trained.evaluation import params_for_eval, pick_member

    found, runner, program = run.restore(step)
    member = pick_member(run, program, member)
    cfg = run.config
    first = member * cfg.num_seeds  # seed 0 of the member
    env = program.env
    trained = jax.tree.map(lambda x: x[first : first + 1], runner.envs.params)
    env_params = jax.tree.map(lambda x: x[0], params_for_eval(env, trained))
    algo = program.algorithm(program.member_hypers(member))
    params = jax.device_get(jax.tree.map(lambda x: x[first], algo.policy_params(runner)))
    name = getattr(run, "spec", None) or str(run.run_dir)
    agent = Agent(
        name=name,
        act=program.policy(True, member),
        params=params,
        initial_carry=algo.initial_carry,
        read=program.readout(member),
        kind="probabilities" if algo.sampled_scores else "Q-values",
        env=env,
    )
    return agent, env, env_params, {"step": found, "seeds": cfg.num_seeds, "config": cfg}


class Mode:
    """One way of stepping a game (see the module's docstring): its env and params, seats and compiled steps."""

    def __init__(self, table: Table, name: str, env: Any, env_params: Any, seats: int):
        self.table, self.name, self.env, self.env_params, self.seats = table, name, env, env_params, seats
        self.actions = controls.action_names(env)
        self.step = jax.jit(self._env_step if name == "env" else self._table_step)
        self.look = jax.jit(self._readout)
        self.reset = jax.jit(lambda key: env.reset(key, env_params))
        self.render = jax.jit(env.render_rgb)

    def _batch(self, obs: jax.Array) -> jax.Array:
        """Observations with a seat axis (one learner's observation has none)."""
        return obs if self.seats > 1 or self.name == "table" else obs[None]

    def _readout(self, params: Any, carry: Any, obs: jax.Array, focus: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(numbers, value) of the run's policy at seat `focus`; zeros without a policy."""
        agent = self.table.agent
        if agent is None:
            return jnp.zeros(len(self.actions)), jnp.zeros(())
        numbers, value = agent.read(params, carry, self._batch(obs))
        return numbers[focus].astype(jnp.float32), value.reshape(-1)[focus].astype(jnp.float32)

    def observe(self, state: Any, obs: jax.Array) -> jax.Array:
        """What the run's policy reads: the env's observation, or (table) every seat's view as the run sees it."""
        return obs if self.name == "env" else _views(self.env, self.table.agent, state)

    def _env_step(self, key, state, obs, carries, person_action, person_on, owners, focus, params):
        key, act_key, step_key = KeyChain(0).advance(key)  # split as evaluation's batch of one episode
        agent = self.table.agent
        batch = self._batch(obs)
        if agent is None:  # env= alone: the learners a person does not hold move at random
            moves = len(self.actions) - (self.actions[-1] == "back")  # not back into the neck: a sure death
            carry, action = carries[0], jax.random.randint(act_key, (batch.shape[0],), 0, moves)
        else:
            carry, action = agent.act(params[0], carries[0], batch, act_key)
        action = action.astype(jnp.int32)
        action = action.at[0].set(jnp.where(person_on, person_action, action[0]))
        action = action if self.seats > 1 else action[0]
        obs, state, reward, done, info = step_held(self.env, step_key, state, action, self.env_params)
        numbers, value = self._readout(params[0], carry, obs, focus)
        return key, state, obs, (carry, *carries[1:]), action, reward, done, info, numbers, value

    def _bot_actions(self, key: jax.Array, state: Any, kind: str, seated: jax.Array) -> jax.Array:
        """Bot `kind`'s actions at the table, computed only when it holds a seat (one world: a real branch)."""
        act = lambda: hook(self.env, "bot_actions")(key, state, kind).astype(jnp.int32)
        return jax.lax.cond(jnp.any(seated), act, lambda: jnp.ones(self.seats, jnp.int32))

    def _table_step(self, key, state, obs, carries, person_action, person_on, owners, focus, params):
        key, act_key, step_key = KeyChain(0).advance(key)
        players, kinds = self.table.players, self.table.bot_kinds
        keys = jax.random.split(act_key, len(players) + len(kinds))
        rules = self.env
        acted = []
        for i, player in enumerate(players):
            if player is None:  # no run at the table (env= alone): its seats go straight on
                acted.append((carries[i], jnp.ones(self.seats, jnp.int32)))
                continue
            carry, action = player.act(params[i], carries[i], _views(rules, player, state), keys[i])
            acted.append((carry, action.astype(jnp.int32)))
        choices = [  # indexed by owner: PERSON, POLICY, BOT + each bot kind, then the other players
            jnp.full(self.seats, person_action, jnp.int32),
            acted[0][1],
            *(self._bot_actions(keys[len(players) + i], state, k, owners == BOT + i) for i, k in enumerate(kinds)),
            *(a for _, a in acted[1:]),
        ]
        action = jnp.select([owners == k for k in range(len(choices))], choices, 1).astype(jnp.int32)
        obs, state, reward, done, info = step_held(rules, step_key, state, action, self.env_params)
        new_carries = tuple(c for c, _ in acted)
        numbers, value = self._readout(params[0], new_carries[0], _views(rules, self.table.agent, state), focus)
        return key, state, obs, new_carries, action, reward, done, info, numbers, value


class Table:
    """What every game of one server shares (see the module's docstring).

    `env`, `env_params`: as evaluation plays them; `agent`: the run's policy (None: `env=` alone); `opponents`:
    the opponents for a person's games (one of the env's bot kinds, or an Agent of another run), `versus`: the
    other side of head-to-head games. A game is stepped at the table when a person plays an env with bot
    seats of its own (so the run keeps a seat beside the person), with `versus`, or with opponents that are
    runs; as `env` otherwise (a person then takes the first learner's seat)."""

    def __init__(
        self,
        env: Any,
        env_params: Any,
        agent: Agent | None,
        config: Any,
        seeds: int = 1,
        opponents: str | Agent | None = None,
        versus: Agent | str | None = None,
        label: str = "",
        table_seats: int | None = None,
    ):
        if not offers(env, "render_rgb"):
            raise UsageError(
                f"{env.name} cannot be drawn (it has no render_rgb): the play page draws the env's picture"
            )
        self.config, self.agent, self.versus, self.seeds = config, agent, versus, seeds
        self.label = label or (agent.name if agent else env.name)
        self.env_name = env.name
        self.others = () if opponents is None or isinstance(opponents, str) else (opponents,)
        self.players = (agent, *self.others, *((versus,) if isinstance(versus, Agent) else ()))
        self.bot_kinds: tuple[str, ...] = ()
        self.modes = {"env": Mode(self, "env", env, env_params, int(hook(env, "num_agents")))}
        seats = table_seats or hook(env, "num_seats")
        try:
            rules = hook(env, "table")(seats) if seats > 1 else None
        except ValueError:
            rules = None  # an env with no table of its own: its games are stepped as `env` only
        if rules is None and (versus is not None or self.others):
            raise UsageError(f"{env.name} sets no table of {seats} seats: vs= and run opponents need one")
        if rules is not None:
            self.bot_kinds = tuple(hook(rules, "bot_kinds"))
            self.modes["table"] = Mode(self, "table", rules, table_params(rules, env_params), seats)
        self.opponent = opponents if isinstance(opponents, str) else (self.bot_kinds or ("",))[0]
        self.others_from = BOT + len(self.bot_kinds)  # the owner code of the first other player
        self.seats_with_bots = bool(hook(env, "opponent_slots"))

    @property
    def can_play(self) -> bool:
        """Whether a person can take a seat: not in head-to-head games between two runs."""
        return self.versus is None

    def owner_of(self, kind: str) -> int:
        """The owner code of the env's bot `kind` at the table."""
        return BOT + self.bot_kinds.index(kind)

    def mode_of(self, person: bool) -> Mode:
        """How a game is stepped: at the table for a person beside an env's bots, head-to-head and run opponents;
        else as the env."""
        wanted = (person and self.seats_with_bots) or self.versus is not None or bool(self.others)
        return self.modes["table" if "table" in self.modes and wanted else "env"]

    def owners(self, mode: Mode, game_index: int, person: bool) -> np.ndarray | None:
        """(seats,) table-mode owner of each seat in game `game_index` (None in env mode)."""
        if mode.name == "env":
            return None
        seats = np.arange(mode.seats)
        if self.versus is not None:  # the run holds the seats s with (s + g) even, as head-to-head evaluation
            other = self.owner_of(self.versus) if isinstance(self.versus, str) else self.others_from + len(self.others)
            return np.where((seats + game_index) % 2 == 0, POLICY, other).astype(np.int32)
        rest = self.others_from if self.others else self.owner_of(self.opponent)
        lineup = np.full(mode.seats, rest, np.int32)
        first = 0
        if person:
            lineup[0], first = PERSON, 1
        if self.agent is not None:
            lineup[first] = POLICY
        return lineup

    def seat_names(self, mode: Mode, owners: np.ndarray | None, person: bool) -> list[str]:
        """Who holds each seat, as the page lists them."""
        run = self.agent.name if self.agent else "random"
        if owners is None:  # the learners, then the env's own bots
            bots = int(hook(mode.env, "num_seats")) - mode.seats
            return (["you"] if person else [run]) + [run] * (mode.seats - 1) + ["bot"] * bots
        named = {PERSON: "you", POLICY: run, **{self.owner_of(k): k for k in self.bot_kinds}}
        others = self.players[1:]
        return [named[int(o)] if int(o) in named else others[int(o) - self.others_from].name for o in owners]

    def new_game(self, seed: int, person: bool, game_index: int = 0) -> Game:
        """A fresh game on `seed` (`person`: a person takes a seat)."""
        if person and not self.can_play:
            raise UsageError("head-to-head games (vs=) are between two runs: no seat is free for a person")
        return Game(self, int(seed), bool(person), int(game_index))

    def params(self) -> tuple[Any, ...]:
        return tuple(None if p is None else p.params for p in self.players)

    def initial_carries(self, seats: int) -> tuple[Any, ...]:
        return tuple(None if p is None else p.initial_carry(seats) for p in self.players)


def _views(rules: Any, agent: Agent | None, state: Any) -> jax.Array:
    """Every seat's observation of the table as `agent` sees it (through the env it trained in)."""
    eyes = rules if agent is None or agent.env is None else hook(agent.env, "table")(hook(rules, "num_seats"))
    return hook(eyes, "seat_obs")(state)


class Game:
    """One page's game: its seed, state, the actions taken, and the frames the page draws."""

    def __init__(self, table: Table, seed: int, person: bool, game_index: int):
        self.table, self.seed, self.person, self.index = table, seed, person, game_index
        self.chain = KeyChain(seed, table.seeds)
        self.mode = table.mode_of(person)
        self.owners = table.owners(self.mode, game_index, person)
        self.names = table.seat_names(self.mode, self.owners, person)
        reset_key, self.key = self.chain.start()
        self.obs, self.state = self.mode.reset(reset_key)
        self.carries = table.initial_carries(self.mode.seats)
        self.t, self.total, self.over = 0, 0.0, False
        self.returns = np.zeros(self.mode.seats)  # each seat's return (the arena's table: the page shows one)
        self.actions: list[Any] = []
        self.last_info: dict[str, Any] = {}
        self.focus = self._focus()
        self.numbers, self.value = self._look()

    @property
    def person_seat(self) -> int:
        """The person's seat (learner 0, or the table's PERSON seat)."""
        return 0 if self.owners is None else int(np.flatnonzero(self.owners == PERSON)[0])

    def _focus(self) -> int:
        """The seat whose policy numbers the page shows: the run's first seat (the person's in Snake)."""
        if self.owners is None:
            return 0
        held = np.flatnonzero(self.owners == POLICY)
        return int(held[0]) if held.size else 0

    def _look(self) -> tuple[np.ndarray, float]:
        m = self.mode
        obs = m.observe(self.state, self.obs)
        numbers, value = jax.device_get(m.look(self.table.params()[0], self.carries[0], obs, self.focus))
        return np.asarray(numbers), float(value)

    def takes_turns(self) -> bool:
        """Whether the env reads a turn key as a turn (a heading to turn from), not as no move."""
        seat = self.person_seat if self.person else self.focus
        act = lambda move: controls.person_action(self.mode.env, self.state, seat, move)
        return act("turn_left") != act("turn_right")

    def step(self, move: str | None) -> None:
        """One step: the person's `move` (None: straight on / stay) for their seat, the policies for the rest."""
        if self.over:
            return
        t, m = self.table, self.mode
        person_action = controls.person_action(m.env, self.state, self.person_seat, move) if self.person else 0
        owners = jnp.asarray(self.owners if self.owners is not None else np.zeros(m.seats, np.int32))
        out = m.step(
            self.key,
            self.state,
            self.obs,
            self.carries,
            jnp.int32(person_action),
            jnp.bool_(self.person),
            owners,
            self.focus,
            t.params(),
        )
        self.key, self.state, self.obs, self.carries, action, reward, done, info, numbers, value = out
        self.actions.append(np.asarray(action).tolist())
        self.returns = self.returns + np.asarray(reward, np.float64).reshape(-1)
        self.total += float(np.sum(np.asarray(reward)))
        self.last_info = jax.device_get(info)
        self.numbers, self.value = np.asarray(numbers), float(value)
        self.t += 1
        self.over = bool(done)

    def picture(self) -> np.ndarray:
        """(H, W, 3) uint8: the env's own picture of the state."""
        return np.asarray(self.mode.render(self.state))

    def status(self) -> dict[str, Any]:
        """What the page shows beside the board: step, score, return, placement, each seat, the result."""
        m, info = self.mode, self.last_info
        out: dict[str, Any] = {"step": self.t, "return": round(self.total, 4), "over": self.over}
        if m.name == "table":  # one seat's figures: the person's, else the run's
            seat = self.person_seat if self.person else self.focus
            out.update(seat=seat, **{"return": round(float(self.returns[seat]), 4)})
            shown = hook(m.env, "seat_status")(self.state)[seat]
            if "length" in shown:
                out["score"] = float(shown["length"])
            if "snake_placement" in info:
                out["placement"] = float(np.asarray(info["snake_placement"])[seat]) or 1.0
                out["kills"] = float(np.asarray(info["snake_kills"])[seat])
            out["won"] = bool(np.asarray(info.get("winner", -1)) == seat)
        else:
            for name in ("score", "placement", "kills"):
                if name in info:
                    out[name] = float(np.asarray(info[name]))
            if "won" in info:
                out["won"] = bool(np.asarray(info["won"]))
        out["seats"] = controls.seats(m.env, self.state, self.names)
        if self.person:
            out["you"] = self.person_seat
        if self.over:
            out["result"] = controls.result(m.env, info, self.names, self.person_seat if self.person else None)
        return out

    def readout(self) -> dict[str, Any] | None:
        """The run's policy at the focus seat: the numbers per action and the value; None without a policy."""
        t, m = self.table, self.mode
        if t.agent is None:
            return None
        names, numbers = controls.shown_actions(m.env, self.state, m.actions, self.numbers)
        return {
            "seat": self.focus,
            "who": self.names[self.focus] if not (self.person and self.owners is None) else t.agent.name,
            "kind": t.agent.kind,
            "names": names,
            "numbers": [round(float(x), 4) for x in numbers],
            "best": int(np.argmax(numbers)),
            "value": round(self.value, 4),
        }

    def episode(self) -> Episode:
        """This game as an episode file holds it (replayed by `python -m jaxrl.eval replay=FILE`)."""
        from jaxrl import envs
        from jaxrl.config.environment import env_settings

        t, m = self.table, self.mode
        values, dtypes = plain_params(jax.device_get(m.env_params))
        table = {"seats": m.seats} if m.name == "table" else None
        settings = env_settings(t.config)
        result: dict[str, Any] = {"return": self.total, "length": self.t}
        status = self.status()
        for name in ("score", "won", "placement"):
            if name in status:
                result[name] = status[name]
        return Episode(
            env=t.env_name,
            env_version=envs.spec(t.env_name).version,
            env_settings=settings,
            env_params=values,
            env_param_dtypes=dtypes,
            key=self.chain,
            actions=self.actions,
            table=table,
            seats=self.names,
            result=result,
        )
