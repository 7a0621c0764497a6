// strata-report: work with report files (schema strata.report/1) through the public API.
//
//   strata-report plot REPORT.json       PNGs beside the report (per-token latency of every
//                                        benchmark run, memory over time), and REPORT.md
//                                        rewritten to link them
//   strata-report validate REPORT.json   every problem, one per line; exit 1 when there is any
//   strata-report markdown REPORT.json   (re)writes REPORT.md beside it
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/report_sections.hpp"
#include "strata/strata.hpp"

namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const char* kUsage =
    "usage: strata-report plot REPORT.json       draw PNGs beside the report and link them from REPORT.md\n"
    "       strata-report validate REPORT.json   list every problem (exit 1 when there is one)\n"
    "       strata-report markdown REPORT.json   (re)write REPORT.md beside the report\n";

int validate(const std::string& path, const std::string& text) {
    const json problems = json::parse(strata::reports::validate(text));
    for (const json& p : problems) std::cout << path << ": " << p.get<std::string>() << "\n";
    if (problems.empty()) std::cout << path << ": valid " << strata::reports::schema_version() << " report\n";
    return problems.empty() ? 0 : 1;
}

int plot(const std::string& path, const std::string& text) {
    const fs::path report(path);
    const fs::path dir = report.has_parent_path() ? report.parent_path() : fs::path(".");
    const std::string images = strata::reports::plot(text, dir.string(), report.stem().string() + "-");
    const std::string md_path = report_sections::markdown_path(path);
    report_sections::write_file(md_path, strata::reports::markdown(text, images));
    for (const json& img : json::parse(images)) std::cout << (dir / img["path"].get<std::string>()).string() << "\n";
    std::cout << md_path << " links them\n";
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 2 && (std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help")) {
        std::cout << kUsage;
        return 0;
    }
    if (argc != 3) {
        std::cerr << kUsage;
        return 2;
    }
    const std::string command = argv[1], path = argv[2];
    try {
        const std::string text = report_sections::read_file(path);
        if (command == "validate") return validate(path, text);
        if (command == "plot") return plot(path, text);
        if (command == "markdown") {
            const std::string md_path = report_sections::markdown_path(path);
            report_sections::write_file(md_path, strata::reports::markdown(text));
            std::cout << md_path << "\n";
            return 0;
        }
        std::cerr << "strata-report: unknown command '" << command << "'\n" << kUsage;
        return 2;
    } catch (const std::exception& e) {
        std::cerr << "strata-report: " << e.what() << "\n";
        return 1;
    }
}
