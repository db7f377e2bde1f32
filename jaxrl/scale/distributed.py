"""Several hosts: `distributed=true` joins the processes of one run with `jax.distributed.initialize()`.

Every process runs the same program (JAX's multi-controller model): the same command, the same
config, each on its own host's devices. After `initialize`, `jax.devices()` lists the devices of
every process, so `devices=all` builds one mesh across hosts and the chunk program is partitioned
over it as on one host; XLA's collectives (NCCL on GPUs, gloo on CPUs) carry the gradient
all-reduce. Where the processes must take the same host-side decision (is a checkpoint due, was a
stop requested, did a check fail), `gather_text` exchanges it through jax's coordination service.
Only process 0 writes logs, metrics and the summary; every process takes part in a checkpoint
(orbax writes each process's shards, `jaxrl.run.checkpoint`).

The coordinator's address, the process count and this process's index come from the config
(`coordinator_address`, `num_processes`, `process_id`), else from `JAX_COORDINATOR_ADDRESS`,
`JAX_NUM_PROCESSES` and `JAX_PROCESS_ID`, else from the cluster jax detects (SLURM: `SLURM_PROCID`,
`SLURM_NTASKS`, `SLURM_STEP_NODELIST`, `SLURM_JOB_ID`; Open MPI; Kubernetes; Cloud TPU).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

from jaxrl.config.schema import check_distributed
from jaxrl.errors import ConfigError


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return None
    try:
        return int(value)
    except ValueError:
        raise ConfigError(f"{name}={value} is invalid: must be an integer") from None


def initialize(cfg: Any) -> None:
    """Join the run's processes when `cfg.distributed` (once per process); ConfigError (one line) when
    the coordinator, the process count or this process's index cannot be found or the join fails."""
    import jax

    if not cfg.distributed:
        return
    joined = getattr(jax.distributed, "is_initialized", lambda: False)()
    if joined:
        return
    address = cfg.coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
    count = cfg.num_processes if cfg.num_processes is not None else _env_int("JAX_NUM_PROCESSES")
    index = cfg.process_id if cfg.process_id is not None else _env_int("JAX_PROCESS_ID")
    if cfg.device == "cpu" or os.environ.get("JAX_PLATFORMS", "").strip() == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPU processes reduce over gloo
    from jax._src import xla_bridge

    if xla_bridge.backends_are_initialized():
        raise ConfigError(
            "distributed=true must join before jax starts, and it has started in this process (importing envs or"
            " gymnax starts it): run `python -m jaxrl.train ... distributed=true`, or call"
            " jax.distributed.initialize() first thing in the script"
        )
    try:
        jax.distributed.initialize(address, count, index)
    except (ValueError, TypeError, RuntimeError) as e:
        reason = (str(e).strip().splitlines() or [type(e).__name__])[0][:240]
        raise ConfigError(
            f"distributed=true could not join the run ({reason}): set coordinator_address=HOST:PORT,"
            " num_processes and process_id (or JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID),"
            " or start every process under SLURM (srun)"
        ) from None


LAUNCH = ("distributed", "coordinator_address", "num_processes", "process_id", "device")


def join_early(settings: list[str] | dict[str, Any], saved_config: Path | None = None) -> None:
    """Join the run's processes before anything touches jax. Importing gymnax starts jax's backend (its
    frozen_lake module builds a jnp array at import), after which `jax.distributed.initialize` refuses, and
    every env's schema needs gymnax: so the launch settings alone are read first, from the command line's
    overrides or the API's keywords (`settings`), over a resumed run's config.yaml. ConfigError (one line)
    when they are bad or the join fails; unreadable values are left to the full config check.
    """
    import types

    from omegaconf import OmegaConf

    launch: dict[str, Any] = {"distributed": False, "device": "auto"}
    launch.update({k: None for k in LAUNCH[1:4]})
    try:
        if saved_config is not None and saved_config.is_file():
            saved = OmegaConf.to_container(OmegaConf.load(saved_config))
            launch.update({k: saved[k] for k in LAUNCH if isinstance(saved, dict) and k in saved})
        if isinstance(settings, dict):
            launch.update({k: v for k, v in settings.items() if k in LAUNCH})
        else:
            ours = [o.lstrip("+~") for o in settings if o.lstrip("+~").partition("=")[0] in LAUNCH]
            launch.update(OmegaConf.to_container(OmegaConf.from_dotlist(ours)))
    except Exception:  # noqa: BLE001  (a damaged file or value: the full config check names it)
        return
    if launch["distributed"] is not True:
        return
    chosen = types.SimpleNamespace(**launch)
    check_distributed(chosen)
    initialize(chosen)


def process_count() -> int:
    import jax

    return jax.process_count()


def is_primary() -> bool:
    """Whether this process writes the run's logs, metrics and summary (process 0; always, on one host)."""
    import jax

    return jax.process_index() == 0


WAIT_MS = 3_600_000  # how long a process waits for the others at a host-side exchange (a chunk may be slow)
_exchanges = itertools.count()  # every process makes the same exchanges in the same order


def gather_text(text: str) -> list[str]:
    """Every process's `text`, in process order ([text] on one host).

    Host-side decisions travel through jax's coordination service (a key-value store on process 0),
    not through the devices: a device collective would queue behind the chunk computing and hold
    the host loop until it ends.
    """
    if process_count() == 1:
        return [text]
    import jax
    from jax._src import distributed

    client = distributed.global_state.client
    key = f"jaxrl/{next(_exchanges)}"
    client.key_value_set(f"{key}/{jax.process_index()}", "=" + text)
    return [client.blocking_key_value_get(f"{key}/{i}", WAIT_MS)[1:] for i in range(process_count())]


def any_process(flag: bool) -> bool:
    """`flag` of every process or-ed together (the flag itself on one host): a host-side decision all take."""
    return any(t == "1" for t in gather_text("1" if flag else "0"))


def broadcast_text(text: str) -> str:
    """Process 0's `text` on every process (the text itself on one host), e.g. a run directory named by time."""
    return gather_text(text)[0]


def agree_error(job: Any) -> None:
    """Run `job` (which may raise ConfigError); when it fails on any process, every process raises a
    ConfigError with the first failing process's line, instead of the others waiting at the next
    collective. On one host: `job()` itself."""
    if process_count() == 1:
        job()
        return
    try:
        job()
        line = ""
    except ConfigError as e:
        line = str(e) or type(e).__name__
    lines = gather_text(line)
    if any(lines):
        import jax

        first = next(i for i, text in enumerate(lines) if text)
        where = "" if first == jax.process_index() else f"process {first}: "
        raise ConfigError(f"{where}{lines[first]}")


def barrier(name: str) -> None:
    """Wait until every process gets here (nothing on one host); `name` says where, for a reader."""
    gather_text(name)
