// The CPU's MultiSequence: n_seq sequences over one multi-slot Context, so decode_batch runs
// every entry through each matmul together (each weight read once per step). Each sequence is a
// Sequence view of its own slot with its own sampler; a view's calls touch only its slot.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "exec/context/context.hpp"
#include "multi_sequence.hpp"
#include "sample/sequence_sampler.hpp"

namespace strata::exec {

class BatchedSequences final : public MultiSequence {
public:
    // params.n_seq slots (a whole model: first_layer 0, every layer); every sampler starts from
    // `sampling`. Throws as the Context's constructor does.
    BatchedSequences(const gguf::ModelFile& file, const ContextParams& params, const sample::SamplerParams& sampling);
    ~BatchedSequences() override;

    int32_t n_seq() const override { return ctx_.n_seq(); }
    Sequence& at(int32_t seq) override;
    const Sequence& at(int32_t seq) const override;
    void decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) override;

    Context& context() { return ctx_; }

private:
    class Slot;
    Context ctx_;
    std::vector<std::unique_ptr<Slot>> slots_;
    std::vector<float> out_;  // decode_batch's rows, entry after entry
};

}  // namespace strata::exec
