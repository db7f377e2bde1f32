"""Learning algorithms, one module each; every module here registers itself (see `jaxrl.algos.base`)."""
