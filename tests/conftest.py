import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")


def count_traces(monkeypatch, algo_class) -> list[int]:
    """A list that gets the chunk length each time `algo_class.run_chunk` is traced (called under jit)."""
    traces: list[int] = []
    original = algo_class.run_chunk

    def counting(self, runner, num_active, length):
        traces.append(length)
        return original(self, runner, num_active, length)

    monkeypatch.setattr(algo_class, "run_chunk", counting)
    return traces
