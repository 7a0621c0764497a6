// model_host.hpp: the loaded model and the engine over it, and what requests need of the
// vocabulary and the chat template. Loading happens after the listener is up; until it is done
// requests see loaded() == false (GET /health: 503).
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "engine.hpp"
#include "job_queue.hpp"
#include "options.hpp"
#include "strata/strata.hpp"
#include "token_text.hpp"

namespace server {

class ModelHost : public TokenText {
public:
    // Opens the model and builds the engine (a session with n_seq slots, or one pipeline per
    // slot). Throws strata::error or std::runtime_error saying what failed.
    void load(const Options& options, JobQueue& queue, Metrics& metrics);
    bool loaded() const { return loaded_.load(); }

    Engine& engine() { return *engine_; }
    int64_t n_ctx() const { return n_ctx_; }  // per slot
    int32_t n_vocab() const { return n_vocab_; }
    const std::string& model_id() const { return model_id_; }
    std::string settings_json() const;  // what /v1/models reports beside the id

    // The prompt text of a conversation; ApiError 400 when there is no template or the template
    // refuses the messages.
    std::string render_chat(const std::string& messages_json);
    std::vector<int32_t> tokenize(const std::string& text, bool add_special, bool parse_special);
    // ApiError 400 for ids outside the vocabulary.
    std::string detokenize(const std::vector<int32_t>& tokens);

    std::string piece(int32_t token) override;
    bool is_end_of_generation(int32_t token) override;

private:
    std::unique_ptr<strata::model> model_;
    std::unique_ptr<Engine> engine_;
    std::string chat_template_;  // "" and !template_is_set_: the model's own
    bool template_is_set_ = false;
    int64_t n_ctx_ = 0;
    int32_t n_vocab_ = 0;
    int32_t bos_ = -1;
    int32_t n_slots_ = 1;
    bool pipeline_ = false;
    int32_t n_stages_ = 1;
    std::string model_id_;
    std::string plan_json_;  // a pipeline's executed plan (every lane's); empty when local
    std::atomic<bool> loaded_{false};
};

}  // namespace server
