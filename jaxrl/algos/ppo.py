"""PPO: rollout, GAE and all epochs x minibatches of SGD as one update of the core loop (`jaxrl.core.loop`).

`PPO(cfg, env, env_params)` is `ActorCritic` (`jaxrl.algos.actor_critic`: network, rollout, GAE, epochs of
minibatches) with the clipped surrogate loss and Adam. A recurrent network (`algo.network=gru|lstm`) is
`RecurrentPPO` (`jaxrl.algos.recurrent_ppo`), which adds itself to `VARIANTS`; `algo=ppo` is registered
here, its factory picking the class by `algo.network`. The config (`PPOConfig`) serves both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import optax

from jaxrl.algos.actor_critic import ActorCritic, ActorCriticConfig, Transition, policy_outputs
from jaxrl.algos.actor_critic import ActorCriticRunner as PPORunner
from jaxrl.algos.base import register
from jaxrl.algos.onpolicy import minibatches
from jaxrl.config.schema import ConfigError, TrainConfig, agents_per_world, env_groups
from jaxrl.config.validate import positive
from jaxrl.core import groups, losses, networks
from jaxrl.core.stats import ObsStats

# Names that lived here before the on-policy and actor-critic bases took them; kept so their imports keep working.
__all__ = ["PPO", "PPOConfig", "PPORunner", "VARIANTS", "ObsStats", "Transition", "horizon", "make_ppo"]
__all__ += ["minibatches", "policy_outputs", "sequence_sizes"]


@dataclass
class PPOConfig(ActorCriticConfig):
    """Proximal Policy Optimization with GAE, clipped value loss and LR annealing."""

    name: str = "ppo"  # algorithm id
    anneal_lr: bool = True  # decay the learning rate linearly to 0 over training
    clip_eps: float = 0.2  # PPO ratio clip (and value clip)
    clip_value: bool = True  # clip the value update like the policy ratio
    torso: str = "mlp"  # recurrent only: mlp | cnn | none, the feed-forward layers before the cell
    rnn_hidden: int = 128  # recurrent only: units of the GRU/LSTM cell
    bptt_horizon: Any = None  # recurrent only: steps per training sequence (default: num_steps); divides num_steps

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first PPO setting out of range or not dividing the rollout."""
        positive("algo.clip_eps", self.clip_eps)
        super().validate(cfg)

    def check_split(self, cfg: TrainConfig, count: int) -> None:
        """A recurrent run's minibatches hold whole BPTT sequences; a feed-forward one's, transitions."""
        if self.network not in networks.RECURRENT:
            return super().check_split(cfg, count)
        num_sequences, count = sequence_sizes(cfg)
        groups.check_split(env_groups(cfg), num_sequences, count, "BPTT sequences")


def horizon(algo: Any) -> int:
    """Steps per BPTT sequence: algo.bptt_horizon, or the whole rollout."""
    return algo.num_steps if algo.bptt_horizon is None else algo.bptt_horizon


def sequence_sizes(cfg: TrainConfig) -> tuple[int, int]:
    """(sequences per rollout, minibatches per epoch) of a recurrent run; ConfigError when the horizon
    does not divide the rollout or the minibatches do not split whole sequences."""
    a = cfg.algo
    if a.torso not in networks.TORSOS:
        raise ConfigError(f"algo.torso={a.torso} is invalid: allowed {', '.join(networks.TORSOS)}")
    positive("algo.rnn_hidden", a.rnn_hidden)
    h = horizon(a)
    if not isinstance(h, int) or isinstance(h, bool) or h <= 0 or a.num_steps % h:
        raise ConfigError(
            f"algo.bptt_horizon={a.bptt_horizon} is invalid: a positive divisor of algo.num_steps={a.num_steps}"
        )
    count = cfg.num_envs * agents_per_world(cfg) * (a.num_steps // h)
    wanted = minibatches(cfg)
    if count % wanted == 0:
        return count, wanted
    if isinstance(a.minibatch_size, str):  # auto: the fewest minibatches of whole sequences, at least as many
        return count, min(d for d in range(wanted, count + 1) if count % d == 0)
    setting = (
        f"algo.num_minibatches={a.num_minibatches}"
        if a.minibatch_size is None
        else f"algo.minibatch_size={a.minibatch_size}"
    )
    raise ConfigError(
        f"{setting} gives {wanted} minibatches, which must divide the {count} BPTT sequences"
        f" (num_envs * agents * algo.num_steps / algo.bptt_horizon): a recurrent minibatch holds whole sequences"
    )


class PPO(ActorCritic):
    """A feed-forward PPO run: `ActorCritic` with the clipped surrogate loss and Adam (eps 1e-5)."""

    def loss(self, params: Any, obs_stats: ObsStats | None, batch: Transition, advantages, targets, memory=None):
        """The PPO loss of a minibatch (`memory`: what `minibatch_pass` needs beyond the observations)."""
        pi, value = self.minibatch_pass(params, obs_stats, self.obs_codec.decode(batch.obs), memory)
        a = self.algo
        return losses.ppo_loss(
            networks.log_prob(pi, batch.action, self.continuous),
            batch.log_prob,
            advantages,
            value,
            batch.value,
            targets,
            networks.entropy(pi, self.continuous),
            clip_eps=a.clip_eps,
            vf_coef=a.vf_coef,
            ent_coef=a.ent_coef,
            clip_value=a.clip_value,
            normalize_advantages=a.normalize_advantages,
        )

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.adam(rate, eps=1e-5)


# algo.network -> the PPO subclass that runs it; jaxrl/algos/recurrent_ppo.py adds gru and lstm (the registry's
# first read imports every module of jaxrl/algos, that one with them).
VARIANTS: dict[str, type[PPO]] = {}


def make_ppo(cfg: TrainConfig, env: Any, env_params: Any) -> PPO:
    """`algo=ppo`: the variant registered for `algo.network` (`RecurrentPPO` for gru|lstm), else `PPO`."""
    return VARIANTS.get(cfg.algo.network, PPO)(cfg, env, env_params)


register("ppo", PPOConfig, make_ppo, doc="PPO: clipped surrogate, GAE, minibatch SGD over each rollout")
