"""`python -m jaxrl.train env=snake algo=ppo num_seeds=4 ...`: the command line over `jaxrl.api`."""

from __future__ import annotations

import sys

from jaxrl.cli import command

USAGE = """usage: python -m jaxrl.train [key=value ...]

  env=snake | grid | <gymnax id>   e.g. env=CartPole-v1, env.size=12 (snake); env=NAME --help lists its settings
  algo={algos}   e.g. algo.lr=3e-4 algo.network=cnn algo.num_steps=64 (ppo)
                             algo.buffer_size=100000 algo.n_step=3 algo.double=false (dqn)
  seed=0 num_seeds=1 num_envs=1024 total_timesteps=2e7 num_chunks=50
  run_dir=PATH overwrite=false device=auto|cpu|tpu|gpu|metal progress=true|false preset=fast|heavy|beast (ppo)
  experiment=snake_perfect   a shipped recipe (env settings, algorithm, schedule); key=value still overrides it
  devices=1|N|all seed_devices=1 env_groups=N   shard over local devices (mesh seed x env; docs/devices.md)
  sweep.algo.lr=[1e-4,3e-4,1e-3] sweep.env.reward_death=[-1,-2]   a grid of float settings trained in one program
  distributed=true [coordinator_address=HOST:PORT num_processes=N process_id=I] devices=all   one run over hosts
  checkpoint.every_steps=N checkpoint.every_minutes=10 checkpoint.keep=3
  compile_cache=PATH   jax's persistent compilation cache: a second start loads its programs
  precision=fp32 | tf32 | bf16   full float32 | TensorFloat-32 matmuls (NVIDIA GPUs) | bfloat16 network, float32 params
  curriculum=[{{steps:5e6,hunger_limit:30}},{{}}]   EnvParams per phase
  logger=tensorboard | wandb | [tensorboard,wandb]   (metrics.csv is always written)
  resume=RUN_DIR [key=value ...]   continue a run from its newest readable checkpoint
                                   (settings that change the state's shapes are refused)
"""


def usage(argv: list[str]) -> str:
    """The help text; with env=NAME, that env's settings too."""
    from jaxrl.algos.base import algorithms

    text = USAGE.format(algos=" | ".join(algorithms()))
    env_name = next((a.partition("=")[2] for a in argv if a.startswith("env=")), None)
    if env_name:
        from jaxrl import envs

        try:
            spec = envs.spec(env_name)
            shape = ", ".join(f"{k}={v}" for k, v in spec.shape_keys.items()) or "none"
            params = ", ".join(f"{k}={v}" for k, v in spec.param_fields.items()) or "none"
        except ValueError as e:
            return f"{text}\n{e}"
        text += f"\n{env_name}: constructor settings (fix shapes): {shape}\n"
        text += f"{env_name}: EnvParams (traced; curriculum phases may change them): {params}\n"
    return text


def run(argv: list[str]) -> int:
    """0 done, 130 stopped by Ctrl-C (after saving a checkpoint); errors as `jaxrl.cli` says."""
    resume = [a.partition("=")[2] for a in argv if a.startswith("resume=")]
    overrides = [a for a in argv if not a.startswith("resume=")]
    from jaxrl.api import compose
    from jaxrl.build import train

    cfg, resolved, run_dir = compose(overrides, resume[-1] if resume else None)
    try:
        ctx = train(cfg, resolved, resume=run_dir)
    except KeyboardInterrupt:  # before training started, or a second Ctrl-C: nothing more is saved
        print("\nstopped; checkpoints already written are kept", file=sys.stderr)
        return 130
    return 130 if ctx.interrupted else 0


main = command(__name__)
