#include "report/artifact.hpp"

#include <map>

#include "gguf/digest.hpp"
#include "gguf/ggml_types.hpp"
#include "gguf/model_file.hpp"

namespace strata::report {

const std::vector<std::string>& publisher_label_keys() {
    static const std::vector<std::string> keys = {
        "general.name",         "general.basename",  "general.finetune",     "general.size_label",
        "general.version",      "general.organization", "general.author",    "general.quantized_by",
        "general.license",      "general.url",       "general.repo_url",     "general.source.url",
        "general.source.repo_url", "general.file_type", "general.quantization_version",
    };
    return keys;
}

Artifact describe_artifact(const gguf::ModelFile& model, const gguf::DigestOptions& digest_options) {
    Artifact a;
    std::vector<std::string> digests;
    for (const gguf::Shard& shard : model.shards()) {
        ShardRecord rec;
        rec.path = shard.path;
        rec.size_bytes = shard.size;
        rec.sha256 = gguf::sha256_file(shard.path, digest_options);
        digests.push_back(rec.sha256);
        a.shards.push_back(std::move(rec));
    }
    a.model_identity = gguf::model_identity(model, digests);
    if (auto i = model.find_key("general.architecture"))
        a.architecture = std::string(model.metadata_value(*i).as_string().value_or(""));

    // Ordered by type name so that two reports of one model list types identically.
    std::map<std::string, TensorTypeCount> by_type;
    for (const gguf::TensorInfo& t : model.tensors()) {
        TensorTypeCount& c = by_type[gguf::ggml_type_name(t.type)];
        c.type = gguf::ggml_type_name(t.type);
        c.count += 1;
        c.bytes += t.nbytes;
    }
    for (auto& [name, count] : by_type) a.tensor_types.push_back(count);

    for (const std::string& key : publisher_label_keys())
        if (auto i = model.find_key(key)) a.labels.push_back({key, model.metadata_value(*i).to_json()});
    return a;
}

}  // namespace strata::report
