"""Battlesnake outside jaxrl: the official engine's recorded games replayed through the env that plays its rules
(`replay`, `cli_log`), a trained agent served to any engine (`server`: API v1), and jaxrl as the host of games
between HTTP snakes, runs and bots (`host`). That env is found through the registry by its name, ENV, like any
other, and reached through the env contract's hooks."""

ENV = "arena"  # the registered env that plays the Battlesnake engine's rules


def arena_class():
    """The class of the registered env ENV (its constructor, `advance`, `make_state`, `rulesets`, `causes`)."""
    from jaxrl import envs

    return envs.spec(ENV).factory
