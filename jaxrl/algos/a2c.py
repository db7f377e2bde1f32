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

import optax

from jaxrl.algos.actor_critic import ActorCritic, ActorCriticConfig, Transition
from jaxrl.algos.base import register
from jaxrl.algos.common import feed_forward_only
from jaxrl.config.schema import TrainConfig
from jaxrl.config.validate import in_range, positive
from jaxrl.core import losses, networks
from jaxrl.core.stats import ObsStats


@dataclass
class A2CConfig(ActorCriticConfig):
    """Advantage actor-critic: one gradient step per short rollout, RMSprop (Stable-Baselines3's defaults)."""

    name: str = "a2c"  # algorithm id
    lr: float = 7e-4  # learning rate (the start of the schedule when annealed)
    num_steps: int = 5  # rollout length per env per update
    update_epochs: int = 1  # passes over each rollout (A2C: one)
    num_minibatches: int = 1  # minibatches per epoch (A2C: the whole rollout, all agents', in one step)
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

    def __init__(self, cfg: TrainConfig, env: Any, env_params: Any):
        super().__init__(cfg, env, env_params)
        self.num_minibatches = self.algo.num_minibatches  # not times the agents: one step on the whole rollout

    def loss(self, params: Any, obs_stats: ObsStats | None, batch: Transition, advantages, targets, memory=None):
        """Policy gradient + vf_coef * value regression - ent_coef * entropy of a minibatch."""
        a = self.algo
        pi, value = self.minibatch_pass(params, obs_stats, self.obs_codec.decode(batch.obs), memory)
        return losses.a2c_loss(
            networks.log_prob(pi, batch.action, self.continuous),
            advantages,
            value,
            targets,
            networks.entropy(pi, self.continuous),
            vf_coef=a.vf_coef,
            ent_coef=a.ent_coef,
            normalize_advantages=a.normalize_advantages,
        )

    def base_optimizer(self, rate: Any) -> optax.GradientTransformation:
        return optax.rmsprop(rate, decay=self.algo.rms_decay, eps=self.algo.rms_eps, eps_in_sqrt=False)


register("a2c", A2CConfig, A2C, doc="A2C: one policy-gradient step per short rollout, RMSprop")
