"""jaxrl: reinforcement learning fused with pure-JAX environments into one compiled loop."""

__version__ = "0.1.0"
