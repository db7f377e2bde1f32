"""The shelf: trained agents that ship with jaxrl, one policy file each (`jaxrl/shelf/<name>.npz`).

    run = jaxrl.pretrained("snake-v1")      # a Run: .policy, .evaluate(), .replay(), .figures
    python -m jaxrl.eval pretrained:snake-v1 episodes=100
    python -m jaxrl.train env=arena env.bot_policy=pretrained:arena-selfplay-v2
    python -m jaxrl.eval runs/mine vs=pretrained:arena-selfplay-v2
    python -m jaxrl.rate pretrained:arena-selfplay-v2 runs/mine
    python -m jaxrl.pretrained list

A policy file is a numpy `.npz` read without pickle: `meta.json` (its run format, its name, the resolved
config it trained with, the env's name, version and settings, its measured figures, where and how long it
trained) and one array per leaf of the policy's parameters and of the env params it last trained with, named
by their path. `write` makes one from a finished run (seed 0); a `ShelfAgent` reads one, and its `restore` lays
the file's arrays into a runner of the config's shapes (the rest zeros: a shelf agent plays, it is not resumed).
`jaxrl.pretrained` wraps it as a `Run`; anywhere a run directory is taken, `pretrained:NAME` (or
`pretrained:PATH.npz`) is too.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxrl.config.formats import ADDED_ENV_PARAMS, FORMAT, check, check_env, migrate_config
from jaxrl.config.schema import ConfigError

PREFIX = "pretrained:"
SHELF = Path(__file__).resolve().parents[1] / "shelf"
META = "meta.json"
# Agents taken off the shelf, and why: each name is refused in one line that says what replaced it.
RETIRED = {
    "arena-selfplay-v1": "played arena-v1, whose rules came before the official engine's (arena-v2): use"
    " pretrained:arena-selfplay-v2, trained the same way under the engine's rules",
}


class ShelfError(ConfigError):
    """An unknown shelf agent or a policy file that cannot be read; the message is one line."""


def is_pretrained(spec: Any) -> bool:
    return isinstance(spec, str) and spec.startswith(PREFIX)


def names() -> list[str]:
    """The agents on the shelf, by name."""
    return sorted(p.stem for p in SHELF.glob("*.npz"))


def path_of(spec: str) -> Path:
    """The policy file of `pretrained:NAME`, `NAME` or `pretrained:PATH.npz`; ShelfError when there is none."""
    name = spec.removeprefix(PREFIX)
    if name.endswith(".npz"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ShelfError(f"{PREFIX}{name}: no such policy file")
        return path
    if name in RETIRED and name not in names():
        raise ShelfError(f"{PREFIX}{name} was retired: it {RETIRED[name]}")
    if name not in names():
        have = ", ".join(names()) or "none"
        raise ShelfError(f"{PREFIX}{name} is not on the shelf; the shelf has: {have} (python -m jaxrl.pretrained list)")
    return SHELF / f"{name}.npz"


def read(path: Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(meta, arrays) of a policy file; ShelfError, one line, when it is damaged or not one."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
        meta = json.loads(arrays.pop(META).tobytes().decode())
        if not isinstance(meta, dict) or meta.get("kind") != "jaxrl-policy":
            raise ValueError("not a jaxrl policy file")
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:160]
        raise ShelfError(f"{path} is not a readable jaxrl policy file ({type(e).__name__}: {reason})") from None
    return meta, arrays


def info(spec: str) -> dict[str, Any]:
    """The meta of a shelf agent (figures, env, config), without building anything."""
    return read(path_of(spec))[0]


def _marked(abstract: Any) -> Any:
    """`abstract` with each leaf replaced by its index in flatten order (to find the policy's leaves in it)."""
    leaves, treedef = jax.tree.flatten(abstract)
    return jax.tree.unflatten(treedef, list(range(len(leaves))))


def _named(tree: Any, prefix: str) -> dict[str, Any]:
    return {prefix + jax.tree_util.keystr(path): leaf for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def _policy_parts(program: Any, runner: Any) -> dict[str, Any]:
    """The leaves a shelf agent keeps, by name: the policy's parameters and the env params it trained with."""
    return {**_named(program.algo.policy_params(runner), "policy"), **_named(runner.envs.params, "env_params")}


class ShelfAgent:
    """A shelf agent: its config, its figures, and a runner rebuilt from its policy file (`restore`)."""

    def __init__(self, spec: str):
        from jaxrl.config.compose import typed_saved
        from jaxrl.envs.registry import PluginError, UnknownEnvError
        from jaxrl.envs.registry import spec as env_spec

        self.path = path_of(spec)
        self.name = self.path.stem
        meta, self._arrays = read(self.path)
        where = f"{PREFIX}{self.name}"
        found = check(meta.get("format"), where, meta.get("trained", {}).get("jaxrl"))
        config = meta["config"] if found == FORMAT else migrate_config(meta["config"], found)
        env_name = str((meta.get("env") or {}).get("name"))
        try:
            env_spec(env_name)
        except PluginError as e:
            raise ShelfError(f"{where}: {e}") from None
        except UnknownEnvError:
            raise ShelfError(
                f"{where} plays env {env_name}, which is not installed here (install or register it first)"
            ) from None
        try:
            _, cfg = typed_saved(config)
        except Exception as e:  # noqa: BLE001  (a config of an env or algorithm this jaxrl does not have)
            raise ShelfError(f"{where}: its config does not load here ({type(e).__name__}: {str(e)[:120]})") from None
        check_env(meta, where)
        self.meta, self.config, self._format = meta, cfg, found
        self._restored: dict[Any, Any] = {}

    @property
    def figures(self) -> dict[str, Any]:
        """What it measured when it was put on the shelf (greedy score, win rate, rating, episodes, seed)."""
        return dict(self.meta.get("figures") or {})

    def restore(self, step: int | None = None) -> tuple[int, Any, Any]:
        """(env steps it trained, a one-seed runner holding its policy, the Program of its config)."""
        steps = int(self.meta.get("trained", {}).get("env_steps", 0))
        if step is not None and step != steps:
            raise ConfigError(
                f"step={step}: {PREFIX}{self.name} has one policy, at {steps:,} env steps; no checkpoints"
            )
        if None in self._restored:
            return self._restored[None]
        from jaxrl.config.environment import make_env
        from jaxrl.run.checkpoint import _zeros_like_saved, from_host
        from jaxrl.run.driver import Program

        env, env_params = make_env(self.config)  # its own bots are scripted (`write` refuses a bot_policy)
        program = Program(self.config, env, env_params)
        abstract = program.abstract_runner()
        leaves, treedef = jax.tree.flatten(jax.tree.map(_zeros_like_saved, abstract))
        where = f"{PREFIX}{self.name}"
        added = {  # the env params formats after the file's added, with the values that keep its game
            f"env_params.{name}": value
            for version, params in ADDED_ENV_PARAMS.items()
            if version > self._format
            for name, value in params.items()
        }
        for name, index in _policy_parts(program, _marked(abstract)).items():
            if name not in self._arrays and name in added:
                leaves[index] = np.full(leaves[index].shape, added[name], leaves[index].dtype)
                continue
            if name not in self._arrays:
                raise ShelfError(
                    f"{where} has no {name}: its policy file does not fit this jaxrl's {self.config.algo.name}"
                )
            array = self._arrays[name][None]  # the seed axis: one seed
            if array.shape != leaves[index].shape or array.dtype != leaves[index].dtype:
                raise ShelfError(
                    f"{where}: {name} is {array.dtype}{list(array.shape[1:])}, this jaxrl's network needs"
                    f" {leaves[index].dtype}{list(leaves[index].shape[1:])}"
                )
            leaves[index] = array
        runner = from_host(jax.tree.unflatten(treedef, leaves), abstract)
        self._restored[None] = (steps, runner, program)
        return self._restored[None]


def write(run: Any, name: str, out: Path, figures: dict[str, Any], seed: int = 0) -> Path:
    """Put seed `seed` of a finished run (of a sweep's best member) on the shelf as `out`: its policy, the
    env params it last trained with, its config and `figures`."""
    from omegaconf import OmegaConf

    import jaxrl
    from jaxrl.envs.registry import spec as env_spec

    if getattr(run.config.env, "bot_policy", ""):
        raise ShelfError(
            f"{run.run_dir} plays against env.bot_policy={run.config.env.bot_policy}: a shelf agent's bots are scripted"
        )
    step, runner, program = run.restore()
    member = 0 if program.sweep.size == 1 else int((run.summary or {}).get("best_member") or 0)
    index = member * run.config.num_seeds + seed
    one = jax.tree.map(lambda x: x[index], runner)
    single = jax.tree.map(lambda x: x[None], one)  # shaped as a one-seed runner's
    parts = {
        k: np.asarray(jax.random.key_data(v) if _is_key(v) else v)[0] for k, v in _policy_parts(program, single).items()
    }
    config = OmegaConf.to_container(OmegaConf.structured(run.config), resolve=True)  # as loaded: migrated
    config["num_seeds"] = 1
    for key, value in program.sweep.members[member].items():  # a sweep's member: its settings, no sweep
        group, _, field = key.partition(".")
        config[group][field] = value
    config.pop("sweep", None)
    env = run.config.env.name
    summary = run.summary or {}
    meta = {
        "kind": "jaxrl-policy",
        "format": FORMAT,
        "name": name,
        "config": config,
        "env": {"name": env, "version": env_spec(env).version, "label": env_spec(env).label},
        "figures": figures,
        "trained": {
            "jaxrl": jaxrl.__version__,
            "env_steps": int(step),
            "train_s": summary.get("train_s", summary.get("wall_s")),
            "seed": seed,
            "member": member,
        },
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    _save(out, meta, parts)
    return out


def figures_of(result: dict[str, Any], episodes: int, seed: int) -> dict[str, Any]:
    """What a shelf agent records of an evaluation (eval.json's figures)."""
    out: dict[str, Any] = {"greedy_return": result["return"]["mean"]}
    if "score" in result:
        out["greedy_score"] = result["score"]["mean"]
    if "win_rate" in result:
        out["win_rate"] = result["win_rate"]
    if "placement" in result:
        out["placement"] = result["placement"]["mean"]
    if "return_per_agent" in result:
        out["greedy_return_per_agent"] = result["return_per_agent"]["mean"]
    return {**out, "episodes": episodes, "eval_seed": seed}


def set_figures(path: Path, figures: dict[str, Any]) -> None:
    """Write `figures` into the policy file at `path` (merged with what it records), rewriting it whole."""
    meta, arrays = read(path)
    meta["figures"] = {**(meta.get("figures") or {}), **figures}
    _save(path, meta, arrays)


def _save(path: Path, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays, **{META: np.frombuffer(json.dumps(meta).encode(), np.uint8)})
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buffer.getvalue())
    tmp.replace(path)


def _is_key(x: Any) -> bool:
    return hasattr(x, "dtype") and jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key)
