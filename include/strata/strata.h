/*
 * strata.h - the C ABI of strata, an inference library for IQ1_S GGUF models.
 *
 * This header is the only boundary host applications see. It is C99 and stable:
 *  - Objects are opaque handles created and destroyed by the library; every *_free(NULL)
 *    is a no-op.
 *  - Every fallible call returns a strata_status (0 = STRATA_OK). On failure,
 *    strata_last_error() returns a message for the calling thread that names what is wrong.
 *    No exception, abort or exit() ever leaves the library.
 *  - Parameter structs are passed by pointer, begin with `size_t struct_size`, and are
 *    filled by a strata_*_default_params() function; fields are only ever appended, so a
 *    program built against an older header keeps working.
 *  - Buffer-filling calls report the size they need when the buffer is too small
 *    (STRATA_ERR_BUFFER_TOO_SMALL plus the needed size).
 *  - Strings returned as `const char*` are UTF-8, owned by the object they came from and
 *    valid until it is freed. Metadata strings are returned with an explicit length: GGUF
 *    strings are length-prefixed and may contain NUL bytes.
 *
 * Thread safety: a strata_model may be read from several threads at once; a strata_writer
 * must be used by one thread at a time.
 */
#ifndef STRATA_H
#define STRATA_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#if defined(STRATA_BUILDING_LIBRARY)
#define STRATA_API __declspec(dllexport)
#else
#define STRATA_API __declspec(dllimport)
#endif
#else
#define STRATA_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------------------
 * Versions
 * ------------------------------------------------------------------------------------- */

#define STRATA_VERSION_MAJOR 0
#define STRATA_VERSION_MINOR 1
#define STRATA_VERSION_PATCH 0
#define STRATA_VERSION_NUMBER (STRATA_VERSION_MAJOR * 1000000 + STRATA_VERSION_MINOR * 1000 + STRATA_VERSION_PATCH)
/* Bumped whenever a change breaks binary compatibility (never for appended fields/functions). */
#define STRATA_ABI_VERSION 1

/* "0.1.0" */
STRATA_API const char* strata_version(void);
/* STRATA_VERSION_NUMBER of the library actually loaded. */
STRATA_API int strata_version_number(void);
/* STRATA_ABI_VERSION of the library actually loaded; compare with the header's. */
STRATA_API int strata_abi_version(void);

/* ---------------------------------------------------------------------------------------
 * Status codes and errors
 * ------------------------------------------------------------------------------------- */

typedef int strata_status;
enum {
    STRATA_OK = 0,
    STRATA_ERR_INVALID_ARGUMENT = 1, /* null pointer, bad size, bad index, struct_size too small */
    STRATA_ERR_IO = 2,               /* the operating system refused: open, mmap, read, write */
    STRATA_ERR_FORMAT = 3,           /* a file is malformed */
    STRATA_ERR_UNSUPPORTED = 4,      /* well-formed but not supported: version, tensor type */
    STRATA_ERR_NOT_FOUND = 5,        /* no such key, tensor or file */
    STRATA_ERR_BUFFER_TOO_SMALL = 6, /* the needed size was written to the size out-parameter */
    STRATA_ERR_OUT_OF_MEMORY = 7,
    STRATA_ERR_INTERNAL = 8,         /* a bug in strata: please report it */
    STRATA_ERR_TYPE_MISMATCH = 9,    /* a metadata value exists but has another type */
    STRATA_ERR_CONTEXT_OVERFLOW = 10, /* the tokens do not fit the session's context; nothing was run */
    STRATA_ERR_STAGE_FAILED = 11,    /* a pipeline stage died, went silent or broke the protocol; the
                                        message names the stage. Reconnect, then reset the session. */
    STRATA_ERR_REFUSED = 12          /* a peer refused: wrong key, model, protocol version or layer range */
};

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * strata call on this thread. */
STRATA_API const char* strata_last_error(void);
/* A fixed description of a status code ("invalid argument", ...). Never NULL. */
STRATA_API const char* strata_status_string(strata_status status);

/* ---------------------------------------------------------------------------------------
 * Types of GGUF metadata values and of tensors
 * ------------------------------------------------------------------------------------- */

/* GGUF metadata value types (the numbers are the file format's). */
typedef enum strata_value_type {
    STRATA_VALUE_U8 = 0,
    STRATA_VALUE_I8 = 1,
    STRATA_VALUE_U16 = 2,
    STRATA_VALUE_I16 = 3,
    STRATA_VALUE_U32 = 4,
    STRATA_VALUE_I32 = 5,
    STRATA_VALUE_F32 = 6,
    STRATA_VALUE_BOOL = 7,
    STRATA_VALUE_STRING = 8,
    STRATA_VALUE_ARRAY = 9,
    STRATA_VALUE_U64 = 10,
    STRATA_VALUE_I64 = 11,
    STRATA_VALUE_F64 = 12
} strata_value_type;

/* ggml tensor type ids. strata decodes (and runs products of) every type listed; it also encodes
 * (writes from float32) f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q8_K, q4_K, q5_K, q6_K,
 * iq4_xs, iq1_s and iq1_m (strata_tensor_type_supported() says which). q8_1 and q8_K are the
 * activation formats of products. Other ggml ids may appear in a file's tensor table;
 * strata_tensor_type_name() names them, but reading them as float32 fails with
 * STRATA_ERR_UNSUPPORTED naming the tensor and the type. */
typedef enum strata_tensor_type {
    STRATA_TYPE_F32 = 0,
    STRATA_TYPE_F16 = 1,
    STRATA_TYPE_Q4_0 = 2,
    STRATA_TYPE_Q4_1 = 3,
    STRATA_TYPE_Q5_0 = 6,
    STRATA_TYPE_Q5_1 = 7,
    STRATA_TYPE_Q8_0 = 8,
    STRATA_TYPE_Q8_1 = 9,
    STRATA_TYPE_Q2_K = 10,
    STRATA_TYPE_Q3_K = 11,
    STRATA_TYPE_Q4_K = 12,
    STRATA_TYPE_Q5_K = 13,
    STRATA_TYPE_Q6_K = 14,
    STRATA_TYPE_Q8_K = 15,
    STRATA_TYPE_IQ2_XXS = 16,
    STRATA_TYPE_IQ2_XS = 17,
    STRATA_TYPE_IQ3_XXS = 18,
    STRATA_TYPE_IQ1_S = 19,
    STRATA_TYPE_IQ4_NL = 20,
    STRATA_TYPE_IQ3_S = 21,
    STRATA_TYPE_IQ2_S = 22,
    STRATA_TYPE_IQ4_XS = 23,
    STRATA_TYPE_IQ1_M = 29,
    STRATA_TYPE_BF16 = 30,
    STRATA_TYPE_TQ1_0 = 34,
    STRATA_TYPE_TQ2_0 = 35,
    STRATA_TYPE_MXFP4 = 39,
    STRATA_TYPE_Q1_0 = 41
} strata_tensor_type;

/* "f32", "iq1_s", ... for any ggml type id; "unknown" for ids ggml does not define. */
STRATA_API const char* strata_tensor_type_name(int type);
/* 1 when strata can read (dequantize) and write (quantize from float32) tensors of this type. */
STRATA_API int strata_tensor_type_supported(int type);

/* ---------------------------------------------------------------------------------------
 * Models: one GGUF file or the shards of a split model, memory-mapped
 * ------------------------------------------------------------------------------------- */

typedef struct strata_model strata_model;

/* Called while hashing shards (`what` names the file) and while a CUDA session or a GPU worker's
 * stage uploads weights (`what` is "upload weights"; on the worker's compute thread); done/total
 * count bytes. */
typedef void (*strata_progress_fn)(const char* what, uint64_t done, uint64_t total, void* user_data);

typedef struct strata_model_params {
    size_t struct_size;          /* sizeof(strata_model_params) */
    strata_progress_fn progress; /* NULL: no progress reports */
    void* progress_user_data;
    const char* digest_cache_dir; /* NULL: $STRATA_CACHE_DIR, else $XDG_CACHE_HOME/strata, else ~/.cache/strata */
    int use_digest_cache;         /* 1 (default): reuse shard digests keyed by path, size and mtime */
} strata_model_params;

STRATA_API void strata_model_default_params(strata_model_params* params);

/* Opens a model. Give one path (a single file, or the first shard NAME-00001-of-0000N.gguf,
 * whose siblings are then found by name) or every shard explicitly. Every length, offset,
 * count and type in the files is checked; tensor data past the end of a file is an error.
 * params may be NULL (defaults). */
STRATA_API strata_status strata_model_open(const char* const* paths, size_t n_paths,
                                           const strata_model_params* params, strata_model** out_model);
STRATA_API void strata_model_free(strata_model* model);

/* GGUF version of the (first) file: 2 or 3. */
STRATA_API strata_status strata_model_gguf_version(const strata_model* model, uint32_t* out_version);

/* --- metadata (the first shard's key/value pairs, in file order) --- */

STRATA_API strata_status strata_model_metadata_count(const strata_model* model, size_t* out_count);
/* NUL-terminated key of entry `index`. */
STRATA_API strata_status strata_model_metadata_key(const strata_model* model, size_t index, const char** out_key);
/* The type of a value; for arrays also the element type and the element count (else
 * *out_element_type = type and *out_count = 1). Output pointers may be NULL. */
STRATA_API strata_status strata_model_metadata_type(const strata_model* model, const char* key,
                                                    strata_value_type* out_type,
                                                    strata_value_type* out_element_type, uint64_t* out_count);

/* Scalar values. Integers of any width convert when the value fits, else
 * STRATA_ERR_TYPE_MISMATCH; floats accept f32 and f64. */
STRATA_API strata_status strata_model_metadata_int(const strata_model* model, const char* key, int64_t* out_value);
STRATA_API strata_status strata_model_metadata_uint(const strata_model* model, const char* key, uint64_t* out_value);
STRATA_API strata_status strata_model_metadata_float(const strata_model* model, const char* key, double* out_value);
STRATA_API strata_status strata_model_metadata_bool(const strata_model* model, const char* key, int* out_value);
/* Pointer into the model (not NUL-terminated) and its length in bytes. */
STRATA_API strata_status strata_model_metadata_string(const strata_model* model, const char* key,
                                                      const char** out_data, size_t* out_length);

/* Elements of a one-level array, with the same conversions as the scalar calls. */
STRATA_API strata_status strata_model_metadata_array_int(const strata_model* model, const char* key,
                                                         uint64_t index, int64_t* out_value);
STRATA_API strata_status strata_model_metadata_array_uint(const strata_model* model, const char* key,
                                                          uint64_t index, uint64_t* out_value);
STRATA_API strata_status strata_model_metadata_array_float(const strata_model* model, const char* key,
                                                           uint64_t index, double* out_value);
STRATA_API strata_status strata_model_metadata_array_bool(const strata_model* model, const char* key,
                                                          uint64_t index, int* out_value);
STRATA_API strata_status strata_model_metadata_array_string(const strata_model* model, const char* key,
                                                            uint64_t index, const char** out_data,
                                                            size_t* out_length);

/* Any value (nested arrays included) as JSON text, NUL-terminated. Floats are written as the
 * shortest decimal that reads back to the same bits; NaN and infinities as the strings
 * "NaN", "Infinity", "-Infinity" (JSON has no literal for them). Writes at most `capacity` bytes; *out_needed (may be NULL) receives
 * the size needed including the NUL. */
STRATA_API strata_status strata_model_metadata_json(const strata_model* model, const char* key, char* buffer,
                                                    size_t capacity, size_t* out_needed);

/* --- tensors --- */

typedef struct strata_tensor_info {
    size_t struct_size;  /* set by the caller: sizeof(strata_tensor_info) */
    const char* name;    /* NUL-terminated, owned by the model */
    int type;            /* ggml type id (strata_tensor_type for supported types) */
    uint32_t n_dims;     /* 1..4 */
    int64_t ne[4];       /* elements per dimension, innermost first (ne[0] = row length); unused = 1 */
    uint64_t n_elements;
    uint64_t n_bytes;
    uint32_t shard;      /* index into the model's shards */
    uint64_t file_offset; /* byte offset of the tensor data in its shard file */
} strata_tensor_info;

STRATA_API strata_status strata_model_tensor_count(const strata_model* model, size_t* out_count);
STRATA_API strata_status strata_model_tensor_info(const strata_model* model, size_t index,
                                                  strata_tensor_info* out_info);
/* STRATA_ERR_NOT_FOUND when no tensor has this name. */
STRATA_API strata_status strata_model_find_tensor(const strata_model* model, const char* name, size_t* out_index);
/* The tensor's bytes exactly as stored (memory-mapped, read-only, valid while the model lives). */
STRATA_API strata_status strata_model_tensor_data(const strata_model* model, size_t index, const void** out_data,
                                                  uint64_t* out_n_bytes);
/* The tensor dequantized to float32 in row-major (ggml) order. `capacity` counts floats; when it
 * is smaller than the tensor, nothing is written, *out_needed (may be NULL) receives the count
 * and STRATA_ERR_BUFFER_TOO_SMALL is returned. */
STRATA_API strata_status strata_model_tensor_read_f32(const strata_model* model, size_t index, float* buffer,
                                                      uint64_t capacity, uint64_t* out_needed);

/* --- shards and identity --- */

typedef struct strata_shard_info {
    size_t struct_size;   /* set by the caller: sizeof(strata_shard_info) */
    const char* path;     /* as opened */
    uint64_t size;        /* bytes */
    uint32_t gguf_version;
    uint32_t alignment;
    uint64_t data_offset; /* start of the tensor data section */
    uint64_t n_tensors;
    uint64_t n_metadata;
} strata_shard_info;

STRATA_API strata_status strata_model_shard_count(const strata_model* model, size_t* out_count);
STRATA_API strata_status strata_model_shard_info(const strata_model* model, size_t index,
                                                 strata_shard_info* out_info);
/* sha256 of a whole shard file as 64 lowercase hex digits plus NUL (hex must hold 65 bytes).
 * Streams the file (progress reported through the model params) and caches the digest
 * keyed by path, size and modification time, so a large shard is hashed once. */
STRATA_API strata_status strata_model_shard_sha256(strata_model* model, size_t index, char* hex);
/* The model identity: sha256 over the metadata, the tensor table and every shard's digest,
 * as 64 hex digits plus NUL (the exact serialization is documented in lib/gguf/digest.hpp).
 * Hashes the shards if not yet done. The shard digests pin every byte, so a split model and
 * its unsplit form have different identities. */
STRATA_API strata_status strata_model_identity(strata_model* model, char* hex);

/* ---------------------------------------------------------------------------------------
 * Writers: build a GGUF file (optionally split into shards) for tools and tests
 * ------------------------------------------------------------------------------------- */

typedef struct strata_writer strata_writer;

STRATA_API strata_status strata_writer_create(strata_writer** out_writer);
STRATA_API void strata_writer_free(strata_writer* writer);

/* Metadata, kept in insertion order. Setting an existing key is an error. Integers are range-
 * checked against `type` (one of the integer strata_value_type values). general.alignment
 * (u32, power of two) sets the alignment the file is padded to. */
STRATA_API strata_status strata_writer_set_int(strata_writer* writer, const char* key, strata_value_type type,
                                               int64_t value);
STRATA_API strata_status strata_writer_set_uint(strata_writer* writer, const char* key, strata_value_type type,
                                                uint64_t value);
/* type: STRATA_VALUE_F32 (rounded to nearest) or STRATA_VALUE_F64. */
STRATA_API strata_status strata_writer_set_float(strata_writer* writer, const char* key, strata_value_type type,
                                                 double value);
STRATA_API strata_status strata_writer_set_bool(strata_writer* writer, const char* key, int value);
STRATA_API strata_status strata_writer_set_string(strata_writer* writer, const char* key, const char* data,
                                                  size_t length);
/* An array of `count` numbers or booleans, packed as the file stores them (little-endian
 * elements of element_type; bool = one byte 0/1). */
STRATA_API strata_status strata_writer_set_array(strata_writer* writer, const char* key,
                                                 strata_value_type element_type, const void* data, uint64_t count);
/* An array of strings; lengths may be NULL for NUL-terminated strings. */
STRATA_API strata_status strata_writer_set_string_array(strata_writer* writer, const char* key,
                                                        const char* const* strings, const size_t* lengths,
                                                        uint64_t count);

/* A tensor from float32 values (ne[0] * ... * ne[n_dims-1] of them, row-major), converted to
 * `type`. For STRATA_TYPE_IQ1_S the quantizer weighs errors by `imatrix` (ne[0] importance
 * weights, one per column) or uses uniform weights when imatrix is NULL. */
STRATA_API strata_status strata_writer_add_tensor_f32(strata_writer* writer, const char* name, int type,
                                                      uint32_t n_dims, const int64_t* ne, const float* data,
                                                      const float* imatrix);
/* A tensor from bytes already in the file format of `type` (any ggml type id with a known
 * block layout); n_bytes must equal the size the shape implies. */
STRATA_API strata_status strata_writer_add_tensor_raw(strata_writer* writer, const char* name, int type,
                                                      uint32_t n_dims, const int64_t* ne, const void* data,
                                                      uint64_t n_bytes);

typedef struct strata_write_params {
    size_t struct_size; /* sizeof(strata_write_params) */
    uint32_t n_shards;  /* 1 (default): one file; N > 1: PATH-0000i-of-0000N.gguf as llama.cpp splits */
} strata_write_params;

STRATA_API void strata_write_default_params(strata_write_params* params);

/* Writes the file(s). With n_shards > 1, `path` names the model ("dir/name.gguf" gives
 * "dir/name-00001-of-00003.gguf", ...). Each file is written to a temporary name and renamed
 * into place. *out_n_written (may be NULL) receives the number of files written. The writer
 * stays usable (it can write again). params may be NULL (defaults). */
STRATA_API strata_status strata_writer_write(strata_writer* writer, const char* path,
                                             const strata_write_params* params, uint32_t* out_n_written);

/* ---------------------------------------------------------------------------------------
 * Tokenizer (built from the model's GGUF vocabulary on first use)
 * ------------------------------------------------------------------------------------- */

typedef struct strata_vocab_info {
    size_t struct_size; /* set by the caller: sizeof(strata_vocab_info) */
    int32_t n_vocab;
    int32_t bos;        /* -1 when the vocabulary has none */
    int32_t eos;        /* -1 when the vocabulary has none */
    int add_bos;        /* the vocabulary asks for BOS at the start of a prompt */
    const char* kind;   /* "spm" (SentencePiece-style, GGUF "llama") or "bpe" (byte-level, GGUF "gpt2") */
} strata_vocab_info;

STRATA_API strata_status strata_model_vocab_info(strata_model* model, strata_vocab_info* out_info);

/* Text (UTF-8, `length` bytes) to token ids. add_special: add BOS/EOS as the vocabulary asks;
 * parse_special: text such as "<s>" becomes the special token instead of plain text. Writes at
 * most `capacity` ids; *out_n_tokens receives the count needed (STRATA_ERR_BUFFER_TOO_SMALL
 * when it exceeds capacity, nothing written). */
STRATA_API strata_status strata_tokenize(strata_model* model, const char* text, size_t length, int add_special,
                                         int parse_special, int32_t* tokens, size_t capacity, size_t* out_n_tokens);
/* Token ids to text. remove_special drops control tokens (BOS, EOS, ...). *out_length receives
 * the byte count needed (without NUL; the text is NUL-terminated when capacity allows). */
STRATA_API strata_status strata_detokenize(strata_model* model, const int32_t* tokens, size_t n_tokens,
                                           int remove_special, char* text, size_t capacity, size_t* out_length);
/* The bytes one token contributes, for streaming output (may be an incomplete UTF-8 sequence). */
STRATA_API strata_status strata_token_to_piece(strata_model* model, int32_t token, char* piece, size_t capacity,
                                               size_t* out_length);
/* *out_is_eog = 1 when `token` ends generation for this vocabulary, as llama.cpp decides it: the
 * eos, eot and eom ids and the control tokens that end a turn by their text (<|eot_id|>,
 * <|im_end|>, <|end|>, <end_of_turn>, <|endoftext|>, [EOS], [EOT], ...); every stop in strata
 * (sessions, pipelines, strata-run) uses this set. Ids outside the vocabulary: invalid argument. */
STRATA_API strata_status strata_token_is_eog(strata_model* model, int32_t token, int* out_is_eog);

/* ---------------------------------------------------------------------------------------
 * Chat templates: a conversation rendered into the prompt text the model was trained on
 * ------------------------------------------------------------------------------------- */

/* Renders `messages_json` with a Jinja chat template, run by strata's own interpreter with
 * Jinja2's semantics as Hugging Face models use them (trim_blocks, lstrip_blocks, loop
 * controls; raise_exception and strftime_now available).
 *  template_source: NULL -> the model's tokenizer.chat_template (STRATA_ERR_NOT_FOUND when it
 *      has none); the name of a built-in format (strata_chat_builtin_formats) -> that format;
 *      anything else -> Jinja source text.
 *  messages_json: a JSON array of messages as the OpenAI API writes them: objects with "role"
 *      ("system", "user", "assistant", "tool", ...) and "content" (a string, null or a list
 *      of parts), optionally "tool_calls", "tool_call_id", "name", "reasoning_content"; the
 *      template sees them as they are.
 *  add_generation_prompt: non-zero to end with the opening of an assistant turn.
 *  extra_json: NULL, or a JSON object of more template variables ({"tools": [...],
 *      "enable_thinking": false, ...}); messages, add_generation_prompt, bos_token and
 *      eos_token come from the arguments and the model and cannot be overridden.
 * Writes at most `capacity` bytes (NUL-terminated when capacity allows); *out_length receives
 * the byte count needed without the NUL (STRATA_ERR_BUFFER_TOO_SMALL when it exceeds capacity).
 * Errors: STRATA_ERR_INVALID_ARGUMENT for malformed JSON or a message the template rejects
 * (raise_exception's text); STRATA_ERR_FORMAT for a template with a syntax error;
 * STRATA_ERR_UNSUPPORTED for a template using a Jinja feature strata does not implement. The
 * message names the construct and its line in the template. */
STRATA_API strata_status strata_chat_apply_template(strata_model* model, const char* template_source,
                                                    const char* messages_json, int add_generation_prompt,
                                                    const char* extra_json, char* text, size_t capacity,
                                                    size_t* out_length);

/* The built-in chat formats usable as template_source, comma-separated ("chatml,llama3,...").
 * Never NULL; a static string. */
STRATA_API const char* strata_chat_builtin_formats(void);

/* ---------------------------------------------------------------------------------------
 * Sessions: one sequence running on a model (KV cache, sampler); CPU backend, or CUDA (session params: device)
 * ------------------------------------------------------------------------------------- */

typedef struct strata_session strata_session;

typedef enum strata_kv_type { STRATA_KV_F16 = 0, STRATA_KV_Q8_0 = 1 } strata_kv_type;

typedef struct strata_session_params {
    size_t struct_size;     /* sizeof(strata_session_params) */
    int64_t n_ctx;          /* configured context in tokens; 0: the model's context_length, at most 4096 */
    int32_t n_threads;      /* 0: every hardware thread */
    int32_t kv_type;        /* strata_kv_type; a type that cannot serve the head dimension is an error */
    uint64_t memory_budget; /* bytes the plan may use; 0: the memory available now (on the
                               device for STRATA_DEVICE_CUDA: its free memory) */
    /* Appended after the first release (a caller whose struct_size ends before it gets
     * STRATA_DEVICE_CPU): */
    int32_t device;         /* strata_device: where the layers run (default STRATA_DEVICE_CPU) */
    /* Appended after device (a smaller struct_size means 1): */
    int32_t n_seq;          /* sequence slots (default 1; 0 means 1), each with its own KV cache of n_ctx
                               tokens (or recurrent state) and its own sampler; the memory plan
                               counts every slot. Above 1: STRATA_DEVICE_CPU only. */
} strata_session_params;

/* STRATA_DEVICE_CUDA runs the whole forward pass of a llama-family model (llama, qwen2, qwen3)
 * on the first NVIDIA GPU, weights uploaded once (IQ1_S kept in its blocks), KV cache in device
 * memory. STRATA_ERR_UNSUPPORTED when the library was built without the CUDA backend, when no
 * usable GPU is found (the message gives the CUDA runtime's reason) or for an architecture the
 * GPU does not run yet (deepseek2, kimi-*: device CPU). */
typedef enum strata_device { STRATA_DEVICE_CPU = 0, STRATA_DEVICE_CUDA = 1 } strata_device;

STRATA_API void strata_session_default_params(strata_session_params* params);

/* Plans memory (weights + KV cache for n_ctx + scratch) before allocating anything and refuses
 * with STRATA_ERR_OUT_OF_MEMORY and a message giving the largest context that fits. The session
 * keeps what it needs of the model (the mapped files, the tokenizer) alive, so the model may be
 * freed before its sessions. */
STRATA_API strata_status strata_session_create(strata_model* model, const strata_session_params* params,
                                               strata_session** out_session);
STRATA_API void strata_session_free(strata_session* session);

/* The memory plan as readable text (weights, KV cache, scratch, budget, largest context that
 * fits); NUL-terminated; *out_needed receives the size including the NUL. */
STRATA_API strata_status strata_session_plan(const strata_session* session, char* text, size_t capacity,
                                             size_t* out_needed);
STRATA_API strata_status strata_session_n_ctx(const strata_session* session, int64_t* out_n_ctx);
/* Tokens in the KV cache (the position the next token gets). */
STRATA_API strata_status strata_session_n_past(const strata_session* session, int64_t* out_n_past);
STRATA_API strata_status strata_session_n_vocab(const strata_session* session, int32_t* out_n_vocab);

/* Runs n_tokens tokens at positions n_past.. (prefill or one decode step) and keeps their
 * logits: of the last token, or of every token when all_logits. Tokens out of range are
 * STRATA_ERR_INVALID_ARGUMENT; tokens past the context STRATA_ERR_CONTEXT_OVERFLOW; in both
 * cases nothing is run. Decoded tokens join the repetition-penalty history. */
STRATA_API strata_status strata_session_decode(strata_session* session, const int32_t* tokens, size_t n_tokens,
                                               int all_logits);
/* The logits of the last decode: *out_n_rows rows of n_vocab floats (1, or n_tokens with
 * all_logits), valid until the next decode or reset. */
STRATA_API strata_status strata_session_logits(const strata_session* session, const float** out_logits,
                                               size_t* out_n_rows);
/* Drops the KV cache and the sampler history and re-seeds the sampler. */
STRATA_API strata_status strata_session_reset(strata_session* session);

/* --- sampling --- */

typedef struct strata_sampling_params {
    size_t struct_size;   /* sizeof(strata_sampling_params) */
    float temperature;    /* 0: greedy (argmax); negative is an error */
    int32_t top_k;        /* 0: off */
    float top_p;          /* 1: off */
    float min_p;          /* 0: off */
    float repeat_penalty; /* 1: off */
    int32_t repeat_last_n;
    uint64_t seed;        /* the same seed and settings give the same tokens */
} strata_sampling_params;

STRATA_API void strata_sampling_default_params(strata_sampling_params* params);
/* Replaces the session's sampler (history cleared, RNG seeded). Invalid settings are
 * STRATA_ERR_INVALID_ARGUMENT naming the setting. */
STRATA_API strata_status strata_session_set_sampling(strata_session* session, const strata_sampling_params* params);
/* Every sampling setting in force, as a JSON object (for reports); NUL-terminated. */
STRATA_API strata_status strata_session_sampling_json(const strata_session* session, char* text, size_t capacity,
                                                      size_t* out_needed);
/* Samples the next token from the last row of the last decode's logits. */
STRATA_API strata_status strata_session_sample(strata_session* session, int32_t* out_token);
/* Decodes the tokens, then samples the next token: strata_session_decode + strata_session_sample
 * in one call, and on a pipeline one round trip that moves no logits (strata_session_logits has
 * none to give afterwards). */
STRATA_API strata_status strata_session_decode_sample(strata_session* session, const int32_t* tokens,
                                                      size_t n_tokens, int32_t* out_token);
/* As strata_session_sample, and also the n_top (at most 64) most likely tokens under the raw
 * logits (log-softmax, temperature 1, no penalty), descending: top_tokens[i], top_logprobs[i].
 * On a pipeline only these n_top pairs travel, never the logits. */
STRATA_API strata_status strata_session_sample_top(strata_session* session, int32_t* out_token, size_t n_top,
                                                   int32_t* top_tokens, float* top_logprobs);

/* --- many sequences in one session (continuous batching) ---
 *
 * A session made with n_seq > 1 holds n_seq independent sequences, numbered 0..n_seq-1; the
 * calls above address sequence 0. strata_session_decode_batch runs the next tokens of several
 * sequences in one forward step: every weight is read once for all of them, each sequence's
 * tokens attend only to its own cache, and each sequence's logits are exactly those it would get
 * decoded alone (one-token decode steps and prefill chunks may be mixed in one call). A session
 * from strata_pipeline_session has one sequence. */

typedef struct strata_seq_tokens {
    int32_t seq;           /* 0 <= seq < n_seq, at most once per call */
    const int32_t* tokens; /* run at the sequence's positions n_past.. */
    size_t n_tokens;       /* at least 1 */
} strata_seq_tokens;

STRATA_API strata_status strata_session_n_seq(const strata_session* session, int32_t* out_n_seq);
/* Every entry is checked (sequence numbers, repeats, token ids, room in each sequence's
 * context) before anything runs: STRATA_ERR_INVALID_ARGUMENT or STRATA_ERR_CONTEXT_OVERFLOW
 * naming the entry, nothing run. Each sequence keeps the logits of its last token (see
 * strata_session_seq_logits) and its tokens join its sampler's history. */
STRATA_API strata_status strata_session_decode_batch(strata_session* session, const strata_seq_tokens* entries,
                                                     size_t n_entries);
/* The last-token logits (n_vocab floats) of the sequence's last decode, valid until that
 * sequence's next decode or reset. */
STRATA_API strata_status strata_session_seq_logits(const strata_session* session, int32_t seq,
                                                   const float** out_logits);
STRATA_API strata_status strata_session_seq_n_past(const strata_session* session, int32_t seq, int64_t* out_n_past);
/* Empties the sequence's cache, clears its sampler history and re-seeds it. */
STRATA_API strata_status strata_session_seq_reset(strata_session* session, int32_t seq);
/* Keeps the sequence's first n_past positions (0 <= n_past <= its n_past): a new prompt that
 * shares a prefix with what the slot holds decodes only the rest. A model with recurrent
 * (KDA) layers can only restart (0) or keep everything: STRATA_ERR_UNSUPPORTED otherwise. The
 * sampler history is cleared (the caller re-decodes nothing it kept). */
STRATA_API strata_status strata_session_seq_truncate(strata_session* session, int32_t seq, int64_t n_past);
/* As strata_session_set_sampling / strata_session_sample_top for one sequence. */
STRATA_API strata_status strata_session_seq_set_sampling(strata_session* session, int32_t seq,
                                                         const strata_sampling_params* params);
STRATA_API strata_status strata_session_seq_sample_top(strata_session* session, int32_t seq, int32_t* out_token,
                                                       size_t n_top, int32_t* top_tokens, float* top_logprobs);

/* --- generation --- */

/* Called for every generated token with the bytes it contributes; return non-zero to stop. */
typedef int (*strata_token_fn)(int32_t token, const char* piece, size_t piece_length, void* user_data);

typedef enum strata_stop_reason {
    STRATA_STOP_MAX_TOKENS = 0,   /* max_tokens generated */
    STRATA_STOP_END_OF_GENERATION = 1, /* the model produced an end-of-generation token */
    STRATA_STOP_STRING = 2,       /* the output contains a stop string (the token completing it was emitted) */
    STRATA_STOP_CALLBACK = 3,     /* the callback returned non-zero */
    STRATA_STOP_CONTEXT_FULL = 4  /* the configured context is full */
} strata_stop_reason;

typedef struct strata_generate_params {
    size_t struct_size;            /* sizeof(strata_generate_params) */
    int32_t max_tokens;            /* default 128 */
    int add_special;               /* default 1: BOS as the vocabulary asks (only at position 0) */
    int parse_special;             /* default 0 */
    int stop_at_end_of_generation; /* default 1 */
    const char* const* stop_strings; /* NULL-free array of NUL-terminated strings */
    size_t n_stop_strings;
    strata_token_fn on_token;      /* may be NULL */
    void* user_data;
} strata_generate_params;

typedef struct strata_generate_result {
    size_t struct_size;      /* set by the caller: sizeof(strata_generate_result) */
    int64_t n_prompt_tokens; /* tokens actually prefilled */
    int64_t n_generated;     /* tokens actually generated (sampled and passed to the callback) */
    double prefill_seconds;  /* wall time of the prompt's decode */
    double decode_seconds;   /* wall time of the generated tokens' decode steps and sampling */
    int32_t stop_reason;     /* strata_stop_reason */
} strata_generate_result;

STRATA_API void strata_generate_default_params(strata_generate_params* params);
/* Tokenizes the prompt, prefills it after what the session already holds, then samples and
 * decodes until a stop condition. A prompt that does not fit is STRATA_ERR_CONTEXT_OVERFLOW
 * (nothing run); reaching the end of the context while generating stops with
 * STRATA_STOP_CONTEXT_FULL. out_result may be NULL. */
STRATA_API strata_status strata_session_generate(strata_session* session, const char* prompt, size_t prompt_length,
                                                 const strata_generate_params* params,
                                                 strata_generate_result* out_result);

/* --- memory plans without a session --- */

/* What sessions or pipeline stages of a model would need, per stage, computed from the tensor
 * table and the hyperparameters alone: nothing is allocated, nothing hashed. */
typedef struct strata_plan_params {
    size_t struct_size; /* sizeof(strata_plan_params) */
    int64_t n_ctx;      /* the configured context in tokens, > 0 (default 4096) */
    int32_t kv_type;    /* strata_kv_type (default STRATA_KV_F16) */
    const char* layers; /* "0:20,20:40,40:61": one range per stage, contiguous, covering every
                           layer; NULL: n_stages stages */
    int32_t n_stages;   /* with layers NULL: the layers split evenly by count over this many stages
                           (as a pipeline plans them when no stage reports its memory); 0 or 1
                           (default): one stage holding every layer */
    int64_t n_batch;    /* micro-batch in tokens, > 0 (default 512, as a session); at most n_ctx */
    int32_t n_threads;  /* compute threads the scratch is sized for; 0: every hardware thread
                           (unused with STRATA_DEVICE_CUDA) */
    int32_t reserved;   /* ignored: the first release's tail padding (its struct_size ends here) */
    /* Appended after the first release: a caller built against the earlier header passes a
     * struct_size that ends before it, and gets the default. */
    int32_t device;     /* strata_device whose memory is planned (default STRATA_DEVICE_CPU) */
} strata_plan_params;

STRATA_API void strata_plan_default_params(strata_plan_params* params);
/* The plan as JSON, NUL-terminated: {"architecture", "n_layer", "n_ctx", "n_ctx_train",
 * "kv_type", "n_batch", "n_threads", "long_context_tokens" (1048576), "layers" (the plan as
 * "A:B,..."), "kv_bytes_per_token", "kv_bytes", "kv_bytes_at_1m" (whole model),
 * "stages": [{"stage", "first_layer", "last_layer" (exclusive), "weight_bytes", "kv_bytes_per_token",
 * "kv_bytes" (at n_ctx), "kv_bytes_at_1m" (at 1048576 tokens), "scratch_bytes",
 * "scratch_bytes_at_1m", "total_bytes", "total_bytes_at_1m"}]}. Weights are the mapped bytes of
 * the stage's tensors (token_embd on the first stage, output_norm and output on the last, the
 * embeddings again there when the output is tied to them) plus what loading builds; the KV cache
 * is exact for its type (per layer: K and V rows, or the latent and rope key of deepseek2); the
 * scratch is what a session or stage plans for the same n_ctx, n_batch and threads. A bad layers
 * string, n_ctx, n_batch, n_stages or kv_type is STRATA_ERR_INVALID_ARGUMENT; a KV type the
 * model's cache cannot use (q8_0 on widths that are not multiples of 32) STRATA_ERR_UNSUPPORTED;
 * strata_last_error() names which.
 * With device STRATA_DEVICE_CUDA the JSON has "device": "cuda" ("cpu" otherwise) and each stage
 * gives the plan a CUDA session or stage makes before it allocates (host arithmetic: no GPU is
 * needed to ask): weights are the device upload (each tensor plus 16 bytes of pad, on a 256-byte
 * boundary; a tied output once), the KV cache the device cache (the same bytes per token as the
 * CPU's: f16 or q8_0 K and V rows, the f16 latent rows of MLA layers), the KDA state the same as
 * the CPU's, and the scratch the device activations of one micro-batch, the product, attention
 * and MoE routing workspaces and the RoPE tables (which grow with the context). n_threads is
 * ignored. STRATA_ERR_UNSUPPORTED naming why when the library was built without the CUDA
 * backend, when the GPU does not run the model, or for a q8_0 cache with latent attention (the
 * GPU's latent cache is f16). An unknown device is STRATA_ERR_INVALID_ARGUMENT. */
STRATA_API strata_status strata_model_plan_json(const strata_model* model, const strata_plan_params* params,
                                                char* text, size_t capacity, size_t* out_needed);


/* ---------------------------------------------------------------------------------------
 * Pipelines: one model served by this process (the head: embeddings and the first layers)
 * and remote workers (contiguous layer ranges, the last one samples), over TCP.
 * Available where the library was built with the TCP transport; elsewhere every call below
 * returns STRATA_ERR_UNSUPPORTED.
 * ------------------------------------------------------------------------------------- */

typedef struct strata_pipeline strata_pipeline;

typedef enum strata_wire_dtype { STRATA_WIRE_F32 = 0, STRATA_WIRE_F16 = 1, STRATA_WIRE_BF16 = 2 } strata_wire_dtype;

typedef struct strata_pipeline_params {
    size_t struct_size;            /* sizeof(strata_pipeline_params) */
    const char* const* workers;    /* "HOST:PORT" of each worker, in stage order (at least one) */
    size_t n_workers;
    const char* layers;            /* "0:8,8:16,16:24": one range per stage, head first, contiguous,
                                      covering every layer; NULL: planned from each worker's
                                      reported free memory and the layers' memory plans */
    const char* key_file;          /* file holding the pre-shared key; NULL: `key` */
    const uint8_t* key;            /* the key itself (key_length bytes); NULL and no key_file:
                                      the empty key, which workers accept only on loopback */
    size_t key_length;
    int64_t n_ctx;                 /* as strata_session_params (same on every stage) */
    int32_t n_threads;             /* the head's compute threads; 0: every hardware thread */
    int32_t kv_type;               /* strata_kv_type, on every stage */
    uint64_t memory_budget;        /* the head's budget; 0: the memory available now */
    int32_t n_batch;               /* prefill micro-batch in tokens (default 32): micro-batches
                                      flow through the stages so that all compute at once */
    int32_t heartbeat_ms;          /* heartbeat interval on every link (default 1000) */
    int32_t peer_timeout_ms;       /* a stage silent this long has failed (default 5000) */
    int32_t connect_timeout_ms;    /* per connection attempt and handshake step (default 5000) */
    int32_t socket_buffer_bytes;   /* SO_SNDBUF and SO_RCVBUF; 0: the OS default */
    int32_t wire_dtype;            /* strata_wire_dtype of the hidden states between stages
                                      (default STRATA_WIRE_F16: half the bytes of f32; F32 keeps
                                      the logits bit-identical to one process) */
    /* TLS on every link (fields appended after the first release: a caller whose struct_size
     * ends before them gets NULL, plain TCP). With tls_ca_file set, each worker must present a
     * certificate that chains to it and names the address dialed (subjectAltName DNS or IP);
     * tls_cert_file and tls_key_file (PEM) are this head's certificate for workers that ask
     * for one (mutual TLS). The pre-shared key is still proved inside TLS. A refused
     * certificate or TLS handshake is STRATA_ERR_REFUSED naming the stage and OpenSSL's
     * reason ("certificate verify failed"). NULL, NULL, NULL: no TLS. */
    const char* tls_cert_file;
    const char* tls_key_file;
    const char* tls_ca_file;
    /* What every link runs on (appended after tls_ca_file: a smaller struct_size means NULL):
     * "tcp", "tls" (needs the TLS files above), "rdma" (UCX: RC or UD verbs on RoCE and
     * InfiniBand, shared memory on one host, TCP where there is no RDMA device; the same frames,
     * deadlines, heartbeats and handshake as tcp, and every worker must serve rdma), or "nccl"
     * (not implemented yet: STRATA_ERR_UNSUPPORTED). NULL: "tcp", or "tls" when TLS files are
     * set. A transport this build lacks is STRATA_ERR_UNSUPPORTED naming it and what is missing;
     * an unknown name STRATA_ERR_INVALID_ARGUMENT. */
    const char* transport;
    /* rdma settings, passed to UCX (0 or NULL: UCX's default; ignored by other transports):
     * rdma_transports is UCX_TLS ("rc,sm,self", "tcp"), rdma_devices UCX_NET_DEVICES
     * ("mlx5_0:1"), rdma_mtu the InfiniBand path MTU (512, 1024, 2048 or 4096), rdma_max_inline
     * the bytes sent inline in a work request, rdma_rx_queue_len and rdma_tx_queue_len the queue
     * depths. strata_pipeline_plan_json reports them as configured beside what UCX chose. */
    const char* rdma_transports;
    const char* rdma_devices;
    int32_t rdma_mtu;
    int32_t rdma_max_inline;
    int32_t rdma_rx_queue_len;
    int32_t rdma_tx_queue_len;
} strata_pipeline_params;

STRATA_API void strata_pipeline_default_params(strata_pipeline_params* params);
/* STRATA_OK when this build can carry pipeline links over `transport` ("tcp", "tls", "rdma",
 * "nccl"); STRATA_ERR_UNSUPPORTED, with strata_last_error() naming the transport and what is
 * missing (UCX, ...), when it cannot; STRATA_ERR_INVALID_ARGUMENT for another name. */
STRATA_API strata_status strata_transport_available(const char* transport);
/* Connects to every worker (handshake: protocol version, model identity, layer range, key),
 * plans or checks the layer ranges, and has every stage allocate its part for n_ctx tokens.
 * Errors name the stage: STRATA_ERR_REFUSED (key, model, version, range), STRATA_ERR_STAGE_FAILED
 * or STRATA_ERR_IO (unreachable), STRATA_ERR_OUT_OF_MEMORY (a stage's plan does not fit). */
STRATA_API strata_status strata_pipeline_create(strata_model* model, const strata_pipeline_params* params,
                                                strata_pipeline** out_pipeline);
STRATA_API void strata_pipeline_free(strata_pipeline* pipeline);

/* The plan as executed, as JSON: per stage its address, layer range, memory plan, what the
 * worker reported (free memory, threads, backend, host) and its socket settings as configured
 * and as observed; NUL-terminated. */
STRATA_API strata_status strata_pipeline_plan_json(const strata_pipeline* pipeline, char* text, size_t capacity,
                                                   size_t* out_needed);
/* Counters since creation, as JSON: bytes sent and received per link, forward requests,
 * per-hop round-trip latency (count, mean, min, max, in microseconds); NUL-terminated. */
STRATA_API strata_status strata_pipeline_stats_json(const strata_pipeline* pipeline, char* text, size_t capacity,
                                                    size_t* out_needed);
/* The pipeline's sequence as a session: every strata_session_* call works on it (decode returns
 * logits fetched from the last stage; generate and sample draw on the last stage and move only
 * token ids). One session per pipeline at a time; free it with strata_session_free. */
STRATA_API strata_status strata_pipeline_session(strata_pipeline* pipeline, strata_session** out_session);
/* After STRATA_ERR_STAGE_FAILED: re-dials the failed stages (handshake and allocation again)
 * with the same plan. The session's sequence is lost: reset it before decoding again. */
STRATA_API strata_status strata_pipeline_reconnect(strata_pipeline* pipeline);

/* --- the worker side, for programs that serve a layer range (strata-worker) --- */

typedef struct strata_worker strata_worker;

typedef struct strata_worker_params {
    size_t struct_size;         /* sizeof(strata_worker_params) */
    const char* listen;         /* "HOST:PORT" (port 0: any free port, see strata_worker_port) */
    const char* key_file;       /* NULL: `key` */
    const uint8_t* key;         /* NULL and no key_file: the empty key, only on loopback ... */
    size_t key_length;
    int allow_no_key;           /* ... unless this is non-zero */
    int32_t layer_begin;        /* a fixed range [layer_begin, layer_end); both 0: any range */
    int32_t layer_end;
    int32_t n_threads;          /* 0: every hardware thread */
    uint64_t memory_budget;     /* 0: the memory available */
    int32_t heartbeat_ms;       /* default 1000 */
    int32_t peer_timeout_ms;    /* a silent head is gone after this (default 5000) */
    void (*log)(const char* line, void* user_data); /* NULL: stderr */
    void* log_user_data;
    /* TLS on every connection when tls_cert_file and tls_key_file (PEM) are set: the worker's
     * certificate and key. With tls_ca_file, heads must present a certificate that chains to
     * it (mutual TLS). The key rules above still hold with TLS (a non-loopback address needs a
     * key unless allow_no_key). Appended after the first release: a smaller struct_size means
     * NULL, no TLS. */
    const char* tls_cert_file;
    const char* tls_key_file;
    const char* tls_ca_file;
    /* strata_device where the worker's stages run (default STRATA_DEVICE_CPU). With
     * STRATA_DEVICE_CUDA each stage's layers run on the GPU as a CUDA session's do, memory_budget
     * is in device memory (0: the device's free memory, which is also what the worker
     * advertises), and strata_worker_create fails with STRATA_ERR_UNSUPPORTED, naming why, when
     * the library has no CUDA backend or no GPU can be used. Each connection's stage uploads
     * its own copy of its layers' weights (on the CPU they are shared, memory-mapped): a second
     * head, or a reconnect before the old connection is gone, needs that memory again.
     * Appended after tls_ca_file: a smaller struct_size means the CPU. */
    int32_t device;
    /* What connections arrive on, and the rdma settings: as strata_pipeline_params (appended
     * after device: a smaller struct_size means NULL, tcp or tls as the TLS files say). With
     * "rdma" the worker listens through UCX on `listen` and heads must dial it over rdma. */
    const char* transport;
    const char* rdma_transports;
    const char* rdma_devices;
    int32_t rdma_mtu;
    int32_t rdma_max_inline;
    int32_t rdma_rx_queue_len;
    int32_t rdma_tx_queue_len;
} strata_worker_params;

STRATA_API void strata_worker_default_params(strata_worker_params* params);
/* Computes the model identity (shard digests, cached) and binds the listening socket. */
STRATA_API strata_status strata_worker_create(strata_model* model, const strata_worker_params* params,
                                              strata_worker** out_worker);
STRATA_API strata_status strata_worker_port(const strata_worker* worker, uint16_t* out_port);
/* Serves until strata_worker_stop; blocks the calling thread. */
STRATA_API strata_status strata_worker_run(strata_worker* worker);
/* Thread-safe; strata_worker_run returns soon after. */
STRATA_API strata_status strata_worker_stop(strata_worker* worker);
STRATA_API void strata_worker_free(strata_worker* worker);

/* ---------------------------------------------------------------------------------------
 * Reports: benchmark and evaluation reports that pin what was run (schema "strata.report/1",
 * lib/report/schema/report.schema.json), as JSON text in and JSON text out.
 *
 * Text-producing calls write NUL-terminated UTF-8 into `buffer` (at most `capacity` bytes) and
 * store the size needed, NUL included, in *out_needed (may be NULL); when the buffer is too small
 * nothing is written and STRATA_ERR_BUFFER_TOO_SMALL is returned (call with capacity 0 to ask).
 * Every text input (a report file, a section, a request) is untrusted: malformed JSON, a missing
 * or mistyped member is STRATA_ERR_FORMAT or STRATA_ERR_INVALID_ARGUMENT naming it, never a crash.
 * `length` is the input's byte count (the text need not be NUL-terminated).
 * ------------------------------------------------------------------------------------- */

/* "strata.report/1": the schema version the reports of this library carry. */
STRATA_API const char* strata_report_schema_version(void);

/* The artifact section of a model: path, size and sha256 of every shard (hashed once and cached as
 * the model's params say), the model identity, the architecture, tensor counts and bytes per type,
 * and the publisher's metadata labels (general.name, ...) marked as unverified. */
STRATA_API strata_status strata_report_artifact_json(strata_model* model, char* buffer, size_t capacity,
                                                     size_t* out_needed);

/* The runtime section of this process: strata version and git commit, build type, compiler and
 * flags, CPU model and cores, host memory, OS, and CUDA (absent, with the reason, in a process
 * without a CUDA backend). */
STRATA_API strata_status strata_report_runtime_json(char* buffer, size_t capacity, size_t* out_needed);

/* Assembles a report from a JSON object holding its sections: "title" (string), "artifact",
 * "runtime", "transport", "deployment" (objects) and "memory", "benchmarks", "evaluations"
 * (arrays); "created_utc" is optional (now when absent); "schema" is set here. The result is
 * validated first: a report that would not validate is STRATA_ERR_FORMAT with every problem in
 * the message, and nothing is written. */
STRATA_API strata_status strata_report_assemble(const char* sections_json, size_t length, char* buffer,
                                                size_t capacity, size_t* out_needed);

/* Checks a report text against the schema and the arithmetic the schema cannot state (a stored
 * score must be the score of the stored attempts, a sampled peak the largest sample, ...). Writes
 * a JSON array of problems, each "JSON-pointer: what is wrong"; "[]" for a valid report. A
 * problem in the text is a result, not an error: the call returns STRATA_OK either way. */
STRATA_API strata_status strata_report_validate(const char* report_json, size_t length, char* buffer,
                                                size_t capacity, size_t* out_needed);

/* The Markdown rendering of a valid report (STRATA_ERR_FORMAT listing the problems otherwise).
 * images_json: NULL, or a JSON array of {"caption": ..., "path": ...} (paths relative to the
 * Markdown file, e.g. what strata_report_plot returns), shown after the memory section. */
STRATA_API strata_status strata_report_markdown(const char* report_json, size_t length, const char* images_json,
                                                char* buffer, size_t capacity, size_t* out_needed);

/* Scores an evaluation. Input: {"name", "rounds", "tasks"} as the schema's evaluation element
 * (a "score" member is ignored); output: the same element with its "score" (first pass, each
 * retry round, composite and the summary line that never shows a composite without the first
 * pass and the retry history). A record that breaks the history rules (a first attempt outside
 * round 0, a retry of a task already passed, an attempt in an undeclared round) is
 * STRATA_ERR_INVALID_ARGUMENT naming the task. */
STRATA_API strata_status strata_report_eval_score(const char* evaluation_json, size_t length, char* buffer,
                                                  size_t capacity, size_t* out_needed);

/* May two evaluations be compared? evaluation_a / evaluation_b index the "evaluations" arrays of
 * the two report texts. Writes {"comparable": bool, "differences": [{"what", "a", "b"}, ...]}
 * listing every difference in artifact identity, task subset, prompts, first-pass sampling
 * controls and timeouts. An unreadable report is a difference, not an error. */
STRATA_API strata_status strata_report_eval_compare(const char* report_a, size_t length_a, const char* report_b,
                                                    size_t length_b, size_t evaluation_a, size_t evaluation_b,
                                                    char* buffer, size_t capacity, size_t* out_needed);

/* Runs a command in a sandbox (for the code tasks of an evaluation): a child process in a fresh
 * temporary directory with CPU-time, address-space, file-size and process-count limits, a wall
 * timeout that kills its process group, captured output up to a cap, and no network (a new network
 * namespace when running as root; otherwise the result says the network was not isolated).
 * Request: {"argv": [strings, at least one], "files": [{"name", "content"}] (optional),
 * "limits": {"cpu_seconds", "address_space_bytes", "file_size_bytes", "max_processes",
 * "wall_seconds", "output_cap_bytes"} (optional, each member optional)}. Writes the result:
 * limits, outcome, exit code or signal, timed_out, the limits hit, times, output. What the child
 * does is a result (STRATA_OK); only a malformed request is an error. The command is not run
 * twice for the needed-size protocol: a result that did not fit is kept for the calling thread,
 * and the next call with the same request text returns it without running the command. */
STRATA_API strata_status strata_report_sandbox_run(const char* request_json, size_t length, char* buffer,
                                                   size_t capacity, size_t* out_needed);

/* Draws PNG plots of a valid report into out_dir (which must exist), file names beginning with
 * `prefix`: per-token latency of every benchmark run that carries "token_times_s" (seconds since
 * the run started, one per generated token; runs with "warmup": true are left out) and memory
 * over time of every memory record. Writes a JSON array of {"caption", "path"} (path = file name
 * inside out_dir), ready for strata_report_markdown. */
STRATA_API strata_status strata_report_plot(const char* report_json, size_t length, const char* out_dir,
                                            const char* prefix, char* buffer, size_t capacity, size_t* out_needed);

/* --- memory sampling with a stated method --- */

/* A thread recording, once per cadence (and once at start and at stop), this process's RSS and
 * VmHWM, host MemAvailable, the swap counters, and the context length set by the caller. */
typedef struct strata_memory_sampler strata_memory_sampler;

/* cadence_ms: 1 to 3600000. */
STRATA_API strata_status strata_memory_sampler_create(int32_t cadence_ms, strata_memory_sampler** out_sampler);
STRATA_API void strata_memory_sampler_free(strata_memory_sampler* sampler);
/* Takes a sample now and starts the thread; a second start is STRATA_ERR_INVALID_ARGUMENT. */
STRATA_API strata_status strata_memory_sampler_start(strata_memory_sampler* sampler);
/* The context length (tokens) being processed, attached to every later sample. Thread-safe. */
STRATA_API strata_status strata_memory_sampler_set_context(strata_memory_sampler* sampler, int64_t context_tokens);
/* Takes a last sample and stops the thread (a no-op when not running). */
STRATA_API strata_status strata_memory_sampler_stop(strata_memory_sampler* sampler);
/* The memory section element: node name, cadence, method, every sample, and the summary that
 * keeps the sampled peak (largest sample) apart from the kernel's high-water mark. While the
 * sampler runs, a snapshot that did not fit the buffer is kept and returned by the next call for
 * the same node, so that the needed-size protocol works on a growing record. */
STRATA_API strata_status strata_memory_sampler_json(const strata_memory_sampler* sampler, const char* node,
                                                    char* buffer, size_t capacity, size_t* out_needed);

/* ---------------------------------------------------------------------------------------
 * CUDA kernel benchmarks (strata-bench kernels): the backend's kernels timed on model shapes,
 * each figure beside a ceiling measured in the same run (streaming read, device copy, cuBLAS
 * f16 GEMM on the same shape). Library builds without the CUDA backend, or processes without a
 * usable GPU, get STRATA_ERR_UNSUPPORTED with the reason ("no CUDA device: ...").
 * ------------------------------------------------------------------------------------- */

typedef struct strata_cuda_kernel_bench_params {
    size_t struct_size;     /* sizeof(strata_cuda_kernel_bench_params) */
    int32_t samples;        /* timed samples per row, the median reported (default 7; 1..1000) */
    double sample_seconds;  /* each sample runs launches for about this long (default 0.02; up to 10) */
    int32_t quick;          /* 1: the short set for device checks (fewer shapes and token counts) */
    int32_t ceilings_only;  /* 1: only the ceilings (streaming read, device copy) */
    const char* filter;     /* NULL or "": every row; else only rows whose name contains it */
    void (*log)(const char* line, void* user_data); /* one line per row as it is measured; may be NULL */
    void* log_user_data;
} strata_cuda_kernel_bench_params;

STRATA_API void strata_cuda_kernel_bench_default_params(strata_cuda_kernel_bench_params* params);
/* Runs the benchmarks on the current CUDA device and writes their JSON: "device" (name, clocks,
 * CUDA runtime/driver and cuBLAS versions), "method", "options", "ceilings", "rows" (raw times
 * and every sample kept beside the derived GB/s or TFLOP/s, its ceiling and the ratio) and
 * "errors" (rows that failed). The text protocol of the Reports section; the run is not repeated
 * for the needed-size protocol: a result that did not fit is kept for the calling thread and the
 * next call with the same params (log aside) returns it. params may be NULL (defaults). */
STRATA_API strata_status strata_cuda_kernel_bench_json(const strata_cuda_kernel_bench_params* params, char* buffer,
                                                       size_t capacity, size_t* out_needed);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* STRATA_H */
