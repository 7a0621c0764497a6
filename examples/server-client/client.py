"""client.py: ask strata-server (server/, an OpenAI-compatible HTTP server) one question with the
`openai` package: the models it serves, a chat completion, then the same question streamed.

    strata-server --model MODEL.gguf --port 8080 [--api-key KEY] &
    python client.py [BASE_URL] [-q QUESTION] [-n MAX_TOKENS]

BASE_URL: the server's /v1 address (default $STRATA_SERVER_URL, else http://127.0.0.1:8080/v1).
The key, when the server asks for one (--api-key), comes from $STRATA_API_KEY. Needs
`pip install openai`; nothing of strata itself is imported: any OpenAI client works the same.
"""
from __future__ import annotations

import argparse
import os
import sys

try:
    import openai
except ImportError:
    sys.exit("client.py needs the openai package: pip install openai")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base_url", nargs="?", default=os.environ.get("STRATA_SERVER_URL", "http://127.0.0.1:8080/v1"))
    ap.add_argument("-q", "--question", default="What is the capital of France?")
    ap.add_argument("-n", "--max-tokens", type=int, default=32)
    args = ap.parse_args()

    # The openai client insists on a key; a server started without --api-key ignores it.
    client = openai.OpenAI(base_url=args.base_url, api_key=os.environ.get("STRATA_API_KEY", "no-key"),
                           max_retries=0, timeout=120)
    messages = [{"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": args.question}]
    try:
        # GET /v1/models: the server serves one model, under its --alias or file name.
        model = client.models.list().data[0].id
        print(f"model: {model}")

        # POST /v1/chat/completions: the whole answer at once. temperature 0: greedy, the same
        # answer every time (and the same as the streamed one below).
        r = client.chat.completions.create(model=model, messages=messages, temperature=0,
                                           max_tokens=args.max_tokens)
        print(f"answer: {r.choices[0].message.content}")
        print(f"  ({r.usage.prompt_tokens} prompt tokens, {r.usage.completion_tokens} completion tokens, "
              f"finish reason {r.choices[0].finish_reason})")

        # The same with stream=True: server-sent events, one chunk per piece of text.
        print("streamed: ", end="", flush=True)
        stream = client.chat.completions.create(model=model, messages=messages, temperature=0,
                                                max_tokens=args.max_tokens, stream=True)
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                print(chunk.choices[0].delta.content, end="", flush=True)
        print()
    except openai.APIStatusError as e:  # the server answered with an error object (401, 400, 503 ...)
        print(f"client.py: {args.base_url}: HTTP {e.status_code}: {e.message}", file=sys.stderr)
        return 1
    except openai.APIConnectionError as e:  # nothing listening, or the connection broke
        print(f"client.py: cannot reach {args.base_url}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
