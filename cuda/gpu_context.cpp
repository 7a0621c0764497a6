// The llama-family forward pass on the GPU (see gpu_context.hpp): setup, the per-layer kernel
// sequence (the order of exec::Context::attention_gqa and ffn_dense), micro-batches and the
// captured one-token graph.
#include "gpu_context.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "attention.cuh"
#include "cuda_error.hpp"
#include "exec/device_plan.hpp"
#include "exec/rope.hpp"
#include "exec/sequence.hpp"
#include "gguf/model_file.hpp"
#include "matmul.hpp"
#include "moe.cuh"
#include "ops.cuh"
#include "util/error.hpp"

namespace strata::cuda {

namespace {

struct CudaFree {
    void operator()(void* p) const { cudaFree(p); }
};
struct PinnedFree {
    void operator()(void* p) const { cudaFreeHost(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;
using PinnedPtr = std::unique_ptr<void, PinnedFree>;

DevicePtr device_alloc(uint64_t bytes, const char* what) {
    void* p = nullptr;
    if (cudaError_t e = cudaMalloc(&p, std::max<uint64_t>(bytes, 256)); e != cudaSuccess) {
        (void)cudaGetLastError();
        check(e, (std::string("allocating ") + std::to_string(bytes) + " bytes of device memory for " + what).c_str());
    }
    return DevicePtr(p);
}

PinnedPtr pinned_alloc(uint64_t bytes, const char* what) {
    void* p = nullptr;
    if (cudaError_t e = cudaMallocHost(&p, std::max<uint64_t>(bytes, 64)); e != cudaSuccess) {
        (void)cudaGetLastError();
        check(e, (std::string("allocating ") + std::to_string(bytes) + " bytes of pinned host memory for " + what).c_str());
    }
    return PinnedPtr(p);
}

// Hands out pieces of one allocation, each on a 256-byte boundary; a first pass over a null base
// only measures.
class Carver {
public:
    explicit Carver(uint8_t* base) : base_(base) {}
    template <class T>
    T* take(uint64_t count) {
        offset_ = (offset_ + exec::kDeviceTensorAlign - 1) / exec::kDeviceTensorAlign * exec::kDeviceTensorAlign;
        T* p = base_ ? reinterpret_cast<T*>(base_ + offset_) : nullptr;
        offset_ += count * sizeof(T);
        return p;
    }
    uint64_t bytes() const { return offset_; }

private:
    uint8_t* base_;
    uint64_t offset_ = 0;
};

uint64_t free_device_memory() {
    size_t free_bytes = 0, total_bytes = 0;
    check(cudaMemGetInfo(&free_bytes, &total_bytes), "asking the device for its free memory");
    return free_bytes;
}

}  // namespace

struct GpuContext::Device {
    cudaStream_t stream = nullptr;
    std::unique_ptr<GpuWeights> w;
    std::unique_ptr<DeviceMatmul> mm;
    AttentionShape attn;
    uint64_t kv_layer_bytes = 0;  // one layer's K (or V) cache: n_ctx rows
    DevicePtr kv_mem, act_mem, rope_mem, ws_mem;
    uint8_t* kv = nullptr;        // [layer][K, V][n_ctx][row_bytes]
    float *x = nullptr, *xn = nullptr, *proj = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *att = nullptr;
    float *gate = nullptr, *up = nullptr, *logits = nullptr;
    int32_t* ids = nullptr;
    int32_t* n_past = nullptr;
    const float* cos = nullptr;
    const float* sin = nullptr;
    int n_pairs = 0;
    void* ws = nullptr;
    PinnedPtr h_ids_mem, h_n_past_mem, h_in_mem, h_out_mem;
    int32_t* h_ids = nullptr;
    int32_t* h_n_past = nullptr;
    float* h_in = nullptr;
    float* h_out = nullptr;
    cudaGraphExec_t graph[2] = {nullptr, nullptr};  // per Input: tokens, hidden
    int64_t one_token_runs[2] = {0, 0};

    // Carves the activations of n_batch tokens (the sizes device_plan_inputs counts).
    void carve(Carver& c, const model::Hparams& hp, int64_t nb, bool last_stage) {
        const uint64_t n = uint64_t(nb);
        x = c.take<float>(n * uint64_t(hp.n_embd));
        xn = c.take<float>(n * uint64_t(hp.n_embd));
        proj = c.take<float>(n * uint64_t(hp.n_embd));
        q = c.take<float>(n * uint64_t(hp.n_q()));
        att = c.take<float>(n * uint64_t(hp.n_q()));
        k = c.take<float>(n * uint64_t(hp.n_kv()));
        v = c.take<float>(n * uint64_t(hp.n_kv()));
        gate = c.take<float>(n * uint64_t(hp.n_ff));
        up = c.take<float>(n * uint64_t(hp.n_ff));
        logits = last_stage ? c.take<float>(uint64_t(exec::device_logit_rows(nb)) * uint64_t(hp.n_vocab)) : nullptr;
        ids = c.take<int32_t>(n);
        n_past = c.take<int32_t>(1);
    }

    ~Device() {
        if (stream) cudaStreamSynchronize(stream);
        for (cudaGraphExec_t& g : graph)
            if (g) cudaGraphExecDestroy(g);
        mm.reset();
        w.reset();
        if (stream) cudaStreamDestroy(stream);
    }
};

std::string gpu_unavailable_reason() {
    int devices = 0;
    const cudaError_t e = cudaGetDeviceCount(&devices);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
    }
    if (devices == 0) return "no usable CUDA device: the CUDA runtime counts 0 devices";
    return "";
}

GpuContext::GpuContext(const gguf::ModelFile& file, const exec::ContextParams& params, const GpuOptions& options)
    : hp_(model::read_hparams(file)), d_(std::make_unique<Device>()) {
    exec::check_gpu_supports(hp_);
    if (params.n_ctx < 0) fail(Status::invalid_argument, "n_ctx must be >= 0 (0: the model's context length capped at 4096)");
    if (params.n_batch <= 0) fail(Status::invalid_argument, "n_batch must be positive");
    if (std::string why = gpu_unavailable_reason(); !why.empty()) fail(Status::unsupported, why);
    const int last = params.last_layer < 0 ? int(hp_.n_layer) : params.last_layer;
    const model::ModelWeights w = model::bind_weights(file, hp_, params.first_layer, last);
    first_layer_ = w.first_layer;
    last_layer_ = w.last_layer;
    last_stage_ = w.last_stage;
    n_ctx_ = params.n_ctx > 0 ? params.n_ctx : std::min<int64_t>(hp_.n_ctx_train, 4096);
    if (n_ctx_ > INT32_MAX) fail(Status::invalid_argument, "n_ctx " + std::to_string(n_ctx_) + " exceeds the GPU's 32-bit positions");
    n_batch_ = std::min(params.n_batch, n_ctx_);
    graphs_ = options.cuda_graphs;

    const int64_t E = hp_.n_embd, Q = hp_.n_q(), KV = hp_.n_kv(), F = hp_.n_ff;
    const MatmulLimits limits{.max_cols = std::max({E, Q, F}),
                              .max_rows = std::max({E, Q, KV, F, last_stage_ ? hp_.n_vocab : int64_t(0)}),
                              .max_tokens = n_batch_};
    Device& d = *d_;
    d.attn = AttentionShape{.n_head = int(hp_.n_head),
                            .n_head_kv = int(hp_.n_head_kv),
                            .head_dim = int(hp_.head_dim),
                            .kv_q8_0 = params.kv_type == exec::KvType::q8_0 ? 1 : 0,
                            .row_bytes = exec::kv_row_bytes(params.kv_type, hp_.n_head_kv, hp_.head_dim),
                            .n_ctx = n_ctx_,
                            .scale = float(1.0 / std::sqrt(double(hp_.head_dim)))};
    const uint64_t ws_bytes = std::max(attention_workspace_bytes(d.attn, 1), attention_workspace_bytes(d.attn, int(n_batch_)));

    // Plan before allocating anything.
    exec::PlanInputs in = exec::device_plan_inputs(hp_, {.first_layer = first_layer_,
                                                         .last_layer = last_layer_,
                                                         .n_ctx = n_ctx_,
                                                         .n_batch = n_batch_,
                                                         .kv_type = params.kv_type,
                                                         .weight_bytes = GpuWeights::upload_bytes(w),
                                                         .matmul_workspace_bytes = DeviceMatmul::workspace_bytes(limits),
                                                         .attention_workspace_bytes = ws_bytes});
    in.n_ctx_train = hp_.n_ctx_train;
    in.budget_bytes = params.memory_budget > 0 ? params.memory_budget : free_device_memory();
    plan_ = exec::make_plan(in);
    plan_.on_device = true;
    if (!plan_.fits())
        fail(Status::out_of_memory,
             std::string("the context does not fit in the device memory budget with a ") +
                 exec::kv_type_name(params.kv_type) + " KV cache: " + plan_.describe() +
                 (plan_.max_ctx_that_fits > 0 ? "; configure a context of at most " + std::to_string(plan_.max_ctx_that_fits)
                                              : "; the weights alone do not fit"));

    check(cudaStreamCreateWithFlags(&d.stream, cudaStreamNonBlocking), "creating a CUDA stream");
    d.w = std::make_unique<GpuWeights>(w, options.progress);
    d.mm = std::make_unique<DeviceMatmul>(limits, d.stream);

    const uint64_t n_layers = uint64_t(last_layer_ - first_layer_);
    d.kv_layer_bytes = uint64_t(n_ctx_) * d.attn.row_bytes;
    d.kv_mem = device_alloc(2 * n_layers * d.kv_layer_bytes, "the KV cache");
    d.kv = static_cast<uint8_t*>(d.kv_mem.get());

    Carver measure(nullptr);
    d.carve(measure, hp_, n_batch_, last_stage_);
    d.act_mem = device_alloc(measure.bytes(), "the activations");
    Carver place(static_cast<uint8_t*>(d.act_mem.get()));
    d.carve(place, hp_, n_batch_, last_stage_);
    // Poisoned (all-ones bytes: NaN floats, NaN f16 and q8_0 scales) so that a kernel reading
    // what nothing wrote shows up as NaN in the outputs instead of plausible numbers.
    check(cudaMemset(d.act_mem.get(), 0xFF, measure.bytes()), "poisoning the activations");
    check(cudaMemset(d.kv_mem.get(), 0xFF, 2 * n_layers * d.kv_layer_bytes), "poisoning the KV cache");

    d.ws_mem = device_alloc(ws_bytes, "the attention workspace");
    d.ws = d.ws_mem.get();

    // RoPE tables: the CPU's angles (exec::Rope, mscale included) for every position.
    const exec::Rope rope(hp_);
    d.n_pairs = int(rope.n_pairs());
    const size_t table = size_t(n_ctx_) * size_t(d.n_pairs);
    std::vector<float> host(2 * table);
    for (int64_t p = 0; p < n_ctx_ && d.n_pairs > 0; ++p)
        rope.angles(p, host.data() + size_t(p) * size_t(d.n_pairs), host.data() + table + size_t(p) * size_t(d.n_pairs));
    d.rope_mem = device_alloc(host.size() * sizeof(float), "the RoPE tables");
    check(cudaMemcpy(d.rope_mem.get(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice),
          "uploading the RoPE tables");
    d.cos = static_cast<const float*>(d.rope_mem.get());
    d.sin = d.cos + table;

    const uint64_t out_floats = last_stage_ ? uint64_t(exec::device_logit_rows(n_batch_)) * uint64_t(hp_.n_vocab)
                                            : uint64_t(n_batch_) * uint64_t(E);
    d.h_ids_mem = pinned_alloc(uint64_t(n_batch_) * sizeof(int32_t), "token ids");
    d.h_n_past_mem = pinned_alloc(sizeof(int32_t), "n_past");
    d.h_in_mem = pinned_alloc(uint64_t(n_batch_) * uint64_t(E) * sizeof(float), "hidden states in");
    d.h_out_mem = pinned_alloc(out_floats * sizeof(float), "outputs");
    d.h_ids = static_cast<int32_t*>(d.h_ids_mem.get());
    d.h_n_past = static_cast<int32_t*>(d.h_n_past_mem.get());
    d.h_in = static_cast<float*>(d.h_in_mem.get());
    d.h_out = static_cast<float*>(d.h_out_mem.get());
    check(cudaDeviceSynchronize(), "setting up the GPU context");
}

GpuContext::~GpuContext() = default;

int64_t GpuContext::output_floats(int64_t n_tokens, bool all_logits) const {
    if (!last_stage_) return n_tokens * hidden_out_width();
    return (all_logits ? n_tokens : 1) * hp_.n_vocab;
}

void GpuContext::truncate(int64_t n_past) {
    if (n_past < 0 || n_past > n_past_)
        fail(Status::invalid_argument, "truncate(" + std::to_string(n_past) + "): must be within [0, n_past = " +
                                           std::to_string(n_past_) + "]");
    n_past_ = n_past;
}

void GpuContext::check_room(int64_t n_tokens) const {
    exec::check_context_room(n_tokens, n_past_, n_ctx_);
}

void GpuContext::decode(std::span<const int32_t> tokens, float* out, bool all_logits) {
    if (first_layer_ != 0)
        fail(Status::invalid_argument, "decode: this stage starts at layer " + std::to_string(first_layer_) +
                                           ", so it takes hidden states (forward_hidden), not token ids");
    const int64_t n = int64_t(tokens.size());
    check_room(n);
    if (!out) fail(Status::invalid_argument, "decode: null output buffer");
    exec::check_token_ids(tokens, hp_.n_vocab);
    run(tokens.data(), nullptr, n, out, all_logits);
}

void GpuContext::forward_hidden(const float* hidden_in, int64_t n, float* out, bool all_logits) {
    check_room(n);
    if (!hidden_in || !out) fail(Status::invalid_argument, "forward_hidden: null buffer");
    run(nullptr, hidden_in, n, out, all_logits);
}

void GpuContext::run(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits) {
    try {
        run_batches(tokens, hidden, n, out, all_logits);
    } catch (...) {
        // Let whatever was queued finish before the pinned buffers are written again.
        cudaStreamSynchronize(d_->stream);
        (void)cudaGetLastError();
        throw;
    }
}

void GpuContext::run_batches(const int32_t* tokens, const float* hidden, int64_t n, float* out, bool all_logits) {
    Device& d = *d_;
    const int64_t E = hp_.n_embd, V = hp_.n_vocab;
    const Input in = tokens ? Input::tokens : Input::hidden;
    for (int64_t c0 = 0; c0 < n; c0 += n_batch_) {
        const int64_t m = std::min(n_batch_, n - c0);
        Output o = !last_stage_ ? Output::hidden
                   : all_logits ? Output::all_logits
                                : (c0 + m == n ? Output::last_logits : Output::none);
        if (o == Output::all_logits && m == 1) o = Output::last_logits;  // the same single row
        // Inputs through pinned memory (the captured graph reads them from fixed device buffers).
        *d.h_n_past = int32_t(n_past_);
        if (tokens) {
            std::memcpy(d.h_ids, tokens + c0, size_t(m) * sizeof(int32_t));
            check(cudaMemcpyAsync(d.ids, d.h_ids, size_t(m) * sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
                  "copying token ids to the device");
        } else {
            std::memcpy(d.h_in, hidden + c0 * E, size_t(m * E) * sizeof(float));
            check(cudaMemcpyAsync(d.x, d.h_in, size_t(m * E) * sizeof(float), cudaMemcpyHostToDevice, d.stream),
                  "copying hidden states to the device");
        }
        check(cudaMemcpyAsync(d.n_past, d.h_n_past, sizeof(int32_t), cudaMemcpyHostToDevice, d.stream),
              "copying n_past to the device");

        // One token: the captured graph, after one direct run (lazy setup inside the kernels'
        // wrappers, if any, happens outside the capture).
        if (m == 1 && graphs_ && o != Output::none && d.one_token_runs[int(in)]++ > 0) replay(in, o);
        else enqueue(int(m), in, o == Output::all_logits ? Output::none : o);

        if (o == Output::all_logits) {
            // Every row's logits, a few rows at a time (device_logit_rows).
            const int64_t rows_max = exec::device_logit_rows(n_batch_);
            for (int64_t r0 = 0; r0 < m; r0 += rows_max) {
                const int64_t rows = std::min(rows_max, m - r0);
                check(rms_norm(d.x + r0 * E, d.w->output_norm, E, int(rows), float(hp_.rms_eps), d.xn, d.stream),
                      "rms_norm (output)");
                d.mm->run(d.w->output, d.xn, rows, d.logits);
                fetch(d.logits, rows * V, out + (c0 + r0) * V);
            }
        } else if (o == Output::last_logits) {
            fetch(d.logits, V, out);
        } else if (o == Output::hidden) {
            fetch(d.x, m * E, out + c0 * E);
        } else {
            check(cudaStreamSynchronize(d.stream), "running the forward pass on the GPU");
        }
        n_past_ += m;
    }
}

// Copies count floats from the device through pinned memory to dst once the stream gets there.
void GpuContext::fetch(const float* src, int64_t count, float* dst) {
    Device& d = *d_;
    check(cudaMemcpyAsync(d.h_out, src, size_t(count) * sizeof(float), cudaMemcpyDeviceToHost, d.stream),
          "copying outputs from the device");
    check(cudaStreamSynchronize(d.stream), "running the forward pass on the GPU");
    std::memcpy(dst, d.h_out, size_t(count) * sizeof(float));
}

void GpuContext::replay(Input in, Output o) {
    Device& d = *d_;
    cudaGraphExec_t& exec = d.graph[int(in)];
    if (!exec) {
        // A capture that fails (a kernel wrapper doing something a capture forbids) turns graphs
        // off for this context, saying why, and the step runs directly: slower, same numbers.
        check(cudaStreamBeginCapture(d.stream, cudaStreamCaptureModeThreadLocal), "beginning the decode graph capture");
        cudaGraph_t graph = nullptr;
        try {
            enqueue(1, in, o);
        } catch (const Error& e) {
            graph_disabled_ = std::string("capturing the decode step failed: ") + e.what();
        }
        const cudaError_t end = cudaStreamEndCapture(d.stream, &graph);
        if (graph_disabled_.empty() && end != cudaSuccess)
            graph_disabled_ = std::string("capturing the decode step failed: ") + cudaGetErrorString(end);
        if (graph_disabled_.empty()) {
            const cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
            if (e != cudaSuccess) {
                exec = nullptr;
                graph_disabled_ = std::string("instantiating the decode graph failed: ") + cudaGetErrorString(e);
            }
        }
        if (graph) cudaGraphDestroy(graph);
        if (!graph_disabled_.empty()) {
            (void)cudaGetLastError();  // capture errors are not sticky; clear the record
            graphs_ = false;
            enqueue(1, in, o);
            return;
        }
    }
    check(cudaGraphLaunch(exec, d.stream), "replaying the decode graph");
    ++graph_replays_;
}

void GpuContext::enqueue(int m, Input in, Output o) {
    Device& d = *d_;
    const int64_t E = hp_.n_embd;
    const float eps = float(hp_.rms_eps);
    if (in == Input::tokens) check(get_rows(d.w->token_embd, d.ids, m, d.x, d.stream), "get_rows (token embeddings)");
    for (size_t li = 0; li < d.w->layers.size(); ++li) enqueue_layer(li, m);
    if (o == Output::last_logits) {  // (all_logits: run() computes them in chunks of rows)
        check(rms_norm(d.x + int64_t(m - 1) * E, d.w->output_norm, E, 1, eps, d.xn, d.stream), "rms_norm (output)");
        d.mm->run(d.w->output, d.xn, 1, d.logits);
    }
}

// One layer on m tokens of d.x, in exec::Context's order: norm, q/k/v (+ biases, per-head norms),
// RoPE, cache, attention, output projection, residual; norm, SwiGLU FFN, residual.
void GpuContext::enqueue_layer(size_t li, int m) {
    Device& d = *d_;
    const GpuLayerWeights& L = d.w->layers[li];
    const int64_t E = hp_.n_embd, Q = hp_.n_q(), KV = hp_.n_kv(), F = hp_.n_ff;
    const int D = int(hp_.head_dim), H = int(hp_.n_head), HKV = int(hp_.n_head_kv);
    const float eps = float(hp_.rms_eps);
    const int neox = hp_.arch.rope_order == model::RopeOrder::neox ? 1 : 0;
    cudaStream_t s = d.stream;
    uint8_t* k_cache = d.kv + 2 * uint64_t(li) * d.kv_layer_bytes;
    uint8_t* v_cache = k_cache + d.kv_layer_bytes;

    check(rms_norm(d.x, L.attn_norm, E, m, eps, d.xn, s), "rms_norm (attention)");
    d.mm->run(L.wq, d.xn, m, d.q);
    d.mm->run(L.wk, d.xn, m, d.k);
    d.mm->run(L.wv, d.xn, m, d.v);
    if (L.bq) {
        check(add_row_bias(d.q, L.bq, Q, m, s), "add_row_bias (q)");
        check(add_row_bias(d.k, L.bk, KV, m, s), "add_row_bias (k)");
        check(add_row_bias(d.v, L.bv, KV, m, s), "add_row_bias (v)");
    }
    if (L.q_norm) {
        check(head_rms_norm(d.q, L.q_norm, m, H, D, Q, eps, s), "head_rms_norm (q)");
        check(head_rms_norm(d.k, L.k_norm, m, HKV, D, KV, eps, s), "head_rms_norm (k)");
    }
    if (d.n_pairs > 0) {
        check(rope(d.q, m, H, D, Q, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (q)");
        check(rope(d.k, m, HKV, D, KV, d.cos, d.sin, d.n_pairs, neox, d.n_past, s), "rope (k)");
    }
    check(kv_store(d.k, d.v, m, k_cache, v_cache, d.attn, d.n_past, s), "kv_store");
    check(attention(d.q, k_cache, v_cache, d.attn, m, d.n_past, d.ws, d.att, s), "attention");
    d.mm->run(L.wo, d.att, m, d.proj);
    check(add_inplace(d.x, d.proj, size_t(m) * size_t(E), s), "add_inplace (attention residual)");

    check(rms_norm(d.x, L.ffn_norm, E, m, eps, d.xn, s), "rms_norm (ffn)");
    d.mm->run(L.gate, d.xn, m, d.gate);
    d.mm->run(L.up, d.xn, m, d.up);
    check(swiglu(d.gate, d.up, size_t(m) * size_t(F), s), "swiglu");
    d.mm->run(L.down, d.gate, m, d.proj);
    check(add_inplace(d.x, d.proj, size_t(m) * size_t(E), s), "add_inplace (ffn residual)");
}

}  // namespace strata::cuda
