#include "exec/matmul_choice.hpp"

#include <cstdio>

#include "util/error.hpp"

namespace strata::exec {

const char* matmul_path_name(MatmulPath p) {
    switch (p) {
        case MatmulPath::gemv: return "gemv";
        case MatmulPath::mma: return "mma";
        case MatmulPath::cublas: return "cublas";
    }
    return "?";
}

int64_t token_bucket(int64_t n_tokens) {
    if (n_tokens < 1) fail(Status::invalid_argument, "token_bucket: token count " + std::to_string(n_tokens) + " < 1");
    int64_t b = 1;
    while (b <= n_tokens / 2) b *= 2;  // halving n_tokens instead of doubling b cannot overflow
    return b;
}

namespace {

std::string shape_text(uint32_t type, int64_t rows, int64_t cols) {
    return "type " + std::to_string(type) + " " + std::to_string(rows) + " x " + std::to_string(cols);
}

}  // namespace

MatmulPath MatmulChooser::choose(const MatmulShape& shape, int64_t gemv_max_tokens,
                                 std::span<const MatmulPath> candidates,
                                 const std::function<double(MatmulPath)>& time_path) {
    if (shape.n_tokens <= gemv_max_tokens) {
        if (shape.n_tokens < 1)
            fail(Status::invalid_argument, "matmul of " + shape_text(shape.type, shape.rows, shape.cols) + " with " +
                                               std::to_string(shape.n_tokens) + " tokens");
        return MatmulPath::gemv;  // not measured: the decode kernel is the only one for these sizes
    }
    const auto key = std::make_tuple(shape.type, shape.rows, shape.cols, token_bucket(shape.n_tokens));
    if (const auto it = choices_.find(key); it != choices_.end()) return it->second.path;

    MatmulChoice choice;
    bool any = false;
    for (const MatmulPath p : candidates) {
        const double t = time_path(p);
        if (!(t >= 0)) continue;  // cannot run this shape (negative, or NaN from a broken timer)
        choice.seconds[static_cast<int>(p)] = t;
        if (!any || t < choice.seconds[static_cast<int>(choice.path)]) choice.path = p;  // first wins a tie
        any = true;
    }
    if (!any)
        fail(Status::unsupported, "no matmul path can run " + shape_text(shape.type, shape.rows, shape.cols) +
                                      " for " + std::to_string(shape.n_tokens) + " tokens (" +
                                      std::to_string(candidates.size()) + " candidates)");
    choices_.emplace(key, choice);
    return choice.path;
}

std::string MatmulChooser::describe() const {
    std::string out;
    for (const auto& [key, choice] : choices_) {
        const auto& [type, rows, cols, bucket] = key;
        out += shape_text(type, rows, cols) + ", tokens " + std::to_string(bucket) + ": " +
               matmul_path_name(choice.path) + " (";
        bool first = true;
        for (int p = 0; p < 3; ++p) {
            if (choice.seconds[p] < 0) continue;
            char ms[48];
            std::snprintf(ms, sizeof ms, "%.3f ms", choice.seconds[p] * 1e3);
            out += std::string(first ? "" : ", ") + matmul_path_name(static_cast<MatmulPath>(p)) + " " + ms;
            first = false;
        }
        out += ")\n";
    }
    return out;
}

}  // namespace strata::exec
