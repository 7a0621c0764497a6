// Which kernel a device backend runs for a product shape, chosen by measurement and remembered
// (host logic only, so the CPU unit tests cover it; the CUDA backend, cuda/runtime/matmul.hpp, feeds it
// timings). Token counts are bucketed by powers of two (16, 32, ..., 4096, and beyond) so that a
// prefill of 300 tokens reuses the choice measured for 256..511.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>

namespace strata::exec {

enum class MatmulPath { gemv, mma, cublas };
const char* matmul_path_name(MatmulPath p);

struct MatmulShape {
    uint32_t type = 0;   // ggml type of the weights
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t n_tokens = 0;
};

// The bucket a token count falls in: the largest power of two <= n_tokens (n_tokens >= 1).
int64_t token_bucket(int64_t n_tokens);

struct MatmulChoice {
    MatmulPath path = MatmulPath::gemv;
    double seconds[3] = {-1, -1, -1};  // measured time per path (index: MatmulPath), -1: not run
};

class MatmulChooser {
public:
    // The path for this shape: gemv when n_tokens <= gemv_max_tokens; otherwise the remembered
    // choice for (type, rows, cols, bucket), or, the first time, each of `candidates` timed with
    // time_path (seconds; < 0: that path cannot run this shape) and the fastest kept. Throws
    // Error(unsupported) naming the shape when no candidate can run it.
    MatmulPath choose(const MatmulShape& shape, int64_t gemv_max_tokens, std::span<const MatmulPath> candidates,
                      const std::function<double(MatmulPath)>& time_path);

    // Every choice made so far, one line each: "type rows x cols, tokens bucket: path (times)".
    std::string describe() const;
    size_t size() const { return choices_.size(); }

private:
    std::map<std::tuple<uint32_t, int64_t, int64_t, int64_t>, MatmulChoice> choices_;
};

}  // namespace strata::exec
