"""Run one fuzz target under atheris:  python fuzz/run.py <target> [atheris/libFuzzer args]

    pip install -r fuzz/requirements.txt
    python fuzz/run.py block_records fuzz/corpus/block_records -max_total_time=300

New crashers go into fuzz/corpus/<target>/ so the test suite replays them forever.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import atheris  # noqa: E402

with atheris.instrument_imports():
    import targets  # noqa: E402


def main() -> None:
    name = sys.argv[1]
    target = targets.TARGETS[name]

    def one(data: bytes) -> None:
        try:
            target(data)
        except targets.EXPECTED:
            pass

    atheris.Setup([sys.argv[0]] + sys.argv[2:], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
