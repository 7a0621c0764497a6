// One pipeline stage (see stage.hpp): checks a request completely before anything runs, so
// that a refused request leaves the KV cache and the sampler as they were.
#include "pipeline/stage.hpp"

#include <climits>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "exec/context/context.hpp"
#include "pipeline/recurrent_layers.hpp"
#include "pipeline/wire_tensor.hpp"
#include "sample/sequence_sampler.hpp"
#include "util/error.hpp"

namespace strata::pipeline {
namespace {

using transport::DType;
using transport::ForwardOutput;

const char* output_name(ForwardOutput o) {
    switch (o) {
    case ForwardOutput::hidden: return "hidden";
    case ForwardOutput::logits_last: return "logits_last";
    case ForwardOutput::logits_all: return "logits_all";
    case ForwardOutput::sample: return "sample";
    case ForwardOutput::none: return "none";
    }
    return "unknown";
}

exec::KvType kv_type_of(uint32_t code) {
    switch (code) {
    case 0: return exec::KvType::f16;
    case 1: return exec::KvType::q8_0;
    }
    fail(Status::invalid_argument, "KV type code " + std::to_string(code) + " is unknown (0: f16, 1: q8_0)");
}

exec::ContextParams context_params(const transport::StageConfigure& c, const StageOptions& options) {
    // The head embeds tokens; a worker only ever receives hidden states.
    if (c.layer_begin == 0) fail(Status::invalid_argument, "layer 0 runs on the head: a worker's range starts at 1 or later");
    if (c.layer_end <= c.layer_begin || c.layer_end > uint32_t(INT_MAX))
        fail(Status::invalid_argument, "layer range [" + std::to_string(c.layer_begin) + ", " +
                                           std::to_string(c.layer_end) + ") is empty or out of range");
    if (c.context_length == 0) fail(Status::invalid_argument, "context_length must be positive");
    if (c.n_batch == 0) fail(Status::invalid_argument, "n_batch must be positive");
    exec::ContextParams p;
    p.first_layer = int(c.layer_begin);
    p.last_layer = int(c.layer_end);
    p.n_ctx = int64_t(c.context_length);
    p.n_batch = int64_t(c.n_batch);
    p.kv_type = kv_type_of(c.kv_type);
    p.n_threads = options.n_threads;
    p.memory_budget = options.memory_budget;
    return p;
}

transport::Sampled sampled(sample::SequenceSampler& sampler, uint32_t n_top) {
    std::vector<sample::TokenLogprob> top;
    transport::Sampled s;
    s.token = sampler.sample(n_top, n_top ? &top : nullptr);
    for (const auto& t : top) s.top.push_back({t.token, t.logprob});
    return s;
}

void check_n_top(uint32_t n_top) {
    if (n_top > transport::kMaxTopLogprobs)
        fail(Status::invalid_argument, "n_top is " + std::to_string(n_top) + ", at most " +
                                           std::to_string(transport::kMaxTopLogprobs));
}

}  // namespace

Stage::Stage(const gguf::ModelFile& file, const transport::StageConfigure& c, const StageOptions& options)
    : ctx_(options.make_context ? options.make_context(file, context_params(c, options))
                                : exec::make_cpu_stage_context(file, context_params(c, options))) {
    if (!ctx_) fail(Status::internal, "the stage's context factory made no context");
    // The last stage samples; a local session starts from the same default settings.
    if (ctx_->is_last_stage()) sampler_ = std::make_unique<sample::SequenceSampler>(sample::SamplerParams{});
}

Stage::~Stage() = default;

transport::StageReady Stage::ready() const {
    const auto& p = ctx_->plan();
    transport::StageReady r{p.weight_bytes, p.kv_bytes, p.scratch_bytes, p.total_bytes, p.budget_bytes};
    r.layer_begin = uint32_t(ctx_->first_layer());
    r.layer_end = uint32_t(ctx_->last_layer());
    r.recurrent_layers = recurrent_layers(ctx_->hparams(), r.layer_begin, r.layer_end);
    return r;
}

uint64_t Stage::kv_bytes_per_token() const { return ctx_->plan().kv_bytes_per_position; }

bool Stage::is_first() const { return ctx_->is_first_stage(); }
bool Stage::is_last() const { return ctx_->is_last_stage(); }
int64_t Stage::n_past() const { return ctx_->n_past(); }
int64_t Stage::n_embd() const { return ctx_->n_embd(); }
int64_t Stage::hidden_out_width() const { return ctx_->hidden_out_width(); }

transport::Message Stage::forward(const transport::Forward& f) {
    const size_t n = f.tokens.size();
    if (n == 0) fail(Status::invalid_argument, "a forward needs at least one token");
    if (n > transport::kMaxForwardTokens)
        fail(Status::invalid_argument, std::to_string(n) + " tokens in one forward, at most " +
                                           std::to_string(transport::kMaxForwardTokens));
    const bool last = is_last();
    if ((f.output == ForwardOutput::hidden) == last || uint32_t(f.output) > uint32_t(ForwardOutput::none))
        fail(Status::invalid_argument, std::string("output '") + output_name(f.output) + "' is not available on " +
                                           (last ? "the last stage" : "a stage before the last"));
    if (f.output == ForwardOutput::sample) check_n_top(f.n_top);
    const int64_t n_vocab = ctx_->n_vocab();
    for (size_t i = 0; i < n; ++i)
        if (f.tokens[i] < 0 || f.tokens[i] >= n_vocab)
            fail(Status::invalid_argument, "token " + std::to_string(i) + " is " + std::to_string(f.tokens[i]) +
                                               ", outside the vocabulary [0, " + std::to_string(n_vocab) + ")");
    const int64_t held = ctx_->n_past();
    if (f.position > uint64_t(held))
        fail(Status::invalid_argument, "out of order: position " + std::to_string(f.position) +
                                           " but the stage holds " + std::to_string(held) + " tokens");
    const int64_t position = int64_t(f.position);
    if (int64_t(n) > ctx_->n_ctx() - position)
        fail(Status::context_overflow, std::to_string(n) + " tokens at position " + std::to_string(position) +
                                           " do not fit the configured context of " +
                                           std::to_string(ctx_->n_ctx()) + " tokens");
    const std::vector<float> in = decode_hidden(f.hidden, n, ctx_->hidden_in_width());

    // Checked: from here on the request runs.
    if (position < held) {
        ctx_->truncate(position);
        if (sampler_) sampler_->forget_row();
    }
    const bool all = f.output == ForwardOutput::logits_all;
    std::vector<float> out(size_t(ctx_->output_floats(int64_t(n), all)));
    ctx_->forward_hidden(in.data(), int64_t(n), out.data(), all);
    if (!last) return encode_hidden(out, n, uint64_t(ctx_->hidden_out_width()), f.hidden.dtype);  // the type it came in

    const size_t V = size_t(n_vocab);
    sampler_->decoded(f.tokens, std::span<const float>(out).last(V));
    switch (f.output) {
    case ForwardOutput::logits_last: return encode_hidden(out, 1, V, DType::f32);
    case ForwardOutput::logits_all: return encode_hidden(out, n, V, DType::f32);
    case ForwardOutput::sample: return sampled(*sampler_, f.n_top);
    default: return transport::Done{};
    }
}

void Stage::set_sampling(const transport::SetSampling& s) {
    if (!sampler_) fail(Status::invalid_argument, "sampling settings go to the last stage only");
    sample::SamplerParams p;
    p.temperature = s.temperature;
    p.top_k = s.top_k;
    p.top_p = s.top_p;
    p.min_p = s.min_p;
    p.repeat_penalty = s.repeat_penalty;
    p.repeat_last_n = s.repeat_last_n;
    p.seed = s.seed;
    sampler_->set_params(p);  // validates before anything changes
}

transport::Sampled Stage::sample(uint32_t n_top) {
    if (!sampler_) fail(Status::invalid_argument, "only the last stage samples");
    check_n_top(n_top);
    return sampled(*sampler_, n_top);
}

}  // namespace strata::pipeline
