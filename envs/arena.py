"""A multi-snake arena playing Battlesnake by the official engine's rules, with scripted bots inside the step.

The board is kept per cell: which snake holds a cell (`owner`) and for how many more moves
(`life`, the length at the head, counting down toward the tail). A move is then a count-down
over the board, so tails follow without a per-snake body list, and a snake that eats simply
stops one count (Battlesnake's stacked tail). Every rule is an elementwise mask or a reduction
over cells and snakes: no scatter or gather under `vmap`, which XLA runs slowly on CPU.
The rules, stage by stage, and how they are checked against the engine's own games: docs/arena.md.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from gymnax.environments import environment, spaces

from jaxrl.envs import controls
from jaxrl.envs.base import Env
from jaxrl.envs.checks import COUNT, FINITE, SHARE, check, check_int_setting, whole
from jaxrl.envs.kernels import DCOL, DROW, fusion_boundary, hash32, mix, pick
from jaxrl.envs.spaces import agents_box

CHANNELS = ("own body", "other bodies", "other heads", "heads at least as long", "food", "wall", "health", "hazard")
RULESETS = ("standard", "solo", "wrapped", "constrictor", "wrapped_constrictor", "royale")
SCRIPTS = ("greedy", "space", "lookahead")  # the scripted bots a step can compile for its drawn bots (`script`)
LOOK_RIVALS = 3  # the lookahead bot searches the joint replies (3 ** this) of this many nearest heads
# An elimination's cause, coded as the engine names it (index 0: not eliminated).
CAUSES = ("", "snake-collision", "snake-self-collision", "out-of-health", "head-collision", "wall-collision", "hazard")
SNAKE_HIT, SELF_HIT, STARVED, HEAD_HIT, WALL_HIT, HAZARD = range(1, 7)
FAR = 10_000  # a weight above any path length
LETTERS = "abcdefghijklmnopqrstuvwxyz012345"  # render_text and captions: snake k's letter (upper case: its head)
PERMUTATIONS = tuple(itertools.permutations(range(4)))  # the engine's shuffles of 4 start places
# render_rgb: the first learner green, then distinct hues; red is kept for food.
SNAKE_COLOURS = [
    (60, 220, 90),
    (70, 140, 255),
    (255, 170, 40),
    (200, 90, 230),
    (40, 210, 210),
    (240, 230, 70),
    (255, 120, 170),
    (150, 110, 70),
] * 4
COLOUR_NAMES = ("green", "blue", "orange", "purple", "cyan", "yellow", "rose", "tan")  # SNAKE_COLOURS' first 8


def is_script(script: Any) -> bool:
    """Whether `script` names what an arena's step can play: one of SCRIPTS, or several joined by "+" (a mix:
    the bots' seats take them in turn)."""
    return isinstance(script, str) and all(part in SCRIPTS for part in script.split("+"))


def _count_unreached(count: jax.Array, reached: jax.Array) -> jax.Array:
    """A bit-sliced counter (planes, ..., words) plus one at every bit not set in `reached` (..., words)."""
    carry_bits, out = ~reached, []
    for plane in count:
        out.append(plane ^ carry_bits)
        carry_bits = plane & carry_bits
    return jnp.stack(out)


def _shuffle(u: jax.Array) -> jax.Array:
    """One of the 24 orders of 4 start places (PERMUTATIONS), from a uniform draw."""
    return jnp.minimum((u * 24).astype(jnp.int32), 23)


def _choose(table: np.ndarray, i: jax.Array) -> jax.Array:
    """table[i] for a (24,) static table, as a masked sum (no gather under vmap)."""
    return jnp.sum(jnp.where(jnp.arange(24) == i, table, 0))


@struct.dataclass
class EnvState(environment.EnvState):
    owner: jax.Array  # (cells,) int8, the snake holding the cell; -1 free
    life: jax.Array  # (cells,) int16, moves until the cell frees (the head: the snake's length); 0 free
    food: jax.Array  # (cells,) bool
    hazard: jax.Array  # (cells,) bool
    head: jax.Array  # (snakes,) int32, cell index row * size + col (stale once the snake is dead)
    heading: jax.Array  # (snakes,) int32, the last move (0 up, 1 right, 2 down, 3 left)
    length: jax.Array  # (snakes,) int32
    health: jax.Array  # (snakes,) int32
    alive: jax.Array  # (snakes,) bool
    playing: jax.Array  # (snakes,) bool, in this game (every learner, and num_bots bots)
    greedy: (
        jax.Array
    )  # (snakes,) bool, a bot that plays the arena's script, greedy or space (else random_safe); per game
    policy: jax.Array  # (snakes,) bool, a bot the frozen policy drives (env.bot_policy); drawn per game
    placement: jax.Array  # (snakes,) int32, 1 + snakes that outlived it (0 while alive; 1 for a survivor)
    kills: jax.Array  # (snakes,) int32, snakes whose elimination the engine credits to this one
    cause: jax.Array  # (snakes,) int8, why it was eliminated: an index into CAUSES (0 while alive)
    killer: jax.Array  # (snakes,) int8, the snake the engine credits with it (itself for its own body); -1 none
    sides: jax.Array  # (2 * size,) int8, royale: the side each shrink moves in (0 left, 1 right, 2 bottom, 3 top)
    time: jax.Array  # () int32, steps since the reset (the engine's turn)


@struct.dataclass
class EnvParams(environment.EnvParams):
    max_steps_in_episode: int = 500  # truncation: steps in one game
    num_bots: int = 3  # snakes the bots drive (the rest of the slots beyond the learners sit the game out)
    fewest_bots: int = -1  # each game draws its bots uniformly from fewest_bots to num_bots (-1: num_bots always)
    greedy_share: float = 1.0  # chance that a game's scripted bots play greedy (else random_safe), drawn per game
    policy_share: float = 0.0  # chance that a game's bots are the frozen policy of bot_policy (1 when it is set)
    start_length: int = 3  # a new snake: this many segments stacked on its start cell
    max_health: int = 100  # health at the start and after eating; -1 per step, a snake at 0 starves
    min_food: int = 1  # the engine's minimumFood: after each step the food is topped up to this many
    food_chance: int = 15  # the engine's foodSpawnChance: with min_food met, one more food fires (chance - 1) in 100
    hazard_damage: int = 14  # the engine's hazardDamagePerTurn: health lost by a head in a hazard (no food there)
    shrink_every: int = 25  # royale: the safe area shrinks by one row or column every this many turns
    reward_win: float = 1.0  # a learner left alone on the board (the game had 2 or more snakes)
    reward_death: float = -1.0  # a learner's death (leaving the board, a collision, starving)
    reward_food: float = 0.0  # a learner eating
    reward_step: float = 0.0  # every other step of a live learner
    reward_outlive: float = 0.0  # added for each other snake that dies on a step the learner survives


class Arena(Env):
    """`num_snakes` snakes on a `size x size` board, all moving at once, by the official Battlesnake engine's rules.

    Snakes 0 .. num_agents-1 are the learners; the next `num_bots` (an EnvParams value, so a
    curriculum can change it without recompiling; with `fewest_bots` >= 0 each game draws its
    number from fewest_bots to num_bots, the lowest seats playing) are driven by bots inside the
    step; any slots beyond sit the game out.
    `ruleset` (the engine's): `standard`, `solo` (the game goes on until no snake is left),
        `wrapped` (the edges wrap), `constrictor` (every snake grows every turn; no food stays),
        `wrapped_constrictor`, `royale` (hazards close in from one side every `shrink_every` turns).
    A turn, stage by stage as the engine runs it: every snake moves (its tail leaves unless
        stacked) and loses 1 health; a head in a hazard without food loses `hazard_damage` more
        (at 0 it is out at once); a head on food eats (health back to `max_health`, one segment
        longer: the tail stacks); then the eliminations, in two passes: first the starved and
        those off the board, whose bodies then leave; then, against what is left, a head on its
        own body, on another's body, or on another head at least as long (equal lengths: both).
        The cause of each and the snake credited with it are kept (`cause`, `killer`, `kills`).
        Then food: topped up to `min_food` at once, else one more with the engine's chance, on
        cells free of food and live bodies and not beside a live head.
    Start (the engine's maps): up to 8 snakes on a board of 7 or more on 8 fixed cells one in
        from the edges (corners and edge midpoints), 9-16 on a board of 11 or more spread over
        the quadrants, otherwise distinct random cells with x + y even (not the centre); each
        `start_length` segments stacked. Food one diagonal from each snake away from the centre
        (with 4 snakes or fewer, or a board of 11 or more) and one at the centre.
    Bots: `random_safe` moves at random among the moves that do not die for certain this step
        (off the board, into a body cell that stays); `greedy` takes the shortest path to food
        (breadth-first over cells free now or freed this step), never a certain death, and
        avoids cells next to the head of a snake as long or longer; `space` (`space_scores`) also
        looks two moves ahead, keeps room to live in (a flood fill in time), takes only food it
        reaches first and hunts shorter heads; `lookahead` (`lookahead_scores`) searches two turns of
        simultaneous moves, maximin against its nearest rivals' replies. A game's bots all play `script`
        (greedy, space, lookahead, or a mix such as space+lookahead: the bots' seats take its kinds in
        turn) with probability `greedy_share`, else all random_safe; every kind plays at a table.
    Observation: per learner `(view, view, 8)` uint8 centred on its head and turned so that it
        heads up; channels 0 own body (head included), 1 other bodies, 2 other heads, 3 other
        heads at least as long as it, 4 food, 5 wall (beyond the board; none when wrapped: the
        view wraps), 6 its health as a bar (the first `health` cells in reading order lit, at
        most view * view), 7 hazard; with `tails=True` a ninth, 8: the body cells the next move
        empties (every snake's tail that is not stacked: a snake that has just eaten keeps its
        tail one more move); all zeros once it is dead. With `num_agents=K > 1` a
        leading agent axis: `(K, view, view, 8 or 9)`.
    Actions: per learner `Discrete(4)`: 0 turn left, 1 straight on, 2 turn right, 3 back (into its
        neck: the engine's self-collision, except from a stacked start) (`(K,)` for K learners).
    Reward: per learner, `reward_death` on the step it dies, `reward_win` on the step it is left
        alone (in a game of 2 or more), `reward_food` for eating, `reward_step` every other live step,
        plus `reward_outlive` for each other snake that dies on a step it survives (a placement
        gained); 0 once dead. `()` for one learner, `(K,)` for K.
    Termination: the engine's game over (at most one snake left; none in `solo` or a game of one),
        or no learner left (nothing learns from the bots' remaining game; its placements are
        settled). Truncation: `max_steps_in_episode` steps.
    Info (per game): `won` (a learner is the last snake), `score` (the learners' mean length),
        `placement` (the learners' mean placement: 1 + the snakes that outlived it; survivors at a
        truncation share 1), `kills` (the learners' kills); per snake `snake_alive`, `snake_length`,
        `snake_placement`, `snake_kills`, `snake_cause`, `snake_killer`, `snake_ate`, and `winner`
        (the last snake's index, -1 for none).
    """

    name = "arena"
    num_actions = 4
    causes = CAUSES  # info["cause"]: why the first learner is out (evaluation counts them)
    rulesets = RULESETS  # what `ruleset=` takes
    letters = LETTERS  # render_text's letter of snake k

    BOT_SALT = 0x5EED_0004  # the bots' tie-breaks; food draws use FOOD_SALT, the chance of food STEP_SALT
    FOOD_SALT = 0x5EED_0005
    SIDE_SALT = 0x5EED_0006

    def __init__(
        self,
        size: int = 11,
        num_snakes: int = 4,
        num_agents: int = 1,
        view: int = 11,
        bot_policy: str = "",
        ruleset: str = "standard",
        script: str = "greedy",
        tails: bool = False,
    ):
        super().__init__()
        if not isinstance(tails, bool):
            raise ValueError(f"arena tails must be true or false, got {tails!r}")  # noqa: TRY004
        if not isinstance(bot_policy, str):  # a ValueError, as for every bad setting (the registry reports those)
            raise ValueError(f"arena bot_policy must be a run directory (a string), got {bot_policy!r}")  # noqa: TRY004
        if ruleset not in RULESETS:
            raise ValueError(f"arena ruleset must be one of {', '.join(RULESETS)}, got {ruleset!r}")
        if not is_script(script):
            raise ValueError(
                f"arena script must be one of {', '.join(SCRIPTS)}, or several joined by + (a mix: the bots' seats"
                f" take them in turn), got {script!r}"
            )
        self.bot_policy = bot_policy  # a finished run whose greedy policy drives bots (jaxrl loads it: with_bot_policy)
        self.ruleset = ruleset
        self.script = script  # what the bots drawn by greedy_share play in the step (the others: random_safe)
        self.tails = tails  # the view's ninth channel: the body cells that free on the next move
        self.wrapped = ruleset in ("wrapped", "wrapped_constrictor")
        self.constrictor = ruleset in ("constrictor", "wrapped_constrictor")
        self.royale = ruleset == "royale"
        self.solo = ruleset == "solo"
        self._policy = None
        self._versus = False  # every seat's action given (`versus`)
        check_int_setting("arena size", size, 5, 32)
        check_int_setting("arena num_snakes", num_snakes, 1, 32)
        most = self.most_snakes(size)
        if num_snakes > most:
            raise ValueError(
                f"arena size={size} is too small for num_snakes={num_snakes}: it has {most} start cells"
                " (cells with x + y even, not the centre)"
            )
        check_int_setting("arena num_agents (learners)", num_agents, 1, num_snakes, "num_snakes")
        if not isinstance(view, int) or isinstance(view, bool) or not 3 <= view <= 63 or view % 2 == 0:
            raise ValueError(
                f"arena view must be an odd integer from 3 to 63 (2 * size - 1 sees the whole board), got {view!r}"
            )
        self.size, self.num_snakes, self.num_agents, self.view = size, num_snakes, num_agents, view
        self.num_cells = size * size
        self.half = view // 2
        self._cells = jnp.arange(self.num_cells, dtype=jnp.int32)
        self._reading_order = jnp.arange(view * view, dtype=jnp.int32).reshape(view, view)
        # Offsets into the padded board (side size + view - 1) of the crop at the top-left corner, turned so
        # that heading t points up: np.rot90(crop, t) (t counterclockwise quarter turns), as a (view, view) table.
        self._padded_side = size + 2 * self.half
        cells = np.arange(view * view).reshape(view, view)
        self._turned = [
            jnp.asarray((np.rot90(cells, t) // view) * self._padded_side + np.rot90(cells, t) % view, jnp.int32)
            for t in range(4)
        ]
        self._start_tables()

    @staticmethod
    def most_snakes(size: int) -> int:
        """Snakes a size x size board can start: the engine's random placement's cells (x + y even, not the centre),
        which is at least its fixed (8) and distributed (16) placements where those apply."""
        return (size * size + 1) // 2 - 1  # the centre ((size - 1) // 2 twice) is always an even cell

    def cell(self, x: int, y: int) -> int:
        """The cell index of the engine's point (x, y): x to the right, y up (row 0 is the top)."""
        return (self.size - 1 - y) * self.size + x

    def with_bot_policy(self, policy) -> Arena:
        """This arena with `policy(obs (n, view, view, channels) uint8, key) -> (n,) relative actions` driving the bots
        that `policy_share` hands to it (jaxrl attaches the greedy policy of the `bot_policy` run)."""
        made = Arena(
            self.size,
            self.num_snakes,
            self.num_agents,
            self.view,
            self.bot_policy,
            self.ruleset,
            self.script,
            self.tails,
        )
        made._policy, made._versus = policy, self._versus
        return made

    def with_script(self, kind: str) -> Arena:
        """This arena with the bots drawn by `greedy_share` playing `kind` in its step (evaluation against a
        scripted kind the run did not train with); itself for a kind that needs no script (random_safe)."""
        if kind == "random_safe" or kind == self.script:
            return self
        if not is_script(kind):
            raise ValueError(f"{kind!r} is not a script of the arena: {', '.join(SCRIPTS)}, or a mix joined by +")
        made = Arena(
            self.size, self.num_snakes, self.num_agents, self.view, self.bot_policy, self.ruleset, kind, self.tails
        )
        made._policy, made._versus = self._policy, self._versus
        return made

    # -- opponents given from outside (jaxrl's self-play: a pool of past policies drives the bots) ----

    @property
    def opponent_slots(self) -> int:
        """Snakes beyond the learners (the bots' seats; `num_bots` of them play a game)."""
        return self.num_snakes - self.num_agents

    def versus(self) -> Arena:
        """This arena taking every seat's action: `(num_agents + opponent_slots,)` relative actions, the
        learners' first; the bots in a game move as given instead of by their scripts."""
        made = self.with_bot_policy(self._policy)
        made._versus = True
        return made

    def opponent_obs(self, state: EnvState, like: Arena | None = None) -> jax.Array:
        """(opponent_slots, view, view, channels): what each bot seat sees, as a learner in its place would; with
        `like` (a frozen league member's own arena), as its learners would: its width, its tails channel."""
        seats = tuple(range(self.num_agents, self.num_snakes))
        if like is None or (like.view, like.tails) == (self.view, self.tails):
            return self.views(state, seats)
        twin = Arena(self.size, self.num_snakes, self.num_agents, like.view, "", self.ruleset, self.script, like.tails)
        return twin.views(state, seats)

    def opponent_actions(self, key: jax.Array, state: EnvState) -> jax.Array:
        """(opponent_slots,) the relative actions the bots' scripts (or the frozen policy) would take."""
        bots = slice(self.num_agents, None)
        return (self.bot_directions(key, state)[bots] - state.heading[bots] + 1) % 4

    def opponent_kind_actions(self, key: jax.Array, state: EnvState, kind: str) -> jax.Array:
        """(opponent_slots,) the relative actions of bot kind `kind` (any of `bot_kinds`) in the bots' seats."""
        return self.bot_actions(key, state, kind)[self.num_agents :]

    @staticmethod
    def learner_result(info: dict) -> jax.Array:
        """A game's result for the learners: 1 won (the last snake), 0 outlived by another snake, 0.5 otherwise
        (survivors at the truncation, or the last snakes dying together)."""
        return jnp.where(info["won"], 1.0, jnp.where(info["placement"] <= 1, 0.5, 0.0)).astype(jnp.float32)

    # -- seats: head to head, rating, the play page --------------------------------------

    bot_kinds = ("greedy", "space", "lookahead", "random_safe")  # the weakest last: ratings are anchored there
    game_settings = ("size", "ruleset")  # the view and the snakes a run trained beside are its own

    def game_seats(self, params: EnvParams) -> int:
        return self.num_agents + int(np.asarray(params.num_bots))

    def table(self, seats: int | None = None) -> Arena:
        """Every one of `seats` snakes (default num_snakes) a seat taking its action; no bots, no bot policy."""
        n = self.num_snakes if seats is None else seats
        return Arena(size=self.size, num_snakes=n, num_agents=n, view=self.view, ruleset=self.ruleset, tails=self.tails)

    def bot_actions(self, key: jax.Array, state: EnvState, kind: str) -> jax.Array:
        if kind not in self.bot_kinds:
            raise ValueError(f"bot {kind!r} is invalid: the arena's bots are {', '.join(self.bot_kinds)}")
        scripted = state.replace(greedy=jnp.full_like(state.alive, kind != "random_safe"))
        script = kind if kind in SCRIPTS else "greedy"  # random_safe: no bot is flagged, no script is needed
        return ((self.bot_directions(key, scripted, script) - state.heading + 1) % 4).astype(jnp.int32)

    def seat_alive(self, state: EnvState) -> jax.Array:
        return state.alive

    def seat_placement(self, state: EnvState, returns: jax.Array) -> jax.Array:
        """1 for a snake still on the board, else its placement (1 + the snakes that outlived it)."""
        return jnp.where(state.alive, 1, jnp.maximum(state.placement, 1)).astype(jnp.float32)

    def seat_status(self, state: EnvState) -> list[dict]:
        length, alive, placement = (np.asarray(x) for x in (state.length, state.alive, state.placement))
        return [
            {
                "mark": COLOUR_NAMES[k % len(COLOUR_NAMES)][0],
                "colour": list(SNAKE_COLOURS[k]),
                "length": int(length[k]),
                "alive": bool(alive[k]),
                "placement": int(placement[k]),
            }
            for k in range(self.num_snakes)
        ]

    def eval_params(self, params: EnvParams) -> EnvParams:
        """The params to evaluate a policy with: every game at the full table of num_bots bots (a run that
        trained with `fewest_bots` is measured as it will be played; `num_bots=` picks another size)."""
        return params.replace(fewest_bots=jnp.full_like(params.fewest_bots, -1))

    def set_bots(self, params: EnvParams, kind: str | None, count: int | None) -> EnvParams:
        fill = lambda field, value: jnp.full_like(getattr(params, field), value)
        if count is not None:
            if not 0 <= count <= self.opponent_slots:
                raise ValueError(
                    f"num_bots={count} is invalid: the run's arena has room for 0 to {self.opponent_slots} bots"
                )
            params = params.replace(num_bots=fill("num_bots", count), fewest_bots=fill("fewest_bots", -1))
        if kind == "policy":
            params = params.replace(policy_share=fill("policy_share", 1.0))
        elif kind is not None:
            if kind not in self.bot_kinds and not is_script(kind):
                raise ValueError(
                    f"opponents={kind} is invalid: allowed {', '.join(self.bot_kinds)}, a mix such as space+lookahead,"
                    " or a policy"
                )
            if kind not in (self.script, "random_safe"):
                table = f", or meet {kind} head to head (vs={kind})" if kind in self.bot_kinds else ""
                raise ValueError(
                    f"opponents={kind} is not compiled into this arena's step (env.script={self.script}):"
                    f" build it with env.with_script({kind!r}) (python -m jaxrl.eval does){table}"
                )
            greedy = 0.0 if kind == "random_safe" else 1.0
            params = params.replace(greedy_share=fill("greedy_share", greedy), policy_share=fill("policy_share", 0.0))
        return params

    def action_names(self) -> tuple[str, ...]:
        return (*controls.RELATIVE, "back")

    def person_action(self, state: EnvState, seat: int, move: str | None) -> int:
        """A compass key straight back is "back" only on a stacked start's first move; later it goes on."""
        controls.check_move(move)
        heading = int(np.asarray(state.heading)[seat])
        if controls.reverses(heading, move) and int(np.asarray(state.time)) == 0:
            return 3
        return controls.turn(heading, move) + 1

    # -- the Battlesnake API: a request's board as this arena's player sees it -------------------

    MOVES_BY_HEADING = ("up", "right", "down", "left")  # headings 0..3: row - 1 is the engine's y + 1
    BOARD_SEATS = (8, 16, 32)  # a request's snakes sit in the next of these: a game keeps one compiled shape

    def board_game(self, request: dict) -> dict:
        board, you = request["board"], request["you"]
        width, height = int(board["width"]), int(board["height"])
        ruleset = str(((request.get("game") or {}).get("ruleset") or {}).get("name") or "standard")
        if ruleset not in RULESETS:
            raise ValueError(f"ruleset {ruleset!r} is not one the arena plays ({', '.join(RULESETS)})")
        if width != height:
            raise ValueError(f"the arena plays square boards, not {width}x{height}")
        mine = [s for s in board["snakes"] if str(s["id"]) == str(you["id"])]
        if not mine:
            raise ValueError(f"you ({you['id']!r}) are not among the board's snakes")
        snakes = mine[:1] + [s for s in board["snakes"] if str(s["id"]) != str(you["id"])]  # you: seat 0
        size = width
        seats = next((b for b in self.BOARD_SEATS if b >= len(snakes)), len(snakes))  # empty seats: one shape
        seats = max(len(snakes), min(seats, self.most_snakes(size)))
        env = Arena(size=size, num_snakes=seats, num_agents=1, view=self.view, ruleset=ruleset, tails=self.tails)

        def cell(point: dict) -> tuple[int, int]:
            x, y = int(point["x"]), int(point["y"])
            if not (0 <= x < size and 0 <= y < size):
                raise ValueError(f"point ({x}, {y}) is off the {size}x{size} board")
            return size - 1 - y, x

        bodies, heading, stacked = [], [], []
        for s in snakes:
            body = [cell(p) for p in s["body"]]
            if not body:
                raise ValueError(f"snake {s['id']!r} has no body")
            bodies.append(body)
            neck = next((c for c in body[1:] if c != body[0]), None)
            stacked.append(neck is None or neck == body[0])
            heading.append(0 if neck is None else self._heading_from(body[0], neck, size))
        seat = 0
        health = [int(s.get("health", 100)) for s in snakes] + [0] * (seats - len(snakes))
        heading += [0] * (seats - len(snakes))
        state = env.make_state(
            bodies + [[] for _ in range(seats - len(snakes))],
            food=[cell(p) for p in board.get("food") or ()],
            health=health,
            heading=heading,
            bots="none",
            time=int(request.get("turn", 0)),
            hazards=[cell(p) for p in board.get("hazards") or ()],
        )
        back_is_neck = len(bodies[seat]) > 1 and not stacked[seat]
        allowed = np.array([True, True, True, not back_is_neck])
        return {"env": env, "state": state, "seat": seat, "allowed": allowed, "exact": True}

    @staticmethod
    def _heading_from(head: tuple[int, int], neck: tuple[int, int], size: int) -> int:
        """The heading that brought a head from its neck (across an edge too, as the wrapped rulesets move)."""
        dr, dc = head[0] - neck[0], head[1] - neck[1]
        dr = -1 if dr == size - 1 else 1 if dr == 1 - size else dr
        dc = -1 if dc == size - 1 else 1 if dc == 1 - size else dc
        return {(-1, 0): 0, (0, 1): 1, (1, 0): 2, (0, -1): 3}.get((dr, dc), 0)

    def board_request(
        self, state: EnvState, seat: int, game: dict, names: list[str] | None = None, params: EnvParams | None = None
    ) -> dict:
        n = self.size
        owner, life = np.asarray(state.owner), np.asarray(state.life)
        point = lambda cell: {"x": int(cell) % n, "y": n - 1 - int(cell) // n}
        snakes = []
        for k in range(self.num_snakes):
            if not bool(np.asarray(state.alive)[k]):
                continue
            cells = np.flatnonzero(owner == k)
            cells = cells[np.argsort(-life[cells], kind="stable")]  # head first (the most turns left)
            length = int(np.asarray(state.length)[k])
            body = [point(c) for c in cells] + [point(cells[-1])] * (length - len(cells))  # a stacked tail
            snakes.append(
                {
                    "id": f"s{k}",
                    "name": names[k] if names else f"s{k}",
                    "health": int(np.asarray(state.health)[k]),
                    "body": body,
                    "head": body[0],
                    "length": length,
                    "latency": "0",
                    "shout": "",
                }
            )
        board = {
            "height": n,
            "width": n,
            "snakes": snakes,
            "food": [point(c) for c in np.flatnonzero(np.asarray(state.food))],
            "hazards": [point(c) for c in np.flatnonzero(np.asarray(state.hazard))],
        }
        you = next((s for s in snakes if s["id"] == f"s{seat}"), None)  # None once the seat is out
        game = self._board_game_object(game, self.default_params if params is None else params)
        return {"game": game, "turn": int(np.asarray(state.time)), "board": board, "you": you}

    def _board_game_object(self, game: dict, params: EnvParams) -> dict:
        """A request's game object with the ruleset (its settings as the engine names them) and map played."""
        settings = {
            "foodSpawnChance": int(params.food_chance),
            "minimumFood": int(params.min_food),
            "hazardDamagePerTurn": int(params.hazard_damage),
            "royale": {"shrinkEveryNTurns": int(params.shrink_every)},
        }
        return {
            "id": game.get("id", ""),
            "ruleset": game.get("ruleset") or {"name": self.ruleset, "version": "jaxrl", "settings": settings},
            "map": game.get("map") or ("royale" if self.ruleset == "royale" else "standard"),
            **{k: v for k, v in game.items() if k not in ("id", "ruleset", "map")},
        }

    def board_move(self, state: EnvState, seat: int, action: int) -> str:
        heading = int(np.asarray(state.heading)[seat])
        return self.MOVES_BY_HEADING[(heading + int(action) - 1) % 4]

    def board_action(self, state: EnvState, seat: int, move: str) -> int:
        if move not in self.MOVES_BY_HEADING:
            raise ValueError(f"move {move!r} is not one of the engine's: {', '.join(self.MOVES_BY_HEADING)}")
        heading = int(np.asarray(state.heading)[seat])
        return (self.MOVES_BY_HEADING.index(move) - heading + 1) % 4

    def result_line(self, info: dict, names: list[str], you: int | None) -> str:
        winner = int(np.asarray(info["winner"])) if "winner" in info else -1
        if you is not None and "snake_placement" in info:
            place = int(np.asarray(info["snake_placement"])[you]) or 1
            return ("you won" if winner == you else f"you placed {place} of {len(names)}") + (
                f"; {names[winner]} won" if winner >= 0 and winner != you else ""
            )
        if 0 <= winner < len(names):
            return f"{names[winner]} (seat {winner}) won"
        return "no snake left alone: a draw" if winner < 0 else "won"

    @property
    def default_params(self) -> EnvParams:
        return EnvParams(num_bots=self.num_snakes - self.num_agents, policy_share=1.0 if self.bot_policy else 0.0)

    def check_params(self, params: EnvParams) -> None:
        most = self.num_snakes - self.num_agents
        share_unused = ("policy_share", lambda x: float(x) == 0, "0 without env.bot_policy=RUN_DIR")
        check(
            params,
            ("max_steps_in_episode", *COUNT),
            (
                "num_bots",
                lambda x: 0 <= whole(x) <= most,
                f"an integer from 0 to num_snakes - num_agents = {self.num_snakes} - {self.num_agents} = {most}",
            ),
            (
                "fewest_bots",
                lambda x: whole(x) == -1 or 0 <= whole(x) <= whole(params.num_bots),
                "-1 (every game num_bots) or an integer from 0 to num_bots",
            ),
            ("start_length", lambda x: 1 <= whole(x) <= 1000, "an integer from 1 to 1000"),
            ("max_health", *COUNT),
            ("min_food", lambda x: 0 <= whole(x) <= self.num_cells, f"an integer from 0 to {self.num_cells}"),
            ("food_chance", lambda x: 0 <= whole(x) <= 100, "an integer percent from 0 to 100 (the engine's 15)"),
            ("hazard_damage", lambda x: 0 <= whole(x) <= 1000, "an integer from 0 to 1000"),
            ("shrink_every", lambda x: 1 <= whole(x) <= 100_000, "an integer from 1"),
            (("greedy_share", "policy_share"), *SHARE),
            *(() if self.bot_policy else (share_unused,)),
            (("reward_win", "reward_death", "reward_food", "reward_step", "reward_outlive"), *FINITE),
        )

    def observation_space(self, params: EnvParams | None = None) -> spaces.Box:
        return agents_box((self.view, self.view, len(CHANNELS) + self.tails), self.num_agents)

    # -- helpers ----------------------------------------------------------------------

    def _at(self, board: jax.Array, cell: jax.Array) -> jax.Array:
        """board[cell] for each of the (n,) cells (0 / False where cell is -1: off the board), as a masked reduction."""
        hit = self._cells[None, :] == cell[:, None]
        if board.dtype == jnp.bool_:
            return jnp.any(hit & board[None, :], axis=1)
        return jnp.sum(jnp.where(hit, board[None, :], jnp.zeros((), board.dtype)), axis=1)

    def _bit_at(self, board: jax.Array, cell: jax.Array) -> jax.Array:
        """board[cell] for each of the (n,) cells (False off the board) read from row words: n x size, not n x cells."""
        rows = self._pack(board)
        word = jnp.sum(
            jnp.where(jnp.arange(self.size) == (cell // self.size)[:, None], rows, 0), axis=1, dtype=jnp.uint32
        )
        return (cell >= 0) & (((word >> (cell % self.size).astype(jnp.uint32)) & 1) == 1)

    def _target(self, head: jax.Array, direction: jax.Array) -> jax.Array:
        """The cell one move from `head` in `direction`, -1 off the board (elementwise)."""
        row, col = head // self.size + pick(DROW, direction), head % self.size + pick(DCOL, direction)
        if self.wrapped:
            row, col = row % self.size, col % self.size
        inside = (row >= 0) & (row < self.size) & (col >= 0) & (col < self.size)
        return jnp.where(inside, row * self.size + col, -1)

    def _random_cells(self, key: jax.Array, salt: int) -> jax.Array:
        """(cells,) uint32 random words, independent per cell, salt and key."""
        return hash32(mix(key, salt) ^ (self._cells.astype(jnp.uint32) * jnp.uint32(0x9E3779B9)))

    def _spawn(self, food: jax.Array, free: jax.Array, count: jax.Array, noise: jax.Array) -> jax.Array:
        """`food` with `count` more (fewer where fewer cells are free), each on a uniformly random free cell
        without replacement: the free cell with the largest random word, round by round (a reduction; no
        prefix count). One round runs always; more only while some game still needs one."""

        def place(word, j, food, free, count):
            score = jnp.where(free, (word >> 1).astype(jnp.int32), -1)
            chosen = (self._cells == jnp.argmax(score)) & (j < count) & (jnp.max(score) >= 0)
            return food | chosen, free & ~chosen

        food, free = place(noise, jnp.int32(0), food, free, count)  # the first round reads the words as drawn

        def more(carry):
            j, food, free = carry
            word = hash32(noise ^ hash32(jnp.uint32(0x27D4EB2F) * j.astype(jnp.uint32)))
            return (j + 1, *place(word, j, food, free, count))

        def needed(carry):
            j, _, free = carry
            return jnp.any((j < count) & jnp.any(free))

        return jax.lax.while_loop(needed, more, (jnp.int32(1), food, free))[1]

    def _near(self, cells: jax.Array) -> jax.Array:
        """(cells,) bool: the 4 neighbours of the given cells on the board (never across an edge, as the engine's
        food rule reads them even when the edges wrap)."""
        n = self.size
        b = cells.reshape(n, n)
        no_row, no_col = jnp.zeros((1, n), bool), jnp.zeros((n, 1), bool)
        up = jnp.concatenate([b[1:], no_row])
        down = jnp.concatenate([no_row, b[:-1]])
        left = jnp.concatenate([b[:, 1:], no_col], axis=1)
        right = jnp.concatenate([no_col, b[:, :-1]], axis=1)
        return (up | down | left | right).reshape(-1)

    # -- bots -------------------------------------------------------------------------

    def _pack(self, cells: jax.Array) -> jax.Array:
        """(cells,) bool -> (size,) uint32 row words, bit c of word r for cell (r, c)."""
        bits = jnp.uint32(1) << jnp.arange(self.size, dtype=jnp.uint32)
        return jnp.sum(jnp.where(cells.reshape(self.size, self.size), bits, jnp.uint32(0)), axis=1, dtype=jnp.uint32)

    def food_distance(self, state: EnvState, targets: jax.Array) -> jax.Array:
        """(n,) steps from each target cell to the nearest food over cells free now or freed this step,
        at most `2 * size` (also where no food is reached); -1 targets (off the board) read 0.

        Breadth-first on row bitboards: each round grows the reached set by one step in every
        direction, and a bit-sliced counter (one uint32 word per row and bit) adds one to every
        cell not reached yet, so a cell's count is its distance. 11 words a round instead of 121 cells.
        """
        rounds = 2 * self.size
        planes = rounds.bit_length()
        full = jnp.uint32((1 << self.size) - 1)
        passable = self._pack(state.life <= 1)
        zero = jnp.zeros(1, jnp.uint32)

        def spread(_, carry):
            reached, count = carry
            grown = (reached << 1) | (reached >> 1) | jnp.concatenate([reached[1:], zero])
            grown = grown | jnp.concatenate([zero, reached[:-1]])
            return reached | (grown & passable & full), _count_unreached(count, reached)

        count = jnp.zeros((planes, self.size), jnp.uint32)
        _, count = jax.lax.fori_loop(0, rounds, spread, (self._pack(state.food), count))
        row, col = targets // self.size, (targets % self.size).astype(jnp.uint32)
        words = jnp.sum(  # (n, planes): each target's row of every plane
            jnp.where((jnp.arange(self.size) == row[:, None])[:, None, :], count[None], jnp.uint32(0)),
            axis=2,
            dtype=jnp.uint32,
        )
        bits = (words >> col[:, None]) & jnp.uint32(1)
        dist = jnp.sum(bits << jnp.arange(planes, dtype=jnp.uint32), axis=1).astype(jnp.int32)
        return jnp.where(targets >= 0, dist, 0)

    def _neighbours(self, words: jax.Array) -> jax.Array:
        """(..., size) row words -> the cells one step from any set cell (across the edges when wrapped)."""
        full = jnp.uint32((1 << self.size) - 1)
        if self.wrapped:
            sideways = (words << 1) | (words >> (self.size - 1)) | (words >> 1) | (words << (self.size - 1))
            updown = jnp.roll(words, 1, axis=-1) | jnp.roll(words, -1, axis=-1)
        else:
            sideways = (words << 1) | (words >> 1)
            zero = jnp.zeros_like(words[..., :1])
            updown = jnp.concatenate([words[..., 1:], zero], -1) | jnp.concatenate([zero, words[..., :-1]], -1)
        return (sideways | updown) & full

    def _cell_words(self, cells: jax.Array) -> jax.Array:
        """(...,) cells -> (..., size) row words with each cell's bit (none for -1)."""
        bits = jnp.uint32(1) << jnp.arange(self.size, dtype=jnp.uint32)
        row, col = jnp.maximum(cells, 0) // self.size, jnp.maximum(cells, 0) % self.size
        return jnp.where(
            (jnp.arange(self.size) == row[..., None]) & (cells[..., None] >= 0), bits[col][..., None], jnp.uint32(0)
        )

    def room(
        self, state: EnvState, targets: jax.Array, blocked: jax.Array, on_move: int = 1, behind: jax.Array | None = None
    ) -> jax.Array:
        """(m, snakes) cells each snake could reach from each of its `targets` (m, snakes) (-1: none), entered
        on move `on_move`: a breadth-first search in time, where a body cell with `life` L can be entered on
        move L at the earliest (that body has moved off it; never under constrictor, where bodies stay) and
        the search takes each cell at its earliest arrival; cells `blocked` (snakes, cells) to that snake, and
        the cell `behind` (m, snakes) each target (the snake's own neck), are never entered. Over 2 * size
        moves, on row bitboards."""
        start = self._cell_words(targets)  # (m, n, size)
        closed = jax.vmap(self._pack)(blocked)  # (n, size)
        if behind is not None:
            closed = closed | self._cell_words(behind)

        def grow(moves, carry):
            reached, frontier = carry
            opens = state.life == 0 if self.constrictor else state.life <= moves + on_move + 1  # free then
            new = self._neighbours(frontier) & self._pack(opens) & ~closed & ~reached
            return reached | new, new

        reached, _ = jax.lax.fori_loop(0, 2 * self.size, grow, (start, start))
        return jnp.sum(jax.lax.population_count(reached), axis=-1).astype(jnp.int32)

    def _apart(self, a: jax.Array, b: jax.Array) -> jax.Array:
        """Moves between cells `a` and `b` (elementwise, broadcast) on an empty board (around the edges when
        wrapped)."""
        dr, dc = jnp.abs(a // self.size - b // self.size), jnp.abs(a % self.size - b % self.size)
        if self.wrapped:
            dr, dc = jnp.minimum(dr, self.size - dr), jnp.minimum(dc, self.size - dc)
        return dr + dc

    def distances(self, sources: jax.Array, passable: jax.Array) -> jax.Array:
        """(k, cells) moves from the nearest cell of each of `sources` (k, cells) bool to every cell, over
        `passable` (cells,) cells; 2 * size + 1 where none is reached within 2 * size moves. Row bitboards: a
        bit-sliced counter (one word per row and bit) adds one each round to every cell not reached yet, and
        the counts are read back per cell once, at the end."""
        rounds = 2 * self.size
        planes = rounds.bit_length()
        usable = self._pack(passable)
        shifts = jnp.arange(self.size, dtype=jnp.uint32)

        def grow(_, carry):
            reached, count = carry
            return reached | (self._neighbours(reached) & usable), _count_unreached(count, reached)

        start = jax.vmap(self._pack)(sources)  # (k, size)
        count = jnp.zeros((planes, *start.shape), jnp.uint32)
        reached, count = jax.lax.fori_loop(0, rounds, grow, (start, count))
        cells = lambda words: (words[..., None] >> shifts) & jnp.uint32(1)  # (..., size, size): each cell's bit
        value = jnp.sum(cells(count) << jnp.arange(planes, dtype=jnp.uint32)[:, None, None, None], axis=0)
        got = cells(reached).reshape(start.shape[0], -1) > 0
        return jnp.where(got, value.reshape(start.shape[0], -1).astype(jnp.int32), rounds + 1)

    def space_scores(self, state: EnvState, turns: list[jax.Array], targets: list[jax.Array]) -> list[jax.Array]:
        """The space bot's score (lower is better) of each of the three moves `turns` (to `targets`), per
        snake. Worst first: a cell next to the head of a snake as long or longer (a ghost head: it may move
        there too); a move after which every next move dies for certain or may meet such a head (two moves
        ahead); a move into less room than its length (`room`: a flood fill in time, never entering a cell
        next to another head). Then, when it is not hungry (health beyond reach of the nearest food, and
        the longest by 2) and some snake is 2 shorter, the way to the nearest such head; else the way to the
        nearest food it reaches before every snake as long or longer (`distances` from each head); else, with
        no such food, the most room."""
        n = self.num_snakes
        others = state.alive[None, :] & ~jnp.eye(n, dtype=bool)  # (me, them)
        rival = others & (state.length[None, :] >= state.length[:, None])
        prey = others & (state.length[None, :] <= state.length[:, None] - 2)
        near_heads = self._apart(self._cells[:, None], state.head[None, :]) == 1  # (cells, snakes)
        room = self.room(state, jnp.stack(targets), jnp.any(near_heads[None] & others[:, None, :], axis=2))
        room = room.astype(jnp.float32)
        heads = (self._cells[None, :] == state.head[:, None]) & state.alive[:, None]  # (snakes, cells)
        free = state.life == 0 if self.constrictor else state.life <= 1
        reach = self.distances(heads, free)  # (snakes, cells): from each head
        first = jnp.min(jnp.where(rival[:, :, None], reach[None], 2 * self.size + 1), axis=1)  # (me, cells)
        mine = state.food[None, :] & (reach < first)  # food it reaches before every rival
        to_mine = self.distances(mine, free)
        longest = jnp.max(jnp.where(others, state.length[None, :], 0), axis=1)
        food = jnp.min(jnp.where(state.food[None, :], reach, 2 * self.size + 1), axis=1)
        hungry = (state.health <= food + self.size) | (state.length <= longest + 1)
        length = state.length.astype(jnp.float32)
        scores = []
        for i, target in enumerate(targets):
            apart = self._apart(target[:, None], state.head[None, :])  # (me, them)
            ghost = jnp.any((apart == 1) & rival, axis=1)
            ahead = jnp.zeros(n, bool)  # some next move that neither dies nor may meet a rival's head
            stays = state.life >= 1 if self.constrictor else state.life >= 3  # still a body on the second move
            for turn in (-1, 0, 1):
                then = self._target(jnp.maximum(target, 0), (turns[i] + turn) % 4)
                meets = jnp.any((self._apart(then[:, None], state.head[None, :]) == 2) & rival, axis=1)
                ahead = ahead | ((then >= 0) & ~self._at(stays, then) & ~meets)
            cramped = room[i] < length
            to_food = jnp.sum(jnp.where(self._cells[None, :] == target[:, None], to_mine, 0), axis=1)
            aim = jnp.where(jnp.any(mine, axis=1), to_food.astype(jnp.float32), -room[i])
            hunt = jnp.min(jnp.where(prey, apart, 2 * self.size), axis=1).astype(jnp.float32)
            aim = jnp.where(~hungry & jnp.any(prey, axis=1), hunt, aim)
            # worst first, each above everything after it and all below a certain death (8 * FAR)
            score = ghost * 2.0 * FAR + ~ahead * 1.0 * FAR + cramped * (0.5 * FAR + length - room[i]) + aim
            if self.royale:  # a hazard costs health: stepped in only for food or to live
                score = score + self._at(state.hazard & ~state.food, target) * (0.25 * FAR)
            scores.append(score)
        return scores

    def lookahead_scores(self, state: EnvState, turns: list[jax.Array], targets: list[jax.Array]) -> list[jax.Array]:
        """The lookahead bot's score (lower is better) of each of the three moves `turns` (to `targets`), per
        snake: a search two turns deep over simultaneous moves, maximin against the joint replies of the
        LOOK_RIVALS nearest heads (the others are bodies that move off their tails).

        A leaf (my two moves, each rival's two replies) is a death of mine (the first turn worse than the
        second: off the board, a body, starving, a head at least as long, the cell a rival's head just left),
        else its value: the room after the two moves (`room`, capped at twice the length; less than the length
        is cramped), food eaten when hungry, a hazard entered, and a bonus for each rival that cannot avoid
        dying. A move's value is the worst over the rivals' first replies of the best second move against
        the worst second replies; the per-rival terms combine monotonically (the worst death, the sum of
        kills), so each rival's second reply is minimized on its own and the first replies jointly. Each move
        of the way from the first cell to the nearest food (when hungry, as `space_scores` says it), else to a
        head 2 shorter, costs one point of value, as one cell of room does."""
        n, size = self.num_snakes, self.size
        look = min(LOOK_RIVALS, n - 1)
        stays1 = state.life >= 2  # a body cell still there after one move
        stays2 = state.life >= 1 if self.constrictor else state.life >= 3  # and after two
        length, health = state.length, state.health
        others = state.alive[None, :] & ~jnp.eye(n, dtype=bool) & state.alive[:, None]  # (me, them)
        longest = jnp.max(jnp.where(others, length[None, :], 0), axis=1)
        food_at = lambda cells: self._bit_at(state.food, cells)
        harm_at = lambda cells: self._bit_at(state.hazard & ~state.food, cells)
        # My two moves: a the first (3), c the second (3); (n, 3) and (n, 3, 3) cells.
        t1 = jnp.stack(targets, axis=1)
        t2 = jnp.stack(
            [
                jnp.stack([self._target(jnp.maximum(t1[:, a], 0), (turns[a] + c - 1) % 4) for c in range(3)], 1)
                for a in range(3)
            ],
            axis=1,
        )
        flat1, flat2 = t1.reshape(-1), t2.reshape(-1)
        eat1 = food_at(flat1).reshape(n, 3)
        eat2 = food_at(flat2).reshape(n, 3, 3)
        dies1 = (t1 < 0) | self._bit_at(stays1, flat1).reshape(n, 3) | ((health[:, None] <= 1) & ~eat1)
        dies2 = (t2 < 0) | self._bit_at(stays2, flat2).reshape(n, 3, 3)
        dies2 = dies2 | ((health[:, None, None] <= 2) & ~eat1[:, :, None] & ~eat2)
        # A tail due to leave on the second move stays when its snake ate on the first.
        tails = jnp.where((state.life == 2) & (not self.constrictor), state.owner.astype(jnp.int32) + 1, 0)
        holder = (self._at(tails, flat2) - 1).reshape(n, 3, 3)  # the snake whose tail-to-be it is; -1 none
        dies2 = dies2 | (eat1[:, :, None] & (holder == jnp.arange(n)[:, None, None]))
        grown = length[:, None, None] + eat1[:, :, None] + eat2  # (n, 3, 3)
        # Room after my two moves, its own neck closed: 9 searches per snake.
        rooms = self.room(
            state,
            jnp.moveaxis(t2, 0, -1).reshape(9, n),
            jnp.zeros((n, self.num_cells), bool),
            on_move=2,
            behind=jnp.moveaxis(jnp.repeat(t1[:, :, None], 3, axis=2), 0, -1).reshape(9, n),
        )
        rooms = jnp.moveaxis(rooms.reshape(3, 3, n), -1, 0).astype(jnp.float32)  # (n, a, c)
        food = self.food_distance(state, flat1).reshape(n, 3).astype(jnp.float32)
        min_food = jnp.min(jnp.where(t1 >= 0, food, 2 * size), axis=1)
        hungry = (health <= min_food + size) | (length <= longest + 1)
        fed = (eat1[:, :, None] | eat2).astype(jnp.float32) * jnp.where(hungry, 4.0 * size, 1.0)[:, None, None]
        value = jnp.minimum(rooms, 2.0 * grown) + fed
        value = jnp.where(rooms < grown, value - 2.0 * FAR, value)  # cramped
        if self.royale:
            value = value - (harm_at(flat1).reshape(n, 3, 1) + harm_at(flat2).reshape(n, 3, 3)) * (0.25 * FAR)
        death = jnp.where(dies1[:, :, None], -8.0 * FAR, jnp.where(dies2, -6.0 * FAR, 0.0))  # (n, a, c)
        kill = 0.5 * FAR
        if look:
            # The nearest rivals within 4 moves (none farther can meet me in two turns); (n, R) each.
            apart = jnp.where(others, self._apart(state.head[:, None], state.head[None, :]), 4 * size)
            near, rival = jax.lax.top_k(-apart, look)
            live = -near <= 4
            take = lambda x: jnp.take(x, rival)  # (n, R)
            head_j, heading_j, length_j, health_j = take(state.head), take(state.heading), take(length), take(health)
            u1 = jnp.stack([self._target(head_j, (heading_j + b - 1) % 4) for b in range(3)], -1)  # (n, R, b)
            u2 = jnp.stack(
                [
                    jnp.stack(
                        [self._target(jnp.maximum(u1[..., b], 0), (heading_j + b - 1 + d - 1) % 4) for d in range(3)],
                        -1,
                    )
                    for b in range(3)
                ],
                axis=-2,
            )  # (n, R, b, d)
            ate = food_at(u1.reshape(-1)).reshape(u1.shape)
            gone1 = (
                (u1 < 0) | self._bit_at(stays1, u1.reshape(-1)).reshape(u1.shape) | ((health_j[..., None] <= 1) & ~ate)
            )
            gone2 = (u2 < 0) | self._bit_at(stays2, u2.reshape(-1)).reshape(u2.shape)
            gone2 = gone2 | (
                (health_j[..., None, None] <= 2) & ~ate[..., None] & ~food_at(u2.reshape(-1)).reshape(u2.shape)
            )
            # Axes (n, R, a, b, c, d): my first move, its first reply, my second, its second.
            T1 = t1[:, None, :, None, None, None]
            T2 = t2[:, None, :, None, :, None]
            U1 = u1[:, :, None, :, None, None]
            U2 = u2[:, :, None, :, None, :]
            Li = length[:, None, None, None, None, None]
            Lj = length_j[:, :, None, None, None, None]
            meet1 = (T1 == U1) & (T1 >= 0)
            lose1 = meet1 & (Lj >= Li)
            out1 = gone1[:, :, None, :, None, None] | (meet1 & (Li > Lj))
            Li1 = Li + eat1[:, None, :, None, None, None]
            Lj1 = Lj + ate[:, :, None, :, None, None]
            meet2 = (T2 == U2) & (T2 >= 0)
            its_tail = ate[:, :, None, :, None, None] & (
                holder[:, None, :, None, :, None] == rival[:, :, None, None, None, None]
            )
            lose2 = (T2 == U1) | its_tail | (meet2 & (Lj1 >= Li1))  # its neck or grown tail, a head as long
            out2 = gone2[:, :, None, :, None, :] | (U2 == T1) | (meet2 & (Li1 > Lj1))
            pair = jnp.where(
                lose1, -8.0 * FAR, jnp.where(out1, kill, jnp.where(lose2, -6.0 * FAR, jnp.where(out2, kill, 0.0)))
            )
            pair = jnp.where(live[:, :, None, None, None, None], pair, 0.0)
            pair = jnp.min(pair, axis=-1)  # each rival's worst second reply: (n, R, a, b, c)
            # Its first replies jointly: (n, a, b_1, ..., b_R, c).
            worst = jnp.zeros((n, 3) + (1,) * look + (3,))
            kills = jnp.zeros((n, 3) + (1,) * look + (3,))
            for r in range(look):
                shape = (n, 3) + tuple(3 if k == r else 1 for k in range(look)) + (3,)
                term = pair[:, r].reshape(shape)
                worst = jnp.minimum(worst, term)
                kills = kills + jnp.maximum(term, 0.0)
            expand = lambda x: x.reshape((n, 3) + (1,) * look + (3,))
            death = jnp.minimum(expand(death), worst)
            value = expand(value) + kills
        leaf = jnp.where(death < 0, death, value)
        best = jnp.max(leaf, axis=-1)  # my best second move
        move = jnp.min(best.reshape(n, 3, -1), axis=-1)  # against their worst first replies: (n, a)
        prey = others & (length[None, :] <= length[:, None] - 2)
        hunt = jnp.stack(
            [
                jnp.min(jnp.where(prey, self._apart(t1[:, a, None], state.head[None, :]), 2 * size), axis=1)
                for a in range(3)
            ],
            axis=1,
        ).astype(jnp.float32)
        aim = jnp.where(hungry[:, None] | ~jnp.any(prey, axis=1)[:, None], jnp.where(hungry[:, None], food, 0.0), hunt)
        return [aim[:, a] - move[:, a] for a in range(3)]

    def bot_directions(self, key: jax.Array, state: EnvState, script: str | None = None) -> jax.Array:
        """(snakes,) the direction each snake's bot would move in (learners' entries are computed too).

        A move dies for certain when it leaves the board or enters a cell whose count stays above 0
        (life >= 2). Each bot ranks its three forward moves: certain death last; a bot flagged in `greedy`
        then plays `script` (default the arena's): greedy ranks a cell next to the head of a snake as long
        or longer next, then the path length to food; space (`space_scores`) weighs room to live in as
        well. The others (random_safe) rank only certain death. Ties at random.
        """
        script = self.script if script is None else script
        turns = [(state.heading + t) % 4 for t in (-1, 0, 1)]  # left, straight, right
        targets = [self._target(state.head, d) for d in turns]
        stays = state.life >= 2
        dist = self.food_distance(state, jnp.concatenate(targets))
        jitter = (self.uniform(key, self.BOT_SALT, 3 * self.num_snakes).reshape(3, -1) * 0.5).astype(jnp.float32)
        rows, cols = state.head // self.size, state.head % self.size
        rivals = state.alive[None, :] & (
            state.length[None, :] >= state.length[:, None]
        )  # (me, them): as long or longer
        rivals = rivals & ~jnp.eye(self.num_snakes, dtype=bool)
        parts = script.split("+")  # a mix: the bots' seats take its kinds in turn
        scorers = {"space": self.space_scores, "lookahead": self.lookahead_scores}
        strong = {k: scorers[k](state, turns, targets) for k in dict.fromkeys(parts) if k in scorers}
        seat_kind = (jnp.arange(self.num_snakes) - self.num_agents) % len(parts)
        scores = []
        for i, target in enumerate(targets):
            dies = (target < 0) | self._at(stays, target)
            trow, tcol = target // self.size, target % self.size
            next_to = (jnp.abs(trow[:, None] - rows[None, :]) + jnp.abs(tcol[:, None] - cols[None, :])) == 1
            risky = jnp.any(next_to & rivals, axis=1)
            steps = dist[i * self.num_snakes : (i + 1) * self.num_snakes].astype(jnp.float32)
            greedy_score = risky.astype(jnp.float32) * 2 * FAR + steps
            if self.royale:  # a hazard costs health: the greedy bot steps in only for food or to live
                burns = self._at(state.hazard & ~state.food, target)
                greedy_score = greedy_score + burns.astype(jnp.float32) * FAR
            for j, kind in enumerate(parts):
                if kind in strong:
                    greedy_score = (
                        strong[kind][i] if len(parts) == 1 else jnp.where(seat_kind == j, strong[kind][i], greedy_score)
                    )
            score = jnp.where(state.greedy, greedy_score, 0.0) + jitter[i] + dies.astype(jnp.float32) * 8 * FAR
            scores.append(score)
        best = jnp.argmin(jnp.stack(scores), axis=0)
        scripted = jnp.select([best == 0, best == 1], turns[:2], turns[2])
        if self.bot_policy and self._policy is None:
            raise ValueError(
                "arena bot_policy is set but no policy is attached: train through jaxrl (which loads the run),"
                " or call env.with_bot_policy(fn)"
            )
        if self._policy is None:
            return scripted
        bots = tuple(range(self.num_agents, self.num_snakes))
        action = self._policy(self.views(state, bots), key).astype(jnp.int32)
        chosen = (state.heading[self.num_agents :] + action - 1) % 4
        frozen = jnp.concatenate([scripted[: self.num_agents], chosen])
        return jnp.where(state.policy, frozen, scripted)

    # -- dynamics ---------------------------------------------------------------------

    def step_env(self, key: jax.Array, state: EnvState, action: jax.Array, params: EnvParams):
        action = jnp.asarray(action, jnp.int32)
        if self._versus:
            if action.shape != (self.num_snakes,):
                raise ValueError(
                    f"a versus arena takes every seat's action, shape ({self.num_snakes},), got {action.shape}"
                )
            return self.advance(key, state, (state.heading + action - 1) % 4, params)
        if action.shape != (self.num_agents,) and not (self.num_agents == 1 and action.shape == ()):
            want = "a scalar action" if self.num_agents == 1 else f"actions of shape ({self.num_agents},)"
            raise ValueError(f"arena with num_agents={self.num_agents} takes {want}, got shape {action.shape}")
        learners = (state.heading[: self.num_agents] + action.reshape(self.num_agents) - 1) % 4
        direction = jnp.concatenate([learners, self.bot_directions(key, state)[self.num_agents :]])
        return self.advance(key, state, direction, params)

    def _bits(self, mask: jax.Array) -> jax.Array:
        """() uint32 with bit k set for each snake k in `mask`."""
        return jnp.sum(jnp.where(mask, jnp.uint32(1) << jnp.arange(self.num_snakes, dtype=jnp.uint32), 0))

    def _of(self, bits: jax.Array, owner: jax.Array) -> jax.Array:
        """(cells,) bool: the cell's owner is one of the snakes in `bits` (False on free cells)."""
        return (owner >= 0) & (((bits >> jnp.maximum(owner, 0).astype(jnp.uint32)) & 1) == 1)

    def advance(self, key: jax.Array, state: EnvState, direction: jax.Array, params: EnvParams):
        """One turn with every snake's absolute direction given (learners' and bots' alike), stage by stage
        as the engine runs it (the class docstring; docs/arena.md)."""
        ids = jnp.arange(self.num_snakes)
        moving = state.alive
        head = self._target(state.head, direction)
        off = moving & (head < 0)
        hit = (self._cells[None, :] == head[:, None]) & moving[:, None]  # (snakes, cells) the new heads
        # Move: every body count goes down (a count of 1 is a tail that frees now); health -1.
        life = jnp.where(state.life > 1, state.life - 1, 0).astype(jnp.int16)
        owner = jnp.where(life > 0, state.owner, jnp.int8(-1))
        health = state.health - 1
        # Hazard damage, unless food lies there; at 0 the snake is out at once (it neither eats nor collides).
        burns = self._bit_at(state.hazard & ~state.food, head)
        health = jnp.where(burns, jnp.clip(health - params.hazard_damage, 0, params.max_health), health)
        burned = moving & burns & (health <= 0)
        feeding = moving & ~burned
        # Feed: each food under a head is eaten; every snake on it grows (its cells stay one move longer).
        eats = jnp.any(hit & state.food[None, :], axis=1) & feeding
        food = state.food & ~jnp.any(hit & eats[:, None], axis=0)
        life = life + self._of(self._bits(eats), owner).astype(jnp.int16)
        length = state.length + eats
        health = jnp.where(eats, params.max_health, health)
        # Eliminations, first pass: out of health, then off the board; their bodies leave before the second.
        starved = feeding & (health <= 0)
        walled = feeding & ~starved & off
        first = burned | starved | walled
        left = moving & ~first
        owner = jnp.where(self._of(self._bits(first), owner), jnp.int8(-1), owner)
        life = jnp.where(owner >= 0, life, jnp.int16(0))
        owner, life = fusion_boundary((owner, life))  # read per snake below: computed once, not per reader
        # Second pass, against that board, all decided before any is applied: own body, another's, head to head.
        at_head = self._at(owner.astype(jnp.int32) + 1, head) - 1  # who holds the cell each head entered
        self_hit = left & (at_head == ids)
        body_hit = left & ~self_hit & (at_head >= 0)
        meets = (head[:, None] == head[None, :]) & left[:, None] & left[None, :] & (head[:, None] >= 0)
        meets = meets & ~jnp.eye(self.num_snakes, dtype=bool)  # (me, them)
        beaten = meets & (length[None, :] >= length[:, None])
        head_hit = left & ~self_hit & ~body_hit & jnp.any(beaten, axis=1)
        # The engine credits the longest such head (the first in index order among equals).
        rank = jnp.where(beaten, length[None, :] * 64 - ids[None, :], -1)
        by_head = jnp.argmax(rank, axis=1)
        dies = first | self_hit | body_hit | head_hit
        cause = jnp.select(
            [burned, starved, walled, self_hit, body_hit, head_hit],
            [HAZARD, STARVED, WALL_HIT, SELF_HIT, SNAKE_HIT, HEAD_HIT],
            0,
        ).astype(jnp.int8)
        killer = jnp.select([self_hit, body_hit, head_hit], [ids, at_head, by_head], -1).astype(jnp.int8)
        credited = dies & (killer.astype(jnp.int32) != ids) & (killer >= 0)
        kills = state.kills + jnp.sum(credited[:, None] & (killer[:, None] == ids[None, :]), axis=0)
        alive = moving & ~dies
        # The dead leave the board; survivors' heads take their cells.
        gone = self._of(self._bits(dies), owner)
        owner, life = jnp.where(gone, jnp.int8(-1), owner), jnp.where(gone, jnp.int16(0), life)
        heads = jnp.zeros(self.num_cells, bool)
        for k in range(self.num_snakes):
            here = hit[k] & alive[k]
            owner = jnp.where(here, jnp.int8(k), owner)
            life = jnp.where(here, length[k].astype(jnp.int16), life)
            heads = heads | here
        owner, life, heads = fusion_boundary((owner, life, heads))
        if self.constrictor:  # no food stays; every snake is fed and grows unless its tail is stacked already
            food = jnp.zeros_like(food)
            owner, life, length, health = self._constrict(owner, life, length, health, alive, params)
        time = state.time + 1
        hazard = self._royale_hazards(state.sides, time, params) if self.royale else state.hazard
        # Food, on cells free of food and live bodies and not beside a live head.
        free = (owner < 0) & ~food & ~self._near(heads)
        chance = (100 - jnp.minimum((self.uniform(key, self.STEP_SALT, 1)[0] * 100).astype(jnp.int32), 99)) < (
            params.food_chance
        )
        shortfall = params.min_food - jnp.sum(food)
        count = jnp.where(shortfall > 0, shortfall, (chance & (params.food_chance > 0)).astype(jnp.int32))
        food = self._spawn(food, free, count, self._random_cells(key, self.FOOD_SALT))
        remaining = jnp.sum(alive)
        placement = jnp.where(dies, 1 + remaining, state.placement)
        in_game = jnp.sum(state.playing)
        over = (remaining <= self._last(in_game)) | ~jnp.any(alive[: self.num_agents])
        placement = jnp.where(over & alive, 1, placement)
        new_state = state.replace(
            owner=owner,
            life=life,
            food=food,
            hazard=hazard,
            head=jnp.where(alive, head, state.head),
            heading=jnp.where(moving, direction, state.heading),
            length=length,
            health=health,
            alive=alive,
            placement=placement,
            kills=kills,
            cause=jnp.where(dies, cause, state.cause),
            killer=jnp.where(dies, killer, state.killer),
            time=time,
        )
        won = over & alive & (in_game > 1) & (remaining == 1)
        return self._outcome(new_state, state, params, eats, dies, won, over)

    def _last(self, in_game: jax.Array) -> jax.Array:
        """Snakes left at which the game is over: 1, or 0 in solo and in a game of one."""
        return jnp.where((in_game > 1) & (not self.solo), 1, 0)

    def _constrict(self, owner, life, length, health, alive, params):
        """Constrictor's after-turn stage: every live snake's health back to full, and one segment longer unless
        its tail is stacked already (no cell of its own counts 1)."""
        tails = jnp.stack([jnp.any((owner == k) & (life == 1)) for k in range(self.num_snakes)])
        grows = alive & tails
        life = life + self._of(self._bits(grows), owner).astype(jnp.int16)
        return owner, life, length + grows, jnp.where(alive, params.max_health, health)

    def _royale_hazards(self, sides: jax.Array, time: jax.Array, params: EnvParams) -> jax.Array:
        """(cells,) royale's hazards at turn `time`: every cell outside the safe area, which has moved in by one
        from sides[i] for each of the time // shrink_every shrinks so far."""
        shrinks = jnp.where(params.shrink_every > 0, time // jnp.maximum(params.shrink_every, 1), 0)
        done = jnp.arange(sides.shape[0]) < shrinks
        moved = [jnp.sum(done & (sides == s)) for s in range(4)]  # left, right, bottom, top
        x, y = self._cells % self.size, self.size - 1 - self._cells // self.size
        safe = (x >= moved[0]) & (x <= self.size - 1 - moved[1]) & (y >= moved[2]) & (y <= self.size - 1 - moved[3])
        return ~safe & (shrinks > 0)

    def _outcome(self, new: EnvState, old: EnvState, params: EnvParams, eats, dies, won, over):
        """(obs, state, reward, terminated, info) of a step from its per-snake events."""
        n = self.num_agents
        was = old.alive[:n]
        reward = jnp.where(eats[:n], params.reward_food, params.reward_step)
        reward = jnp.where(won[:n], params.reward_win, reward)
        others = jnp.sum(dies) - dies[:n]
        reward = reward + params.reward_outlive * others.astype(jnp.float32)
        reward = jnp.where(dies[:n], params.reward_death, reward)
        reward = jnp.where(was, reward, 0.0).astype(jnp.float32)
        winner = jnp.where(jnp.any(won), jnp.argmax(won), -1)
        info = {
            "won": jnp.any(won[:n]),
            "score": jnp.mean(new.length[:n].astype(jnp.float32)),
            "placement": jnp.mean(jnp.where(new.placement[:n] > 0, new.placement[:n], 1).astype(jnp.float32)),
            "kills": jnp.sum(new.kills[:n]),
            "cause": new.cause[0].astype(jnp.int32),  # the first learner's: an index into CAUSES (0 while alive)
            "snake_alive": new.alive,
            "snake_length": new.length,
            "snake_placement": new.placement,
            "snake_kills": new.kills,
            "snake_cause": new.cause.astype(jnp.int32),
            "snake_killer": new.killer.astype(jnp.int32),
            "snake_ate": eats,
            "winner": winner.astype(jnp.int32),
        }
        reward = reward[0] if n == 1 else reward
        return self.get_obs(new), new, reward, over, info

    def _start_tables(self) -> None:
        """Static tables of the engine's start places (its maps' snake placement), as cell indices."""
        n = self.size
        mn, md, mx = 1, (n - 1) // 2, n - 2
        corners = [self.cell(x, y) for x, y in ((mn, mn), (mn, mx), (mx, mn), (mx, mx))]
        cardinals = [self.cell(x, y) for x, y in ((mn, md), (md, mn), (md, mx), (mx, md))]
        perms = np.array(PERMUTATIONS)
        self._corner_orders = np.array(corners)[perms]  # (24, 4): each shuffle of the corners
        self._cardinal_orders = np.array(cardinals)[perms]
        h, v = (n // 2) // 3, (n // 2) // 3
        first = [(h, v), (n // 2 - h, v), (h, n // 2 - v), (n // 2 - h, n // 2 - v)]
        quads = [
            [(x, y) for x, y in first],
            [(n - 1 - x, y) for x, y in first],
            [(x, n - 1 - y) for x, y in first],
            [(n - 1 - x, n - 1 - y) for x, y in first],
        ]
        self._quad_orders = np.stack([np.array([self.cell(x, y) for x, y in q])[perms] for q in quads])  # (4, 24, 4)
        centre = (n - 1) // 2
        even = [self.cell(x, y) for y in range(n) for x in range(n) if (x + y) % 2 == 0 and (x, y) != (centre, centre)]
        self._even = np.array(even)
        self._units = tuple(a for a in range(1, len(even) + 1) if np.gcd(a, len(even)) == 1)

    def _placement(self, key: jax.Array, playing: jax.Array) -> jax.Array:
        """(snakes,) start cells by the engine's placement for this game's number of snakes."""
        n, slots = self.size, self.num_snakes
        ids = jnp.arange(slots)
        count = jnp.sum(playing)
        u = self.uniform(key, self.RESET_SALT ^ 0x51, 8)
        if n >= 7 and slots <= 8:  # every game fits the fixed places: nothing else to draw
            return self._fixed_places(u)[:slots]
        # Random: distinct cells with x + y even, not the centre (an affine permutation of them).
        points = len(self._even)
        unit = pick(self._units, jnp.minimum((u[0] * len(self._units)).astype(jnp.int32), len(self._units) - 1))
        offset = jnp.minimum((u[1] * points).astype(jnp.int32), points - 1)
        cells = self._even_cell((unit * ids + offset) % points)
        if n >= 11 and slots > 8:  # 9-16 snakes: the quadrants in turn from a random one, a random place in each
            quad0 = jnp.minimum((u[2] * 4).astype(jnp.int32), 3)
            orders = [[_choose(self._quad_orders[q][:, j], _shuffle(u[3 + q])) for j in range(4)] for q in range(4)]
            spread = []
            for i in range(min(slots, 16)):
                q = (quad0 + i) % 4
                spread.append(
                    jnp.select([q == 0, q == 1, q == 2], [orders[j][i // 4] for j in range(3)], orders[3][i // 4])
                )
            spread = jnp.stack(spread + [cells[len(spread) :][j] for j in range(slots - len(spread))])
            cells = jnp.where((count > 8) & (count <= 16), spread, cells)
        if n >= 7:  # a game of up to 8 of the slots takes the fixed places
            fixed = jnp.concatenate([self._fixed_places(u), cells[8:]])
            cells = jnp.where(count <= 8, fixed, cells)
        return cells.astype(jnp.int32)

    def _fixed_places(self, u: jax.Array) -> jax.Array:
        """(8,) the engine's fixed places: corners and edge midpoints, each shuffled; a coin says which group
        comes first."""
        corner = [_choose(self._corner_orders[:, j], _shuffle(u[3])) for j in range(4)]
        cardinal = [_choose(self._cardinal_orders[:, j], _shuffle(u[4])) for j in range(4)]
        heads = u[5] < 0.5
        first = [jnp.where(heads, a, b) for a, b in zip(corner, cardinal)]
        return jnp.stack(first + [jnp.where(heads, b, a) for a, b in zip(corner, cardinal)]).astype(jnp.int32)

    def _even_cell(self, index: jax.Array) -> jax.Array:
        """The cell of the index-th cell with x + y even, the centre left out, counting by y then x (arithmetic)."""
        n = self.size
        centre = (n - 1) // 2
        skip = int(
            np.flatnonzero([(x + y) % 2 == 0 for y in range(n) for x in range(n)]).tolist().index(centre * n + centre)
        )
        i = jnp.where(index >= skip, index + 1, index)  # the index among all even cells
        if n % 2:  # rows of (n + 1) / 2 and (n - 1) / 2 even cells by turns
            pair, rest = i // n, i % n
            low = rest < (n + 1) // 2
            y = 2 * pair + jnp.where(low, 0, 1)
            x = jnp.where(low, 2 * rest, 2 * (rest - (n + 1) // 2) + 1)
        else:
            y = i // (n // 2)
            x = 2 * (i % (n // 2)) + y % 2
        return (n - 1 - y) * n + x

    def _start_food(self, key: jax.Array, head: jax.Array, playing: jax.Array) -> jax.Array:
        """(cells,) the engine's start food: on a board of 7 or more, one diagonal from each snake (with 4
        snakes or fewer, or 121 cells or more), away from the centre on some axis, never a corner, the centre
        or food already placed, and then the centre; on smaller boards one per snake on random free cells."""
        n = self.size
        centre = (n - 1) // 2
        count = jnp.sum(playing)
        if n < 7:
            heads = jnp.any((self._cells[None, :] == head[:, None]) & playing[:, None], axis=0)
            free = ~heads & ~self._near(heads)
            return self._spawn(jnp.zeros(self.num_cells, bool), free, count, self._random_cells(key, self.FOOD_SALT))
        u = self.uniform(key, self.FOOD_SALT, self.num_snakes)
        x, y = (head % n)[:, None], (n - 1 - head // n)[:, None]  # (snakes, 1)
        fx, fy = x + jnp.array([-1, -1, 1, 1]), y + jnp.array([-1, 1, -1, 1])  # (snakes, 4) the diagonals
        away = (
            ((fx < x) & (x < centre))
            | ((centre < x) & (x < fx))
            | ((fy < y) & (y < centre))
            | ((centre < y) & (y < fy))
        )
        corner = ((fx == 0) | (fx == n - 1)) & ((fy == 0) | (fy == n - 1))
        inside = (fx >= 0) & (fx < n) & (fy >= 0) & (fy < n)
        ok = away & ~corner & ~((fx == centre) & (fy == centre)) & inside
        options = (n - 1 - fy) * n + fx
        wanted = playing & ((count <= 4) | (n * n >= 121))

        def place(k, placed):
            # Snake k's options, less what an earlier snake took; one of them at random. k is the same in
            # every game of a batch: the slices below stay slices under vmap.
            cells = jax.lax.dynamic_index_in_dim(options, k, keepdims=False)  # (4,)
            free = jax.lax.dynamic_index_in_dim(ok, k, keepdims=False) & ~jnp.any(cells[:, None] == placed[None, :], 1)
            total = jnp.sum(free)
            draw = jax.lax.dynamic_index_in_dim(u, k, keepdims=False)
            at = jnp.minimum((draw * total).astype(jnp.int32), jnp.maximum(total - 1, 0))
            before = jnp.sum(
                free[None, :] & (jnp.arange(4)[None, :] < jnp.arange(4)[:, None]), axis=1
            )  # (4,) free before
            chosen = jnp.sum(jnp.where(free & (before == at), cells, 0))
            go = jax.lax.dynamic_index_in_dim(wanted, k, keepdims=False) & (total > 0)
            return jax.lax.dynamic_update_index_in_dim(placed, jnp.where(go, chosen, -1), k, 0)

        placed = jax.lax.fori_loop(0, self.num_snakes, place, jnp.full(self.num_snakes, -1, jnp.int32))
        food = jnp.any(self._cells[None, :] == placed[:, None], axis=0)
        middle = (self._cells == centre * n + centre) & ~jnp.any(self._cells[None, :] == head[:, None], axis=0)
        return food | middle

    def reset_env(self, key: jax.Array, params: EnvParams):
        u = self.uniform(key, self.RESET_SALT, 4 + self.num_snakes)
        ids = jnp.arange(self.num_snakes)
        most = jnp.clip(params.num_bots, 0, self.num_snakes - self.num_agents)
        least = jnp.where(params.fewest_bots < 0, most, jnp.clip(params.fewest_bots, 0, most))
        drawn = (self.uniform(key, self.RESET_SALT ^ 0xB0, 1)[0] * (most - least + 1)).astype(jnp.int32)
        playing = ids < self.num_agents + jnp.minimum(least + drawn, most)
        head = self._placement(key, playing)
        heading = jnp.minimum((u[4:] * 4).astype(jnp.int32), 3)  # the view's turn until the first move
        hit = (self._cells[None, :] == head[:, None]) & playing[:, None]
        owner = jnp.max(jnp.where(hit, ids[:, None], -1), axis=0).astype(jnp.int8)
        start = jnp.maximum(params.start_length, 1)
        life = jnp.where(owner >= 0, start, 0).astype(jnp.int16)
        length = jnp.full(self.num_snakes, start, jnp.int32)
        health = jnp.full(self.num_snakes, params.max_health, jnp.int32)
        food = self._start_food(key, head, playing)
        if self.constrictor:
            food = jnp.zeros_like(food)
            owner, life, length, health = self._constrict(owner, life, length, health, playing, params)
        if self.royale:  # the order of the shrinks' sides, drawn once per game
            words = hash32(
                mix(key, self.SIDE_SALT) ^ jnp.arange(2 * self.size, dtype=jnp.uint32) * jnp.uint32(0x9E3779B9)
            )
            sides = (words % 4).astype(jnp.int8)
        else:
            sides = jnp.zeros(2 * self.size, jnp.int8)
        state = EnvState(
            owner=owner,
            life=life,
            food=food,
            hazard=jnp.zeros(self.num_cells, bool),
            head=head,
            heading=heading,
            length=length,
            health=health,
            alive=playing,
            playing=playing,
            greedy=jnp.broadcast_to(u[2] < params.greedy_share, (self.num_snakes,)) & (ids >= self.num_agents),
            policy=jnp.broadcast_to(u[3] < params.policy_share, (self.num_snakes,)) & (ids >= self.num_agents),
            placement=jnp.zeros(self.num_snakes, jnp.int32),
            kills=jnp.zeros(self.num_snakes, jnp.int32),
            cause=jnp.zeros(self.num_snakes, jnp.int8),
            killer=jnp.full(self.num_snakes, -1, jnp.int8),
            sides=sides,
            time=jnp.int32(0),
        )
        return self.get_obs(state), state

    def is_terminal(self, state: EnvState, params: EnvParams) -> jax.Array:
        left = jnp.sum(state.alive)
        return (left <= self._last(jnp.sum(state.playing))) | ~jnp.any(state.alive[: self.num_agents])

    def is_truncated(self, state: EnvState, params: EnvParams) -> jax.Array:
        return state.time >= params.max_steps_in_episode

    # -- observation ----------------------------------------------------------------------

    def get_obs(self, state: EnvState, params: EnvParams | None = None, key: jax.Array | None = None) -> jax.Array:
        views = self.views(state, tuple(range(self.num_agents)))
        return views[0] if self.num_agents == 1 else views

    def views(self, state: EnvState, snakes: tuple[int, ...]) -> jax.Array:
        """(len(snakes), view, view, 8 or 9) uint8: what each of those snakes sees (a learner's observation; a
        policy bot's input). One int32 word per cell (owner + 1, head, food, the head's length), cropped
        and turned once per snake, then a compare per channel."""
        heads = jnp.any(
            (self._cells[None, :] == state.head[:, None]) & state.alive[:, None], axis=0
        )  # live heads (a dead snake's stale head is no cell)
        head_length = self._at_owner(state.length, state.owner)
        word = (
            (state.owner.astype(jnp.int32) + 1)
            | (heads.astype(jnp.int32) << 6)
            | (state.food.astype(jnp.int32) << 7)
            | (jnp.minimum(head_length, 1023) << 8)
            | (state.hazard.astype(jnp.int32) << 19)
        )
        if self.tails:  # a tail that is not stacked: its cell is empty once every snake has moved
            word = word | (((state.life == 1) & (state.owner >= 0)).astype(jnp.int32) << 20)
        word = word.reshape(self.size, self.size)
        wall = jnp.int32(1 << 18)
        if self.wrapped:  # no walls: the view goes on across each edge
            padded = jnp.pad(word, self.half, mode="wrap").reshape(-1)
        else:
            padded = jnp.pad(word, self.half, constant_values=wall).reshape(-1)
        views = []
        for k in snakes:
            # One gather per snake: its crop already turned, from a static table of offsets per heading.
            r, c = state.head[k] // self.size, state.head[k] % self.size
            offsets = jnp.select([state.heading[k] == t for t in range(3)], self._turned[:3], self._turned[3])
            crop = padded[r * self._padded_side + c + offsets]
            owner = crop & 63
            is_head = (crop >> 6) & 1 == 1
            mine = owner == k + 1
            other = (owner > 0) & ~mine
            planes = [
                mine,
                other & ~is_head,
                other & is_head,
                other & is_head & ((crop >> 8) & 1023 >= state.length[k]),
                (crop >> 7) & 1 == 1,
                (crop & wall) != 0,
                self._reading_order < state.health[k],  # a health bar: one cell per point
                (crop >> 19) & 1 == 1,
            ]
            if self.tails:
                planes.append((crop >> 20) & 1 == 1)
            view = jnp.stack(planes, axis=-1) & state.alive[k]
            views.append(view.astype(jnp.uint8))
        return jnp.stack(views)

    def _at_owner(self, values: jax.Array, owner: jax.Array) -> jax.Array:
        """(cells,) values[owner] (0 on free cells), as selects over the snakes."""
        out = jnp.zeros(owner.shape, values.dtype)
        for k in range(self.num_snakes):
            out = jnp.where(owner == k, values[k], out)
        return out

    # -- tests and pictures ------------------------------------------------------------

    def make_state(
        self,
        snakes: list[list[tuple[int, int]]],
        food: list[tuple[int, int]] = (),
        health: list[int] | None = None,
        heading: list[int] | None = None,
        bots: str = "greedy",
        time: int = 0,
        hazards: list[tuple[int, int]] = (),
        playing: list[bool] | None = None,
        sides: list[int] | None = None,
    ) -> EnvState:
        """A state from each snake's cells as (row, col), head first (a cell may repeat: a stacked tail); an
        empty list is a snake not on the board: out of the game, or out already where `playing` (default:
        the snakes with cells) says it played. `sides` is royale's order of shrinks. For tests and replays."""
        if len(snakes) != self.num_snakes:
            raise ValueError(f"give {self.num_snakes} snakes (an empty list for one out of the game)")
        owner = np.full(self.num_cells, -1, np.int8)
        life = np.zeros(self.num_cells, np.int16)
        for k, cells in enumerate(snakes):
            for i, (r, c) in enumerate(cells):
                cell = r * self.size + c
                if owner[cell] not in (-1, k):
                    raise ValueError(f"cell {(r, c)} belongs to snakes {owner[cell]} and {k}")
                owner[cell], life[cell] = k, max(life[cell], len(cells) - i)
        board = np.zeros(self.num_cells, bool)
        for r, c in food:
            board[r * self.size + c] = True
        danger = np.zeros(self.num_cells, bool)
        for r, c in hazards:
            danger[r * self.size + c] = True
        live = np.array([len(s) > 0 for s in snakes])
        playing = live if playing is None else np.asarray(playing, bool) | live
        heads = [s[0][0] * self.size + s[0][1] if s else 0 for s in snakes]
        ids = np.arange(self.num_snakes)
        return EnvState(
            owner=jnp.array(owner),
            life=jnp.array(life),
            food=jnp.array(board),
            hazard=jnp.array(danger),
            head=jnp.array(heads, jnp.int32),
            heading=jnp.array(heading if heading is not None else [0] * self.num_snakes, jnp.int32),
            length=jnp.array([len(s) for s in snakes], jnp.int32),
            health=jnp.array(health if health is not None else [100] * self.num_snakes, jnp.int32),
            alive=jnp.array(live),
            playing=jnp.array(playing),
            greedy=jnp.array((ids >= self.num_agents) & (bots == "greedy")),
            policy=jnp.array((ids >= self.num_agents) & (bots == "policy")),
            placement=jnp.zeros(self.num_snakes, jnp.int32),
            kills=jnp.zeros(self.num_snakes, jnp.int32),
            cause=jnp.zeros(self.num_snakes, jnp.int8),
            killer=jnp.full(self.num_snakes, -1, jnp.int8),
            sides=jnp.array(sides if sides is not None else [0] * (2 * self.size), jnp.int8),
            time=jnp.int32(time),
        )

    def render_rgb(self, state: EnvState) -> jax.Array:
        """(size * 3, size * 3, 3) uint8 picture, 3 pixels a cell: each snake in its own colour (the first
        learner green, every learner with a white frame around its head), bright at the head and darker
        toward the tail, each segment joined to the next one headward so the order can be followed;
        red dots for food, a dark board, hazards dark purple."""
        n = self.size
        owner, life = state.owner.reshape(n, n), state.life.reshape(n, n)
        colours = jnp.array(SNAKE_COLOURS[: self.num_snakes], jnp.float32)  # (snakes, 3)
        length = jnp.maximum(self._at_owner(state.length, state.owner).reshape(n, n), 1)
        shade = 0.35 + 0.65 * life.astype(jnp.float32) / length.astype(jnp.float32)  # 1 at the head
        mine = jnp.sum(jnp.where((owner[..., None] == jnp.arange(self.num_snakes)), 1.0, 0.0)[..., None] * colours, 2)
        body = (mine * shade[..., None]).astype(jnp.uint8)
        floor = jnp.where(state.hazard.reshape(n, n)[..., None], jnp.array([70, 40, 90], jnp.uint8), jnp.uint8(24))
        cells = jnp.where((owner >= 0)[..., None], body, floor)  # (n, n, 3): hazards a dark purple
        big = jnp.repeat(jnp.repeat(cells, 3, 0), 3, 1)
        rows, cols = jnp.arange(3 * n) // 3, jnp.arange(3 * n) // 3
        sub_r, sub_c = jnp.arange(3 * n) % 3, jnp.arange(3 * n) % 3
        # A segment fills the middle of its cell and the bar toward the next one headward (its count is one higher).
        up = jnp.concatenate([jnp.full((1, n), -1, jnp.int16), life[:-1]])
        same_up = (owner >= 0) & (jnp.concatenate([jnp.full((1, n), -2, jnp.int8), owner[:-1]]) == owner)
        joins_up = same_up & ((up == life + 1) | (life == up + 1))
        left = jnp.concatenate([jnp.full((n, 1), -1, jnp.int16), life[:, :-1]], 1)
        same_left = (owner >= 0) & (jnp.concatenate([jnp.full((n, 1), -2, jnp.int8), owner[:, :-1]], 1) == owner)
        joins_left = same_left & ((left == life + 1) | (life == left + 1))
        edge_r, edge_c = sub_r[:, None] == 0, sub_c[None, :] == 0
        corner = edge_r & edge_c
        gap = (edge_r & ~joins_up[rows][:, cols]) | (edge_c & ~joins_left[rows][:, cols]) | corner
        big = jnp.where(gap[..., None] & (owner[rows][:, cols] >= 0)[..., None], jnp.uint8(24), big)
        # Food: a red dot in the middle of its cell.
        middle = (sub_r[:, None] == 1) & (sub_c[None, :] == 1)
        food = state.food.reshape(n, n)[rows][:, cols] & middle
        big = jnp.where(food[..., None], jnp.array([235, 50, 50], jnp.uint8), big)
        # Learners' heads: a white frame.
        heads = (self._cells[None, :] == state.head[: self.num_agents, None]) & state.alive[: self.num_agents, None]
        learner_head = jnp.any(heads, axis=0).reshape(n, n)[rows][:, cols] & ~middle
        return jnp.where(learner_head[..., None], jnp.uint8(255), big)

    def caption(self, state: EnvState) -> str:
        """A line for a replay frame: each snake's length, `x` once dead (A the first learner)."""
        length, alive, playing = (np.asarray(x) for x in (state.length, state.alive, state.playing))
        parts = [f"{LETTERS[k].upper()}{length[k] if alive[k] else 'x'}" for k in range(self.num_snakes) if playing[k]]
        return " ".join(parts)

    def render_text(self, state: EnvState) -> str:
        """The board as text: a snake's head is its letter in upper case (A the first learner), its
        body the same letter in lower case; `*` food, `~` a hazard, `.` empty, inside a frame."""
        owner = np.asarray(state.owner).reshape(self.size, self.size)
        food = np.asarray(state.food).reshape(self.size, self.size)
        heads = {int(h) for h, a in zip(np.asarray(state.head), np.asarray(state.alive)) if a}
        chars = np.full((self.size, self.size), ".", dtype="<U1")
        chars[np.asarray(state.hazard).reshape(self.size, self.size)] = "~"
        chars[food] = "*"
        for r in range(self.size):
            for c in range(self.size):
                k = owner[r, c]
                if k >= 0:
                    chars[r, c] = LETTERS[k].upper() if r * self.size + c in heads else LETTERS[k]
        edge = "+" + "-" * self.size + "+"
        return "\n".join([edge, *("|" + "".join(row) + "|" for row in chars), edge])


__all__ = ["CHANNELS", "Arena", "EnvParams", "EnvState"]
