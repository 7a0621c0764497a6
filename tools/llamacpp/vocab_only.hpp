// What tok_golden and tok_bench share: a GGUF's vocabulary loaded by llama.cpp alone (vocab_only,
// logs off), and a whole file read as bytes.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "llama.h"

inline llama_model* load_vocab_only(const char* path) {
    llama_log_set([](ggml_log_level, const char*, void*) {}, nullptr);
    llama_backend_init();
    auto mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model* model = llama_model_load_from_file(path, mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", path);
        exit(1);
    }
    return model;
}

inline std::string read_bytes(const char* path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}
