// generation.cpp
#include "generation.hpp"

namespace server {

Generation::Generation(std::shared_ptr<Job> job, TokenText& text)
    : job_(std::move(job)), text_(text), stream_(job_->input.stop) {}

bool Generation::accept(int32_t token, float logprob, std::vector<std::pair<int32_t, float>> top) {
    // The end-of-generation token is not part of the completion (nor of its token count).
    if (text_.is_end_of_generation(token)) {
        finish(FinishReason::stop);
        return false;
    }
    ++n_generated_;
    if (job_->input.logprobs) pending_logprobs_.push_back({token, logprob, std::move(top)});
    std::string ready = stream_.push(text_.piece(token));
    if (!ready.empty() || stream_.stopped()) {
        job_->emit(std::move(ready), std::move(pending_logprobs_));
        pending_logprobs_.clear();
    }
    if (stream_.stopped()) {
        finish(FinishReason::stop);
        return false;
    }
    if (n_generated_ >= job_->input.max_tokens) {
        finish(FinishReason::length);
        return false;
    }
    return true;
}

void Generation::finish_length() { finish(FinishReason::length); }

void Generation::finish(FinishReason reason) {
    std::string rest = stream_.flush();
    if (!rest.empty() || !pending_logprobs_.empty()) job_->emit(std::move(rest), std::move(pending_logprobs_));
    pending_logprobs_.clear();
    JobOutcome out;
    out.reason = reason;
    out.prompt_tokens = int64_t(job_->input.prompt.size());
    out.completion_tokens = n_generated_;
    job_->finish(std::move(out));
}

void Generation::fail(int status, const std::string& message, const std::string& type) {
    JobOutcome out;
    out.ok = false;
    out.error_status = status;
    out.error_message = message;
    out.error_type = type;
    out.prompt_tokens = int64_t(job_->input.prompt.size());
    out.completion_tokens = n_generated_;
    job_->finish(std::move(out));
}

}  // namespace server
