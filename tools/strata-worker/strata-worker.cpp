// strata-worker: serve a layer range of a GGUF model to pipeline heads (strata-run --worker,
// strata_pipeline_create) over TCP, until SIGINT or SIGTERM.
//
//   strata-worker --listen HOST:PORT --model SHARD [SHARD...] [--layers A:B] [--key-file F]
//                 [--allow-no-key] [--device cpu|cuda] [--threads N] [--memory-budget BYTES]
//                 [--heartbeat-ms N] [--peer-timeout-ms N] [--tls-cert F --tls-key F [--tls-ca F]]
//
// Prints "listening on HOST:PORT" (the bound port, also when 0 was asked) on stdout as soon as
// the socket is bound; everything else (connections, handshakes, plans, closes) goes to stderr.
// Uses only the public C header.
#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "common/cli_args.hpp"
#include "common/cli_progress.hpp"
#include "common/cli_transport.hpp"
#include "strata/strata.h"

namespace {

const char* kUsage =
    "usage: strata-worker --listen HOST:PORT --model SHARD [SHARD...] [--layers A:B] [--key-file F]\n"
    "                     [--allow-no-key] [--device cpu|cuda] [--threads N] [--memory-budget BYTES]\n"
    "                     [--heartbeat-ms N] [--peer-timeout-ms N] [--tls-cert F --tls-key F [--tls-ca F]]\n"
    "                     [--transport tcp|tls|rdma] [--rdma-... settings]\n"
    "Serves a layer range of the model to pipeline heads until SIGINT or SIGTERM.\n"
    "  --listen HOST:PORT     address to listen on (port 0: any free port)\n"
    "  --model SHARD...       the model's GGUF shards (the same files the head opens)\n"
    "  --layers A:B           serve only layers [A, B) (default: whatever range the head assigns)\n"
    "  --key-file F           pre-shared key the head must prove (required off loopback ...\n"
    "  --allow-no-key         ... unless this is given)\n"
    "  --device cpu|cuda      where the stages' layers run (default cpu); cuda: on the GPU, which must\n"
    "                         be usable when the worker starts\n"
    "  --threads N            compute threads (default: every hardware thread)\n"
    "  --memory-budget BYTES  memory a stage may plan with (default: the memory available; device\n"
    "                         memory with --device cuda)\n"
    "  --heartbeat-ms N       heartbeat interval (default 1000)\n"
    "  --peer-timeout-ms N    a head silent this long is gone, its sequence freed (default 5000)\n"
    "  --tls-cert F           TLS on every connection: this worker's certificate (PEM) ...\n"
    "  --tls-key F            ... and its private key (PEM); the key file is still needed off loopback\n"
    "  --tls-ca F             heads must present a certificate signed by this CA (mutual TLS)\n"
    STRATA_CLI_TRANSPORT_USAGE
    "Prints \"listening on HOST:PORT\" on stdout once bound; logs go to stderr.\n";

[[noreturn]] void library_error(const char* what) {
    std::fprintf(stderr, "strata-worker: %s: %s\n", what, strata_last_error());
    std::exit(1);
}

long long parse_integer(const std::string& flag, const std::string& text, long long min, long long max) {
    const std::optional<long long> v = cli::to_number<long long>(text);
    if (!v) throw cli::usage_error(flag + " needs an integer, got '" + text + "'");
    if (*v < min || *v > max)
        throw cli::usage_error(flag + " must be within [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + text);
    return *v;
}

struct Options {
    std::string listen;
    std::vector<std::string> shards;
    std::string key_file;
    std::string tls_cert, tls_key, tls_ca;
    cli::TransportArgs transport;
    strata_worker_params params;
};

Options parse_args(int argc, char** argv) {
    Options o;
    strata_worker_default_params(&o.params);
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "-h" || a == "--help") {
            cli::help(kUsage);
        } else if (a == "--listen") {
            o.listen = value();
        } else if (a == "--model") {
            while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) o.shards.emplace_back(argv[++i]);
            if (o.shards.empty()) throw cli::usage_error("--model needs at least one shard");
        } else if (a == "--layers") {
            const std::string v = value();
            const size_t colon = v.find(':');
            if (colon == std::string::npos) throw cli::usage_error("--layers must be A:B, got '" + v + "'");
            o.params.layer_begin = int32_t(parse_integer(a, v.substr(0, colon), 1, INT32_MAX));
            o.params.layer_end = int32_t(parse_integer(a, v.substr(colon + 1), 1, INT32_MAX));
            if (o.params.layer_end <= o.params.layer_begin) throw cli::usage_error("--layers A:B needs A < B, got '" + v + "'");
        } else if (a == "--key-file") {
            o.key_file = value();
        } else if (a == "--tls-cert") {
            o.tls_cert = value();
        } else if (a == "--tls-key") {
            o.tls_key = value();
        } else if (a == "--tls-ca") {
            o.tls_ca = value();
        } else if (cli::parse_transport_flag(argc, argv, i, o.transport)) {
        } else if (a == "--allow-no-key") {
            o.params.allow_no_key = 1;
        } else if (a == "--device") {
            const std::string v = value();
            if (v == "cpu") o.params.device = STRATA_DEVICE_CPU;
            else if (v == "cuda") o.params.device = STRATA_DEVICE_CUDA;
            else throw cli::usage_error("--device must be cpu or cuda, got '" + v + "'");
        } else if (a == "--threads") {
            o.params.n_threads = int32_t(parse_integer(a, value(), 0, 4096));
        } else if (a == "--memory-budget") {
            o.params.memory_budget = uint64_t(parse_integer(a, value(), 0, INT64_MAX));
        } else if (a == "--heartbeat-ms") {
            o.params.heartbeat_ms = int32_t(parse_integer(a, value(), 1, INT32_MAX));
        } else if (a == "--peer-timeout-ms") {
            o.params.peer_timeout_ms = int32_t(parse_integer(a, value(), 1, INT32_MAX));
        } else {
            throw cli::usage_error("unknown argument '" + a + "'");
        }
    }
    if (o.listen.empty()) throw cli::usage_error("--listen HOST:PORT is required");
    if (o.shards.empty()) throw cli::usage_error("--model SHARD is required");
    o.params.listen = o.listen.c_str();
    if (!o.key_file.empty()) o.params.key_file = o.key_file.c_str();
    if (o.tls_cert.empty() != o.tls_key.empty()) throw cli::usage_error("--tls-cert and --tls-key go together");
    if (!o.tls_ca.empty() && o.tls_cert.empty()) throw cli::usage_error("--tls-ca needs --tls-cert and --tls-key");
    if (!o.tls_cert.empty()) {
        o.params.tls_cert_file = o.tls_cert.c_str();
        o.params.tls_key_file = o.tls_key.c_str();
    }
    if (!o.tls_ca.empty()) o.params.tls_ca_file = o.tls_ca.c_str();
    return o;
}

// "HOST" of "HOST:PORT" ("[::1]" of "[::1]:7001").
std::string host_of(const std::string& listen) { return listen.substr(0, listen.rfind(':')); }

}  // namespace

int main(int argc, char** argv) {
    Options o = cli::parse_or_exit("strata-worker", kUsage, [&] { return parse_args(argc, argv); });

    // SIGINT and SIGTERM are taken by one thread with sigwait: blocked here, before any other
    // thread exists, so that every thread inherits the mask and none runs a handler.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    cli::apply_transport(o.transport, o.params);
    std::vector<const char*> paths;
    for (const auto& s : o.shards) paths.push_back(s.c_str());
    strata_model* model = nullptr;
    cli::ProgressLines progress("strata-worker");  // hashing for the identity, a GPU stage's upload
    strata_model_params model_params;
    strata_model_default_params(&model_params);
    model_params.progress = cli::ProgressLines::report;
    model_params.progress_user_data = &progress;
    if (strata_model_open(paths.data(), paths.size(), &model_params, &model) != STRATA_OK)
        library_error("cannot open the model");
    strata_worker* worker = nullptr;
    if (strata_worker_create(model, &o.params, &worker) != STRATA_OK) library_error("cannot start the worker");
    uint16_t port = 0;
    if (strata_worker_port(worker, &port) != STRATA_OK) library_error("no port");
    std::printf("listening on %s:%u\n", host_of(o.listen).c_str(), unsigned(port));
    std::fflush(stdout);

    std::atomic<bool> finished{false};
    std::thread signal_waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        if (finished) return;  // woken by main below: the worker already returned
        std::fprintf(stderr, "strata-worker: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
        strata_worker_stop(worker);
    });
    const strata_status served = strata_worker_run(worker);
    finished = true;
    pthread_kill(signal_waiter.native_handle(), SIGTERM);  // no-op for the waiter if it already returned
    signal_waiter.join();
    if (served != STRATA_OK) library_error("the worker failed");
    strata_worker_free(worker);
    strata_model_free(model);
    return 0;
}
