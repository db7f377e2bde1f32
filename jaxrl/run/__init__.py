"""The host side of a run: the driver that dispatches compiled chunks, the hooks around each chunk
(metrics, loggers, checkpoints, curriculum, summary), the run directory and the compile cache."""
