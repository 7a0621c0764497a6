// libFuzzer target: any bytes as a prompt through every pre-tokenizer: the words always cover
// the decoded text exactly (no code point lost or invented), and the regex engine finishes in
// time linear in the text (libFuzzer's -timeout catches a blow-up).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <numeric>
#include <string_view>
#include <vector>

#include "token/pretokenize.hpp"
#include "token/unicode.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const std::vector<std::shared_ptr<const strata::token::PreTokenizer>> all = [] {
        std::vector<std::shared_ptr<const strata::token::PreTokenizer>> v;
        for (const char* name : {"default", "gpt-2", "llama-bpe", "deepseek-llm", "deepseek-coder", "deepseek-v3",
                                 "falcon", "starcoder", "qwen2", "qwen35", "kimi-k2", "gpt-4o", "tekken", "viking",
                                 "superbpe", "bailingmoe", "jais-2"})
            v.push_back(strata::token::PreTokenizer::named(name));
        return v;
    }();
    std::vector<uint32_t> cps;
    strata::token::decode_utf8_lenient(std::string_view(reinterpret_cast<const char*>(data), size), cps);
    for (const auto& pre : all) {
        const std::vector<size_t> words = pre->split(cps);
        if (std::accumulate(words.begin(), words.end(), size_t{0}) != cps.size()) __builtin_trap();
        for (size_t n : words)
            if (n == 0) __builtin_trap();
    }
    return 0;
}
