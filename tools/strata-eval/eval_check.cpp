#include "eval_check.hpp"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

#include "strata/strata.hpp"

namespace eval {

namespace {

using json = nlohmann::json;

bool is_digit(char c) { return c >= '0' && c <= '9'; }

std::string lower(std::string s) {
    for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// The first number-like run in `text` ("-1,234.5"), or "".
std::string first_number(const std::string& text) {
    for (size_t i = 0; i < text.size(); ++i) {
        if (!is_digit(text[i])) continue;
        size_t begin = i;
        if (begin > 0 && (text[begin - 1] == '-' || text[begin - 1] == '+')) --begin;
        size_t end = i;
        while (end < text.size() && (is_digit(text[end]) || text[end] == ',' ||
                                     (text[end] == '.' && end + 1 < text.size() && is_digit(text[end + 1]))))
            ++end;
        return text.substr(begin, end - begin);
    }
    return "";
}

std::string last_number(const std::string& text) {
    std::string last;
    for (size_t i = 0; i < text.size();) {
        if (!is_digit(text[i])) {
            ++i;
            continue;
        }
        std::string n = first_number(text.substr(i > 0 && (text[i - 1] == '-' || text[i - 1] == '+') ? i - 1 : i));
        last = n;
        i += std::max<size_t>(1, n.size());
    }
    return last;
}

}  // namespace

std::string normalize_number(std::string t) {
    t.erase(std::remove_if(t.begin(), t.end(), [](char c) { return c == ',' || c == '$' || c == ' '; }), t.end());
    while (!t.empty() && t.back() == '.') t.pop_back();
    bool negative = false;
    if (!t.empty() && (t[0] == '-' || t[0] == '+')) {
        negative = t[0] == '-';
        t.erase(0, 1);
    }
    if (t.empty() || std::count(t.begin(), t.end(), '.') > 1 ||
        !std::all_of(t.begin(), t.end(), [](char c) { return is_digit(c) || c == '.'; }))
        return "";
    std::string whole = t.substr(0, t.find('.'));
    std::string frac = t.find('.') == std::string::npos ? "" : t.substr(t.find('.') + 1);
    whole.erase(0, std::min(whole.find_first_not_of('0'), whole.size()));
    while (!frac.empty() && frac.back() == '0') frac.pop_back();
    if (whole.empty()) whole = "0";
    if (whole.empty() && frac.empty()) return "";
    const bool zero = whole == "0" && frac.empty();
    return (negative && !zero ? "-" : "") + whole + (frac.empty() ? "" : "." + frac);
}

std::string extract_math_answer(const std::string& output) {
    if (auto p = output.rfind("####"); p != std::string::npos) {
        const std::string n = first_number(output.substr(p + 4));
        if (!n.empty()) return normalize_number(n);
    }
    const std::string low = lower(output);
    for (const char* cue : {"answer is", "answer:"}) {
        if (auto p = low.rfind(cue); p != std::string::npos) {
            const std::string n = first_number(output.substr(p + std::string(cue).size()));
            if (!n.empty()) return normalize_number(n);
        }
    }
    return normalize_number(last_number(output));
}

std::string code_program(const Task& task, const std::string& completion) {
    return task.prompt + completion + "\n\n" + task.test + "\n\ncheck(" + task.entry_point + ")\n";
}

CodeVerdict run_code_task(const Task& task, const std::string& completion, const SandboxLimits& limits) {
    const json request = {{"argv", {"python3", "-I", "-B", "solution.py"}},
                          {"files", {{{"name", "solution.py"}, {"content", code_program(task, completion)}}}},
                          {"limits",
                           {{"cpu_seconds", limits.cpu_seconds},
                            {"wall_seconds", limits.wall_seconds},
                            {"address_space_bytes", limits.address_space_bytes},
                            {"file_size_bytes", limits.file_size_bytes},
                            {"max_processes", limits.max_processes}}}};
    CodeVerdict v;
    v.sandbox_json = strata::reports::sandbox_run(request.dump(-1, ' ', false, json::error_handler_t::replace));
    const json r = json::parse(v.sandbox_json);
    v.passed = r.value("started", false) && r["exit_code"].is_number_integer() && r["exit_code"].get<int>() == 0;
    if (!v.passed) {
        v.error = "tests: " + r.value("outcome", std::string("unknown outcome"));
        if (!r.value("started", false)) v.error += " (" + r.value("error", std::string()) + ")";
        const std::string err = r.value("stderr", std::string());
        if (!err.empty()) {
            // The last line of a traceback names the failure (AssertionError, NameError, ...).
            std::string tail = err.substr(0, err.find_last_not_of("\n") + 1);
            tail = tail.substr(tail.rfind('\n') == std::string::npos ? 0 : tail.rfind('\n') + 1);
            v.error += ": " + tail.substr(0, 200);
        }
    }
    return v;
}

}  // namespace eval
