"""The type stubs of the compiled core (`_core/*.pyi`) say what the modules hold: every public
name in both, and each function's parameters (names, kinds, defaults) as the compiled
function reports them."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

CORE = Path(importlib.import_module("tfrecnp._core").__file__).parent
MODULES = ["framing", "decode", "encode"]
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
    assert checked >= 2
