"""jaxrl: reinforcement learning fused with pure-JAX environments into one compiled loop.

    import jaxrl
    run = jaxrl.train(env="snake", total_timesteps=2e6)   # or algo="dqn", **{"algo.lr": 3e-4}
    run.summary, run.metrics, run.evaluate(), run.replay(), run.policy
    run = jaxrl.load("runs/...")                          # reopen a run
"""

__version__ = "0.1.0"

from jaxrl.api import Policy, Run, load, train  # noqa: E402
from jaxrl.config import ConfigError  # noqa: E402

__all__ = ["ConfigError", "Policy", "Run", "load", "train"]
