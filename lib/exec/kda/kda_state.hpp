// The recurrent state of the sequences in the KDA layers of a stage (lib/model/kimi_linear.md):
// per sequence slot and layer the causal-conv windows of q, k and v (the last K-1
// pre-convolution inputs of each channel, oldest first) and the dk x dk state of each head (row =
// key channel, column = value channel), float32. Fixed size whatever the context; zero at the
// start of a sequence.
#pragma once

#include <cstdint>
#include <vector>

namespace strata::exec {

class KdaState {
public:
    KdaState() = default;
    KdaState(int64_t n_layers, int64_t n_head, int64_t head_dim, int64_t conv_kernel, int64_t n_seq = 1);

    void zero();            // every sequence
    void zero(int64_t seq); // one sequence's layers
    uint64_t bytes() const { return uint64_t(conv_.size() + state_.size()) * sizeof(float); }
    // Sequence seq's window of stream which (0 q, 1 k, 2 v) in layer slot: [D][K-1].
    float* conv(int64_t seq, int64_t slot, int which) {
        return conv_.data() + ((seq * n_layers_ + slot) * 3 + which) * d_ * taps_;
    }
    // Sequence seq's state of head h in layer slot: [dk][dk].
    float* state(int64_t seq, int64_t slot, int64_t h) {
        return state_.data() + ((seq * n_layers_ + slot) * n_head_ + h) * dk_ * dk_;
    }

private:
    int64_t n_layers_ = 0, n_head_ = 0, dk_ = 0, d_ = 0, taps_ = 0;
    std::vector<float> conv_, state_;
};

}  // namespace strata::exec
