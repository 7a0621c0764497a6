#include "model/weights.hpp"

#include "model/binder.hpp"

#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"
#include "quant/formats.hpp"
#include "quant/type_traits.hpp"
#include "util/error.hpp"

namespace strata::model {

namespace {

std::string shape_str(int64_t a, int64_t b) { return "[" + std::to_string(a) + ", " + std::to_string(b) + "]"; }

bool matmul_type(uint32_t t) {
    const quant::TypeTraits* traits = quant::find_type_traits(t);
    return traits && quant::is_weight_type(*traits);
}

// llama family: q, k, v, output (+ qwen2 biases, qwen3 per-head norms).
void bind_gqa_attention(Binder& b, const Hparams& hp, const std::string& p, LayerWeights& L) {
    const int64_t E = hp.n_embd, Q = hp.n_q(), KV = hp.n_kv();
    L.wq = b.matrix(p + "attn_q.weight", E, Q);        // [n_embd, n_head*head_dim]
    L.wk = b.matrix(p + "attn_k.weight", E, KV);       // [n_embd, n_head_kv*head_dim]
    L.wv = b.matrix(p + "attn_v.weight", E, KV);       // [n_embd, n_head_kv*head_dim]
    L.wo = b.matrix(p + "attn_output.weight", Q, E);   // [n_head*head_dim, n_embd]
    if (hp.arch.qkv_bias) {
        L.bq = b.vec(p + "attn_q.bias", Q);
        L.bk = b.vec(p + "attn_k.bias", KV);
        L.bv = b.vec(p + "attn_v.bias", KV);
    }
    if (hp.arch.qk_norm) {
        L.q_norm = b.vec(p + "attn_q_norm.weight", hp.head_dim);
        L.k_norm = b.vec(p + "attn_k_norm.weight", hp.head_dim);
    }
}

}  // namespace

bool Binder::has(const std::string& name) const { return file_.find_tensor(name).has_value(); }

const gguf::TensorInfo* Binder::find(const std::string& name, bool required) {
    const auto i = file_.find_tensor(name);
    if (!i) {
        if (required) fail(Status::format, "tensor '" + name + "' is missing");
        return nullptr;
    }
    const gguf::TensorInfo& t = file_.tensors()[*i];
    if (seen_.insert(name).second) bytes_ += t.nbytes;
    return &t;
}

WeightView Binder::view(const std::string& name, const gguf::TensorInfo& t, int64_t cols, int64_t rows, int64_t n) {
    if (t.ne[0] != cols || t.ne[1] != rows || t.ne[2] != n || t.ne[3] != 1) {
        std::string got = shape_str(t.ne[0], t.ne[1]), want = shape_str(cols, rows);
        if (t.ne[2] != 1 || t.ne[3] != 1 || n != 1) {
            got = "[" + std::to_string(t.ne[0]) + ", " + std::to_string(t.ne[1]) + ", " + std::to_string(t.ne[2]) + ", " +
                  std::to_string(t.ne[3]) + "]";
            want = "[" + std::to_string(cols) + ", " + std::to_string(rows) + ", " + std::to_string(n) + ", 1]";
        }
        fail(Status::format, "tensor '" + name + "' has shape " + got + ", expected " + want);
    }
    if (!matmul_type(t.type))
        fail(Status::unsupported, "tensor '" + name + "' has type " + gguf::ggml_type_name(t.type) + " (ggml type " +
                                      std::to_string(t.type) + "), which strata cannot multiply (it runs " +
                                      quant::supported_type_names() + ", less the activation formats q8_1 and q8_K)");
    WeightView w;
    w.name = name;
    w.type = t.type;
    w.cols = cols;
    w.rows = rows;
    w.row_bytes = quant::row_size(t.type, cols);
    w.data = t.data;
    w.nbytes = t.nbytes;
    w.n_mats = n;
    w.mat_stride = w.row_bytes * uint64_t(rows);
    if (w.mat_stride * uint64_t(n) != t.nbytes)
        fail(Status::format, "tensor '" + name + "' holds " + std::to_string(t.nbytes) + " bytes, expected " +
                                 std::to_string(w.mat_stride * uint64_t(n)));
    return w;
}

WeightView Binder::matrix(const std::string& name, int64_t cols, int64_t rows) {
    return view(name, *find(name, true), cols, rows, 1);
}

WeightView Binder::stack(const std::string& name, int64_t cols, int64_t rows, int64_t n) {
    return view(name, *find(name, true), cols, rows, n);
}

std::vector<float> Binder::vec(const std::string& name, int64_t n, bool required) {
    const gguf::TensorInfo* t = find(name, required);
    if (!t) return {};
    if (t->n_elements != uint64_t(n) || t->ne[0] != n)
        fail(Status::format, "tensor '" + name + "' has " + std::to_string(t->n_elements) + " elements (ne[0] = " +
                                 std::to_string(t->ne[0]) + "), expected a vector of " + std::to_string(n));
    if (!quant::is_supported(t->type))
        fail(Status::unsupported, "tensor '" + name + "' has type " + gguf::ggml_type_name(t->type) + " (ggml type " +
                                      std::to_string(t->type) + "), which strata cannot decode (it decodes " +
                                      quant::supported_type_names() + ")");
    std::vector<float> out(static_cast<size_t>(n));
    quant::dequantize_row(t->type, t->data, out.data(), n);
    return out;
}

std::vector<float> Binder::flat(const std::string& name, int64_t n) {
    const gguf::TensorInfo* t = find(name, true);
    if (t->n_elements != uint64_t(n))
        fail(Status::format, "tensor '" + name + "' has " + std::to_string(t->n_elements) + " values, expected " + std::to_string(n));
    if (!quant::is_supported(t->type))
        fail(Status::unsupported, "tensor '" + name + "' has type " + gguf::ggml_type_name(t->type) + " (ggml type " +
                                      std::to_string(t->type) + "), which strata cannot decode (it decodes " +
                                      quant::supported_type_names() + ")");
    if (quant::row_size(t->type, t->ne[0]) * (t->n_elements / uint64_t(t->ne[0])) != t->nbytes)
        fail(Status::format, "tensor '" + name + "' does not hold whole rows of its type");
    std::vector<float> out(static_cast<size_t>(n));
    const uint64_t row_bytes = quant::row_size(t->type, t->ne[0]);
    for (uint64_t r = 0; r < t->n_elements / uint64_t(t->ne[0]); ++r)
        quant::dequantize_row(t->type, t->data + r * row_bytes, out.data() + r * t->ne[0], t->ne[0]);
    return out;
}

std::vector<float> Binder::rows_f32(const WeightView& w) const {
    std::vector<float> out(size_t(w.rows * w.cols));
    for (int64_t r = 0; r < w.rows; ++r) quant::dequantize_row(w.type, w.row(r), out.data() + r * w.cols, w.cols);
    return out;
}

ModelWeights bind_weights(const gguf::ModelFile& file, const Hparams& hp, int first, int last) {
    if (first < 0 || last > hp.n_layer || first >= last)
        fail(Status::invalid_argument, "layer range [" + std::to_string(first) + ", " + std::to_string(last) +
                                           ") is not a non-empty range within the model's " +
                                           std::to_string(hp.n_layer) + " layers");
    Binder b(file);
    ModelWeights w;
    w.first_layer = first;
    w.last_layer = last;
    w.last_stage = last == hp.n_layer;
    const int64_t E = hp.n_embd, F = hp.n_ff, V = hp.n_vocab;

    if (w.first_stage()) w.token_embd = b.matrix("token_embd.weight", E, V);  // [n_embd, n_vocab]
    for (int il = first; il < last; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        LayerWeights L;
        L.attn_norm = b.vec(p + "attn_norm.weight", E);
        if (hp.is_recurrent_layer(il)) bind_kda_attention(b, hp, p, L);
        else if (hp.is_mla()) bind_mla_attention(b, hp, p, L, w.owned_bytes);
        else bind_gqa_attention(b, hp, p, L);
        L.ffn_norm = b.vec(p + "ffn_norm.weight", E);
        if (hp.is_moe_layer(il)) {
            bind_moe_ffn(b, hp, p, L);
        } else {
            L.w_gate = b.matrix(p + "ffn_gate.weight", E, F);  // [n_embd, n_ff]
            L.w_up = b.matrix(p + "ffn_up.weight", E, F);      // [n_embd, n_ff]
            L.w_down = b.matrix(p + "ffn_down.weight", F, E);  // [n_ff, n_embd]
        }
        if (hp.arch.attention == AttentionKind::kda_mla) bind_k3_extras(b, hp, p, L);
        w.layers.push_back(std::move(L));
    }
    if (w.last_stage) {
        w.output_norm = b.vec("output_norm.weight", E);
        if (hp.attn_res_block > 0) w.output_res_score = b.vec("output_res_score.weight", E);
        if (file.find_tensor("output.weight")) {
            w.output = b.matrix("output.weight", E, V);    // [n_embd, n_vocab]
        } else {
            w.output = b.matrix("token_embd.weight", E, V);  // tied embeddings
            w.tied_output = true;
        }
    }
    w.mapped_bytes = b.bytes();
    return w;
}

}  // namespace strata::model
