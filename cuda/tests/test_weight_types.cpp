// The GPU upload refuses the weight types the CUDA products do not take (IQ4_NL, Q4_K, Q5_K,
// Q6_K: the CPU backend runs them) with Error(unsupported) naming the tensor and its type,
// before anything is allocated. GpuWeights::upload_bytes is host code: this test needs no GPU
// and runs everywhere.
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_test_util.cuh"
#include "gpu_weights.hpp"
#include "quant/formats.hpp"
#include "quant/type_ids.hpp"
#include "util/error.hpp"

using namespace strata;
using cuda_test::expect;

namespace {

model::WeightView view(const std::string& name, uint32_t type, int64_t rows, int64_t cols,
                       const std::vector<uint8_t>& bytes) {
    model::WeightView w;
    w.name = name;
    w.type = type;
    w.rows = rows;
    w.cols = cols;
    w.row_bytes = quant::row_size(type, cols);
    w.data = bytes.data();
    w.nbytes = w.row_bytes * uint64_t(rows);
    w.mat_stride = w.nbytes;
    return w;
}

}  // namespace

int main() {
    const std::vector<uint8_t> bytes(1 << 16, 0);
    for (uint32_t type : {quant::kTypeIQ4_NL, quant::kTypeQ4_K, quant::kTypeQ5_K, quant::kTypeQ6_K}) {
        for (bool in_layer : {false, true}) {
            model::ModelWeights w;
            w.first_layer = 0;
            w.last_layer = 1;
            w.token_embd = view("token_embd.weight", in_layer ? quant::kTypeF32 : type, 4, 256, bytes);
            w.layers.resize(1);
            model::LayerWeights& L = w.layers[0];
            const uint32_t lt = in_layer ? type : quant::kTypeF32;
            L.wq = view("blk.0.attn_q.weight", quant::kTypeF32, 8, 256, bytes);
            L.wk = view("blk.0.attn_k.weight", lt, 4, 256, bytes);
            L.wv = L.wo = L.w_gate = L.w_up = L.w_down = L.wq;
            const std::string bad = in_layer ? "blk.0.attn_k.weight" : "token_embd.weight";
            const std::string what = "type " + std::to_string(type) + " in " + bad;
            try {
                (void)cuda::GpuWeights::upload_bytes(w);
                expect(false, what + ": upload_bytes accepted it");
            } catch (const Error& e) {
                const std::string msg = e.what();
                std::printf("%s -> %s\n", what.c_str(), msg.c_str());
                expect(e.status() == Status::unsupported, what + ": status is not unsupported");
                expect(msg.find(bad) != std::string::npos, what + ": the message does not name the tensor");
                const std::string type_name = type == quant::kTypeIQ4_NL ? "iq4_nl"
                                              : type == quant::kTypeQ4_K ? "q4_K"
                                              : type == quant::kTypeQ5_K ? "q5_K"
                                                                         : "q6_K";
                expect(msg.find(type_name) != std::string::npos, what + ": the message does not name the type");
            }
        }
    }
    return cuda_test::finish("the GPU upload refuses iq4_nl, q4_K, q5_K, q6_K naming the tensor and its type");
}
