// Pre-tokenizers of byte-level BPE: how text is cut into words before merging, one rule set per
// tokenizer.ggml.pre name, exactly as llama.cpp (11434) cuts it, since a vocabulary's merges were
// trained on those words and the ids depend on every split point.
//
// A rule set is a list of steps applied in order, each cutting every word the previous steps
// left further (llama.cpp's unicode_regex_split): a step is a regex (run by token/regex.hpp, with
// llama.cpp's semantics: the text between matches is kept as words too) or one of the splitters
// written out by hand for the patterns llama.cpp itself runs by hand. The hand-written ones follow
// llama.cpp's rules, which for kimi-k2 are not its tiktoken regex: llama.cpp takes any run of
// letters (marks are not letters; case is not looked at) and Han runs by its block ranges.
//
//   auto pre = PreTokenizer::named("llama-bpe");
//   std::vector<size_t> words = pre->split(code_points);   // word lengths in code points
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::token {

class Regex;

class PreTokenizer {
public:
    // Throws strata::Error(Status::unsupported) naming `name` and every supported name.
    static std::shared_ptr<const PreTokenizer> named(std::string_view name);
    // The supported names, comma-separated, for messages and documentation.
    static std::string supported_names();

    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    const std::string& name() const { return name_; }
    // llama.cpp's ignore_merges (llama-bpe): a word that is itself a token is taken whole.
    bool ignore_merges() const { return ignore_merges_; }
    // llama.cpp's clean_spaces: detokenizing drops the space before ? ! . , and some contractions.
    bool clean_spaces() const { return clean_spaces_; }
    // llama.cpp's add_bos default for this rule set (the GGUF's add_bos_token overrides it).
    bool add_bos_default() const { return add_bos_; }

    // The words of `cps` (one text, already decoded), as consecutive lengths in code points.
    std::vector<size_t> split(std::span<const uint32_t> cps) const;

    enum class Splitter : uint8_t { regex, gpt2, llama3, qwen2, qwen35, kimi_k2 };

private:
    struct Step {
        Splitter kind;
        std::shared_ptr<const Regex> regex;  // kind == regex
    };
    PreTokenizer() = default;

    std::string name_;
    std::vector<Step> steps_;
    bool ignore_merges_ = false, clean_spaces_ = true, add_bos_ = false;
};

// The words of `text` as UTF-8 (invalid bytes decoded to U+FFFD first, as llama.cpp does).
std::vector<std::string> pre_tokenize(const PreTokenizer& pre, std::string_view text);

// The hand-written splitters on their own (for tests against the regex engine): one pass over
// the segments `offsets` (consecutive lengths covering cps), returning the new lengths.
std::vector<size_t> split_by_hand(PreTokenizer::Splitter kind, std::span<const uint32_t> cps,
                                  const std::vector<size_t>& offsets);

}  // namespace strata::token
