// The device activations of one GPU stage (cuda/gpu_context*.cpp), as host data: which buffers the
// forward pass of the stage's layers needs and how wide each is per token of a micro-batch. The
// buffers are listed once (STRATA_DEVICE_ACTIVATIONS); the GPU context carves its activation
// allocation from the widths and the memory plan counts the same bytes with the same alignment
// (device_activation_bytes), so the two cannot drift apart; the CPU unit tests cover it.
#pragma once

#include <cstdint>

namespace strata::model {
struct Hparams;
}

namespace strata::exec {

// Every float buffer (names follow exec::Context::Scratch): the hidden state, its normalized
// copy, the block output, the attention output before attn_output; grouped-query q, k, v; the
// dense FFN's gate and up (the widest dense layer or the shared experts); latent attention's
// (deepseek2.md) q_a, ckv, q_abs, o_lat, head_in, head_out; KDA's (kimi_linear.md) projections,
// decay pre-activation, low-rank inner width, beta logits, output gate, and the chunked form's
// log decay, beta and output; K3's attention-residual mix and bank; the MoE router logits, latent
// input and output, the routed rows grouped by expert, and the chosen weights.
#define STRATA_DEVICE_ACTIVATIONS(X)                                                                          \
    X(x) X(xn) X(proj) X(att) X(q) X(k) X(v) X(gate) X(up) X(q_a) X(ckv) X(q_abs) X(o_lat) X(head_in)          \
    X(head_out) X(kq) X(kk) X(kv) X(kz) X(klow) X(kbeta) X(kgate) X(kg) X(kb) X(ko) X(mixed) X(bank) X(router) \
    X(zlat) X(moe_up) X(moe_out) X(xe) X(de) X(ge) X(ue) X(chosen_w)

// One T per buffer: widths (int64_t floats per token) here, device pointers in the GPU context.
template <class T>
struct DeviceActivationSet {
#define STRATA_MEMBER(name) T name{};
    STRATA_DEVICE_ACTIVATIONS(STRATA_MEMBER)
#undef STRATA_MEMBER
};

// f(a.name, b.name) for every buffer, in one fixed order.
template <class A, class B, class F>
void zip_device_activations(A& a, B& b, F&& f) {
#define STRATA_VISIT(name) f(a.name, b.name);
    STRATA_DEVICE_ACTIVATIONS(STRATA_VISIT)
#undef STRATA_VISIT
}

struct DeviceActivationWidths : DeviceActivationSet<int64_t> {
    int64_t chosen_ints = 0;  // int32 per token: the chosen experts, then the grouping rows (3 x n_used)
};

// The widths for layers [first, last) of hp: only what those layers use (the dense FFN buffers
// when a layer of the range is dense or has shared experts, the attention buffers of the kinds
// present, the MoE buffers when a layer is MoE).
DeviceActivationWidths device_activation_widths(const model::Hparams& hp, int first, int last);

// Device bytes of the buffers for n_tokens tokens, each non-empty buffer (and the int32 one)
// starting on `align` bytes, as the GPU context carves them.
uint64_t device_activation_bytes(const DeviceActivationWidths& w, int64_t n_tokens, uint64_t align);

}  // namespace strata::exec
