#include "batched_sequence.hpp"

namespace strata::exec {

// One slot of the shared Context as a Sequence (as ContextSequence is for a Context of its own).
class BatchedSequences::Slot final : public Sequence {
public:
    Slot(Context& ctx, int32_t seq, const sample::SamplerParams& sampling) : ctx_(ctx), seq_(seq), sampler_(sampling) {}

    int64_t n_ctx() const override { return ctx_.n_ctx(); }
    int64_t n_past() const override { return ctx_.n_past(seq_); }
    int64_t n_vocab() const override { return ctx_.n_vocab(); }
    std::string plan() const override { return ctx_.plan().describe(); }
    const sample::SamplerParams& sampling() const override { return sampler_.params(); }
    void set_sampling(const sample::SamplerParams& params) override { sampler_.set_params(params); }
    void reset() override {
        ctx_.reset(seq_);
        sampler_.reset();
    }
    void truncate(int64_t n_past) override {
        ctx_.truncate(seq_, n_past);  // checks the rule first
        sampler_.reset();
    }
    void decode(std::span<const int32_t> tokens, bool all_logits, std::vector<float>* logits) override {
        check_decode(tokens, ctx_.n_vocab(), n_past(), ctx_.n_ctx());
        std::vector<float>& out = logits ? *logits : scratch_;
        const size_t n_vocab = size_t(ctx_.n_vocab());
        const size_t rows = logits && all_logits ? tokens.size() : 1;
        out.resize(rows * n_vocab);
        ctx_.decode_seq(seq_, tokens, out.data(), rows > 1);
        sampler_.decoded(tokens, {out.data() + (rows - 1) * n_vocab, n_vocab});
    }
    int32_t sample(uint32_t n_top, std::vector<sample::TokenLogprob>* top) override {
        return sampler_.sample(n_top, top);
    }
    // decode_batch ran this slot's tokens: the sampler takes them and their last row.
    void decoded(std::span<const int32_t> tokens, std::span<const float> row) { sampler_.decoded(tokens, row); }

private:
    Context& ctx_;
    int32_t seq_;
    sample::SequenceSampler sampler_;
    std::vector<float> scratch_;  // logits when the caller wants none kept
};

BatchedSequences::BatchedSequences(const gguf::ModelFile& file, const ContextParams& params,
                                   const sample::SamplerParams& sampling)
    : ctx_(file, params) {
    for (int32_t i = 0; i < ctx_.n_seq(); ++i) slots_.push_back(std::make_unique<Slot>(ctx_, i, sampling));
}

BatchedSequences::~BatchedSequences() = default;

Sequence& BatchedSequences::at(int32_t seq) { return *slots_.at(size_t(seq)); }
const Sequence& BatchedSequences::at(int32_t seq) const { return *slots_.at(size_t(seq)); }

void BatchedSequences::decode_batch(std::span<const BatchEntry> entries, std::vector<std::vector<float>>& logits) {
    check_batch(*this, entries);  // the Sequence-level errors (context_overflow) before the Context's own
    const size_t V = size_t(ctx_.n_vocab());
    out_.resize(entries.size() * V);
    ctx_.decode_batch(entries, out_.data());
    logits.resize(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        const std::span<const float> row(out_.data() + i * V, V);
        logits[i].assign(row.begin(), row.end());
        slots_[size_t(entries[i].seq)]->decoded(entries[i].tokens, row);
    }
}

}  // namespace strata::exec
