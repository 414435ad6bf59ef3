"""jsstore installed into the environment the tests run in (`make test` and `make serve`
install the tree in editable mode): the console script exists and runs, and `import
jsstore` from anywhere -- no PYTHONPATH, another working directory -- finds this tree."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import sysconfig
from importlib import metadata

SRC = pathlib.Path(__file__).resolve().parent.parent / "src"


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def test_the_distribution_and_its_console_script_are_installed():
    dist = metadata.distribution("jsstore")
    scripts = {ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"}
    assert scripts == {"jsstore": "jsstore.cli:main"}
    script = pathlib.Path(sysconfig.get_path("scripts")) / "jsstore"
    assert script.exists()


def test_import_jsstore_from_anywhere_finds_this_tree(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c",
         "import jsstore, jsstore._core.storage.block; print(jsstore.__file__)"],
        cwd=tmp_path, env=_clean_env(), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert pathlib.Path(out.stdout.strip()).resolve() == SRC / "jsstore" / "__init__.py"


def test_the_console_script_serves(tmp_path):
    """`jsstore serve` from the installed script, outside the tree: it gets to "Server is ready"."""
    script = pathlib.Path(sysconfig.get_path("scripts")) / "jsstore"
    proc = subprocess.Popen([str(script), "serve", "-js", "-a", "127.0.0.1", "-p", "-1",
                             "-sd", str(tmp_path / "store")], cwd=tmp_path, env=_clean_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        for line in proc.stdout:
            if "Server is ready" in line:
                break
        else:
            raise AssertionError(f"exited with {proc.wait()} before it was ready")
    finally:
        proc.kill()
        proc.wait()
