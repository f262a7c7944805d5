"""Builds the compiled core: every src/tfrecnp/_core/*.pyx becomes one extension module. The C
that Cython cannot spell (intrinsics, 64-bit bit tricks) lives in the `.h` files beside it; code
a module cimports (inline functions, structs) in `.pxd` files beside it, whose changes cythonize
follows. pyproject.toml ships all three with the sources."""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

CORE = Path("src/tfrecnp/_core")
HEADERS = [h.as_posix() for h in sorted(CORE.glob("*.h"))]

extensions = [
    Extension(
        f"tfrecnp._core.{pyx.stem}",
        [pyx.as_posix()],
        include_dirs=[CORE.as_posix()],
        depends=HEADERS,
        extra_compile_args=["-O3"],
    )
    for pyx in sorted(CORE.glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": 3}))
