"""What a run is: the typed config (`schema`), composing it from YAML and overrides (`compose`), the one
validation pass (`validate`), sweeps of settings (`sweep`), curricula over env settings (`curriculum`), and
the registries that `algo=` and `logger=` name (`registry`)."""
