"""Agents against each other after training: head-to-head games between runs, checkpoints and bots
(`headtohead`), and the ratings computed from them (`rating`). What a learner plays during training lives
lower: bots in the envs, a finished run's policy as the bots in `jaxrl.run.frozen`, self-play in
`jaxrl.algos.selfplay` over the pool in `jaxrl.core.pool`."""
