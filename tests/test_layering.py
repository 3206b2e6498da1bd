"""lmperf's layering, read from the source with ast: no package imports a layer above its own, no
feature imports another feature, and no two modules import each other, directly or through
others. Relative, lazy (inside functions) and computed imports (`importlib.import_module` of a
string or of an f-string over a loop's constant names, and any string naming an lmperf module)
all count, so a new upward import fails here, not in review. tests/README.md lists the mutations
each check was shown to catch."""

import ast
import functools
import re
from pathlib import Path

import lmperf

PACKAGE = Path(lmperf.__file__).parent

# Higher number = higher layer; a module may import its own layer or lower ones.
LAYERS = {
    "errors": 0,
    "regions": 0,
    "dtypes": 0,
    "report": 0,
    "cli_support": 0,
    "attention_names": 0,
    "attention": 1,
    "ops": 1,
    "model": 2,
    "analysis": 3,
    "run": 4,
    "bench": 5,
    "profile": 5,
    "pmc": 5,
    "distributed": 5,
    "attention_bench": 5,
    "plan": 5,
    "cli": 6,
}
FEATURES = 5
MODULE_NAME = re.compile(r"^lmperf(\.\w+)+$")


def _area(module: str) -> str:
    """'lmperf.pmc.infer' -> 'pmc'; 'lmperf.cli' -> 'cli'."""
    return module.split(".")[1]


def _loop_values(tree: ast.AST) -> dict[str, list[str]]:
    """name -> the string constants a `for name in (...)` loop, or an assignment, gives it."""
    values: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        target, source = None, None
        if isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            target, source = node.target.id, node.iter
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target, source = node.targets[0].id, node.value
        if isinstance(source, ast.Name) and source.id in values:
            values[target] = values[source.id]
        elif isinstance(source, (ast.Tuple, ast.List)):
            strings = [e.value for e in source.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if strings:
                values[target] = strings
    return values


def _expand(node: ast.JoinedStr, values: dict[str, list[str]]) -> list[str]:
    """The strings an f-string can be, where each placeholder is a name with known values."""
    texts = [""]
    for part in node.values:
        if isinstance(part, ast.Constant):
            texts = [t + str(part.value) for t in texts]
        elif isinstance(part.value, ast.Name) and part.value.id in values:
            texts = [t + v for t in texts for v in values[part.value.id]]
        else:
            return []
    return texts


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    """The absolute name of a relative import's module, seen from `module`."""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _type_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under `if TYPE_CHECKING:`, imports no code runs."""
    guarded = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
    ]
    return {id(inner) for node in guarded for stmt in node.body for inner in ast.walk(stmt)}


@functools.cache
def _import_nodes(source: str) -> tuple[tuple[tuple[ast.AST, bool], ...], dict[str, list[str]]]:
    """The nodes of `source` that `_imports` reads (imports, strings, f-strings), in walk order, each
    with whether it is under `if TYPE_CHECKING:`, and its loop values. Keyed by the text itself: the
    checks here read every source file a dozen times, and walking the trees is most of their time."""
    tree = ast.parse(source)
    type_only = _type_only(tree)
    nodes = tuple(
        (node, id(node) in type_only)
        for node in ast.walk(tree)
        if isinstance(node, (ast.ImportFrom, ast.Import, ast.Constant, ast.JoinedStr))
    )
    return nodes, _loop_values(tree)


def _imports(
    path: Path, module: str = "lmperf.x", modules: frozenset = frozenset(), runtime_only: bool = False
) -> set[str]:
    """The lmperf names `path` imports; `from P import m` names P.m alone where P.m is one of
    `modules` (P's own code is what m's import runs, so it adds no edge of its own). With
    `runtime_only`, imports under `if TYPE_CHECKING:` are left out."""
    nodes, values = _import_nodes(path.read_text(encoding="utf-8"))
    found = set()
    for node, type_only in nodes:
        if runtime_only and type_only:
            continue
        if isinstance(node, ast.ImportFrom):
            source = node.module if node.level == 0 else _absolute(module, node, path.name == "__init__.py")
            if source:
                named = [f"{source}.{alias.name}" for alias in node.names]
                found.update(named if all(name in modules for name in named) else [source] + named)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and MODULE_NAME.match(node.value):
            found.add(node.value)  # importlib.import_module("lmperf.x.y"), a table of module names
        elif isinstance(node, ast.JoinedStr):
            found.update(text for text in _expand(node, values) if MODULE_NAME.match(text))
    return {name for name in found if name.startswith("lmperf.") and _area(name) in LAYERS}


def _modules() -> dict[str, Path]:
    return {
        ".".join(("lmperf",) + path.relative_to(PACKAGE).with_suffix("").parts).removesuffix(".__init__"): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "__init__.py" or path.parent != PACKAGE
    }


def _graph(modules: dict[str, Path], runtime_only: bool = False) -> dict[str, set[str]]:
    """module -> the lmperf modules it imports (a name imported from a module counts as the module)."""
    graph = {}
    for module, path in modules.items():
        targets = set()
        for name in _imports(path, module, frozenset(modules), runtime_only):
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), or a module importing itself."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _violations(modules: dict[str, Path]) -> list[str]:
    """Every upward import, every import between two features, every import cycle."""
    graph = _graph(modules)
    problems = []
    for module, targets in graph.items():
        for target in sorted(targets):
            own, other = LAYERS[_area(module)], LAYERS[_area(target)]
            if other > own:
                problems.append(f"upward: {module} (layer {own}) imports {target} (layer {other})")
            elif own == other == FEATURES and _area(module) != _area(target):
                problems.append(f"feature to feature: {module} imports {target}")
    # A type annotation may name a module that imports this one: no code runs in a circle
    problems += [f"cycle: {' <-> '.join(component)}" for component in _cycles(_graph(modules, runtime_only=True))]
    return problems


def test_every_area_has_a_layer():
    areas = {_area(module) for module in _modules()}
    assert areas <= set(LAYERS), f"give these a layer: {sorted(areas - set(LAYERS))}"


def test_lmperf_keeps_its_layering():
    assert not _violations(_modules()), "\n".join(_violations(_modules()))


def _fake_package(tmp_path: Path, files: dict[str, str]) -> dict[str, Path]:
    """A copy of the module table with `files` (module name -> source) written under tmp_path."""
    modules = dict(_modules())
    for module, source in files.items():
        path = tmp_path.joinpath(*module.split(".")[1:]).with_suffix(".py")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
        modules[module] = path
    return modules


def test_the_checker_sees_lazy_relative_and_computed_imports(tmp_path):
    upward = tmp_path / "upward.py"
    upward.write_text(
        "import importlib\n\ndef f():\n    from lmperf.cli import app\n"
        "    import lmperf.pmc.infer\n    importlib.import_module('lmperf.bench.run')\n"
    )
    assert {"lmperf.cli", "lmperf.pmc.infer", "lmperf.bench.run"} <= _imports(upward)
    relative = tmp_path / "relative.py"
    relative.write_text("from ..cli import app\nfrom . import tables\n")
    assert {"lmperf.cli", "lmperf.cli.app", "lmperf.report.tables"} <= _imports(relative, "lmperf.report.relative")
    computed = tmp_path / "computed.py"
    computed.write_text(
        "import importlib\nfor area in ('bench', 'pmc'):\n    importlib.import_module(f'lmperf.{area}.commands')\n"
    )
    assert {"lmperf.bench.commands", "lmperf.pmc.commands"} <= _imports(computed)


def test_a_relative_upward_import_fails(tmp_path):
    modules = _fake_package(tmp_path, {"lmperf.report.upward": "from ..cli import app\n"})
    assert "upward: lmperf.report.upward (layer 0) imports lmperf.cli (layer 6)" in _violations(modules)


def test_a_computed_upward_import_fails(tmp_path):
    source = "import importlib\nfor area in ('bench',):\n    importlib.import_module(f'lmperf.{area}.run')\n"
    modules = _fake_package(tmp_path, {"lmperf.model.computed": source})
    assert "upward: lmperf.model.computed (layer 2) imports lmperf.bench.run (layer 5)" in _violations(modules)


def test_a_feature_importing_another_feature_fails(tmp_path):
    modules = _fake_package(
        tmp_path, {"lmperf.profile.reach": "def f():\n    from lmperf.bench.report import COLUMNS\n"}
    )
    assert "feature to feature: lmperf.profile.reach imports lmperf.bench.report" in _violations(modules)


def test_an_import_cycle_fails(tmp_path):
    modules = _fake_package(
        tmp_path,
        {
            "lmperf.pmc.first": "from lmperf.pmc import second\n",
            "lmperf.pmc.second": "def f():\n    from lmperf.pmc.first import x\n",
        },
    )
    assert "cycle: lmperf.pmc.first <-> lmperf.pmc.second" in _violations(modules)


def _readme_layers() -> list[set[str]]:
    """The README's Layout table, top row first: the areas each row's modules column names."""
    text = (PACKAGE.parents[1] / "README.md").read_text(encoding="utf-8")
    table = text.split("## Layout", 1)[1].split("\n\n## ", 1)[0]
    rows = [line.split("|") for line in table.splitlines() if line.startswith("| ") and "---" not in line][1:]
    return [{name.removesuffix("/").removesuffix(".py") for name in re.findall(r"`([\w/.]+)`", row[2])} for row in rows]


def test_the_readme_module_map_is_the_layering_checked_here():
    readme = _readme_layers()
    by_layer = [
        {area for area, layer in LAYERS.items() if layer == number}
        for number in sorted(set(LAYERS.values()), reverse=True)
    ]
    assert readme == by_layer
    assert {_area(module) for module in _modules()} == set().union(*readme)


def test_a_type_only_reference_back_is_no_cycle(tmp_path):
    modules = _fake_package(
        tmp_path,
        {
            "lmperf.pmc.first": "from lmperf.pmc import second\n",
            "lmperf.pmc.second": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lmperf.pmc.first import x\n",
        },
    )
    assert not any(problem.startswith("cycle: lmperf.pmc.first") for problem in _violations(modules))
