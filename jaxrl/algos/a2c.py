"""A2C (Mnih et al., 2016, the synchronous variant): the actor-critic rollout of `jaxrl.algos.actor_critic`,
then one gradient step on all of it: the policy gradient weighted by the advantages, the value regressed
onto the returns, an entropy bonus, RMSprop.

The defaults are Stable-Baselines3's A2C: 5 steps per env per update, advantages over the whole rollout
(GAE lambda 1, i.e. n-step returns) and not normalized, no entropy bonus, separate actor and critic
networks of 64x64 tanh, RMSprop with PyTorch's epsilon outside the square root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import optax

from jaxrl.algos.actor_critic import ActorCritic, ActorCriticConfig, Transition
from jaxrl.algos.base import register
from jaxrl.algos.common import feed_forward_only
from jaxrl.config.schema import TrainConfig
from jaxrl.config.validate import in_range, positive
from jaxrl.core import networks
from jaxrl.core.stats import ObsStats


@dataclass
class A2CConfig(ActorCriticConfig):
    """Advantage actor-critic: one gradient step per short rollout, RMSprop (Stable-Baselines3's defaults)."""

    name: str = "a2c"  # algorithm id
    lr: float = 7e-4  # learning rate (the start of the schedule when annealed)
    max_grad_norm: float = 0.5  # global gradient-norm clip
    activation: str = "tanh"  # tanh | relu | gelu | silu
    num_steps: int = 5  # rollout length per env per update
    update_epochs: int = 1  # passes over each rollout (A2C: one)
    num_minibatches: int = 1  # minibatches per epoch (A2C: the whole rollout in one step)
    gae_lambda: float = 1.0  # GAE lambda (1: n-step returns to the rollout's end)
    ent_coef: float = 0.0  # entropy bonus weight
    normalize_advantages: bool = False  # normalize the advantages of each minibatch
    rms_decay: float = 0.99  # RMSprop's decay of the squared-gradient average (PyTorch's alpha)
    rms_eps: float = 1e-5  # RMSprop's epsilon, added to the root of that average

    def validate(self, cfg: TrainConfig) -> None:
        """ConfigError naming the first A2C setting out of range or not dividing the rollout."""
        feed_forward_only("a2c", self.network, "it has no recurrent variant (recurrent PPO has)")
        in_range("algo.rms_decay", self.rms_decay, 0, 1)
        positive("algo.rms_eps", self.rms_eps)
        super().validate(cfg)


class A2C(ActorCritic):
    """An A2C run: `ActorCritic`'s rollout and GAE, the advantage-weighted policy gradient, RMSprop."""

    def loss(self, params: Any, obs_stats: ObsStats | None, batch: Transition, advantages, targets, memory=None):
        """Policy gradient + vf_coef * value regression - ent_coef * entropy of a minibatch."""
        a = self.algo
        pi, value = self.minibatch_pass(params, obs_stats, self.obs_codec.decode(batch.obs), memory)
        if a.normalize_advantages:
            advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
        policy_loss = -jnp.mean(advantages * networks.log_prob(pi, batch.action, self.continuous))
        value_loss = jnp.mean((targets - value) ** 2)
        entropy = networks.entropy(pi, self.continuous).mean()
        total = policy_loss + a.vf_coef * value_loss - a.ent_coef * entropy
        return total, {"policy_loss": policy_loss, "value_loss": value_loss, "entropy": entropy}

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.rmsprop(rate, decay=self.algo.rms_decay, eps=self.algo.rms_eps, eps_in_sqrt=False)

    def optimizer_with(self, lr: float | jax.Array) -> optax.GradientTransformation:
        """`Base`'s, its state flattened into one vector per moment (fewer, larger arrays to update)."""
        return optax.flatten(super().optimizer_with(lr))


register("a2c", A2CConfig, A2C, doc="A2C: one policy-gradient step per short rollout, RMSprop")
