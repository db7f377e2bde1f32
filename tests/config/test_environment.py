"""The env a config names: built by `jaxrl.config.environment`, whose names the schema module kept for one
release with a warning."""

import warnings

import pytest

from jaxrl.config import environment, schema


@pytest.mark.parametrize("name", ["make_env", "env_settings", "env_params"])
def test_the_old_schema_names_warn_and_are_the_new_functions(name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = getattr(schema, name)
    assert old is getattr(environment, name)
    said = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert said == [
        f"jaxrl.config.schema.{name} moved to jaxrl.config.environment.{name}; the old path goes in the next release"
    ]
    with pytest.raises(AttributeError, match="no attribute 'make_envs'"):
        schema.make_envs  # noqa: B018
