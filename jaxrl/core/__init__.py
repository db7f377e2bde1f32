"""The device side: the compiled training loop and what it is made of (rollout, vector envs, episode
statistics, losses, networks, replay, minibatch shuffles, env groups, precision, self-play's pool), and the
`Algorithm` protocol the loop calls (`algorithm`). Pure JAX, no host I/O."""
