// kimi-linear and kimi-k3 for strata-mkmodel (see mkmodel_kimi.hpp and lib/model/kimi_linear.md).
#include "mkmodel_kimi.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>

#include "common/cli_args.hpp"
#include "mkmodel_moe.hpp"

namespace mkmodel {
namespace {

using cli::usage_error;

Kimi preset(const std::string& arch, const std::string& name) {
    Kimi m{};
    m.k3 = arch == "kimi-k3";
    if (name == "tiny") {  // tests/python/_synth_kimi.py's write_kimi_model defaults
        m.n_embd = 256, m.n_layer = 4, m.n_ff = 512, m.n_vocab = 300, m.n_head = 4, m.n_ctx = 4096;
        m.head_dim = 64, m.conv_kernel = 4;
        m.q_lora = m.k3 ? 256 : 0, m.kv_lora = 256, m.qk_nope = 64, m.qk_rope = 32, m.v_head_dim = 64;
        m.n_ff_exp = 256, m.n_expert = 8, m.n_expert_used = 2, m.n_expert_shared = 1, m.n_dense_lead = 1;
        m.mla_layers = {2};  // KDA, KDA, MLA, KDA
        m.latent = m.k3 ? 128 : 0, m.attn_res_block = m.k3 ? 2 : 0;
    } else if (!m.k3 && name == "48b-slice") {  // Kimi-Linear-48B-A3B's layer dimensions
        m.n_embd = 2304, m.n_layer = 4, m.n_ff = 9216, m.n_vocab = 32000, m.n_head = 32, m.n_ctx = 1048576;
        m.head_dim = 128, m.conv_kernel = 4;
        m.q_lora = 0, m.kv_lora = 512, m.qk_nope = 128, m.qk_rope = 64, m.v_head_dim = 128;
        m.n_ff_exp = 1024, m.n_expert = 256, m.n_expert_used = 8, m.n_expert_shared = 1, m.n_dense_lead = 1;
        m.mla_layers = {3};  // dense KDA, KDA, KDA, MLA
        m.latent = 0, m.attn_res_block = 0;
    } else if (m.k3 && name == "k3-slice") {  // Kimi K3's layer dimensions as reported
        m.n_embd = 7168, m.n_layer = 4, m.n_ff = 33792, m.n_vocab = 32000, m.n_head = 96, m.n_ctx = 1048576;
        m.head_dim = 128, m.conv_kernel = 4;
        m.q_lora = 1536, m.kv_lora = 512, m.qk_nope = 128, m.qk_rope = 64, m.v_head_dim = 128;
        m.n_ff_exp = 3072, m.n_expert = 896, m.n_expert_used = 16, m.n_expert_shared = 2, m.n_dense_lead = 1;
        m.mla_layers = {3};  // dense KDA, KDA, KDA, MLA
        m.latent = 3584, m.attn_res_block = 12;  // capped at n_layer by parse_kimi (the same banking)
    } else {
        throw usage_error("unknown preset '" + name + "' for --arch " + arch + " (tiny, " +
                          (m.k3 ? "k3-slice" : "48b-slice") + ")");
    }
    m.weights_scale = m.k3 ? 1.0 : 2.446;
    m.weights_norm = true;
    m.situ_beta = 4.0, m.situ_linear_beta = 25.0, m.gate_lower_bound = -5.0;
    m.rms_eps = 1e-5, m.freq_base = 10000.0;
    return m;
}

// The integer fields only the Kimi flags set.
const IntegerFields<Kimi> own_integer_fields = {
    {"--kda-head-dim", &Kimi::head_dim, 1},
    {"--conv-kernel", &Kimi::conv_kernel, 1},
    {"--latent", &Kimi::latent, 0},
    {"--attn-res-block", &Kimi::attn_res_block, 0},
};

bool k3_only(const std::string& flag) {
    return flag == "--latent" || flag == "--attn-res-block" || flag == "--situ-beta" ||
           flag == "--situ-linear-beta" || flag == "--gate-lower-bound" || flag == "--no-weights-norm";
}

double real(const std::string& flag, const std::string& text) {
    const std::optional<double> v = cli::to_number<double>(text);
    if (!v || !std::isfinite(*v)) throw usage_error(flag + " needs a finite number, got '" + text + "'");
    return *v;
}

// "3,7,11" (0-based layer indices), or "none" / "" for no MLA layer.
std::vector<int64_t> layer_list(const std::string& text) {
    std::vector<int64_t> out;
    if (text.empty() || text == "none") return out;
    size_t start = 0;
    while (true) {
        const size_t comma = text.find(',', start);
        const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        const std::optional<int64_t> v = cli::to_number<int64_t>(item);
        if (!v || *v < 0 || *v > (int64_t(1) << 31))
            throw usage_error("--mla-layers needs comma-separated 0-based layer indices (or none), got '" + text + "'");
        if (std::find(out.begin(), out.end(), *v) != out.end())
            throw usage_error("--mla-layers names layer " + str(*v) + " twice");
        out.push_back(*v);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    std::sort(out.begin(), out.end());
    return out;
}

void check(const Kimi& m, bool mla_given, int weight_type, const std::string& type_name) {
    check_moe(m.n_expert, m.n_expert_used, m.n_dense_lead, m.n_layer);
    if (m.n_expert > 65536) throw usage_error("--n-expert " + str(m.n_expert) + " is too large (at most 65536)");
    if (m.n_expert_shared > 64)
        throw usage_error("--n-expert-shared " + str(m.n_expert_shared) + " is too large (at most 64)");
    for (int64_t il : m.mla_layers)
        if (il >= m.n_layer)
            throw usage_error(mla_given ? "--mla-layers names layer " + str(il) + ", past the last layer of --n-layer " +
                                              str(m.n_layer) + " (indices are 0-based)"
                                        : "the preset's MLA layer " + str(il) + " is past the last layer of --n-layer " +
                                              str(m.n_layer) + "; give --mla-layers (0-based indices, or none)");
    if (m.conv_kernel > 64) throw usage_error("--conv-kernel " + str(m.conv_kernel) + " is too large (at most 64)");
    if (m.k3) {
        if (m.latent > m.n_embd)
            throw usage_error("--latent " + str(m.latent) + " is more than --n-embd " + str(m.n_embd) +
                              " (the latent experts narrow the stream)");
        if (m.attn_res_block > m.n_layer)
            throw usage_error("--attn-res-block " + str(m.attn_res_block) + " is more than --n-layer " + str(m.n_layer));
        if (!(m.situ_beta > 0.0)) throw usage_error("--situ-beta must be positive");
        if (!(m.gate_lower_bound < 0.0)) throw usage_error("--gate-lower-bound must be negative (a log decay)");
    }
    // Every tensor's value count must fit comfortably in an int64 (2^40 values: 4 TB as float32).
    const double E = double(m.n_embd), H = double(m.n_head), D = H * double(m.head_dim);
    const double Le = m.k3 && m.latent > 0 ? double(m.latent) : E;
    const double qk = double(m.qk_nope + m.qk_rope);
    check_sizes(
        {{"--n-embd (or --latent) * --n-ff-exp * --n-expert", Le * double(m.n_ff_exp) * double(m.n_expert)},
          {"--n-embd * --n-ff-exp * --n-expert-shared", E * double(m.n_ff_exp) * double(m.n_expert_shared)},
          {"--n-embd * --n-ff", E * double(m.n_ff)},
          {"--n-embd * --n-vocab", E * double(m.n_vocab)},
          {"--n-head * --kda-head-dim * --n-embd", D * E},
          {"--n-head * --kda-head-dim * --conv-kernel", D * double(m.conv_kernel)},
          {"--n-head * (--qk-nope + --qk-rope) * max(--n-embd, --q-lora)", H * qk * std::max(E, double(m.q_lora))},
          {"--n-head * --kv-lora * max(--qk-nope, --v-head-dim)",
           H * double(m.kv_lora) * double(std::max(m.qk_nope, m.v_head_dim))},
          {"--n-head * --v-head-dim * --n-embd", H * double(m.v_head_dim) * E}});
    check_embd_block(m.n_embd, weight_type, type_name, m.arch());
}

}  // namespace

bool Kimi::is_mla(int64_t layer) const {
    return std::find(mla_layers.begin(), mla_layers.end(), layer) != mla_layers.end();
}

bool kimi_value_flag(const std::string& flag) {
    static const std::vector<std::string> flags = {"--kda-head-dim",   "--conv-kernel",      "--mla-layers",
                                                   "--latent",         "--attn-res-block",   "--situ-beta",
                                                   "--situ-linear-beta", "--gate-lower-bound"};
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool kimi_k3_flag(const std::string& flag) { return flag != "--no-weights-norm" && k3_only(flag); }

bool kimi_shares_flag(const std::string& flag) {
    static const std::vector<std::string> flags = {
        "--n-expert", "--n-expert-used", "--n-expert-shared", "--n-ff-exp", "--n-dense-lead", "--q-lora",
        "--kv-lora",  "--qk-nope",       "--qk-rope",         "--v-head-dim", "--weights-scale"};
    return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

Kimi parse_kimi(const std::string& arch, const std::string& preset_name,
                const std::vector<std::pair<std::string, std::string>>& flags, int weight_type,
                const std::string& type_name, int64_t min_vocab) {
    Kimi m = preset(arch, preset_name);
    bool mla_given = false, res_block_given = false;
    for (const auto& [flag, text] : flags) {
        if (!m.k3 && k3_only(flag))
            throw usage_error(flag + " is only for --arch kimi-k3" +
                              (flag == "--no-weights-norm" ? " (kimi-linear always renormalizes the expert weights)"
                                                           : ""));
        if (const auto field = integer_field(flag, own_integer_fields)) {
            m.*(field->first) = integer_value(flag, text, field->second);
            res_block_given |= flag == "--attn-res-block";
        } else if (flag == "--mla-layers") {
            m.mla_layers = layer_list(text);
            mla_given = true;
        } else if (flag == "--weights-scale") {
            m.weights_scale = real(flag, text);
            if (m.weights_scale < 0.0) throw usage_error("--weights-scale needs a non-negative number, got '" + text + "'");
        } else if (flag == "--no-weights-norm") {
            m.weights_norm = false;
        } else if (flag == "--situ-beta") {
            m.situ_beta = real(flag, text);
            if (!(m.situ_beta > 0.0)) throw usage_error("--situ-beta needs a positive number, got '" + text + "'");
        } else if (flag == "--situ-linear-beta") {
            m.situ_linear_beta = real(flag, text);  // <= 0 turns the up-branch transform off
        } else if (flag == "--gate-lower-bound") {
            m.gate_lower_bound = real(flag, text);
            if (!(m.gate_lower_bound < 0.0))
                throw usage_error("--gate-lower-bound needs a negative number (a log decay), got '" + text + "'");
        } else if (flag == "--n-head-kv") {
            throw usage_error("--n-head-kv is not for --arch " + arch +
                              " (head_count_kv is per layer: 0 for KDA, 1 for the MLA layers of --mla-layers)");
        } else if (flag == "--head-dim") {
            throw usage_error("--head-dim is not for --arch " + arch +
                              " (KDA: --kda-head-dim; MLA: --qk-nope, --qk-rope, --v-head-dim)");
        } else if (flag == "--gating") {
            throw usage_error("--gating is not for --arch " + arch + " (the Kimi router is always sigmoid)");
        } else if (flag == "--n-group" || flag == "--n-group-used") {
            throw usage_error(flag + " is not for --arch " + arch + " (the Kimi router does not group experts)");
        } else if (flag == "--no-score-bias") {
            throw usage_error("--no-score-bias is not for --arch " + arch + " (exp_probs_b is required)");
        } else if (flag == "--legacy-kv-b") {
            throw usage_error("--legacy-kv-b is not for --arch " + arch + " (current converters write attn_k_b, attn_v_b)");
        } else if (flag.rfind("--yarn-", 0) == 0) {
            throw usage_error(flag + " is not for --arch " + arch + " (its MLA layers do not rotate)");
        } else {
            throw usage_error("unknown argument " + flag);
        }
    }
    // Attention residuals bank at layers 0, B, 2B, ...: with fewer layers than the block the
    // preset's block (K3's 12) banks only at layer 0, as a block of n_layer does, and strata (like
    // a sane file) keeps the block within block_count.
    if (m.k3 && !res_block_given) m.attn_res_block = std::min(m.attn_res_block, m.n_layer);
    check(m, mla_given, weight_type, type_name);
    check_vocab(m.n_vocab, min_vocab);
    return m;
}

std::vector<TensorSpec> plan_kimi(const Kimi& m, int weight_type) {
    const int64_t E = m.n_embd, H = m.n_head, dk = m.head_dim, D = H * dk, K = m.conv_kernel;
    const int64_t C = m.kv_lora, R = m.qk_rope, N = m.qk_nope, Vd = m.v_head_dim;
    const int64_t L = m.k3 ? m.latent : 0, Le = L > 0 ? L : E;
    const int64_t n_shexp = m.n_ff_exp * m.n_expert_shared;
    const bool attn_res = m.k3 && m.attn_res_block > 0;
    PlanBuilder b(weight_type);
    // _synth_kimi.py's ranges: exp(A_log) uniform per head, dt_bias uniform per channel.
    const float a_lo = m.k3 ? 0.5f : 0.1f, a_hi = m.k3 ? 2.0f : 1.0f;
    const float dt_lo = m.k3 ? -4.0f : -1.0f, dt_hi = m.k3 ? 0.0f : 1.0f;
    const float score_std = 1.0f / std::sqrt(float(E));

    b.add("token_embd.weight", weight_type, {E, m.n_vocab}, false, 0.0f, 1.0f);
    for (int64_t l = 0; l < m.n_layer; ++l) {
        const std::string p = "blk." + std::to_string(l) + ".";
        b.norm(p + "attn_norm.weight", E);
        if (attn_res) {
            b.f32_normal(p + "attn_res_score.weight", {E}, score_std);
            b.f32_normal(p + "ffn_res_score.weight", {E}, score_std);
        }
        if (!m.is_mla(l)) {  // KDA
            for (const char* n : {"q", "k", "v"}) {
                b.matrix(p + "attn_" + n + ".weight", {E, D});
                // Depthwise taps, tap index innermost: llama.cpp's [K, 1, D, 1] (kimi-linear), [K, 1, D] (K3).
                b.f32_normal(p + "ssm_conv1d_" + n + ".weight",
                           m.k3 ? std::vector<int64_t>{K, 1, D} : std::vector<int64_t>{K, 1, D, 1},
                           1.0f / std::sqrt(float(K)));
            }
            b.matrix(p + "ssm_f_a.weight", {E, dk});
            b.matrix(p + "ssm_f_b.weight", {dk, D});
            b.add(p + "ssm_dt.bias", STRATA_TYPE_F32, {D}, true, dt_lo, dt_hi);
            // -exp(A_log), as the converter folds it.
            b.add(p + "ssm_a", STRATA_TYPE_F32, m.k3 ? std::vector<int64_t>{H} : std::vector<int64_t>{1, H, 1, 1}, true,
                -a_hi, -a_lo);
            b.matrix(p + "ssm_beta.weight", {E, H});
            if (m.k3) {
                b.matrix(p + "ssm_g.weight", {E, D});  // full-rank output gate
            } else {
                b.matrix(p + "ssm_g_a.weight", {E, dk});
                b.matrix(p + "ssm_g_b.weight", {dk, D});
            }
            b.norm(p + "ssm_norm.weight", dk);
            b.matrix(p + "attn_output.weight", {D, E});
        } else {  // MLA, no rotation
            b.mla_q_kv_a(p, E, H, m.q_lora, C, N, R);
            b.matrix(p + "attn_k_b.weight", {N, C, H})->b = 1.0f / std::sqrt(float(C));  // k_nope = k_b[h]^T c
            b.matrix(p + "attn_v_b.weight", {C, Vd, H});
            if (m.k3) b.matrix(p + "attn_gate.weight", {E, H * Vd});
            b.matrix(p + "attn_output.weight", {H * Vd, E});
        }
        b.norm(p + "ffn_norm.weight", E);
        if (l < m.n_dense_lead) {
            b.dense_ffn(p, E, m.n_ff);
            continue;
        }
        b.f32_normal(p + "ffn_gate_inp.weight", {E, m.n_expert}, 1.0f / std::sqrt(float(E)));
        b.add(p + "exp_probs_b.bias", STRATA_TYPE_F32, {m.n_expert}, true, -0.1f, 0.1f);
        if (L > 0) {
            b.matrix(p + "ffn_routed_down.weight", {E, L});
            b.matrix(p + "ffn_routed_up.weight", {L, E});
            b.norm(p + "ffn_routed_norm.weight", L);
        }
        b.experts(p, E, Le, m.n_ff_exp, m.n_expert, n_shexp);
    }
    if (attn_res) b.f32_normal("output_res_score.weight", {E}, score_std);
    b.norm("output_norm.weight", E);
    b.matrix("output.weight", {E, m.n_vocab});
    return b.take();
}

void add_kimi_metadata(strata::writer& w, const Kimi& m) {
    const ArchKeys k(w, m.arch());
    k.shape(m.n_ctx, m.n_embd, m.n_layer);
    k.u32("vocab_size", m.n_vocab);
    k.u32("feed_forward_length", m.n_ff);
    k.u32("attention.head_count", m.n_head);
    // Per layer: 0 marks a KDA layer, 1 an MLA layer (one latent KV head).
    std::vector<uint32_t> kv(size_t(m.n_layer), 0);
    for (int64_t il : m.mla_layers) kv[size_t(il)] = 1;
    k.u32_array("attention.head_count_kv", kv);
    k.f32("attention.layer_norm_rms_epsilon", m.rms_eps);
    if (m.q_lora > 0) k.u32("attention.q_lora_rank", m.q_lora);  // absent: a full attn_q
    k.u32("attention.kv_lora_rank", m.kv_lora);
    k.u32("attention.key_length_mla", m.qk_nope + m.qk_rope);
    k.u32("attention.value_length_mla", m.v_head_dim);
    k.u32("attention.key_length", m.kv_lora + m.qk_rope);  // the absorbed head
    if (m.k3) k.u32("attention.value_length", m.kv_lora);   // kimi_linear.py writes only key_length
    k.u32("rope.dimension_count", m.qk_rope);
    k.f32("rope.freq_base", m.freq_base);
    k.u32("ssm.conv_kernel", m.conv_kernel);
    k.u32("kda.head_dim", m.head_dim);
    if (m.k3) k.f32("kda.gate_lower_bound", m.gate_lower_bound);
    k.u32("leading_dense_block_count", m.n_dense_lead);
    if (m.n_layer > m.n_dense_lead)  // the router is always sigmoid (2)
        k.experts(m.n_expert, m.n_expert_used, m.n_expert_shared, m.n_ff_exp, 2,
                  m.k3 ? std::optional<bool>(m.weights_norm) : std::nullopt, m.weights_scale);
    if (m.k3) {
        k.u32("expert_latent_length", m.latent);
        k.f32("activation.situ_beta", m.situ_beta);
        k.f32("activation.situ_linear_beta", m.situ_linear_beta);
        k.u32("attn_res.block_size", m.attn_res_block);
    }
}

}  // namespace mkmodel
