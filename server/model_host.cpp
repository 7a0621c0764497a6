// model_host.cpp: loading, and the tokenizer and chat template behind clear errors.
#include "model_host.hpp"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "api_error.hpp"
#include "batch_engine.hpp"
#include "pipeline_engine.hpp"

namespace server {
namespace {

// The plan a pipeline executes, as JSON (strata_pipeline_plan_json).
std::string pipeline_plan_json(strata_pipeline* pipeline) {
    size_t needed = 0;
    strata_pipeline_plan_json(pipeline, nullptr, 0, &needed);
    std::string text(needed, '\0');
    if (strata_pipeline_plan_json(pipeline, text.data(), text.size(), &needed) != STRATA_OK)
        throw strata::error(STRATA_ERR_INTERNAL, std::string("the pipeline's plan: ") + strata_last_error());
    text.resize(needed > 0 ? needed - 1 : 0);
    return text;
}

// "0:2,2:3,3:4" from the plan's stages (the layers param of strata_pipeline_params).
std::string executed_layers(const std::string& plan_json) {
    std::string spec;
    const nlohmann::json plan = nlohmann::json::parse(plan_json);  // kept: the loop reads into it
    for (const auto& stage : plan.at("stages")) {
        const auto& r = stage.at("layers");
        spec += (spec.empty() ? "" : ",") + std::to_string(r.at(0).get<int>()) + ":" + std::to_string(r.at(1).get<int>());
    }
    return spec;
}

[[noreturn]] void fail_load(const std::string& what) {
    throw strata::error(strata_status(STRATA_ERR_INTERNAL), what + ": " + strata_last_error());
}

}  // namespace

void ModelHost::load(const Options& o, JobQueue& queue, Metrics& metrics) {
    model_ = std::make_unique<strata::model>(o.model_paths);
    model_id_ = o.model_alias.empty() ? std::filesystem::path(o.model_paths[0]).filename().string() : o.model_alias;
    const strata_vocab_info vocab = model_->vocab();
    n_vocab_ = vocab.n_vocab;
    bos_ = vocab.bos;
    model_->tokenize("warm up", true, true);  // builds the tokenizer before requests share it
    if (!o.chat_format.empty()) {
        chat_template_ = o.chat_format;
        template_is_set_ = true;
    }
    n_slots_ = o.parallel;
    if (o.workers.empty()) {
        strata_session_params sp;
        strata_session_default_params(&sp);
        sp.n_ctx = o.n_ctx;
        sp.n_threads = o.n_threads;
        sp.n_seq = o.parallel;
        strata_session* session = nullptr;
        if (strata_session_create(model_->get(), &sp, &session) != STRATA_OK)
            fail_load("creating a session with " + std::to_string(o.parallel) + " slots failed");
        strata_session_n_ctx(session, &n_ctx_);
        engine_ = std::make_unique<BatchEngine>(session, queue, metrics, *this, o.prefill_chunk);
    } else {
        pipeline_ = true;
        n_stages_ = int32_t(o.workers.size()) + 1;
        std::vector<PipelineEngine::Lane> lanes;
        auto free_lanes = [&] {
            for (auto& l : lanes) {
                strata_session_free(l.session);
                strata_pipeline_free(l.pipeline);
            }
        };
        std::vector<const char*> workers;
        for (const auto& w : o.workers) workers.push_back(w.c_str());
        // Every lane runs the same layer ranges: planned from free memory, a later lane would see
        // the memory the earlier ones took and could cut the layers elsewhere, and then the same
        // request would give other logits (the wire's f16 rounding falls elsewhere) by lane.
        std::string layers = o.layers;
        for (int32_t i = 0; i < o.parallel; ++i) {
            strata_pipeline_params pp;
            strata_pipeline_default_params(&pp);
            pp.workers = workers.data();
            pp.n_workers = workers.size();
            pp.layers = layers.empty() ? nullptr : layers.c_str();
            pp.key_file = o.worker_key_file.empty() ? nullptr : o.worker_key_file.c_str();
            pp.transport = o.worker_transport.empty() ? nullptr : o.worker_transport.c_str();
            pp.n_ctx = o.n_ctx;
            pp.n_threads = o.n_threads;
            PipelineEngine::Lane lane;
            if (strata_pipeline_create(model_->get(), &pp, &lane.pipeline) != STRATA_OK) {
                const std::string why = strata_last_error();
                free_lanes();
                throw strata::error(STRATA_ERR_STAGE_FAILED, "pipeline " + std::to_string(i) + ": " + why);
            }
            if (strata_pipeline_session(lane.pipeline, &lane.session) != STRATA_OK) {
                const std::string why = strata_last_error();
                strata_pipeline_free(lane.pipeline);
                free_lanes();
                throw strata::error(STRATA_ERR_INTERNAL, "pipeline " + std::to_string(i) + " session: " + why);
            }
            lanes.push_back(lane);
            if (i == 0) {
                plan_json_ = pipeline_plan_json(lane.pipeline);
                if (layers.empty()) layers = executed_layers(plan_json_);
            }
        }
        strata_session_n_ctx(lanes[0].session, &n_ctx_);
        engine_ = std::make_unique<PipelineEngine>(std::move(lanes), queue, metrics, *this);
    }
    engine_->start();
    loaded_ = true;
}

std::string ModelHost::settings_json() const {
    nlohmann::json s = {{"n_ctx", n_ctx_},       {"n_vocab", n_vocab_},
                        {"parallel", n_slots_},  {"backend", pipeline_ ? "pipeline" : "local"},
                        {"n_stages", n_stages_}, {"strata_version", strata_version()}};
    if (!plan_json_.empty()) s["pipeline_plan"] = nlohmann::json::parse(plan_json_);  // every lane's
    return s.dump();
}

std::string ModelHost::render_chat(const std::string& messages_json) {
    try {
        return model_->apply_chat_template(messages_json, true, template_is_set_ ? chat_template_.c_str() : nullptr);
    } catch (const strata::error& e) {
        if (e.status() == STRATA_ERR_NOT_FOUND && !template_is_set_)
            throw ApiError(400,
                           "this model has no chat template (tokenizer.chat_template): start the server with "
                           "--chat-format NAME|FILE, or use /v1/completions",
                           "invalid_request_error", "messages", "no_chat_template");
        throw ApiError(400, std::string("the chat template refused the messages: ") + e.what(), "invalid_request_error",
                       "messages", "chat_template_error");
    }
}

std::vector<int32_t> ModelHost::tokenize(const std::string& text, bool add_special, bool parse_special) {
    try {
        std::vector<int32_t> tokens = model_->tokenize(text, add_special, parse_special);
        // A template that writes the BOS text itself, tokenized with BOS added: one BOS, as the
        // model was trained.
        if (add_special && bos_ >= 0 && tokens.size() >= 2 && tokens[0] == bos_ && tokens[1] == bos_)
            tokens.erase(tokens.begin());
        return tokens;
    } catch (const strata::error& e) {
        throw ApiError(400, std::string("cannot tokenize the text: ") + e.what(), "invalid_request_error");
    }
}

std::string ModelHost::detokenize(const std::vector<int32_t>& tokens) {
    for (int32_t t : tokens)
        if (t < 0 || t >= n_vocab_)
            throw ApiError(400, "token id " + std::to_string(t) + " is outside the vocabulary (0.." +
                                    std::to_string(n_vocab_ - 1) + ")",
                           "invalid_request_error", "tokens", "invalid_value");
    try {
        return model_->detokenize(tokens);
    } catch (const strata::error& e) {
        throw ApiError(400, std::string("cannot detokenize: ") + e.what(), "invalid_request_error", "tokens");
    }
}

std::string ModelHost::piece(int32_t token) {
    try {
        return model_->token_to_piece(token);
    } catch (const strata::error&) {
        return {};
    }
}

bool ModelHost::is_end_of_generation(int32_t token) {
    try {
        return model_->is_eog(token);
    } catch (const strata::error&) {
        return true;  // an id the vocabulary does not know cannot be continued
    }
}

}  // namespace server
