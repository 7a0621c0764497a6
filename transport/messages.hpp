// Typed message payloads and their checked conversion to and from frames.
// Layouts are documented byte by byte in PROTOCOL.md.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "transport/error.hpp"
#include "transport/frame.hpp"

namespace strata::transport {

using Digest = std::array<uint8_t, 32>;
using Nonce = std::array<uint8_t, 32>;

// hello (dialer -> acceptor) and hello_ack (the answer) share one frozen layout.
struct Hello {
    uint16_t protocol_version = kProtocolVersion;
    Digest model_id{};          // identity digest of the model, opaque here
    uint32_t layer_begin = 0;   // half-open range [layer_begin, layer_end)
    uint32_t layer_end = 0;
    uint32_t kv_type = 0;       // KV cache element type, opaque code agreed by the pipeline
    uint32_t context_length = 0;
    Nonce nonce{};              // fresh random bytes: the challenge the peer must answer
    bool operator==(const Hello&) const = default;
};
struct HelloAck : Hello {};

struct AuthChallenge {
    Nonce nonce{};
    bool operator==(const AuthChallenge&) const = default;
};
struct AuthResponse {
    Digest mac{};
    bool operator==(const AuthResponse&) const = default;
};

enum class DType : uint16_t { f32 = 0, f16 = 1, bf16 = 2 };
inline constexpr size_t kMaxTensorDims = 4;

struct Tensor {
    DType dtype = DType::f32;
    std::vector<uint64_t> dims;  // 1..4 dimensions
    std::vector<uint8_t> data;   // raw little-endian elements, product(dims) * dtype size bytes
    bool operator==(const Tensor&) const = default;
};

struct TokenId {
    uint32_t id = 0;
    bool operator==(const TokenId&) const = default;
};

inline constexpr size_t kMaxErrorMessage = 4096;
// Error-frame codes: below this base a code is a transport Errc; kLibraryStatusBase + n carries
// the library's status n (strata::Status: 1 invalid_argument ... 11 stage_failed, 12 refused).
inline constexpr uint32_t kLibraryStatusBase = 0x10000;
struct ErrorMessage {
    uint32_t code = 0;
    std::string message;  // UTF-8, at most kMaxErrorMessage bytes
    bool operator==(const ErrorMessage&) const = default;
};

struct Heartbeat {
    bool operator==(const Heartbeat&) const = default;
};
struct Bye {
    bool operator==(const Bye&) const = default;
};

// --- Stage control (PROTOCOL.md, "Pipeline stages"): after the handshake the head asks a worker
// what it can hold, assigns it a layer range, then sends it work. Every request below gets
// exactly one answer, in request order (a result, `done`, or `error`); heartbeats may be
// interleaved in both directions at any time.

// head -> worker: what can you hold?
struct StageQuery {
    bool operator==(const StageQuery&) const = default;
};
inline constexpr size_t kMaxStageText = 256;
// worker -> head: the answer to stage_query.
struct StageInfo {
    uint64_t available_memory = 0;   // bytes this worker may use for a stage (budget or MemAvailable)
    uint32_t fixed_layer_begin = 0;  // the range the worker was started with (--layers) ...
    uint32_t fixed_layer_end = 0;    // ... or [0, 0) when it takes any range
    uint32_t n_layers = 0;           // layers in the worker's model
    uint32_t n_threads = 0;          // compute threads
    std::string backend;             // "cpu", ...: UTF-8, at most kMaxStageText bytes
    std::string host;                // the worker's host name: UTF-8, at most kMaxStageText bytes
    bool operator==(const StageInfo&) const = default;
};
// head -> worker: hold layers [layer_begin, layer_end) for one sequence.
struct StageConfigure {
    uint32_t layer_begin = 0;
    uint32_t layer_end = 0;       // > layer_begin
    uint32_t kv_type = 0;         // the pipeline's KV code (0 f16, 1 q8_0)
    uint32_t context_length = 0;  // > 0
    uint32_t n_batch = 0;         // > 0: largest micro-batch the head will send
    bool operator==(const StageConfigure&) const = default;
};
// The widest layer range a stage_ready describes (its recurrent-layer bitmap is at most 8 KiB).
inline constexpr uint32_t kMaxStageLayers = 1u << 16;
// worker -> head: configured; its memory plan, in bytes, and the worker's own reading of the
// layers it now holds, so that the head can check it against its own: the range and which of
// its layers are recurrent (KDA: a fixed per-sequence state instead of a KV cache).
struct StageReady {
    uint64_t weight_bytes = 0, kv_bytes = 0, scratch_bytes = 0, total_bytes = 0, budget_bytes = 0;
    uint32_t layer_begin = 0;  // the range configured, [layer_begin, layer_end): begin <= end,
    uint32_t layer_end = 0;    // end - begin <= kMaxStageLayers
    std::vector<uint32_t> recurrent_layers{};  // ascending, each in [layer_begin, layer_end)
    bool operator==(const StageReady&) const = default;
};

// What the stage answers a forward with.
enum class ForwardOutput : uint32_t {
    hidden = 0,       // a tensor [n_tokens, n_embd] (not the last stage)
    logits_last = 1,  // a tensor [1, n_vocab]: the last token's logits (last stage)
    logits_all = 2,   // a tensor [n_tokens, n_vocab] (last stage)
    sample = 3,       // a `sampled` answer: the next token drawn from the last token's logits (last stage)
    none = 4,         // `done`: the last stage keeps the last row for a later `sample`
};
inline constexpr uint32_t kMaxTopLogprobs = 64;
inline constexpr uint32_t kMaxForwardTokens = 1u << 20;
// head -> worker: run these tokens' hidden states through your layers at `position`.
struct Forward {
    uint64_t position = 0;     // the sequence position of tokens[0]: the stage's n_past (or less: truncate first)
    ForwardOutput output = ForwardOutput::hidden;
    uint32_t n_top = 0;        // with output == sample: top log-probabilities to return (<= kMaxTopLogprobs)
    std::vector<int32_t> tokens;  // the token ids (the last stage's repetition-penalty history); 1..kMaxForwardTokens
    Tensor hidden;             // 2 dims [tokens.size(), n_embd]
    bool operator==(const Forward&) const = default;
};
struct TopLogprob {
    int32_t token = 0;
    float logprob = 0;  // log-softmax of the raw logits (temperature 1, no penalty)
    bool operator==(const TopLogprob&) const = default;
};
// last stage -> head: the sampled token (and the top log-probabilities asked for).
struct Sampled {
    int32_t token = 0;
    std::vector<TopLogprob> top;  // at most kMaxTopLogprobs, descending logprob
    bool operator==(const Sampled&) const = default;
};
// head -> last stage: replace the sampler (history cleared, generator seeded). Answer: done.
struct SetSampling {
    float temperature = 0, top_p = 1, min_p = 0, repeat_penalty = 1;
    int32_t top_k = 0, repeat_last_n = 0;
    uint64_t seed = 0;
    bool operator==(const SetSampling&) const = default;
};
// head -> last stage: sample from the row kept by the last forward. Answer: sampled.
struct SampleRequest {
    uint32_t n_top = 0;
    bool operator==(const SampleRequest&) const = default;
};
// The empty answer to a request that returns nothing.
struct Done {
    bool operator==(const Done&) const = default;
};

using Message = std::variant<Hello, HelloAck, AuthChallenge, AuthResponse, Tensor, TokenId, ErrorMessage, Heartbeat,
                             Bye, StageQuery, StageInfo, StageConfigure, StageReady, Forward, Sampled, SetSampling,
                             SampleRequest, Done>;

MessageType message_type(const Message& m);

// Checks what the wire would check (tensor shape/size, error message length and UTF-8, every
// stage field), so that nothing this side sends can be refused by a correct peer.
Result<Frame> to_frame(const Message& m);

// The same payload as to_frame, as an encoded head plus a tail borrowed from the message (the
// elements of a tensor or of a forward's hidden state; empty for other messages), so that a
// sender can put both on the wire without first copying the tail. `tail` is valid while the
// message lives unchanged: temporaries are refused (a Tensor or Forward converted to a
// Message would be a copy that dies at the end of the call).
struct PayloadParts {
    MessageType type{};
    std::vector<uint8_t> head;
    std::span<const uint8_t> tail;
};
Result<PayloadParts> to_payload_parts(const Message& m);
Result<PayloadParts> to_payload_parts(const Tensor& t);
Result<PayloadParts> to_payload_parts(const Forward& f);
Result<PayloadParts> to_payload_parts(Message&&) = delete;
Result<PayloadParts> to_payload_parts(Tensor&&) = delete;
Result<PayloadParts> to_payload_parts(Forward&&) = delete;

// Checks every field: exact payload sizes, dims product x dtype size == bytes without
// overflow, UTF-8, layer ranges. `malformed_payload` otherwise.
Result<Message> from_frame(const Frame& f);

size_t dtype_size(DType t);
bool is_valid_utf8(std::string_view s);

}  // namespace strata::transport
