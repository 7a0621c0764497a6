// cli_progress.hpp: the progress lines the example programs print on stderr while a model's
// shards are hashed for its identity (minutes for a 100 GB shard, silent otherwise) and while a
// CUDA session or GPU stage uploads its weights: one line at each tenth of the way, per file.
// Public headers only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "strata/strata.hpp"

namespace cli {

class ProgressLines {
public:
    explicit ProgressLines(std::string tool) : tool_(std::move(tool)) {}

    // A strata_progress_fn: pass ProgressLines::report with this object as the user data.
    static void report(const char* what, uint64_t done, uint64_t total, void* self) {
        static_cast<ProgressLines*>(self)->line(what ? what : "?", done, total);
    }

    // Model-opening parameters that report through this object (which must outlive the model).
    strata::model::params model_params() {
        strata::model::params p;
        p.progress = report;
        p.progress_user_data = this;
        return p;
    }

private:
    void line(const std::string& what, uint64_t done, uint64_t total) {
        std::lock_guard<std::mutex> lock(mutex_);  // uploads report from the compute thread
        if (what != what_) {
            what_ = what;
            tenths_ = -1;
        }
        const int tenths = total ? int(std::min(done, total) * 10 / total) : 10;
        if (tenths <= tenths_) return;
        tenths_ = tenths;
        const bool upload = what == "upload weights";
        std::fprintf(stderr, "%s: %s%s: %d%% (%.2f of %.2f GB)\n", tool_.c_str(), upload ? "" : "hashing ",
                     what.c_str(), tenths * 10, double(done) / 1e9, double(total) / 1e9);
    }

    std::mutex mutex_;
    std::string tool_, what_;
    int tenths_ = -1;
};

}  // namespace cli
