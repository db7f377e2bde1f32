"""Battlesnake outside jaxrl: the official engine's recorded games replayed through the env that plays its rules
(`replay`, `cli_log`). That env is found through the registry by its name, ENV, like any other."""

ENV = "arena"  # the registered env that plays the Battlesnake engine's rules


def arena_class():
    """The class of the registered env ENV (its constructor, `advance`, `make_state`, `rulesets`, `causes`)."""
    from jaxrl import envs

    return envs.spec(ENV).factory
