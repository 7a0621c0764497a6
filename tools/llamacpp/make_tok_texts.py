"""Random texts for checking tokenizers against llama.cpp: words of many scripts, digit runs,
whitespace runs of every kind, contractions, code, emoji sequences, combining marks, special-token
look-alikes, unassigned and private-use code points, and (with --invalid) malformed UTF-8.
Writes llama.cpp's .inp format (texts separated by "\\n__ggml_vocab_test__\\n").

    python tools/llamacpp/make_tok_texts.py --seed 1 --count 150 OUT.inp
    python tools/llamacpp/make_tok_texts.py --seed 7 --bytes 1000000 --one OUT.txt   (one big text)
"""
from __future__ import annotations

import argparse
import random

SEP = b"\n__ggml_vocab_test__\n"

WORDS = ["the", "The", "THE", "hello", "Hello", "world", "don't", "DON'T", "it's", "I'm", "we'll", "they've",
         "you're", "she'd", "O'Neil", "rock'n'roll", "naïve", "café", "Straße", "İstanbul", "ǅemal", "ΣΊΣΥΦΟΣ",
         "mañana", "façade", "x", "a", "I", "camelCase", "snake_case", "HTTPServer", "iPhone", "e\u0301t\u00e9"]
SCRIPTS = [
    "中文分词测试", "我们", "你好世界", "𠀀𠀁𪚥", "龘", "日本語のテキスト", "カタカナ", "ひらがな", "ｶﾀｶﾅ",
    "한국어", "안녕하세요", "Привет", "мир", "Ελληνικά", "العربية", "עברית", "हिन्दी", "नमस्ते", "ภาษาไทย",
    "ქართული", "Հայերեն", "ᚠᚢᚦ", "ꦗꦮ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "ＦＵＬＬ", "①②③", "Ⅻ", "½¾", "٣٤٥", "१२३", "𝟙𝟚",
]
EMOJI = ["😀", "🦙", "👍🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "✌︎", "🏳️‍🌈", "\u2764\ufe0f", "🧑🏿‍💻"]
PUNCT = [".", ",", "!", "?", ";", ":", "'", "\"", "(", ")", "[", "]", "{", "}", "<", ">", "/", "\\", "-", "_",
         "+", "=", "*", "&", "^", "%", "$", "#", "@", "~", "`", "|", "...", "…", "“", "”", "‘", "’", "—", "–",
         "«", "»", "€", "£", "¥", "±", "×", "÷", "→", "©", "®", "™", "§", "¶", "•", "·", "、", "。", "，", "！",
         "？", "：", "；", "（", "）", "「", "」", "【", "】", "〜", "\u00ad", "\u200b", "\u200d", "\u2060"]
SPACES = [" ", " ", " ", "  ", "   ", "\t", "\n", "\n", "\r\n", "\n\n", " \n", "\n ", " \n\n ", "\t\t", "\r",
          "\u00a0", "\u3000", "\u2003", "\u2009", "\u0085", "\u2028", "\u202f", "\x0b", "\x0c", "\x1c", "    "]
CODE = ["def f(x):\n    return x**2\n", "if (a && b) { c++; }", "for i in range(10):", "x = [1, 2, 3]",
        "#include <stdio.h>", "std::vector<int> v;", "SELECT * FROM t WHERE id=42;", "<div class=\"a\">",
        "$ echo $HOME", "a_b.c-d/e\\f", "0x1F3A", "1e-5", "3.14159", "-273.15", "1,234,567.89", "v2.0.1"]
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<s>", "</s>", "<unk>", "<|begin_of_text|>",
           "<|eot_id|>", "<|start_header_id|>", "[EOS]", "[BOS]", "<|im_user|>", "<｜end▁of▁sentence｜>",
           "<|end|>", "<|user|>", "<fim_prefix>", "<|fim_middle|>", "<mask>", "<|", "|>"]
ODD = ["\u0378", "\ue000", "\U000f0000", "\U0010fffd", "\ufffd", "\ufeff", "\u00ff", "\x7f", "\x01", "\x00",
       "\U0001d11e", "\u0300", "\u20dd", "\u0f40\u0fb5", "\U000e0001"]
INVALID = [b"\xff", b"\xfe", b"\xc3", b"\xe4\xb8", b"\xf0\x9f\x98", b"\x80", b"\xbf\xbf", b"\xc0\x80",
           b"\xed\xa0\x80", b"\xe0\x80\xaf", b"\xf8\x88\x80\x80\x80"]


def digits(rng: random.Random) -> str:
    return "".join(rng.choice("0123456789") for _ in range(rng.choice([1, 1, 2, 3, 4, 5, 6, 7, 9, 12])))


def piece(rng: random.Random, invalid: bool) -> bytes:
    r = rng.random()
    if invalid and r < 0.03:
        return rng.choice(INVALID)
    choices = [(0.30, lambda: rng.choice(WORDS)), (0.12, lambda: rng.choice(SCRIPTS)),
               (0.12, lambda: digits(rng)), (0.18, lambda: rng.choice(SPACES)), (0.10, lambda: rng.choice(PUNCT)),
               (0.05, lambda: rng.choice(EMOJI)), (0.05, lambda: rng.choice(CODE)),
               (0.04, lambda: rng.choice(SPECIAL)), (0.04, lambda: rng.choice(ODD))]
    r = rng.random() * sum(w for w, _ in choices)
    for w, f in choices:
        if r < w:
            return f().encode("utf-8")
        r -= w
    return b" "


def text(rng: random.Random, n_pieces: int, invalid: bool) -> bytes:
    return b"".join(piece(rng, invalid) for _ in range(n_pieces))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--invalid", action="store_true", help="also draw malformed UTF-8 bytes")
    ap.add_argument("--bytes", type=int, default=0, help="with --one: the size of the single text")
    ap.add_argument("--one", action="store_true", help="one text of --bytes bytes, no separators")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with open(a.out, "wb") as f:
        if a.one:
            out = bytearray()
            while len(out) < a.bytes:
                out += text(rng, 40, a.invalid)
            f.write(bytes(out[:a.bytes]).decode("utf-8", "ignore").encode("utf-8") if not a.invalid else bytes(out))
            return
        for _ in range(a.count):
            f.write(text(rng, rng.randint(1, 40), a.invalid) + SEP)


if __name__ == "__main__":
    main()
