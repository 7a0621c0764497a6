// The KDA recurrence (lib/exec/kda/kda_recurrence.hpp): the chunked form against the step form on
// fresh random inputs (random initial state, ragged chunks, strong and weak decay), a step worked
// by hand, and a whole kimi-linear context run with and without the chunked prefill.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "exec/context/context.hpp"
#include "exec/kda/kda_recurrence.hpp"
#include "gguf/model_file.hpp"
#include "gguf/writer.hpp"
#include "model/hparams.hpp"
#include "model/weights.hpp"
#include "quant/formats.hpp"
#include "test_kimi_synth.hpp"
#include "util/error.hpp"

using namespace strata;
using strata::test::KimiDefects;
using strata::test::tiny_kimi;

namespace {

std::vector<float> normal(std::mt19937_64& rng, size_t n, float sd = 1.0f, float mean = 0.0f) {
    std::normal_distribution<float> d(mean, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = d(rng);
    return v;
}

void l2(float* v, int64_t n) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; ++i) ss += double(v[i]) * v[i];
    for (int64_t i = 0; i < n; ++i) v[i] = float(v[i] / std::sqrt(ss));
}

}  // namespace

TEST_CASE("KDA: the chunked form equals the step form (random state, ragged chunks, strong and weak decay)") {
    std::mt19937_64 rng(std::random_device{}());
    const int64_t dk = 32, n = 37;
    for (float decay_scale : {0.02f, 1.0f, 4.0f}) {
        for (int64_t chunk : {1, 5, 16, 37, 64}) {
            CAPTURE(decay_scale);
            CAPTURE(chunk);
            auto q = normal(rng, size_t(n * dk)), k = normal(rng, size_t(n * dk)), v = normal(rng, size_t(n * dk));
            auto g = normal(rng, size_t(n * dk), 0.5f);
            std::vector<float> beta(static_cast<size_t>(n));
            for (int64_t t = 0; t < n; ++t) {
                l2(&q[size_t(t * dk)], dk);
                l2(&k[size_t(t * dk)], dk);
                beta[size_t(t)] = 1.0f / (1.0f + std::exp(-normal(rng, 1)[0]));
            }
            for (auto& x : g) x = -decay_scale * std::fabs(x);  // log decay <= 0
            const auto S0 = normal(rng, size_t(dk * dk), 0.3f);
            std::vector<float> S_step = S0, S_chunk = S0, o_step(size_t(n * dk)), o_chunk(size_t(n * dk), NAN), work;
            for (int64_t t = 0; t < n; ++t)
                exec::kda_step(S_step.data(), dk, &q[size_t(t * dk)], &k[size_t(t * dk)], &v[size_t(t * dk)],
                               &g[size_t(t * dk)], beta[size_t(t)], &o_step[size_t(t * dk)]);
            for (int64_t c0 = 0; c0 < n; c0 += chunk) {
                const int64_t m = std::min(chunk, n - c0);
                const size_t off = size_t(c0 * dk);
                exec::kda_chunk(S_chunk.data(), dk, m, &q[off], &k[off], &v[off], &g[off], &beta[size_t(c0)],
                                &o_chunk[off], work);
            }
            double err_o = 0.0, err_s = 0.0;
            for (size_t i = 0; i < o_step.size(); ++i) err_o = std::max(err_o, double(std::fabs(o_step[i] - o_chunk[i])));
            for (size_t i = 0; i < S_step.size(); ++i) err_s = std::max(err_s, double(std::fabs(S_step[i] - S_chunk[i])));
            // Measured: at most 9e-7 on outputs and state of magnitude ~1 (float32 rounding).
            CHECK(err_o < 2e-5);
            CHECK(err_s < 2e-5);
        }
    }
}

TEST_CASE("KDA: one step worked by hand (dk 2, a non-diagonal state: decay multiplies key rows)") {
    // S0 = [[1, 2], [3, 4]] (rows: key channels); decay e^g = (0.5, 1); k = (1, 0), q = (0, 1),
    // v = (1, 1), beta = 0.5.  S~ = [[0.5, 1], [3, 4]]; S~^T k = (0.5, 1); u = 0.5 * ((1, 1) -
    // (0.5, 1)) = (0.25, 0); S = S~ + k u^T = [[0.75, 1], [3, 4]]; o = S^T q = (3, 4).
    float S[4] = {1, 2, 3, 4};
    const float g[2] = {std::log(0.5f), 0.0f}, k[2] = {1, 0}, q[2] = {0, 1}, v[2] = {1, 1};
    float o[2];
    exec::kda_step(S, 2, q, k, v, g, 0.5f, o);
    CHECK(S[0] == doctest::Approx(0.75));
    CHECK(S[1] == doctest::Approx(1.0));
    CHECK(S[2] == doctest::Approx(3.0));
    CHECK(o[0] == doctest::Approx(3.0));
    CHECK(o[1] == doctest::Approx(4.0));
}

TEST_CASE("a kimi-linear context: chunked prefill agrees with the step form; decode after prefill is exact") {
    // A fixed model: a fresh one could put a router choice within float rounding of a tie.
    auto f = tiny_kimi(7);
    exec::ContextParams p;
    p.n_ctx = 64;
    p.n_threads = 2;
    p.memory_budget = uint64_t(1) << 30;
    std::vector<int32_t> toks(40);
    std::mt19937_64 rng(3);
    for (auto& t : toks) t = int32_t(rng() % 16);
    exec::Context step(*f, p);
    std::vector<float> a(40 * 16), b(40 * 16), c(16);
    step.decode(toks, a.data(), /*all_logits=*/true);
    p.kda_chunk = 16;
    exec::Context chunked(*f, p);
    chunked.decode(toks, b.data(), true);
    double err = 0.0;
    for (size_t i = 0; i < a.size(); ++i) err = std::max(err, double(std::fabs(a[i] - b[i])));
    CHECK(err < 5e-4);  // measured 6.3e-5 (logits ~1)
    // The state carries over calls: prefill 39 then one token equals the 40th row of a full run.
    exec::Context again(*f, [&] { auto q = p; q.kda_chunk = 0; return q; }());
    std::vector<float> first(39 * 16);
    again.decode(std::span(toks).first(39), first.data(), true);
    again.decode(std::span(toks).subspan(39, 1), c.data());
    for (int i = 0; i < 16; ++i) CHECK(c[size_t(i)] == a[size_t(39 * 16 + i)]);
    // A recurrent stage restarts but does not roll back.
    CHECK_THROWS(again.truncate(20));
    again.truncate(0);
    again.decode(toks, b.data(), true);
    for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == b[i]);
}

TEST_CASE("the memory plan of Kimi K3 (the reported shapes): latent cache per token, fixed KDA state") {
    // kimi_linear.md: 93 layers, MLA at 0-based 3, 7, ..., 87, 91 and 92 (24 layers), KDA elsewhere
    // (69); 96 heads of dk 128 (D 12288), conv kernel 4, kv_lora 512 + rope part 64.
    model::Hparams hp;
    hp.arch = model::kimi_k3_traits();
    hp.n_layer = 93;
    hp.n_embd = 7168;
    hp.n_head = 96;
    hp.n_head_kv = 1;
    hp.n_ff = 33792;
    hp.head_dim = 192;
    hp.rope.n_rot = 64;
    hp.mla = {.q_lora_rank = 1536, .kv_lora_rank = 512, .qk_nope = 128, .v_head_dim = 128, .kq_scale = 0.07, .rotate = false};
    hp.kda = {.head_dim = 128, .conv_kernel = 4};
    hp.recurrent.assign(93, 1);
    for (int il = 3; il < 93; il += 4) hp.recurrent[size_t(il)] = 0;
    hp.recurrent[92] = 0;
    int mla = 0;
    for (auto r : hp.recurrent) mla += r == 0;
    CHECK(mla == 24);
    const uint64_t per_token = exec::kv_bytes_per_position_range(hp, exec::KvType::f16, 0, 93);
    CHECK(per_token == 24 * (512 + 64) * 2);  // 27,648 B
    const uint64_t at_1m = per_token * (uint64_t(1) << 20);
    CHECK(at_1m == uint64_t(27) << 30);  // 27 GiB at 1,048,576 tokens
    CHECK(exec::kv_bytes_per_position_range(hp, exec::KvType::q8_0, 0, 93) == 24 * 18 * 34);
    const uint64_t per_kda = (3 * 3 * 12288 + 96 * 128 * 128) * 4;  // conv windows + state, float32
    CHECK(per_kda == 6733824);
    CHECK(exec::state_bytes_range(hp, 0, 93) == 69 * per_kda);  // 443.1 MiB a sequence, any context
    // Three stages of 31 layers: the state and the cache follow each stage's own layers.
    CHECK(exec::state_bytes_range(hp, 0, 31) + exec::state_bytes_range(hp, 31, 62) + exec::state_bytes_range(hp, 62, 93) ==
          69 * per_kda);
    CHECK(exec::kv_bytes_per_position_range(hp, exec::KvType::f16, 62, 93) == 9 * 1152);  // 63..91 step 4 (8) + 92
}

TEST_CASE("bad kimi files get an error naming the key or tensor") {
    struct Case {
        const char* what;
        KimiDefects d;
        const char* needle;
    };
    std::vector<Case> cases;
    {
        KimiDefects d;
        d.head_count_kv = {0, 1};
        cases.push_back({"a layer pattern of the wrong length", d, "attention.head_count_kv"});
    }
    {
        KimiDefects d;
        d.head_count_kv = {0, 0, -1};
        cases.push_back({"a negative head count", d, "attention.head_count_kv"});
    }
    {
        KimiDefects d;
        d.drop_key = "kda.head_dim";
        cases.push_back({"no KDA head width", d, "kda.head_dim"});
    }
    {
        KimiDefects d;
        d.drop_key = "ssm.conv_kernel";
        cases.push_back({"no conv kernel", d, "ssm.conv_kernel"});
    }
    {
        KimiDefects d;
        d.drop_tensor = "blk.1.ssm_conv1d_k.weight";
        cases.push_back({"a missing conv kernel tensor", d, "blk.1.ssm_conv1d_k.weight"});
    }
    {
        KimiDefects d;
        d.drop_tensor = "blk.0.ssm_a";
        cases.push_back({"a missing decay rate", d, "blk.0.ssm_a"});
    }
    for (const Case& c : cases) {
        CAPTURE(c.what);
        std::string err;
        try {
            auto f = tiny_kimi(7, c.d);
            const model::Hparams hp = model::read_hparams(*f);
            (void)model::bind_weights(*f, hp, 0, int(hp.n_layer));
        } catch (const Error& e) {
            err = e.what();
        }
        CHECK(err.find(c.needle) != std::string::npos);
    }
}

TEST_CASE("a kimi-linear context reports the last token's routing margin; a stage without MoE layers reports +inf") {
    const auto file = test::tiny_kimi(std::random_device{}());
    exec::Context all(*file, {.n_ctx = 32, .n_threads = 2});
    std::vector<float> logits(static_cast<size_t>(all.n_vocab()));
    const std::vector<int32_t> prompt = {1, 5, 9, 2, 7};
    CHECK(std::isinf(all.last_token_routing_margin()));  // nothing run yet
    all.decode(prompt, logits.data());
    const float m = all.last_token_routing_margin();
    CHECK(std::isfinite(m));
    CHECK(m >= 0.0f);
    // The same last token after the same prefix: the same routing, the same margin.
    exec::Context again(*file, {.n_ctx = 32, .n_threads = 1});
    again.decode({prompt.data(), 4}, logits.data());
    again.decode({prompt.data() + 4, 1}, logits.data());
    CHECK(again.last_token_routing_margin() == doctest::Approx(m).epsilon(1e-4));
    // Layer 0 is dense: a stage of it alone routes nothing.
    exec::Context dense(*file, {.n_ctx = 32, .n_threads = 1, .last_layer = 1});
    std::vector<float> hidden(static_cast<size_t>(dense.output_floats(5, false)));
    dense.decode(prompt, hidden.data());
    CHECK(std::isinf(dense.last_token_routing_margin()));
}
