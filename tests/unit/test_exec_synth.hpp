// Synthetic llama-family GGUF models for the model/exec tests, and a float64 reference forward
// pass written from the definitions (every weight dequantized with dequantize_row, plain loops).
#pragma once

#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <numbers>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "model/hparams.hpp"
#include "quant/formats.hpp"
#include "quant/half.hpp"
#include "quant/iq/iq1s_quantize.hpp"

namespace strata::test {

struct SynthSpec {
    std::string arch = "llama";
    int64_t n_embd = 256, n_layer = 2, n_ff = 512, n_head = 4, n_head_kv = 2;
    int64_t head_dim = 0;    // 0: n_embd / n_head, key_length not written
    int64_t n_vocab = 64, n_ctx_train = 2048;
    int64_t n_rot = 0;       // 0: rope.dimension_count not written
    uint32_t wtype = quant::kTypeF32;  // type of the matrices (norms and biases stay f32)
    std::string scaling;     // "" (absent), "linear", "yarn"
    double factor = 1.0;
    int64_t n_ctx_orig = 0;
    bool tied = false;
    std::set<std::string> omit;                      // tensors left out
    std::map<std::string, std::pair<int64_t, int64_t>> reshape;  // tensor -> (ne0, ne1)
    std::map<std::string, int64_t> int_keys;         // extra/overriding keys (suffix after "arch.")
};

inline std::vector<float> synth_normal(std::mt19937_64& rng, size_t n, double scale, double mean = 0.0) {
    std::normal_distribution<double> d(mean, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = float(d(rng));
    return v;
}

inline std::unique_ptr<gguf::ModelFile> make_model(const SynthSpec& s, uint64_t seed) {
    std::mt19937_64 rng(seed);
    gguf::Writer w;
    const std::string p = s.arch + ".";
    const int64_t hd = s.head_dim ? s.head_dim : s.n_embd / s.n_head;
    w.set_string("general.architecture", s.arch);
    w.set_u32(p + "context_length", uint32_t(s.n_ctx_train));
    w.set_u32(p + "embedding_length", uint32_t(s.n_embd));
    w.set_u32(p + "block_count", uint32_t(s.n_layer));
    w.set_u32(p + "feed_forward_length", uint32_t(s.n_ff));
    w.set_u32(p + "attention.head_count", uint32_t(s.n_head));
    w.set_u32(p + "attention.head_count_kv", uint32_t(s.n_head_kv));
    if (s.head_dim) {
        w.set_u32(p + "attention.key_length", uint32_t(hd));
        w.set_u32(p + "attention.value_length", uint32_t(hd));
    }
    w.set_f32(p + "attention.layer_norm_rms_epsilon", 1e-6f);
    w.set_f32(p + "rope.freq_base", 10000.0f);
    if (s.n_rot) w.set_u32(p + "rope.dimension_count", uint32_t(s.n_rot));
    if (!s.scaling.empty()) {
        w.set_string(p + "rope.scaling.type", s.scaling);
        w.set_f32(p + "rope.scaling.factor", float(s.factor));
        if (s.n_ctx_orig) w.set_u32(p + "rope.scaling.original_context_length", uint32_t(s.n_ctx_orig));
    }
    for (const auto& [k, v] : s.int_keys) w.set_i64(p + k, v);

    auto add = [&](const std::string& name, int64_t ne0, int64_t ne1, bool matrix, double scale, double mean = 0.0) {
        if (s.omit.count(name)) return;
        auto it = s.reshape.find(name);
        const int64_t a = it != s.reshape.end() ? it->second.first : ne0;
        const int64_t b = it != s.reshape.end() ? it->second.second : ne1;
        const auto x = synth_normal(rng, size_t(a * b), scale, mean);
        const uint32_t type = matrix ? s.wtype : quant::kTypeF32;
        std::vector<uint8_t> bytes(quant::row_size(type, a) * size_t(b));
        if (type == quant::kTypeIQ1_S) quant::quantize_iq1s(x.data(), bytes.data(), b, a, nullptr, 2);
        else
            for (int64_t r = 0; r < b; ++r)
                quant::quantize_row(type, x.data() + r * a, bytes.data() + size_t(r) * quant::row_size(type, a), a, nullptr);
        const int64_t ne[2] = {a, b};
        w.add_tensor(name, type, b == 1 && !matrix ? 1 : 2, ne, bytes);
    };
    const int64_t E = s.n_embd, Q = s.n_head * hd, KV = s.n_head_kv * hd, F = s.n_ff;
    add("token_embd.weight", E, s.n_vocab, true, 1.0);
    for (int64_t il = 0; il < s.n_layer; ++il) {
        const std::string b = "blk." + std::to_string(il) + ".";
        add(b + "attn_norm.weight", E, 1, false, 0.1, 1.0);
        add(b + "attn_q.weight", E, Q, true, 1.0 / std::sqrt(double(E)));
        add(b + "attn_k.weight", E, KV, true, 1.0 / std::sqrt(double(E)));
        add(b + "attn_v.weight", E, KV, true, 1.0 / std::sqrt(double(E)));
        add(b + "attn_output.weight", Q, E, true, 1.0 / std::sqrt(double(Q)));
        if (s.arch == "qwen2") {
            add(b + "attn_q.bias", Q, 1, false, 0.1);
            add(b + "attn_k.bias", KV, 1, false, 0.1);
            add(b + "attn_v.bias", KV, 1, false, 0.1);
        }
        if (s.arch == "qwen3") {
            add(b + "attn_q_norm.weight", hd, 1, false, 0.1, 1.0);
            add(b + "attn_k_norm.weight", hd, 1, false, 0.1, 1.0);
        }
        add(b + "ffn_norm.weight", E, 1, false, 0.1, 1.0);
        add(b + "ffn_gate.weight", E, F, true, 1.0 / std::sqrt(double(E)));
        add(b + "ffn_up.weight", E, F, true, 1.0 / std::sqrt(double(E)));
        add(b + "ffn_down.weight", F, E, true, 1.0 / std::sqrt(double(F)));
    }
    add("output_norm.weight", E, 1, false, 0.1, 1.0);
    if (!s.tied) add("output.weight", E, s.n_vocab, true, 1.0 / std::sqrt(double(E)));
    return gguf::ModelFile::parse_memory(w.to_bytes(), "synthetic-" + s.arch + ".gguf");
}

// ---- float64 reference ----------------------------------------------------------------------

class Reference {
public:
    // kv_f16: round K and V through binary16 as the default KV cache stores them.
    Reference(const gguf::ModelFile& f, const model::Hparams& hp, bool kv_f16) : f_(f), hp_(hp), kv_f16_(kv_f16) {}

    // Logits of every token (n * n_vocab) for the sequence `tokens` from position 0.
    std::vector<double> logits(const std::vector<int32_t>& tokens) const {
        const int64_t E = hp_.n_embd, D = hp_.head_dim, n = int64_t(tokens.size());
        const auto emb = tensor("token_embd.weight");
        const size_t N = static_cast<size_t>(n);
        std::vector<std::vector<double>> x(N);
        for (int64_t t = 0; t < n; ++t) x[size_t(t)].assign(emb.begin() + tokens[size_t(t)] * E, emb.begin() + (tokens[size_t(t)] + 1) * E);
        for (int64_t il = 0; il < hp_.n_layer; ++il) {
            const std::string b = "blk." + std::to_string(il) + ".";
            const auto wq = tensor(b + "attn_q.weight"), wk = tensor(b + "attn_k.weight"), wv = tensor(b + "attn_v.weight");
            const auto wo = tensor(b + "attn_output.weight");
            std::vector<std::vector<double>> q(N), k(N), v(N);
            for (int64_t t = 0; t < n; ++t) {
                const auto xn = rms(x[size_t(t)], tensor(b + "attn_norm.weight"));
                q[size_t(t)] = mv(wq, xn);
                k[size_t(t)] = mv(wk, xn);
                v[size_t(t)] = mv(wv, xn);
                if (hp_.arch.qkv_bias) {
                    add(q[size_t(t)], tensor(b + "attn_q.bias"));
                    add(k[size_t(t)], tensor(b + "attn_k.bias"));
                    add(v[size_t(t)], tensor(b + "attn_v.bias"));
                }
                for (int64_t h = 0; h < hp_.n_head; ++h) head_rope(q[size_t(t)], h, t, hp_.arch.qk_norm ? b + "attn_q_norm.weight" : "");
                for (int64_t h = 0; h < hp_.n_head_kv; ++h) head_rope(k[size_t(t)], h, t, hp_.arch.qk_norm ? b + "attn_k_norm.weight" : "");
                if (kv_f16_)
                    for (auto* vec : {&k[size_t(t)], &v[size_t(t)]})
                        for (double& e : *vec) e = quant::f16_to_f32(quant::f32_to_f16(float(e)));
            }
            for (int64_t t = 0; t < n; ++t) {
                std::vector<double> att(static_cast<size_t>(hp_.n_q()), 0.0);
                for (int64_t h = 0; h < hp_.n_head; ++h) {
                    const int64_t g = h / (hp_.n_head / hp_.n_head_kv);
                    std::vector<double> s(static_cast<size_t>(t + 1));
                    double mx = -1e300;
                    for (int64_t p = 0; p <= t; ++p) {
                        double d = 0;
                        for (int64_t i = 0; i < D; ++i) d += q[size_t(t)][size_t(h * D + i)] * k[size_t(p)][size_t(g * D + i)];
                        s[size_t(p)] = d / std::sqrt(double(D));
                        mx = std::max(mx, s[size_t(p)]);
                    }
                    double sum = 0;
                    for (auto& e : s) sum += (e = std::exp(e - mx));
                    for (int64_t p = 0; p <= t; ++p)
                        for (int64_t i = 0; i < D; ++i) att[size_t(h * D + i)] += s[size_t(p)] / sum * v[size_t(p)][size_t(g * D + i)];
                }
                add(x[size_t(t)], mv(wo, att));
            }
            const auto wg = tensor(b + "ffn_gate.weight"), wu = tensor(b + "ffn_up.weight"), wd = tensor(b + "ffn_down.weight");
            for (int64_t t = 0; t < n; ++t) {
                const auto xn = rms(x[size_t(t)], tensor(b + "ffn_norm.weight"));
                auto g = mv(wg, xn);
                const auto u = mv(wu, xn);
                for (size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
                add(x[size_t(t)], mv(wd, g));
            }
        }
        const auto out_w = f_.find_tensor("output.weight") ? tensor("output.weight") : emb;
        std::vector<double> logits;
        for (int64_t t = 0; t < n; ++t) {
            const auto l = mv(out_w, rms(x[size_t(t)], tensor("output_norm.weight")));
            logits.insert(logits.end(), l.begin(), l.end());
        }
        return logits;
    }

private:
    std::vector<double> tensor(const std::string& name) const {
        const auto& t = f_.tensors()[*f_.find_tensor(name)];
        std::vector<float> v(t.n_elements);
        quant::dequantize_row(t.type, t.data, v.data(), int64_t(t.n_elements));
        return {v.begin(), v.end()};
    }
    std::vector<double> rms(const std::vector<double>& x, const std::vector<double>& w) const {
        double ss = 0;
        for (double e : x) ss += e * e;
        const double s = 1.0 / std::sqrt(ss / double(x.size()) + hp_.rms_eps);
        std::vector<double> y(x.size());
        for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * s * w[i];
        return y;
    }
    static std::vector<double> mv(const std::vector<double>& w, const std::vector<double>& x) {
        const size_t cols = x.size(), rows = w.size() / cols;
        std::vector<double> y(rows, 0.0);
        for (size_t r = 0; r < rows; ++r)
            for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
        return y;
    }
    static void add(std::vector<double>& x, const std::vector<double>& y) {
        for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    }
    // Optional per-head RMSNorm, then RoPE (normal or NeoX pairs; linear / YaRN scaling per ggml).
    void head_rope(std::vector<double>& v, int64_t h, int64_t pos, const std::string& norm) const {
        const int64_t D = hp_.head_dim, R = hp_.rope.n_rot;
        double* x = v.data() + h * D;
        if (!norm.empty()) {
            const auto w = tensor(norm);
            const auto y = rms(std::vector<double>(x, x + D), w);
            std::copy(y.begin(), y.end(), x);
        }
        const auto& r = hp_.rope;
        const bool yarn = r.scaling == model::RopeScaling::yarn;
        const double fs = 1.0 / r.factor;  // llama.cpp applies a factor whatever the scaling type
        double lo = 0, hi = 0, mscale = r.attn_factor;
        if (yarn) {
            auto corr = [&](double beta) {
                return double(R) * std::log(double(r.n_ctx_orig) / (beta * 2 * std::numbers::pi)) / (2 * std::log(r.freq_base));
            };
            lo = std::max(0.0, std::floor(corr(r.beta_fast)));
            hi = std::min(double(R - 1), std::ceil(corr(r.beta_slow)));
            mscale *= 1 + 0.1 * std::log(1 / fs);
        }
        for (int64_t i = 0; i < R / 2; ++i) {
            const double ex = double(pos) * std::pow(r.freq_base, -2.0 * double(i) / double(R));
            double th = fs * ex;
            if (yarn) {
                const double ramp = 1 - std::min(1.0, std::max(0.0, (double(i) - lo) / std::max(0.001, hi - lo)));
                th = th * (1 - ramp) + ex * ramp;
            }
            const int64_t a = hp_.arch.rope_order == model::RopeOrder::neox ? i : 2 * i;
            const int64_t b = hp_.arch.rope_order == model::RopeOrder::neox ? i + R / 2 : 2 * i + 1;
            const double x0 = x[a], x1 = x[b];
            x[a] = (x0 * std::cos(th) - x1 * std::sin(th)) * mscale;
            x[b] = (x0 * std::sin(th) + x1 * std::cos(th)) * mscale;
        }
    }

    const gguf::ModelFile& f_;
    model::Hparams hp_;
    bool kv_f16_;
};

struct LogitDiff {
    double rms_diff = 0, max_abs = 0, ref_rms = 0;
    int argmax_agree = 0, positions = 0;
};

// Compares n positions of logits (n * V each).
inline LogitDiff compare_logits(const std::vector<double>& ref, const float* got, int64_t n, int64_t V) {
    LogitDiff d;
    double ss = 0, rs = 0;
    for (int64_t t = 0; t < n; ++t) {
        int64_t ar = 0, ag = 0;
        for (int64_t i = 0; i < V; ++i) {
            const double r = ref[size_t(t * V + i)], g = got[t * V + i];
            ss += (r - g) * (r - g);
            rs += r * r;
            d.max_abs = std::max(d.max_abs, std::fabs(r - g));
            if (r > ref[size_t(t * V + ar)]) ar = i;
            if (g > got[t * V + ag]) ag = i;
        }
        d.argmax_agree += ar == ag;
    }
    d.positions = int(n);
    d.rms_diff = std::sqrt(ss / double(n * V));
    d.ref_rms = std::sqrt(rs / double(n * V));
    return d;
}

}  // namespace strata::test
