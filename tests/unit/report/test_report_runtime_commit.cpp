// The runtime record names the commit the library was built from. The stamp used to be taken when
// CMake configured the build, so an incrementally rebuilt library kept naming the commit of its
// first configuration in every report (a peer comparison built at 7bf7801 said 6d673b5).
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "report/runtime_info.hpp"

namespace {

// The first line `cmd` prints, or "" when it fails.
std::string first_line(const std::string& cmd) {
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return "";
    char buf[256] = {};
    const bool got = std::fgets(buf, sizeof buf, p) != nullptr;
    const int rc = pclose(p);
    if (!got || rc != 0) return "";
    std::string s(buf);
    while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
    return s;
}

}  // namespace

TEST_CASE("runtime record: git_commit is the source tree's HEAD at build time") {
    const std::string head = first_line("git -C '" STRATA_SOURCE_DIR "' rev-parse HEAD 2>/dev/null");
    const std::string stamped = strata::report::describe_runtime().git_commit;
    CAPTURE(head);
    CAPTURE(stamped);
    if (head.empty()) {  // a source tree without git: the stamp says so
        CHECK(stamped == "unknown");
        return;
    }
    // A commit made after the build without rebuilding fails here too: the binary is stale.
    REQUIRE(stamped.size() >= head.size());
    CHECK(stamped.substr(0, head.size()) == head);
    const std::string rest = stamped.substr(head.size());
    CHECK((rest.empty() || rest == "+uncommitted-changes"));
}
