// strata-mkmodel: write a synthetic llama-family GGUF model (llama, qwen2, qwen3) with seeded
// random weights, quantized by strata's own quantizer (IQ1_S by default), optionally split
// into shards.
//
//   strata-mkmodel --arch llama|qwen2|qwen3 --preset tiny|small|1b -o OUT.gguf
//                  [--type iq1_s|q8_0|f16|bf16|f32] [--shards N] [--seed S]
//                  [--n-embd N] [--n-layer N] [--n-ff N] [--n-vocab N] [--n-head N]
//                  [--n-head-kv N] [--head-dim N] [--n-ctx N]
//                  [--rope-scaling none|linear|yarn --rope-factor F [--rope-orig-ctx N]]
//                  [--tied-output] [--vocab spm|bpe]
//
// The tensor names, shapes and metadata keys follow llama.cpp's conventions for each
// architecture; the weights are random (no trained model). Tensors are generated and handed
// to the writer one at a time (the next one is generated while the current one is quantized),
// so peak memory is about two float32 tensors plus the converted model. Uses only strata.hpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cli_args.hpp"
#include "mkmodel_vocab.hpp"
#include "strata/strata.hpp"

namespace {

struct Shape {
    int64_t n_embd, n_layer, n_ff, n_vocab, n_head, n_head_kv, n_ctx;
    int64_t head_dim = 0;  // 0: n_embd / n_head
};

struct Options {
    std::string arch = "llama";
    std::string preset = "tiny";
    std::string out;
    std::string type = "iq1_s";
    std::string vocab = "spm";
    std::string rope_scaling = "none";
    double rope_factor = 0.0;
    int64_t rope_orig_ctx = 0;
    bool tied_output = false;
    bool head_dim_given = false;
    uint32_t shards = 1;
    uint64_t seed = 1;
    Shape shape{};
};

const char* kUsage =
    "usage: strata-mkmodel --arch llama|qwen2|qwen3 --preset tiny|small|1b -o OUT.gguf\n"
    "         [--type iq1_s|q8_0|f16|bf16|f32] [--shards N] [--seed S]\n"
    "         [--n-embd N] [--n-layer N] [--n-ff N] [--n-vocab N] [--n-head N] [--n-head-kv N]\n"
    "         [--head-dim N] [--n-ctx N]\n"
    "         [--rope-scaling none|linear|yarn --rope-factor F [--rope-orig-ctx N]]\n"
    "         [--tied-output] [--vocab spm|bpe]\n"
    "Writes a GGUF model with seeded random weights, named and shaped as llama.cpp expects for\n"
    "the architecture (qwen2: q/k/v biases; qwen3: per-head q/k norms). Presets: tiny (n_embd 256,\n"
    "2 layers), small (n_embd 1024, 8 layers, ~100M weights), 1b (n_embd 2048, 22 layers, n_ff\n"
    "5632, vocab 32000, ~1.1B weights). --tied-output omits output.weight. --vocab spm (default)\n"
    "writes a byte-level SentencePiece vocabulary, bpe a GPT-2 style byte-level BPE one. With\n"
    "--shards N > 1 it writes OUT-00001-of-0000N.gguf ... as llama.cpp's gguf-split does.\n"
    "Row lengths (n_embd, n_ff, n_head*head_dim) must be multiples of 256 for iq1_s and of 32\n"
    "for q8_0. Exit status: 0 written, 2 bad arguments, 1 writing failed.\n";

Shape preset(const std::string& name) {
    //       n_embd n_layer n_ff  n_vocab n_head n_head_kv n_ctx
    if (name == "tiny") return {256, 2, 512, 384, 4, 2, 512};
    if (name == "small") return {1024, 8, 2816, 4096, 16, 4, 2048};
    if (name == "1b") return {2048, 22, 5632, 32000, 32, 8, 2048};
    throw cli::usage_error("unknown preset '" + name + "' (tiny, small, 1b)");
}

int type_id(const std::string& name) {
    if (name == "iq1_s") return STRATA_TYPE_IQ1_S;
    if (name == "q8_0") return STRATA_TYPE_Q8_0;
    if (name == "f16") return STRATA_TYPE_F16;
    if (name == "bf16") return STRATA_TYPE_BF16;
    if (name == "f32") return STRATA_TYPE_F32;
    throw cli::usage_error("unsupported --type '" + name + "' (iq1_s, q8_0, f16, bf16, f32)");
}

// The row length (ne[0]) a block-quantized type needs a multiple of; 1 for float types.
int64_t block_size(int type) {
    switch (type) {
        case STRATA_TYPE_IQ1_S: return 256;
        case STRATA_TYPE_Q8_0: return 32;
        default: return 1;
    }
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
    std::vector<std::pair<std::string, std::string>> overrides;
    bool factor_given = false, orig_ctx_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        auto number = [&](const std::string& text, long long min) -> int64_t {
            if (const auto v = cli::to_number<long long>(text); v && *v >= min) return *v;
            throw cli::usage_error(a + " needs " + (min > 0 ? "a positive" : "a non-negative") + " integer, got '" +
                                   text + "'");
        };
        if (a == "--arch") o.arch = value();
        else if (a == "--preset") o.preset = value();
        else if (a == "-o" || a == "--output") o.out = value();
        else if (a == "--type") o.type = value();
        else if (a == "--vocab") o.vocab = value();
        else if (a == "--shards") {
            const int64_t n = number(value(), 1);
            if (n > 99999) throw cli::usage_error("--shards must be at most 99999");
            o.shards = uint32_t(n);
        }
        else if (a == "--seed") o.seed = uint64_t(number(value(), 0));
        else if (a == "--rope-scaling") o.rope_scaling = value();
        else if (a == "--rope-factor") {
            const std::string text = value();
            const std::optional<double> factor = cli::to_number<double>(text);
            if (!factor || !(*factor > 0.0) || !std::isfinite(*factor))
                throw cli::usage_error("--rope-factor needs a positive number, got '" + text + "'");
            o.rope_factor = *factor;
            factor_given = true;
        }
        else if (a == "--rope-orig-ctx") { o.rope_orig_ctx = number(value(), 1); orig_ctx_given = true; }
        else if (a == "--tied-output") o.tied_output = true;
        else if (a.rfind("--n-", 0) == 0 || a == "--head-dim") overrides.emplace_back(a, value());
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else throw cli::usage_error("unknown argument " + a);
    }
    if (o.arch != "llama" && o.arch != "qwen2" && o.arch != "qwen3")
        throw cli::usage_error("unsupported --arch '" + o.arch + "' (llama, qwen2, qwen3)");
    if (o.out.empty()) throw cli::usage_error("-o OUT.gguf is required");
    if (o.vocab != "spm" && o.vocab != "bpe") throw cli::usage_error("unsupported --vocab '" + o.vocab + "' (spm, bpe)");
    o.shape = preset(o.preset);
    Shape& s = o.shape;
    for (auto& [flag, text] : overrides) {
        int64_t* field = flag == "--n-embd"      ? &s.n_embd
                         : flag == "--n-layer"   ? &s.n_layer
                         : flag == "--n-ff"      ? &s.n_ff
                         : flag == "--n-vocab"   ? &s.n_vocab
                         : flag == "--n-head"    ? &s.n_head
                         : flag == "--n-head-kv" ? &s.n_head_kv
                         : flag == "--n-ctx"     ? &s.n_ctx
                         : flag == "--head-dim"  ? &s.head_dim
                                                 : nullptr;
        if (!field) throw cli::usage_error("unknown argument " + flag);
        const std::optional<int64_t> v = cli::to_number<int64_t>(text);
        if (!v) throw cli::usage_error(flag + " needs a positive integer, got '" + text + "'");
        *field = *v;
        if (*field < 1) throw cli::usage_error(flag + " must be positive, got " + text);
        if (*field > (int64_t(1) << 31)) throw cli::usage_error(flag + " is too large: " + text);
        if (flag == "--head-dim") o.head_dim_given = true;
    }

    // Attention geometry.
    if (s.n_head % s.n_head_kv)
        throw cli::usage_error("--n-head " + std::to_string(s.n_head) + " must be a multiple of --n-head-kv " +
                    std::to_string(s.n_head_kv));
    if (!o.head_dim_given) {
        if (s.n_embd % s.n_head)
            throw cli::usage_error("--n-embd " + std::to_string(s.n_embd) + " must be a multiple of --n-head " +
                        std::to_string(s.n_head) + " (or give --head-dim)");
        s.head_dim = s.n_embd / s.n_head;
    } else if (o.arch == "qwen2" && s.head_dim * s.n_head != s.n_embd) {
        throw cli::usage_error("--arch qwen2 needs --head-dim * --n-head == --n-embd (llama.cpp shapes its q/k/v by "
                    "n_embd), got " + std::to_string(s.head_dim) + " * " + std::to_string(s.n_head) +
                    " != " + std::to_string(s.n_embd));
    }
    if (s.head_dim % 2) throw cli::usage_error("--head-dim must be even (RoPE rotates pairs), got " + std::to_string(s.head_dim));

    // Row lengths against the block size of the chosen type.
    const int64_t block = block_size(type_id(o.type));
    auto check_row = [&](const std::string& flag, int64_t n) {
        if (n % block)
            throw cli::usage_error(flag + " gives rows of " + std::to_string(n) + " values, not a multiple of " +
                        std::to_string(block) + " as --type " + o.type + " needs");
    };
    check_row("--n-embd", s.n_embd);
    check_row("--n-ff", s.n_ff);
    check_row("--n-head * --head-dim", s.n_head * s.head_dim);

    // Vocabulary.
    const int64_t min_vocab = o.vocab == "bpe" ? mkmodel::kMinBpeVocab : mkmodel::kMinSpmVocab;
    if (s.n_vocab < min_vocab)
        throw cli::usage_error("--n-vocab " + std::to_string(s.n_vocab) + " is too small for --vocab " + o.vocab +
                    " (at least " + std::to_string(min_vocab) + ")");

    // RoPE scaling.
    if (o.rope_scaling != "none" && o.rope_scaling != "linear" && o.rope_scaling != "yarn")
        throw cli::usage_error("unsupported --rope-scaling '" + o.rope_scaling + "' (none, linear, yarn)");
    if (o.rope_scaling == "none" && (factor_given || orig_ctx_given))
        throw cli::usage_error("--rope-factor and --rope-orig-ctx need --rope-scaling linear or yarn");
    if (o.rope_scaling != "none" && !factor_given)
        throw cli::usage_error("--rope-scaling " + o.rope_scaling + " needs --rope-factor F");
    if (o.rope_scaling != "none" && !orig_ctx_given)
        o.rope_orig_ctx = std::max<int64_t>(1, int64_t(std::llround(double(s.n_ctx) / o.rope_factor)));
    return o;
}

// One tensor to generate: normal(0, stddev) values, or uniform(lo, hi) for norm weights.
struct TensorSpec {
    std::string name;
    int type;
    std::vector<int64_t> shape;  // ne, innermost first
    bool uniform;
    float a, b;  // normal: mean a, stddev b; uniform: [a, b)
    int64_t count() const {
        int64_t n = 1;
        for (int64_t d : shape) n *= d;
        return n;
    }
};

std::vector<TensorSpec> plan_tensors(const Options& o, int weight_type) {
    const Shape& s = o.shape;
    const int64_t n_q = s.n_head * s.head_dim;      // attn_q rows, attn_output row length
    const int64_t n_kv = s.n_head_kv * s.head_dim;  // attn_k / attn_v rows
    std::vector<TensorSpec> t;
    auto matrix = [&](const std::string& name, int64_t cols, int64_t rows) {
        t.push_back({name, weight_type, {cols, rows}, false, 0.0f, 1.0f / std::sqrt(float(cols))});
    };
    auto norm = [&](const std::string& name, int64_t n) {
        t.push_back({name, STRATA_TYPE_F32, {n}, true, 0.8f, 1.2f});
    };
    auto bias = [&](const std::string& name, int64_t n) {
        t.push_back({name, STRATA_TYPE_F32, {n}, false, 0.0f, 0.02f});
    };
    t.push_back({"token_embd.weight", weight_type, {s.n_embd, s.n_vocab}, false, 0.0f, 1.0f});
    for (int64_t l = 0; l < s.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        norm(p + "attn_norm.weight", s.n_embd);
        matrix(p + "attn_q.weight", s.n_embd, n_q);
        if (o.arch == "qwen2") bias(p + "attn_q.bias", n_q);
        if (o.arch == "qwen3") norm(p + "attn_q_norm.weight", s.head_dim);
        matrix(p + "attn_k.weight", s.n_embd, n_kv);
        if (o.arch == "qwen2") bias(p + "attn_k.bias", n_kv);
        if (o.arch == "qwen3") norm(p + "attn_k_norm.weight", s.head_dim);
        matrix(p + "attn_v.weight", s.n_embd, n_kv);
        if (o.arch == "qwen2") bias(p + "attn_v.bias", n_kv);
        matrix(p + "attn_output.weight", n_q, s.n_embd);
        norm(p + "ffn_norm.weight", s.n_embd);
        matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff);
        matrix(p + "ffn_up.weight", s.n_embd, s.n_ff);
        matrix(p + "ffn_down.weight", s.n_ff, s.n_embd);
    }
    norm("output_norm.weight", s.n_embd);
    if (!o.tied_output) matrix("output.weight", s.n_embd, s.n_vocab);
    return t;
}

// Each tensor has its own generator, seeded by (seed, index), so that tensors can be made in
// any order (and on another thread) and still come out the same.
std::vector<float> make_values(const TensorSpec& spec, uint64_t seed, uint64_t index) {
    std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(index), uint32_t(index >> 32)};
    std::mt19937_64 rng(seq);
    std::vector<float> data(size_t(spec.count()));
    if (spec.uniform) {
        std::uniform_real_distribution<float> dist(spec.a, spec.b);
        for (auto& v : data) v = dist(rng);
    } else {
        std::normal_distribution<float> dist(spec.a, spec.b);
        for (auto& v : data) v = dist(rng);
    }
    return data;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

void add_metadata(strata::writer& w, const Options& o, int weight_type) {
    const Shape& s = o.shape;
    const std::string& a = o.arch;
    const bool llama = a == "llama";
    w.set_string("general.architecture", a);
    w.set_string("general.name", "strata-synthetic-" + a + "-" + o.preset);
    w.set_uint("general.file_type", STRATA_VALUE_U32, uint64_t(file_type(weight_type)));
    w.set_uint("general.quantization_version", STRATA_VALUE_U32, 2);
    w.set_uint(a + ".context_length", STRATA_VALUE_U32, uint64_t(s.n_ctx));
    w.set_uint(a + ".embedding_length", STRATA_VALUE_U32, uint64_t(s.n_embd));
    w.set_uint(a + ".block_count", STRATA_VALUE_U32, uint64_t(s.n_layer));
    w.set_uint(a + ".feed_forward_length", STRATA_VALUE_U32, uint64_t(s.n_ff));
    w.set_uint(a + ".attention.head_count", STRATA_VALUE_U32, uint64_t(s.n_head));
    w.set_uint(a + ".attention.head_count_kv", STRATA_VALUE_U32, uint64_t(s.n_head_kv));
    // llama.cpp defaults the head size to n_embd / n_head; qwen3 files always carry it.
    if (a == "qwen3" || s.head_dim * s.n_head != s.n_embd) {
        w.set_uint(a + ".attention.key_length", STRATA_VALUE_U32, uint64_t(s.head_dim));
        w.set_uint(a + ".attention.value_length", STRATA_VALUE_U32, uint64_t(s.head_dim));
    }
    w.set_uint(a + ".rope.dimension_count", STRATA_VALUE_U32, uint64_t(s.head_dim));
    w.set_float(a + ".rope.freq_base", STRATA_VALUE_F32, llama ? 10000.0 : 1000000.0);
    if (o.rope_scaling != "none") {
        w.set_string(a + ".rope.scaling.type", o.rope_scaling);
        w.set_float(a + ".rope.scaling.factor", STRATA_VALUE_F32, o.rope_factor);
        w.set_uint(a + ".rope.scaling.original_context_length", STRATA_VALUE_U32, uint64_t(o.rope_orig_ctx));
    }
    w.set_float(a + ".attention.layer_norm_rms_epsilon", STRATA_VALUE_F32, llama ? 1e-5 : 1e-6);
    w.set_uint(a + ".vocab_size", STRATA_VALUE_U32, uint64_t(s.n_vocab));
    if (o.vocab == "bpe") mkmodel::add_bpe_vocabulary(w, s.n_vocab);
    else mkmodel::add_spm_vocabulary(w, s.n_vocab);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-mkmodel", kUsage, [&] { return parse_args(argc, argv); });
    const Shape& s = o.shape;
    const int weight_type = type_id(o.type);
    const std::vector<TensorSpec> specs = plan_tensors(o, weight_type);
    if (o.shards > specs.size())
        cli::fail("strata-mkmodel", kUsage,
                  "--shards " + std::to_string(o.shards) + " is more than the " + std::to_string(specs.size()) +
                      " tensors");
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto seconds_since = [](clock::time_point t) { return std::chrono::duration<double>(clock::now() - t).count(); };
    try {
        strata::writer w;
        add_metadata(w, o, weight_type);
        int64_t n_weights = 0;
        // Generate tensor i+1 on another thread while tensor i is converted and copied.
        std::future<std::vector<float>> next =
            std::async(std::launch::async, make_values, std::cref(specs[0]), o.seed, uint64_t(0));
        for (size_t i = 0; i < specs.size(); ++i) {
            const auto t0 = clock::now();
            std::vector<float> data = next.get();
            if (i + 1 < specs.size())
                next = std::async(std::launch::async, make_values, std::cref(specs[i + 1]), o.seed, uint64_t(i + 1));
            const TensorSpec& spec = specs[i];
            w.add_tensor(spec.name, spec.type, spec.shape, data.data());
            n_weights += spec.count();
            std::fprintf(stderr, "[%zu/%zu] %-28s %-5s %-14s %.2f s (total %.1f s)\n", i + 1, specs.size(),
                         spec.name.c_str(), spec.type == weight_type ? o.type.c_str() : "f32",
                         shape_text(spec.shape).c_str(), seconds_since(t0), seconds_since(start));
        }
        const auto t_write = clock::now();
        const uint32_t written = w.write(o.out, o.shards);
        std::fprintf(stderr,
                     "wrote %u file(s) for %s: %s %s, %lld layers, n_embd %lld, %.3f B weights (%.1f s to write, "
                     "%.1f s in all)\n",
                     written, o.out.c_str(), o.arch.c_str(), o.type.c_str(), (long long)s.n_layer,
                     (long long)s.n_embd, double(n_weights) / 1e9, seconds_since(t_write), seconds_since(start));
    } catch (const strata::error& e) {
        std::cerr << "strata-mkmodel: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
