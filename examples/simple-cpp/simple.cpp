// simple-cpp: the smallest complete program on the C++ API (include/strata/strata.hpp): open a
// GGUF model, tokenize a prompt, generate greedily and stream the text to stdout.
//
//   simple-cpp MODEL.gguf [PROMPT] [N_TOKENS]
//
// strata.hpp is header-only over the C ABI: every handle is an RAII object (freed when it goes
// out of scope, in the right order), and every failed call throws strata::error carrying the
// status and the library's message. Build: see CMakeLists.txt next to this file, or by hand
//   c++ -std=c++17 simple.cpp -I include -L build/lib -lstrata
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "strata/strata.hpp"

namespace {

struct Options {
    std::string model_path;
    std::string prompt = "Hello, my name is";
    int max_tokens = 32;
};

// argv as Options; false (after saying why) when it is not a valid command line.
bool parse_args(int argc, char** argv, Options& o) {
    if (argc < 2 || argc > 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf [PROMPT] [N_TOKENS]\n", argv[0]);
        return false;
    }
    o.model_path = argv[1];
    if (argc > 2) o.prompt = argv[2];
    if (argc > 3) {
        char* end = nullptr;
        const long n = std::strtol(argv[3], &end, 10);
        if (end == argv[3] || *end != '\0' || n < 1 || n > 4096) {
            std::fprintf(stderr, "%s: N_TOKENS must be a number in [1, 4096], got '%s'\n", argv[0], argv[3]);
            return false;
        }
        o.max_tokens = int(n);
    }
    return true;
}

void print_piece(const std::string& piece) {
    // Pieces are raw bytes (a multi-byte character may span tokens): written as they come.
    std::fwrite(piece.data(), 1, piece.size(), stdout);
    std::fflush(stdout);
}

int run(const Options& o) {
    std::fprintf(stderr, "strata %s\n", strata::version().c_str());

    // The model: memory-mapped; a split model's other shards are found next to the first.
    strata::model model(o.model_path);

    // The prompt as token ids; add_special: the BOS token where the vocabulary asks for one.
    const std::vector<int32_t> prompt = model.tokenize(o.prompt, /*add_special=*/true);
    if (prompt.empty()) {
        std::fprintf(stderr, "the prompt gave no tokens\n");
        return 1;
    }
    std::fprintf(stderr, "prompt: %zu tokens\n", prompt.size());

    // One sequence with its KV cache; the context must hold the prompt and every new token.
    strata::session_params sp;
    sp.n_ctx = int64_t(prompt.size()) + o.max_tokens;
    strata::session session(model, sp);

    // Greedy: temperature 0 always takes the most likely token.
    strata::sampling_params greedy;
    greedy.temperature = 0.0f;
    session.set_sampling(greedy);

    // decode_sample runs the tokens through the model and draws the next one. The first call
    // prefills the whole prompt; each later call feeds back the token just drawn.
    std::vector<int32_t> input = prompt;
    int generated = 0;
    while (generated < o.max_tokens) {
        const int32_t token = session.decode_sample(input);
        if (model.is_eog(token)) break;  // end of generation (EOS, end of turn, ...)
        print_piece(model.token_to_piece(token));
        ++generated;
        input.assign(1, token);
    }
    std::printf("\n");
    std::fprintf(stderr, "generated %d tokens, %lld in the context\n", generated, (long long)session.n_past());
    return 0;  // session, then model, are freed as they leave scope (a session before its model)
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    if (!parse_args(argc, argv, o)) return 2;
    try {
        return run(o);
    } catch (const strata::error& e) {
        // The status name ("STRATA_ERR_IO", ...) and the library's message, which names the file,
        // key or argument at fault.
        std::fprintf(stderr, "%s: %s: %s\n", argv[0], e.status_name(), e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
        return 1;
    }
}
