"""The layout is the architecture: each package imports only what its `__init__` says it may, so
data flows one way (corpus -> tokenizer -> batches -> model -> decoding -> evaluation, training,
views, export -> the CLI), and only the CLI imports Typer. Checked on the source, so a new module
that breaks the rule fails here, not in a reviewer's head."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "seq2seq"
SHARED = {"errors", "atomic", "device", "allocator", "fields"}  # the small pieces every part may use
ALLOWED = {  # a module's top-level name under seq2seq/ -> what it may import from the package
    "errors": set(),
    "atomic": {"errors"},  # open_no_follow refuses a link in a run in our one-line error
    "allocator": set(),
    "device": {"errors"},
    "fields": set(),
    "launch": {"errors"},  # torchrun, whose rendezvous errors it says in one line
    "data": {"data", "errors", "atomic", "allocator"},  # allocator: the tokenizer's trainer frees GBs
    "models": {"models", "data.special", "errors", "fields", "device"},  # device: its start-up timer
    "decoding": {"decoding", "models", "data", "device", "errors", "fields"},
    "evaluate": {"decoding", "models", "errors"},
    "paired": {"evaluate", "decoding", "models", "request"},  # an evaluation paired with a baseline's
    "report": set(),  # an evaluation as JSON
    "files": {"files", *SHARED},  # text files in and out
    # confidence and error signals: a teacher-forced pass, its pieces merged into words
    "trust": {"trust", "decoding", "models", "data", "alignment.words", "runs.identity", *SHARED},
    "views": {"views", "decoding.attention", "atomic", "errors"},
    # word alignment reads the model's attention and attribution, the views draw its links
    "alignment": {"alignment", "decoding", "models", "data", "views", "runs", *SHARED},
    # guided alignment reads Pharaoh links and counts words as alignment does
    # the run directory, which training writes and every other reader opens
    "runs": {"runs", "models", "data", *SHARED},
    "training": {
        "training",
        "runs",
        "models",
        "data",
        "decoding",
        "evaluate",
        "views.plots",
        "alignment.pharaoh",
        "alignment.words",
        "alignment.baseline",
        *SHARED,
    },
    # a document's sentences are searched, and its markup placed through the alignment
    "documents": {"documents", "decoding", "alignment", *SHARED},
    # translate's lines: steered, recorded and mapped a group at a time, and the views of the maps
    # the one pipeline: a request checked, searched, restored, trusted, a document written back
    "request": {"request", "decoding", "documents", "trust", "data", *SHARED},
    "stream": {"stream", "decoding", "files", "views", "trust", "request", *SHARED},
    "export": {"export", "runs", "models", "data", "decoding", "evaluate", *SHARED},
    "serve": {"serve", "views", "decoding", "request", "runs", "trust", "models", "data", *SHARED},
    "cli": None,  # the edge: anything
    "__init__": None,
    "__main__": {"cli"},
}
ONLY = {"typer": "cli", "fastapi": "serve", "uvicorn": "serve"}  # third-party imports one package owns


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py"))


def imports_of(path: Path) -> set[str]:
    """Every module name the file imports, absolute (`seq2seq.models.protocol`, `torch`, ...)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            folder = PACKAGE.parent.joinpath(*node.module.split("."))
            if folder.is_dir():  # `from seq2seq.views import plots`: the submodules named
                names |= {f"{node.module}.{alias.name}" for alias in node.names}
            else:
                names.add(node.module)
    return names


def owner(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_run_one_way(path):
    allowed = ALLOWED[owner(path)]
    if allowed is None:
        return
    for name in imports_of(path):
        if not name.startswith("seq2seq.") or name == "seq2seq.":
            continue
        target = name.removeprefix("seq2seq.")
        ok = any(target == a or target.startswith(a + ".") for a in allowed | {owner(path)})
        assert ok, f"{path.relative_to(PACKAGE)} imports seq2seq.{target}, outside {sorted(allowed)}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_edge_libraries_stay_in_their_package(path):
    for name in imports_of(path):
        package = ONLY.get(name.split(".")[0])
        assert package is None or owner(path) == package, f"{path.relative_to(PACKAGE)} imports {name}"


def test_every_package_says_what_it_owns_and_may_import():
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert "May import" in doc, f"{init.parent.name}/__init__.py does not say what it may import"
        assert init.parent.name in ALLOWED, f"{init.parent.name} has no import rule here"


def test_no_module_is_over_300_lines():
    long = {str(p.relative_to(PACKAGE)): n for p in modules() if (n := len(p.read_text().splitlines())) > 300}
    assert not long, long


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Each module of the package -> the package's modules it imports, at its top or inside a
    function alike (`from seq2seq.views import plots` names seq2seq.views.plots)."""
    names = {module_name(p) for p in modules()}
    return {module_name(p): {n for n in imports_of(p) if n in names} - {module_name(p)} for p in modules()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, found = {}, {}, [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = stack[stack.index(v) :]
            del stack[stack.index(v) :]
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_itself_round_a_circle():
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_one():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


# the commands that train; every other reader opens a run through seq2seq.runs
TRAINS = {"seq2seq.cli.train", "seq2seq.cli.display", "seq2seq.cli.options"}


def test_nothing_outside_training_imports_it_but_the_commands_that_train():
    importers = {
        module
        for module, imported in import_graph().items()
        if not module.startswith("seq2seq.training")
        and any(n.startswith("seq2seq.training") for n in imported)
    }
    assert importers <= TRAINS, sorted(importers - TRAINS)
