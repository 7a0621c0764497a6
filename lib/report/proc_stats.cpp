#include "report/proc_stats.hpp"

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace strata::report {

namespace {

// The number after `key` at the start of a line ("VmRSS:\t  1234 kB"), times 1024 when the line
// says kB. nullopt when the key is missing or the number is malformed or overflows.
std::optional<uint64_t> field(std::string_view text, std::string_view key, bool kib_units) {
    size_t pos = 0;
    while (pos < text.size()) {
        size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(pos, end - pos);
        pos = end + 1;
        if (line.size() <= key.size() || line.substr(0, key.size()) != key) continue;
        const char next = line[key.size()];
        if (next != ':' && next != ' ' && next != '\t') continue;  // "VmRSS" must not match "VmRSSx"
        size_t i = key.size();
        while (i < line.size() && (line[i] == ':' || line[i] == ' ' || line[i] == '\t')) ++i;
        uint64_t value = 0;
        const auto r = std::from_chars(line.data() + i, line.data() + line.size(), value);
        if (r.ec != std::errc() || r.ptr == line.data() + i) return std::nullopt;
        if (!kib_units) return value;
        const std::string_view rest = line.substr(size_t(r.ptr - line.data()));
        if (rest.find("kB") == std::string_view::npos) return value;
        if (value > UINT64_MAX / 1024) return std::nullopt;
        return value * 1024;
    }
    return std::nullopt;
}

std::optional<std::string> slurp(const char* path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace

std::optional<ProcessMemory> parse_process_status(std::string_view text) {
    auto rss = field(text, "VmRSS", true), hwm = field(text, "VmHWM", true);
    if (!rss || !hwm) return std::nullopt;
    return ProcessMemory{*rss, *hwm};
}

std::optional<HostMemory> parse_meminfo(std::string_view text) {
    auto total = field(text, "MemTotal", true), avail = field(text, "MemAvailable", true);
    if (!total || !avail) return std::nullopt;
    HostMemory m;
    m.total_bytes = *total;
    m.available_bytes = *avail;
    m.swap_total_bytes = field(text, "SwapTotal", true).value_or(0);
    m.swap_free_bytes = field(text, "SwapFree", true).value_or(0);
    return m;
}

std::optional<SwapCounters> parse_vmstat(std::string_view text) {
    auto in = field(text, "pswpin", false), out = field(text, "pswpout", false);
    if (!in || !out) return std::nullopt;
    return SwapCounters{*in, *out};
}

std::optional<ProcessMemory> read_process_memory() {
    auto text = slurp("/proc/self/status");
    return text ? parse_process_status(*text) : std::nullopt;
}

std::optional<ProcessMemory> read_process_memory(int pid) {
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    auto text = slurp(path.c_str());
    return text ? parse_process_status(*text) : std::nullopt;
}

std::optional<HostMemory> read_host_memory() {
    auto text = slurp("/proc/meminfo");
    return text ? parse_meminfo(*text) : std::nullopt;
}

std::optional<SwapCounters> read_swap_counters() {
    auto text = slurp("/proc/vmstat");
    return text ? parse_vmstat(*text) : std::nullopt;
}

}  // namespace strata::report
