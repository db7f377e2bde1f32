"""The code's shape: no import cycles in jaxrl, envs or bench (every import statement counts, at module level
or inside a function), imports between jaxrl's folders point down its floors, and jaxrl/ keeps its roles
in folders."""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


# Each folder and the package name it installs as (pyproject.toml's package-dir).
PACKAGES = {"jaxrl": "jaxrl", "envs": "jaxrl.envs", "bench": "jaxrl.bench"}


def modules(root: Path, packages: dict[str, str]) -> dict[str, Path]:
    """Dotted module name (as installed) -> file, for every .py file under the folders."""
    found = {}
    for folder, name in packages.items():
        for path in sorted((root / folder).rglob("*.py")):
            parts = list(path.relative_to(root / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([name, *parts])] = path
    return found


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules that `name` imports anywhere in its file (an imported name that is a submodule counts
    as that submodule). Its own ancestor packages are left out: importing a submodule imports them anyway."""

    def nearest(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(nearest(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name if path.name == "__init__.py" else name.rpartition(".")[0]
                for _ in range(node.level - 1):
                    package = package.rpartition(".")[0]
                base = f"{package}.{base}".rstrip(".")
            found.update(nearest(f"{base}.{alias.name}") for alias in node.names)
    ancestors = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
    return found - ancestors - {None, name}


def cycles(known: dict[str, Path]) -> list[list[str]]:
    """Groups of modules that import each other (strongly connected components of two or more), sorted."""
    graph = {name: imports_of(name, path, known) for name, path in known.items()}
    order, low, stack, groups = {}, {}, [], []

    def visit(v: str) -> None:  # Tarjan's algorithm
        order[v] = low[v] = len(order)
        stack.append(v)
        for w in graph[v]:
            if w not in order:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], order[w])
        if low[v] == order[v]:
            group = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in order:
            visit(v)
    return sorted(groups)


def test_no_import_cycles_in_jaxrl_envs_or_bench():
    assert cycles(modules(ROOT, PACKAGES)) == []


def test_the_cycle_check_finds_a_cycle_through_a_function_level_import(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from pkg import a\n")  # a package importing its children is no cycle
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("import pkg\nfrom pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .c import g\n")
    (pkg / "sub" / "c.py").write_text("from pkg import a\n")
    (pkg / "d.py").write_text("from pkg.sub import b\n")
    assert cycles(modules(tmp_path, {"pkg": "pkg"})) == [["pkg.a", "pkg.sub.b", "pkg.sub.c"]]


# jaxrl's folders from the lowest floor up (the README's map says what each holds). A module may import its
# own folder, a lower floor, jaxrl.errors and jaxrl.envs; the entry points on top (api, train, eval, rate)
# may import anything. A registry on a low floor finds its built-in entries by module name when first read
# (jaxrl.config.registry): it names where they live and imports none of their code.
FLOORS = ("core", "config", "algos", "scale", "run", "trained")
BOTTOM = ("errors", "_moved")  # jaxrl.errors and jaxrl._moved, floor 0: they import nothing of jaxrl


def floor(module: str, floors: tuple[str, ...] = FLOORS, package: str = "jaxrl") -> int:
    """0 for the bottom modules and envs, 1.. for the folders in `floors`, above them everything else."""
    parts = module.split(".")
    if parts[1:] in ([name] for name in BOTTOM) or parts[:2] == [package, "envs"]:
        return 0
    if len(parts) > 2 and parts[1] in floors:
        return 1 + floors.index(parts[1])
    return len(floors) + 1


def upward_imports(known: dict[str, Path], floors: tuple[str, ...] = FLOORS, package: str = "jaxrl") -> list[str]:
    """Every import of a module on a higher floor than its importer's, as 'importer -> imported', sorted."""
    found = []
    for name, path in known.items():
        if not name.startswith(f"{package}.") or name.startswith(f"{package}.bench"):
            continue
        here = floor(name, floors, package)
        found += [f"{name} -> {m}" for m in imports_of(name, path, known) if floor(m, floors, package) > here]
    return sorted(found)


def test_imports_between_folders_point_down_the_floors():
    assert upward_imports(modules(ROOT, PACKAGES)) == []


def test_the_floor_check_finds_an_upward_import_inside_a_function(tmp_path):
    pkg = tmp_path / "pkg"
    for folder in ("low", "high"):
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("from pkg import api\n")
    (pkg / "api.py").write_text("from pkg.high import h\n")  # the top imports anything
    (pkg / "errors.py").write_text("")
    (pkg / "high" / "h.py").write_text("from pkg.low import l\nfrom pkg import errors\n")
    (pkg / "low" / "l.py").write_text("def f():\n    from pkg.high.h import g\n")  # the one upward import
    (pkg / "low" / "m.py").write_text("from . import l\n")  # its own folder
    known = modules(tmp_path, {"pkg": "pkg"})
    assert upward_imports(known, ("low", "high"), "pkg") == ["pkg.low.l -> pkg.high.h"]


def test_jaxrl_keeps_its_roles_in_folders():
    """At most about ten modules directly in jaxrl/; the device side, algorithms, the host side of a run,
    configuration, scale-out, what is done after training and the commands each have a folder."""
    top = sorted(p.name for p in (ROOT / "jaxrl").glob("*.py"))
    assert len(top) <= 10, top
    for folder in ("core", "algos", "run", "config", "scale", "trained", "cli"):
        assert (ROOT / "jaxrl" / folder / "__init__.py").is_file(), folder


def test_envs_stand_alone_from_the_learner():
    """envs/ simulates and jaxrl/ learns: no env module imports anything of jaxrl outside jaxrl.envs."""
    known = modules(ROOT, PACKAGES)
    outside = {
        name: sorted(m for m in imports_of(name, path, known) if not m.startswith("jaxrl.envs"))
        for name, path in known.items()
        if name.startswith("jaxrl.envs")
    }
    assert {name: found for name, found in outside.items() if found} == {}


def test_the_old_paths_a_user_could_have_are_the_new_modules_and_warn_with_the_version_that_drops_them():
    from jaxrl._moved import MOVED

    script = """
import importlib, sys, warnings
from jaxrl._moved import MOVED
for old, (new, drop) in MOVED.items():
    sys.modules.pop(old, None)  # found again, as a first import finds it
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    assert module is importlib.import_module(new) and sys.modules[old] is module, old
    said = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert f"{old} moved to {new}; the old path goes in jaxrl {drop}" in said, (old, said)
from jaxrl.opponents import headtohead
assert headtohead is sys.modules["jaxrl.trained.headtohead"]
assert headtohead.__spec__.name == "jaxrl.trained.headtohead"  # its own spec: reload and resources work
"""
    assert MOVED, "the list of old paths"
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_every_package_folder_is_installed_by_pip_install_dot():
    """pyproject.toml lists its packages by name: a folder left out of the list is missing from `pip install .`."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "jaxrl").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found <= listed, sorted(found - listed)


# -- jaxrl/ knows envs through the contract (envs/base.py), never by name ------------------------------------

# envs/ modules that are the contract and its tools, not an env: jaxrl/ may import these.
ENV_TOOLS = {"base", "registry", "render", "kernels", "spaces", "checks", "controls", "gymnasium_adapter"}


def env_names_and_imports(root: Path, names: set[str]) -> list[str]:
    """Every comparison of a string in `names` (==, !=, in, not in) and every import of an envs/ module that is
    not in ENV_TOOLS, in the .py files under `root`, as 'file:line what'."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        where = lambda node, what: found.append(f"{path.relative_to(root)}:{node.lineno} {what}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in (node.left, *node.comparators):
                    items = side.elts if isinstance(side, ast.Tuple | ast.List | ast.Set) else [side]
                    for item in items:
                        if isinstance(item, ast.Constant) and item.value in names:
                            where(node, f"compares {item.value!r}")
            elif isinstance(node, ast.ImportFrom) and node.module:
                module = node.module.split(".")
                if module[:2] == ["jaxrl", "envs"] and len(module) > 2 and module[2] not in ENV_TOOLS:
                    where(node, f"imports {node.module}")
                if module == ["jaxrl", "envs"]:
                    for alias in node.names:
                        if (root.parent / "envs" / f"{alias.name}.py").is_file() and alias.name not in ENV_TOOLS:
                            where(node, f"imports jaxrl.envs.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    module = alias.name.split(".")
                    if module[:2] == ["jaxrl", "envs"] and len(module) > 2 and module[2] not in ENV_TOOLS:
                        where(node, f"imports {alias.name}")
    return found


def test_jaxrl_compares_no_env_name_and_imports_no_env_module():
    from jaxrl import envs

    ours = set(envs.registered_names()) - set(_gymnax_ids())
    assert {"snake", "grid", "arena", "arena_open"} <= ours
    assert env_names_and_imports(ROOT / "jaxrl", ours) == []


def _gymnax_ids() -> list[str]:
    import gymnax

    return list(gymnax.registered_envs)


def test_the_env_name_check_finds_a_comparison_and_an_env_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "arena.py").write_text("")
    (tmp_path / "pkg" / "a.py").write_text(
        "def f(env):\n    from jaxrl.envs.arena import Arena\n    return env.name in ('snake', 'x') or 1 == 2\n"
    )
    (tmp_path / "pkg" / "b.py").write_text("from jaxrl.envs import arena, base\nfrom jaxrl.envs.base import hook\n")
    assert env_names_and_imports(tmp_path / "pkg", {"snake", "arena"}) == [
        "a.py:2 imports jaxrl.envs.arena",
        "a.py:3 compares 'snake'",
        "b.py:1 imports jaxrl.envs.arena",
    ]
