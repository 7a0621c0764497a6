// Readers of the Linux /proc memory figures the reports record. Each has a parse_* function over
// the file's text (testable, and safe on any input) and a read_* function that reads the file;
// both return nullopt when a figure is missing rather than inventing one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::report {

struct ProcessMemory {
    uint64_t rss_bytes = 0;  // VmRSS: resident now
    uint64_t hwm_bytes = 0;  // VmHWM: the kernel's resident high-water mark since process start
};

struct HostMemory {
    uint64_t total_bytes = 0;      // MemTotal
    uint64_t available_bytes = 0;  // MemAvailable
    uint64_t swap_total_bytes = 0;
    uint64_t swap_free_bytes = 0;
};

// Cumulative pages swapped in/out since boot (/proc/vmstat pswpin, pswpout).
struct SwapCounters {
    uint64_t pages_in = 0;
    uint64_t pages_out = 0;
};

std::optional<ProcessMemory> parse_process_status(std::string_view status_text);
std::optional<HostMemory> parse_meminfo(std::string_view meminfo_text);
std::optional<SwapCounters> parse_vmstat(std::string_view vmstat_text);

std::optional<ProcessMemory> read_process_memory();  // /proc/self/status
std::optional<ProcessMemory> read_process_memory(int pid);  // /proc/PID/status
std::optional<HostMemory> read_host_memory();        // /proc/meminfo
std::optional<SwapCounters> read_swap_counters();    // /proc/vmstat

}  // namespace strata::report
