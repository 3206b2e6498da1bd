"""No package imports a package above it (DESIGN: commands on top, then the features, then the
model, attention kernels and analysis, then the report/error ground). Read from the source with
ast, lazy imports inside functions included, so a new upward import fails here, not in review."""

import ast
import re
from pathlib import Path

import lmperf

PACKAGE = Path(lmperf.__file__).parent

# Higher number = higher layer; a module may import its own layer or lower ones.
LAYERS = {
    "errors": 0, "regions": 0, "dtypes": 0, "report": 0, "cli_support": 0, "attention_names": 0,
    "attention": 1, "ops": 1,
    "model": 2,
    "analysis": 3,
    "bench": 4, "profile": 4, "pmc": 4, "distributed": 4, "attention_bench": 4, "plan": 4,
    "cli": 5,
}


def _area(module: str) -> str:
    """'lmperf.pmc.infer' -> 'pmc'; 'lmperf.cli' -> 'cli'."""
    return module.split(".")[1]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            found.update(name for name in names if name.startswith("lmperf."))
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("lmperf."))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            argument = node.args[0] if node.args else None
            if isinstance(argument, ast.Constant) and str(argument.value).startswith("lmperf."):
                found.add(argument.value)
    return {name for name in found if _area(name) in LAYERS}


def _modules() -> list[tuple[str, Path]]:
    return [(".".join(("lmperf",) + path.relative_to(PACKAGE).with_suffix("").parts), path)
            for path in sorted(PACKAGE.rglob("*.py")) if path.name != "__init__.py" or path.parent != PACKAGE]


def test_every_area_has_a_layer():
    areas = {_area(module) for module, _ in _modules()}
    assert areas <= set(LAYERS), f"give these a layer: {sorted(areas - set(LAYERS))}"


def test_no_module_imports_a_layer_above_its_own():
    upward = [
        f"{module} (layer {LAYERS[_area(module)]}) imports {name} (layer {LAYERS[_area(name)]})"
        for module, path in _modules() for name in sorted(_imports(path))
        if LAYERS[_area(name)] > LAYERS[_area(module)]
    ]
    assert not upward, "\n".join(upward)


def test_the_checker_sees_lazy_and_dynamic_imports(tmp_path):
    # The commands import lazily inside functions: the checker must see those, or the layering
    # test above would pass by seeing nothing.
    upward = tmp_path / "upward.py"
    upward.write_text("import importlib\n\ndef f():\n    from lmperf.cli import app\n"
                      "    import lmperf.pmc.infer\n    importlib.import_module('lmperf.bench.sweep')\n")
    assert _imports(upward) == {"lmperf.cli", "lmperf.cli.app", "lmperf.pmc.infer", "lmperf.bench.sweep"}
    assert "lmperf.distributed.commands" in _imports(dict(_modules())["lmperf.bench.commands"])


def _readme_layers() -> list[set[str]]:
    """The README's Layout table, top row first: the areas each row's modules column names."""
    text = (PACKAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1].split("\n\n## ", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    return [{name.removesuffix("/").removesuffix(".py") for name in re.findall(r"`([\w/.]+)`", row[2])} for row in rows]


def test_the_readme_module_map_is_the_layering_checked_here():
    readme = _readme_layers()
    by_layer = [{area for area, layer in LAYERS.items() if layer == number} for number in sorted(set(LAYERS.values()), reverse=True)]
    assert readme == by_layer
    assert {_area(module) for module, _ in _modules()} == set().union(*readme)
