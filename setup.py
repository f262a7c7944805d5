"""Builds the compiled core: every src/tfrecnp/_core/*.pyx becomes one extension module."""

from pathlib import Path

from Cython.Build import cythonize
from setuptools import Extension, setup

extensions = [
    Extension(f"tfrecnp._core.{pyx.stem}", [pyx.as_posix()], extra_compile_args=["-O3"])
    for pyx in sorted(Path("src/tfrecnp/_core").glob("*.pyx"))
]

setup(ext_modules=cythonize(extensions, compiler_directives={"language_level": 3}))
