// The structs behind the opaque handles of strata.h, shared by the capi/*.cpp files.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gguf/model_file.hpp"
#include "token/tokenizer.hpp"

struct strata_model {
    // Shared with the model's sessions, so that freeing the model before a session is safe.
    std::shared_ptr<const strata::gguf::ModelFile> file;
    strata_progress_fn progress = nullptr;
    void* progress_user_data = nullptr;
    std::string digest_cache_dir;
    bool use_digest_cache = true;

    std::mutex digest_mutex;                 // shard digests are computed once, on demand
    std::vector<std::string> shard_digests;  // "" until computed

    std::once_flag tokenizer_once;           // the vocabulary is parsed on first use
    std::shared_ptr<const strata::token::Tokenizer> tokenizer;
};

namespace strata::capi {

const gguf::ModelFile& file_of(const strata_model* model);
// Builds the tokenizer on first use; throws what Tokenizer::from_gguf throws (every call again).
const std::shared_ptr<const token::Tokenizer>& tokenizer_of(strata_model* model);
// The model identity digest (64 lower-case hex characters; shard digests computed once, cached).
std::string identity_of(strata_model* model);

}  // namespace strata::capi
