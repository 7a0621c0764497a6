// The GPU upload takes every weight type the CPU backend runs (each ggml type lib/quant decodes
// and multiplies), as token_embd and as a layer's matrix, and refuses the others (the activation
// formats Q8_1 and Q8_K, an id no ggml type has) with Error(unsupported) naming the tensor and its
// type, before anything is allocated. GpuWeights::upload_bytes is host code: this test needs no GPU
// and runs everywhere.
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_test_util.cuh"
#include "exec/cpu_backend.hpp"
#include "gguf/ggml_types.hpp"
#include "runtime/gpu_weights.hpp"
#include "quant/formats.hpp"
#include "quant/type_ids.hpp"
#include "quant/type_traits.hpp"
#include "util/error.hpp"

using namespace strata;
using cuda_test::expect;
using cuda_test::report;

namespace {

model::WeightView view(const std::string& name, uint32_t type, int64_t rows, int64_t cols,
                       const std::vector<uint8_t>& bytes) {
    model::WeightView w;
    w.name = name;
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    const quant::TypeTraits* t = quant::find_type_traits(type);
    w.row_bytes = t ? uint64_t(cols / t->block_elements) * t->block_bytes : uint64_t(cols) * 4;
    w.data = bytes.data();
    w.nbytes = w.row_bytes * uint64_t(rows);
    w.mat_stride = w.nbytes;
    return w;
}

// A one-layer stage whose token_embd (in_layer false) or attn_k (true) has `type`.
model::ModelWeights stage_with(uint32_t type, bool in_layer, const std::vector<uint8_t>& bytes) {
    model::ModelWeights w;
    w.first_layer = 0;
    w.last_layer = 1;
    w.token_embd = view("token_embd.weight", in_layer ? quant::kTypeF32 : type, 4, 256, bytes);
    w.layers.resize(1);
    model::LayerWeights& L = w.layers[0];
    L.wq = view("blk.0.attn_q.weight", quant::kTypeF32, 8, 256, bytes);
    L.wk = view("blk.0.attn_k.weight", in_layer ? type : quant::kTypeF32, 4, 256, bytes);
    L.wv = L.wo = L.w_gate = L.w_up = L.w_down = L.wq;
    return w;
}

}  // namespace

int main() {
    const std::vector<uint8_t> bytes(1 << 16, 0);
    int accepted = 0;
    for (uint32_t type = 0; type < 64; ++type) {
        if (!exec::CpuBackend::supports(type)) continue;
        for (bool in_layer : {false, true}) {
            try {
                const uint64_t n = cuda::GpuWeights::upload_bytes(stage_with(type, in_layer, bytes));
                expect(n > 0, std::string(gguf::ggml_type_name(type)) + ": upload of 0 bytes");
                ++accepted;
            } catch (const Error& e) {
                expect(false, std::string(gguf::ggml_type_name(type)) + (in_layer ? " in a layer" : " as token_embd") +
                                  ": refused: " + e.what());
            }
        }
    }
    report(accepted > 0 && cuda_test::failures == 0,
           "the GPU upload takes every type the CPU backend runs (" + std::to_string(accepted / 2) + " types)");

    for (uint32_t type : {uint32_t(quant::kTypeQ8_1), uint32_t(quant::kTypeQ8_K), uint32_t(99)}) {
        for (bool in_layer : {false, true}) {
            const std::string bad = in_layer ? "blk.0.attn_k.weight" : "token_embd.weight";
            const std::string what = "type " + std::to_string(type) + " in " + bad;
            try {
                (void)cuda::GpuWeights::upload_bytes(stage_with(type, in_layer, bytes));
                expect(false, what + ": upload_bytes accepted it");
            } catch (const Error& e) {
                const std::string msg = e.what();
                std::printf("%s -> %s\n", what.c_str(), msg.c_str());
                expect(e.status() == Status::unsupported, what + ": status is not unsupported");
                expect(msg.find(bad) != std::string::npos, what + ": the message does not name the tensor");
                expect(msg.find(gguf::ggml_type_name(type)) != std::string::npos &&
                           msg.find(std::to_string(type)) != std::string::npos,
                       what + ": the message does not name the type");
            }
        }
    }
    return cuda_test::finish("the GPU upload takes every type the CPU runs and refuses q8_1, q8_K and id 99 by name");
}
