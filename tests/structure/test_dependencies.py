"""The dependency lists say what is used.

- requirements.txt pins exactly what app.py and the auditor package import (found with ``ast``,
  the standard library and the project's own modules left out), plus pins of packages those
  require (llvmlite for numba, gradio_client for gradio), each inside the range its parent asks;
- pyproject.toml's [project] dependencies are the package's imports, its `app` extra what app.py
  adds, all as ranges that admit the pinned versions;
- an optional feature's module (OPTIONAL: auditor/semantic.py) imports only what its extra lists;
  the test command installs the extras through requirements-dev.txt, which pins them;
- requirements-dev.txt holds exactly the further packages tests/, bench/ and scripts/ import, and
  the extras' packages (with pins of what those require);
- every package-data glob matches a file, and scripts/setup.sh resolves the dependencies.
"""
from __future__ import annotations

import ast
import functools
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from conftest import REPO

tomllib = pytest.importorskip("tomllib")     # Python 3.11+

OWN = {"auditor", "ui"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def python_files(d: Path) -> list[Path]:
    """The .py files of a dev folder: tests/ with its behaviour folders, bench/ and scripts/ flat."""
    return sorted(d.rglob("*.py") if d.name == "tests" else d.glob("*.py"))


def local_modules(*dirs: Path) -> set[str]:
    return {p.stem for d in dirs for p in python_files(d)}


def imported(files) -> dict[str, set[str]]:
    """Top-level names of third-party modules the files import (anywhere in them) -> importing files."""
    out: dict[str, set[str]] = {}
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"), str(f))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in OWN:
                    out.setdefault(top, set()).add(str(f.relative_to(REPO)))
    return out


@functools.cache
def providers() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def distribution(module: str) -> str:
    """The (normalised) distribution that provides an import name; the name itself when not installed."""
    dists = providers().get(module) or [module]
    return norm(dists[0])


def distributions(modules) -> set[str]:
    return {distribution(m) for m in modules}


def pins(name: str) -> dict[str, str]:
    """name -> version of every requirement line in REPO/name (`-r` includes and comments skipped)."""
    out = {}
    for line in (REPO / name).read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if not line or line.startswith("-"):
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[A-Za-z0-9._,-]+\])?==([0-9][^\s;]*)", line)  # extras allowed
        assert match, f"{name}: {line!r} is not pinned as name==version"
        out[norm(match[1])] = match[2]
    return out


PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
OPTIONAL = {"semantic": ["auditor/semantic.py", "auditor/semantic_model.py"],          # extra -> the modules that need it
            # the Ray engine, and the shard reader it uses for URIs pyarrow has no filesystem for (fsspec)
            "ray": sorted(str(p.relative_to(REPO)) for p in (REPO / "auditor" / "distributed").glob("*.py"))
            + ["auditor/io/shards.py"]}
PACKAGE = imported(sorted(p for p in (REPO / "auditor").rglob("*.py")
                          if str(p.relative_to(REPO)) not in {f for fs in OPTIONAL.values() for f in fs}))
EXTRAS = {name: imported([REPO / f for f in files]) for name, files in OPTIONAL.items()}
APP = imported([REPO / "app.py", *sorted((REPO / "ui").glob("*.py"))])   # the Space: app.py and its ui package
DEV_DIRS = [REPO / "tests", REPO / "bench", REPO / "scripts"]
DEV = {m: f for m, f in imported([p for d in DEV_DIRS for p in python_files(d)]).items()
       if m not in local_modules(*DEV_DIRS)}


def ranges(requirements: list[str]) -> dict[str, Requirement]:
    out = {}
    for text in requirements:
        req = Requirement(text)
        assert req.specifier, f"pyproject.toml: {text!r} has no version range"
        assert not any(s.operator in ("==", "===") for s in req.specifier), f"pyproject.toml: {text!r} is a pin, not a range"
        out[norm(req.name)] = req
    return out


def test_the_scan_sees_the_imports_it_should():
    """Guard against an import scan that finds nothing (and so agrees with anything)."""
    assert {"numpy", "scipy", "pyarrow"} <= set(PACKAGE)
    assert {"gradio", "numpy"} <= set(APP)
    assert {"pytest", "datasketch"} <= set(DEV)
    assert not {"auditor", "json", "conftest", "ground_truth", "run"} & (set(PACKAGE) | set(APP) | set(DEV))


def test_pyproject_dependencies_are_what_the_package_imports():
    declared = ranges(PYPROJECT["project"]["dependencies"])
    assert set(declared) == distributions(PACKAGE), (
        f"imported by auditor/ but not declared: {sorted(distributions(PACKAGE) - set(declared))}; "
        f"declared but not imported: {sorted(set(declared) - distributions(PACKAGE))}")


def test_app_extra_is_what_the_app_adds():
    extra = ranges(PYPROJECT["project"]["optional-dependencies"]["app"])
    wanted = distributions(APP) - distributions(PACKAGE)
    assert set(extra) == wanted, f"app.py adds {sorted(wanted)}, the app extra lists {sorted(extra)}"
    assert set(PYPROJECT["project"]["optional-dependencies"]) == {"app", *OPTIONAL}


@pytest.mark.parametrize("name", sorted(OPTIONAL))
def test_optional_extras_are_what_their_modules_add(name):
    extra = ranges(PYPROJECT["project"]["optional-dependencies"][name])
    wanted = distributions(EXTRAS[name]) - distributions(PACKAGE)
    assert set(extra) == wanted, f"{OPTIONAL[name]} add {sorted(wanted)}, the {name} extra lists {sorted(extra)}"
    pinned = pins("requirements-dev.txt")
    for dist, req in extra.items():
        assert dist in pinned, f"the {name} extra's {dist} is not pinned in requirements-dev.txt"
        assert Version(pinned[dist]) in req.specifier, f"requirements-dev.txt {dist}=={pinned[dist]} outside {req}"


def test_requirements_pin_the_runtime_imports_and_what_they_require():
    pinned = pins("requirements.txt")
    runtime = distributions(PACKAGE) | distributions(APP)
    assert runtime <= set(pinned), f"imported but not pinned: {sorted(runtime - set(pinned))}"
    for name in set(pinned) - runtime:
        # anything else pinned must be a requirement of a package we import, within its range
        parents = [(parent, req) for parent in sorted(runtime) for text in metadata.requires(parent) or []
                   for req in [Requirement(text)] if norm(req.name) == name and not req.marker]
        assert parents, f"requirements.txt pins {name}, which neither app.py nor auditor/ imports nor needs"
        for parent, req in parents:
            assert Version(pinned[name]) in req.specifier, f"{name}=={pinned[name]} outside {parent}'s {req}"


def test_pins_fall_in_the_pyproject_ranges():
    pinned = pins("requirements.txt")
    declared = {**ranges(PYPROJECT["project"]["dependencies"]),
                **ranges(PYPROJECT["project"]["optional-dependencies"]["app"])}
    for name, req in declared.items():
        assert name in pinned, f"pyproject.toml declares {req}, requirements.txt does not pin it"
        assert Version(pinned[name]) in req.specifier, f"requirements.txt {name}=={pinned[name]} outside {req}"


def test_installed_versions_are_the_pinned_ones():
    for name, version in {**pins("requirements.txt"), **pins("requirements-dev.txt")}.items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue        # e.g. a benchmark-only tool not installed here; setup.sh installs it
        assert Version(installed) == Version(version), f"{name}: {installed} installed, {version} pinned"


def test_dev_requirements_are_what_tests_and_benchmarks_add():
    runtime_pins = set(pins("requirements.txt"))
    dev_pins = set(pins("requirements-dev.txt"))
    extras = set().union(*(distributions(m) for m in EXTRAS.values())) - runtime_pins
    needed = (distributions(DEV) | extras) - runtime_pins
    assert needed <= dev_pins, f"imported by tests/bench/scripts or an extra but not pinned: {sorted(needed - dev_pins)}"
    for name in dev_pins - needed:
        # anything else pinned must be a requirement of an extra's package, within its range
        parents = [(parent, req) for parent in sorted(extras) for text in metadata.requires(parent) or []
                   for req in [Requirement(text)] if norm(req.name) == name and not req.marker]
        assert parents, f"requirements-dev.txt pins {name}, which nothing imports or needs"
    runtime = distributions(PACKAGE) | distributions(APP)
    assert not dev_pins & runtime, f"app.py or auditor/ imports a dev-only package: {sorted(dev_pins & runtime)}"
    assert (REPO / "requirements-dev.txt").read_text(encoding="utf-8").splitlines()[0] == "-r requirements.txt"


def test_package_data_globs_match_files():
    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    assert package_data
    for package, patterns in package_data.items():
        root = REPO / package.replace(".", "/")
        for pattern in patterns:
            assert list(root.glob(pattern)), f"package-data {package}: {pattern!r} matches no file under {package}/"


def test_setup_resolves_dependencies_within_the_pins():
    """setup.sh installs the project with its dependencies resolved (not --no-deps), the pins as constraints."""
    script = (REPO / "scripts" / "setup.sh").read_text(encoding="utf-8")
    install = [line for line in script.splitlines() if "pip install" in line and " -e " in line]
    assert install, "setup.sh does not install the project"
    assert all("--no-deps" not in line and "-c requirements.txt" in line and ".[app,ray]" in line
               for line in install), install
