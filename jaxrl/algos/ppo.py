"""PPO: rollout, GAE and all epochs x minibatches of SGD as one update of the core loop (`jaxrl.core.loop`).

`PPO(cfg, env, env_params)` is `ActorCritic` (`jaxrl.algos.actor_critic`: network, rollout, GAE, epochs of
minibatches) with the clipped surrogate loss and Adam. A recurrent network (`algo.network=gru|lstm`) is
`RecurrentPPO` (`jaxrl.algos.recurrent_ppo`), which adds itself to `VARIANTS`; `algo=ppo` is registered
here, its factory picking the class by `algo.network`. The config (`PPOConfig`) serves both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import optax

from jaxrl.algos.actor_critic import ActorCritic, ActorCriticConfig, Transition, policy_outputs
from jaxrl.algos.actor_critic import ActorCriticRunner as PPORunner
from jaxrl.algos.base import register
from jaxrl.algos.onpolicy import horizon, minibatches, sequence_sizes
from jaxrl.config.schema import TrainConfig
from jaxrl.config.validate import positive
from jaxrl.core import losses, networks
from jaxrl.core.stats import ObsStats

# Names that lived here before the actor-critic base took them; kept so their imports keep working.
__all__ = ["PPO", "PPOConfig", "PPORunner", "VARIANTS", "ObsStats", "Transition", "horizon", "make_ppo"]
__all__ += ["minibatches", "policy_outputs", "sequence_sizes"]


@dataclass
class PPOConfig(ActorCriticConfig):
    """Proximal Policy Optimization with GAE, clipped value loss and LR annealing."""

    name: str = "ppo"  # algorithm id
    anneal_lr: bool = True  # decay the learning rate linearly to 0 over training
    max_grad_norm: float = 0.5  # global gradient-norm clip
    activation: str = "tanh"  # tanh | relu | gelu | silu
    clip_eps: float = 0.2  # PPO ratio clip (and value clip)
    clip_value: bool = True  # clip the value update like the policy ratio
    torso: str = "mlp"  # recurrent only: mlp | cnn | none, the feed-forward layers before the cell
    rnn_hidden: int = 128  # recurrent only: units of the GRU/LSTM cell
    bptt_horizon: Any = None  # recurrent only: steps per training sequence (default: num_steps); divides num_steps

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first PPO setting out of range or not dividing the rollout."""
        super().validate(cfg)
        positive("algo.clip_eps", self.clip_eps)


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

    def optimizer_with(self, lr: float | jax.Array) -> optax.GradientTransformation:
        """`Base`'s, its state flattened into one vector per moment (the layout PPO's checkpoints hold)."""
        return optax.flatten(super().optimizer_with(lr))


# algo.network -> the PPO subclass that runs it; jaxrl/algos/recurrent_ppo.py adds gru and lstm (the registry's
# first read imports every module of jaxrl/algos, that one with them).
VARIANTS: dict[str, type[PPO]] = {}


def make_ppo(cfg: TrainConfig, env: Any, env_params: Any) -> PPO:
    """`algo=ppo`: the variant registered for `algo.network` (`RecurrentPPO` for gru|lstm), else `PPO`."""
    return VARIANTS.get(cfg.algo.network, PPO)(cfg, env, env_params)


register("ppo", PPOConfig, make_ppo, doc="PPO: clipped surrogate, GAE, minibatch SGD over each rollout")
