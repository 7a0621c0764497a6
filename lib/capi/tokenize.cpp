// strata_model_vocab_info, strata_tokenize, strata_detokenize, strata_token_to_piece.
#include <cstring>
#include <string>
#include <vector>

#include "capi/guard.hpp"
#include "capi/handles.hpp"

using strata::Status;
using strata::fail;
using strata::capi::require;
using strata::capi::tokenizer_of;

namespace {

// Writes `bytes` (no NUL counted) and a NUL when it fits; reports the length without the NUL.
void copy_bytes_out(const std::string& bytes, char* buffer, size_t capacity, size_t* out_length, const char* what) {
    require(out_length, "out_length");
    *out_length = bytes.size();
    if (capacity < bytes.size())
        fail(Status::buffer_too_small, std::string(what) + " needs " + std::to_string(bytes.size()) +
                                           " bytes, the buffer holds " + std::to_string(capacity));
    if (bytes.empty() && !buffer) return;
    require(buffer, "buffer");
    std::memcpy(buffer, bytes.data(), bytes.size());
    if (capacity > bytes.size()) buffer[bytes.size()] = '\0';
}

}  // namespace

extern "C" {

strata_status strata_model_vocab_info(strata_model* model, strata_vocab_info* out_info) {
    STRATA_API_BEGIN
    strata::capi::require_struct(out_info, sizeof(strata_vocab_info), "out_info");
    const auto& tok = *tokenizer_of(model);
    out_info->n_vocab = tok.n_vocab();
    out_info->bos = tok.bos();
    out_info->eos = tok.eos();
    out_info->add_bos = tok.add_bos() ? 1 : 0;
    out_info->kind = tok.type_name().data();  // "spm" / "bpe": string literals
    STRATA_API_END
}

strata_status strata_tokenize(strata_model* model, const char* text, size_t length, int add_special,
                              int parse_special, int32_t* tokens, size_t capacity, size_t* out_n_tokens) {
    STRATA_API_BEGIN
    require(out_n_tokens, "out_n_tokens");
    if (length) require(text, "text");
    const auto ids = tokenizer_of(model)->encode(std::string_view(length ? text : "", length), add_special != 0,
                                                parse_special != 0);
    *out_n_tokens = ids.size();
    if (capacity < ids.size())
        fail(Status::buffer_too_small, "the text has " + std::to_string(ids.size()) +
                                           " tokens, the buffer holds " + std::to_string(capacity));
    if (!ids.empty()) std::memcpy(require(tokens, "tokens"), ids.data(), ids.size() * sizeof(int32_t));
    STRATA_API_END
}

strata_status strata_detokenize(strata_model* model, const int32_t* tokens, size_t n_tokens, int remove_special,
                                char* text, size_t capacity, size_t* out_length) {
    STRATA_API_BEGIN
    if (n_tokens) require(tokens, "tokens");
    const std::string out = tokenizer_of(model)->decode({tokens, n_tokens}, remove_special != 0);
    copy_bytes_out(out, text, capacity, out_length, "the text");
    STRATA_API_END
}

strata_status strata_token_is_eog(strata_model* model, int32_t token, int* out_is_eog) {
    STRATA_API_BEGIN
    require(out_is_eog, "out_is_eog");
    const auto& tok = *tokenizer_of(model);
    tok.check_id(token);
    *out_is_eog = tok.is_eog(token) ? 1 : 0;
    STRATA_API_END
}

strata_status strata_token_to_piece(strata_model* model, int32_t token, char* piece, size_t capacity,
                                    size_t* out_length) {
    STRATA_API_BEGIN
    copy_bytes_out(tokenizer_of(model)->token_to_piece(token), piece, capacity, out_length, "the piece");
    STRATA_API_END
}

}  // extern "C"
