"""The type stubs of the compiled core (`_core/*.pyi`) say what the modules hold: every public
name in both, and each function's parameters (names, kinds, defaults) as the compiled
function reports them."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

CORE = Path(importlib.import_module("tfrecnp._core").__file__).parent
MODULES = ["framing", "decode", "encode", "mapcopy"]
NOT_API = {"np", "sys"}  # modules the .pyx imports


def _stub(name: str) -> ast.Module:
    return ast.parse((CORE / f"{name}.pyi").read_text(encoding="utf-8"))


def _stub_names(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out[node.target.id] = node
        elif isinstance(node, ast.Assign):  # type aliases of the stub itself
            for target in node.targets:
                out[getattr(target, "id", "")] = node
    return out


@pytest.mark.parametrize("name", MODULES)
def test_stub_and_module_name_the_same_things(name):
    module = importlib.import_module(f"tfrecnp._core.{name}")
    public = {n for n in dir(module) if not n.startswith("_")} - NOT_API
    stub = {n for n, node in _stub_names(_stub(name)).items() if not isinstance(node, ast.Assign)}
    assert public - stub == set(), f"{name}.pyi lacks {sorted(public - stub)}"
    assert stub - public == set(), f"{name}.pyi names what {name} lacks: {sorted(stub - public)}"


def _params(fn: ast.FunctionDef) -> list[tuple[str, str, bool]]:
    a = fn.args
    out = [(p.arg, "POSITIONAL_OR_KEYWORD", False) for p in a.args]
    for p, d in zip(a.args[len(a.args) - len(a.defaults) :], a.defaults, strict=True):
        out[[x[0] for x in out].index(p.arg)] = (p.arg, "POSITIONAL_OR_KEYWORD", d is not None)
    out += [
        (p.arg, "KEYWORD_ONLY", d is not None)
        for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
    ]
    return out


@pytest.mark.parametrize("name", MODULES)
def test_function_signatures_match(name):
    module = importlib.import_module(f"tfrecnp._core.{name}")
    checked = 0
    for fname, node in _stub_names(_stub(name)).items():
        if not isinstance(node, ast.FunctionDef):
            continue
        sig = inspect.signature(getattr(module, fname))
        real = [
            (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
            for p in sig.parameters.values()
        ]
        assert real == _params(node), f"{name}.{fname}: stub {_params(node)} vs {real}"
        checked += 1
    assert checked >= 1  # (the loop checked something)


INSTANCES = {"EncodeError": lambda cls: cls(0, 1, 2)}


def _classes(name: str):
    module = importlib.import_module(f"tfrecnp._core.{name}")
    for cname, node in _stub_names(_stub(name)).items():
        if isinstance(node, ast.ClassDef):
            yield getattr(module, cname), node


def _own_members(cls: type) -> set[str]:
    """Public names a compiled class adds to its bases (its methods and attributes)."""
    inherited = set().union(*(dir(base) for base in cls.__mro__[1:]))
    return {n for n in dir(cls) if not n.startswith("_") and n not in inherited}


@pytest.mark.parametrize("name", MODULES)
def test_classes_name_the_same_members(name):
    """Methods are methods in both; a compiled `cdef readonly` attribute (a getset
    descriptor: it cannot be assigned) is a read-only @property in the stub."""
    checked = 0
    for cls, node in _classes(name):
        stub = {
            n.name: n
            for n in node.body
            if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")
        }
        stub_attrs = {
            n.target.id
            for n in node.body
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
        }
        real = _own_members(cls)
        if cls.__name__ in INSTANCES:  # attributes a Python __init__ sets
            real |= {n for n in vars(INSTANCES[cls.__name__](cls)) if not n.startswith("_")}
        assert real == set(stub) | stub_attrs, f"{name}.{cls.__name__}"
        for member in real:
            value = inspect.getattr_static(cls, member, None)
            if type(value).__name__ == "getset_descriptor":
                decorators = [getattr(d, "id", "") for d in stub[member].decorator_list]
                assert decorators == ["property"], f"{name}.{cls.__name__}.{member}"
            elif callable(value):
                sig = inspect.signature(value)
                real_params = [
                    (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
                    for p in sig.parameters.values()
                ]
                assert real_params == _params(stub[member]), f"{name}.{cls.__name__}.{member}"
                checked += 1
            else:  # an instance or plain class attribute
                assert member in stub_attrs
    if name == "encode":
        assert checked == 3  # Batch.measure, finish, fill


def test_python_level_initialisers_match():
    """EncodeError is a Python class: its __init__ has a signature to hold the stub to
    (the cdef classes take theirs in __cinit__, which Python does not report)."""
    from tfrecnp._core import encode

    node = dict((c.__name__, n) for c, n in _classes("encode"))["EncodeError"]
    init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
    real = [
        (p.name, p.kind.name, p.default is not inspect.Parameter.empty)
        for p in inspect.signature(encode.EncodeError.__init__).parameters.values()
    ]
    assert real == _params(init)
