"""Build the Cython core: one extension module per src/jsstore/_core/*.pyx.

Every module is linked with the C helpers in csrc/ (small, dependency free), so a
.pyx file can cimport any of their headers without extra wiring.

JSSTORE_EXTRA_CFLAGS and JSSTORE_EXTRA_LDFLAGS (space separated) are added to every
module's compile and link flags: `make test-asan` builds a copy of the tree with
"-fsanitize=address,undefined" through them.

JSSTORE_INPLACE_BUILT=1 declares no extension: `make` builds them in place (in parallel)
and then installs the tree into .venv in editable mode, which would otherwise compile
every module a second time.
"""
import glob
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = sorted(glob.glob(os.path.join("csrc", "*.c")))
DEBUG = os.environ.get("JSSTORE_DEBUG") == "1"

compile_args = ["-O3", "-fno-strict-aliasing", "-Wno-unused-function"]
link_args = []
if DEBUG:
    compile_args = ["-O0", "-g", "-fsanitize=address"]
    link_args = ["-fsanitize=address"]
compile_args += os.environ.get("JSSTORE_EXTRA_CFLAGS", "").split()
link_args += os.environ.get("JSSTORE_EXTRA_LDFLAGS", "").split()


def extensions():
    mods = []
    for pyx in sorted(glob.glob(os.path.join("src", "jsstore", "_core", "*.pyx"))):
        stem = os.path.splitext(os.path.basename(pyx))[0]
        mods.append(
            Extension(
                f"jsstore._core.{stem}",
                sources=[pyx] + CSRC,
                include_dirs=["csrc"],
                extra_compile_args=compile_args,
                extra_link_args=link_args,
            )
        )
    return cythonize(
        mods,
        language_level=3,
        compiler_directives={
            "boundscheck": False,
            "wraparound": False,
            "cdivision": True,
            "initializedcheck": False,
            "embedsignature": True,
        },
        include_path=["src"],
    )


setup(ext_modules=[] if os.environ.get("JSSTORE_INPLACE_BUILT") == "1" else extensions())
