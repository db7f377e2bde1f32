"""The device side: the compiled training loop and what it is made of (rollout, vector envs, episode
statistics, losses, networks, replay, minibatch shuffles, env groups, precision). Pure JAX, no host I/O."""
