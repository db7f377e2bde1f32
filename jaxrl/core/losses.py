"""RL math as pure functions: GAE with truncation bootstrapping, the clipped PPO loss and Q(lambda) returns."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def compute_gae(
    rewards: jax.Array,
    values: jax.Array,
    next_values: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets over time-major arrays (T, ...).

    `next_values[t]` is the value of the observation reached by step t *before* any auto-reset
    (gymnax's `final_observation`). Termination stops the bootstrap; truncation keeps it (the
    episode was cut, not ended) but, like termination, stops the advantage from flowing across
    the reset.
    """
    terminated = terminated.astype(jnp.float32)
    done = jnp.maximum(terminated, truncated.astype(jnp.float32))
    deltas = rewards + gamma * next_values * (1.0 - terminated) - values

    def backward(carry: jax.Array, xs: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        delta, d = xs
        adv = delta + gamma * gae_lambda * (1.0 - d) * carry
        return adv, adv

    _, advantages = jax.lax.scan(backward, jnp.zeros_like(deltas[0]), (deltas, done), reverse=True)
    return advantages, advantages + values


def normalized(advantages: jax.Array) -> jax.Array:
    """Advantages scaled to mean 0 and standard deviation 1 over the minibatch."""
    return (advantages - advantages.mean()) / (advantages.std() + 1e-8)


def ppo_loss(
    new_log_prob: jax.Array,
    old_log_prob: jax.Array,
    advantages: jax.Array,
    new_value: jax.Array,
    old_value: jax.Array,
    targets: jax.Array,
    entropy: jax.Array,
    clip_eps: float,
    vf_coef: float,
    ent_coef: float,
    clip_value: bool = True,
    normalize_advantages: bool = True,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Clipped-surrogate PPO loss with (optionally clipped) value loss and entropy bonus."""
    if normalize_advantages:
        advantages = normalized(advantages)
    log_ratio = new_log_prob - old_log_prob
    ratio = jnp.exp(log_ratio)
    pg_loss = -jnp.minimum(ratio * advantages, jnp.clip(ratio, 1 - clip_eps, 1 + clip_eps) * advantages).mean()
    v_loss = (new_value - targets) ** 2
    if clip_value:
        clipped = old_value + jnp.clip(new_value - old_value, -clip_eps, clip_eps)
        v_loss = jnp.maximum(v_loss, (clipped - targets) ** 2)
    v_loss = 0.5 * v_loss.mean()
    ent = entropy.mean()
    total = pg_loss + vf_coef * v_loss - ent_coef * ent
    stats = {
        "policy_loss": pg_loss,
        "value_loss": v_loss,
        "entropy": ent,
        "approx_kl": ((ratio - 1) - log_ratio).mean(),
        "clip_frac": (jnp.abs(ratio - 1) > clip_eps).mean(),
    }
    return total, stats


def a2c_loss(
    log_prob: jax.Array,
    advantages: jax.Array,
    value: jax.Array,
    targets: jax.Array,
    entropy: jax.Array,
    vf_coef: float,
    ent_coef: float,
    normalize_advantages: bool,
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """A2C's loss, Stable-Baselines3's: -mean(advantages * log_prob) + vf_coef * mean((targets - value)^2)
    - ent_coef * mean(entropy) (the value error not halved, as SB3's F.mse_loss)."""
    if normalize_advantages:
        advantages = normalized(advantages)
    pg_loss = -jnp.mean(advantages * log_prob)
    v_loss = jnp.mean((targets - value) ** 2)
    ent = entropy.mean()
    total = pg_loss + vf_coef * v_loss - ent_coef * ent
    return total, {"policy_loss": pg_loss, "value_loss": v_loss, "entropy": ent}


def q_lambda_returns(
    rewards: jax.Array,
    next_q: jax.Array,
    terminated: jax.Array,
    truncated: jax.Array,
    gamma: float,
    q_lambda: float,
) -> jax.Array:
    """Q(lambda) returns over time-major arrays (T, ...), computed backward over the rollout (PQN).

    `next_q[t]` is max_a Q(s', a) for the observation s' step t reached, before any auto-reset
    (gymnax's `final_observation` on truncation). Then
        G_t = r_t + gamma * (1 - terminated_t) * B_t,
        B_t = next_q[t]                                        if the episode ended at t or t = T - 1,
        B_t = q_lambda * G_{t+1} + (1 - q_lambda) * next_q[t]  otherwise.
    Termination stops the bootstrap; truncation bootstraps from the final observation; neither
    lets the next episode's return flow back.
    """
    done = terminated | truncated
    keep = 1.0 - terminated.astype(jnp.float32)

    def backward(following: jax.Array, xs: tuple[jax.Array, ...]) -> tuple[jax.Array, jax.Array]:
        reward, q, alive, ended = xs
        bootstrap = jnp.where(ended, q, q_lambda * following + (1 - q_lambda) * q)
        g = reward + gamma * alive * bootstrap
        return g, g

    # Starting from next_q[T-1] makes the last step's bootstrap next_q[T-1] whatever lambda is.
    _, returns = jax.lax.scan(backward, next_q[-1], (rewards, next_q, keep, done), reverse=True)
    return returns


def q_targets(
    q_next_target: jax.Array, q_next_online: jax.Array, reward: jax.Array, discount: jax.Array, double: bool
) -> jax.Array:
    """reward + discount * Q_target(s', a') with a' = argmax Q_online(s') (double) or argmax Q_target(s')."""
    if double:
        best = jnp.argmax(q_next_online, axis=-1)
        bootstrap = jnp.take_along_axis(q_next_target, best[..., None], axis=-1)[..., 0]
    else:
        bootstrap = q_next_target.max(axis=-1)
    return reward + discount * bootstrap
