// The kernel benchmark's MoE rows (moe.cuh) for one token on K3-like shapes: 16 of 64 experts
// chosen, n_ff_exp 3072, the expert input either E 7168 or the latent 3584. moe_gate_up_iq1s and
// moe_down_iq1s are timed apart, in the float order of this host's CPU kernel (as the forward pass
// runs them), their Q8_K activations quantized once beforehand: GB/s of the chosen experts' IQ1_S
// blocks plus those Q8_K blocks against the streaming read. The stacks hold one random expert
// (valid blocks, as the GEMV rows' weights) copied to every slot; consecutive launches take
// disjoint sets of chosen experts (a shuffled partition of the 64) and, where one pass over the
// stack is under the rotation size, further stack copies, so no launch finds its experts in L2.
// Host code (C++20). UNTESTED ON A GPU until a device check has run it.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "runtime/cuda_error.hpp"
#include "kernels/products/gemv.cuh"
#include "kernel_bench_suite.hpp"
#include "kernels/moe/moe.cuh"
#include "quant/iq/iq1s_block.hpp"
#include "quant/dot/iq1s_dot.hpp"
#include "quant/type_ids.hpp"

namespace strata::cuda::kernel_suite {

namespace {

constexpr int kExperts = 64, kChosen = 16, kFf = 3072;
constexpr int kSets = kExperts / kChosen;  // disjoint sets of chosen experts, taken in turn
static_assert(kExperts % kChosen == 0, "the chosen sets partition the experts");

uint64_t expert_bytes(int64_t rows, int64_t cols) {
    return uint64_t(rows) * uint64_t(cols / quant::kQK_K) * sizeof(quant::block_iq1_s);
}

// `copies` stacks of kExperts IQ1_S experts (rows x cols), every expert the same random matrix.
struct ExpertStacks {
    int64_t rows = 0, cols = 0;
    uint64_t stride = 0;  // bytes from one stack to the next
    int copies = 1;
    DeviceBuffer buffer;

    ExpertStacks(int64_t r, int64_t c, int n_copies, bench::FastRng& rng) : rows(r), cols(c), copies(n_copies) {
        const uint64_t one = expert_bytes(rows, cols), stack = one * kExperts;
        stride = round_up(stack + kDevicePadBytes, kAlign);
        buffer = DeviceBuffer(stride * uint64_t(copies));
        const std::vector<uint8_t> host = bench::random_matrix_bytes(quant::kTypeIQ1_S, rows, cols, rng);
        bench::upload(buffer, 0, host.data(), host.size());
        // Doubling copies fill the first stack, then whole stacks fill the rest.
        for (uint64_t have = one; have < stack; have *= 2)
            check(cudaMemcpy(buffer.get<uint8_t>() + have, buffer.get(), std::min(have, stack - have),
                             cudaMemcpyDeviceToDevice),
                  "cudaMemcpy (expert copy)");
        check(cudaMemset(buffer.get<uint8_t>() + stack, 0, stride - stack), "cudaMemset (padding)");
        for (int s = 1; s < copies; ++s)
            check(cudaMemcpy(buffer.get<uint8_t>() + uint64_t(s) * stride, buffer.get(), stride,
                             cudaMemcpyDeviceToDevice),
                  "cudaMemcpy (stack copy)");
        check(cudaDeviceSynchronize(), "expert upload");
    }
    // Launch k's stack: a new stack copy after every pass over the chosen sets.
    Iq1sStack at(int64_t k) const {
        return Iq1sStack{.data = buffer.get<uint8_t>() + uint64_t((k / kSets) % copies) * stride,
                         .cols = cols,
                         .rows = rows,
                         .n_expert = kExperts};
    }
};

// kSets rows of kChosen expert ids: a random permutation of the experts, cut into sets.
DeviceBuffer chosen_sets(bench::FastRng& rng) {
    std::vector<int32_t> ids(kExperts);
    std::iota(ids.begin(), ids.end(), 0);
    for (int i = kExperts - 1; i > 0; --i) std::swap(ids[size_t(i)], ids[size_t(rng.next() % uint64_t(i + 1))]);
    DeviceBuffer d(ids.size() * sizeof(int32_t));
    bench::upload(d, 0, ids.data(), d.bytes());
    return d;
}

DeviceBuffer upload_floats(const std::vector<float>& host) {
    DeviceBuffer d(host.size() * sizeof(float));
    bench::upload(d, 0, host.data(), d.bytes());
    return d;
}

}  // namespace

void Suite::moe_rows() {
    // The float steps of the CPU kernel this host runs (moe.cuh): what the forward pass passes.
    const quant::Iq1sKernel order = quant::resolve_iq1s_kernel(quant::Iq1sKernel::best);
    for (int64_t E : {int64_t(7168), int64_t(3584)}) {
        const std::string shape = " E=" + std::to_string(E) + (E == 3584 ? " (latent)" : "") +
                                  " n_ff=3072 experts=16/64 tokens=1";
        const std::string gate_up_name = "moe_gate_up_iq1s" + shape;
        const std::string down_name = "moe_down_iq1s" + shape;
        const uint64_t chosen_bytes_in = uint64_t(kChosen) * expert_bytes(kFf, E);  // one of gate, up
        const uint64_t chosen_bytes_out = uint64_t(kChosen) * expert_bytes(E, kFf);
        auto common = [&](json& row, const char* kernel, int copies) {
            row["kernel"] = kernel;
            row["sum_order"] = quant::iq1s_kernel_name(order);
            row["type"] = "iq1_s";
            row["E"] = E;
            row["n_ff_exp"] = kFf;
            row["n_expert"] = kExperts;
            row["n_expert_used"] = kChosen;
            row["tokens"] = 1;
            row["chosen_sets_rotated"] = kSets;
            row["stack_copies_rotated"] = copies;
        };
        if (wanted(gate_up_name) && !lost_)
            guarded(gate_up_name, [&] {
                // One pass over the sets reads every expert of gate and up once.
                const int copies = copies_for(2 * uint64_t(kExperts) * expert_bytes(kFf, E), rotate_bytes_);
                const ExpertStacks gate(kFf, E, copies, rng_), up(kFf, E, copies, rng_);
                const DeviceBuffer chosen = chosen_sets(rng_);
                const DeviceBuffer x = upload_floats(bench::random_floats(size_t(E), rng_));
                const uint64_t act_bytes = gemv_act_bytes(quant::kTypeIQ1_S, E, 1);
                const DeviceBuffer xq(act_bytes);
                check(quantize_activations(quant::kTypeIQ1_S, x.get<float>(), E, 1, xq.get(), stream_),
                      "quantize_activations (expert input)");
                DeviceBuffer gate_out(size_t(kChosen) * kFf * sizeof(float)), up_out(gate_out.bytes());
                bench::poison(gate_out.get(), gate_out.bytes(), stream_);
                bench::poison(up_out.get(), up_out.bytes(), stream_);
                const Timing t = time("moe_gate_up_iq1s", [&](int64_t k) {
                    return moe_gate_up_iq1s(gate.at(k), up.at(k), xq.get(), chosen.get<int32_t>() + (k % kSets) * kChosen,
                                            kChosen, order, gate_out.get<float>(), up_out.get<float>(), stream_);
                });
                json row = bandwidth_row(gate_up_name, "moe", t, double(2 * chosen_bytes_in + act_bytes),
                                         "the chosen experts' gate and up IQ1_S blocks and the input's Q8_K blocks "
                                         "(once; outputs not counted)");
                common(row, "moe_gate_up_iq1s", copies);
                row["activation_bytes"] = act_bytes;
                row["output_finite"] = bench::all_finite(gate_out.get<float>(), size_t(kChosen) * kFf) &&
                                       bench::all_finite(up_out.get<float>(), size_t(kChosen) * kFf);
                add(std::move(row));
            });
        if (wanted(down_name) && !lost_)
            guarded(down_name, [&] {
                const int copies = copies_for(uint64_t(kExperts) * expert_bytes(E, kFf), rotate_bytes_);
                const ExpertStacks down(E, kFf, copies, rng_);
                const DeviceBuffer chosen = chosen_sets(rng_);
                const DeviceBuffer h = upload_floats(bench::random_floats(size_t(kChosen) * kFf, rng_));
                const uint64_t act_bytes = gemv_act_bytes(quant::kTypeIQ1_S, kFf, kChosen);
                const DeviceBuffer hq(act_bytes);
                check(quantize_activations(quant::kTypeIQ1_S, h.get<float>(), kFf, kChosen, hq.get(), stream_),
                      "quantize_activations (expert rows)");
                std::vector<float> w_host(kChosen);
                for (auto& w : w_host) w = rng_.uniform(0.01f, 0.2f);  // router weights: positive
                const DeviceBuffer weights = upload_floats(w_host);
                DeviceBuffer out(size_t(E) * sizeof(float));
                bench::poison(out.get(), out.bytes(), stream_);
                const Timing t = time("moe_down_iq1s", [&](int64_t k) {
                    return moe_down_iq1s(down.at(k), hq.get(), chosen.get<int32_t>() + (k % kSets) * kChosen,
                                         weights.get<float>(), kChosen, order, out.get<float>(), stream_);
                });
                json row = bandwidth_row(down_name, "moe", t, double(chosen_bytes_out + act_bytes),
                                         "the chosen experts' down IQ1_S blocks and the activated rows' Q8_K blocks "
                                         "(output not counted)");
                common(row, "moe_down_iq1s", copies);
                row["activation_bytes"] = act_bytes;
                row["output_finite"] = bench::all_finite(out.get<float>(), size_t(E));
                add(std::move(row));
            });
    }
}

}  // namespace strata::cuda::kernel_suite
