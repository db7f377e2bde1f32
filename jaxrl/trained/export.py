"""A trained policy as an ONNX file (`python -m jaxrl.export TARGET OUT.onnx`), through jax2onnx, checked with
onnxruntime before it is kept.

What the file computes: the policy's forward pass, from a batch of observations (the env's own, dtype and
shape as the env gives them, one agent's each) to per-action scores: logits for actor-critics (PPO, A2C,
recurrent PPO), Q-values for DQN and PQN. The greedy action is their argmax. A recurrent policy's file takes
its carry as inputs after the observation (`carry_0`, ..) and gives the next carry as outputs after the
scores (`next_carry_0`, ..); a new episode starts from zeros. Observation statistics (`algo.normalize_obs`)
are part of the graph. The model's metadata (and OUT.json beside it) say the env, its version, the
observation, the actions and where the policy came from.

The check: observations from greedy evaluation episodes of the policy in its env (`check` of them), scored
by JAX and by onnxruntime; the file is written only when at least 99.9% of the greedy actions agree and the
scores are within 1e-4 (absolute, or relative to their size above 1).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxrl.errors import ConfigError

AGREE = 0.999  # the share of greedy actions ONNX must agree on
TOLERANCE = 1e-4  # the largest difference of a score (relative above 1)
OPSET = 17  # onnxruntime 1.20+ runs it; old enough for most other runtimes


def need_onnx() -> tuple[Any, Any, Any]:
    """(jax2onnx.to_onnx, onnx, onnxruntime); ConfigError, one line, when the [onnx] extra is missing."""
    import logging

    # jax2onnx logs each plugin it cannot load for this jax (with a traceback) as a warning: not the user's concern
    for name in ("jax2onnx", "onnx_ir"):  # and onnx_ir says what it leaves out of a file: no user's concern either
        logging.getLogger(name).setLevel(logging.ERROR)
    try:
        import onnx
        import onnxruntime
        from jax2onnx import to_onnx
    except ImportError as e:
        raise ConfigError(
            f'python -m jaxrl.export needs the [onnx] extra ({e.name} is missing): pip install "jaxrl[onnx]"'
        ) from None
    return to_onnx, onnx, onnxruntime


class Exported:
    """One policy's forward pass, ready to export: its parameters closed over, its inputs described."""

    def __init__(self, run: Any, seed: int = 0, step: int | None = None, member: int | None = None):
        from jaxrl.envs.base import hook
        from jaxrl.trained.evaluation import pick_member

        found, runner, program = run.restore(step)
        member = pick_member(run, program, member)
        seeds = run.config.num_seeds
        if not 0 <= seed < seeds:
            raise ConfigError(f"seed={seed} is invalid: the run has seeds 0..{seeds - 1}")
        self.run, self.step, self.program, self.member, self.seed = run, found, program, member, seed
        self.params = jax.device_get(
            jax.tree.map(lambda x: x[member * seeds + seed], program.algo.policy_params(runner))
        )
        self.scores_fn = program.scores(member)
        self.env, self.env_params = run.env()
        if not hasattr(self.env.action_space(self.env_params), "n"):
            raise ConfigError(
                f"{run.config.env.name} has continuous actions: python -m jaxrl.export writes discrete-action"
                " policies (logits or Q-values per action)"
            )
        self.agents = int(hook(self.env, "num_agents") or 1)
        space = self.env.observation_space(self.env_params)
        shape = tuple(space.shape)
        self.obs_shape = shape[1:] if self.agents > 1 else shape
        self.obs_dtype = np.dtype(space.dtype)
        self.carry = program.algo.initial_carry(1)  # None: feed-forward
        self.carry_leaves, self.carry_tree = jax.tree.flatten(self.carry)
        self.value_based = not program.algo.sampled_scores

    def forward(self, obs: jax.Array, *carry: jax.Array) -> Any:
        """scores (and the next carry's leaves) of a batch of observations (and the carry's leaves)."""
        state = jax.tree.unflatten(self.carry_tree, carry) if self.carry is not None else None
        new, scores = self.scores_fn(self.params, state, obs)
        scores = scores.astype(jnp.float32)
        return scores if self.carry is None else (scores, *jax.tree.leaves(new))

    def input_names(self) -> list[str]:
        return ["obs", *(f"carry_{i}" for i in range(len(self.carry_leaves)))]

    def output_names(self) -> list[str]:
        return ["scores", *(f"next_carry_{i}" for i in range(len(self.carry_leaves)))]

    def specs(self) -> list[Any]:
        obs = jax.ShapeDtypeStruct(("B", *self.obs_shape), self.obs_dtype)
        return [obs, *(jax.ShapeDtypeStruct(("B", *c.shape[1:]), c.dtype) for c in self.carry_leaves)]

    def metadata(self, source: str) -> dict[str, Any]:
        from jaxrl import __version__
        from jaxrl.envs.base import hook
        from jaxrl.envs.registry import spec

        named = hook(self.env, "action_names")  # gymnax envs have none
        names = named() if callable(named) else None
        return {
            "jaxrl": __version__,
            "source": source,
            "step": int(self.step),
            "seed": self.seed,
            "member": self.member,
            "env": self.run.config.env.name,
            "env_version": spec(self.run.config.env.name).version,
            "algo": self.run.config.algo.name,
            "obs_shape": list(self.obs_shape),
            "obs_dtype": str(self.obs_dtype),
            "scores": "q_values" if self.value_based else "logits",
            "actions": list(names) if names else None,
            "carry": [list(c.shape[1:]) for c in self.carry_leaves],
            "inputs": self.input_names(),
            "outputs": self.output_names(),
        }


def observations(ex: Exported, count: int, seed: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """`count` observations (and the carry each was seen with) from greedy episodes of the policy in its env."""
    from jaxrl.envs.base import offers

    env, params = ex.env, ex.env_params
    if offers(env, "eval_params"):
        params = env.eval_params(params)
    worlds = max(1, 16 // ex.agents)  # few worlds, many steps: late positions too, and long-run carries
    per_step = worlds * ex.agents
    steps = max(1, math.ceil(count / per_step))
    policy = ex.program.policy(True, ex.member)
    algo = ex.program.algo

    def run(key: jax.Array):
        keys = jax.random.split(key, worlds)
        obs, state = jax.vmap(env.reset, in_axes=(0, None))(keys, params)
        carry = algo.initial_carry(per_step)

        def step(c, k):
            obs, state, carry = c
            act_key, env_key = jax.random.split(k)
            flat = obs.reshape(per_step, *ex.obs_shape)
            new, action = policy(ex.params, carry, flat, act_key)
            action = action.reshape(worlds, *([ex.agents] if ex.agents > 1 else []))
            obs2, state2, _, terminated, truncated, _ = jax.vmap(env.step, in_axes=(0, 0, 0, None))(
                jax.random.split(env_key, worlds), state, action, params
            )
            done = terminated | truncated
            if new is not None:  # a finished episode's streams start again from zeros
                ended = jnp.repeat(done, ex.agents)
                fresh = algo.initial_carry(per_step)
                new = jax.tree.map(lambda n, f: jnp.where(ended.reshape(-1, *([1] * (n.ndim - 1))), f, n), new, fresh)
            return (obs2, state2, new), (flat, jax.tree.leaves(carry))

        _, (seen, carries) = jax.lax.scan(step, (obs, state, carry), jax.random.split(key, steps))
        return seen, carries

    seen, carries = jax.jit(run)(jax.random.key(seed))
    seen = np.asarray(seen).reshape(-1, *ex.obs_shape)[:count]
    carries = [np.asarray(c).reshape(-1, *c.shape[2:])[:count] for c in carries]
    return seen, carries


def compare(ex: Exported, path: Path, obs: np.ndarray, carries: list[np.ndarray]) -> dict[str, Any]:
    """How the ONNX file at `path` agrees with JAX on `obs`: the share of equal greedy actions, the largest
    score difference (absolute and relative), the count."""
    _, _, ort = need_onnx()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = ex.input_names()
    forward = jax.jit(ex.forward)
    agree, worst, worst_rel, batch = 0, 0.0, 0.0, 1024
    for lo in range(0, len(obs), batch):
        inputs = [obs[lo : lo + batch], *(c[lo : lo + batch] for c in carries)]
        mine = forward(*inputs)
        mine = [mine] if ex.carry is None else list(mine)
        theirs = session.run(None, dict(zip(names, inputs, strict=True)))
        a, b = np.asarray(mine[0], np.float64), np.asarray(theirs[0], np.float64)
        agree += int(np.sum(np.argmax(a, -1) == np.argmax(b, -1)))
        for m, t in zip(mine, theirs, strict=True):
            diff = np.abs(np.asarray(m, np.float64) - np.asarray(t, np.float64))
            worst = max(worst, float(diff.max(initial=0.0)))
            worst_rel = max(worst_rel, float((diff / np.maximum(1.0, np.abs(np.asarray(m)))).max(initial=0.0)))
    return {"observations": len(obs), "agree": agree / max(1, len(obs)), "max_abs": worst, "max_rel": worst_rel}


def export(
    run: Any,
    out: str | Path,
    seed: int = 0,
    step: int | None = None,
    member: int | None = None,
    check: int = 10_000,
    check_seed: int = 0,
    say: Any = print,
) -> dict[str, Any]:
    """Write the policy of `run` (a `jaxrl.load`ed run or shelf agent) to `out` (.onnx) and `out`.json; the
    metadata, with the check's figures. ConfigError, one line, for a run that cannot be exported or a file that
    fails the check (nothing is written then)."""
    to_onnx, onnx, _ = need_onnx()
    out = Path(out).expanduser()
    if out.suffix != ".onnx":
        raise ConfigError(f"{out} is invalid: the output is a file name ending in .onnx")
    if out.is_dir():
        raise ConfigError(f"{out} is a directory: give a file name ending in .onnx")
    target = getattr(run, "spec", None) or str(run.run_dir)
    ex = Exported(run, seed=seed, step=step, member=member)
    meta = ex.metadata(target)
    say(f"exporting {target} (step {ex.step}, {meta['algo']}, {meta['scores']}) to {out}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staged = Path(tmp) / out.name
        try:
            model = to_onnx(
                ex.forward,
                ex.specs(),
                model_name=f"jaxrl_{meta['env']}_{meta['algo']}",
                opset=OPSET,
                input_names=ex.input_names(),
                output_names=ex.output_names(),
            )
        except Exception as e:  # noqa: BLE001  (jax2onnx's own errors: an operation it cannot write, in one line)
            raise ConfigError(f"jax2onnx could not export this policy ({_reason(e)}): nothing written") from None
        for key, value in meta.items():
            entry = model.metadata_props.add()
            entry.key, entry.value = key, json.dumps(value)
        onnx.save_model(model, str(staged))
        if check:
            obs, carries = observations(ex, check, check_seed)
            try:
                found = compare(ex, staged, obs, carries)
            except Exception as e:  # noqa: BLE001  (onnxruntime cannot load or run the file: one line)
                why = _reason(e)
                raise ConfigError(f"onnxruntime could not run the exported file ({why}): nothing written") from None
            meta["check"] = found
            line = (
                f"{found['observations']} observations: greedy actions agree on {100 * found['agree']:.2f}%,"
                f" scores within {found['max_abs']:.2e} (relative {found['max_rel']:.2e})"
            )
            if found["agree"] < AGREE or found["max_rel"] > TOLERANCE:
                raise ConfigError(
                    f"the ONNX file does not act as the policy does ({line}; wanted {100 * AGREE:.1f}%, {TOLERANCE:g})"
                    f": nothing written"
                )
            say(f"checked with onnxruntime: {line}")
        os.replace(staged, out)
    side = out.with_suffix(".json")
    side.write_text(json.dumps(meta, indent=2) + "\n")
    say(f"saved {out} and {side}")
    return meta


def _reason(e: Exception) -> str:
    return f"{type(e).__name__}: " + (str(e).strip().splitlines() or [""])[0][:200]
