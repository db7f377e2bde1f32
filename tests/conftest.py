import os
import shutil
import tempfile

import pytest

os.environ.setdefault("JAX_PLATFORMS", "cpu")

# One persistent compilation cache for the whole test run: every test process (xdist workers and the
# subprocesses tests start inherit the environment) loads what another already compiled. A cache folder
# set from outside is used and kept (.ci/run shares one between its two tiers); otherwise a temporary
# one is made and removed at the end. Every program is cached, however quick its compile.
_OWN_CACHE = None
if "JAX_COMPILATION_CACHE_DIR" not in os.environ:
    _OWN_CACHE = tempfile.mkdtemp(prefix="jaxrl-test-cache-")
    os.environ["JAX_COMPILATION_CACHE_DIR"] = _OWN_CACHE
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0")
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")

# Most tests run programs for a few steps, so XLA's compile is most of their time: they compile without
# XLA's backend optimizations (jax's own switch; subprocesses inherit it), which took the default tier
# from 7:01 to 5:01 on the 2-core AMD EPYC. Tests marked `optimized` compile as users do (the fixture
# below): the learning checks, whose bars were measured so and whose long runs optimized code speeds up,
# and comparisons that hold to the rounding of optimized code. docs/tests.md has the figures.
os.environ.setdefault("JAX_DISABLE_MOST_OPTIMIZATIONS", "1")

# Compiled so, they also leave out XLA:CPU's fusion emitters (XLA's older kernel emitter instead), which
# halves the compile of a training program (docs/tests.md). Users' programs keep them: without them
# optimized code ran up to 2x slower. XLA_FLAGS reaches the processes tests start; in this process,
# `_emitters_follow_the_switch` gives a program compiled with XLA's optimizations its emitters back.
NO_FUSION_EMITTERS = "--xla_cpu_use_fusion_emitters=false"


def _emitters_follow_the_switch() -> bool:
    """Make this process's compiles with XLA's optimizations on use the fusion emitters whatever XLA_FLAGS
    says (a per-program override, as `Lowered.compile(compiler_options)` gives). False where jax's
    internals are not as expected: then XLA_FLAGS is left alone."""
    try:
        from jax._src import compiler
    except ImportError:
        return False
    original = getattr(compiler, "get_compile_options", None)
    if original is None:
        return False

    def get_compile_options(*args, **kwargs):
        import jax

        if not jax.config.read("jax_disable_most_optimizations"):
            overrides = dict(kwargs.get("env_options_overrides") or {})
            overrides.setdefault("xla_cpu_use_fusion_emitters", True)
            kwargs["env_options_overrides"] = overrides
        return original(*args, **kwargs)

    compiler.get_compile_options = get_compile_options
    return True


if os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] == "1" and _emitters_follow_the_switch():
    flags = os.environ.get("XLA_FLAGS", "")
    if NO_FUSION_EMITTERS not in flags.split():
        os.environ["XLA_FLAGS"] = f"{flags} {NO_FUSION_EMITTERS}".strip()


@pytest.fixture(autouse=True)
def _optimized_compiles_as_users_do(request, monkeypatch):
    """For a test marked `optimized`: XLA's optimizations and fusion emitters on, here and in the processes
    it starts, and no program compiled without them reused (nor one compiled with them left for the next
    test)."""
    if request.node.get_closest_marker("optimized") is None:
        yield
        return
    import jax

    monkeypatch.setenv("JAX_DISABLE_MOST_OPTIMIZATIONS", "0")
    if "XLA_FLAGS" in os.environ:
        kept = [f for f in os.environ["XLA_FLAGS"].split() if f != NO_FUSION_EMITTERS]
        monkeypatch.setenv("XLA_FLAGS", " ".join(kept))
    before = jax.config.read("jax_disable_most_optimizations")
    jax.config.update("jax_disable_most_optimizations", False)
    jax.clear_caches()
    try:
        yield
    finally:
        jax.clear_caches()
        jax.config.update("jax_disable_most_optimizations", before)


def pytest_unconfigure(config):
    if _OWN_CACHE is not None and not hasattr(config, "workerinput"):
        shutil.rmtree(_OWN_CACHE, ignore_errors=True)


# Tests that moved to the slow tier (`-m slow`, run by .ci/run) to keep the README's test command within
# 10 minutes on the 2-core CPU. Each is the longest guard of its promise (subprocess kill-and-resume runs,
# forced multi-device and multi-process runs, notebooks, learning checks); the default tier keeps a shorter
# guard of the same mechanism beside it where one exists. A listed id that no longer exists fails the run.
SLOW_TIER = {
    # 4 forced CPU devices in a subprocess (56 s); the env-group and mesh unit tests stay in the default tier
    "tests/scale/test_mesh.py::test_four_devices_train_like_one_device_with_four_env_groups",
    # two jax processes joined by jax.distributed (45 s); the settings checks stay
    "tests/scale/test_distributed.py::test_two_processes_train_like_one_process_with_their_devices",
    "tests/scale/test_distributed.py::test_a_distributed_checkpoint_resumes_on_one_device_and_back",
    # kill-and-resume variants; snake-ppo and the SIGKILL/mid-write PPO cases stay in the default tier
    "tests/run/test_checkpoint.py::test_resume_of_snake_grid_and_multi_agent_runs_is_bit_identical[snake-gru-ppo]",
    "tests/run/test_checkpoint.py::test_resume_in_the_middle_of_a_curriculum_is_bit_identical",
    "tests/run/test_checkpoint.py::test_an_allowed_override_takes_effect_on_resume",
    "tests/run/test_checkpoint.py::test_resume_with_a_larger_total_rebuilds_the_schedules",
    # determinism across processes and chunkings (the in-process vmap and chunk checks stay)
    "tests/run/test_reliability.py::test_the_same_config_and_seed_give_the_same_bits_in_two_processes",
    "tests/run/test_reliability.py::test_the_number_of_chunks_does_not_change_the_result[dqn]",
    "tests/run/test_reliability.py::test_an_injected_nan_stops_the_run_keeps_the_last_good_checkpoint_and_resume_works[dqn]",
    "tests/run/test_reliability.py::test_the_non_finite_exit_code_and_line_from_the_command_line",
    "tests/run/test_reliability.py::test_eval_keeps_the_previous_eval_json_and_gif_and_says_so",
    # a sweep member equals a separate run (the one-trace and naming sweep tests stay)
    "tests/scale/test_sweep.py::test_each_member_trains_like_a_separate_run_with_its_settings",
    # end-to-end runs whose pieces have unit tests in the default tier
    "tests/algos/test_recurrent.py::test_evaluation_writes_a_replay_for_a_recurrent_snake",
    "tests/test_api.py::test_replay_writes_the_best_episode_gif",
    "tests/algos/test_pqn.py::test_pqn_on_several_agents_trains_evaluates_and_resumes",
    "tests/algos/test_a2c.py::test_a2c_on_several_agents_trains_evaluates_and_resumes",
    "tests/envs/test_registry.py::test_a_script_that_registers_its_env_trains_it_from_the_command_line",
    "tests/envs/test_user_env.py::test_a_users_env_is_trained_rated_played_and_met_head_to_head_by_the_arenas_commands",
    # issue 82: games between two served agents (a stdlib snake's hosted games and their replay stay), and the
    # shelf's published rating table (400 games a pair; the shelf's eval and rating mechanisms stay)
    "tests/battlesnake/test_host.py::test_hosted_games_between_served_agents_replay_with_no_divergent_turn",
    # a GRU run trained to be served in 2 seats (the server's games per seat are told apart in the default tier)
    "tests/battlesnake/test_host.py::test_a_served_recurrent_run_keeps_one_memory_for_each_seat_it_holds",
    "tests/trained/test_shelf.py::test_the_published_rating_table_of_the_shelf_is_reproduced",
    # second variants of a mechanism whose first variant stays in the default tier
    "tests/run/test_reliability.py::test_training_passes_the_key_reuse_checker[snake-dqn]",
    "tests/envs/test_grid.py::test_several_agents_per_world_train_one_shared_network_and_evaluate[dqn]",
    "tests/algos/test_recurrent.py::test_several_agents_per_world_keep_one_carry_each",
    "tests/algos/test_recurrent.py::test_one_trace_serves_every_recurrent_chunk",
    "tests/scale/test_sweep.py::test_sweep_outputs_name_every_member",
    "tests/core/test_precision.py::test_precision_is_written_to_config_yaml_and_a_resumed_run_keeps_it",
    "tests/run/test_reliability.py::test_an_apple_reward_that_overflows_the_return_reaches_the_guard",
    # self-play with the other learners and bf16 variants (PPO's self-play tests and the first bf16 variants stay)
    "tests/algos/test_selfplay.py::test_selfplay_runs_with_every_learner_and_several_seeds[dqn]",
    "tests/algos/test_selfplay.py::test_selfplay_runs_with_every_learner_and_several_seeds[pqn]",
    "tests/core/test_precision.py::test_bf16_update_keeps_parameters_and_optimizer_state_float32[ppo-gaussian]",
    "tests/core/test_precision.py::test_bf16_network_computes_in_bfloat16_from_float32_parameters_forward_and_backward[q-network]",
    # the SB3 peer's process hygiene (the bench's peer, not the library)
    "tests/bench/test_sb3_peer.py::test_subproc_workers_are_gone_after_a_run",
    # moved by issue 48 to bring the README's command within its budget; each keeps a default-tier guard:
    # head-to-head games between trained runs need four trained arena and grid runs (37 s of setup); the
    # bot-against-bot games, the rating fit and the refusal of vs= with opponents= stay
    "tests/trained/test_headtohead.py::test_a_policy_against_itself_scores_half_with_the_seats_rotated",
    "tests/trained/test_headtohead.py::test_eval_vs_plays_each_opponent_and_writes_the_table_and_a_gif",
    "tests/trained/test_headtohead.py::test_run_play_against_is_the_same_games",
    "tests/trained/test_headtohead.py::test_bad_vs_is_one_line",
    "tests/trained/test_headtohead.py::test_ratings_are_reproducible_and_agree_across_seeds_within_their_errors",
    "tests/trained/test_headtohead.py::test_bad_rate_input_is_one_line",
    # Snake's resume (22 s); the CartPole PPO SIGKILL, mid-write and Ctrl-C resumes stay
    "tests/run/test_checkpoint.py::test_resume_of_snake_grid_and_multi_agent_runs_is_bit_identical[snake-ppo]",
    # self-play with two seeds and on the grid; PPO's one-seed self-play tests in the arena stay
    "tests/algos/test_selfplay.py::test_selfplay_runs_with_every_learner_and_several_seeds[two-seeds]",
    "tests/algos/test_selfplay.py::test_selfplay_trains_the_grid_against_its_own_collectors",
    # vmap over seeds; vmap over envs and the number of chunks stay
    "tests/run/test_reliability.py::test_vmap_over_seeds_equals_separate_runs[ppo]",
    # the grid's several agents per world; the open arena's every-snake-a-stream PPO run stays
    "tests/envs/test_grid.py::test_several_agents_per_world_train_one_shared_network_and_evaluate[ppo]",
    # second variants: bf16 from the CLI and on DQN and the shared CNN (PPO's and the actor-critic's stay);
    # the GRU's 4-step sequence pass (its 2-step one and the LSTM's 8-step one stay)
    "tests/core/test_precision.py::test_a_bf16_dqn_run_from_the_command_line_ends_with_finite_figures",
    "tests/core/test_precision.py::test_bf16_update_keeps_parameters_and_optimizer_state_float32[dqn]",
    "tests/core/test_precision.py::test_bf16_network_computes_in_bfloat16_from_float32_parameters_forward_and_backward[shared-cnn]",
    "tests/algos/test_recurrent.py::test_sequence_pass_from_stored_carries_reproduces_the_rollout[gru-4]",
    # more end-to-end runs and peers' runs beside a default-tier guard: recurrent opponents and the pool's
    # snapshots in self-play (the fixed-opponent self-play run stays), a sweep's resume (the one-program and
    # every-setting-traces sweep tests stay), a gymnax id other than CartPole from the CLI (CartPole's runs
    # are gymnax's), the PureJaxRL-shaped continuous PPO's run and SB3's score curve (their unit tests stay)
    "tests/algos/test_selfplay.py::test_recurrent_opponents_carry_their_own_state_and_start_each_game_fresh",
    "tests/algos/test_selfplay.py::test_the_pool_holds_only_snapshots_taken_after_start_never_the_initial_weights",
    "tests/scale/test_sweep.py::test_a_sweep_resumes_with_its_members",
    "tests/test_cli.py::test_gymnax_id_runs",
    "tests/bench/test_purejaxrl_ppo_continuous_ref.py::test_a_short_run_gives_finite_figures_and_the_latest_episodes_return",
    "tests/bench/test_sb3_peer.py::test_the_score_curve_has_a_point_per_rollout_inside_the_cap",
    # learning checks
    "tests/envs/test_gymnasium.py::test_sb3_ppo_learns_on_the_adapter",
    "tests/bench/test_purejaxrl_dqn_ref.py::test_an_odd_env_count_learns_on_purejaxrls_modulo_schedule",
    "tests/algos/test_ppo.py::test_cartpole_learns_within_5e5_steps",
    "tests/algos/test_ppo.py::test_snake_beats_random_and_seeds_are_independent",
    "tests/algos/test_dqn.py::test_dqn_on_snake_beats_random",
    "tests/envs/test_grid.py::test_dqn_with_the_tuned_grid_config_beats_random",
    "tests/algos/test_snake_default.py::test_the_default_snake_run_learns_as_its_draws_did",
    "tests/bench/test_bench.py::test_the_purejaxrl_shaped_reference_learns_cartpole_on_a_small_budget",
    # moved on 2026-12-07 to bring the README's command back within its budget (docs/tests.md), each beside a
    # default-tier guard: a shelf agent in eval's opponents and a rating (the shelf agent driving the bots and
    # playing head to head stays); a project folder with its own envs/ and bench/ (the CLI's own runs stay); a
    # registered env's tuned defaults through the API (the registry's make and refusals stay); the arena fixtures'
    # resumes through their migrations (their loads and evaluations, and DQN Snake's resume, stay); a frozen agent
    # in the league (the league's draws and its refusals stay)
    "tests/trained/test_shelf.py::test_a_shelf_agent_as_eval_opponents_and_in_a_rating",
    "tests/test_cli.py::test_a_project_with_its_own_envs_and_bench_packages_trains_from_its_folder",
    "tests/envs/test_registry.py::test_registered_env_trains_from_the_api_with_its_settings_and_tuned_defaults",
    "tests/run/test_formats.py::test_a_fixture_resumes_through_its_migrations_keeping_the_old_checkpoint"
    "[format-4/arena-selfplay]",
    "tests/run/test_formats.py::test_a_fixture_resumes_through_its_migrations_keeping_the_old_checkpoint"
    "[format-3/arena-selfplay-v2]",
    "tests/algos/test_selfplay.py::test_a_frozen_agent_in_the_league_plays_its_own_moves_on_its_own_view",
}


def _tryfirst(hook):
    return pytest.hookimpl(tryfirst=True)(hook)  # before `-m` deselects


@_tryfirst
def pytest_collection_modifyitems(config, items):
    found = set()
    for item in items:
        for name in (item.nodeid, item.nodeid.split("[")[0]):
            if name in SLOW_TIER:
                item.add_marker(pytest.mark.slow)
                found.add(name)
    _longest_files_first(items)
    whole_run = not config.args or all(a.rstrip("/") == "tests" for a in config.args)
    missing = SLOW_TIER - found
    if whole_run and missing:
        raise pytest.UsageError(f"tests/conftest.py SLOW_TIER names tests that do not exist: {sorted(missing)}")


# The files that take longest, longest first (seconds of the slow tier on a 2-core AMD EPYC Genoa, 2026-11-29).
# xdist's --dist loadfile hands out files in the order of the collection; by default it orders them by their
# number of tests, which left the two longest single-test files (the bench's smoke run, Colab's stack) for
# the end of the slow tier, one worker busy with them while the other sat idle. The rest keep xdist's rule
# (most tests first). A stale figure here only changes the order.
LONGEST_FILES = {
    "tests/algos/test_snake_default.py": 132,
    "tests/algos/test_parity.py": 435,
    "tests/bench/test_bench_suite.py": 340,
    "tests/test_colab_stack.py": 310,
    "tests/run/test_checkpoint.py": 300,
    "tests/trained/test_shelf.py": 230,
    "tests/scale/test_distributed.py": 180,
    "tests/scale/test_mesh.py": 165,
    "tests/run/test_reliability.py": 150,
    "tests/trained/test_headtohead.py": 130,
}


def pytest_configure(config):
    if getattr(config.option, "loadscopereorder", None):
        config.option.loadscopereorder = False  # the collection's order below is the one xdist follows


def _longest_files_first(items):
    """Sort `items` (stably) by file: LONGEST_FILES first, longest first, then the files with most tests."""
    from collections import Counter

    file_of = lambda item: item.nodeid.split("::")[0]
    count = Counter(map(file_of, items))
    items.sort(key=lambda item: (-LONGEST_FILES.get(file_of(item), 0), -count[file_of(item)]))


# Tests write nothing into the source tree: the controller process notes `git status` (with a hash of
# each listed file) when the session starts and fails the session if it differs at the end.
_TREE_BEFORE = None


def _tree_state():
    """{path: (git's status code, content hash)} of every changed or untracked file; None outside a checkout."""
    import hashlib
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    try:
        proc = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=all", "-z"],
            check=False,
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode:
        return None
    state = {}
    for entry in filter(None, proc.stdout.split("\0")):
        code, path = entry[:2], entry[3:]
        file = root / path
        digest = hashlib.sha1(file.read_bytes()).hexdigest() if file.is_file() else ""
        state[path] = (code, digest)
    return state


def pytest_sessionstart(session):
    global _TREE_BEFORE
    if not hasattr(session.config, "workerinput"):
        _TREE_BEFORE = _tree_state()


def pytest_sessionfinish(session, exitstatus):
    if _TREE_BEFORE is None or hasattr(session.config, "workerinput"):
        return
    after = _tree_state() or {}
    changed = sorted(p for p in set(_TREE_BEFORE) | set(after) if _TREE_BEFORE.get(p) != after.get(p))
    if changed:
        print(f"\nerror: the test run changed the source tree (tests must write to tmp_path): {changed[:20]}")
        session.exitstatus = 1
