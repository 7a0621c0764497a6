// Tokenizer golden data from llama.cpp itself: built against a llama.cpp build beside the project
// (tools/llamacpp/tok_golden.sh), never part of strata's build. For one vocabulary GGUF and one
// file of texts (llama.cpp's .inp format: texts separated by "\n__ggml_vocab_test__\n") it prints
// one JSON object: the vocabulary's end-of-generation set and, per text, the ids llama_tokenize
// gives without and with special tokens, and llama_detokenize of each (hex: it may not be UTF-8).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llama.h"
#include "vocab_only.hpp"

static std::string hex(const std::string& s) {
    static const char* d = "0123456789abcdef";
    std::string out;
    for (unsigned char c : s) { out += d[c >> 4]; out += d[c & 15]; }
    return out;
}

static std::vector<llama_token> tokenize(const llama_vocab* v, const std::string& t, bool add, bool parse) {
    int n = llama_tokenize(v, t.data(), int32_t(t.size()), nullptr, 0, add, parse);
    std::vector<llama_token> ids(size_t(n < 0 ? -n : n));
    n = llama_tokenize(v, t.data(), int32_t(t.size()), ids.data(), int32_t(ids.size()), add, parse);
    if (n < 0) { fprintf(stderr, "tokenize failed\n"); exit(1); }
    ids.resize(size_t(n));
    return ids;
}

static std::string detokenize(const llama_vocab* v, const std::vector<llama_token>& ids, bool remove, bool unparse) {
    std::string s(ids.size() * 16 + 16, '\0');
    int n = llama_detokenize(v, ids.data(), int32_t(ids.size()), s.data(), int32_t(s.size()), remove, unparse);
    if (n < 0) {
        s.resize(size_t(-n));
        n = llama_detokenize(v, ids.data(), int32_t(ids.size()), s.data(), int32_t(s.size()), remove, unparse);
    }
    s.resize(size_t(n));
    return s;
}

static void print_ids(const std::vector<llama_token>& ids) {
    printf("[");
    for (size_t i = 0; i < ids.size(); ++i) printf(i ? ",%d" : "%d", ids[i]);
    printf("]");
}

int main(int argc, char** argv) {
    if (argc != 3) { fprintf(stderr, "usage: tok_golden VOCAB.gguf TEXTS.inp\n"); return 2; }
    llama_model* model = load_vocab_only(argv[1]);
    const llama_vocab* v = llama_model_get_vocab(model);
    const std::string all = read_bytes(argv[2]), sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0;;) {
        size_t at = all.find(sep, pos);
        if (at == std::string::npos) { texts.push_back(all.substr(pos)); break; }
        texts.push_back(all.substr(pos, at - pos));
        pos = at + sep.size();
    }
    // llama.cpp's .inp files end with a separator and an empty last element: drop it.
    if (!texts.empty() && texts.back().empty()) texts.pop_back();

    printf("{\"n_vocab\":%d,\"eog\":[", llama_vocab_n_tokens(v));
    bool first = true;
    for (llama_token t = 0; t < llama_vocab_n_tokens(v); ++t)
        if (llama_vocab_is_eog(v, t)) { printf(first ? "%d" : ",%d", t); first = false; }
    printf("],\"texts\":[\n");
    for (size_t i = 0; i < texts.size(); ++i) {
        const auto plain = tokenize(v, texts[i], false, false);
        const auto special = tokenize(v, texts[i], true, true);
        printf("%s{\"text\":\"%s\",\"ids\":", i ? ",\n" : "", hex(texts[i]).c_str());
        print_ids(plain);
        printf(",\"detok\":\"%s\",\"ids_special\":", hex(detokenize(v, plain, false, true)).c_str());
        print_ids(special);
        printf(",\"detok_special\":\"%s\",\"detok_special_removed\":\"%s\"}",
               hex(detokenize(v, special, false, true)).c_str(), hex(detokenize(v, special, true, false)).c_str());
    }
    printf("\n]}\n");
    llama_model_free(model);
    return 0;
}
