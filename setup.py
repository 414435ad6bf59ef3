"""Build the Cython core: one extension module per .pyx under src/jsstore/_core/ (its
subpackages included), named after its path (src/jsstore/_core/storage/engine.pyx is
jsstore._core.storage.engine).

Each module is linked with the C helpers in csrc/ that it uses, and only those. setup.py
reads them off the Cython sources (c_sources below):

  - a header named by `cdef extern from "x.h"` in the module's .pyx or its own .pxd;
  - a header of a .pxd the module cimports from, when the names it cimports include one
    that the header's extern block declares (cimporting a whole module counts as every
    name), or when that .pxd calls one itself (an inline function); a .pxd is read the same
    way for what it cimports in turn;
  - a header #included by verbatim C code (`cdef extern from *: \"\"\" ... \"\"\"`).

Header csrc/x.h brings in csrc/x.c when there is one (varint.h, le_bytes.h and record.h are
header-only), and a .c file brings in the .c files of the csrc headers it #includes. A C
function that a module calls without this rule seeing it is an undefined symbol at import.

JSSTORE_EXTRA_CFLAGS and JSSTORE_EXTRA_LDFLAGS (space separated) are added to every
module's compile and link flags: `make test-asan` builds a copy of the tree with
"-fsanitize=address,undefined" through them.

JSSTORE_INPLACE_BUILT=1 declares no extension: `make` builds them in place (in parallel)
and then installs the tree into .venv in editable mode, which would otherwise compile
every module a second time.
"""
import glob
import os
import re

from Cython.Build import cythonize
from setuptools import Extension, setup

CSRC = "csrc"
CORE = os.path.join("src", "jsstore", "_core")
DEBUG = os.environ.get("JSSTORE_DEBUG") == "1"

compile_args = ["-O3", "-fno-strict-aliasing", "-Wno-unused-function"]
link_args = []
if DEBUG:
    compile_args = ["-O0", "-g", "-fsanitize=address"]
    link_args = ["-fsanitize=address"]
compile_args += os.environ.get("JSSTORE_EXTRA_CFLAGS", "").split()
link_args += os.environ.get("JSSTORE_EXTRA_LDFLAGS", "").split()

EXTERN = re.compile(r'^([ \t]*)cdef[ \t]+extern[ \t]+from[ \t]+"([^"]+)"[^\n]*$', re.MULTILINE)
CIMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(jsstore\._core[\w.]*)[ \t]+cimport[ \t]+(\([^)]*\)|[^\n]*)"
                     r"|cimport[ \t]+(jsstore\._core[\w.]*))", re.MULTILINE)
C_INCLUDE = re.compile(r'#[ \t]*include[ \t]+"([^"]+)"')
NAME = re.compile(r"[A-Za-z_]\w*")
CALL = re.compile(r"([A-Za-z_]\w*)[ \t]*\(")


def read_cython(path):
    """The text of a .pyx/.pxd file, its comments removed, and the headers of its verbatim
    C code's #includes (read before the comments go: `#include` looks like one)."""
    with open(path) as f:
        text = f.read()
    verbatim = set(C_INCLUDE.findall(text))
    return re.sub(r"#[^\n]*", "", text), verbatim


def extern_blocks(text):
    """{header: (names in its `cdef extern from` block, the functions among them)}, and the
    text outside the blocks."""
    blocks, outside, end = {}, [], 0
    for match in EXTERN.finditer(text):
        indent, body = len(match.group(1)), []
        outside.append(text[end:match.start()])
        end = match.end() + 1
        for line in text[end:].splitlines(keepends=True):
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            body.append(line)
            end += len(line)
        names, functions = blocks.setdefault(match.group(2), (set(), set()))
        names.update(NAME.findall("".join(body)))
        functions.update(CALL.findall("".join(body)))
    outside.append(text[end:])
    return blocks, "".join(outside)


def cimports(text):
    """[(module, names cimported from it, or None for the whole module)]."""
    found = []
    for match in CIMPORT.finditer(text):
        if match.group(3):
            found.append((match.group(3), None))
        else:
            items = match.group(2).strip("() \t\n").replace("\n", " ").split(",")
            found.append((match.group(1), {item.split()[0] for item in items if item.strip()}))
    return found


def headers_of(path, names=None):
    """The headers whose C a module needs when it cimports `names` from the Cython file at
    `path` (None: the module's own .pyx or .pxd, or a whole-module cimport)."""
    text, headers = read_cython(path)
    blocks, outside = extern_blocks(text)
    called = set(CALL.findall(outside))
    for header, (declared, functions) in blocks.items():
        if names is None or declared & names or functions & called:
            headers.add(header)
    for module, cnames in cimports(text):
        base = os.path.join("src", *module.split("."))
        if os.path.isdir(base):             # from <package> cimport <module>, ...
            for name in cnames or ():
                if os.path.exists(os.path.join(base, name + ".pxd")):
                    headers |= headers_of(os.path.join(base, name + ".pxd"))
        elif os.path.exists(base + ".pxd"):
            headers |= headers_of(base + ".pxd", cnames)
    return headers


def c_sources(pyx):
    """The csrc/*.c files the module built from `pyx` is linked with."""
    headers = headers_of(pyx)
    pxd = pyx[:-len(".pyx")] + ".pxd"
    if os.path.exists(pxd):
        headers |= headers_of(pxd)
    sources, todo = set(), [os.path.join(CSRC, h) for h in headers]
    while todo:
        c_file = os.path.splitext(todo.pop())[0] + ".c"
        if c_file not in sources and os.path.exists(c_file):
            sources.add(c_file)
            with open(c_file) as f:
                todo += [os.path.join(CSRC, h) for h in C_INCLUDE.findall(f.read())]
    return sorted(sources)


def extensions():
    mods = []
    for pyx in sorted(glob.glob(os.path.join(CORE, "**", "*.pyx"), recursive=True)):
        name = os.path.splitext(os.path.relpath(pyx, "src"))[0].replace(os.sep, ".")
        mods.append(
            Extension(
                name,
                sources=[pyx] + c_sources(pyx),
                include_dirs=[CSRC],
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
