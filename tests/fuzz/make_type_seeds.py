#!/usr/bin/env python3
"""Seeds for the GGUF fuzzer: one small file per ggml tensor type strata decodes, each holding two
rows of random blocks (random bytes, so scales of any value: NaN, Inf, subnormal), written by the
`gguf` package. The fuzzer then starts from files whose tensors reach every decoder and dot kernel.
Usage: make_type_seeds.py OUT_DIR"""
import sys
from pathlib import Path

import gguf
import numpy as np

TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q8_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "Q8_K",
         "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL", "IQ4_XS",
         "TQ1_0", "TQ2_0", "MXFP4", "Q1_0", "BF16", "F16"]


def main():
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for name in TYPES:
        t = gguf.GGMLQuantizationType[name]
        block, size = gguf.GGML_QUANT_SIZES[t]
        cols = block * (2 if block < 256 else 1) * (8 if block == 1 else 1)
        blocks = cols // block
        raw = rng.integers(0, 256, (2, blocks * size), dtype=np.uint8)
        w = gguf.GGUFWriter(out / f"type-{name.lower()}.gguf", "fuzz")
        w.add_tensor("w", raw, raw_dtype=t)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


if __name__ == "__main__":
    main()
