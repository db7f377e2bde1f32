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
