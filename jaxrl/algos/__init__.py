"""Learning algorithms, one module each; every module here registers itself (see `jaxrl.algos.base`).
`selfplay` wraps any of them to learn against a pool of its past policies (`opponents=selfplay`)."""
