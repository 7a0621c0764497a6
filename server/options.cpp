// options.cpp: parsing strata-server's command line (the mechanics in tools/common/cli_args.hpp).
#include "options.hpp"

#include <fstream>
#include <sstream>

#include "common/cli_args.hpp"
#include "strata/strata.h"

namespace server {
namespace {

constexpr const char* kTool = "strata-server";
constexpr const char* kUsage =
    "usage: strata-server --model FILE [MORE-SHARDS...] [--host H] [--port P] [--parallel N] [--ctx N]\n"
    "                     [--threads N] [--api-key KEY | --api-key-file F] [--worker ADDR ...]\n"
    "                     [--worker-key-file F] [--layers A:B,...] [--queue N] [--timeout-s S]\n"
    "                     [--max-tokens-limit N] [--chat-format NAME|FILE] [--prefill-chunk N]\n"
    "                     [--max-body-bytes N] [--http-threads N] [--drain-s S] [--alias NAME]\n"
    "\n"
    "An OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions (stream: true\n"
    "as server-sent events), GET /v1/models, GET /health, GET /metrics, POST /tokenize, POST /detokenize.\n"
    "\n"
    "  --host H              address to listen on (default 127.0.0.1)\n"
    "  --port P              port (default 8080; 0: any free port)\n"
    "  --parallel N          request slots decoded together (default 1)\n"
    "  --ctx N               context per slot in tokens (default: the model's, at most 4096)\n"
    "  --threads N           compute threads (default: every hardware thread)\n"
    "  --api-key KEY         requests must send 'Authorization: Bearer KEY' (401 otherwise)\n"
    "  --api-key-file F      the key is the first line of F\n"
    "  --worker ADDR         a pipeline stage HOST:PORT (repeat, in stage order); one pipeline per slot\n"
    "  --worker-key-file F   the workers' pre-shared key\n"
    "  --worker-transport T  what the pipeline links run on: tcp (default) or rdma (UCX; the workers\n"
    "                        must serve rdma: strata-worker --transport rdma)\n"
    "  --layers A:B,...      the pipeline's layer ranges, head first (default: planned)\n"
    "  --queue N             requests that may wait for a slot; more get 503 (default 64)\n"
    "  --timeout-s S         per-request deadline; 0: none (default 600). A request past it ends:\n"
    "                        504 when not streamed, an error event when streamed\n"
    "  --max-tokens-limit N  largest max_tokens accepted (default: what the context allows)\n"
    "  --chat-format NAME|FILE  chat template: a built-in format or a Jinja file (default: the model's)\n"
    "  --prefill-chunk N     prompt tokens in one batched step, all slots together (default 32):\n"
    "                        bounds how long a decoding slot's next token waits for new prompts\n"
    "  --max-body-bytes N    larger request bodies get 413 (default 1048576)\n"
    "  --http-threads N      threads serving HTTP (default 2)\n"
    "  --drain-s S           on SIGTERM/SIGINT, how long in-flight requests may finish (default 30)\n"
    "  --alias NAME          the model id in /v1/models (default: the file name)\n"
    "\n"
    "Prints 'strata-server: listening on http://HOST:PORT' on stdout once bound; logs go to stderr.\n";

template <typename T>
T integer(const std::string& flag, const std::string& text, T lo, T hi) {
    return T(cli::number(flag, text, double(lo), double(hi)));
}

std::string read_file(const std::string& flag, const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw cli::usage_error(flag + ": cannot read '" + path + "'");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

bool is_builtin_format(const std::string& name) {
    std::stringstream list(strata_chat_builtin_formats());
    for (std::string item; std::getline(list, item, ',');)
        if (item == name) return true;
    return false;
}

Options parse(int argc, char** argv) {
    Options o;
    std::string key_file;
    bool key_given = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a == "--model") {
            while (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0) o.model_paths.push_back(argv[++i]);
            if (o.model_paths.empty()) throw cli::usage_error("--model needs at least one file");
        } else if (a == "--host") o.host = value();
        else if (a == "--port") o.port = integer<uint16_t>(a, value(), 0, 65535);
        else if (a == "--parallel") o.parallel = integer<int32_t>(a, value(), 1, 256);
        else if (a == "--ctx") o.n_ctx = integer<int64_t>(a, value(), 0, int64_t(1) << 24);
        else if (a == "--threads") o.n_threads = integer<int32_t>(a, value(), 0, 1024);
        else if (a == "--api-key") {
            o.api_key = value();
            key_given = true;
        } else if (a == "--api-key-file") key_file = value();
        else if (a == "--worker") o.workers.push_back(value());
        else if (a == "--worker-key-file") o.worker_key_file = value();
        else if (a == "--worker-transport") o.worker_transport = value();
        else if (a == "--layers") o.layers = value();
        else if (a == "--queue") o.queue_limit = integer<int32_t>(a, value(), 0, 1 << 20);
        else if (a == "--timeout-s") o.timeout_s = cli::number(a, value(), 0, 1e7);
        else if (a == "--max-tokens-limit") o.max_tokens_limit = integer<int32_t>(a, value(), 1, 1 << 24);
        else if (a == "--chat-format") o.chat_format = value();
        else if (a == "--prefill-chunk") o.prefill_chunk = integer<int32_t>(a, value(), 1, 1 << 16);
        else if (a == "--max-body-bytes") o.max_body_bytes = integer<uint64_t>(a, value(), 64, 1ull << 32);
        else if (a == "--http-threads") o.http_threads = integer<int32_t>(a, value(), 1, 64);
        else if (a == "--drain-s") o.drain_s = cli::number(a, value(), 0, 86400);
        else if (a == "--alias") o.model_alias = value();
        else throw cli::usage_error("unknown argument '" + a + "'");
    }
    if (o.model_paths.empty()) throw cli::usage_error("--model FILE is required");
    if (key_given && !key_file.empty()) throw cli::usage_error("--api-key and --api-key-file exclude each other");
    if (!key_file.empty()) {
        std::string text = read_file("--api-key-file", key_file);
        o.api_key = text.substr(0, text.find_first_of("\r\n"));
        if (o.api_key.empty()) throw cli::usage_error("--api-key-file: '" + key_file + "' holds no key");
    }
    if (key_given && o.api_key.empty()) throw cli::usage_error("--api-key needs a non-empty key");
    if (o.workers.empty() && (!o.worker_key_file.empty() || !o.worker_transport.empty() || !o.layers.empty()))
        throw cli::usage_error("--worker-key-file, --worker-transport and --layers need at least one --worker");
    if (!o.chat_format.empty()) {
        o.chat_format_is_name = is_builtin_format(o.chat_format);
        if (!o.chat_format_is_name) o.chat_format = read_file("--chat-format (not a built-in format)", o.chat_format);
    }
    return o;
}

}  // namespace

Options parse_options(int argc, char** argv) {
    return cli::parse_or_exit(kTool, kUsage, [&] { return parse(argc, argv); });
}

}  // namespace server
