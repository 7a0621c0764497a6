#include "report/sandbox.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "report/proc_stats.hpp"
#include "report/units.hpp"

namespace strata::report {

namespace {

namespace fs = std::filesystem;

// What the child tells the parent before exec, over a close-on-exec pipe (EOF = exec succeeded).
struct ChildReport {
    int stage;  // kNetwork: the namespace result (err 0 = isolated); others: a fatal setup step
    int err;
};
enum Stage : int { kNetwork = 0, kDup = 1, kChdir = 2, kRlimit = 3, kCredentials = 4, kExec = 5 };
const char* const kStageNames[] = {"unshare", "dup2", "chdir", "setrlimit", "drop privileges", "execve"};

void child_report(int fd, int stage, int err) {
    const ChildReport r{stage, err};
    ssize_t ignored = write(fd, &r, sizeof r);
    (void)ignored;
}

[[noreturn]] void child_fail(int fd, int stage) {
    child_report(fd, stage, errno);
    _exit(127);
}

std::string signal_name(int sig) {
    switch (sig) {
        case SIGKILL: return "SIGKILL";
        case SIGXCPU: return "SIGXCPU";
        case SIGXFSZ: return "SIGXFSZ";
        case SIGSEGV: return "SIGSEGV";
        case SIGABRT: return "SIGABRT";
        case SIGTERM: return "SIGTERM";
        case SIGBUS: return "SIGBUS";
        case SIGPIPE: return "SIGPIPE";
        default: return "signal " + std::to_string(sig);
    }
}

// The child's PATH: the caller's may point into directories (a home, a virtual environment)
// that the unprivileged uid cannot enter.
constexpr const char* kSandboxPath = "/usr/local/bin:/usr/bin:/bin";

// argv[0] as execve needs it: as given when it has a '/', else the first executable on the
// sandbox's PATH.
std::string resolve_program(const std::string& name) {
    if (name.find('/') != std::string::npos) return name;
    const std::string dirs = kSandboxPath;
    size_t start = 0;
    while (start <= dirs.size()) {
        size_t end = dirs.find(':', start);
        if (end == std::string::npos) end = dirs.size();
        std::string dir = dirs.substr(start, end - start);
        if (dir.empty()) dir = ".";
        const std::string candidate = dir + "/" + name;
        if (access(candidate.c_str(), X_OK) == 0) return candidate;
        start = end + 1;
    }
    return "";
}

// Tasks (threads count for RLIMIT_NPROC) whose owner is `uid`, from /proc.
uint64_t count_tasks_of(uid_t uid) {
    uint64_t n = 0;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator("/proc", ec)) {
        const std::string name = entry.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        struct stat st {};
        if (stat(entry.path().c_str(), &st) != 0 || st.st_uid != uid) continue;
        std::error_code ec2;
        uint64_t tasks = 0;
        for (auto it = fs::directory_iterator(entry.path() / "task", ec2); !ec2 && it != fs::directory_iterator(); it.increment(ec2))
            ++tasks;
        n += tasks ? tasks : 1;
    }
    return n;
}

bool plain_file_name(const std::string& name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
           name.find('\0') == std::string::npos;
}

// Appends what is readable now; returns false at EOF or error.
bool drain(int fd, std::string& into, bool& truncated, uint64_t cap) {
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            const uint64_t room = into.size() < cap ? cap - into.size() : 0;
            into.append(buf, size_t(std::min<uint64_t>(room, uint64_t(n))));
            if (uint64_t(n) > room) truncated = true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;  // EOF or error
    }
}

struct Fd {
    int fd = -1;
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) close(fd);
        fd = -1;
    }
};

}  // namespace

SandboxResult run_sandboxed(const std::vector<std::string>& argv, const SandboxLimits& limits,
                            const std::vector<SandboxFile>& files) {
    SandboxResult r;
    r.limits = limits;
    r.argv = argv;
    auto not_started = [&r](const std::string& why) {
        r.error = why;
        r.outcome = "not started: " + why;
        return r;
    };
    const bool root = geteuid() == 0;
    if (argv.empty()) return not_started("no command");
    const std::string program = resolve_program(argv[0]);
    if (program.empty()) return not_started("'" + argv[0] + "' not found on " + kSandboxPath);

    // The working directory, owned by the uid the child will run as.
    std::string tmpl = (fs::temp_directory_path() / "strata-sandbox-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) return not_started(std::string("cannot create a temporary directory: ") + std::strerror(errno));
    const std::string dir = tmpl;
    struct DirCleanup {
        std::string path;
        ~DirCleanup() {
            std::error_code ec;
            fs::remove_all(path, ec);
        }
    } cleanup{dir};
    for (const SandboxFile& f : files) {
        if (!plain_file_name(f.name)) return not_started("sandbox file name '" + f.name + "' is not a plain file name");
        std::ofstream out(dir + "/" + f.name, std::ios::binary);
        out << f.content;
        if (!out) return not_started("cannot write " + f.name + " in the sandbox directory");
    }
    const uid_t run_uid = root ? uid_t(limits.unprivileged_uid) : getuid();
    const gid_t run_gid = root ? gid_t(limits.unprivileged_uid) : getgid();
    if (root && chown(dir.c_str(), run_uid, run_gid) != 0)
        return not_started(std::string("cannot hand the sandbox directory to the unprivileged uid: ") + std::strerror(errno));

    uint64_t nproc = limits.max_processes;
    if (root) {
        r.processes = "RLIMIT_NPROC " + std::to_string(nproc) + " for uid " + std::to_string(run_uid) +
                      " (the child drops from root to that uid; root itself is exempt from the limit)";
    } else {
        const uint64_t existing = count_tasks_of(run_uid);
        nproc = existing + limits.max_processes;
        r.processes = "RLIMIT_NPROC " + std::to_string(nproc) + " = " + std::to_string(existing) +
                      " tasks already running as uid " + std::to_string(run_uid) + " + " +
                      std::to_string(limits.max_processes) + " for the sandbox";
    }

    // Everything the child needs is prepared here: after fork it may only make system calls.
    std::vector<std::string> env_strings = {std::string("PATH=") + kSandboxPath, "HOME=" + dir, "LANG=C.UTF-8",
                                            "PYTHONDONTWRITEBYTECODE=1", "TMPDIR=" + dir};
    std::vector<char*> envp, args;
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);
    const rlim_t cpu = rlim_t(std::max(1.0, std::ceil(limits.cpu_seconds)));
    const struct rlimit rl_cpu{cpu, cpu + 1}, rl_as{rlim_t(limits.address_space_bytes), rlim_t(limits.address_space_bytes)},
        rl_fsize{rlim_t(limits.file_size_bytes), rlim_t(limits.file_size_bytes)}, rl_nproc{rlim_t(nproc), rlim_t(nproc)},
        rl_core{0, 0};

    int out_pipe[2], err_pipe[2], report_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) != 0) return not_started("pipe failed");
    Fd out_r{out_pipe[0]}, out_w{out_pipe[1]};
    if (pipe2(err_pipe, O_CLOEXEC) != 0) return not_started("pipe failed");
    Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};
    if (pipe2(report_pipe, O_CLOEXEC) != 0) return not_started("pipe failed");
    Fd rep_r{report_pipe[0]}, rep_w{report_pipe[1]};
    Fd null_in{open("/dev/null", O_RDONLY | O_CLOEXEC)};

    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid < 0) return not_started(std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
        const int rep = rep_w.fd;
        setpgid(0, 0);
        if (root) child_report(rep, kNetwork, unshare(CLONE_NEWNET) == 0 ? 0 : errno);
        sigset_t all;
        sigemptyset(&all);
        sigprocmask(SIG_SETMASK, &all, nullptr);
        for (int sig : {SIGPIPE, SIGXCPU, SIGXFSZ, SIGINT, SIGTERM}) signal(sig, SIG_DFL);
        if (dup2(null_in.fd, 0) < 0 || dup2(out_w.fd, 1) < 0 || dup2(err_w.fd, 2) < 0) child_fail(rep, kDup);
        if (chdir(dir.c_str()) != 0) child_fail(rep, kChdir);
        if (setrlimit(RLIMIT_CORE, &rl_core) != 0 || setrlimit(RLIMIT_CPU, &rl_cpu) != 0 ||
            setrlimit(RLIMIT_AS, &rl_as) != 0 || setrlimit(RLIMIT_FSIZE, &rl_fsize) != 0 ||
            setrlimit(RLIMIT_NPROC, &rl_nproc) != 0)
            child_fail(rep, kRlimit);
        // Raw system calls: they change only this (single-threaded) child.
        if (root && (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, run_gid, run_gid, run_gid) != 0 ||
                     syscall(SYS_setresuid, run_uid, run_uid, run_uid) != 0))
            child_fail(rep, kCredentials);
        prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);  // after the uid change, which clears it
        execve(program.c_str(), args.data(), envp.data());
        child_fail(rep, kExec);
    }
    setpgid(pid, pid);  // also here: the group exists before any kill(-pid) below
    out_w.reset();
    err_w.reset();
    rep_w.reset();

    // Until exec (EOF on the report pipe): the namespace result, or the step that failed.
    ChildReport rep{};
    std::string setup_error;
    r.network = "not isolated: not root (the child shares the host's network)";
    for (;;) {
        const ssize_t n = read(rep_r.fd, &rep, sizeof rep);
        if (n < 0 && errno == EINTR) continue;
        if (n != ssize_t(sizeof rep)) break;
        if (rep.stage == kNetwork) {
            r.network_isolated = rep.err == 0;
            r.network = rep.err == 0 ? "isolated: new network namespace (no interfaces up)"
                                     : std::string("not isolated: unshare(CLONE_NEWNET) failed: ") + std::strerror(rep.err);
        } else if (rep.stage > kNetwork && rep.stage <= kExec) {
            setup_error = std::string(kStageNames[rep.stage]) + " failed: " + std::strerror(rep.err);
        }
    }
    r.started = setup_error.empty();
    r.error = setup_error;

    fcntl(out_r.fd, F_SETFL, O_NONBLOCK);
    fcntl(err_r.fd, F_SETFL, O_NONBLOCK);
    const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(limits.wall_seconds));
    bool out_open = true, err_open = true, reaped = false;
    std::chrono::steady_clock::time_point reaped_at;
    int status = 0;
    struct rusage usage {};
    while (!reaped || out_open || err_open) {
        if (!reaped) {
            // Before wait4: a process that has exited is a zombie without memory figures, and
            // once reaped its pid may name another process.
            if (const auto m = read_process_memory(int(pid)))
                r.peak_rss_sampled_bytes = std::max(r.peak_rss_sampled_bytes, m->hwm_bytes);
            const pid_t w = wait4(pid, &status, WNOHANG, &usage);
            if (w == pid) {
                reaped = true;
                reaped_at = std::chrono::steady_clock::now();
                kill(-pid, SIGKILL);  // leftovers of the group (they would hold the pipes open)
            }
        }
        const auto now = std::chrono::steady_clock::now();
        // A process that left the group (setsid) may keep the pipes open: stop reading anyway.
        if (reaped && now - reaped_at > std::chrono::seconds(1)) break;
        if (!reaped && now >= deadline) {
            r.timed_out = true;
            kill(-pid, SIGKILL);
            while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
            }
            reaped = true;
            reaped_at = std::chrono::steady_clock::now();
        }
        struct pollfd fds[2];
        int n = 0;
        if (out_open) fds[n++] = {out_r.fd, POLLIN, 0};
        if (err_open) fds[n++] = {err_r.fd, POLLIN, 0};
        if (n == 0) {
            if (!reaped) usleep(10000);
            continue;
        }
        const int wait_ms = reaped ? 200 : 20;
        const int ready = poll(fds, nfds_t(n), wait_ms);
        if (ready == 0 && reaped) break;  // the group is dead; nothing more will come
        if (out_open) out_open = drain(out_r.fd, r.stdout_text, r.stdout_truncated, limits.output_cap_bytes);
        if (err_open) err_open = drain(err_r.fd, r.stderr_text, r.stderr_truncated, limits.output_cap_bytes);
    }
    r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.cpu_s = double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
              double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
    r.max_rss_bytes = uint64_t(usage.ru_maxrss) * 1024;
    if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) r.term_signal = WTERMSIG(status);
    r.cpu_limit_hit = r.term_signal == SIGXCPU ||
                      (r.term_signal == SIGKILL && !r.timed_out && r.cpu_s + 0.05 >= double(cpu));
    // A program that ignores SIGXFSZ (Python does) gets EFBIG instead: a file at the limit tells.
    r.file_size_limit_hit = r.term_signal == SIGXFSZ;
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
        if (it->is_regular_file(ec) && it->file_size(ec) >= limits.file_size_bytes) r.file_size_limit_hit = true;

    if (!r.started) r.outcome = "not started: " + r.error;
    else if (r.timed_out) r.outcome = "killed at the wall timeout of " + format_number(limits.wall_seconds) + " s";
    else if (r.term_signal == SIGXCPU || r.cpu_limit_hit)
        r.outcome = "killed by " + signal_name(r.term_signal) + " at the CPU limit of " + std::to_string(cpu) + " s";
    else if (r.term_signal == SIGXFSZ)
        r.outcome = "killed by SIGXFSZ at the file size limit of " + std::to_string(limits.file_size_bytes) + " bytes";
    else if (r.term_signal) r.outcome = "killed by " + signal_name(r.term_signal);
    else r.outcome = "exited with code " + std::to_string(r.exit_code);
    if (r.started && r.file_size_limit_hit && r.term_signal != SIGXFSZ)
        r.outcome += " (a file reached the file size limit of " + std::to_string(limits.file_size_bytes) + " bytes)";
    return r;
}

std::string sandbox_result_json(const SandboxResult& r) {
    using nlohmann::json;
    const SandboxLimits& l = r.limits;
    json doc = {{"argv", r.argv},
                {"limits",
                 {{"cpu_seconds", l.cpu_seconds},
                  {"address_space_bytes", l.address_space_bytes},
                  {"file_size_bytes", l.file_size_bytes},
                  {"max_processes", l.max_processes},
                  {"wall_seconds", l.wall_seconds},
                  {"output_cap_bytes", l.output_cap_bytes}}},
                {"network", r.network},
                {"network_isolated", r.network_isolated},
                {"processes", r.processes},
                {"started", r.started},
                {"error", r.error},
                {"exit_code", r.term_signal || !r.started ? json(nullptr) : json(r.exit_code)},
                {"signal", r.term_signal ? json(signal_name(r.term_signal)) : json(nullptr)},
                {"timed_out", r.timed_out},
                {"cpu_limit_hit", r.cpu_limit_hit},
                {"file_size_limit_hit", r.file_size_limit_hit},
                {"wall_s", r.wall_s},
                {"cpu_s", r.cpu_s},
                {"max_rss_bytes", r.max_rss_bytes},
                {"peak_rss_sampled_bytes", r.peak_rss_sampled_bytes},
                {"stdout", r.stdout_text},
                {"stderr", r.stderr_text},
                {"stdout_truncated", r.stdout_truncated},
                {"stderr_truncated", r.stderr_truncated},
                {"outcome", r.outcome}};
    return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace strata::report
