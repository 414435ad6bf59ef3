"""The CPU time a server process spends over a measured window, per message: the figure the
server benchmarks (pubceiling.py, consumeceiling.py, fanout.py, corefanout.py) report beside
their rates, because on a shared machine it moves far less than a rate does.

    window = ServerCPU(server.pid)      # just before the clients start
    ...                                 # the measured work
    window.stop()                       # just after the last client is done
    window.us_per_message(delivered)

The time is utime + stime of the process from ``/proc/<pid>/stat``: every thread of it (a Go
server's goroutines run on several), counted in clock ticks (10 ms on Linux), so a window
should last a good part of a second or more.
"""

from __future__ import annotations

import os

TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        # the command name, in parentheses, may hold spaces: the fields after it
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS_PER_SECOND


class ServerCPU:
    """The CPU seconds process `pid` uses between its creation and `stop()`."""

    def __init__(self, pid: int):
        self.pid = pid
        self.started = cpu_seconds(pid)
        self.seconds: float | None = None

    def stop(self) -> float:
        self.seconds = cpu_seconds(self.pid) - self.started
        return self.seconds

    def us_per_message(self, messages: int) -> float:
        """Microseconds of server CPU per message over the stopped window."""
        if self.seconds is None:
            raise RuntimeError("the window was not stopped")
        return self.seconds * 1e6 / messages
