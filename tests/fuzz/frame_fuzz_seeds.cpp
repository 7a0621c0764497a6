// Writes one seed file per message type into the directory given as argv[1]: a piece-size
// byte (as fuzz_frame_decoder expects) followed by a valid encoded frame.
#include <cstdio>
#include <fstream>
#include <string>

#include "transport/frame.hpp"
#include "transport/messages.hpp"

int main(int argc, char** argv) {
    using namespace strata::transport;
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
        return 2;
    }
    Hello h;
    h.layer_begin = 3;
    h.layer_end = 9;
    h.context_length = 4096;
    h.model_id[0] = 0xAB;
    const Message messages[] = {
        h,
        HelloAck{h},
        AuthChallenge{},
        AuthResponse{},
        Tensor{DType::f16, {2, 3}, std::vector<uint8_t>(12, 0x3C)},
        TokenId{42},
        ErrorMessage{7, "model identity differs"},
        Heartbeat{},
        Bye{},
        StageQuery{},
        StageInfo{1ull << 36, 0, 0, 61, 16, "cpu", "node-1"},
        StageConfigure{0, 20, 1, 8192, 512},
        StageReady{1000, 200, 30, 1230, 4000, 4, 15, {4, 5, 7, 13}},
        Forward{12, ForwardOutput::sample, 3, {7, 8}, Tensor{DType::bf16, {2, 4}, std::vector<uint8_t>(16, 0x3F)}},
        Sampled{9, {{9, -0.25f}, {4, -2.5f}}},
        SetSampling{0.8f, 0.95f, 0.05f, 1.1f, 40, 64, 1234},
        SampleRequest{2},
        Done{},
        ErrorMessage{kLibraryStatusBase + 11, "stage failed"},
    };
    int i = 0;
    for (const auto& m : messages) {
        auto f = to_frame(m);
        if (!f) return 1;
        auto wire = encode_frame(f.value());
        std::ofstream out(std::string(argv[1]) + "/seed_" + std::to_string(i) + ".bin", std::ios::binary);
        const char piece = char(i * 29);  // varied cut sizes
        out.write(&piece, 1);
        out.write(reinterpret_cast<const char*>(wire.data()), std::streamsize(wire.size()));
        if (!out) return 1;
        ++i;
    }
    return 0;
}
