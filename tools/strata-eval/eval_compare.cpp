// strata-eval compare A.json B.json [--force] [--eval-a I] [--eval-b I]
//
// Two evaluations are comparable only with the same artifact, the same tasks and the same
// sampling controls and limits per task. Without --force a difference is a refusal (exit 1)
// listing every difference; with --force the differences are printed first, above the numbers,
// so nobody reads the numbers without them.
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/report_sections.hpp"
#include "strata/strata.hpp"

namespace {

using json = nlohmann::json;

const char* kCompareUsage =
    "usage: strata-eval compare A.json B.json [--force] [--eval-a I] [--eval-b I]\n"
    "Refuses (exit 1) when the artifact, the task subset or the sampling controls differ, listing\n"
    "every difference; --force compares anyway and prints the differences above the numbers.\n";

std::string score_line(const std::string& label, const json& report, size_t index) {
    const json& e = report["evaluations"][index];
    const json& s = e["score"];
    return label + ": " + e["name"].get<std::string>() + ", model " +
           report["artifact"]["model_identity"].get<std::string>().substr(0, 16) + "...: first pass " +
           s["first_pass_passed"].dump() + "/" + s["n_tasks"].dump() + ", after retries " +
           s["composite_passed"].dump() + "/" + s["n_tasks"].dump() + "\n    " + s["summary"].get<std::string>();
}

}  // namespace

int eval_compare_main(int argc, char** argv) {
    std::string paths[2];
    int n_paths = 0;
    bool force = false;
    size_t index[2] = {0, 0};
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "--force") force = true;
        else if ((a == "--eval-a" || a == "--eval-b") && i + 1 < argc) {
            try {
                index[a == "--eval-b"] = std::stoul(argv[++i]);
            } catch (const std::exception&) {
                std::cerr << "strata-eval compare: " << a << " needs an index\n" << kCompareUsage;
                return 2;
            }
        } else if (a == "-h" || a == "--help") {
            std::cout << kCompareUsage;
            return 0;
        } else if (!a.empty() && a[0] != '-' && n_paths < 2) paths[n_paths++] = a;
        else {
            std::cerr << "strata-eval compare: unexpected argument '" << a << "'\n" << kCompareUsage;
            return 2;
        }
    }
    if (n_paths != 2) {
        std::cerr << "strata-eval compare: needs two report files\n" << kCompareUsage;
        return 2;
    }
    try {
        json reports[2];
        std::string texts[2];
        for (int k = 0; k < 2; ++k) {
            texts[k] = report_sections::read_file(paths[k]);
            const json problems = json::parse(strata::reports::validate(texts[k]));
            if (!problems.empty()) {
                std::cerr << "strata-eval compare: " << paths[k] << " is not a valid report (" << problems.size()
                          << " problems):\n";
                for (const json& p : problems) std::cerr << "  " << p.get<std::string>() << "\n";
                return 2;
            }
            reports[k] = json::parse(texts[k]);
            if (index[k] >= reports[k]["evaluations"].size()) {
                std::cerr << "strata-eval compare: " << paths[k] << " has " << reports[k]["evaluations"].size()
                          << " evaluation(s), no index " << index[k] << "\n";
                return 2;
            }
        }
        const json c = json::parse(strata::reports::eval_compare(texts[0], texts[1], index[0], index[1]));
        const bool comparable = c["comparable"].get<bool>();
        if (!comparable) {
            std::cout << (force ? "NOT COMPARABLE (compared anyway, --force): " : "NOT COMPARABLE: ")
                      << c["differences"].size() << " difference(s) between A and B:\n";
            for (const json& d : c["differences"])
                std::cout << "  " << d["what"].get<std::string>() << ": A = " << d["a"].get<std::string>()
                          << ", B = " << d["b"].get<std::string>() << "\n";
            if (!force) {
                std::cout << "refusing to compare the numbers; --force prints them below these differences\n";
                return 1;
            }
            std::cout << "\n";
        } else {
            std::cout << "comparable: same artifact, same tasks, same sampling controls and limits\n";
        }
        std::cout << score_line("A " + paths[0], reports[0], index[0]) << "\n"
                  << score_line("B " + paths[1], reports[1], index[1]) << "\n";
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "strata-eval compare: " << e.what() << "\n";
        return 2;
    }
}
