"""The README's jsstore command section runs as written: each line of its shell block, in a
directory of the test's own, exits 0 (and the last restores the backed-up stream)."""

from __future__ import annotations

import os
import pathlib
import shlex
import subprocess
import sys

import jsstore

ROOT = pathlib.Path(__file__).resolve().parent.parent


def readme_commands() -> list[list[str]]:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## The jsstore command"):]
    start = section.index("```sh\n") + len("```sh\n")
    return [shlex.split(line) for line in section[start:section.index("\n```", start)].splitlines()
            if line.strip()]


def test_the_readme_commands_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("NATS_URL", None)
    outputs = []
    commands = readme_commands()
    assert len(commands) >= 10
    for argv in commands:
        assert argv[0] == "jsstore"
        done = subprocess.run([sys.executable, "-m", "jsstore", *argv[1:]], cwd=tmp_path,
                              env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, (argv, done.stderr)
        outputs.append(done.stdout)
    assert outputs[0].startswith(f"jsstore {jsstore.__version__}")
    assert "blue\n" in outputs
    with jsstore.open(tmp_path / "copy", timers=False) as js:
        assert js.stream_info("ORDERS").state.messages == 1
        assert [c.name for c in js.consumers_info("ORDERS")] == ["DISPATCH"]
