"""Loaded by every Python process of tests/sparkjob.py's Spark job (driver and workers: this
folder is first on their PYTHONPATH).  With JSSTORE_TEST_KILL_AT=<step>:<nth>, the process
that reaches the directory sink's commit step <step> for the <nth> time SIGKILLs the job's
driver (JSSTORE_TEST_DRIVER_PID) and then itself: a Spark driver killed in the middle of
its write's commit."""

import os
import signal

_target = os.environ.get("JSSTORE_TEST_KILL_AT")
if _target:
    _step, _nth = _target.rsplit(":", 1)
    _seen = [0]

    def _hook(name: str) -> None:
        if name == _step:
            _seen[0] += 1
            if _seen[0] == int(_nth):
                driver = os.environ.get("JSSTORE_TEST_DRIVER_PID")
                if driver:
                    os.kill(int(driver), signal.SIGKILL)
                os.kill(os.getpid(), signal.SIGKILL)

    try:
        from jsstore.spark import staged
        staged.STEP_HOOK = _hook
    except ImportError:      # a process without pyarrow: it runs no commit
        pass
