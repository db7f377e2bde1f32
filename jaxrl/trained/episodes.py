"""Episode files: one game kept as its seed and its actions (json), replayed exactly by stepping the env again.

`python -m jaxrl.eval` writes the best episode's file beside its replay (`replay.json`); `python -m jaxrl.play`
writes one for a game when the page asks (a person's game, or a game watched). `python -m jaxrl.eval replay=FILE`
re-simulates a file and draws it (`render=gif | html | terminal`): no policy is needed, the recorded actions
are every acting seat's.

A file holds:
- `kind` ("jaxrl episode") and `format` (FORMAT); `jaxrl`, the version that wrote it;
- `env`, `env_version`, `env_settings` (what `jaxrl.envs.make(env, **env_settings)` builds), `env_params` and
  `env_param_dtypes` (every field as played, after eval's `eval_params` and opponents);
- `table`: null, or {"seats": N}: the game was played at the env's table of N seats (`env.table(N)`: every seat's
  action given, as in play's person games and head-to-head games: the bots' moves are recorded too). Format 1
  held the arena's {"size", "num_snakes", "view", "ruleset"} there, with no env settings; `read` migrates it;
- `key`: {"seed", "seeds", "seed_index", "episodes", "episode"}: the evaluation's key chain (`KeyChain`);
- `actions`: per step the action (a number, or one per seat);
- `seats`: who held each seat (informative); `result`: {"return", "length", "score", "won", ...}.

The env's rules are integer arithmetic on integer state, so a file replays to the same frames on any CPU.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.envs.base import hook
from jaxrl.errors import ConfigError

KIND = "jaxrl episode"
FORMAT = 2


class EpisodeError(ConfigError):
    """An episode file that cannot be read or replayed here: one line."""


@dataclasses.dataclass(frozen=True)
class KeyChain:
    """The keys of episode `episode` of an evaluation's batch of `episodes` (seed `seed_index` of `seeds`),
    split exactly as `jaxrl.trained.evaluation.play` splits them: a game on the play page is episode 0 of 1."""

    seed: int
    seeds: int = 1
    seed_index: int = 0
    episodes: int = 1
    episode: int = 0

    def start(self) -> tuple[jax.Array, jax.Array]:
        """(the episode's reset key, the chain's key for the first step)."""
        key = jax.random.split(jax.random.key(self.seed), self.seeds)[self.seed_index]
        reset_key, key = jax.random.split(key)
        return jax.random.split(reset_key, self.episodes)[self.episode], key

    def advance(self, key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        """(next chain key, the acting key of the whole batch, this episode's env step key)."""
        key, act_key, step_key = jax.random.split(key, 3)
        return key, act_key, jax.random.split(step_key, self.episodes)[self.episode]


def step_held(env: Any, key: jax.Array, state: Any, action: Any, params: Any) -> tuple[Any, Any, Any, Any, dict]:
    """(obs, state, reward, done, info) of one step without the auto-reset, so the last state can be drawn: the
    same state `env.step` steps to with the same key (jaxrl's `Env` hands its key to `step_env` unchanged)."""
    obs, stepped, reward, terminated, info = env.step_env(key, state, action, params)
    done = terminated | env.is_truncated(stepped, params)
    return obs, stepped, reward, done, info


# -- params as plain values --------------------------------------------------------------------


def plain_params(params: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """({field: value}, {field: dtype}) of one world's env params (scalar fields)."""
    values, dtypes = {}, {}
    for field in dataclasses.fields(params):
        array = np.asarray(getattr(params, field.name))
        if array.ndim:
            raise ValueError(f"env param {field.name} has shape {array.shape}; an episode file keeps scalars")
        values[field.name] = array.item() if array.dtype.kind in "biu" else float(str(array))
        dtypes[field.name] = str(array.dtype)
    return values, dtypes


def params_from(default: Any, values: dict[str, Any], dtypes: dict[str, str]) -> Any:
    """The env params `plain_params` wrote, over the env's defaults (a field it does not know is refused)."""
    known = {f.name for f in dataclasses.fields(default)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise EpisodeError(f"the episode's env params {', '.join(unknown)} are not this env's ({', '.join(known)})")
    return default.replace(**{k: jnp.asarray(v, dtypes.get(k)) for k, v in values.items()})


# -- the file ------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Episode:
    """One game as a file holds it (see the module's docstring)."""

    env: str
    env_version: int
    env_settings: dict[str, Any]
    env_params: dict[str, Any]
    env_param_dtypes: dict[str, str]
    key: KeyChain
    actions: list[Any]
    table: dict[str, int] | None = None  # {"seats": N}
    seats: list[str] = dataclasses.field(default_factory=list)
    result: dict[str, Any] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        from jaxrl import __version__

        body = dataclasses.asdict(self)
        format_ = FORMAT if self.table else 1  # only a table game changed: any other is read by jaxrl 0.2.0 too
        return {"kind": KIND, "format": format_, "jaxrl": __version__, **body}

    def write(self, path: Path) -> Path:
        """The file at `path`, written whole or not at all."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        tmp.replace(path)
        return path


def read(path: str | Path) -> Episode:
    """The episode in `path`; EpisodeError (one line) when it is missing, damaged, newer, or of another env version."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise EpisodeError(f"replay={path} is not a file: give an episode file (replay.json, or a game saved by play)")
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict) or data.get("kind") != KIND:
            raise ValueError(f"not a {KIND} file")
        if int(data["format"]) > FORMAT:
            raise EpisodeError(
                f"replay={path} is episode format {data['format']}, newer than this jaxrl's {FORMAT}"
                f" (written by jaxrl {data.get('jaxrl')}): upgrade jaxrl"
            )
        data = _from_format_1(data) if int(data["format"]) == 1 else data
        fields = {f.name for f in dataclasses.fields(Episode)}
        episode = Episode(**{k: v for k, v in data.items() if k in fields})
        episode = dataclasses.replace(episode, key=KeyChain(**episode.key))
        if not isinstance(episode.actions, list) or not episode.actions:
            raise ValueError("it holds no actions")
    except EpisodeError:
        raise
    except (ValueError, TypeError, KeyError, OSError) as e:
        raise EpisodeError(f"replay={path} is damaged ({type(e).__name__}: {str(e)[:100]})") from None
    return episode


def _from_format_1(data: dict[str, Any]) -> dict[str, Any]:
    """A format-1 file as format 2: its table's board and view become the env's settings, its snakes the seats."""
    table = data.get("table")
    if not table:
        return data
    settings = {k: table[k] for k in ("size", "view", "ruleset") if k in table}
    seats = int(table["num_snakes"])
    return {**data, "env_settings": {**settings, "num_snakes": seats, "num_agents": seats}, "table": {"seats": seats}}


# -- replaying -------------------------------------------------------------------------------------


def env_of(episode: Episode) -> tuple[Any, Any]:
    """(env, env_params) the episode was played in; EpisodeError when this jaxrl's env differs."""
    from jaxrl import envs
    from jaxrl.trained.frozen import with_frozen_bots

    try:
        spec = envs.spec(episode.env)
        if spec.version != episode.env_version:
            raise EpisodeError(
                f"the episode was played on {episode.env}-v{episode.env_version}; this jaxrl has {spec.label}:"
                " replay it with the jaxrl version that wrote it"
            )
        env, default = spec.make(**episode.env_settings)
        if episode.table is not None:
            env = hook(env, "table")(int(episode.table["seats"]))
            default = env.default_params
        else:
            env = with_frozen_bots(env)
    except EpisodeError:
        raise
    except (ValueError, TypeError, KeyError) as e:
        raise EpisodeError(f"the episode's env cannot be built here: {str(e)[:160]}") from None
    return env, params_from(default, episode.env_params, episode.env_param_dtypes)


def simulate(env: Any, env_params: Any, chain: KeyChain, actions: Any) -> dict[str, Any]:
    """The episode stepped again with `actions` (steps, ...): {"frames" (steps + 1, H, W, 3) (the state before
    each action, then the last one), "return" and "score" so far after each step, "done" (steps,)}."""
    actions = jnp.asarray(actions)

    def run(reset_key: jax.Array, key: jax.Array) -> dict[str, Any]:
        _, state = env.reset_env(reset_key, env_params)

        def body(carry, action):
            key, state, total = carry
            key, _, step_key = chain.advance(key)
            _, state, reward, done, info = step_held(env, step_key, state, action, env_params)
            total = total + jnp.sum(reward)
            score = info["score"].astype(jnp.float32) if "score" in info else total
            won = info["won"] if "won" in info else jnp.bool_(False)
            return (key, state, total), (env.render_rgb(state), total, score, done, won)

        first = env.render_rgb(state)
        _, (frames, total, score, done, won) = jax.lax.scan(body, (key, state, jnp.float32(0)), actions)
        return {
            "frames": jnp.concatenate([first[None], frames]),
            "return": total,
            "score": score,
            "done": done,
            "won": won,
        }

    return jax.device_get(jax.jit(run)(*chain.start()))
