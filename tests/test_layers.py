"""The house rules of the source tree: each layer imports only the layers below it, there are
no import cycles, and `import tfrecnp` (and the light CLI commands) load only what they use.

The layer order is written here, once. A module's layer is its top-level folder (or, for a
top-level module, its own name); imports inside functions count like any other.
"""

import ast
import itertools
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tfrecnp

# lowest first; a module may import its own layer and those before it
LAYERS = [
    "_core",
    "_version",
    "_util",
    "errors",
    "images",
    "format",
    "example",
    "interop",
    "arrays",
    "adapters",
    "data",
    "ray",
    "framing",
    "cli",
    "__init__",
    "__main__",
]
ROOT = Path(tfrecnp.__file__).parent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts)


def _layer(module: str) -> str:
    return module.split(".")[0]


def _is_module(parent: list[str], name: str) -> bool:
    folder = ROOT.joinpath(*parent)
    return (
        any((folder / (name + ext)).exists() for ext in (".py", ".pyx"))
        or (folder / name / "__init__.py").exists()
    )


def _imports(path: Path) -> set[str]:
    """Modules of tfrecnp that `path` imports, as dotted names relative to the package."""
    package = _module_name(path).split(".")[:-1]  # (an __init__'s last part is "__init__")
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                if node.module and node.module.startswith("tfrecnp."):
                    found.add(node.module.removeprefix("tfrecnp."))
                continue
            base = package[: len(package) - (node.level - 1)] if node.level > 1 else package
            parent = [*base, *node.module.split(".")] if node.module else base
            found.add(".".join(parent))
            found.update(  # from .._core import framing: the submodule itself
                ".".join([*parent, alias.name])
                for alias in node.names
                if _is_module(parent, alias.name)
            )
        elif isinstance(node, ast.Import):
            found.update(
                a.name.removeprefix("tfrecnp.") for a in node.names if a.name.startswith("tfrecnp.")
            )
    return {m for m in found if m}


SOURCES = sorted(p for p in ROOT.rglob("*.py"))
GRAPH = {_module_name(p): _imports(p) for p in SOURCES}


def test_every_module_has_a_known_layer():
    unknown = sorted({_layer(m) for m in GRAPH} - set(LAYERS))
    assert not unknown, f"add these folders to LAYERS in the right place: {unknown}"


def test_imports_only_go_down():
    upward = [
        f"{module} ({_layer(module)}) imports {target} ({_layer(target)})"
        for module, targets in GRAPH.items()
        for target in targets
        if LAYERS.index(_layer(target)) > LAYERS.index(_layer(module))
    ]
    assert not upward, "imports from a lower layer to a higher one:\n" + "\n".join(upward)


def test_no_import_cycles():
    edges = {
        m: {t for t in targets if t in GRAPH and not t.endswith("__init__")}
        for m, targets in GRAPH.items()
    }
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(edges.get(m, ())):
            if state.get(t) == 1:
                return [*stack[stack.index(t) :], t]
            if t not in state and (cycle := visit(t)):
                return cycle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state and (cycle := visit(m)):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_the_graph_sees_real_imports():
    # the walker itself: a known downward import and a known relative one are found
    assert "example.decode" in GRAPH["data.dataset"]
    assert "_core.framing" in GRAPH["format.reader"]
    assert any(LAYERS.index(_layer(t)) < LAYERS.index("data") for t in GRAPH["data.dataset"])


def _loaded_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    )
    return set(out.stdout.split())


def test_import_tfrecnp_loads_only_numpy():
    loaded = _loaded_after("import tfrecnp")
    ours = {m for m in loaded if m.startswith("tfrecnp.")}
    assert ours <= {"tfrecnp._version"}, sorted(ours)
    heavy = {"tensorflow", "torch", "h5py", "zarr", "PIL", "jax", "ray", "fsspec"}
    assert not heavy & {m.split(".")[0] for m in loaded}


@pytest.mark.parametrize("argv", [["--help"], ["count", "x.tfrecord"]])
def test_light_commands_do_not_load_the_decoder(tmp_path, argv):
    path = tmp_path / "x.tfrecord"
    with tfrecnp.RecordWriter(path) as w:
        w.write(b"abc")
    code = (
        "import contextlib, io, os, sys\n"
        f"os.chdir({str(tmp_path)!r})\n"
        "from tfrecnp.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n"
        f"        main({argv!r})\n"
        "    except SystemExit:\n"
        "        pass"
    )
    loaded = _loaded_after(code)
    assert "tfrecnp.format.reader" in loaded
    for module in ("tfrecnp.example.decode", "tfrecnp.data.dataset", "h5py", "zarr"):
        assert module not in loaded, f"{argv} loaded {module}"


def test_layer_list_is_written_once():
    assert len(set(LAYERS)) == len(LAYERS)
    assert all(a != b for a, b in itertools.pairwise(LAYERS))


# --- the public face: what a user calls at the top, frames in tfrecnp.framing -------------

MOVED_TO_FRAMING = [
    "RecordBatch",
    "RecordIndex",
    "expand_paths",
    "read_index",
    "scan_file",
    "write_index",
]


def test_every_public_name_resolves():
    import tfrecnp.framing

    for module in (tfrecnp, tfrecnp.framing):
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module.__name__}.{name}"
        assert set(module.__all__) <= set(dir(module))


def test_framing_names_are_not_top_level_names():
    import tfrecnp.framing

    assert not set(MOVED_TO_FRAMING) & set(tfrecnp.__all__)
    assert not set(MOVED_TO_FRAMING) & set(dir(tfrecnp))
    assert set(MOVED_TO_FRAMING) <= set(tfrecnp.framing.__all__)
    # the readers and writers a user calls are at both levels, the same objects
    for name in ("RecordReader", "RecordWriter", "count_records", "iter_records"):
        assert getattr(tfrecnp, name) is getattr(tfrecnp.framing, name)


@pytest.mark.parametrize("name", MOVED_TO_FRAMING)
def test_a_moved_name_still_works_with_a_warning_naming_its_home(name):
    import tfrecnp.framing

    message = "^" + re.escape(f"tfrecnp.{name} is now tfrecnp.framing.{name}; the top-level")
    with pytest.warns(DeprecationWarning, match=message) as caught:
        value = getattr(tfrecnp, name)
    assert value is getattr(tfrecnp.framing, name)
    assert caught[0].filename == __file__  # points at the caller's line
    with pytest.warns(DeprecationWarning, match=message):  # every use, not only the first
        exec(f"from tfrecnp import {name}", {})


def test_frame_batch_is_a_record_batch_now_with_a_warning():
    import tfrecnp.framing

    with pytest.warns(DeprecationWarning, match=r"framing\.FrameBatch is now .*RecordBatch"):
        assert tfrecnp.framing.FrameBatch is tfrecnp.framing.RecordBatch
    with pytest.warns(DeprecationWarning, match="FrameBatch is now"):
        assert tfrecnp.FrameBatch is tfrecnp.framing.RecordBatch


def test_an_unknown_name_is_an_attribute_error():
    import tfrecnp.framing

    with pytest.raises(AttributeError, match="module 'tfrecnp' has no attribute 'nothing'"):
        tfrecnp.nothing  # noqa: B018
    with pytest.raises(AttributeError, match=r"module 'tfrecnp\.framing' has no attribute 'x'"):
        tfrecnp.framing.x  # noqa: B018


def test_import_tfrecnp_framing_loads_no_reader():
    loaded = _loaded_after("import tfrecnp\nassert tfrecnp.framing.__all__")  # tn.framing
    ours = {m for m in loaded if m.startswith("tfrecnp.")}
    assert "tfrecnp.framing" in ours
    assert not {m for m in ours if m.startswith(("tfrecnp.format", "tfrecnp._core"))}
