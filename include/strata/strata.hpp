// strata.hpp - header-only C++17 API over the C ABI in strata.h.
//
// RAII classes that own strata handles and throw strata::error (carrying the status code and
// the library's message) where the C calls return a status. Nothing here is compiled into
// libstrata: a program using this header links only against the stable C ABI.
#ifndef STRATA_HPP
#define STRATA_HPP

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata.h"

namespace strata {

class error : public std::runtime_error {
public:
    error(strata_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
    strata_status status() const noexcept { return status_; }
    const char* status_name() const noexcept { return strata_status_string(status_); }

private:
    strata_status status_;
};

namespace detail {
inline void check(strata_status status) {
    if (status != STRATA_OK) throw error(status, strata_last_error());
}
}  // namespace detail

inline std::string version() { return strata_version(); }
inline std::string tensor_type_name(int type) { return strata_tensor_type_name(type); }

struct tensor_info {
    std::string name;
    int type = 0;
    std::vector<int64_t> shape;  // innermost first, as GGUF stores it (shape[0] = row length)
    uint64_t n_elements = 0;
    uint64_t n_bytes = 0;
    uint32_t shard = 0;
    uint64_t file_offset = 0;
    std::string type_name() const { return strata_tensor_type_name(type); }
};

struct shard_info {
    std::string path;
    uint64_t size = 0;
    uint32_t gguf_version = 0;
    uint32_t alignment = 0;
    uint64_t data_offset = 0;
    uint64_t n_tensors = 0;
    uint64_t n_metadata = 0;
};

struct metadata_type {
    strata_value_type type;
    strata_value_type element_type;  // == type for scalars
    uint64_t count;                  // elements of an array, 1 for scalars
};

struct model_params {
    strata_progress_fn progress = nullptr;  // called while shards are hashed
    void* progress_user_data = nullptr;
    std::optional<std::string> digest_cache_dir;  // unset: the library's default cache directory
    bool use_digest_cache = true;
};

// What model::plan_json plans for (strata_plan_params).
struct plan_params {
    int64_t n_ctx = 4096;                   // tokens, > 0
    strata_kv_type kv_type = STRATA_KV_F16;
    std::string layers;                     // "0:20,20:40,40:61"; empty: n_stages stages
    int32_t n_stages = 1;                   // with no layers: split evenly by layer count
    int64_t n_batch = 512;
    int32_t n_threads = 0;                  // 0: every hardware thread
    strata_device device = STRATA_DEVICE_CPU;  // STRATA_DEVICE_CUDA: the GPU's plan (no GPU needed)
};

// A GGUF model (one file or the shards of a split model), memory-mapped. Movable, not copyable.
class model {
public:
    using params = model_params;

    explicit model(const std::vector<std::string>& paths, const params& p = params()) {
        std::vector<const char*> c_paths;
        c_paths.reserve(paths.size());
        for (const auto& path : paths) c_paths.push_back(path.c_str());
        strata_model_params c_params;
        strata_model_default_params(&c_params);
        c_params.progress = p.progress;
        c_params.progress_user_data = p.progress_user_data;
        c_params.digest_cache_dir = p.digest_cache_dir ? p.digest_cache_dir->c_str() : nullptr;
        c_params.use_digest_cache = p.use_digest_cache ? 1 : 0;
        detail::check(strata_model_open(c_paths.data(), c_paths.size(), &c_params, &handle_));
    }
    explicit model(const std::string& path, const params& p = params()) : model(std::vector<std::string>{path}, p) {}

    model(model&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    model& operator=(model&& other) noexcept {
        if (this != &other) {
            strata_model_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    model(const model&) = delete;
    model& operator=(const model&) = delete;
    ~model() { strata_model_free(handle_); }

    strata_model* get() const noexcept { return handle_; }

    uint32_t gguf_version() const {
        uint32_t v = 0;
        detail::check(strata_model_gguf_version(handle_, &v));
        return v;
    }

    // --- metadata ---
    size_t metadata_count() const {
        size_t n = 0;
        detail::check(strata_model_metadata_count(handle_, &n));
        return n;
    }
    std::string metadata_key(size_t index) const {
        const char* key = nullptr;
        detail::check(strata_model_metadata_key(handle_, index, &key));
        return key;
    }
    std::vector<std::string> metadata_keys() const {
        std::vector<std::string> keys;
        for (size_t i = 0, n = metadata_count(); i < n; ++i) keys.push_back(metadata_key(i));
        return keys;
    }
    bool has_key(const std::string& key) const {
        strata_status s = strata_model_metadata_type(handle_, key.c_str(), nullptr, nullptr, nullptr);
        if (s == STRATA_ERR_NOT_FOUND) return false;
        detail::check(s);
        return true;
    }
    metadata_type type_of(const std::string& key) const {
        metadata_type t{};
        detail::check(strata_model_metadata_type(handle_, key.c_str(), &t.type, &t.element_type, &t.count));
        return t;
    }
    int64_t get_int(const std::string& key) const {
        int64_t v = 0;
        detail::check(strata_model_metadata_int(handle_, key.c_str(), &v));
        return v;
    }
    uint64_t get_uint(const std::string& key) const {
        uint64_t v = 0;
        detail::check(strata_model_metadata_uint(handle_, key.c_str(), &v));
        return v;
    }
    double get_float(const std::string& key) const {
        double v = 0;
        detail::check(strata_model_metadata_float(handle_, key.c_str(), &v));
        return v;
    }
    bool get_bool(const std::string& key) const {
        int v = 0;
        detail::check(strata_model_metadata_bool(handle_, key.c_str(), &v));
        return v != 0;
    }
    std::string_view get_string(const std::string& key) const {
        const char* data = nullptr;
        size_t length = 0;
        detail::check(strata_model_metadata_string(handle_, key.c_str(), &data, &length));
        return {data, length};
    }
    std::string_view get_array_string(const std::string& key, uint64_t index) const {
        const char* data = nullptr;
        size_t length = 0;
        detail::check(strata_model_metadata_array_string(handle_, key.c_str(), index, &data, &length));
        return {data, length};
    }
    int64_t get_array_int(const std::string& key, uint64_t index) const {
        int64_t v = 0;
        detail::check(strata_model_metadata_array_int(handle_, key.c_str(), index, &v));
        return v;
    }
    double get_array_float(const std::string& key, uint64_t index) const {
        double v = 0;
        detail::check(strata_model_metadata_array_float(handle_, key.c_str(), index, &v));
        return v;
    }
    // Any value as JSON (nested arrays included).
    std::string metadata_json(const std::string& key) const {
        size_t needed = 0;
        strata_status s = strata_model_metadata_json(handle_, key.c_str(), nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string text(needed, '\0');
        detail::check(strata_model_metadata_json(handle_, key.c_str(), text.data(), text.size(), &needed));
        text.resize(needed - 1);
        return text;
    }

    // --- tensors ---
    size_t tensor_count() const {
        size_t n = 0;
        detail::check(strata_model_tensor_count(handle_, &n));
        return n;
    }
    tensor_info tensor(size_t index) const {
        strata_tensor_info c{};
        c.struct_size = sizeof c;
        detail::check(strata_model_tensor_info(handle_, index, &c));
        tensor_info t;
        t.name = c.name;
        t.type = c.type;
        t.shape.assign(c.ne, c.ne + c.n_dims);
        t.n_elements = c.n_elements;
        t.n_bytes = c.n_bytes;
        t.shard = c.shard;
        t.file_offset = c.file_offset;
        return t;
    }
    std::vector<tensor_info> tensors() const {
        std::vector<tensor_info> all;
        for (size_t i = 0, n = tensor_count(); i < n; ++i) all.push_back(tensor(i));
        return all;
    }
    size_t find_tensor(const std::string& name) const {
        size_t index = 0;
        detail::check(strata_model_find_tensor(handle_, name.c_str(), &index));
        return index;
    }
    std::pair<const void*, uint64_t> tensor_data(size_t index) const {
        const void* data = nullptr;
        uint64_t n = 0;
        detail::check(strata_model_tensor_data(handle_, index, &data, &n));
        return {data, n};
    }
    std::vector<float> read_f32(size_t index) const {
        uint64_t needed = 0;
        strata_status s = strata_model_tensor_read_f32(handle_, index, nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::vector<float> values(static_cast<size_t>(needed));
        detail::check(strata_model_tensor_read_f32(handle_, index, values.data(), needed, &needed));
        return values;
    }

    // --- shards and identity ---
    size_t shard_count() const {
        size_t n = 0;
        detail::check(strata_model_shard_count(handle_, &n));
        return n;
    }
    shard_info shard(size_t index) const {
        strata_shard_info c{};
        c.struct_size = sizeof c;
        detail::check(strata_model_shard_info(handle_, index, &c));
        return {c.path, c.size, c.gguf_version, c.alignment, c.data_offset, c.n_tensors, c.n_metadata};
    }
    std::string shard_sha256(size_t index) {
        char hex[65];
        detail::check(strata_model_shard_sha256(handle_, index, hex));
        return hex;
    }
    std::string identity() {
        char hex[65];
        detail::check(strata_model_identity(handle_, hex));
        return hex;
    }

    // --- memory plan (nothing allocated): strata_model_plan_json ---
    std::string plan_json(const plan_params& p = plan_params()) const {
        strata_plan_params c;
        strata_plan_default_params(&c);
        c.n_ctx = p.n_ctx;
        c.kv_type = p.kv_type;
        c.layers = p.layers.empty() ? nullptr : p.layers.c_str();
        c.n_stages = p.n_stages;
        c.n_batch = p.n_batch;
        c.n_threads = p.n_threads;
        c.device = p.device;
        size_t needed = 0;
        strata_status s = strata_model_plan_json(handle_, &c, nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string text(needed, '\0');
        detail::check(strata_model_plan_json(handle_, &c, text.data(), text.size(), &needed));
        text.resize(needed - 1);
        return text;
    }

    // --- chat templates ---
    // The conversation (a JSON array of messages) rendered with the model's chat template, or
    // with template_source (a built-in format name or Jinja source); extra_json: a JSON object
    // of more template variables.
    std::string apply_chat_template(const std::string& messages_json, bool add_generation_prompt = true,
                                    const char* template_source = nullptr, const char* extra_json = nullptr) {
        size_t n = 0;
        strata_status s = strata_chat_apply_template(handle_, template_source, messages_json.c_str(),
                                                     add_generation_prompt, extra_json, nullptr, 0, &n);
        if (s == STRATA_OK) return std::string();
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string text(n + 1, '\0');
        detail::check(strata_chat_apply_template(handle_, template_source, messages_json.c_str(), add_generation_prompt,
                                                 extra_json, text.data(), text.size(), &n));
        text.resize(n);
        return text;
    }

    // --- tokenizer ---
    strata_vocab_info vocab() {
        strata_vocab_info info{};
        info.struct_size = sizeof info;
        detail::check(strata_model_vocab_info(handle_, &info));
        return info;
    }
    std::vector<int32_t> tokenize(std::string_view text, bool add_special = true, bool parse_special = false) {
        // Rarely more tokens than bytes: one call with room for that, a second only when short.
        std::vector<int32_t> tokens(text.size() + 16);
        size_t n = 0;
        strata_status s = strata_tokenize(handle_, text.data(), text.size(), add_special, parse_special, tokens.data(),
                                          tokens.size(), &n);
        if (s == STRATA_ERR_BUFFER_TOO_SMALL) {
            tokens.resize(n);
            s = strata_tokenize(handle_, text.data(), text.size(), add_special, parse_special, tokens.data(),
                                tokens.size(), &n);
        }
        detail::check(s);
        tokens.resize(n);
        return tokens;
    }
    std::string detokenize(const std::vector<int32_t>& tokens, bool remove_special = false) {
        std::string text(tokens.size() * 8 + 16, '\0');  // most tokens are a few bytes: usually one call
        size_t n = 0;
        strata_status s = strata_detokenize(handle_, tokens.data(), tokens.size(), remove_special, text.data(),
                                            text.size(), &n);
        if (s == STRATA_ERR_BUFFER_TOO_SMALL) {
            text.resize(n);
            s = strata_detokenize(handle_, tokens.data(), tokens.size(), remove_special, text.data(), text.size(), &n);
        }
        detail::check(s);
        text.resize(n);
        return text;
    }
    bool is_eog(int32_t token) {
        int eog = 0;
        detail::check(strata_token_is_eog(handle_, token, &eog));
        return eog != 0;
    }
    std::string token_to_piece(int32_t token) {
        char buf[64];
        size_t n = 0;
        strata_status s = strata_token_to_piece(handle_, token, buf, sizeof buf, &n);
        if (s == STRATA_OK) return std::string(buf, n);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string piece(n, '\0');
        detail::check(strata_token_to_piece(handle_, token, piece.data(), piece.size(), &n));
        return piece;
    }

private:
    strata_model* handle_ = nullptr;
};

struct session_params {
    int64_t n_ctx = 0;  // 0: the model's context_length, at most 4096
    int32_t n_threads = 0;
    strata_kv_type kv_type = STRATA_KV_F16;
    uint64_t memory_budget = 0;  // 0: available memory (the device's free memory on CUDA)
    strata_device device = STRATA_DEVICE_CPU;
    int32_t n_seq = 1;  // sequence slots (continuous batching); above 1: CPU only
};

// One entry of session::decode_batch: the next tokens of sequence `seq`.
struct seq_tokens {
    int32_t seq = 0;
    std::vector<int32_t> tokens;
};

struct sampling_params {
    float temperature = 0.8f;  // 0: greedy
    int32_t top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float repeat_penalty = 1.0f;
    int32_t repeat_last_n = 64;
    uint64_t seed = 0;
};

struct generate_options {
    int32_t max_tokens = 128;
    bool add_special = true;
    bool parse_special = false;
    bool stop_at_end_of_generation = true;
    std::vector<std::string> stop_strings;
};

// One sequence on a model: KV cache, sampler, generation. It keeps what it needs of the model
// alive, so it may outlive the strata::model it came from.
class session {
public:
    explicit session(model& m, const session_params& p = session_params()) {
        strata_session_params c;
        strata_session_default_params(&c);
        c.n_ctx = p.n_ctx;
        c.n_threads = p.n_threads;
        c.kv_type = p.kv_type;
        c.memory_budget = p.memory_budget;
        c.device = p.device;
        c.n_seq = p.n_seq;
        detail::check(strata_session_create(m.get(), &c, &handle_));
    }
    // Takes ownership of a strata_session* (e.g. from strata_pipeline_session).
    static session adopt(strata_session* handle) noexcept { return session(handle); }
    session(session&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    session& operator=(session&& other) noexcept {
        if (this != &other) {
            strata_session_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    session(const session&) = delete;
    session& operator=(const session&) = delete;
    ~session() { strata_session_free(handle_); }

    strata_session* get() const noexcept { return handle_; }

    std::string plan() const {
        size_t needed = 0;
        strata_status s = strata_session_plan(handle_, nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string text(needed, '\0');
        detail::check(strata_session_plan(handle_, text.data(), text.size(), &needed));
        text.resize(needed - 1);
        return text;
    }
    int64_t n_ctx() const {
        int64_t v = 0;
        detail::check(strata_session_n_ctx(handle_, &v));
        return v;
    }
    int64_t n_past() const {
        int64_t v = 0;
        detail::check(strata_session_n_past(handle_, &v));
        return v;
    }
    int32_t n_vocab() const {
        int32_t v = 0;
        detail::check(strata_session_n_vocab(handle_, &v));
        return v;
    }
    void decode(const std::vector<int32_t>& tokens, bool all_logits = false) {
        detail::check(strata_session_decode(handle_, tokens.data(), tokens.size(), all_logits));
    }
    // rows * n_vocab floats of the last decode (a copy).
    std::vector<float> logits() const {
        const float* data = nullptr;
        size_t rows = 0;
        detail::check(strata_session_logits(handle_, &data, &rows));
        return std::vector<float>(data, data + rows * size_t(n_vocab()));
    }
    void reset() { detail::check(strata_session_reset(handle_)); }
    void set_sampling(const sampling_params& p) {
        const strata_sampling_params c = c_sampling(p);
        detail::check(strata_session_set_sampling(handle_, &c));
    }
    std::string sampling_json() const {
        size_t needed = 0;
        strata_status s = strata_session_sampling_json(handle_, nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string text(needed, '\0');
        detail::check(strata_session_sampling_json(handle_, text.data(), text.size(), &needed));
        text.resize(needed - 1);
        return text;
    }
    int32_t sample() {
        int32_t token = 0;
        detail::check(strata_session_sample(handle_, &token));
        return token;
    }
    // decode(tokens) then sample(); on a pipeline one round trip that moves no logits.
    int32_t decode_sample(const std::vector<int32_t>& tokens) {
        int32_t token = 0;
        detail::check(strata_session_decode_sample(handle_, tokens.data(), tokens.size(), &token));
        return token;
    }
    // sample(), and the n most likely tokens under the raw logits: (token, log-probability).
    int32_t sample_top(size_t n, std::vector<std::pair<int32_t, float>>& top) {
        return top_of(n, top, [&](int32_t* token, int32_t* tokens, float* logprobs) {
            return strata_session_sample_top(handle_, token, n, tokens, logprobs);
        });
    }

    // Several sequences (session_params::n_seq); the calls above address sequence 0.
    int32_t n_seq() const {
        int32_t v = 0;
        detail::check(strata_session_n_seq(handle_, &v));
        return v;
    }
    // The next tokens of several sequences in one forward step (each sequence at most once).
    void decode_batch(const std::vector<seq_tokens>& entries) {
        std::vector<strata_seq_tokens> c;
        c.reserve(entries.size());
        for (const auto& e : entries) c.push_back({e.seq, e.tokens.data(), e.tokens.size()});
        detail::check(strata_session_decode_batch(handle_, c.data(), c.size()));
    }
    // The last-token logits of the sequence's last decode_batch (a copy of n_vocab floats).
    std::vector<float> seq_logits(int32_t seq) const {
        const float* data = nullptr;
        detail::check(strata_session_seq_logits(handle_, seq, &data));
        return std::vector<float>(data, data + size_t(n_vocab()));
    }
    int64_t seq_n_past(int32_t seq) const {
        int64_t v = 0;
        detail::check(strata_session_seq_n_past(handle_, seq, &v));
        return v;
    }
    void seq_reset(int32_t seq) { detail::check(strata_session_seq_reset(handle_, seq)); }
    void seq_truncate(int32_t seq, int64_t n_past) { detail::check(strata_session_seq_truncate(handle_, seq, n_past)); }
    void seq_set_sampling(int32_t seq, const sampling_params& p) {
        const strata_sampling_params c = c_sampling(p);
        detail::check(strata_session_seq_set_sampling(handle_, seq, &c));
    }
    // As sample_top for one sequence (n 0: the token alone).
    int32_t seq_sample_top(int32_t seq, size_t n, std::vector<std::pair<int32_t, float>>& top) {
        return top_of(n, top, [&](int32_t* token, int32_t* tokens, float* logprobs) {
            return strata_session_seq_sample_top(handle_, seq, token, n, tokens, logprobs);
        });
    }

    // Streams every generated token's bytes to on_piece (return false to stop). An exception
    // thrown by on_piece stops generation and is rethrown here.
    template <typename OnPiece>
    strata_generate_result generate(std::string_view prompt, const generate_options& o, OnPiece&& on_piece) {
        struct state {
            OnPiece* fn;
            std::exception_ptr error;
        } st{&on_piece, nullptr};
        std::vector<const char*> stops;
        for (const auto& s : o.stop_strings) stops.push_back(s.c_str());
        strata_generate_params c;
        strata_generate_default_params(&c);
        c.max_tokens = o.max_tokens;
        c.add_special = o.add_special;
        c.parse_special = o.parse_special;
        c.stop_at_end_of_generation = o.stop_at_end_of_generation;
        c.stop_strings = stops.data();
        c.n_stop_strings = stops.size();
        c.user_data = &st;
        c.on_token = [](int32_t token, const char* piece, size_t length, void* user) -> int {
            auto* s = static_cast<state*>(user);
            try {
                return (*s->fn)(token, std::string_view(piece, length)) ? 0 : 1;
            } catch (...) {
                s->error = std::current_exception();
                return 1;
            }
        };
        strata_generate_result r{};
        r.struct_size = sizeof r;
        strata_status status = strata_session_generate(handle_, prompt.data(), prompt.size(), &c, &r);
        if (st.error) std::rethrow_exception(st.error);
        detail::check(status);
        return r;
    }

private:
    explicit session(strata_session* handle) noexcept : handle_(handle) {}
    // A strata_*_sample_top call (given the out-token and the n-entry top buffers) as the token
    // drawn, and the n (token, log-probability) pairs into top.
    template <typename Call>
    static int32_t top_of(size_t n, std::vector<std::pair<int32_t, float>>& top, Call&& call) {
        std::vector<int32_t> tokens(n);
        std::vector<float> logprobs(n);
        int32_t token = 0;
        detail::check(call(&token, tokens.data(), logprobs.data()));
        top.clear();
        for (size_t i = 0; i < n; ++i) top.emplace_back(tokens[i], logprobs[i]);
        return token;
    }
    static strata_sampling_params c_sampling(const sampling_params& p) {
        strata_sampling_params c;
        strata_sampling_default_params(&c);
        c.temperature = p.temperature;
        c.top_k = p.top_k;
        c.top_p = p.top_p;
        c.min_p = p.min_p;
        c.repeat_penalty = p.repeat_penalty;
        c.repeat_last_n = p.repeat_last_n;
        c.seed = p.seed;
        return c;
    }
    strata_session* handle_ = nullptr;
};

struct pipeline_params {
    std::vector<std::string> workers;  // "HOST:PORT", in stage order
    std::string layers;                // "0:8,8:16,16:24", head first; empty: planned from memory
    std::string key_file;              // empty: `key`
    std::string key;                   // the pre-shared key's bytes (empty: loopback only)
    int64_t n_ctx = 0;
    int32_t n_threads = 0;
    int32_t kv_type = STRATA_KV_F16;
    uint64_t memory_budget = 0;
    int32_t n_batch = 32;
    int32_t heartbeat_ms = 1000;
    int32_t peer_timeout_ms = 5000;
    int32_t connect_timeout_ms = 5000;
    int32_t socket_buffer_bytes = 0;
    int32_t wire_dtype = STRATA_WIRE_F16;  // STRATA_WIRE_F32 keeps logits bit-identical to one process
    std::string tls_cert_file;             // TLS: the head's certificate and key (PEM), for workers
    std::string tls_key_file;              // that require one
    std::string tls_ca_file;               // TLS: the CA the workers' certificates must chain to
    std::string transport;                 // "tcp", "tls", "rdma"; empty: tcp (tls with TLS files)
    std::string rdma_transports;           // rdma: UCX_TLS, UCX_NET_DEVICES ("": UCX's choice)
    std::string rdma_devices;
    int32_t rdma_mtu = 0;                  // rdma: path MTU, inline bytes, queue depths (0: UCX's)
    int32_t rdma_max_inline = 0;
    int32_t rdma_rx_queue_len = 0;
    int32_t rdma_tx_queue_len = 0;
};

// The head of a pipeline: this process holds the embeddings and the first layers, the workers
// the rest. session() gives its sequence as a strata::session.
class pipeline {
public:
    pipeline(model& m, const pipeline_params& p) {
        strata_pipeline_params c;
        strata_pipeline_default_params(&c);
        std::vector<const char*> workers;
        for (const auto& w : p.workers) workers.push_back(w.c_str());
        c.workers = workers.data();
        c.n_workers = workers.size();
        c.layers = p.layers.empty() ? nullptr : p.layers.c_str();
        c.key_file = p.key_file.empty() ? nullptr : p.key_file.c_str();
        c.key = p.key.empty() ? nullptr : reinterpret_cast<const uint8_t*>(p.key.data());
        c.key_length = p.key.size();
        c.n_ctx = p.n_ctx;
        c.n_threads = p.n_threads;
        c.kv_type = p.kv_type;
        c.memory_budget = p.memory_budget;
        c.n_batch = p.n_batch;
        c.heartbeat_ms = p.heartbeat_ms;
        c.peer_timeout_ms = p.peer_timeout_ms;
        c.connect_timeout_ms = p.connect_timeout_ms;
        c.socket_buffer_bytes = p.socket_buffer_bytes;
        c.wire_dtype = p.wire_dtype;
        c.tls_cert_file = p.tls_cert_file.empty() ? nullptr : p.tls_cert_file.c_str();
        c.tls_key_file = p.tls_key_file.empty() ? nullptr : p.tls_key_file.c_str();
        c.tls_ca_file = p.tls_ca_file.empty() ? nullptr : p.tls_ca_file.c_str();
        c.transport = p.transport.empty() ? nullptr : p.transport.c_str();
        c.rdma_transports = p.rdma_transports.empty() ? nullptr : p.rdma_transports.c_str();
        c.rdma_devices = p.rdma_devices.empty() ? nullptr : p.rdma_devices.c_str();
        c.rdma_mtu = p.rdma_mtu;
        c.rdma_max_inline = p.rdma_max_inline;
        c.rdma_rx_queue_len = p.rdma_rx_queue_len;
        c.rdma_tx_queue_len = p.rdma_tx_queue_len;
        detail::check(strata_pipeline_create(m.get(), &c, &handle_));
    }
    pipeline(pipeline&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    pipeline& operator=(pipeline&& other) noexcept {
        if (this != &other) {
            strata_pipeline_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    pipeline(const pipeline&) = delete;
    pipeline& operator=(const pipeline&) = delete;
    ~pipeline() { strata_pipeline_free(handle_); }

    strata_pipeline* get() const noexcept { return handle_; }

    // The pipeline's one sequence (free the previous session before asking again).
    strata::session session() {
        strata_session* s = nullptr;
        detail::check(strata_pipeline_session(handle_, &s));
        return strata::session::adopt(s);
    }
    std::string plan_json() const { return text(strata_pipeline_plan_json); }
    std::string stats_json() const { return text(strata_pipeline_stats_json); }
    void reconnect() { detail::check(strata_pipeline_reconnect(handle_)); }

private:
    template <typename Fn>
    std::string text(Fn fn) const {
        size_t needed = 0;
        strata_status s = fn(handle_, nullptr, 0, &needed);
        if (s != STRATA_ERR_BUFFER_TOO_SMALL) detail::check(s);
        std::string out(needed, '\0');
        detail::check(fn(handle_, out.data(), out.size(), &needed));
        out.resize(needed - 1);
        return out;
    }
    strata_pipeline* handle_ = nullptr;
};

// Builds a GGUF file (or split shards). Movable, not copyable.
class writer {
public:
    writer() { detail::check(strata_writer_create(&handle_)); }
    writer(writer&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    writer& operator=(writer&& other) noexcept {
        if (this != &other) {
            strata_writer_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;
    ~writer() { strata_writer_free(handle_); }

    writer& set_int(const std::string& key, strata_value_type type, int64_t value) {
        detail::check(strata_writer_set_int(handle_, key.c_str(), type, value));
        return *this;
    }
    writer& set_uint(const std::string& key, strata_value_type type, uint64_t value) {
        detail::check(strata_writer_set_uint(handle_, key.c_str(), type, value));
        return *this;
    }
    writer& set_float(const std::string& key, strata_value_type type, double value) {
        detail::check(strata_writer_set_float(handle_, key.c_str(), type, value));
        return *this;
    }
    writer& set_bool(const std::string& key, bool value) {
        detail::check(strata_writer_set_bool(handle_, key.c_str(), value ? 1 : 0));
        return *this;
    }
    writer& set_string(const std::string& key, std::string_view value) {
        detail::check(strata_writer_set_string(handle_, key.c_str(), value.data(), value.size()));
        return *this;
    }
    writer& set_array(const std::string& key, strata_value_type element_type, const void* data, uint64_t count) {
        detail::check(strata_writer_set_array(handle_, key.c_str(), element_type, data, count));
        return *this;
    }
    writer& set_string_array(const std::string& key, const std::vector<std::string>& values) {
        std::vector<const char*> data;
        std::vector<size_t> lengths;
        for (const auto& v : values) {
            data.push_back(v.data());
            lengths.push_back(v.size());
        }
        detail::check(strata_writer_set_string_array(handle_, key.c_str(), data.data(), lengths.data(), data.size()));
        return *this;
    }
    // shape innermost first (shape[0] = row length); data row-major, shape product floats.
    writer& add_tensor(const std::string& name, int type, const std::vector<int64_t>& shape, const float* data,
                       const float* imatrix = nullptr) {
        detail::check(strata_writer_add_tensor_f32(handle_, name.c_str(), type, uint32_t(shape.size()), shape.data(),
                                                   data, imatrix));
        return *this;
    }
    writer& add_tensor_raw(const std::string& name, int type, const std::vector<int64_t>& shape, const void* data,
                           uint64_t n_bytes) {
        detail::check(strata_writer_add_tensor_raw(handle_, name.c_str(), type, uint32_t(shape.size()), shape.data(),
                                                   data, n_bytes));
        return *this;
    }
    // Returns the number of files written (n_shards).
    uint32_t write(const std::string& path, uint32_t n_shards = 1) {
        strata_write_params p;
        strata_write_default_params(&p);
        p.n_shards = n_shards;
        uint32_t written = 0;
        detail::check(strata_writer_write(handle_, path.c_str(), &p, &written));
        return written;
    }

private:
    strata_writer* handle_ = nullptr;
};

// --- Reports: strata_report_* and strata_memory_sampler_* (JSON text in, JSON text out) ---
namespace reports {

namespace detail {
// Runs a text-producing call twice: once to learn the size, once into a buffer of that size.
template <typename Call>
std::string text(Call&& call) {
    size_t needed = 0;
    strata_status s = call(nullptr, 0, &needed);
    if (s != STRATA_ERR_BUFFER_TOO_SMALL) strata::detail::check(s);
    std::string out(needed, '\0');
    strata::detail::check(call(out.data(), out.size(), &needed));
    out.resize(needed - 1);
    return out;
}
}  // namespace detail

inline std::string schema_version() { return strata_report_schema_version(); }
inline std::string artifact_json(model& m) {
    return detail::text([&](char* b, size_t c, size_t* n) { return strata_report_artifact_json(m.get(), b, c, n); });
}
inline std::string runtime_json() { return detail::text(strata_report_runtime_json); }
// The validated report text; throws strata::error (STRATA_ERR_FORMAT listing the problems).
inline std::string assemble(std::string_view sections_json) {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_assemble(sections_json.data(), sections_json.size(), b, c, n);
    });
}
// A JSON array of problems, "[]" when the report is valid.
inline std::string validate(std::string_view report_json) {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_validate(report_json.data(), report_json.size(), b, c, n);
    });
}
// images_json: "" or a JSON array of {"caption", "path"} (as plot() returns).
inline std::string markdown(std::string_view report_json, const std::string& images_json = "") {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_markdown(report_json.data(), report_json.size(),
                                      images_json.empty() ? nullptr : images_json.c_str(), b, c, n);
    });
}
inline std::string eval_score(std::string_view evaluation_json) {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_eval_score(evaluation_json.data(), evaluation_json.size(), b, c, n);
    });
}
inline std::string eval_compare(std::string_view report_a, std::string_view report_b, size_t evaluation_a = 0,
                                size_t evaluation_b = 0) {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_eval_compare(report_a.data(), report_a.size(), report_b.data(), report_b.size(),
                                          evaluation_a, evaluation_b, b, c, n);
    });
}
inline std::string sandbox_run(std::string_view request_json) {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_sandbox_run(request_json.data(), request_json.size(), b, c, n);
    });
}
// Writes the PNGs into out_dir; returns the JSON array of {"caption", "path"}.
inline std::string plot(std::string_view report_json, const std::string& out_dir, const std::string& prefix = "") {
    return detail::text([&](char* b, size_t c, size_t* n) {
        return strata_report_plot(report_json.data(), report_json.size(), out_dir.c_str(), prefix.c_str(), b, c, n);
    });
}

// The memory sampler thread; stops (if running) when destroyed. Movable, not copyable.
class memory_sampler {
public:
    explicit memory_sampler(int32_t cadence_ms) { strata::detail::check(strata_memory_sampler_create(cadence_ms, &handle_)); }
    memory_sampler(memory_sampler&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
    memory_sampler& operator=(memory_sampler&& other) noexcept {
        if (this != &other) {
            strata_memory_sampler_free(handle_);
            handle_ = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    memory_sampler(const memory_sampler&) = delete;
    memory_sampler& operator=(const memory_sampler&) = delete;
    ~memory_sampler() { strata_memory_sampler_free(handle_); }

    void start() { strata::detail::check(strata_memory_sampler_start(handle_)); }
    void stop() { strata::detail::check(strata_memory_sampler_stop(handle_)); }
    void set_context(int64_t tokens) { strata::detail::check(strata_memory_sampler_set_context(handle_, tokens)); }
    // The memory section element for `node`.
    std::string json(const std::string& node) const {
        return detail::text([&](char* b, size_t c, size_t* n) {
            return strata_memory_sampler_json(handle_, node.c_str(), b, c, n);
        });
    }

private:
    strata_memory_sampler* handle_ = nullptr;
};

}  // namespace reports

}  // namespace strata

#endif  // STRATA_HPP
