"""RL math pinned by hand-computed numbers."""

import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core.losses import compute_gae, ppo_loss


def test_gae_with_termination_and_truncation():
    # Two envs, three steps (time-major). Env 0: step 1 is truncated (bootstrap from the final
    # observation's value 9.0, no flow across the reset); step 2 terminates (no bootstrap).
    rewards = jnp.array([[1.0, 0.0], [2.0, 0.0], [3.0, 1.0]])
    values = jnp.array([[0.5, 0.0], [1.0, 0.0], [1.5, 0.0]])
    next_values = jnp.array([[1.0, 0.0], [9.0, 0.0], [2.0, 0.5]])
    terminated = jnp.array([[False, False], [False, False], [True, False]])
    truncated = jnp.array([[False, False], [True, False], [False, False]])
    adv, targets = compute_gae(rewards, values, next_values, terminated, truncated, gamma=0.9, gae_lambda=0.8)
    # env 0: deltas 1 + .9*1 - .5 = 1.4, 2 + .9*9 - 1 = 9.1, 3 - 1.5 = 1.5
    #        A2 = 1.5, A1 = 9.1 (cut by the truncation), A0 = 1.4 + .72 * 9.1 = 7.952
    # env 1: deltas 0, 0, 1 + .9*.5 = 1.45; A2 = 1.45, A1 = .72*1.45 = 1.044, A0 = .72*1.044 = .75168
    np.testing.assert_allclose(adv, [[7.952, 0.75168], [9.1, 1.044], [1.5, 1.45]], rtol=1e-6)
    np.testing.assert_allclose(targets, np.asarray(adv) + np.asarray(values), rtol=1e-6)


def test_gae_lambda_one_is_discounted_return_to_go():
    rewards = jnp.ones((4, 1))
    zeros = jnp.zeros((4, 1))
    never = jnp.zeros((4, 1), bool)
    adv, _ = compute_gae(rewards, zeros, zeros, never, never, gamma=0.5, gae_lambda=1.0)
    np.testing.assert_allclose(adv[:, 0], [1.875, 1.75, 1.5, 1.0])


def test_ppo_loss_hand_numbers():
    old_lp = jnp.zeros(3)
    new_lp = jnp.log(jnp.array([1.5, 1.0, 0.5]))
    adv = jnp.array([1.0, -1.0, 2.0])
    new_v, old_v, targets = jnp.array([1.0, 2.0, 3.0]), jnp.array([1.0, 1.0, 3.0]), jnp.array([2.0, 2.0, 3.0])
    ent = jnp.array([0.3, 0.3, 0.3])
    total, stats = ppo_loss(
        new_lp,
        old_lp,
        adv,
        new_v,
        old_v,
        targets,
        ent,
        clip_eps=0.2,
        vf_coef=0.5,
        ent_coef=0.1,
        clip_value=True,
        normalize_advantages=False,
    )
    # surrogate: min(1.5*1, 1.2*1) = 1.2; min(1*-1, 1*-1) = -1; min(.5*2, .8*2) = 1.0 -> pg = -(1.2 - 1 + 1)/3
    assert float(stats["policy_loss"]) == pytest.approx(-0.4)
    # value: unclipped (1-2)^2=1, 0, 0; clipped (1-2)^2=1, (1.2-2)^2=.64, 0 -> .5 * mean(max) = .5 * 1.64 / 3
    assert float(stats["value_loss"]) == pytest.approx(0.5 * 1.64 / 3)
    assert float(total) == pytest.approx(-0.4 + 0.5 * 0.5 * 1.64 / 3 - 0.1 * 0.3)
    assert float(stats["clip_frac"]) == pytest.approx(2 / 3)


def test_gae_a_step_both_terminated_and_truncated_does_not_bootstrap():
    # Step 1 ends the episode by termination and truncation at once (Snake dying on its hunger-limit step):
    # termination wins, so its next value (100, a final observation's) is not used, and nothing flows across.
    rewards = jnp.array([[1.0], [2.0], [3.0]])
    values = jnp.array([[0.5], [1.0], [1.5]])
    next_values = jnp.array([[1.0], [100.0], [2.0]])
    both = jnp.array([[False], [True], [False]])
    adv, targets = compute_gae(rewards, values, next_values, both, both, gamma=0.9, gae_lambda=0.8)
    # deltas 1 + .9*1 - .5 = 1.4, 2 - 1 = 1, 3 + .9*2 - 1.5 = 3.3; A2 = 3.3, A1 = 1, A0 = 1.4 + .72 * 1 = 2.12
    np.testing.assert_allclose(adv[:, 0], [2.12, 1.0, 3.3], rtol=1e-6)
    np.testing.assert_allclose(targets[:, 0], [2.62, 2.0, 4.8], rtol=1e-6)


def test_ppo_loss_normalizes_advantages():
    lp = jnp.zeros(4)
    adv = jnp.array([1.0, 2.0, 3.0, 4.0])
    v = jnp.zeros(4)
    _, stats = ppo_loss(lp, lp, adv, v, v, v, v, 0.2, 0.5, 0.0, normalize_advantages=True)
    assert float(stats["policy_loss"]) == pytest.approx(0.0, abs=1e-6)  # ratio 1: -mean(normalized) = 0
    # Ratio 1.1 (inside the clip) on one transition: only now does the scale of the advantages show.
    # [0, 0, 4, 4] has mean 2 and (population) std 2: normalized [-1, -1, 1, 1]; -mean([-1, -1, 1.1, 1]) = -0.025.
    new_lp = jnp.log(jnp.array([1.0, 1.0, 1.1, 1.0]))
    adv = jnp.array([0.0, 0.0, 4.0, 4.0])
    _, stats = ppo_loss(new_lp, lp, adv, v, v, v, v, 0.2, 0.5, 0.0, normalize_advantages=True)
    assert float(stats["policy_loss"]) == pytest.approx(-0.025, rel=1e-5)
    _, stats = ppo_loss(new_lp, lp, adv, v, v, v, v, 0.2, 0.5, 0.0, normalize_advantages=False)
    assert float(stats["policy_loss"]) == pytest.approx(-(4.4 + 4.0) / 4, rel=1e-6)
