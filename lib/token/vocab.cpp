#include "token/vocab.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>

#include "gguf/model_file.hpp"
#include "util/error.hpp"

namespace strata::token {

namespace {

using gguf::Value;
using gguf::ValueType;

constexpr const char* kModel = "tokenizer.ggml.model";
constexpr const char* kTokens = "tokenizer.ggml.tokens";
constexpr const char* kScores = "tokenizer.ggml.scores";
constexpr const char* kTypes = "tokenizer.ggml.token_type";
constexpr const char* kMerges = "tokenizer.ggml.merges";
constexpr const char* kPre = "tokenizer.ggml.pre";

[[noreturn]] void bad(const std::string& key, const std::string& what) {
    // "key[i] ..." for an element, "key ..." for the whole value.
    fail(Status::format, "vocabulary: " + key + (what.starts_with("[") ? "" : " ") + what);
}

std::optional<Value> lookup(const gguf::ModelFile& file, std::string_view key) {
    auto i = file.find_key(key);
    if (!i) return std::nullopt;
    return file.metadata_value(*i);
}

std::string_view need_string(const gguf::ModelFile& file, const char* key) {
    auto v = lookup(file, key);
    if (!v) bad(key, "is missing");
    auto s = v->as_string();
    if (!s) bad(key, std::string("must be a string, not ") + gguf::value_type_name(v->type()));
    return *s;
}

// An array of n elements of type elem (or absent: nullopt).
std::optional<Value> optional_array(const gguf::ModelFile& file, const char* key, ValueType elem,
                                    uint64_t n) {
    auto v = lookup(file, key);
    if (!v) return std::nullopt;
    if (!v->is_array() || v->element_type() != elem)
        bad(key, std::string("must be an array of ") + gguf::value_type_name(elem));
    if (v->size() != n)
        bad(key, "has " + std::to_string(v->size()) + " entries for " + std::to_string(n) + " tokens");
    return v;
}

std::optional<bool> optional_bool(const gguf::ModelFile& file, const char* key) {
    auto v = lookup(file, key);
    if (!v) return std::nullopt;
    auto b = v->as_bool();
    if (!b) bad(key, "must be a bool");
    return b;
}

// A token id key: absent -> fallback; present -> must name a token.
int32_t token_id(const gguf::ModelFile& file, const char* key, int32_t fallback, int32_t n_vocab) {
    auto v = lookup(file, key);
    if (!v) return fallback < n_vocab ? fallback : -1;
    auto id = v->as_int();
    if (!id) bad(key, "must be an integer");
    if (*id < 0 || *id >= n_vocab)
        bad(key, "= " + std::to_string(*id) + " is outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    return int32_t(*id);
}

int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

// "<0xNN>" -> NN, else -1.
int parse_byte_piece(std::string_view t) {
    if (t.size() != 6 || t.substr(0, 3) != "<0x" || t[5] != '>') return -1;
    const int hi = hex_digit(t[3]), lo = hex_digit(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

// Texts llama.cpp takes as the end of generation whatever the file says about them (it makes
// them control tokens): the ends of turns and texts of the chat formats it knows.
constexpr std::string_view kEndOfGenerationTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~[",
};

std::string lowercase_ascii(std::string_view s) {
    std::string out(s);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    return out;
}

// Fill-in-the-middle tokens as llama.cpp finds them when the file names none: by text. Found
// ones become control tokens; pad, repo and file-separator ones also end generation.
struct FimToken {
    const char* key;
    std::vector<std::string_view> texts;
    bool ends_generation;
};
const std::vector<FimToken>& fim_tokens() {
    static const std::vector<FimToken> t = {
        {"tokenizer.ggml.fim_pre_token_id",
         {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<PRE>",
          "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"}, false},
        {"tokenizer.ggml.fim_suf_token_id",
         {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>", "<SUF>",
          "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"}, false},
        {"tokenizer.ggml.fim_mid_token_id",
         {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>", "<MID>",
          "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"}, false},
        {"tokenizer.ggml.fim_pad_token_id", {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}, true},
        {"tokenizer.ggml.fim_rep_token_id", {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}, true},
        {"tokenizer.ggml.fim_sep_token_id", {"<|file_sep|>"}, true},
    };
    return t;
}

// The FIM ids that end generation (-1 when absent). Texts are looked up as llama.cpp's
// token_to_id holds them (a repeated text: its last id). llama.cpp takes the first match in its
// hash order when several texts match; strata takes the lowest id.
std::vector<int32_t> find_fim_tokens(const gguf::ModelFile& file, Vocab& v) {
    std::vector<int32_t> ends;
    for (const FimToken& f : fim_tokens()) {
        int32_t id = token_id(file, f.key, -1, v.n_vocab());
        if (id < 0) {
            for (std::string_view t : f.texts)
                if (const int32_t found = v.find(t); found >= 0 && (id < 0 || found < id)) id = found;
            if (id >= 0) v.type[size_t(id)] = TokenType::control;
        }
        if (id >= 0 && f.ends_generation) ends.push_back(id);
    }
    return ends;
}

// The end-of-generation set as llama.cpp decides it (src/llama-vocab.cpp, load): by text (as
// its token_to_id holds texts), the token types it forces on the way, and its two exceptions.
void mark_end_of_generation(Vocab& v, const std::vector<int32_t>& fim_ends) {
    v.eog.assign(v.text.size(), false);
    for (int32_t id : fim_ends) v.eog[size_t(id)] = true;
    for (std::string_view t : kEndOfGenerationTexts)
        if (const int32_t id = v.find(t); id >= 0) {
            v.eog[size_t(id)] = true;
            v.type[size_t(id)] = TokenType::control;
        }
    // gpt-oss's message markers are always rendered.
    for (std::string_view t : {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"})
        if (const int32_t id = v.find(t); id >= 0) v.type[size_t(id)] = TokenType::user_defined;
    for (int32_t id : {v.eos, v.eot, v.eom})
        if (id >= 0) v.eog[size_t(id)] = true;

    auto eog_with = [&](std::string_view text) -> int32_t {
        const int32_t id = v.find(text);
        return id >= 0 && v.eog[size_t(id)] ? id : -1;
    };
    // o200k_harmony / solar-open: <|end|> separates messages there, it does not end generation.
    const int32_t end = eog_with("<|end|>");
    const bool has_call = eog_with("<|call|>") >= 0 || eog_with("<|calls|>") >= 0;
    if (end >= 0 && has_call && (eog_with("<|return|>") >= 0 || eog_with("<|flush|>") >= 0)) {
        v.eog[size_t(end)] = false;
        v.type[size_t(end)] = TokenType::user_defined;
    }
    // gemma4 / plamo: </s> is an ordinary token there.
    const int32_t s_end = eog_with("</s>");
    if (s_end >= 0 && (eog_with("<|tool_response>") >= 0 || eog_with("<|plamo:eos|>") >= 0)) {
        v.eog[size_t(s_end)] = false;
        v.type[size_t(s_end)] = TokenType::normal;
    }
}

// llama.cpp sets lstrip/rstrip by model name (the GGUF does not store them): a Phi-3 model's
// special tokens eat the whitespace after them, except <unk>, <s> and <|endoftext|>.
void set_strip_attributes(const gguf::ModelFile& file, Vocab& v) {
    v.strip.assign(v.text.size(), 0);
    auto name = lookup(file, "general.name");
    const std::string lname = name && name->as_string() ? lowercase_ascii(*name->as_string()) : std::string();
    if (lname.find("phi-3") == std::string::npos && lname.find("phi3") == std::string::npos) return;
    for (int32_t id : v.specials) v.strip[size_t(id)] |= Vocab::kStripRight;
    if (int32_t id = v.find("</s>"); id >= 0) v.strip[size_t(id)] |= Vocab::kStripRight;
    for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"})
        if (int32_t id = v.find(t); id >= 0) v.strip[size_t(id)] &= uint8_t(~Vocab::kStripRight);
}

}  // namespace

std::string merge_key(std::string_view left, std::string_view right) {
    std::string key;
    const uint32_t n = uint32_t(left.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof n);
    key.append(left);
    key.append(right);
    return key;
}

Vocab Vocab::load(const gguf::ModelFile& file) {
    Vocab v;
    const std::string_view model = need_string(file, kModel);
    if (model == "llama") {
        v.kind = Kind::spm;
    } else if (model == "gpt2") {
        v.kind = Kind::bpe;
    } else {
        fail(Status::unsupported, std::string("vocabulary: ") + kModel + " = '" + std::string(model) +
                                      "' is not supported (supported: 'llama', 'gpt2')");
    }

    auto tokens = lookup(file, kTokens);
    if (!tokens) bad(kTokens, "is missing");
    if (!tokens->is_array() || tokens->element_type() != ValueType::string)
        bad(kTokens, "must be an array of strings");
    if (tokens->size() == 0) bad(kTokens, "is empty");
    if (tokens->size() > uint64_t(INT32_MAX)) bad(kTokens, "has more tokens than int32 ids allow");
    const uint64_t n = tokens->size();
    const int32_t n_vocab = int32_t(n);

    v.text.reserve(n);
    for (uint64_t i = 0; i < n; ++i) v.text.emplace_back(*tokens->at(i).as_string());

    v.score.assign(n, 0.0f);
    if (auto scores = optional_array(file, kScores, ValueType::f32, n))
        std::memcpy(v.score.data(), scores->array_bytes().data(), n * sizeof(float));

    v.type.assign(n, TokenType::normal);
    if (auto types = optional_array(file, kTypes, ValueType::i32, n)) {
        const auto bytes = types->array_bytes();
        for (uint64_t i = 0; i < n; ++i) {
            int32_t t;
            std::memcpy(&t, bytes.data() + i * 4, 4);
            if (t < 0 || t > 6)
                bad(kTypes, "[" + std::to_string(i) + "] = " + std::to_string(t) + " is not a token type (0..6)");
            // llama.cpp treats "undefined" (0) like a normal token.
            v.type[i] = t == 0 ? TokenType::normal : TokenType(t);
        }
    }

    v.byte_value.assign(n, -1);
    v.byte_token.fill(-1);
    for (uint64_t i = 0; i < n; ++i) {
        v.ids[v.text[i]] = int32_t(i);
        if (v.type[i] == TokenType::byte) {
            const int b = parse_byte_piece(v.text[i]);
            if (b < 0)
                bad(kTypes, "[" + std::to_string(i) + "] marks '" + v.text[i] + "' as a byte token, which must be <0xNN>");
            v.byte_value[i] = int16_t(b);
        }
    }
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        v.byte_token[size_t(b)] = v.find(piece);
    }

    // llama.cpp's defaults when the ids are absent: SentencePiece's <unk>=0 <s>=1 </s>=2, and 11
    // for BPE's bos and eos (GPT-2's convention as llama.cpp keeps it).
    const bool spm = v.kind == Kind::spm;
    v.bos = token_id(file, "tokenizer.ggml.bos_token_id", spm ? 1 : 11, n_vocab);
    v.eos = token_id(file, "tokenizer.ggml.eos_token_id", spm ? 2 : 11, n_vocab);
    v.unk = token_id(file, "tokenizer.ggml.unknown_token_id", spm ? 0 : -1, n_vocab);
    v.pad = token_id(file, "tokenizer.ggml.padding_token_id", -1, n_vocab);
    v.eot = token_id(file, "tokenizer.ggml.eot_token_id", -1, n_vocab);
    v.eom = token_id(file, "tokenizer.ggml.eom_token_id", -1, n_vocab);

    if (!spm) {
        // A missing name is llama.cpp's 'default' (it warns that quality will suffer).
        const std::string_view pre = lookup(file, kPre) ? need_string(file, kPre) : std::string_view("default");
        try {
            v.pre = PreTokenizer::named(pre.empty() ? "default" : pre);
        } catch (const Error& e) {
            fail(e.status(), std::string("vocabulary: ") + e.what());
        }
    }
    const bool add_bos_default = spm || (v.pre && v.pre->add_bos_default());
    v.add_bos = optional_bool(file, "tokenizer.ggml.add_bos_token").value_or(add_bos_default) && v.bos >= 0;
    v.add_eos = optional_bool(file, "tokenizer.ggml.add_eos_token").value_or(false) && v.eos >= 0;
    v.add_space_prefix = spm && optional_bool(file, "tokenizer.ggml.add_space_prefix").value_or(true);
    if (optional_bool(file, "tokenizer.ggml.add_bos_token").value_or(false) && v.bos < 0)
        bad("tokenizer.ggml.add_bos_token", "is true but there is no tokenizer.ggml.bos_token_id");
    if (optional_bool(file, "tokenizer.ggml.add_eos_token").value_or(false) && v.eos < 0)
        bad("tokenizer.ggml.add_eos_token", "is true but there is no tokenizer.ggml.eos_token_id");

    if (!spm) {
        auto merges = lookup(file, kMerges);
        // llama.cpp lets Kimi K2 go without merges (every character is then its own piece).
        if (!merges && v.pre->name() != "kimi-k2") bad(kMerges, "is missing (a 'gpt2' vocabulary needs its merges)");
        if (merges) {
            if (!merges->is_array() || merges->element_type() != ValueType::string)
                bad(kMerges, "must be an array of strings");
            for (uint64_t i = 0; i < merges->size(); ++i) {
                const std::string_view m = *merges->at(i).as_string();
                // Split at the first space after the first character: a piece may itself start
                // with a space in vocabularies that are not byte-mapped.
                const size_t sp = m.size() > 1 ? m.find(' ', 1) : std::string_view::npos;
                if (sp == std::string_view::npos || sp + 1 >= m.size())
                    bad(kMerges, "[" + std::to_string(i) + "] = '" + std::string(m) + "' is not 'left right'");
                // The first listing of a pair is its rank, as in the merges file.
                const std::string_view left = m.substr(0, sp), right = m.substr(sp + 1);
                const int32_t l = v.find(left), r = v.find(right);
                if (l >= 0 && r >= 0) v.merge_rank_by_id.emplace(merge_id_key(l, r), int32_t(i));
                else v.merge_rank.emplace(merge_key(left, right), int32_t(i));
            }
        }
    }

    mark_end_of_generation(v, find_fim_tokens(file, v));

    // Matched in the text before normal tokenization: longest text first.
    for (int32_t id = 0; id < n_vocab; ++id) {
        const TokenType t = v.type[size_t(id)];
        if ((t == TokenType::control || t == TokenType::user_defined || t == TokenType::unknown) &&
            !v.text[size_t(id)].empty())
            v.specials.push_back(id);
    }
    std::stable_sort(v.specials.begin(), v.specials.end(), [&](int32_t a, int32_t b) {
        return v.text[size_t(a)].size() > v.text[size_t(b)].size();
    });
    set_strip_attributes(file, v);
    return v;
}

}  // namespace strata::token
