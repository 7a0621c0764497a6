"""strata: ctypes bindings over libstrata's C ABI (include/strata/strata.h).

The library is loaded on first use, from the first of: $STRATA_LIBRARY (if set, only it);
the source tree's build/lib/libstrata.so and any build*/lib/libstrata.so next to it; this
Python's prefix (sys.prefix/lib, where `cmake --install --prefix "$VIRTUAL_ENV"` puts it); the
system loader (ctypes.util.find_library("strata"), then "libstrata.so.0"); /usr/local/lib (an
install not yet in ld.so.cache); or call use_library(path) first. When none loads,
LibraryNotFound (an ImportError) lists every place that was tried.

Every failed call raises StrataError with .status / .status_name and the library's message.
"""
from __future__ import annotations

from . import _lib
from ._lib import ABI_VERSION, load_library, use_library
from ._types import (MetadataType, TensorType, ValueType, tensor_type_id, tensor_type_name,
                     tensor_type_supported)
from .errors import AbiMismatch, LibraryError, LibraryNotFound, Status, StrataError, status_name
from .model import Model, ShardInfo, TensorInfo, VocabInfo, open_model
from .model import chat_builtin_formats
from .session import DEVICES, KV_TYPES, SAMPLING_SETTINGS, STOP_REASONS, Generation, Session
from .pipeline import TRANSPORTS, Pipeline, Worker, format_layers, transport_available, transport_unavailable_reason
from .writer import Writer

__all__ = [
    "ABI_VERSION", "AbiMismatch", "DEVICES", "Generation", "KV_TYPES", "LibraryError", "LibraryNotFound", "MetadataType",
    "Model", "Pipeline", "SAMPLING_SETTINGS", "STOP_REASONS", "Session", "ShardInfo", "Status", "StrataError", "TensorInfo", "TensorType", "ValueType", "VocabInfo", "Worker", "Writer", "format_layers", "abi_version", "library_path",
    "load_library", "open_model", "status_name", "status_string", "tensor_type_id", "tensor_type_name",
    "tensor_type_supported", "use_library", "version", "version_number", "TRANSPORTS", "transport_available",
    "transport_unavailable_reason",
]


def version() -> str:
    """strata_version() of the loaded library, e.g. "0.1.0"."""
    return _lib.lib().strata_version().decode("ascii")


def version_number() -> int:
    return int(_lib.lib().strata_version_number())


def abi_version() -> int:
    """strata_abi_version() of the loaded library (checked against ABI_VERSION on load)."""
    return int(_lib.lib().strata_abi_version())


def status_string(status: int) -> str:
    """The library's fixed description of a status code."""
    return _lib.lib().strata_status_string(int(status)).decode("utf-8", "replace")


def library_path() -> str:
    """The path the loaded library was opened from."""
    return _lib.lib()._name


# The Reports section of strata.h: strata.report.validate(...), strata.report.MemorySampler, ...
from . import report  # noqa: E402
__all__.append("report")
