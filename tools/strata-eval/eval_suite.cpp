#include "eval_suite.hpp"

#include <cmath>
#include <fstream>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace eval {

namespace {

using json = nlohmann::json;

// Large enough for any real task; a bigger line is refused rather than parsed.
constexpr size_t kMaxLineBytes = 4 << 20;
constexpr size_t kMaxTasks = 100000;

// HumanEval's own stops: the completion ends where the next top-level statement begins.
const std::vector<std::string> kCodeStops = {"\ndef ", "\nclass ", "\nif __name__", "\nprint(", "\n#"};

struct LineError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::string text_field(const json& t, const char* key, bool required) {
    auto it = t.find(key);
    if (it == t.end()) {
        if (required) throw LineError(std::string("missing \"") + key + "\"");
        return "";
    }
    if (it->is_number_integer() && std::string(key) == "answer") return it->dump();  // "answer": 42
    if (it->is_number_float() && std::string(key) == "answer") return it->dump();
    if (!it->is_string()) throw LineError(std::string("\"") + key + "\" must be a string");
    return it->get<std::string>();
}

std::optional<double> number_field(const json& t, const char* key, double lo, double hi) {
    auto it = t.find(key);
    if (it == t.end()) return std::nullopt;
    if (!it->is_number() || !(it->get<double>() >= lo && it->get<double>() <= hi))
        throw LineError(std::string("\"") + key + "\" must be a number from " + json(lo).dump() + " to " + json(hi).dump());
    return it->get<double>();
}

std::optional<int64_t> count_field(const json& t, const char* key, int64_t lo, int64_t hi) {
    auto it = t.find(key);
    if (it == t.end()) return std::nullopt;
    if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi || (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(hi)))
        throw LineError(std::string("\"") + key + "\" must be an integer from " + std::to_string(lo) + " to " +
                        std::to_string(hi));
    return it->get<int64_t>();
}

// GSM8K's answer field: the reasoning, then a last line "#### N"; N without its commas.
std::string gsm8k_answer(const std::string& answer) {
    const size_t mark = answer.rfind("####");
    if (mark == std::string::npos || answer.find('\n', mark) != std::string::npos)
        throw LineError("\"answer\" must end with a line \"#### N\" (GSM8K)");
    std::string n;
    for (char c : answer.substr(mark + 4))
        if (c != ',' && c != ' ' && c != '\t' && c != '\r') n.push_back(c);
    if (n.empty()) throw LineError("\"answer\" ends with \"####\" and no number (GSM8K)");
    return n;
}

Task parse_task(const std::string& line, const std::string& default_id) {
    json t;
    try {
        t = json::parse(line);
    } catch (const json::exception& e) {
        throw LineError(std::string("not JSON: ") + e.what());
    }
    if (!t.is_object()) throw LineError("expected a JSON object");
    Task task;
    const bool gsm8k = t.contains("question") && !t.contains("prompt");
    task.id = t.contains("id") ? text_field(t, "id", true) : text_field(t, "task_id", false);
    if (task.id.empty() && gsm8k) task.id = default_id;
    if (task.id.empty()) throw LineError("missing \"id\" (or HumanEval's \"task_id\")");
    task.kind = text_field(t, "kind", false);
    if (task.kind.empty()) task.kind = t.contains("entry_point") && t.contains("test") ? "code" : "math";
    if (gsm8k) {
        if (task.kind != "math") throw LineError("a GSM8K line (\"question\") is a math task, not \"" + task.kind + "\"");
        task.prompt = text_field(t, "question", true);
        if (task.prompt.empty()) throw LineError("\"question\" is empty");
        task.answer = gsm8k_answer(text_field(t, "answer", true));
    } else {
        task.prompt = text_field(t, "prompt", true);
    }
    if (task.kind == "math") {
        if (!gsm8k) task.answer = text_field(t, "answer", true);
        if (task.answer.empty()) throw LineError("\"answer\" is empty");
    } else if (task.kind == "code") {
        task.entry_point = text_field(t, "entry_point", true);
        task.test = text_field(t, "test", true);
        text_field(t, "canonical_solution", false);  // checked for its type only
        if (task.entry_point.empty()) throw LineError("\"entry_point\" is empty");
        task.stop = kCodeStops;
    } else {
        throw LineError("\"kind\" must be \"math\" or \"code\", got \"" + task.kind + "\"");
    }
    if (auto it = t.find("stop"); it != t.end()) {
        if (!it->is_array()) throw LineError("\"stop\" must be an array of strings");
        task.stop.clear();
        task.stop_from_suite = true;
        for (const json& s : *it) {
            if (!s.is_string() || s.get<std::string>().empty()) throw LineError("\"stop\" must hold non-empty strings");
            task.stop.push_back(s.get<std::string>());
        }
    }
    task.overrides.temperature = number_field(t, "temperature", 0, 100);
    task.overrides.top_p = number_field(t, "top_p", 0, 1);
    task.overrides.top_k = count_field(t, "top_k", 0, 1 << 30);
    task.overrides.max_tokens = count_field(t, "max_tokens", 1, 1 << 24);
    if (auto seed = count_field(t, "seed", 0, INT64_MAX)) task.overrides.seed = uint64_t(*seed);
    return task;
}

}  // namespace

Sampling Task::sampling(const Sampling& d) const {
    Sampling s = d;
    if (overrides.temperature) s.temperature = *overrides.temperature;
    if (overrides.top_p) s.top_p = *overrides.top_p;
    if (overrides.top_k) s.top_k = *overrides.top_k;
    if (overrides.seed) s.seed = *overrides.seed;
    if (overrides.max_tokens) s.max_tokens = *overrides.max_tokens;
    return s;
}

std::vector<Task> load_suite(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(path + ": cannot open the suite");
    std::vector<Task> tasks;
    std::set<std::string> ids;
    std::string line;
    size_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        if (line.size() > kMaxLineBytes)
            throw std::runtime_error(path + ":" + std::to_string(line_no) + ": line longer than " +
                                     std::to_string(kMaxLineBytes) + " bytes");
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        try {
            Task t = parse_task(line, path.substr(path.find_last_of('/') + 1) + ":" + std::to_string(line_no));
            if (!ids.insert(t.id).second) throw LineError("duplicate id \"" + t.id + "\"");
            tasks.push_back(std::move(t));
        } catch (const LineError& e) {
            throw std::runtime_error(path + ":" + std::to_string(line_no) + ": " + e.what());
        }
        if (tasks.size() > kMaxTasks) throw std::runtime_error(path + ": more than " + std::to_string(kMaxTasks) + " tasks");
    }
    if (in.bad()) throw std::runtime_error(path + ": read error");
    if (tasks.empty()) throw std::runtime_error(path + ": no tasks");
    return tasks;
}

}  // namespace eval
