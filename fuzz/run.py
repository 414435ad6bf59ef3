"""Run one fuzz target under atheris:  python fuzz/run.py <target> [atheris/libFuzzer args]

    pip install -r fuzz/requirements.txt
    python fuzz/run.py block_records -max_total_time=300
    make fuzz TARGET=block_records SECONDS=300        # the same, from the Makefile

The saved inputs in fuzz/corpus/<target>/ seed the run; what the fuzzer finds on the way
goes to build/fuzz/corpus/<target>/ (not committed) and a crashing input to
build/fuzz/crashes/<target>-crash-<hash>. A crasher, once minimized (-minimize_crash=1)
and fixed, is copied into fuzz/corpus/<target>/ so the test suite replays it forever.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))
sys.path.insert(0, HERE)

import atheris  # noqa: E402

with atheris.instrument_imports():
    import targets  # noqa: E402
    from targets_live import SESSION_OPS  # noqa: E402


# targets that read no more than a few bytes: libFuzzer makes no longer inputs for them
MAX_LEN = {"consumer_session": 2 + SESSION_OPS}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in targets.TARGETS:
        sys.exit(f"usage: run.py <target> [libFuzzer args]; targets: {' '.join(targets.TARGETS)}")
    name = sys.argv[1]
    target = targets.TARGETS[name]
    args = sys.argv[2:]
    flags = [a for a in args if a.startswith("-")]
    dirs = [a for a in args if not a.startswith("-")]
    if name in MAX_LEN and not any(a.startswith("-max_len=") for a in flags):
        flags.append(f"-max_len={MAX_LEN[name]}")
    if not dirs:        # the default: a scratch corpus first (written), the seeds second
        scratch = os.path.join(HERE, "..", "build", "fuzz", "corpus", name)
        crashes = os.path.join(HERE, "..", "build", "fuzz", "crashes")
        os.makedirs(scratch, exist_ok=True)
        os.makedirs(crashes, exist_ok=True)
        dirs = [scratch, os.path.join(HERE, "corpus", name)]
        if not any(a.startswith("-artifact_prefix=") for a in flags):
            flags.append(f"-artifact_prefix={crashes}/{name}-")

    def one(data: bytes) -> None:
        try:
            target(data)
        except targets.EXPECTED:
            pass

    atheris.Setup([sys.argv[0]] + flags + dirs, one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
