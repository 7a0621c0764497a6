// strata-mkmodel: write a synthetic GGUF model (llama, qwen2, qwen3, deepseek2, kimi-linear,
// kimi-k3) with seeded random weights, quantized by strata's own quantizer (IQ1_S by default),
// optionally split into shards.
//
//   strata-mkmodel --arch llama|qwen2|qwen3|deepseek2|kimi-linear|kimi-k3 --preset NAME -o OUT.gguf
//                  [flags: see kUsage]
//
// The tensor names, shapes and metadata keys follow llama.cpp's conventions for each
// architecture (deepseek2: lib/model/deepseek2.md, in mkmodel_deepseek2.cpp; kimi-linear and
// kimi-k3: lib/model/kimi_linear.md, in mkmodel_kimi.cpp); the weights are
// random (no trained model). Tensors are generated and handed to the writer one at a time (the
// next one is generated while the current one is quantized), so peak memory is about two float32
// tensors plus the converted model; the MoE architectures' 3-D expert tensors are generated and converted
// one expert at a time (mkmodel_convert.hpp). Uses only strata.hpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <future>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/cli_args.hpp"
#include "mkmodel_convert.hpp"
#include "mkmodel_deepseek2.hpp"
#include "mkmodel_kimi.hpp"
#include "mkmodel_plan.hpp"
#include "mkmodel_type_mix.hpp"
#include "mkmodel_values.hpp"
#include "mkmodel_vocab.hpp"
#include "strata/strata.hpp"

namespace {

using mkmodel::block_size;
using mkmodel::TensorSpec;

struct Shape {
    int64_t n_embd, n_layer, n_ff, n_vocab, n_head, n_head_kv, n_ctx;
    int64_t head_dim = 0;  // 0: n_embd / n_head
};

struct Options {
    std::string arch = "llama";
    std::string preset = "tiny";
    std::string out;
    std::string type = "iq1_s";
    std::string type_mix;  // empty: every matrix --type
    std::string vocab = "spm";
    mkmodel::RopeFlags rope;
    bool tied_output = false;
    bool head_dim_given = false;
    uint32_t shards = 1;
    uint64_t seed = 1;
    Shape shape{};           // llama, qwen2, qwen3
    mkmodel::Deepseek2 ds2{};  // deepseek2
    mkmodel::Kimi kimi{};      // kimi-linear, kimi-k3

    bool is_ds2() const { return arch == "deepseek2"; }
    bool is_kimi() const { return arch == "kimi-linear" || arch == "kimi-k3"; }
};

const char* kUsage =
    "usage: strata-mkmodel --arch llama|qwen2|qwen3|deepseek2|kimi-linear|kimi-k3 --preset NAME\n"
    "         -o OUT.gguf [--type TYPE] [--type-mix kimi-ud-iq1s] [--shards N] [--seed S] [--vocab spm|bpe]\n"
    "         [--n-embd N] [--n-layer N] [--n-ff N] [--n-vocab N] [--n-head N] [--n-ctx N]\n"
    "         [--rope-scaling none|linear|yarn --rope-factor F [--rope-orig-ctx N]]\n"
    "       llama, qwen2, qwen3 (presets tiny, small, 1b):\n"
    "         [--n-head-kv N] [--head-dim N] [--tied-output]\n"
    "       deepseek2 (presets tiny, k2-slice):\n"
    "         [--n-expert N] [--n-expert-used N] [--n-expert-shared N] [--n-ff-exp N]\n"
    "         [--n-dense-lead N] [--q-lora N] [--kv-lora N] [--qk-nope N] [--qk-rope N]\n"
    "         [--v-head-dim N] [--gating softmax|sigmoid] [--no-score-bias] [--no-weights-norm]\n"
    "         [--weights-scale F] [--n-group N --n-group-used M] [--legacy-kv-b]\n"
    "         [--yarn-log-mul F] [--yarn-beta-fast F] [--yarn-beta-slow F]\n"
    "       kimi-linear (presets tiny, 48b-slice), kimi-k3 (presets tiny, k3-slice):\n"
    "         [--n-expert N] [--n-expert-used N] [--n-expert-shared N] [--n-ff-exp N]\n"
    "         [--n-dense-lead N] [--q-lora N] [--kv-lora N] [--qk-nope N] [--qk-rope N]\n"
    "         [--v-head-dim N] [--weights-scale F] [--kda-head-dim N] [--conv-kernel N]\n"
    "         [--mla-layers I,J,...|none]\n"
    "       kimi-k3 only: [--latent N] [--attn-res-block N] [--situ-beta F]\n"
    "         [--situ-linear-beta F] [--gate-lower-bound F] [--no-weights-norm]\n"
    "Writes a GGUF model with seeded random weights, named and shaped as llama.cpp expects for\n"
    "the architecture (qwen2: q/k/v biases; qwen3: per-head q/k norms). Presets: tiny (n_embd 256,\n"
    "2 layers), small (n_embd 1024, 8 layers, ~100M weights), 1b (n_embd 2048, 22 layers, n_ff\n"
    "5632, vocab 32000, ~1.1B weights). --tied-output omits output.weight. --vocab spm (default)\n"
    "writes a byte-level SentencePiece vocabulary, bpe a GPT-2 style byte-level BPE one. With\n"
    "--shards N > 1 it writes OUT-00001-of-0000N.gguf ... as llama.cpp's gguf-split does.\n"
    "Row lengths (n_embd, n_ff, n_head*head_dim) must be multiples of 256 for iq1_s and of 32\n"
    "for q8_0.\n"
    "deepseek2 (Kimi K2, DeepSeek-V3: MLA attention, MoE with shared experts, YaRN; see\n"
    "lib/model/deepseek2.md): tiny (n_embd 256, 3 layers of which 1 dense, 4 heads, q_lora and\n"
    "kv_lora 256, qk 64+32, v 64, 8 experts of 256 (2 used, 1 shared), sigmoid gating with a score\n"
    "bias, YaRN 8 over 512); k2-slice (Kimi K2's layers: n_embd 7168, 64 heads, q_lora 1536,\n"
    "kv_lora 512, qk 128+64, v 128, n_ff 18432, 384 experts of 2048 (8 used, 1 shared), YaRN 32\n"
    "over 4096; 2 layers, 1 dense + 1 MoE; vocab 32000, K2's own is 163840). --q-lora 0 writes a\n"
    "full attn_q; --legacy-kv-b writes attn_kv_b (and the legacy keys) instead of attn_k_b and\n"
    "attn_v_b (same seed, same weights). --rope-scaling none or yarn (linear is refused). Rows of\n"
    "n_embd must fit --type's blocks; other matrices whose rows do not fall back to q8_0 (rows a\n"
    "multiple of 32) or else f16, as llama.cpp's quantizer does (it uses iq4_nl where strata writes\n"
    "q8_0). The expert tensors are made one expert at a time, but the writer holds every converted\n"
    "tensor until it writes: k2-slice with 384 experts is about 3.5 GB as iq1_s (19 GB q8_0, 36 GB\n"
    "f16) in memory and on disk; --n-expert lowers it (8 experts: 0.3 GB as iq1_s).\n"
    "kimi-linear / kimi-k3 (KDA layers with 0 in the per-layer head_count_kv, NoPE MLA layers,\n"
    "sigmoid MoE; K3: latent experts, SiTU, attention residuals, lower-bound gate, full-rank gates,\n"
    "MLA output gate; see lib/model/kimi_linear.md): tiny (n_embd 256, 4 layers KDA,KDA,MLA,KDA,\n"
    "1 dense, 4 heads, KDA head 64, conv 4, kv_lora 256, qk 64+32, v 64, 8 experts of 256 (2 used,\n"
    "1 shared), vocab 300; kimi-k3 adds q_lora 256, latent 128, attn-res block 2, SiTU 4/25, gate\n"
    "lower bound -5); 48b-slice (Kimi-Linear's layers: n_embd 2304, 32 heads of 128, conv 4,\n"
    "kv_lora 512, qk 128+64, v 128, no q LoRA, n_ff 9216, 256 experts of 1024 (8 used, 1 shared),\n"
    "scale 2.446; 4 layers dense KDA, KDA, KDA, MLA); k3-slice (K3's as reported: n_embd 7168,\n"
    "96 heads of 128, q_lora 1536, kv_lora 512, n_ff 33792, 896 experts of 3072 (16 used, 2 shared)\n"
    "at latent 3584, SiTU 4/25, lower bound -5, attn-res block 12 (capped at --n-layer: the same\n"
    "banking); 4 layers KDA, KDA, KDA, MLA, 1 dense). Slices: vocab 32000, context 1048576.\n"
    "--mla-layers takes 0-based layer indices (the rest are KDA). The same type fallback as\n"
    "deepseek2; routers, biases, norms, conv kernels, ssm_a, ssm_dt and the residual score vectors\n"
    "are f32. Sizes as iq1_s: 48b-slice about 1.1 GB with its 256 experts (--n-expert 8\n"
    "--n-vocab 2048: 0.41 B weights, 86 MB, under a minute on 2 cores); k3-slice about 17 GB\n"
    "with 896 experts (--n-expert 16: 4.4 B weights, about 11 minutes on 2 cores).\n"
    "--type: iq1_s (default), iq1_m, iq4_xs, q4_K, q5_K, q6_K, q4_0, q4_1, q5_0, q5_1, q8_0, f16, bf16,\n"
    "f32. --type-mix kimi-ud-iq1s types each matrix as a Kimi K2 UD-IQ1_S release does (routed\n"
    "experts iq1_s, their down projection iq1_m; attention iq4_xs, q4_K, q6_K; attn_k_b/attn_v_b\n"
    "q8_0; shared experts q4_K/q5_K; embeddings q4_K; output q6_K), overriding --type.\n"
    "Exit status: 0 written, 2 bad arguments, 1 writing failed.\n";

Shape preset(const std::string& name) {
    //       n_embd n_layer n_ff  n_vocab n_head n_head_kv n_ctx
    if (name == "tiny") return {256, 2, 512, 384, 4, 2, 512};
    if (name == "small") return {1024, 8, 2816, 4096, 16, 4, 2048};
    if (name == "1b") return {2048, 22, 5632, 32000, 32, 8, 2048};
    throw cli::usage_error("unknown preset '" + name + "' (tiny, small, 1b)");
}

// The weight types strata can write from float32 (strata_tensor_type_supported), by name.
const int kWritableTypes[] = {STRATA_TYPE_IQ1_S, STRATA_TYPE_IQ1_M, STRATA_TYPE_IQ4_XS, STRATA_TYPE_Q4_K,
                              STRATA_TYPE_Q5_K,  STRATA_TYPE_Q6_K,  STRATA_TYPE_Q4_0,   STRATA_TYPE_Q4_1,
                              STRATA_TYPE_Q5_0,  STRATA_TYPE_Q5_1,  STRATA_TYPE_Q8_0,   STRATA_TYPE_F16,
                              STRATA_TYPE_BF16,  STRATA_TYPE_F32};

int type_id(const std::string& name) {
    std::string known;
    for (int t : kWritableTypes) {
        if (name == strata_tensor_type_name(t) && strata_tensor_type_supported(t)) return t;
        known += std::string(known.empty() ? "" : ", ") + strata_tensor_type_name(t);
    }
    throw cli::usage_error("unsupported --type '" + name + "' (" + known + ")");
}

// llama.cpp's LLAMA_FTYPE values for general.file_type.
int file_type(int type) {
    switch (type) {
        case STRATA_TYPE_F32: return 0;
        case STRATA_TYPE_F16: return 1;
        case STRATA_TYPE_Q4_0: return 2;
        case STRATA_TYPE_Q4_1: return 3;
        case STRATA_TYPE_Q8_0: return 7;
        case STRATA_TYPE_Q5_0: return 8;
        case STRATA_TYPE_Q5_1: return 9;
        case STRATA_TYPE_Q4_K: return 15;  // Q4_K_M
        case STRATA_TYPE_Q5_K: return 17;  // Q5_K_M
        case STRATA_TYPE_Q6_K: return 18;
        case STRATA_TYPE_IQ1_S: return 24;
        case STRATA_TYPE_IQ4_XS: return 30;
        case STRATA_TYPE_IQ1_M: return 31;
        case STRATA_TYPE_BF16: return 32;
        default: return 0;
    }
}

// The llama family's shape: the preset, the shape flags, and their checks.
void llama_shape(Options& o, const std::vector<std::pair<std::string, std::string>>& overrides) {
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

    // Row lengths against the block size of the chosen type (no fallback for the llama family).
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
    mkmodel::RopeFlags& r = o.rope;
    if (r.scaling != "none" && r.scaling != "linear" && r.scaling != "yarn")
        throw cli::usage_error("unsupported --rope-scaling '" + r.scaling + "' (none, linear, yarn)");
    if (r.scaling == "none" && (r.factor_given || r.orig_ctx_given))
        throw cli::usage_error("--rope-factor and --rope-orig-ctx need --rope-scaling linear or yarn");
    if (r.scaling != "none" && !r.factor_given)
        throw cli::usage_error("--rope-scaling " + r.scaling + " needs --rope-factor F");
    if (r.scaling != "none" && !r.orig_ctx_given)
        r.orig_ctx = std::max<int64_t>(1, int64_t(std::llround(double(s.n_ctx) / r.factor)));
}

Options parse_args(int argc, char** argv) {
    Options o;
    std::vector<std::pair<std::string, std::string>> overrides;  // shape flags, in order
    std::vector<std::pair<std::string, std::string>> ds2_flags;  // deepseek2's flags (some Kimi's too)
    std::vector<std::pair<std::string, std::string>> kimi_flags;  // flags only kimi-linear / kimi-k3 take
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
        else if (a == "--type-mix") {
            o.type_mix = value();
            if (!mkmodel::is_type_mix(o.type_mix))
                throw cli::usage_error("unknown --type-mix '" + o.type_mix + "' (kimi-ud-iq1s)");
        }
        else if (a == "--vocab") o.vocab = value();
        else if (a == "--shards") {
            const int64_t n = number(value(), 1);
            if (n > 99999) throw cli::usage_error("--shards must be at most 99999");
            o.shards = uint32_t(n);
        }
        else if (a == "--seed") o.seed = uint64_t(number(value(), 0));
        else if (a == "--rope-scaling") { o.rope.scaling = value(); o.rope.scaling_given = true; }
        else if (a == "--rope-factor") {
            const std::string text = value();
            const std::optional<double> factor = cli::to_number<double>(text);
            if (!factor || !(*factor > 0.0) || !std::isfinite(*factor))
                throw cli::usage_error("--rope-factor needs a positive number, got '" + text + "'");
            o.rope.factor = *factor;
            o.rope.factor_given = true;
        }
        else if (a == "--rope-orig-ctx") { o.rope.orig_ctx = number(value(), 1); o.rope.orig_ctx_given = true; }
        else if (a == "--tied-output") o.tied_output = true;
        else if (mkmodel::deepseek2_value_flag(a)) ds2_flags.emplace_back(a, value());
        else if (mkmodel::deepseek2_switch(a)) ds2_flags.emplace_back(a, "");
        else if (mkmodel::kimi_value_flag(a)) kimi_flags.emplace_back(a, value());
        else if (a.rfind("--n-", 0) == 0 || a == "--head-dim") overrides.emplace_back(a, value());
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else throw cli::usage_error("unknown argument " + a);
    }
    const bool ds2 = o.is_ds2(), kimi = o.is_kimi();
    if (o.arch != "llama" && o.arch != "qwen2" && o.arch != "qwen3" && !ds2 && !kimi)
        throw cli::usage_error("unsupported --arch '" + o.arch +
                               "' (llama, qwen2, qwen3, deepseek2, kimi-linear, kimi-k3)");
    if (o.out.empty()) throw cli::usage_error("-o OUT.gguf is required");
    if (o.vocab != "spm" && o.vocab != "bpe") throw cli::usage_error("unsupported --vocab '" + o.vocab + "' (spm, bpe)");
    const int weight_type = type_id(o.type);
    if (!kimi && !kimi_flags.empty())
        throw cli::usage_error(kimi_flags[0].first + " is only for --arch " +
                               (mkmodel::kimi_k3_flag(kimi_flags[0].first) ? "kimi-k3" : "kimi-linear and kimi-k3"));
    if (!ds2 && !kimi) {
        if (!ds2_flags.empty()) {
            const std::string& flag = ds2_flags[0].first;
            const char* also = flag == "--no-weights-norm"       ? " and kimi-k3"
                               : mkmodel::kimi_shares_flag(flag) ? ", kimi-linear and kimi-k3"
                                                                 : "";
            throw cli::usage_error(flag + " is only for --arch deepseek2" + also);
        }
        llama_shape(o, overrides);
        return o;
    }
    if (o.tied_output)
        throw cli::usage_error("--tied-output is not for --arch " + o.arch + " (llama.cpp requires its output.weight)");
    overrides.insert(overrides.end(), ds2_flags.begin(), ds2_flags.end());
    const int64_t min_vocab = o.vocab == "bpe" ? mkmodel::kMinBpeVocab : mkmodel::kMinSpmVocab;
    if (kimi) {
        if (o.rope.scaling_given || o.rope.factor_given || o.rope.orig_ctx_given)
            throw cli::usage_error("--rope-scaling, --rope-factor and --rope-orig-ctx are not for --arch " + o.arch +
                                   " (its MLA layers do not rotate)");
        overrides.insert(overrides.end(), kimi_flags.begin(), kimi_flags.end());
        o.kimi = mkmodel::parse_kimi(o.arch, o.preset, overrides, weight_type, o.type, min_vocab);
        return o;
    }
    o.ds2 = mkmodel::parse_deepseek2(o.preset, overrides, o.rope, weight_type, o.type, min_vocab);
    return o;
}

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
    for (size_t i = 0; i < t.size(); ++i) t[i].key = i;  // the llama family's generators go by place
    return t;
}

std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

void add_metadata(strata::writer& w, const Options& o, int weight_type) {
    const std::string& a = o.arch;
    w.set_string("general.architecture", a);
    w.set_string("general.name", "strata-synthetic-" + a + "-" + o.preset);
    w.set_uint("general.file_type", STRATA_VALUE_U32,
               uint64_t(o.type_mix.empty() ? file_type(weight_type) : mkmodel::type_mix_file_type(o.type_mix)));
    w.set_uint("general.quantization_version", STRATA_VALUE_U32, 2);
    int64_t n_vocab = 0;
    if (a == "deepseek2") {
        mkmodel::add_deepseek2_metadata(w, o.ds2);
        n_vocab = o.ds2.n_vocab;
    } else if (o.is_kimi()) {
        mkmodel::add_kimi_metadata(w, o.kimi);
        n_vocab = o.kimi.n_vocab;
    } else {
        const Shape& s = o.shape;
        const bool llama = a == "llama";
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
        if (o.rope.scaling != "none") {
            w.set_string(a + ".rope.scaling.type", o.rope.scaling);
            w.set_float(a + ".rope.scaling.factor", STRATA_VALUE_F32, o.rope.factor);
            w.set_uint(a + ".rope.scaling.original_context_length", STRATA_VALUE_U32, uint64_t(o.rope.orig_ctx));
        }
        w.set_float(a + ".attention.layer_norm_rms_epsilon", STRATA_VALUE_F32, llama ? 1e-5 : 1e-6);
        w.set_uint(a + ".vocab_size", STRATA_VALUE_U32, uint64_t(s.n_vocab));
        n_vocab = s.n_vocab;
    }
    if (o.vocab == "bpe") mkmodel::add_bpe_vocabulary(w, n_vocab);
    else mkmodel::add_spm_vocabulary(w, n_vocab);
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-mkmodel", kUsage, [&] { return parse_args(argc, argv); });
    const bool ds2 = o.is_ds2(), kimi = o.is_kimi();
    const int weight_type = type_id(o.type);
    std::vector<TensorSpec> specs = ds2    ? mkmodel::plan_deepseek2(o.ds2, weight_type)
                                    : kimi ? mkmodel::plan_kimi(o.kimi, weight_type)
                                           : plan_tensors(o, weight_type);
    if (!o.type_mix.empty()) mkmodel::apply_type_mix(o.type_mix, specs);
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
        mkmodel::SliceConverter converter;
        int64_t n_weights = 0;
        // Generate tensor i+1 on another thread while tensor i is converted and copied (a per-slice
        // tensor is generated slice by slice as it is converted).
        auto generate = [&](size_t k) {
            if (specs[k].per_slice) return std::async(std::launch::deferred, [] { return std::vector<float>(); });
            return std::async(std::launch::async, mkmodel::make_values, std::cref(specs[k]), o.seed);
        };
        std::future<std::vector<float>> next = generate(0);
        for (size_t i = 0; i < specs.size(); ++i) {
            const auto t0 = clock::now();
            std::vector<float> data = next.get();
            if (i + 1 < specs.size()) next = generate(i + 1);
            const TensorSpec& spec = specs[i];
            if (spec.per_slice) {
                auto reported = t0;
                const std::vector<uint8_t> bytes =
                    mkmodel::convert_per_slice(spec, o.seed, converter, [&](int64_t done) {
                        if (std::chrono::duration<double>(clock::now() - reported).count() < 10.0) return;
                        reported = clock::now();
                        std::fprintf(stderr, "  %s: %lld/%lld experts (%.0f s)\n", spec.name.c_str(), (long long)done,
                                     (long long)spec.shape[2], seconds_since(t0));
                    });
                w.add_tensor_raw(spec.name, spec.type, spec.shape, bytes.data(), bytes.size());
            } else {
                w.add_tensor(spec.name, spec.type, spec.shape, data.data());
            }
            n_weights += spec.count();
            const std::string fallback =
                spec.requested < 0 ? std::string()
                                   : std::string(" (rows of ") + std::to_string(spec.shape[0]) + " do not fit " +
                                         strata_tensor_type_name(spec.requested) + ")";
            std::fprintf(stderr, "[%zu/%zu] %-28s %-5s %-14s %.2f s (total %.1f s)%s\n", i + 1, specs.size(),
                         spec.name.c_str(), strata_tensor_type_name(spec.type), shape_text(spec.shape).c_str(),
                         seconds_since(t0), seconds_since(start), fallback.c_str());
        }
        const auto t_write = clock::now();
        const uint32_t written = w.write(o.out, o.shards);
        std::fprintf(stderr,
                     "wrote %u file(s) for %s: %s %s, %lld layers, n_embd %lld, %.3f B weights (%.1f s to write, "
                     "%.1f s in all)\n",
                     written, o.out.c_str(), o.arch.c_str(), o.type_mix.empty() ? o.type.c_str() : o.type_mix.c_str(),
                     (long long)(ds2 ? o.ds2.n_layer : kimi ? o.kimi.n_layer : o.shape.n_layer),
                     (long long)(ds2 ? o.ds2.n_embd : kimi ? o.kimi.n_embd : o.shape.n_embd),
                     double(n_weights) / 1e9, seconds_since(t_write), seconds_since(start));
    } catch (const strata::error& e) {
        std::cerr << "strata-mkmodel: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
