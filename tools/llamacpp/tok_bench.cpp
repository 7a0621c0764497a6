// llama.cpp's tokenizer speed on one text, measured as strata-bench tokenize measures strata's:
// llama_tokenize over the whole file (no BOS, special tokens not parsed), --repeat runs, MB/s of
// input, median and best. Built against a llama.cpp build beside the project by
// bench/tokenize_peer.sh; not part of strata's build.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "vocab_only.hpp"

int main(int argc, char** argv) {
    if (argc != 4) { fprintf(stderr, "usage: tok_bench VOCAB.gguf TEXT REPEAT\n"); return 2; }
    llama_model* model = load_vocab_only(argv[1]);
    const llama_vocab* v = llama_model_get_vocab(model);
    const std::string text = read_bytes(argv[2]);
    const int repeat = atoi(argv[3]);
    std::vector<llama_token> ids(text.size() + 16);
    std::vector<double> secs;
    int n = 0;
    for (int r = 0; r < repeat; ++r) {
        auto t0 = std::chrono::steady_clock::now();
        n = llama_tokenize(v, text.data(), int32_t(text.size()), ids.data(), int32_t(ids.size()), false, false);
        secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (n < 0) { fprintf(stderr, "tokenize failed\n"); return 1; }
    }
    std::vector<double> sorted = secs;
    std::sort(sorted.begin(), sorted.end());
    const double mb = double(text.size()) / 1e6;
    printf("{\"tokens\": %d, \"bytes\": %zu, \"tokenize_mb_per_s_median\": %.4f, \"tokenize_mb_per_s_best\": %.4f}\n", n,
           text.size(), mb / sorted[sorted.size() / 2], mb / sorted[0]);
    llama_model_free(model);
    return 0;
}
