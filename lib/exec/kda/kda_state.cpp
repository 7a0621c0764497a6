#include "kda_state.hpp"

#include <algorithm>

namespace strata::exec {

KdaState::KdaState(int64_t n_layers, int64_t n_head, int64_t head_dim, int64_t conv_kernel, int64_t n_seq)
    : n_layers_(n_layers), n_head_(n_head), dk_(head_dim), d_(n_head * head_dim), taps_(conv_kernel - 1),
      conv_(size_t(n_seq * n_layers * 3 * n_head * head_dim * (conv_kernel - 1))),
      state_(size_t(n_seq * n_layers * n_head * head_dim * head_dim)) {}

void KdaState::zero() {
    std::fill(conv_.begin(), conv_.end(), 0.0f);
    std::fill(state_.begin(), state_.end(), 0.0f);
}

void KdaState::zero(int64_t seq) {
    const int64_t conv_floats = n_layers_ * 3 * d_ * taps_, state_floats = n_layers_ * n_head_ * dk_ * dk_;
    std::fill_n(conv_.begin() + seq * conv_floats, conv_floats, 0.0f);
    std::fill_n(state_.begin() + seq * state_floats, state_floats, 0.0f);
}

}  // namespace strata::exec
