// Context::decode_batch (context.hpp): the tokens of several sequence slots in one pass. The
// entries' tokens are laid out one entry after another and cut into micro-batches of n_batch;
// each micro-batch records which slot and position each of its tokens has (Scratch::runs), so
// the layers run them together and keep every slot's cache and state apart.
#include <algorithm>
#include <string>
#include <vector>

#include "context.hpp"
#include "context_scratch.hpp"
#include "exec/ops.hpp"
#include "exec/sequence/sequence.hpp"
#include "quant/formats.hpp"
#include "util/error.hpp"

namespace strata::exec {

void Context::decode_batch(std::span<const BatchEntry> entries, float* out) {
    if (!w_.first_stage() || !w_.last_stage)
        fail(Status::invalid_argument, "decode_batch: this stage runs layers [" + std::to_string(w_.first_layer) + ", " +
                                           std::to_string(w_.last_layer) + "); batched decode needs the whole model");
    if (entries.empty()) fail(Status::invalid_argument, "decode_batch: no entries");
    if (!out) fail(Status::invalid_argument, "decode_batch: null output buffer");
    // Everything is checked before anything runs, so a bad entry leaves every slot as it was.
    check_entries(entries, n_seq(), [&](const BatchEntry& e) {
        check_room(e.seq, int64_t(e.tokens.size()));
        check_token_ids(e.tokens, hp_.n_vocab);
    });
    int64_t total = 0;
    for (const BatchEntry& e : entries) total += int64_t(e.tokens.size());

    const int64_t E = hp_.n_embd, V = hp_.n_vocab;
    Scratch& s = *s_;
    size_t entry = 0;     // the entry the next token comes from
    int64_t offset = 0;   // ... and its index there
    for (int64_t c0 = 0; c0 < total; c0 += n_batch_) {
        const int64_t m = std::min(n_batch_, total - c0);
        s.runs.clear();
        const size_t first_entry_out = entry;  // entries whose last token is in this micro-batch: [.., last_entry_out)
        std::vector<int64_t> last_rows;        // ... and those tokens' rows
        for (int64_t t = 0; t < m;) {
            const BatchEntry& e = entries[entry];
            const int64_t k = std::min(m - t, int64_t(e.tokens.size()) - offset);
            const int64_t pos = n_past_[size_t(e.seq)];
            s.runs.push_back(SeqRun{e.seq, t, k, pos});
            for (int64_t i = 0; i < k; ++i) {
                const int32_t token = e.tokens[size_t(offset + i)];
                quant::dequantize_row(w_.token_embd.type, w_.token_embd.row(token), s.x.data() + (t + i) * E, E);
                s.tok_seq[size_t(t + i)] = e.seq;
                s.tok_pos[size_t(t + i)] = pos + i;
            }
            t += k;
            offset += k;
            if (offset == int64_t(e.tokens.size())) {
                last_rows.push_back(t - 1);
                ++entry;
                offset = 0;
            }
        }
        n_bank_ = 0;
        run_layers(s.x.data(), m);
        // The logits of the entries that ended here, in one product (each weight read once).
        if (last_rows.empty()) continue;
        const int64_t n_out = int64_t(last_rows.size());
        for (int64_t j = 0; j < n_out; ++j)
            rms_norm(s.x.data() + last_rows[size_t(j)] * E, w_.output_norm.data(), E, hp_.rms_eps, s.xn.data() + j * E);
        backend_->matmul(w_.output, s.xn.data(), n_out, out + int64_t(first_entry_out) * V);
    }
}

}  // namespace strata::exec
