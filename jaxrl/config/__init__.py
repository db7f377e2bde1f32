"""What a run is: the typed config (`schema`), composing it from YAML and overrides (`compose`), and
curricula over env settings (`curriculum`)."""
