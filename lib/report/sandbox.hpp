// Running generated code (an evaluation's code task) in a child process that cannot take the
// machine with it: CPU-time, address-space, file-size and process-count limits, a fresh
// temporary working directory, no network where that can be arranged, output captured up to a
// cap, and a wall-clock timeout that kills the whole process group. The result records the
// limits and what happened, for the report.
//
// Network: as root the child gets a new, empty network namespace (unshare(CLONE_NEWNET)): only a
// loopback device that is down, so every connect fails. Not as root, the network is NOT isolated
// and the result says so ("network not isolated: not root"); nothing pretends otherwise.
// Processes: as root, RLIMIT_NPROC does not bind (root is exempt), so the child drops to the
// unprivileged uid/gid `unprivileged_uid` (65534, "nobody") after entering its namespace; the limit
// then counts that uid's processes. Not as root, the limit is the caller's existing process count
// plus `max_processes` (RLIMIT_NPROC counts every process of the real uid).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace strata::report {

struct SandboxLimits {
    double cpu_seconds = 10;                    // RLIMIT_CPU (SIGXCPU, then SIGKILL a second later)
    uint64_t address_space_bytes = 1ull << 30;  // RLIMIT_AS
    uint64_t file_size_bytes = 16ull << 20;     // RLIMIT_FSIZE (SIGXFSZ or EFBIG)
    uint64_t max_processes = 32;                // RLIMIT_NPROC allowance (see above)
    double wall_seconds = 30;                   // then SIGKILL to the process group
    uint64_t output_cap_bytes = 64 << 10;       // per stream; the rest is read and dropped
    uint32_t unprivileged_uid = 65534;          // used only when running as root
};

struct SandboxFile {
    std::string name;  // a plain file name inside the working directory (no '/')
    std::string content;
};

struct SandboxResult {
    SandboxLimits limits;
    std::vector<std::string> argv;
    bool started = false;          // false: the command could not be started (see error)
    std::string error;             // why it did not start, or an internal failure
    int exit_code = -1;            // when it exited normally
    int term_signal = 0;           // when a signal ended it
    bool timed_out = false;        // the wall timeout killed it
    bool cpu_limit_hit = false;    // SIGXCPU, or killed after reaching the CPU limit
    bool file_size_limit_hit = false;  // SIGXFSZ
    double wall_s = 0;
    double cpu_s = 0;              // user + system of the child and its waited-for children
    // ru_maxrss of the largest waited-for process. Linux carries the peak of the image before exec
    // into it, and that image is a fork of the caller: it is at least the caller's RSS at the time.
    uint64_t max_rss_bytes = 0;
    // The program's own resident high-water mark (VmHWM of its process after exec), read each time
    // the wait loop polls (every 20 ms or sooner) while it runs: growth after the last read is
    // missed; 0 when no read succeeded (a program that ended at once). Children not included.
    uint64_t peak_rss_sampled_bytes = 0;
    std::string stdout_text;
    std::string stderr_text;
    bool stdout_truncated = false;
    bool stderr_truncated = false;
    bool network_isolated = false;
    std::string network;           // "isolated: new network namespace" or why not
    std::string processes;         // how RLIMIT_NPROC was applied
    std::string outcome;           // one line: "exited 0", "killed by SIGXCPU (CPU limit 1 s)", ...
};

// Runs argv[0] (looked up in /usr/local/bin:/usr/bin:/bin, the child's PATH, when it has no '/') with argv in a fresh temporary directory
// holding `files`, with stdin empty and a minimal environment (PATH, HOME=the directory,
// LANG=C.UTF-8). The directory is removed afterwards. Never throws for what the child does;
// a failure to set up is reported in `error` with started = false.
SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxLimits& limits,
                            const std::vector<SandboxFile>& files = {});

// The result as a JSON object (the "sandbox" field of an evaluation attempt).
std::string sandbox_result_json(const SandboxResult& result);

}  // namespace strata::report
