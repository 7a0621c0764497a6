"""OwnedHandle: the lifetime shared by every Python object that owns a libstrata handle."""
from __future__ import annotations

from typing import Any, Optional

from . import _lib


class OwnedHandle:
    """Owns one handle freed by the library function named in _FREE; usable with `with`."""

    _FREE = ""  # e.g. "strata_model_free"
    _h: Optional[int] = None

    def close(self) -> None:
        """Free the handle (idempotent)."""
        h, self._h = self._h, None
        if h:
            getattr(_lib.lib(), self._FREE)(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown may have unloaded the library
            pass
