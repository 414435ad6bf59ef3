"""jsstore.deferred: a module imported, or a logger got, with its first use."""

from __future__ import annotations

import logging
import subprocess
import sys

from jsstore.deferred import deferred, deferred_logger


def _run_child(code: str) -> subprocess.CompletedProcess:
    """`code` run by a fresh interpreter (what it has imported is its own), checked to
    succeed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return done


def test_a_deferred_module_is_imported_by_its_first_attribute():
    code = ("import sys\n"
            "from jsstore.deferred import deferred\n"
            "fractions = deferred('fractions')\n"
            "assert 'fractions' not in sys.modules, 'imported early'\n"
            "assert fractions.Fraction(1, 2) * 2 == 1\n"
            "assert 'fractions' in sys.modules\n")
    _run_child(code)


def test_a_deferred_logger_loads_logging_when_it_first_logs():
    code = ("import sys\n"
            "from jsstore.deferred import deferred_logger\n"
            "log = deferred_logger('jsstore.test')\n"
            "assert 'logging' not in sys.modules, 'imported early'\n"
            "log.error('one %s', 'line')\n"
            "assert 'logging' in sys.modules\n")
    assert "one line" in _run_child(code).stderr                 # (logging's last-resort handler)


def test_a_deferred_logger_is_the_named_logger(caplog):
    log = deferred_logger("jsstore.test.deferred")
    assert "not loaded yet" in repr(log)
    with caplog.at_level(logging.WARNING, logger="jsstore.test.deferred"):
        log.warning("seen")
    assert [r.getMessage() for r in caplog.records if r.name == "jsstore.test.deferred"] == \
        ["seen"]
    assert "loaded" in repr(log) and "not loaded" not in repr(log)
    assert repr(deferred("json")).startswith("<deferred module 'json'")
