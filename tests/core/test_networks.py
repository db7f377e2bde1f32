"""Networks: the LAPACK-free orthogonal initializer, the actor-critic shapes, the policy distributions."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrl.core.networks import ActorCritic, orthogonal


@pytest.mark.parametrize("shape", [(300, 128), (128, 128), (64, 4), (4, 64), (3, 3, 16, 32)])
def test_orthogonal_init_is_orthogonal(shape):
    w = np.asarray(orthogonal(2.0)(jax.random.key(1), shape)).reshape(-1, shape[-1]) / 2.0
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, np.eye(gram.shape[0]), atol=1e-4)


def test_orthogonal_init_batched_over_seeds():
    # vmapped init is how seeds start; flax's QR-based initializer deadlocked here on 2 cores.
    keys = jax.random.split(jax.random.key(0), 64)
    w = jax.jit(jax.vmap(lambda k: orthogonal(1.0)(k, (128, 128))))(keys)
    err = jnp.abs(jnp.einsum("bij,bik->bjk", w, w) - jnp.eye(128)).max()
    assert float(err) < 1e-3
    assert float(jnp.abs(w[0] - w[1]).max()) > 0.1  # different seeds, different matrices


@pytest.mark.parametrize("network,obs_shape", [("mlp", (4,)), ("cnn", (6, 6, 3))])
def test_actor_critic_shapes(network, obs_shape):
    net = ActorCritic(num_actions=3, continuous=False, network=network, obs_ndim=len(obs_shape))
    obs = jnp.zeros((5, 7) + obs_shape, jnp.uint8)
    params = net.init(jax.random.key(0), obs[0, :1])
    logits, value = net.apply(params, obs)
    assert logits.shape == (5, 7, 3) and value.shape == (5, 7)
    assert net.apply(params, obs, method="value").shape == (5, 7)


def test_shared_torso_has_one_torso_feeding_both_heads():
    obs = jax.random.uniform(jax.random.key(2), (8, 10))
    sizes = {}
    for shared in (False, True):
        net = ActorCritic(num_actions=4, continuous=False, hidden=(32, 32), shared=shared)
        params = net.init(jax.random.key(0), obs[:1])
        sizes[shared] = sum(x.size for x in jax.tree.leaves(params))
        logits, value = net.apply(params, obs)
        assert logits.shape == (8, 4) and value.shape == (8,)
        np.testing.assert_allclose(net.apply(params, obs, method="value"), value, rtol=1e-6)
    torso = 10 * 32 + 32 + 32 * 32 + 32
    assert sizes[False] - sizes[True] == torso
    # In the shared net the value gradient reaches the torso the policy uses.
    net = ActorCritic(num_actions=4, continuous=False, hidden=(32, 32), shared=True)
    params = net.init(jax.random.key(0), obs[:1])
    grads = jax.grad(lambda p: net.apply(p, obs, method="value").sum())(params)
    torso_grads = [g for path, g in jax.tree_util.tree_leaves_with_path(grads) if "actor_torso" in str(path)]
    assert torso_grads and any(float(jnp.abs(g).max()) > 0 for g in torso_grads)


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.bfloat16])  # precision=bf16: float32 parameters, bf16 compute
@pytest.mark.parametrize("rows", [4, 128, 300])  # the CPU's explicit-transpose gradient, and the plain one
def test_dense_matches_flax_dense_in_value_and_gradient(rows, dtype):
    import flax.linen as nn

    from jaxrl.core.networks import Dense

    init = nn.initializers.lecun_normal()
    ours, theirs = Dense(16, kernel_init=init, dtype=dtype), nn.Dense(16, kernel_init=init, dtype=dtype)
    x = jax.random.normal(jax.random.key(0), (rows, 9))
    params = ours.init(jax.random.key(1), x)
    assert jax.tree.map(jnp.shape, params) == jax.tree.map(jnp.shape, theirs.init(jax.random.key(1), x))
    np.testing.assert_array_equal(params["params"]["kernel"], theirs.init(jax.random.key(1), x)["params"]["kernel"])
    loss = lambda module: lambda p, x: jnp.sum(jnp.tanh(module.apply(p, x).astype(jnp.float32)) ** 2)
    (a, ga), (b, gb) = (jax.jit(jax.value_and_grad(loss(m), argnums=(0, 1)))(params, x) for m in (ours, theirs))
    np.testing.assert_allclose(a, b, rtol=1e-6)
    # bf16 sums of products may round apart where the two backward passes lay out their dots differently.
    tolerance = {"rtol": 1e-5, "atol": 1e-6} if dtype == jnp.float32 else {"rtol": 2e-2, "atol": 2e-2}
    for u, v in zip(jax.tree.leaves(ga), jax.tree.leaves(gb), strict=True):
        assert u.dtype == v.dtype == jnp.float32
        np.testing.assert_allclose(u, v, **tolerance)


def test_noise_sampling_draws_from_the_policy():
    from jaxrl.core.networks import noise, sample_with

    logits = jnp.log(jnp.array([0.1, 0.6, 0.3]))
    draws = noise(jax.random.key(0), (20000,), 3, continuous=False)
    actions = np.asarray(sample_with(jnp.broadcast_to(logits, (20000, 3)), draws, continuous=False))
    np.testing.assert_allclose(np.bincount(actions, minlength=3) / 20000, [0.1, 0.6, 0.3], atol=0.015)
    mean, log_std = jnp.array([1.0, -2.0]), jnp.log(jnp.array([0.5, 2.0]))
    cont = np.asarray(sample_with((mean, log_std), noise(jax.random.key(1), (20000,), 2, continuous=True), True))
    np.testing.assert_allclose(cont.mean(0), [1.0, -2.0], atol=0.05)
    np.testing.assert_allclose(cont.std(0), [0.5, 2.0], rtol=0.03)


def test_log_prob_and_entropy_against_hand_computed_numbers():
    from jaxrl.core.networks import entropy, log_prob

    # Diagonal Gaussian, mean (0, 1), std (1, 2), action (1, 0): z = (1, -0.5), so
    # log p = -0.5 * (1 + 0.25) - log 2 - 2 * 0.5 * log(2 pi); entropy = log 1 + log 2 + 2 * 0.5 * log(2 pi e).
    mean, log_std = jnp.array([0.0, 1.0]), jnp.log(jnp.array([1.0, 2.0]))
    pi = (jnp.broadcast_to(mean, (3, 2)), jnp.broadcast_to(log_std, (3, 2)))  # a batch of 3 as the network gives
    action = jnp.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 3.0]])
    want = [-0.625 - math.log(2) - math.log(2 * math.pi), -math.log(2) - math.log(2 * math.pi)]
    want.append(-0.5 * (1 + 1) - math.log(2) - math.log(2 * math.pi))
    np.testing.assert_allclose(log_prob(pi, action, continuous=True), want, rtol=1e-6)
    np.testing.assert_allclose(entropy(pi, continuous=True), math.log(2) + math.log(2 * math.pi * math.e), rtol=1e-6)
    # Categorical, probabilities (0.2, 0.3, 0.5).
    logits = jnp.log(jnp.array([[0.2, 0.3, 0.5], [0.2, 0.3, 0.5]])) + jnp.array([[0.0], [7.0]])  # shift-invariant
    np.testing.assert_allclose(
        log_prob(logits, jnp.array([2, 0]), continuous=False), [math.log(0.5), math.log(0.2)], rtol=1e-6
    )
    h = -(0.2 * math.log(0.2) + 0.3 * math.log(0.3) + 0.5 * math.log(0.5))
    np.testing.assert_allclose(entropy(logits, continuous=False), [h, h], rtol=1e-6)
    # The continuous head: log_std is one learned vector, shared by every observation.
    net = ActorCritic(num_actions=2, continuous=True, hidden=(8,))
    obs = jax.random.normal(jax.random.key(0), (5, 3))
    (head_mean, head_log_std), _ = net.apply(net.init(jax.random.key(1), obs[:1]), obs)
    assert head_mean.shape == head_log_std.shape == (5, 2)
    np.testing.assert_array_equal(head_log_std, 0.0)


def test_layer_norm_normalizes_each_hidden_layer_before_its_activation():
    from jaxrl.core.networks import QNetwork, Torso

    obs = jax.random.normal(jax.random.key(0), (8, 12)) * 50 + 7  # far from zero mean, unit scale
    torso = Torso("mlp", (32, 16), (), "relu", layer_norm=True)
    params = torso.init(jax.random.key(1), obs)
    assert set(params["params"]) == {"Dense_0", "LayerNorm_0", "Dense_1", "LayerNorm_1"}
    x = torso.apply(params, obs)
    assert x.shape == (8, 16) and bool((x >= 0).all())
    # Before the last activation each row has mean 0 and variance 1, so about half its units are positive.
    assert 0.2 < float((x > 0).mean()) < 0.8 and float(jnp.abs(x).max()) < 5
    plain = Torso("mlp", (32, 16), (), "relu").init(jax.random.key(1), obs)
    assert "LayerNorm_0" not in plain["params"]
    assert float(jnp.abs(Torso("mlp", (32, 16), (), "relu").apply(plain, obs)).max()) > 5  # unnormalized: large
    q = QNetwork(3, hidden=(16,), layer_norm=True)
    assert "LayerNorm_0" in q.init(jax.random.key(2), obs)["params"]["Torso_0"]
    ac = ActorCritic(3, continuous=False, hidden=(16,), layer_norm=True)
    ac_params = ac.init(jax.random.key(3), obs)["params"]
    assert "LayerNorm_0" in ac_params["actor_torso"] and "LayerNorm_0" in ac_params["critic_torso"]
