#include "gpu_types.hpp"

#include "quant/type_traits.hpp"

namespace strata::cuda {

std::string gpu_weight_type_names() {
    std::string out;
    for (const GpuTypeInfo& t : kGpuTypes) {
        const quant::TypeTraits* traits = quant::find_type_traits(t.type);
        out += (out.empty() ? "" : ", ") + (traits ? std::string(traits->name) : std::to_string(t.type));
    }
    return out;
}

}  // namespace strata::cuda
