// strata-mkmodel: write a synthetic llama-family GGUF model with seeded random weights,
// quantized by strata's own quantizer (IQ1_S by default), optionally split into shards.
//
//   strata-mkmodel --arch llama --preset tiny|small -o OUT.gguf [--type iq1_s|q8_0|f16|bf16|f32]
//                  [--shards N] [--seed S] [--n-embd N] [--n-layer N] [--n-ff N] [--n-vocab N]
//                  [--n-head N] [--n-head-kv N]
//
// The tensor names, shapes and metadata keys follow llama.cpp's llama architecture; the weights
// are random (no trained model), the vocabulary a small byte-level one. Uses only strata.hpp.
#include <cmath>
#include <cstdio>
#include <iostream>
#include <random>
#include <string>
#include <vector>

#include "strata/strata.hpp"

namespace {

struct Shape {
    int64_t n_embd, n_layer, n_ff, n_vocab, n_head, n_head_kv, n_ctx;
};

struct Options {
    std::string arch = "llama";
    std::string preset = "tiny";
    std::string out;
    std::string type = "iq1_s";
    uint32_t shards = 1;
    uint64_t seed = 1;
    Shape shape{};
};

const char* kUsage =
    "usage: strata-mkmodel --arch llama --preset tiny|small -o OUT.gguf [--type iq1_s|q8_0|f16|bf16|f32]\n"
    "                      [--shards N] [--seed S] [--n-embd N] [--n-layer N] [--n-ff N] [--n-vocab N]\n"
    "                      [--n-head N] [--n-head-kv N]\n"
    "Writes a llama-shaped GGUF model with seeded random weights. With --shards N > 1 it writes\n"
    "OUT-00001-of-0000N.gguf ... as llama.cpp's gguf-split does. Row lengths (n_embd, n_ff) must be\n"
    "multiples of 256 for iq1_s and of 32 for q8_0.\n";

[[noreturn]] void usage_error(const std::string& message) {
    std::cerr << "strata-mkmodel: " << message << "\n" << kUsage;
    std::exit(2);
}

Shape preset(const std::string& name) {
    if (name == "tiny") return {256, 2, 512, 384, 4, 2, 512};
    if (name == "small") return {1024, 4, 2816, 4096, 8, 4, 2048};
    usage_error("unknown preset '" + name + "' (tiny, small)");
}

int type_id(const std::string& name) {
    if (name == "iq1_s") return STRATA_TYPE_IQ1_S;
    if (name == "q8_0") return STRATA_TYPE_Q8_0;
    if (name == "f16") return STRATA_TYPE_F16;
    if (name == "bf16") return STRATA_TYPE_BF16;
    if (name == "f32") return STRATA_TYPE_F32;
    usage_error("unsupported --type '" + name + "' (iq1_s, q8_0, f16, bf16, f32)");
}

// llama.cpp's LLAMA_FTYPE values for general.file_type.
int file_type(int type) {
    switch (type) {
        case STRATA_TYPE_F32: return 0;
        case STRATA_TYPE_F16: return 1;
        case STRATA_TYPE_Q8_0: return 7;
        case STRATA_TYPE_IQ1_S: return 24;
        case STRATA_TYPE_BF16: return 32;
        default: return 0;
    }
}

Options parse_args(int argc, char** argv) {
    Options o;
    bool have_preset = false;
    std::vector<std::pair<std::string, int64_t*>> dims;
    std::vector<std::pair<std::string, std::string>> overrides;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        auto value = [&]() {
            if (i + 1 >= argc) usage_error(a + " needs a value");
            return std::string(argv[++i]);
        };
        auto number = [&](const std::string& text) -> int64_t {
            try {
                size_t used = 0;
                long long v = std::stoll(text, &used);
                if (used != text.size() || v < 1) throw std::invalid_argument(text);
                return v;
            } catch (const std::exception&) {
                usage_error(a + " needs a positive integer, got '" + text + "'");
            }
        };
        if (a == "--arch") o.arch = value();
        else if (a == "--preset") { o.preset = value(); have_preset = true; }
        else if (a == "-o" || a == "--output") o.out = value();
        else if (a == "--type") o.type = value();
        else if (a == "--shards") o.shards = uint32_t(number(value()));
        else if (a == "--seed") o.seed = uint64_t(number(value()));
        else if (a.rfind("--n-", 0) == 0) overrides.emplace_back(a, value());
        else if (a == "-h" || a == "--help") { std::cout << kUsage; std::exit(0); }
        else usage_error("unknown argument " + a);
    }
    (void)have_preset;
    if (o.arch != "llama") usage_error("unsupported --arch '" + o.arch + "' (llama)");
    if (o.out.empty()) usage_error("-o OUT.gguf is required");
    o.shape = preset(o.preset);
    for (auto& [flag, text] : overrides) {
        int64_t* field = flag == "--n-embd"      ? &o.shape.n_embd
                         : flag == "--n-layer"   ? &o.shape.n_layer
                         : flag == "--n-ff"      ? &o.shape.n_ff
                         : flag == "--n-vocab"   ? &o.shape.n_vocab
                         : flag == "--n-head"    ? &o.shape.n_head
                         : flag == "--n-head-kv" ? &o.shape.n_head_kv
                                                 : nullptr;
        if (!field) usage_error("unknown argument " + flag);
        try {
            *field = std::stoll(text);
        } catch (const std::exception&) {
            usage_error(flag + " needs a positive integer, got '" + text + "'");
        }
        if (*field < 1) usage_error(flag + " must be positive");
    }
    const Shape& s = o.shape;
    if (s.n_embd % s.n_head || s.n_head % s.n_head_kv)
        usage_error("n_embd must be a multiple of n_head, and n_head of n_head_kv");
    return o;
}

// A byte-level SentencePiece-style vocabulary: <unk>, <s>, </s>, the 256 byte tokens, then
// filler pieces up to n_vocab.
void add_vocabulary(strata::writer& w, int64_t n_vocab) {
    std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
    std::vector<int32_t> types = {2, 3, 3};  // llama.cpp token types: 2 unknown, 3 control, 6 byte, 1 normal
    for (int b = 0; b < 256; ++b) {
        char piece[8];
        std::snprintf(piece, sizeof piece, "<0x%02X>", b);
        tokens.push_back(piece);
        types.push_back(6);
    }
    for (int64_t i = int64_t(tokens.size()); i < n_vocab; ++i) {
        tokens.push_back("\xe2\x96\x81t" + std::to_string(i));  // "▁t<i>"
        types.push_back(1);
    }
    tokens.resize(size_t(n_vocab));
    types.resize(size_t(n_vocab));
    std::vector<float> scores(static_cast<size_t>(n_vocab));
    for (size_t i = 0; i < scores.size(); ++i) scores[i] = -float(i);
    w.set_string("tokenizer.ggml.model", "llama");
    w.set_string_array("tokenizer.ggml.tokens", tokens);
    w.set_array("tokenizer.ggml.scores", STRATA_VALUE_F32, scores.data(), scores.size());
    w.set_array("tokenizer.ggml.token_type", STRATA_VALUE_I32, types.data(), types.size());
    w.set_uint("tokenizer.ggml.bos_token_id", STRATA_VALUE_U32, 1);
    w.set_uint("tokenizer.ggml.eos_token_id", STRATA_VALUE_U32, 2);
    w.set_uint("tokenizer.ggml.unknown_token_id", STRATA_VALUE_U32, 0);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse_args(argc, argv);
    const Shape& s = o.shape;
    const int weight_type = type_id(o.type);
    const int64_t head_dim = s.n_embd / s.n_head;
    try {
        strata::writer w;
        w.set_string("general.architecture", "llama");
        w.set_string("general.name", "strata-synthetic-llama-" + o.preset);
        w.set_uint("general.file_type", STRATA_VALUE_U32, uint64_t(file_type(weight_type)));
        w.set_uint("general.quantization_version", STRATA_VALUE_U32, 2);
        w.set_uint("llama.context_length", STRATA_VALUE_U32, uint64_t(s.n_ctx));
        w.set_uint("llama.embedding_length", STRATA_VALUE_U32, uint64_t(s.n_embd));
        w.set_uint("llama.block_count", STRATA_VALUE_U32, uint64_t(s.n_layer));
        w.set_uint("llama.feed_forward_length", STRATA_VALUE_U32, uint64_t(s.n_ff));
        w.set_uint("llama.attention.head_count", STRATA_VALUE_U32, uint64_t(s.n_head));
        w.set_uint("llama.attention.head_count_kv", STRATA_VALUE_U32, uint64_t(s.n_head_kv));
        w.set_uint("llama.rope.dimension_count", STRATA_VALUE_U32, uint64_t(head_dim));
        w.set_float("llama.rope.freq_base", STRATA_VALUE_F32, 10000.0);
        w.set_float("llama.attention.layer_norm_rms_epsilon", STRATA_VALUE_F32, 1e-5);
        w.set_uint("llama.vocab_size", STRATA_VALUE_U32, uint64_t(s.n_vocab));
        add_vocabulary(w, s.n_vocab);

        std::mt19937_64 rng(o.seed);
        auto add = [&](const std::string& name, int type, int64_t cols, int64_t rows, float stddev) {
            std::normal_distribution<float> dist(0.0f, stddev);
            std::vector<float> data(size_t(cols * rows));
            for (auto& v : data) v = dist(rng);
            std::vector<int64_t> shape = rows > 1 ? std::vector<int64_t>{cols, rows} : std::vector<int64_t>{cols};
            w.add_tensor(name, type, shape, data.data());
        };
        auto add_norm = [&](const std::string& name) {
            std::vector<float> ones(size_t(s.n_embd));
            std::uniform_real_distribution<float> dist(0.8f, 1.2f);
            for (auto& v : ones) v = dist(rng);
            w.add_tensor(name, STRATA_TYPE_F32, {s.n_embd}, ones.data());
        };
        const float scale = 1.0f / std::sqrt(float(s.n_embd));
        add("token_embd.weight", weight_type, s.n_embd, s.n_vocab, 1.0f);
        for (int64_t l = 0; l < s.n_layer; ++l) {
            const std::string p = "blk." + std::to_string(l) + ".";
            add_norm(p + "attn_norm.weight");
            add(p + "attn_q.weight", weight_type, s.n_embd, s.n_embd, scale);
            add(p + "attn_k.weight", weight_type, s.n_embd, s.n_head_kv * head_dim, scale);
            add(p + "attn_v.weight", weight_type, s.n_embd, s.n_head_kv * head_dim, scale);
            add(p + "attn_output.weight", weight_type, s.n_embd, s.n_embd, scale);
            add_norm(p + "ffn_norm.weight");
            add(p + "ffn_gate.weight", weight_type, s.n_embd, s.n_ff, scale);
            add(p + "ffn_up.weight", weight_type, s.n_embd, s.n_ff, scale);
            add(p + "ffn_down.weight", weight_type, s.n_ff, s.n_embd, 1.0f / std::sqrt(float(s.n_ff)));
        }
        add_norm("output_norm.weight");
        add("output.weight", weight_type, s.n_embd, s.n_vocab, scale);

        const uint32_t written = w.write(o.out, o.shards);
        std::fprintf(stderr, "wrote %u file(s) for %s (%s weights, %lld layers, n_embd %lld)\n", written,
                     o.out.c_str(), o.type.c_str(), (long long)s.n_layer, (long long)s.n_embd);
    } catch (const strata::error& e) {
        std::cerr << "strata-mkmodel: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
