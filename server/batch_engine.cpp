// batch_engine.cpp: the continuous-batching loop over one multi-sequence session.
#include "batch_engine.hpp"

#include <algorithm>
#include <cstdio>
#include <string>

namespace server {

BatchEngine::BatchEngine(strata_session* session, JobQueue& queue, Metrics& metrics, TokenText& text,
                         int32_t prefill_chunk)
    : session_(session), queue_(queue), metrics_(metrics), text_(text), prefill_chunk_(prefill_chunk) {
    strata_session_n_seq(session_, &n_seq_);
    strata_session_n_vocab(session_, &n_vocab_);
    strata_session_n_ctx(session_, &n_ctx_);
    slots_.resize(size_t(n_seq_));
}

BatchEngine::~BatchEngine() {
    stop();
    strata_session_free(session_);
}

void BatchEngine::start() { thread_ = std::thread([this] { run(); }); }

void BatchEngine::stop() {
    stopping_ = true;
    if (thread_.joinable()) thread_.join();
}

EngineGauges BatchEngine::gauges() const {
    return {n_seq_, active_.load(), kv_used_.load(), int64_t(n_seq_) * n_ctx_};
}

void BatchEngine::run() {
    while (!stopping_) {
        drop_cancelled();
        if (active_ == 0) {
            // Idle: block for the next request.
            if (auto job = queue_.pop_for(std::chrono::milliseconds(100))) assign(std::move(job));
        }
        assign_waiting_jobs();
        if (active_ > 0) step();
        publish_gauges();
    }
    for (int32_t s = 0; s < n_seq_; ++s)
        if (slots_[size_t(s)].generation) {
            slots_[size_t(s)].generation->fail(503, "the server is shutting down", "server_error");
            release(s);
        }
    publish_gauges();
}

void BatchEngine::assign_waiting_jobs() {
    while (active_ < n_seq_) {
        auto job = queue_.try_pop();
        if (!job) return;
        assign(std::move(job));
    }
}

// Into the free slot whose cache shares the longest prefix with the prompt (ties: the lowest).
void BatchEngine::assign(std::shared_ptr<Job> job) {
    const auto& prompt = job->input.prompt;
    size_t best_common = 0;
    int32_t seq = -1;
    for (int32_t s = 0; s < n_seq_; ++s) {
        if (slots_[size_t(s)].generation) continue;
        const size_t c = common_prefix(slots_[size_t(s)].cached, prompt);
        if (seq < 0 || c > best_common) {
            seq = s;
            best_common = c;
        }
    }
    if (seq < 0) {  // not reached: called only with a free slot
        JobOutcome busy;
        busy.ok = false;
        busy.error_status = 503;
        busy.error_message = "no free slot";
        busy.error_type = "server_error";
        job->finish(std::move(busy));
        return;
    }
    Slot& slot = slots_[size_t(seq)];
    size_t keep = reusable_prefix(best_common, job->input);
    if (keep < slot.cached.size()) {
        strata_status st = keep == 0 ? strata_session_seq_reset(session_, seq)
                                     : strata_session_seq_truncate(session_, seq, int64_t(keep));
        if (st == STRATA_ERR_UNSUPPORTED) {  // recurrent layers: only a restart
            st = strata_session_seq_reset(session_, seq);
            keep = 0;
        }
        if (st != STRATA_OK) {
            std::fprintf(stderr, "strata-server: slot %d: cannot reuse its cache: %s\n", seq, strata_last_error());
            strata_session_seq_reset(session_, seq);
            keep = 0;
        }
        slot.cached.resize(keep);
    }
    slot.generation.emplace(std::move(job), text_);
    slot.prompt_done = keep;
    slot.next_token = -1;
    Job& j = slot.generation->job();
    j.started = true;
    const strata_sampling_params sp = sampling_of(j.input);
    if (strata_session_seq_set_sampling(session_, seq, &sp) != STRATA_OK) {
        slot.generation->fail(400, std::string("sampling settings refused: ") + strata_last_error(),
                              "invalid_request_error");
        slot.generation.reset();
        return;
    }
    ++active_;
}

void BatchEngine::drop_cancelled() {
    for (int32_t s = 0; s < n_seq_; ++s) {
        auto& g = slots_[size_t(s)].generation;
        if (g && g->job().cancelled()) {
            g->fail(499, "the request was cancelled", "cancelled");
            release(s);
        }
    }
}

void BatchEngine::step() {
    std::vector<strata_seq_tokens> entries;
    std::vector<int32_t> seqs;
    // Prompt tokens are shared out under one budget per step, so that the decoding slots' next
    // token waits for at most prefill_chunk_ prompt tokens whatever the number of new requests.
    // The slot after the last one served goes first, so every prompt advances in turn.
    size_t budget = size_t(prefill_chunk_);
    const int32_t first = prefill_turn_;
    for (int32_t k = 0; k < n_seq_; ++k) {
        const int32_t s = (first + k) % n_seq_;
        Slot& slot = slots_[size_t(s)];
        if (!slot.generation) continue;
        const auto& prompt = slot.generation->job().input.prompt;
        strata_seq_tokens e{};
        e.seq = s;
        if (slot.prompt_done < prompt.size()) {
            if (budget == 0) continue;  // its prompt goes on next step
            e.tokens = prompt.data() + slot.prompt_done;
            e.n_tokens = std::min(prompt.size() - slot.prompt_done, budget);
            budget -= e.n_tokens;
            prefill_turn_ = (s + 1) % n_seq_;
        } else {
            e.tokens = &slot.next_token;
            e.n_tokens = 1;
        }
        entries.push_back(e);
        seqs.push_back(s);
    }
    if (strata_session_decode_batch(session_, entries.data(), entries.size()) != STRATA_OK) {
        const std::string why = strata_last_error();
        std::fprintf(stderr, "strata-server: batched decode failed: %s\n", why.c_str());
        for (int32_t s : seqs) {
            slots_[size_t(s)].generation->fail(500, "decode failed: " + why);
            strata_session_seq_reset(session_, s);
            slots_[size_t(s)].cached.clear();
            release(s);
        }
        return;
    }
    int64_t sampled = 0;
    for (size_t i = 0; i < entries.size(); ++i) {
        const int32_t s = seqs[i];
        Slot& slot = slots_[size_t(s)];
        slot.cached.insert(slot.cached.end(), entries[i].tokens, entries[i].tokens + entries[i].n_tokens);
        const auto& prompt = slot.generation->job().input.prompt;
        if (slot.prompt_done < prompt.size()) {
            slot.prompt_done += entries[i].n_tokens;
            if (slot.prompt_done < prompt.size()) continue;  // more prompt next step
        }
        sample(s);
        ++sampled;
    }
    if (sampled) metrics_.add_generated_tokens(sampled);
}

void BatchEngine::sample(int32_t seq) {
    Slot& slot = slots_[size_t(seq)];
    const JobInput& in = slot.generation->job().input;
    const size_t n_top = in.logprobs ? size_t(in.top_logprobs) : 0;
    int32_t top_tokens[64];
    float top_logprobs[64];
    const float* logits = nullptr;
    if (in.logprobs) strata_session_seq_logits(session_, seq, &logits);  // before sampling moves on
    int32_t token = -1;
    if (strata_session_seq_sample_top(session_, seq, &token, n_top, top_tokens, top_logprobs) != STRATA_OK) {
        slot.generation->fail(500, std::string("sampling failed: ") + strata_last_error());
        release(seq);
        return;
    }
    SampledLogprobs lp;
    if (in.logprobs) lp = sampled_logprobs(token, top_tokens, top_logprobs, n_top, logits, n_vocab_);
    if (!slot.generation->accept(token, lp.logprob, std::move(lp.top))) {
        release(seq);
        return;
    }
    if (int64_t(slot.cached.size()) >= n_ctx_) {  // no room to decode the token just sampled
        slot.generation->finish_length();
        release(seq);
        return;
    }
    slot.next_token = token;
}

void BatchEngine::release(int32_t seq) {
    Slot& slot = slots_[size_t(seq)];
    if (!slot.generation) return;
    slot.generation.reset();
    --active_;
}

void BatchEngine::publish_gauges() {
    int64_t used = 0;
    for (const auto& s : slots_) used += int64_t(s.cached.size());
    kv_used_ = used;
}

}  // namespace server
