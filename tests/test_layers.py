"""The house stands on its layers: every import in src/jsstore points inward.

The packages of jsstore are layers (docs/architecture.md). A module may import from its own
layer and from the layers beneath it, never from one above; and imports sit at the top of a
module, where a reader sees them, not inside functions where they hide a cycle. The few
function-level imports that have a reason (an optional dependency) are listed below with it.
A module deferred to its first use (``jsstore.deferred``: ``name = deferred("jsstore.x")``)
is an import of that module like any other: it must point inward too.

This reads the source with ``ast`` (and the Cython files line by line), so it needs nothing
built and fails with the file, line and the two layers involved.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"
PACKAGE = SRC / "jsstore"

# innermost first; a module may import what sits at its own rank or a lower one
LAYERS = [
    ("jsstore.errors", "jsstore.state",         # leaf modules: storage errors, store state
     "jsstore.version", "jsstore.deferred"),    # values, the version, deferred imports
    ("jsstore._core",),                         # the Cython core
    ("jsstore.gocompat",),                      # Go's JSON, time, duration and quoting rules
    ("jsstore.wire",),                          # API errors, headers, ack replies, the bus
    ("jsstore.store",),                         # the store contract and its implementations
    ("jsstore.stream",),                        # one stream and its publish path
    ("jsstore.consumer",),                      # one consumer
    ("jsstore.jetstream",),                     # the embedded account: registries, timers
    ("jsstore.api",),                           # the $JS.API handlers
    ("jsstore.server", "jsstore.spark",         # jsstore serve; the PySpark data source;
     "jsstore.aio"),                            # the asyncio API
    ("jsstore.buckets",),                       # KV and object stores, synchronous
    ("jsstore.cli",),                           # the jsstore command
    ("jsstore", "jsstore.__main__"),            # the package's public face
    ("jsstore.testing",),                       # the store contract kit, the pytest plugin
]

# (importing module, imported module) -> why the import sits inside a function
FUNCTION_IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("jsstore.cli.main", "jsstore.spark.export"):
        "pyspark is optional (jsstore[spark]): the command serves without it",
    ("jsstore.testing.plugin", "jsstore.aio.context"):
        "the plugin loads in every pytest run of an environment with jsstore installed; "
        "the asyncio layer (about 40 ms) only for a test that asks for the jetstream fixture",
    ("jsstore", "jsstore.api.router"):
        "the wire API handlers load with a JetStream's first request (a started server that "
        "no client asks anything of never loads them: jsstore serve starts sooner, idles "
        "smaller)",
    ("jsstore.cli.main", "jsstore.cli.serve"):
        "the jsstore command imports only the verb it runs: serve loads the server, not "
        "the verbs' parsers and the asyncio API beneath their remote back end",
    ("jsstore.cli.main", "jsstore.cli.verbs"):
        "the jsstore command imports only the verb it runs: the nats CLI verbs (and their "
        "back ends) are not loaded by jsstore serve",
    ("jsstore.cli.serve", "jsstore.api.disabled"):
        "the answer to the API requests of an account without JetStream (it imports the "
        "API handlers) loads with the first such request",
    ("jsstore", "jsstore.buckets"):
        "import jsstore stays as cheap as it was: the synchronous buckets (and the asyncio "
        "layer beneath them) load with a JetStream's first key-value or object store call",
}


def rank_of(module: str) -> int:
    """The layer of a dotted jsstore module name (the longest listed prefix wins)."""
    best, best_len = None, -1
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best_len:
                best, best_len = rank, len(prefix)
    if best is None:
        raise AssertionError(f"{module} belongs to no layer: add its package to LAYERS")
    return best


def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def is_module(dotted: str) -> bool:
    """Whether a dotted name is a module or package of the source tree."""
    base = SRC.joinpath(*dotted.split("."))
    return (base.with_suffix(".py").exists() or base.with_suffix(".pyx").exists()
            or (base / "__init__.py").exists())


def imported_modules(node: ast.AST, importer: str, is_package: bool) -> list[str]:
    """The jsstore modules an import statement brings in."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names if alias.name.split(".")[0] == "jsstore"]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = importer.split(".")
        if not is_package:
            base = base[:-1]
        base = base[:len(base) - node.level + 1]
        source = ".".join(base + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    if source.split(".")[0] != "jsstore":
        return []
    found = []
    for alias in node.names:
        child = f"{source}.{alias.name}"
        found.append(child if is_module(child) else source)
    return found


class Finding:
    def __init__(self, path: pathlib.Path, line: int, importer: str, imported: str, inner: bool):
        self.path, self.line = path.relative_to(SRC.parent), line
        self.importer, self.imported, self.inner = importer, imported, inner

    def __repr__(self) -> str:
        return f"{self.path}:{self.line}: {self.importer} imports {self.imported}"


def python_imports(path: pathlib.Path) -> list[Finding]:
    importer = module_name(path)
    tree = ast.parse(path.read_text(), str(path))
    inner_nodes = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            for child in ast.walk(node):
                if isinstance(child, (ast.Import, ast.ImportFrom, ast.Call)):
                    inner_nodes.add(id(child))
    findings = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "deferred"
                and node.args and isinstance(node.args[0], ast.Constant)
                and str(node.args[0].value).split(".")[0] == "jsstore"):
            findings.append(Finding(path, node.lineno, importer, node.args[0].value,
                                    id(node) in inner_nodes))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for imported in dict.fromkeys(imported_modules(node, importer,
                                                           path.name == "__init__.py")):
                findings.append(Finding(path, node.lineno, importer, imported,
                                        id(node) in inner_nodes))
    return findings


CYTHON_IMPORT = re.compile(r"^([ \t]*)(?:from[ \t]+(jsstore[\w.]*)[ \t]+c?import|c?import[ \t]+(jsstore[\w.]*))",
                           re.MULTILINE)


def cython_imports(path: pathlib.Path) -> list[Finding]:
    importer = module_name(path)
    text = path.read_text()
    findings = []
    for match in CYTHON_IMPORT.finditer(text):
        imported = match.group(2) or match.group(3)
        line = text.count("\n", 0, match.start()) + 1
        findings.append(Finding(path, line, importer, imported, bool(match.group(1))))
    return findings


def all_imports() -> list[Finding]:
    findings = []
    for path in sorted(PACKAGE.rglob("*.py")):
        findings += python_imports(path)
    for path in sorted(PACKAGE.rglob("*.p[yx][xd]")):
        findings += cython_imports(path)
    return findings


def test_every_module_belongs_to_a_layer():
    for path in sorted(PACKAGE.rglob("*.py")):
        rank_of(module_name(path))


def test_imports_point_inward():
    outward = [f"{finding!r} ({LAYERS[rank_of(finding.importer)][0]} is beneath "
               f"{LAYERS[rank_of(finding.imported)][0]})"
               for finding in all_imports()
               if rank_of(finding.imported) > rank_of(finding.importer)]
    assert not outward, "imports that point outward:\n" + "\n".join(outward)


def test_no_imports_inside_functions():
    hidden = [repr(finding) for finding in all_imports()
              if finding.inner and (finding.importer, finding.imported) not in FUNCTION_IMPORTS_ALLOWED]
    assert not hidden, ("imports inside functions (move them to the top, or list them in "
                        "FUNCTION_IMPORTS_ALLOWED with the reason):\n" + "\n".join(hidden))


def test_the_allowed_function_imports_are_still_there():
    present = {(finding.importer, finding.imported) for finding in all_imports() if finding.inner}
    stale = [pair for pair in FUNCTION_IMPORTS_ALLOWED if pair not in present]
    assert not stale, f"allowed function-level imports that no longer exist: {stale}"


@pytest.mark.parametrize("importer, imported, expected", [
    ("jsstore.consumer.consumer", "jsstore.api.direct", False),
    ("jsstore.api.direct", "jsstore.consumer.consumer", True),
    ("jsstore.store.filestore", "jsstore._core.storage.block", True),
    ("jsstore._core.storage.block", "jsstore.errors", True),
    ("jsstore.errors", "jsstore._core.storage.block", False),
    ("jsstore.server.client", "jsstore.cli.main", False),
])
def test_the_rule_itself(importer, imported, expected):
    assert (rank_of(imported) <= rank_of(importer)) is expected


def test_deferred_modules_are_read_as_imports():
    """``name = deferred("jsstore.x")`` is an import of jsstore.x to these rules (at the
    module's top: not an import hidden in a function)."""
    found = {(f.importer, f.imported): f.inner for f in all_imports()}
    assert found[("jsstore.jetstream.account", "jsstore.stream.stream")] is False
    assert found[("jsstore.jetstream.stores", "jsstore.store.filestore")] is False


# the core's own layers, innermost first: a Cython module may cimport or import a module
# of its own subpackage or of a lower rank
CORE_LAYERS = [
    ("storage",),                   # the message store and its structures
    ("delivery", "columns"),        # the way out of the server; Spark's columns
    ("wire",),                      # the NATS protocol parser (it follows delivery's plans)
]
CORE = PACKAGE / "_core"
CORE_IMPORT = re.compile(r"^\s*(?:from\s+jsstore\._core\.(\w+)[.\w]*\s+c?import|"
                         r"c?import\s+jsstore\._core\.(\w+))", re.MULTILINE)


def core_rank(subpackage: str) -> int:
    for rank, names in enumerate(CORE_LAYERS):
        if subpackage in names:
            return rank
    raise AssertionError(f"_core.{subpackage} belongs to no layer: add it to CORE_LAYERS")


def test_the_core_imports_point_inward():
    outward = []
    for path in sorted(CORE.glob("*/*.p[yx][xd]")) + sorted(CORE.glob("*/*.py")):
        own = path.parent.name
        for match in CORE_IMPORT.finditer(path.read_text()):
            other = match.group(1) or match.group(2)
            if other != own and core_rank(other) >= core_rank(own):
                outward.append(f"{path.relative_to(CORE)} imports _core.{other}")
    assert not outward, "\n".join(outward)


def test_the_core_rule_sees_an_outward_import():
    text = "from jsstore._core.wire.protocol cimport Parser\nimport jsstore._core.columns.x\n"
    assert [m.group(1) or m.group(2) for m in CORE_IMPORT.finditer(text)] == ["wire",
                                                                              "columns"]
