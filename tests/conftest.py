import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def count_traces(monkeypatch) -> list[int]:
    """A list that gets the chunk length each time the core loop's `run_chunk` is traced (called under jit)."""
    from jaxrl import loop

    traces: list[int] = []
    original = loop.run_chunk

    def counting(update, runner, num_active, length):
        traces.append(length)
        return original(update, runner, num_active, length)

    monkeypatch.setattr(loop, "run_chunk", counting)
    return traces


def env_config(name: str, **settings):
    """The `env` config group's dataclass for a registered env, with settings."""
    import envs

    return envs.spec(name).schema()(**settings)


def train_run(algo, key):
    """The whole run of an algorithm as one jitted pure function of the key: (runner, UpdateStats)."""
    import jax

    from jaxrl.loop import make_train

    return jax.jit(make_train(algo))(key)


def three_chunks(algo, steps_per_update: int):
    """A 2-seed, 4-env CartPole run of 7 updates of `algo` (a config dataclass) through one compiled chunk
    of 3, run as chunks of 3, 3 and 1: the runner it ends with."""
    import envs
    from jaxrl.config import TrainConfig
    from jaxrl.driver import Program

    cfg = TrainConfig(
        env=env_config("CartPole-v1"),
        algo=algo,
        num_envs=4,
        num_seeds=2,
        total_timesteps=steps_per_update * 7,
        num_chunks=3,
    )
    program = Program(cfg, *envs.make("CartPole-v1"))
    runner, _ = program.compile()
    for active in (3, 3, 1):
        runner, _ = program.run_chunk(runner, active)
    return runner
