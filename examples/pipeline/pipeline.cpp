// pipeline: one model split over three stages on loopback, all in this process: two workers
// (each serving a contiguous layer range, on its own thread) and the head (the embeddings and
// the first layers), which generates greedily through them and streams the text to stdout.
//
//   pipeline MODEL.gguf [PROMPT] [N_TOKENS]
//
// Across machines the same calls apply: run `strata-worker --listen HOST:PORT --model M` on each
// machine (it calls the strata_worker_* functions used below) and give the head their addresses.
// The worker side is the C API of strata.h (strata.hpp has no class for it); the head is strata.hpp.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "strata/strata.h"
#include "strata/strata.hpp"

namespace {

void check(strata_status status) {
    if (status != STRATA_OK) throw strata::error(status, strata_last_error());
}

// A worker serving layers [begin, end) of the model on a thread of this process, until stop().
class local_worker {
public:
    local_worker(strata::model& model, const char* name, int32_t begin, int32_t end) : name_(name) {
        strata_worker_params p;
        strata_worker_default_params(&p);
        p.listen = "127.0.0.1:0";  // any free port; loopback needs no pre-shared key
        p.layer_begin = begin;     // a fixed range: the head must ask for exactly this one
        p.layer_end = end;
        p.log = &local_worker::log;
        p.log_user_data = this;
        check(strata_worker_create(model.get(), &p, &handle_));
        uint16_t port = 0;
        if (const strata_status s = strata_worker_port(handle_, &port); s != STRATA_OK) {
            const strata::error e(s, strata_last_error());
            strata_worker_free(handle_);  // the destructor does not run for a throwing constructor
            throw e;
        }
        address_ = "127.0.0.1:" + std::to_string(port);
        thread_ = std::thread([this] { served_ = strata_worker_run(handle_); });  // blocks until stop
    }
    local_worker(const local_worker&) = delete;
    local_worker& operator=(const local_worker&) = delete;
    ~local_worker() {
        if (thread_.joinable()) {  // unwinding after an error: stop without throwing
            strata_worker_stop(handle_);
            thread_.join();
        }
        strata_worker_free(handle_);
    }

    const std::string& address() const { return address_; }

    // Stops serving (the heads are gone by then) and reports how the serving thread ended.
    void stop() {
        check(strata_worker_stop(handle_));
        thread_.join();
        check(served_);
    }

private:
    static void log(const char* line, void* user) {
        std::fprintf(stderr, "[%s] %s\n", static_cast<local_worker*>(user)->name_, line);
    }
    const char* name_;
    strata_worker* handle_ = nullptr;
    std::string address_;
    std::thread thread_;
    strata_status served_ = STRATA_OK;
};

int run(const std::string& path, const std::string& prompt, int32_t max_tokens) {
    // One model handle (the file mapped once) for all three stages: each uses its layers' tensors.
    strata::model model(path);
    const std::string arch(model.get_string("general.architecture"));
    const int32_t n_layer = int32_t(model.get_uint(arch + ".block_count"));
    if (n_layer < 3) {
        std::fprintf(stderr, "%s has %d layers: three stages need at least 3\n", path.c_str(), n_layer);
        return 1;
    }
    // Contiguous ranges covering every layer, in order: head [0, a), workers [a, b) and [b, n).
    const int32_t a = n_layer / 3, b = 2 * n_layer / 3;
    local_worker first(model, "worker 1", a, b);
    local_worker second(model, "worker 2", b, n_layer);

    strata::pipeline_params pp;
    pp.workers = {first.address(), second.address()};  // in stage order
    pp.layers = "0:" + std::to_string(a) + "," + std::to_string(a) + ":" + std::to_string(b) + "," +
                std::to_string(b) + ":" + std::to_string(n_layer);
    pp.n_ctx = int64_t(model.tokenize(prompt).size()) + max_tokens;
    pp.wire_dtype = STRATA_WIRE_F32;  // f32 hidden states: the same logits as one process would give
    std::fprintf(stderr, "stages %s over %s and %s\n", pp.layers.c_str(), first.address().c_str(),
                 second.address().c_str());
    {
        strata::pipeline pipe(model, pp);  // connects, checks identity and ranges, allocates
        strata::session session = pipe.session();
        strata::sampling_params greedy;
        greedy.temperature = 0.0f;
        session.set_sampling(greedy);

        // generate() prefills the prompt through every stage, then draws each token on the last
        // stage: only token ids travel back to the head.
        strata::generate_options go;
        go.max_tokens = max_tokens;
        const strata_generate_result r = session.generate(prompt, go, [](int32_t, std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            return true;  // keep going
        });
        std::printf("\n");
        // pipe.stats_json() has each link's bytes and round-trip latencies; pipe.plan_json() the plan.
        std::fprintf(stderr, "prompt %lld tokens, generated %lld\n", (long long)r.n_prompt_tokens,
                     (long long)r.n_generated);
    }  // the session, then the pipeline: the head says goodbye to the workers
    second.stop();
    first.stop();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
        return 2;
    }
    const std::string prompt = argc > 2 ? argv[2] : "Hello, my name is";
    long max_tokens = 16;
    if (argc > 3) {
        char* end = nullptr;
        max_tokens = std::strtol(argv[3], &end, 10);
        if (end == argv[3] || *end != '\0' || max_tokens < 1 || max_tokens > 4096) {
            std::fprintf(stderr, "%s: N_TOKENS must be a number in [1, 4096], got '%s'\n", argv[0], argv[3]);
            return 2;
        }
    }
    try {
        return run(argv[1], prompt, int32_t(max_tokens));
    } catch (const strata::error& e) {
        // STRATA_ERR_UNSUPPORTED here: a library built without the TCP transport.
        std::fprintf(stderr, "%s: %s: %s\n", argv[0], e.status_name(), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
}
