"""Exceptions and status codes of the strata bindings."""
from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """strata_status values (strata.h)."""

    OK = 0
    INVALID_ARGUMENT = 1
    IO = 2
    FORMAT = 3
    UNSUPPORTED = 4
    NOT_FOUND = 5
    BUFFER_TOO_SMALL = 6
    OUT_OF_MEMORY = 7
    INTERNAL = 8
    TYPE_MISMATCH = 9
    CONTEXT_OVERFLOW = 10
    STAGE_FAILED = 11
    REFUSED = 12


def status_name(status: int) -> str:
    """"FORMAT", "NOT_FOUND", ... or "UNKNOWN(<n>)" for a code this module does not know."""
    try:
        return Status(status).name
    except ValueError:
        return f"UNKNOWN({status})"


class StrataError(Exception):
    """A strata call returned a non-zero status.

    ``status`` is the int code, ``status_name`` its name ("FORMAT", ...), ``message`` the
    library's strata_last_error() text.
    """

    def __init__(self, status: int, message: str):
        self.status = int(status)
        self.status_name = status_name(self.status)
        self.message = message
        super().__init__(f"[{self.status_name}] {message}" if message else f"[{self.status_name}]")


class LibraryError(ImportError):
    """libstrata.so could not be used (not found, missing symbols, wrong ABI)."""


class LibraryNotFound(LibraryError):
    """No loadable libstrata.so was found; the message lists every place that was tried."""


class AbiMismatch(LibraryError):
    """The loaded library's strata_abi_version() differs from the bindings' ABI_VERSION."""
