// cuda::gpu_stage_scratch_bytes, the device scratch a pipeline head takes off a GPU worker's free
// memory when it plans layer ranges: host arithmetic (the device plan's), so this test needs no
// GPU and runs everywhere. It must be the plan's scratch, grow with the micro-batch and, where a
// layer rotates, with the context, and refuse a model the GPU cannot run, naming why.
#include <cstdio>
#include <random>
#include <string>

#include "../../tests/unit/test_exec_synth.hpp"
#include "../../tests/unit/test_kimi_synth.hpp"
#include "cuda_test_util.cuh"
#include "runtime/gpu_plan.hpp"
#include "runtime/gpu_stage.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "util/error.hpp"

using namespace strata;
using cuda_test::expect;

namespace {

exec::ContextParams params(int first, int last, int64_t n_ctx, int64_t n_batch) {
    exec::ContextParams p;
    p.first_layer = first;
    p.last_layer = last;
    p.n_ctx = n_ctx;
    p.n_batch = n_batch;
    return p;
}

void check_model(const char* name, const gguf::ModelFile& file, bool rotates) {
    const model::Hparams hp = model::read_hparams(file);
    const int n = int(hp.n_layer);
    const auto p = params(1, n, 512, 32);
    const uint64_t scratch = cuda::gpu_stage_scratch_bytes(file, p);
    const exec::MemoryPlan plan =
        exec::make_plan(cuda::device_stage_plan_inputs(hp, model::bind_weights(file, hp, 1, n), p));
    std::printf("%s: scratch %llu bytes at n_ctx 512, micro-batch 32\n", name, (unsigned long long)scratch);
    expect(scratch > 0 && scratch == plan.scratch_bytes, std::string(name) + ": the device plan's scratch");
    expect(cuda::gpu_stage_scratch_bytes(file, params(1, n, 512, 128)) > scratch,
           std::string(name) + ": a longer micro-batch needs more scratch");
    const uint64_t longer = cuda::gpu_stage_scratch_bytes(file, params(1, n, 4096, 32));
    expect(rotates ? longer > scratch : longer >= scratch,
           std::string(name) + (rotates ? ": RoPE tables and attention scratch grow with the context"
                                        : ": a longer context needs no less scratch"));
}

}  // namespace

int main() {
    const uint64_t seed = std::random_device{}();
    std::printf("seed %llu\n", (unsigned long long)seed);
    test::SynthSpec llama;
    llama.n_layer = 3;
    check_model("llama", *test::make_model(llama, seed), true);
    check_model("tiny kimi-linear", *test::tiny_kimi(seed), false);

    test::SynthSpec odd = llama;  // head dim 96: the GPU's attention takes 64 and 128
    odd.n_embd = 384;
    std::string why;
    try {
        cuda::gpu_stage_scratch_bytes(*test::make_model(odd, seed), params(1, 3, 512, 32));
    } catch (const Error& e) {
        why = e.status() == Status::unsupported ? e.what() : "";
    }
    std::printf("head dim 96: %s\n", why.c_str());
    expect(!why.empty(), "a model the GPU cannot run is refused as unsupported");
    return cuda_test::finish("gpu_stage_plan");
}
