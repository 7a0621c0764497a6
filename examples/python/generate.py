"""generate.py: open a GGUF model with the Python bindings (bindings/python/strata), generate
greedily and stream the text to stdout.

    python generate.py MODEL.gguf [PROMPT] [-n N_TOKENS]

The bindings load libstrata through ctypes: from $STRATA_LIBRARY when set, else from a build
folder of the source tree or the system's library path (see strata/__init__.py). Installed with
`pip install ./bindings/python`, or run from the source tree with PYTHONPATH=bindings/python.
"""
from __future__ import annotations

import argparse
import sys

import strata


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="the GGUF file (or the first shard of a split model)")
    ap.add_argument("prompt", nargs="?", default="Hello, my name is")
    ap.add_argument("-n", "--n-tokens", type=int, default=32, help="the most tokens to generate")
    args = ap.parse_args()
    if args.n_tokens < 1:
        ap.error("--n-tokens must be at least 1")

    try:
        # Both are context managers: the session is freed, then the model.
        with strata.Model(args.model) as model:
            n_prompt = len(model.tokenize(args.prompt))
            with model.session(n_ctx=n_prompt + args.n_tokens, temperature=0.0) as session:
                gen = session.generate(args.prompt, max_tokens=args.n_tokens)
                for text in gen:  # valid UTF-8 pieces, as they are generated
                    print(text, end="", flush=True)
                print()
                print(f"strata {strata.version()}: {gen.n_prompt_tokens} prompt tokens, {len(gen.tokens)} "
                      f"generated, stopped by {gen.stop_reason}", file=sys.stderr)
    except (strata.StrataError, strata.LibraryError) as e:
        # StrataError: the status name and the library's message (naming the file, key, ...);
        # LibraryError: no usable libstrata.so (the message lists every place tried).
        print(f"generate.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
