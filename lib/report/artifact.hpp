// The artifact section: what exactly was run. Identity is the shard digests and the model
// identity digest; the publisher's names from the metadata are kept apart as unverified labels.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::gguf {
class ModelFile;
struct DigestOptions;
}  // namespace strata::gguf

namespace strata::report {

struct ShardRecord {
    std::string path;
    uint64_t size_bytes = 0;
    std::string sha256;  // lower-case hex, 64 characters
};

struct TensorTypeCount {
    std::string type;     // ggml type name ("iq1_s", "f32", ...)
    uint64_t count = 0;   // tensors of this type
    uint64_t bytes = 0;   // their data bytes
};

// One metadata key the publisher wrote (general.name, general.size_label, ...). Labels say what
// the file calls itself; nothing checks them, so they never stand in for identity.
struct PublisherLabel {
    std::string key;
    std::string value_json;  // the metadata value as JSON (gguf::Value::to_json)
};

struct Artifact {
    std::vector<ShardRecord> shards;
    std::string model_identity;  // gguf::model_identity: metadata + tensor table + shard digests
    std::string architecture;    // general.architecture
    std::vector<TensorTypeCount> tensor_types;
    std::vector<PublisherLabel> labels;
};

// The metadata keys kept as publisher labels, when present.
const std::vector<std::string>& publisher_label_keys();

// Fills every field from an opened model: hashes each shard (gguf::sha256_file, cached), counts
// tensors per type and copies the publisher labels. Throws strata::Error as sha256_file does.
Artifact describe_artifact(const gguf::ModelFile& model, const gguf::DigestOptions& digest_options);

}  // namespace strata::report
