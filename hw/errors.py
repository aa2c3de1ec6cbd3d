"""The one error type for bad user input, shared by every room.

Raise :class:`InputError` for anything a user can get wrong (a parameter, a file, a config key,
a metadata code). The message names what is wrong and where (file, row, key, parameter). The
command line turns it into one line on stderr and exit code 2; it never shows a traceback.
"""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a parameter, file, row or key that cannot be used as given."""

    def __init__(self, message: str, *, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
