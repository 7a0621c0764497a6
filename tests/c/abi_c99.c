/* The C ABI used from strict C99: compiles with -std=c99 -pedantic-errors against strata.h
 * alone and links only libstrata.so. Exercises one call of each kind on the ggml fixtures. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "strata/strata.h"

static int failures = 0;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__,  \
                    __LINE__, #cond, strata_last_error());                           \
            ++failures;                                                              \
        }                                                                            \
    } while (0)

static void fixture_path(char* out, size_t cap, const char* relative) {
    const char* dir = getenv("STRATA_FIXTURES");
    snprintf(out, cap, "%s/gguf/%s", dir && *dir ? dir : STRATA_FIXTURES_DIR, relative);
}

static void test_versions_and_errors(void) {
    CHECK(strata_abi_version() == STRATA_ABI_VERSION);
    CHECK(strata_version_number() == STRATA_VERSION_NUMBER);
    CHECK(strcmp(strata_version(), "0.1.0") == 0);
    CHECK(strcmp(strata_status_string(STRATA_ERR_FORMAT), "malformed file") == 0);
    CHECK(strcmp(strata_tensor_type_name(STRATA_TYPE_IQ1_S), "iq1_s") == 0);
    CHECK(strata_tensor_type_supported(STRATA_TYPE_IQ1_S) == 1);
    CHECK(strata_tensor_type_supported(STRATA_TYPE_Q4_0) == 1);
    CHECK(strata_tensor_type_supported(STRATA_TYPE_Q3_K) == 0); /* decoded, not written */
    CHECK(strata_tensor_type_supported(40) == 0);               /* nvfp4: not decoded */
    strata_model_free(NULL);
    strata_writer_free(NULL);
    CHECK(strata_model_open(NULL, 1, NULL, NULL) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strlen(strata_last_error()) > 0);
}

static void test_plan_params(void) {
    strata_plan_params params;
    size_t needed = 0;
    strata_plan_default_params(&params);
    CHECK(params.struct_size == sizeof params && params.n_ctx == 4096 && params.kv_type == STRATA_KV_F16 &&
          params.layers == NULL && params.n_stages == 1 && params.n_batch == 512 && params.n_threads == 0 &&
          params.device == STRATA_DEVICE_CPU);
    /* `device` comes after the first release's layout (which ended with n_threads and 4 bytes of
     * padding, now `reserved`): a caller of that release passes a struct_size that stops before
     * it, and gets the CPU plan whatever its padding held. */
    CHECK(offsetof(strata_plan_params, reserved) == offsetof(strata_plan_params, n_threads) + sizeof(int32_t));
    CHECK(offsetof(strata_plan_params, device) == offsetof(strata_plan_params, reserved) + sizeof(int32_t));
    CHECK(offsetof(strata_plan_params, device) == 56);
    CHECK(strata_model_plan_json(NULL, &params, NULL, 0, &needed) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(strata_last_error(), "model") != NULL);
}

/* strata_session_params.device, appended after the first release. The fixture's architecture
 * ("fixture") runs nowhere, so a session that gets past the parameters is UNSUPPORTED. */
static void test_session_device(strata_model* model) {
    strata_session_params params;
    strata_session* session = NULL;
    strata_session_default_params(&params);
    CHECK(params.struct_size == sizeof params && params.device == STRATA_DEVICE_CPU);
    CHECK(offsetof(strata_session_params, device) == 32);
    params.device = 7;
    CHECK(strata_session_create(model, &params, &session) == STRATA_ERR_INVALID_ARGUMENT && session == NULL);
    CHECK(strstr(strata_last_error(), "device") != NULL);
    /* A caller built before `device` existed: its struct ends before it, whatever lies beyond. */
    params.struct_size = offsetof(strata_session_params, device);
    CHECK(strata_session_create(model, &params, &session) == STRATA_ERR_UNSUPPORTED && session == NULL);
    params.struct_size = sizeof params;
    params.device = STRATA_DEVICE_CUDA;
    CHECK(strata_session_create(model, &params, &session) == STRATA_ERR_UNSUPPORTED && session == NULL);
    CHECK(strlen(strata_last_error()) > 0);
}

/* strata_session_params.n_seq, appended after device, and the many-sequence calls: argument
 * checks only (the fixture model runs nowhere; tests/cpp and tests/python run them). */
static void test_session_n_seq(strata_model* model) {
    strata_session_params params;
    strata_session* session = NULL;
    strata_seq_tokens entry;
    int32_t n = 0, token = 0;
    int64_t past = 0;
    const float* logits = NULL;
    strata_session_default_params(&params);
    CHECK(params.n_seq == 1 && offsetof(strata_session_params, n_seq) == 36);
    params.n_seq = -2;
    CHECK(strata_session_create(model, &params, &session) == STRATA_ERR_INVALID_ARGUMENT && session == NULL);
    CHECK(strstr(strata_last_error(), "n_seq") != NULL);
    params.n_seq = 2;
    params.device = STRATA_DEVICE_CUDA;
    CHECK(strata_session_create(model, &params, &session) == STRATA_ERR_UNSUPPORTED && session == NULL);
    entry.seq = 0;
    entry.tokens = &token;
    entry.n_tokens = 1;
    CHECK(strata_session_decode_batch(NULL, &entry, 1) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_n_seq(NULL, &n) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_logits(NULL, 0, &logits) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_n_past(NULL, 0, &past) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_reset(NULL, 0) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_truncate(NULL, 0, 0) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_set_sampling(NULL, 0, NULL) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_session_seq_sample_top(NULL, 0, &token, 0, NULL, NULL) == STRATA_ERR_INVALID_ARGUMENT);
}

/* strata_plan_params.device, appended after the first release: the fixture's architecture has
 * no plan, so a query that gets past the parameters is UNSUPPORTED. */
static void test_plan_device(strata_model* model) {
    strata_plan_params params;
    size_t needed = 0;
    strata_plan_default_params(&params);
    params.device = 7;
    CHECK(strata_model_plan_json(model, &params, NULL, 0, &needed) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strstr(strata_last_error(), "device") != NULL);
    /* A caller built before `device` existed: its struct ends before it, whatever lies beyond. */
    params.reserved = 12345;
    params.struct_size = offsetof(strata_plan_params, device);
    CHECK(strata_model_plan_json(model, &params, NULL, 0, &needed) == STRATA_ERR_UNSUPPORTED);
    CHECK(strstr(strata_last_error(), "device") == NULL);
    params.struct_size = offsetof(strata_plan_params, device) - 1;
    CHECK(strata_model_plan_json(model, &params, NULL, 0, &needed) == STRATA_ERR_INVALID_ARGUMENT);
}

/* strata_worker_params.device, appended after tls_ca_file. The fixture's architecture runs
 * nowhere, so a worker that gets past its parameters is UNSUPPORTED for that reason: an unknown
 * device is refused by name first; CUDA without a usable GPU is refused naming CUDA first; a
 * caller whose struct ends before `device` gets the CPU, whatever lies beyond. */
static void test_worker_device(strata_model* model) {
    strata_worker_params params;
    strata_worker* worker = NULL;
    strata_status st;
    strata_worker_default_params(&params);
    CHECK(params.struct_size == sizeof params && params.device == STRATA_DEVICE_CPU);
    CHECK(offsetof(strata_worker_params, device) == offsetof(strata_worker_params, tls_ca_file) + sizeof(char*));
    params.device = 7;
    st = strata_worker_create(model, &params, &worker);
    if (st == STRATA_ERR_UNSUPPORTED && strstr(strata_last_error(), "pipeline")) return; /* no pipeline support */
    CHECK(st == STRATA_ERR_INVALID_ARGUMENT && worker == NULL);
    CHECK(strstr(strata_last_error(), "device") != NULL);
    params.device = STRATA_DEVICE_CUDA;
    CHECK(strata_worker_create(model, &params, &worker) == STRATA_ERR_UNSUPPORTED && worker == NULL);
    CHECK(strstr(strata_last_error(), "CUDA") != NULL || strstr(strata_last_error(), "fixture") != NULL);
    params.struct_size = offsetof(strata_worker_params, device);
    CHECK(strata_worker_create(model, &params, &worker) == STRATA_ERR_UNSUPPORTED && worker == NULL);
    CHECK(strstr(strata_last_error(), "CUDA") == NULL && strstr(strata_last_error(), "device") == NULL);
}

/* The transport fields appended to both params structs, and strata_transport_available. */
static void test_transports(strata_model* model) {
    strata_worker_params params;
    strata_worker* worker = NULL;
    strata_status st;
    st = strata_transport_available("tcp");
    if (st == STRATA_ERR_UNSUPPORTED) return; /* no pipeline support in this build */
    CHECK(st == STRATA_OK);
    st = strata_transport_available("rdma");
    CHECK(st == STRATA_OK || (st == STRATA_ERR_UNSUPPORTED && strstr(strata_last_error(), "UCX") != NULL));
    CHECK(strata_transport_available("nccl") == STRATA_ERR_UNSUPPORTED && strstr(strata_last_error(), "nccl") != NULL);
    CHECK(strata_transport_available("pigeon") == STRATA_ERR_INVALID_ARGUMENT &&
          strstr(strata_last_error(), "pigeon") != NULL);
    CHECK(strata_transport_available(NULL) == STRATA_ERR_INVALID_ARGUMENT);

    strata_worker_default_params(&params);
    CHECK(params.transport == NULL && params.rdma_mtu == 0);
    CHECK(offsetof(strata_worker_params, transport) > offsetof(strata_worker_params, device));
    CHECK(offsetof(strata_pipeline_params, transport) > offsetof(strata_pipeline_params, tls_ca_file));
    params.transport = "pigeon";
    CHECK(strata_worker_create(model, &params, &worker) == STRATA_ERR_INVALID_ARGUMENT && worker == NULL);
    CHECK(strstr(strata_last_error(), "pigeon") != NULL);
    params.transport = "rdma";
    params.rdma_mtu = 1500;
    CHECK(strata_worker_create(model, &params, &worker) == STRATA_ERR_INVALID_ARGUMENT && worker == NULL);
    CHECK(strstr(strata_last_error(), "mtu 1500") != NULL);
    /* A caller built before `transport` existed: whatever lies beyond its struct is not read. */
    params.struct_size = offsetof(strata_worker_params, transport);
    CHECK(strata_worker_create(model, &params, &worker) == STRATA_ERR_UNSUPPORTED && worker == NULL);
    CHECK(strstr(strata_last_error(), "mtu") == NULL);
}

static void test_reading_the_fixture_model(void) {
    char path[1024];
    const char* paths[1];
    strata_model* model = NULL;
    int64_t i64 = 0;
    uint64_t u64 = 0, count = 0, needed = 0;
    double f = 0;
    const char* s = NULL;
    size_t len = 0, n = 0, index = 0;
    strata_value_type type, elem;
    strata_tensor_info info;
    float* values;
    char hex[65], json[64];

    fixture_path(path, sizeof path, "tiny-model.gguf");
    paths[0] = path;
    CHECK(strata_model_open(paths, 1, NULL, &model) == STRATA_OK);
    if (!model) return;

    CHECK(strata_model_metadata_count(model, &n) == STRATA_OK && n == 35);
    CHECK(strata_model_metadata_string(model, "general.name", &s, &len) == STRATA_OK && len == 10 &&
          memcmp(s, "tiny-model", 10) == 0);
    CHECK(strata_model_metadata_int(model, "fx.i64", &i64) == STRATA_OK && i64 == INT64_MIN);
    CHECK(strata_model_metadata_uint(model, "fx.u64", &u64) == STRATA_OK && u64 == UINT64_MAX);
    CHECK(strata_model_metadata_int(model, "fx.u64", &i64) == STRATA_ERR_TYPE_MISMATCH);
    CHECK(strata_model_metadata_float(model, "fx.f32", &f) == STRATA_OK && (float)f == 3.14159274f);
    CHECK(strata_model_metadata_int(model, "no.such.key", &i64) == STRATA_ERR_NOT_FOUND);
    CHECK(strata_model_metadata_type(model, "fx.arr_str", &type, &elem, &count) == STRATA_OK &&
          type == STRATA_VALUE_ARRAY && elem == STRATA_VALUE_STRING && count > 3);
    CHECK(strata_model_metadata_array_string(model, "fx.arr_str", 0, &s, &len) == STRATA_OK && len == 5 &&
          memcmp(s, "alpha", 5) == 0);
    CHECK(strata_model_metadata_array_int(model, "fx.arr_i32", 3, &i64) == STRATA_OK && i64 == 2147483647);
    CHECK(strata_model_metadata_array_int(model, "fx.arr_i32", 99, &i64) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_model_metadata_json(model, "fx.arr_u8", json, sizeof json, &len) == STRATA_OK &&
          strcmp(json, "[0,1,127,128,255]") == 0);
    CHECK(strata_model_metadata_json(model, "fx.arr_u8", json, 3, &len) == STRATA_ERR_BUFFER_TOO_SMALL && len == 18);

    CHECK(strata_model_tensor_count(model, &n) == STRATA_OK && n == 8);
    CHECK(strata_model_find_tensor(model, "ffn_down.iq1_s", &index) == STRATA_OK);
    info.struct_size = sizeof info;
    CHECK(strata_model_tensor_info(model, index, &info) == STRATA_OK && info.type == STRATA_TYPE_IQ1_S &&
          info.ne[0] == 512 && info.ne[1] == 5 && info.n_bytes == 500);
    CHECK(strata_model_tensor_read_f32(model, index, NULL, 0, &needed) == STRATA_ERR_BUFFER_TOO_SMALL &&
          needed == 2560);
    values = (float*)malloc(sizeof(float) * 2560);
    CHECK(strata_model_tensor_read_f32(model, index, values, 2560, &needed) == STRATA_OK);
    CHECK(isfinite(values[0]) && isfinite(values[2559]));
    free(values);
    CHECK(strata_model_find_tensor(model, "missing", &index) == STRATA_ERR_NOT_FOUND);
    CHECK(strata_model_shard_count(model, &n) == STRATA_OK && n == 1);
    CHECK(strata_model_identity(model, hex) == STRATA_OK && strlen(hex) == 64);
    test_session_device(model);
    test_session_n_seq(model);
    test_plan_device(model);
    test_worker_device(model);
    test_transports(model);
    strata_model_free(model);
}

static void test_broken_file_reports_its_name(void) {
    char path[1024];
    const char* paths[1];
    strata_model* model = NULL;
    fixture_path(path, sizeof path, "broken/bad_magic.gguf");
    paths[0] = path;
    CHECK(strata_model_open(paths, 1, NULL, &model) == STRATA_ERR_FORMAT && model == NULL);
    CHECK(strstr(strata_last_error(), "bad_magic.gguf") != NULL);
}

static void test_writing_and_reading_back(void) {
    strata_writer* writer = NULL;
    strata_model* model = NULL;
    strata_write_params params;
    float weights[512], back[512];
    int64_t ne[2] = {256, 2};
    uint32_t written = 0;
    size_t index = 0;
    uint64_t needed = 0;
    int i;
    char path[256], first[300];
    const char* paths[1];
    double err = 0, norm = 0;

    srand((unsigned)time(NULL));
    for (i = 0; i < 512; ++i) weights[i] = (float)sin(i * 0.37) * (1.0f + (float)(i % 7));
    snprintf(path, sizeof path, "/tmp/strata-c99-%d.gguf", (int)(rand() % 100000));
    CHECK(strata_writer_create(&writer) == STRATA_OK);
    CHECK(strata_writer_set_string(writer, "general.name", "c99", 3) == STRATA_OK);
    CHECK(strata_writer_set_string(writer, "general.name", "again", 5) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_writer_set_int(writer, "x.u8", STRATA_VALUE_U8, 300) == STRATA_ERR_INVALID_ARGUMENT);
    CHECK(strata_writer_add_tensor_f32(writer, "w", STRATA_TYPE_IQ1_S, 2, ne, weights, NULL) == STRATA_OK);
    strata_write_default_params(&params);
    params.n_shards = 2;
    CHECK(strata_writer_write(writer, path, &params, &written) == STRATA_OK && written == 2);
    strata_writer_free(writer);

    snprintf(first, sizeof first, "%.*s-00001-of-00002.gguf", (int)(strlen(path) - 5), path);
    paths[0] = first;
    CHECK(strata_model_open(paths, 1, NULL, &model) == STRATA_OK);
    if (!model) return;
    CHECK(strata_model_find_tensor(model, "w", &index) == STRATA_OK);
    CHECK(strata_model_tensor_read_f32(model, index, back, 512, &needed) == STRATA_OK);
    for (i = 0; i < 512; ++i) {
        err += (back[i] - weights[i]) * (back[i] - weights[i]);
        norm += weights[i] * weights[i];
    }
    CHECK(sqrt(err / norm) < 0.7); /* IQ1_S keeps ~1.5 bits per weight */
    strata_model_free(model);
    remove(first);
    snprintf(first, sizeof first, "%.*s-00002-of-00002.gguf", (int)(strlen(path) - 5), path);
    remove(first);
}

int main(void) {
    test_versions_and_errors();
    test_plan_params();
    test_reading_the_fixture_model();
    test_broken_file_reports_its_name();
    test_writing_and_reading_back();
    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("C99 ABI test passed\n");
    return 0;
}
