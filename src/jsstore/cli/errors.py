"""The command's errors: each is one line for the user (``jsstore: <message>``)."""

from __future__ import annotations


class CliError(Exception):
    """A failure the command reports in one line with a non-zero exit status."""

    status = 1


class UsageError(CliError):
    """A command line that asks for something the command cannot do (exit status 2)."""

    status = 2


class ApiError(CliError):
    """A JetStream API answer carrying an error: its description, code and error code."""

    def __init__(self, description: str, code: int = 0, err_code: int = 0):
        super().__init__(f"{description} ({code}, error code {err_code})" if code
                         else description)
        self.description, self.code, self.err_code = description, code, err_code
