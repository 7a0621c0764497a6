// strata_session_*: one sequence (local, or a pipeline's: exec::Sequence) and generation.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "capi/device.hpp"
#include "capi/guard.hpp"
#include "capi/session.hpp"
#include "capi/handles.hpp"
#include "exec/sequence/batched_sequence.hpp"
#include "sample/sampler.hpp"
#ifdef STRATA_HAVE_CUDA
#include "runtime/gpu_sequence.hpp"
#endif

using strata::Status;
using strata::fail;
using strata::capi::require;

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

namespace strata::capi {

strata_session& session_of(strata_session* session) { return *require(session, "session"); }
const strata_session& session_of(const strata_session* session) { return *require(session, "session"); }

void forget_logits(strata_session& s, int32_t seq) {
    s.seq_logits[size_t(seq)].clear();
    if (seq == 0) s.logits_rows = 0;
}

void sample_top(exec::Sequence& sequence, int32_t* out_token, size_t n_top, int32_t* top_tokens, float* top_logprobs) {
    require(out_token, "out_token");
    if (n_top > 64) fail(Status::invalid_argument, "n_top is " + std::to_string(n_top) + ", at most 64");
    if (n_top) {
        require(top_tokens, "top_tokens");
        require(top_logprobs, "top_logprobs");
    }
    std::vector<sample::TokenLogprob> top;
    *out_token = sequence.sample(uint32_t(n_top), &top);
    for (size_t i = 0; i < n_top; ++i) {  // fewer than n_top only with a smaller vocabulary
        top_tokens[i] = i < top.size() ? top[i].token : -1;
        top_logprobs[i] = i < top.size() ? top[i].logprob : -INFINITY;
    }
}

strata::sample::SamplerParams sampler_params(const strata_sampling_params& p) {
    strata::sample::SamplerParams s;
    s.temperature = p.temperature;
    s.top_k = p.top_k;
    s.top_p = p.top_p;
    s.min_p = p.min_p;
    s.repeat_penalty = p.repeat_penalty;
    s.repeat_last_n = p.repeat_last_n;
    s.seed = p.seed;
    return s;
}

}  // namespace strata::capi

namespace {

using strata::capi::sampler_params;

strata::sample::SamplerParams default_sampler_params() {
    strata_sampling_params defaults;
    strata_sampling_default_params(&defaults);
    return sampler_params(defaults);
}

using strata::capi::forget_logits;
using strata::capi::session_of;

void decode(strata_session& s, const int32_t* tokens, size_t n_tokens, bool all_logits) {
    if (n_tokens) require(tokens, "tokens");
    forget_logits(s, 0);  // a failure below leaves no stale logits readable
    s.sequence->decode({tokens, n_tokens}, all_logits, &s.logits);
    s.logits_rows = all_logits ? n_tokens : 1;
}

// A sequence on the GPU, reporting the weight upload through the model's progress callback.
std::unique_ptr<strata::exec::Sequence> gpu_sequence(const strata_model& model, const strata::exec::ContextParams& cp) {
#ifdef STRATA_HAVE_CUDA
    return strata::cuda::make_gpu_sequence(*model.file, cp, default_sampler_params(),
                                           strata::capi::upload_progress(model));
#else
    (void)model;
    (void)cp;
    strata::capi::no_cuda_backend();
#endif
}

bool contains_stop(const std::string& text, const std::vector<std::string>& stops) {
    return std::any_of(stops.begin(), stops.end(),
                       [&](const std::string& stop) { return !stop.empty() && text.find(stop) != std::string::npos; });
}

}  // namespace

namespace strata::capi {

SessionTokenizer session_tokenizer(strata_model* model) {
    SessionTokenizer t;
    try {
        t.tokenizer = tokenizer_of(model);
    } catch (const Error& e) {
        t.error = e.what();  // decoding token ids still works; generate reports this
    }
    return t;
}

strata_session* make_session(SessionTokenizer tokenizer, std::unique_ptr<exec::MultiSequence> sequences,
                             std::shared_ptr<const gguf::ModelFile> file) {
    auto session = std::make_unique<strata_session>();
    session->file = std::move(file);
    session->tokenizer = std::move(tokenizer.tokenizer);
    session->tokenizer_error = std::move(tokenizer.error);
    session->sequences = std::move(sequences);
    session->sequence = &session->sequences->at(0);
    session->seq_logits.resize(size_t(session->sequences->n_seq()));
    return session.release();
}

strata_session* make_session(SessionTokenizer tokenizer, std::unique_ptr<exec::Sequence> sequence,
                             std::shared_ptr<const gguf::ModelFile> file) {
    std::vector<std::unique_ptr<exec::Sequence>> one;
    one.push_back(std::move(sequence));
    return make_session(std::move(tokenizer), std::make_unique<exec::SequenceList>(std::move(one)), std::move(file));
}

sample::SamplerParams default_sampling() { return default_sampler_params(); }

}  // namespace strata::capi

extern "C" {

void strata_session_default_params(strata_session_params* params) {
    if (!params) return;
    *params = strata_session_params{};
    params->struct_size = sizeof *params;
    params->kv_type = STRATA_KV_F16;
    params->n_seq = 1;
}

strata_status strata_session_create(strata_model* model, const strata_session_params* params,
                                    strata_session** out_session) {
    STRATA_API_BEGIN
    require(out_session, "out_session");
    *out_session = nullptr;
    require(model, "model");
    // `device` was appended after the first release: shorter structs run on the CPU.
    const strata_session_params p = strata::capi::params_or_default(params, strata_session_default_params,
                                                                    offsetof(strata_session_params, device));
    // n_seq was appended after device (a shorter struct keeps the default); 0 means 1, as a
    // zero-initialised struct has it.
    const int32_t n_seq = p.n_seq == 0 ? 1 : p.n_seq;
    if (n_seq < 1 || n_seq > 4096)
        fail(Status::invalid_argument, "n_seq is " + std::to_string(n_seq) + ", expected 1..4096 (0: 1)");
    strata::capi::check_device(p.device);
    if (p.n_ctx < 0) fail(Status::invalid_argument, "n_ctx is " + std::to_string(p.n_ctx) + ", expected 0 or more");
    if (p.n_threads < 0)
        fail(Status::invalid_argument, "n_threads is " + std::to_string(p.n_threads) + ", expected 0 or more");
    if (p.kv_type != STRATA_KV_F16 && p.kv_type != STRATA_KV_Q8_0)
        fail(Status::invalid_argument, "kv_type is " + std::to_string(p.kv_type) + ", expected STRATA_KV_F16 or STRATA_KV_Q8_0");
    strata::exec::ContextParams cp;
    cp.n_ctx = p.n_ctx;
    cp.n_threads = p.n_threads;
    cp.kv_type = p.kv_type == STRATA_KV_Q8_0 ? strata::exec::KvType::q8_0 : strata::exec::KvType::f16;
    cp.memory_budget = p.memory_budget;
    if (n_seq > 1 && p.device == STRATA_DEVICE_CUDA)
        fail(Status::unsupported, "n_seq is " + std::to_string(n_seq) + ": CUDA sessions hold one sequence so far");
    std::unique_ptr<strata::exec::MultiSequence> sequences;
    if (p.device == STRATA_DEVICE_CUDA) {
        std::vector<std::unique_ptr<strata::exec::Sequence>> one;
        one.push_back(gpu_sequence(*model, cp));
        sequences = std::make_unique<strata::exec::SequenceList>(std::move(one));
    } else {
        // The CPU runs every slot in one Context: a batched decode reads each weight once.
        cp.n_seq = n_seq;
        sequences = std::make_unique<strata::exec::BatchedSequences>(*model->file, cp, strata::capi::default_sampling());
    }
    *out_session = strata::capi::make_session(strata::capi::session_tokenizer(model), std::move(sequences), model->file);
    STRATA_API_END
}

void strata_session_free(strata_session* session) { delete session; }

strata_status strata_session_plan(const strata_session* session, char* text, size_t capacity, size_t* out_needed) {
    STRATA_API_BEGIN
    strata::capi::copy_text_out(session_of(session).sequence->plan(), text, capacity, out_needed,
                                "the memory plan");
    STRATA_API_END
}

strata_status strata_session_n_ctx(const strata_session* session, int64_t* out_n_ctx) {
    STRATA_API_BEGIN
    *require(out_n_ctx, "out_n_ctx") = session_of(session).sequence->n_ctx();
    STRATA_API_END
}

strata_status strata_session_n_past(const strata_session* session, int64_t* out_n_past) {
    STRATA_API_BEGIN
    *require(out_n_past, "out_n_past") = session_of(session).sequence->n_past();
    STRATA_API_END
}

strata_status strata_session_n_vocab(const strata_session* session, int32_t* out_n_vocab) {
    STRATA_API_BEGIN
    *require(out_n_vocab, "out_n_vocab") = int32_t(session_of(session).sequence->n_vocab());
    STRATA_API_END
}

strata_status strata_session_decode(strata_session* session, const int32_t* tokens, size_t n_tokens, int all_logits) {
    STRATA_API_BEGIN
    decode(session_of(session), tokens, n_tokens, all_logits != 0);
    STRATA_API_END
}

strata_status strata_session_logits(const strata_session* session, const float** out_logits, size_t* out_n_rows) {
    STRATA_API_BEGIN
    const auto& s = session_of(session);
    require(out_logits, "out_logits");
    require(out_n_rows, "out_n_rows");
    if (s.logits_rows == 0) fail(Status::invalid_argument, "there are no logits: decode first");
    *out_logits = s.logits.data();
    *out_n_rows = s.logits_rows;
    STRATA_API_END
}

strata_status strata_session_reset(strata_session* session) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    forget_logits(s, 0);
    s.sequence->reset();
    STRATA_API_END
}

void strata_sampling_default_params(strata_sampling_params* params) {
    if (!params) return;
    const strata::sample::SamplerParams d;
    *params = strata_sampling_params{};
    params->struct_size = sizeof *params;
    params->temperature = d.temperature;
    params->top_k = d.top_k;
    params->top_p = d.top_p;
    params->min_p = d.min_p;
    params->repeat_penalty = d.repeat_penalty;
    params->repeat_last_n = d.repeat_last_n;
    params->seed = d.seed;
}

strata_status strata_session_set_sampling(strata_session* session, const strata_sampling_params* params) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    strata::capi::require_struct(params, sizeof(strata_sampling_params), "params");
    s.sequence->set_sampling(sampler_params(*params));  // validates first
    STRATA_API_END
}

strata_status strata_session_sampling_json(const strata_session* session, char* text, size_t capacity,
                                           size_t* out_needed) {
    STRATA_API_BEGIN
    strata::capi::copy_text_out(session_of(session).sequence->sampling().to_json(), text, capacity, out_needed,
                                "the sampling settings");
    STRATA_API_END
}

strata_status strata_session_sample(strata_session* session, int32_t* out_token) {
    STRATA_API_BEGIN
    require(out_token, "out_token");
    *out_token = session_of(session).sequence->sample(0, nullptr);
    STRATA_API_END
}

strata_status strata_session_decode_sample(strata_session* session, const int32_t* tokens, size_t n_tokens,
                                           int32_t* out_token) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    require(out_token, "out_token");
    if (n_tokens) require(tokens, "tokens");
    forget_logits(s, 0);  // nothing fetched: no stale logits readable
    *out_token = s.sequence->decode_and_sample({tokens, n_tokens}, 0, nullptr);
    STRATA_API_END
}

strata_status strata_session_sample_top(strata_session* session, int32_t* out_token, size_t n_top,
                                        int32_t* top_tokens, float* top_logprobs) {
    STRATA_API_BEGIN
    strata::capi::sample_top(*session_of(session).sequence, out_token, n_top, top_tokens, top_logprobs);
    STRATA_API_END
}

void strata_generate_default_params(strata_generate_params* params) {
    if (!params) return;
    *params = strata_generate_params{};
    params->struct_size = sizeof *params;
    params->max_tokens = 128;
    params->add_special = 1;
    params->stop_at_end_of_generation = 1;
}

strata_status strata_session_generate(strata_session* session, const char* prompt, size_t prompt_length,
                                      const strata_generate_params* params, strata_generate_result* out_result) {
    STRATA_API_BEGIN
    auto& s = session_of(session);
    const strata_generate_params p = strata::capi::params_or_default(params, strata_generate_default_params);
    if (out_result) strata::capi::require_struct(out_result, sizeof(strata_generate_result), "out_result");
    if (p.max_tokens < 0)
        fail(Status::invalid_argument, "max_tokens is " + std::to_string(p.max_tokens) + ", expected 0 or more");
    std::vector<std::string> stops;
    if (p.n_stop_strings) require(p.stop_strings, "stop_strings");
    for (size_t i = 0; i < p.n_stop_strings; ++i) stops.emplace_back(require(p.stop_strings[i], "stop_strings[i]"));
    if (prompt_length) require(prompt, "prompt");

    if (!s.tokenizer) fail(Status::format, "cannot generate: " + s.tokenizer_error);
    const auto& tok = *s.tokenizer;
    auto& seq = *s.sequence;
    const bool at_start = seq.n_past() == 0;
    const auto prompt_tokens = tok.encode(std::string_view(prompt_length ? prompt : "", prompt_length),
                                          p.add_special != 0 && at_start, p.parse_special != 0);
    strata_generate_result result{};
    result.struct_size = sizeof result;
    // Generation moves token ids only (decode_and_sample: one round trip per token on a
    // pipeline); the last decode's logits are not kept readable.
    forget_logits(s, 0);
    int32_t next = -1;
    const auto t0 = Clock::now();
    if (!prompt_tokens.empty()) {
        if (p.max_tokens > 0) {
            next = seq.decode_and_sample(prompt_tokens, 0, nullptr);
        } else {
            seq.decode(prompt_tokens, false, nullptr);
        }
        result.n_prompt_tokens = int64_t(prompt_tokens.size());
    } else if (p.max_tokens > 0) {
        next = seq.sample(0, nullptr);  // continues from the last decode; throws when there is none
    }
    result.prefill_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

    // Each emitted token is decoded right away, so the session can continue after a stop.
    const auto t1 = Clock::now();
    std::string tail;  // the end of the generated text, searched for stop strings
    size_t longest_stop = 0;
    for (const auto& stop : stops) longest_stop = std::max(longest_stop, stop.size());
    result.stop_reason = STRATA_STOP_MAX_TOKENS;
    while (result.n_generated < p.max_tokens) {
        const int32_t token = next;
        if (p.stop_at_end_of_generation && tok.is_eog(token)) {
            result.stop_reason = STRATA_STOP_END_OF_GENERATION;
            break;
        }
        const std::string piece = tok.token_to_piece(token);
        ++result.n_generated;
        const bool callback_stop = p.on_token && p.on_token(token, piece.data(), piece.size(), p.user_data) != 0;
        if (seq.n_past() >= seq.n_ctx()) {
            result.stop_reason = STRATA_STOP_CONTEXT_FULL;
            break;
        }
        // A stop string may span pieces and end inside one: search the new bytes plus enough of
        // the earlier ones (longest_stop - 1) to complete any match that started before.
        tail += piece;
        const bool string_stop = contains_stop(tail, stops);
        if (longest_stop > 0 && tail.size() >= longest_stop) tail.erase(0, tail.size() - (longest_stop - 1));
        // The token is decoded whatever stops here; the next one is drawn only when it is wanted,
        // so the sampler's generator and history match a decode-then-sample loop exactly.
        const std::span<const int32_t> one(&token, 1);
        if (callback_stop || string_stop || result.n_generated >= p.max_tokens) {
            seq.decode(one, false, nullptr);
            if (callback_stop) result.stop_reason = STRATA_STOP_CALLBACK;
            else if (string_stop) result.stop_reason = STRATA_STOP_STRING;
            break;
        }
        next = seq.decode_and_sample(one, 0, nullptr);
    }
    result.decode_seconds = std::chrono::duration<double>(Clock::now() - t1).count();
    if (out_result) *out_result = result;
    STRATA_API_END
}

}  // extern "C"
