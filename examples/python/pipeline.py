"""pipeline.py: one model split over three stages on loopback, in this process, with the Python
bindings: two strata.Worker objects (each serving a contiguous layer range on its own thread) and
a strata.Pipeline head that generates greedily through them.

    python pipeline.py MODEL.gguf [PROMPT] [-n N_TOKENS]

Across machines, run `strata-worker --listen HOST:PORT --model MODEL.gguf` on each and give the
head their addresses instead.
"""
from __future__ import annotations

import argparse
import sys

import strata


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", help="the GGUF file (or the first shard of a split model)")
    ap.add_argument("prompt", nargs="?", default="Hello, my name is")
    ap.add_argument("-n", "--n-tokens", type=int, default=16, help="the most tokens to generate")
    args = ap.parse_args()
    if args.n_tokens < 1:
        ap.error("--n-tokens must be at least 1")

    try:
        with strata.Model(args.model) as model:
            arch = model.get_string("general.architecture")
            n_layer = model.get_uint(f"{arch}.block_count")
            if n_layer < 3:
                print(f"pipeline.py: {args.model} has {n_layer} layers: three stages need at least 3", file=sys.stderr)
                return 1
            a, b = n_layer // 3, 2 * n_layer // 3  # head [0, a), workers [a, b) and [b, n_layer)
            # Port 0: any free port; on loopback no pre-shared key is needed. close() stops and joins.
            with strata.Worker(model, layers=(a, b)).start() as first, \
                 strata.Worker(model, layers=(b, n_layer)).start() as second:
                workers = [f"127.0.0.1:{first.port}", f"127.0.0.1:{second.port}"]
                n_ctx = len(model.tokenize(args.prompt)) + args.n_tokens
                # wire_dtype "f32": the hidden states travel unrounded, the logits are one process's.
                with strata.Pipeline(model, workers=workers, layers=[(0, a), (a, b), (b, n_layer)],
                                     n_ctx=n_ctx, wire_dtype="f32") as pipe:
                    session = pipe.session()
                    session.set_sampling(temperature=0.0)
                    gen = session.generate(args.prompt, max_tokens=args.n_tokens)
                    for text in gen:
                        print(text, end="", flush=True)
                    print()
                    print(f"stages {pipe.layers} over {', '.join(workers)}: {len(gen.tokens)} tokens generated",
                          file=sys.stderr)
    except (strata.StrataError, strata.LibraryError) as e:
        print(f"pipeline.py: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
