// pipeline_engine.cpp: one thread per pipeline lane, each serving one request at a time.
#include "pipeline_engine.hpp"

#include <cstdio>
#include <string>

namespace server {
namespace {

bool is_stage_failure(strata_status st) { return st == STRATA_ERR_STAGE_FAILED || st == STRATA_ERR_IO; }

}  // namespace

PipelineEngine::PipelineEngine(std::vector<Lane> lanes, JobQueue& queue, Metrics& metrics, TokenText& text)
    : queue_(queue), metrics_(metrics), text_(text) {
    for (auto& lane : lanes) {
        auto slot = std::make_unique<Slot>();
        slot->lane = lane;
        slots_.push_back(std::move(slot));
    }
    if (!slots_.empty()) {
        strata_session_n_vocab(slots_[0]->lane.session, &n_vocab_);
        strata_session_n_ctx(slots_[0]->lane.session, &n_ctx_);
    }
}

PipelineEngine::~PipelineEngine() {
    stop();
    for (auto& slot : slots_) {
        strata_session_free(slot->lane.session);
        strata_pipeline_free(slot->lane.pipeline);
    }
}

void PipelineEngine::start() {
    for (size_t i = 0; i < slots_.size(); ++i) slots_[i]->thread = std::thread([this, i] { run(*slots_[i], i); });
}

void PipelineEngine::stop() {
    stopping_ = true;
    for (auto& slot : slots_)
        if (slot->thread.joinable()) slot->thread.join();
}

EngineGauges PipelineEngine::gauges() const {
    EngineGauges g;
    g.slots_total = int64_t(slots_.size());
    for (const auto& slot : slots_) {
        g.slots_active += slot->busy ? 1 : 0;
        g.kv_tokens_used += slot->n_past;
    }
    g.kv_tokens_capacity = g.slots_total * n_ctx_;
    return g;
}

void PipelineEngine::run(Slot& slot, size_t index) {
    while (!stopping_) {
        auto job = queue_.pop_for(std::chrono::milliseconds(100));
        if (!job) continue;
        slot.busy = true;
        job->started = true;
        Generation generation(std::move(job), text_);
        if (repair(slot, generation)) serve(slot, generation);
        if (slot.broken) std::fprintf(stderr, "strata-server: pipeline slot %zu: a stage failed\n", index);
        slot.n_past = int64_t(slot.cached.size());
        slot.busy = false;
    }
}

// After a stage failure: reconnect, or fail this request with 502 saying why.
bool PipelineEngine::repair(Slot& slot, Generation& generation) {
    if (!slot.broken) return true;
    if (strata_pipeline_reconnect(slot.lane.pipeline) != STRATA_OK) {
        generation.fail(502, std::string("pipeline stage unavailable: ") + strata_last_error(), "server_error");
        return false;
    }
    strata_session_reset(slot.lane.session);
    slot.cached.clear();
    slot.broken = false;
    return true;
}

void PipelineEngine::serve(Slot& slot, Generation& generation) {
    strata_session* session = slot.lane.session;
    const JobInput& in = generation.job().input;
    auto fail_status = [&](strata_status st, const char* what) {
        const std::string why = strata_last_error();
        if (is_stage_failure(st)) {
            slot.broken = true;
            generation.fail(502, std::string(what) + ": " + why, "server_error");
        } else {
            generation.fail(500, std::string(what) + ": " + why, "server_error");
        }
        strata_session_reset(session);
        slot.cached.clear();
    };
    // A sequence that cannot be cut restarts.
    size_t keep = reusable_prefix(common_prefix(slot.cached, in.prompt), in);
    if (keep < slot.cached.size()) {
        strata_status st = keep == 0 ? strata_session_reset(session) : strata_session_seq_truncate(session, 0, int64_t(keep));
        if (st != STRATA_OK && !is_stage_failure(st)) {
            st = strata_session_reset(session);
            keep = 0;
        }
        if (st != STRATA_OK) return fail_status(st, "resetting the sequence failed");
        slot.cached.resize(keep);
    }
    const strata_sampling_params sp = sampling_of(in);
    if (const strata_status st = strata_session_set_sampling(session, &sp); st != STRATA_OK) {
        // The request's settings were checked when it was parsed; the sampler lives on the last
        // stage, so anything but a refused setting is that stage's failure.
        if (st != STRATA_ERR_INVALID_ARGUMENT) {
            slot.broken = true;
            return fail_status(STRATA_ERR_STAGE_FAILED, "setting the sampler on the last stage failed");
        }
        return generation.fail(400, std::string("sampling settings refused: ") + strata_last_error(),
                               "invalid_request_error");
    }
    std::vector<int32_t> next(in.prompt.begin() + std::ptrdiff_t(keep), in.prompt.end());
    const size_t n_top = in.logprobs ? size_t(in.top_logprobs) : 0;
    int32_t top_tokens[64];
    float top_logprobs[64];
    while (!stopping_) {
        if (generation.job().cancelled()) return generation.fail(499, "the request was cancelled", "cancelled");
        int32_t token = -1;
        SampledLogprobs lp;
        strata_status st;
        if (in.logprobs) {
            // The logits travel only when log-probabilities are asked for.
            st = strata_session_decode(session, next.data(), next.size(), 0);
            const float* logits = nullptr;
            size_t rows = 0;
            if (st == STRATA_OK) st = strata_session_logits(session, &logits, &rows);
            if (st == STRATA_OK) st = strata_session_sample_top(session, &token, n_top, top_tokens, top_logprobs);
            if (st == STRATA_OK) lp = sampled_logprobs(token, top_tokens, top_logprobs, n_top, logits, n_vocab_);
        } else {
            st = strata_session_decode_sample(session, next.data(), next.size(), &token);
        }
        if (st != STRATA_OK) return fail_status(st, "decode failed");
        slot.cached.insert(slot.cached.end(), next.begin(), next.end());
        slot.n_past = int64_t(slot.cached.size());
        metrics_.add_generated_tokens(1);
        if (!generation.accept(token, lp.logprob, std::move(lp.top))) return;
        if (int64_t(slot.cached.size()) >= n_ctx_) return generation.finish_length();
        next.assign(1, token);
    }
    generation.fail(503, "the server is shutting down", "server_error");
}

}  // namespace server
