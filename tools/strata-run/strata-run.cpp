// strata-run: generate text from a GGUF model on the CPU, streaming tokens as they come; alone,
// or as the head of a pipeline whose later layers run on strata-worker processes.
//
//   strata-run MODEL.gguf [MORE-SHARDS...] -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]
//              [--min-p P] [--repeat-penalty R] [--seed S] [--threads N] [--ctx N] [--kv f16|q8_0]
//              [--worker HOST:PORT ... [--layers A:B,C:D,...] [--key-file F] [--n-batch N]]
//              [--tls-ca F [--tls-cert F --tls-key F]]
//              [--report-json FILE]
//   strata-run MODEL.gguf --chat [--system TEXT] [--chat-format NAME|FILE] [-p FIRST-MESSAGE] [-n N] ...
//
// Ends with the actual counts and rates of this run (prompt tokens prefilled, tokens generated,
// prefill and decode tokens per second) and the sampling settings in force. Uses only strata.hpp.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/cli_args.hpp"
#include "common/cli_transport.hpp"
#include "common/cli_progress.hpp"
#include "strata/strata.hpp"

namespace {

struct Options {
    std::vector<std::string> paths;
    std::string prompt;
    bool have_prompt = false;
    strata::generate_options generate;
    strata::sampling_params sampling;
    strata::session_params session;
    strata::pipeline_params pipeline;
    std::string report_json;
    bool chat = false;            // --chat: an interactive conversation through the chat template
    std::string system;           // --system TEXT: a system message first
    bool have_system = false;
    std::string chat_format;      // --chat-format NAME|FILE: overrides the model's template
};

const char* kUsage =
    "usage: strata-run MODEL.gguf [MORE-SHARDS...] -p PROMPT [-n N] [--temp T] [--top-k K] [--top-p P]\n"
    "                  [--min-p P] [--repeat-penalty R] [--seed S] [--threads N] [--ctx N] [--kv f16|q8_0]\n"
    "                  [--device cpu|cuda]\n"
    "                  [--worker HOST:PORT ... [--layers A:B,C:D,...] [--key-file F] [--n-batch N]\n"
    "                   [--heartbeat-ms N] [--peer-timeout-ms N] [--wire f16|bf16|f32]] [--report-json FILE]\n"
    "       strata-run MODEL.gguf --chat [--system TEXT] [--chat-format NAME|FILE] [-p FIRST-MESSAGE] [-n N] ...\n"
    "--chat reads one user message per line from stdin (an empty line or EOF ends), renders the whole\n"
    "conversation with the model's chat template (or --chat-format: a built-in format name or a file\n"
    "of Jinja source) and streams each reply; -p is then the first user message, -n the most tokens\n"
    "of one reply.\n"
    "With --worker, this process is the head of a pipeline: it holds the first layers, each worker\n"
    "(strata-worker) the next range in the order given; --layers fixes the ranges (head first),\n"
    "otherwise they are planned from each stage's free memory.\n"
    "--device cuda runs the model entirely on the GPU (not with --worker: a pipeline head runs on the\n"
    "CPU; strata-worker --device cuda runs a worker's stages on its GPU).\n"
    "--tls-ca F runs every link inside TLS, the workers' certificates checked against CA F;\n"
    "--tls-cert F --tls-key F present the head's certificate to workers that require one.\n"
    "Pipeline links (the workers must serve the same transport):\n"
    STRATA_CLI_TRANSPORT_USAGE
    "Streams the generated text to stdout; the run's figures go to stderr.\n";

template <typename T>
T parse_number(const std::string& flag, const std::string& text) {
    if (const std::optional<T> v = cli::to_number<T>(text)) return *v;
    throw cli::usage_error(flag + " needs a number, got '" + text + "'");
}

Options parse_args(int argc, char** argv) {
    Options o;
    cli::TransportArgs transport;
    o.generate.max_tokens = 64;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] { return cli::value(argc, argv, i); };
        if (a == "-p" || a == "--prompt") { o.prompt = value(); o.have_prompt = true; }
        else if (a == "-n" || a == "--n-predict") o.generate.max_tokens = parse_number<int32_t>(a, value());
        else if (a == "--temp") o.sampling.temperature = parse_number<float>(a, value());
        else if (a == "--top-k") o.sampling.top_k = parse_number<int32_t>(a, value());
        else if (a == "--top-p") o.sampling.top_p = parse_number<float>(a, value());
        else if (a == "--min-p") o.sampling.min_p = parse_number<float>(a, value());
        else if (a == "--repeat-penalty") o.sampling.repeat_penalty = parse_number<float>(a, value());
        else if (a == "--seed") o.sampling.seed = parse_number<uint64_t>(a, value());
        else if (a == "--threads" || a == "-t") o.session.n_threads = parse_number<int32_t>(a, value());
        else if (a == "--ctx" || a == "-c") o.session.n_ctx = parse_number<int64_t>(a, value());
        else if (a == "--kv") {
            const std::string kv = value();
            if (kv == "f16") o.session.kv_type = STRATA_KV_F16;
            else if (kv == "q8_0") o.session.kv_type = STRATA_KV_Q8_0;
            else throw cli::usage_error("--kv must be f16 or q8_0, got '" + kv + "'");
        } else if (a == "--device") {
            const std::string d = value();
            if (d == "cpu") o.session.device = STRATA_DEVICE_CPU;
            else if (d == "cuda") o.session.device = STRATA_DEVICE_CUDA;
            else throw cli::usage_error("--device must be cpu or cuda, got '" + d + "'");
        } else if (a == "--worker") o.pipeline.workers.push_back(value());
        else if (a == "--layers") o.pipeline.layers = value();
        else if (a == "--key-file") o.pipeline.key_file = value();
        else if (a == "--tls-ca") o.pipeline.tls_ca_file = value();
        else if (a == "--tls-cert") o.pipeline.tls_cert_file = value();
        else if (a == "--tls-key") o.pipeline.tls_key_file = value();
        else if (a == "--n-batch") o.pipeline.n_batch = parse_number<int32_t>(a, value());
        else if (a == "--heartbeat-ms") o.pipeline.heartbeat_ms = parse_number<int32_t>(a, value());
        else if (a == "--peer-timeout-ms") o.pipeline.peer_timeout_ms = parse_number<int32_t>(a, value());
        else if (a == "--report-json") o.report_json = value();
        else if (a == "--chat") o.chat = true;
        else if (a == "--system") { o.system = value(); o.have_system = true; }
        else if (a == "--chat-format") o.chat_format = value();
        else if (a == "--wire") o.pipeline.wire_dtype = cli::wire_dtype(value());
        else if (cli::parse_transport_flag(argc, argv, i, transport)) continue;
        else if (a == "-h" || a == "--help") cli::help(kUsage);
        else if (a.size() > 1 && a[0] == '-') throw cli::usage_error("unknown option " + a);
        else o.paths.push_back(a);
    }
    o.pipeline.transport = transport.transport;
    o.pipeline.rdma_transports = transport.rdma_transports;
    o.pipeline.rdma_devices = transport.rdma_devices;
    o.pipeline.rdma_mtu = transport.rdma_mtu;
    o.pipeline.rdma_max_inline = transport.rdma_max_inline;
    o.pipeline.rdma_rx_queue_len = transport.rdma_rx_queue_len;
    o.pipeline.rdma_tx_queue_len = transport.rdma_tx_queue_len;
    if (o.paths.empty()) throw cli::usage_error("no model file given");
    if (!o.have_prompt && !o.chat) throw cli::usage_error("-p PROMPT is required (or --chat)");
    if (!o.chat && (o.have_system || !o.chat_format.empty()))
        throw cli::usage_error("--system and --chat-format need --chat");
    if (o.pipeline.workers.empty() && (!o.pipeline.layers.empty() || !o.pipeline.key_file.empty()))
        throw cli::usage_error("--layers and --key-file need at least one --worker");
    if (o.pipeline.workers.empty() && !(o.pipeline.tls_ca_file + o.pipeline.tls_cert_file).empty())
        throw cli::usage_error("--tls-ca and --tls-cert need at least one --worker");
    if (!o.pipeline.workers.empty() && o.session.device != STRATA_DEVICE_CPU)
        throw cli::usage_error("--device cuda runs one process; a pipeline head (--worker) runs on the CPU");
    if (o.pipeline.tls_cert_file.empty() != o.pipeline.tls_key_file.empty())
        throw cli::usage_error("--tls-cert and --tls-key go together");
    if (!o.pipeline.tls_cert_file.empty() && o.pipeline.tls_ca_file.empty())
        throw cli::usage_error("--tls-cert needs --tls-ca (the CA of the workers' certificates)");
    return o;
}

const char* stop_reason_name(int32_t reason) {
    switch (reason) {
        case STRATA_STOP_MAX_TOKENS: return "max tokens";
        case STRATA_STOP_END_OF_GENERATION: return "end of generation";
        case STRATA_STOP_STRING: return "stop string";
        case STRATA_STOP_CALLBACK: return "stopped by the caller";
        case STRATA_STOP_CONTEXT_FULL: return "context full";
        default: return "unknown";
    }
}

double per_second(int64_t n, double seconds) { return seconds > 0 ? double(n) / seconds : 0.0; }

// The run's figures as one JSON object: counts and times as measured, the rates derived from
// them beside them, the sampling settings, and for a pipeline its plan and link counters.
void write_report(const std::string& path, const strata_generate_result& r, const strata::session& s,
                  const strata::pipeline* pipe) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) throw strata::error(STRATA_ERR_IO, "cannot write " + path);
    std::fprintf(f,
                 "{\n  \"prompt_tokens\": %lld,\n  \"prefill_seconds\": %.9g,\n  \"prefill_tokens_per_second\": %.9g,\n"
                 "  \"generated_tokens\": %lld,\n  \"decode_seconds\": %.9g,\n  \"decode_tokens_per_second\": %.9g,\n"
                 "  \"stop_reason\": \"%s\",\n  \"n_past\": %lld,\n  \"n_ctx\": %lld,\n  \"sampling\": %s,\n"
                 "  \"pipeline\": %s,\n  \"pipeline_stats\": %s\n}\n",
                 (long long)r.n_prompt_tokens, r.prefill_seconds, per_second(r.n_prompt_tokens, r.prefill_seconds),
                 (long long)r.n_generated, r.decode_seconds, per_second(r.n_generated, r.decode_seconds),
                 stop_reason_name(r.stop_reason), (long long)s.n_past(), (long long)s.n_ctx(),
                 s.sampling_json().c_str(), pipe ? pipe->plan_json().c_str() : "null",
                 pipe ? pipe->stats_json().c_str() : "null");
    std::fclose(f);
}

// --- --chat ---

struct Message {
    std::string role, content;
};

// The conversation as the JSON the chat API takes. Bytes that are not valid UTF-8 (a reply cut
// inside a character, a console in another encoding) are written as U+FFFD.
std::string messages_json(const std::vector<Message>& messages) {
    nlohmann::json out = nlohmann::json::array();
    for (const Message& m : messages) out.push_back({{"role", m.role}, {"content", m.content}});
    return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// --chat-format: a built-in format name as it is, anything else the Jinja source in that file.
std::optional<std::string> chat_template_source(const std::string& format) {
    if (format.empty()) return std::nullopt;
    std::string names = std::string(",") + strata_chat_builtin_formats() + ",";
    if (names.find("," + format + ",") != std::string::npos) return format;
    std::ifstream f(format, std::ios::binary);
    if (!f)
        throw strata::error(STRATA_ERR_IO, "--chat-format '" + format + "' is neither a built-in format (" +
                                               strata_chat_builtin_formats() + ") nor a readable file");
    std::stringstream text;
    text << f.rdbuf();
    return text.str();
}

// One conversation: each turn renders the whole conversation, decodes only the tokens beyond
// those the session already holds when the new prompt extends them (otherwise it starts over),
// and generates until an end-of-generation token or -n tokens.
void run_chat(const Options& o, strata::model& m, strata::session& s) {
    const std::optional<std::string> source = chat_template_source(o.chat_format);
    const strata_vocab_info vocab = m.vocab();
    const std::string bos_text = vocab.bos >= 0 ? m.token_to_piece(vocab.bos) : std::string();
    std::vector<Message> conversation;
    if (o.have_system) conversation.push_back({"system", o.system});
    std::vector<int32_t> cached;  // the tokens in the session's KV cache
    std::optional<std::string> pending;
    if (o.have_prompt) pending = o.prompt;
    const int32_t max_tokens = o.generate.max_tokens > 0 ? o.generate.max_tokens : 256;
    while (true) {
        std::string line;
        if (pending) {
            line = *pending;
            pending.reset();
            std::printf("> %s\n", line.c_str());
        } else {
            std::printf("> ");
            std::fflush(stdout);
            if (!std::getline(std::cin, line) || line.empty()) break;
        }
        conversation.push_back({"user", line});
        std::string prompt;
        try {
            prompt = m.apply_chat_template(messages_json(conversation), true, source ? source->c_str() : nullptr);
        } catch (const strata::error& e) {
            if (e.status() == STRATA_ERR_NOT_FOUND && !source)
                throw strata::error(e.status(), "the model " + o.paths[0] +
                                                    " has no chat template (tokenizer.chat_template): pass "
                                                    "--chat-format NAME|FILE (built-in formats: " +
                                                    strata_chat_builtin_formats() + ")");
            throw;
        }
        std::vector<int32_t> tokens = m.tokenize(prompt, /*add_special=*/false, /*parse_special=*/true);
        if (vocab.add_bos && vocab.bos >= 0 && (bos_text.empty() || prompt.rfind(bos_text, 0) != 0))
            tokens.insert(tokens.begin(), vocab.bos);
        bool extends = cached.size() < tokens.size() && std::equal(cached.begin(), cached.end(), tokens.begin());
        if (!extends) {
            s.reset();
            cached.clear();
        }
        std::vector<int32_t> todo(tokens.begin() + static_cast<long>(cached.size()), tokens.end());
        int32_t token = s.decode_sample(todo);
        cached = tokens;
        std::vector<int32_t> reply;
        for (int32_t n = 0; n < max_tokens && !m.is_eog(token); ++n) {
            const std::string piece = m.token_to_piece(token);
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            reply.push_back(token);
            if (n + 1 == max_tokens || s.n_past() >= s.n_ctx()) break;
            cached.push_back(token);
            token = s.decode_sample({token});
        }
        std::printf("\n");
        conversation.push_back({"assistant", m.detokenize(reply, /*remove_special=*/true)});
    }
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = cli::parse_or_exit("strata-run", kUsage, [&] { return parse_args(argc, argv); });
    try {
        cli::ProgressLines progress("strata-run");  // hashing (a pipeline's identity), a GPU upload
        strata::model m(o.paths, progress.model_params());
        std::optional<strata::pipeline> pipe;
        if (!o.pipeline.workers.empty()) {
            strata::pipeline_params p = o.pipeline;
            p.n_ctx = o.session.n_ctx;
            p.n_threads = o.session.n_threads;
            p.kv_type = o.session.kv_type;
            pipe.emplace(m, p);
            std::fprintf(stderr, "pipeline plan:\n%s\n", pipe->plan_json().c_str());
        }
        strata::session s = pipe ? pipe->session() : strata::session(m, o.session);
        s.set_sampling(o.sampling);
        std::fprintf(stderr, "%s\n", s.plan().c_str());
        if (o.chat) {
            run_chat(o, m, s);
            return 0;
        }
        std::fwrite(o.prompt.data(), 1, o.prompt.size(), stdout);
        std::fflush(stdout);
        const auto r = s.generate(o.prompt, o.generate, [](int32_t, std::string_view piece) {
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
            return true;
        });
        std::printf("\n");
        std::fprintf(stderr,
                     "\nprompt tokens:    %lld (prefill %.3f s, %.1f tok/s)\n"
                     "generated tokens: %lld (decode %.3f s, %.1f tok/s)\n"
                     "stopped by:       %s\n"
                     "context:          %lld of %lld configured tokens used\n"
                     "sampling:         %s\n",
                     (long long)r.n_prompt_tokens, r.prefill_seconds, per_second(r.n_prompt_tokens, r.prefill_seconds),
                     (long long)r.n_generated, r.decode_seconds, per_second(r.n_generated, r.decode_seconds),
                     stop_reason_name(r.stop_reason), (long long)s.n_past(), (long long)s.n_ctx(),
                     s.sampling_json().c_str());
        if (pipe) std::fprintf(stderr, "pipeline links:\n%s\n", pipe->stats_json().c_str());
        if (!o.report_json.empty()) write_report(o.report_json, r, s, pipe ? &*pipe : nullptr);
    } catch (const strata::error& e) {
        std::cerr << "strata-run: " << e.what() << "\n";
        return 2;
    }
    return 0;
}
