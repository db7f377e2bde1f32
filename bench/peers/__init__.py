"""What `python -m bench` measures jaxrl against, one module per peer; a new peer goes here.

- `purejaxrl_ref`: PPO in PureJaxRL's shape (ppo.py), and the helpers the other references share
  (`make_ppo`, `EpisodeLog`, `final_return`, `compile_and_run_seeds`, `cli_args`);
- `purejaxrl_ppo_continuous_ref`: PureJaxRL's ppo_continuous_action.py on `make_ppo`;
- `purejaxrl_dqn_ref`: PureJaxRL's dqn.py;
- `sb3_peer`: Stable-Baselines3 PPO and DQN stepping jaxrl's Snake through `envs.to_gymnasium`;
- `pufferlib_snake`: PufferLib's C Snake (`snake.h` from the `pufferlib` 3.0.0 sdist on PyPI, cached) in the
  bench's own C harness (`pufferlib_c/`), one process per core (`bench/parts/arena.py`).

Each runs on its own too: `python -m bench.peers.<module> --help`. A peer imports nothing of the
parts: the parts import it (`bench/parts/train.py`, `score.py`, `parity.py`).
"""
