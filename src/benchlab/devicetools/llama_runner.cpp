// benchlab's generation runner for devices without Python: llama.cpp's C API, nothing else.
//
// benchlab builds this file for the device's ABI beside llama.cpp (devicetools/llamacpp.py),
// pushes it with the model, and reads what it prints on the host. It owns no definitions:
// it prints clock readings (ns) and writes raw tensors; the host turns readings into TTFT,
// TPOT and the rest with the same code as its own runner (runner/generate.py), and outputs
// into SQNR, KL and token agreement (runner/generate.py, score_answers). Every line it prints
// for the host starts with "BENCHLAB_DEVICE " and holds one JSON object.
//
// Usage: benchlab-llama-runner --model M.gguf [--threads N] [--n-ctx N] [--n-batch N]
//   [--flash-attn 0|1] [--cache-type f16|f32|q8_0] [--prompt-tokens P --new-tokens G]
//   [--depth D] [--warmup W] [--iterations I] [--max-time S] [--seed S] [--profile-ops]
//   [--answers DIR --compare C]   (DIR holds prompt.bin, forced.bin, text.bin: int32 tokens)
//   [--facts FILE]                (one line of JSON about this build, printed back as is)
//   [--cpu]                       (print the CPU as the kernel shows it, and exit)
#include "llama.h"
#include "ggml.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#if defined(__linux__)
#include <sched.h>
#include <sys/auxv.h>
#endif

namespace {

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string json_string(const std::string & text) {
    std::string out = "\"";
    for (unsigned char c : text) {
        if (c == '"' || c == '\\') { out += '\\'; out += static_cast<char>(c); }
        else if (c == '\n') { out += "\\n"; }
        else if (c < 0x20) { char buf[8]; snprintf(buf, sizeof buf, "\\u%04x", c); out += buf; }
        else { out += static_cast<char>(c); }
    }
    return out + "\"";
}

void emit(const std::string & json) {
    printf("BENCHLAB_DEVICE %s\n", json.c_str());
    fflush(stdout);
}

struct Options {
    std::string model, answers, facts, cache_type = "f16";
    int threads = 0, n_ctx = 0, n_batch = 512, flash_attn = 0;
    int prompt_tokens = 0, new_tokens = 0, depth = 0, warmup = 0, iterations = 1, compare = 0;
    double max_time = 0.0;
    uint64_t seed = 0;
    bool profile_ops = false, cpu_only = false;
};

[[noreturn]] void usage(const char * why) {
    fprintf(stderr, "benchlab-llama-runner: %s\n", why);
    exit(2);
}

Options parse(int argc, char ** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> const char * {
            if (i + 1 >= argc) { usage(("missing value after " + arg).c_str()); }
            return argv[++i];
        };
        if (arg == "--model") o.model = value();
        else if (arg == "--answers") o.answers = value();
        else if (arg == "--facts") o.facts = value();
        else if (arg == "--cache-type") o.cache_type = value();
        else if (arg == "--threads") o.threads = atoi(value());
        else if (arg == "--n-ctx") o.n_ctx = atoi(value());
        else if (arg == "--n-batch") o.n_batch = atoi(value());
        else if (arg == "--flash-attn") o.flash_attn = atoi(value());
        else if (arg == "--prompt-tokens") o.prompt_tokens = atoi(value());
        else if (arg == "--new-tokens") o.new_tokens = atoi(value());
        else if (arg == "--depth") o.depth = atoi(value());
        else if (arg == "--warmup") o.warmup = atoi(value());
        else if (arg == "--iterations") o.iterations = atoi(value());
        else if (arg == "--compare") o.compare = atoi(value());
        else if (arg == "--max-time") o.max_time = atof(value());
        else if (arg == "--seed") o.seed = strtoull(value(), nullptr, 10);
        else if (arg == "--profile-ops") o.profile_ops = true;
        else if (arg == "--cpu") o.cpu_only = true;
        else usage(("unknown option " + arg).c_str());
    }
    if (!o.cpu_only && o.model.empty()) usage("--model is required");
    if (o.new_tokens == 1) usage("--new-tokens must be 0 or at least 2");
    return o;
}

// The CPU as an ARM kernel shows it to a program: the hwcap words, and MIDR_EL1 where the
// kernel lets user space read it (HWCAP_CPUID). /proc/cpuinfo under an emulator may show
// the host instead; these come from the CPU the program runs on.
void print_cpu() {
    unsigned long hwcap = 0, hwcap2 = 0, midr = 0;
    bool midr_read = false;
#if defined(__linux__)
    hwcap = getauxval(AT_HWCAP);
    hwcap2 = getauxval(AT_HWCAP2);
#endif
#if defined(__aarch64__)
    if (hwcap & (1UL << 11)) {  // HWCAP_CPUID: MRS of the ID registers is emulated
        __asm__ volatile("mrs %0, MIDR_EL1" : "=r"(midr));
        midr_read = true;
    }
    const char * arch = "aarch64";
#elif defined(__x86_64__)
    const char * arch = "x86_64";
#else
    const char * arch = "unknown";
#endif
    char buf[256];
    snprintf(buf, sizeof buf, "{\"cpu\":{\"arch\":\"%s\",\"hwcap\":%lu,\"hwcap2\":%lu", arch,
             hwcap, hwcap2);
    std::string json = buf;
    if (midr_read) {
        snprintf(buf, sizeof buf, ",\"midr\":%lu", midr);
        json += buf;
    }
    emit(json + "}}");
}

// splitmix64: the synthetic prompt's tokens, from the process's seed (any ids but 0 and 1,
// as llama-bench's and benchlab's own synthetic prompts).
struct Random {
    uint64_t state;
    uint64_t next() {
        uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        return z ^ (z >> 31);
    }
};

std::vector<llama_token> synthetic(Random & rng, int count, int vocab) {
    std::vector<llama_token> out(count);
    for (auto & t : out) t = static_cast<llama_token>(2 + rng.next() % (vocab - 2));
    return out;
}

struct Model {
    llama_model * model = nullptr;
    llama_context * ctx = nullptr;
    llama_batch batch{};
    int capacity = 0, vocab = 0, pos = 0;

    void reset() {
        llama_memory_clear(llama_get_memory(ctx), true);
        pos = 0;
    }

    // Decode `tokens` after the cached positions in chunks of n_batch; the logits of every
    // position (all) or of the last one, copied into `out` (rows of `vocab`).
    bool forward(const llama_token * tokens, int count, bool all, std::vector<float> * out) {
        if (out) out->clear();
        for (int start = 0; start < count; start += capacity) {
            int n = std::min(capacity, count - start);
            batch.n_tokens = n;
            for (int i = 0; i < n; ++i) {
                batch.token[i] = tokens[start + i];
                batch.pos[i] = pos + i;
                batch.n_seq_id[i] = 1;
                batch.seq_id[i][0] = 0;
                batch.logits[i] = all || (start + i == count - 1);
            }
            if (llama_decode(ctx, batch) != 0) return false;
            pos += n;
            if (out) {
                for (int i = 0; i < n; ++i) {
                    if (!batch.logits[i]) continue;
                    const float * row = llama_get_logits_ith(ctx, i);
                    out->insert(out->end(), row, row + vocab);
                }
            }
        }
        return true;
    }
};

int argmax(const float * row, int vocab) {
    int best = 0;
    for (int i = 1; i < vocab; ++i) if (row[i] > row[best]) best = i;
    return best;
}

// One greedy generation as benchlab's runner times it: the clock starts as the prompt is
// handed over, and is read as each new token is chosen. Returns the readings' JSON.
bool generate(Model & m, const std::vector<llama_token> & depth,
              const std::vector<llama_token> & prompt, int new_tokens, std::string * readings,
              std::vector<llama_token> * chosen) {
    std::vector<float> logits;
    m.reset();
    if (!depth.empty() && !m.forward(depth.data(), depth.size(), false, nullptr)) return false;
    std::string json;
    int64_t start = now_ns();
    if (!m.forward(prompt.data(), prompt.size(), false, &logits)) return false;
    llama_token token = argmax(logits.data(), m.vocab);
    json += std::to_string(now_ns());
    if (chosen) chosen->push_back(token);
    for (int i = 1; i < new_tokens; ++i) {
        if (!m.forward(&token, 1, false, &logits)) return false;
        token = argmax(logits.data(), m.vocab);
        json += "," + std::to_string(now_ns());
        if (chosen) chosen->push_back(token);
    }
    *readings = "\"start\":" + std::to_string(start) + ",\"tokens\":[" + json + "]";
    return true;
}

// --profile-ops: time each node of the graph as the scheduler computes it, summed per op.
struct OpClock {
    std::map<std::string, double> ms;
    std::map<std::string, int> count;
    int64_t started = 0;
};

bool time_node(ggml_tensor * t, bool ask, void * data) {
    auto * clock = static_cast<OpClock *>(data);
    if (ask) {  // the scheduler computes this node alone, then calls again with ask = false
        clock->started = now_ns();
        return true;
    }
    std::string op = ggml_op_desc(t);
    clock->ms[op] += (now_ns() - clock->started) / 1e6;
    clock->count[op] += 1;
    return true;
}

bool read_tokens(const std::string & path, std::vector<llama_token> * out) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return false;
    int32_t value;
    while (fread(&value, sizeof value, 1, f) == 1) out->push_back(value);
    fclose(f);
    return true;
}

bool write_floats(const std::string & path, const std::vector<float> & data) {
    FILE * f = fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = fwrite(data.data(), sizeof(float), data.size(), f) == data.size();
    return fclose(f) == 0 && ok;
}

// The answers to the host's reference: logits of the prompt and the reference's continuation
// fed as given (teacher forcing), the free-running greedy tokens, and the text's next-token
// log-probabilities.
bool answers(Model & m, const Options & o) {
    std::vector<llama_token> prompt, forced, text;
    if (!read_tokens(o.answers + "/prompt.bin", &prompt) ||
        !read_tokens(o.answers + "/forced.bin", &forced) ||
        !read_tokens(o.answers + "/text.bin", &text)) {
        fprintf(stderr, "benchlab-llama-runner: cannot read the reference tokens in %s\n",
                o.answers.c_str());
        return false;
    }
    std::vector<float> logits;
    m.reset();
    if (!m.forward(forced.data(), forced.size(), true, &logits)) return false;
    if (!write_floats(o.answers + "/forced_logits.bin", logits)) return false;
    std::string manifest = "{\"tensors\":[{\"name\":\"forced_logits\",\"dtype\":\"float32\","
        "\"shape\":[" + std::to_string(forced.size()) + "," + std::to_string(m.vocab) +
        "],\"file\":\"forced_logits.bin\"}";
    std::string readings;
    std::vector<llama_token> free_tokens;
    if (!generate(m, {}, prompt, std::max(o.compare, 2), &readings, &free_tokens)) return false;
    free_tokens.resize(o.compare);
    FILE * f = fopen((o.answers + "/free_tokens.bin").c_str(), "wb");
    if (!f) return false;
    fwrite(free_tokens.data(), sizeof(llama_token), free_tokens.size(), f);
    fclose(f);
    manifest += ",{\"name\":\"free_tokens\",\"dtype\":\"int32\",\"shape\":[" +
        std::to_string(free_tokens.size()) + "],\"file\":\"free_tokens.bin\"}";
    // The text's next-token log-probabilities (perplexity on the host): one number per
    // position instead of a row of the vocabulary.
    m.reset();
    if (!m.forward(text.data(), text.size(), true, &logits)) return false;
    std::vector<float> logprobs;
    for (size_t i = 0; i + 1 < text.size(); ++i) {
        const float * row = logits.data() + i * m.vocab;
        float top = row[argmax(row, m.vocab)];
        double sum = 0.0;
        for (int v = 0; v < m.vocab; ++v) sum += std::exp(static_cast<double>(row[v] - top));
        logprobs.push_back(static_cast<float>(row[text[i + 1]] - top - std::log(sum)));
    }
    if (!write_floats(o.answers + "/text_logprobs.bin", logprobs)) return false;
    manifest += ",{\"name\":\"text_logprobs\",\"dtype\":\"float32\",\"shape\":[" +
        std::to_string(logprobs.size()) + "],\"file\":\"text_logprobs.bin\"}]}";
    f = fopen((o.answers + "/outputs.json").c_str(), "wb");
    if (!f) return false;
    fputs(manifest.c_str(), f);
    fclose(f);
    emit("{\"answers\":" + json_string(o.answers + "/outputs.json") + ",\"compare\":" +
         std::to_string(o.compare) + "}");
    return true;
}

// The CPUs this process may run on: the default thread count, as benchlab's own runner has.
int cpus_allowed() {
#if defined(__linux__)
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
#endif
    return 1;
}

long tokens_in(const std::string & path) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return 0;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    return size / static_cast<long>(sizeof(int32_t));
}

// The build's facts, as the host wrote them (one line of JSON).
void print_facts(const std::string & path) {
    FILE * f = fopen(path.c_str(), "rb");
    if (!f) return;
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    fclose(f);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    if (!text.empty() && text.find('\n') == std::string::npos) emit("{\"build\":" + text + "}");
}

long peak_rss_kib() {
    FILE * f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "VmHWM:", 6) == 0) kib = strtol(line + 6, nullptr, 10);
    }
    fclose(f);
    return kib;
}

void quiet_log(enum ggml_log_level level, const char * text, void *) {
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

}  // namespace

int main(int argc, char ** argv) {
    Options o = parse(argc, argv);
    print_cpu();
    if (o.cpu_only) return 0;
    if (!o.facts.empty()) print_facts(o.facts);
    llama_log_set(quiet_log, nullptr);
    llama_backend_init();
    emit("{\"system_info\":" + json_string(llama_print_system_info()) + "}");

    int64_t load_start = now_ns();
    llama_model_params mp = llama_model_default_params();
    Model m;
    m.model = llama_model_load_from_file(o.model.c_str(), mp);
    if (!m.model) { fprintf(stderr, "benchlab-llama-runner: cannot load %s\n", o.model.c_str()); return 1; }
    OpClock clock;
    llama_context_params cp = llama_context_default_params();
    long need = o.depth + o.prompt_tokens + o.new_tokens;
    if (!o.answers.empty()) {  // the reference's texts must fit the context too
        need = std::max({need, tokens_in(o.answers + "/forced.bin") + 1,
                         tokens_in(o.answers + "/text.bin")});
    }
    cp.n_ctx = o.n_ctx > 0 ? o.n_ctx : std::max(256L, ((need + 255) / 256) * 256);
    cp.n_batch = cp.n_ubatch = o.n_batch;
    cp.n_threads = cp.n_threads_batch = o.threads > 0 ? o.threads : cpus_allowed();
    cp.flash_attn_type = o.flash_attn ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
    ggml_type cache = o.cache_type == "f32" ? GGML_TYPE_F32 : o.cache_type == "q8_0" ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
    cp.type_k = cp.type_v = cache;
    cp.no_perf = true;
    m.ctx = llama_init_from_model(m.model, cp);
    if (!m.ctx) { fprintf(stderr, "benchlab-llama-runner: cannot make a context\n"); return 1; }
    m.vocab = llama_vocab_n_tokens(llama_model_get_vocab(m.model));
    m.capacity = o.n_batch;
    m.batch = llama_batch_init(o.n_batch, 0, 1);
    double load_ms = (now_ns() - load_start) / 1e6;
    char desc[128];
    llama_model_desc(m.model, desc, sizeof desc);
    char buf[512];
    snprintf(buf, sizeof buf, "{\"load_ms\":%.6f,\"vocab\":%d,\"n_ctx\":%u,\"threads\":%d,"
             "\"model\":%s,\"n_params\":%llu,\"prompt_tokens\":%d,\"new_tokens\":%d,"
             "\"depth\":%d}", load_ms, m.vocab, llama_n_ctx(m.ctx),
             llama_n_threads(m.ctx), json_string(desc).c_str(),
             static_cast<unsigned long long>(llama_model_n_params(m.model)), o.prompt_tokens,
             o.new_tokens, o.depth);
    emit(buf);

    if (o.new_tokens >= 2 && o.prompt_tokens >= 1) {
        Random rng{o.seed};
        std::vector<llama_token> prompt = synthetic(rng, o.prompt_tokens, m.vocab);
        std::vector<llama_token> depth = synthetic(rng, o.depth, m.vocab);
        std::string readings;
        if (!generate(m, depth, prompt, o.new_tokens, &readings, nullptr)) {
            fprintf(stderr, "benchlab-llama-runner: llama_decode failed\n");
            return 1;
        }
        emit("{\"generation\":\"cold\"," + readings + "}");
        for (int i = 0; i < o.warmup; ++i) generate(m, depth, prompt, o.new_tokens, &readings, nullptr);
        int64_t began = now_ns();
        for (int i = 0; i < o.iterations; ++i) {
            if (!generate(m, depth, prompt, o.new_tokens, &readings, nullptr)) return 1;
            emit("{\"generation\":\"timed\"," + readings + "}");
            if (o.max_time > 0 && (now_ns() - began) / 1e9 > o.max_time) break;
        }
        if (o.profile_ops) {
            // A context of its own times every node: splitting the graph at each node costs
            // time, so the measured generations above ran without it.
            llama_context * plain = m.ctx;
            cp.cb_eval = time_node;
            cp.cb_eval_user_data = &clock;
            m.ctx = llama_init_from_model(m.model, cp);
            generate(m, depth, prompt, o.new_tokens, &readings, nullptr);
            llama_free(m.ctx);
            m.ctx = plain;
            std::string ops;
            for (const auto & [op, ms] : clock.ms) {
                if (!ops.empty()) ops += ",";
                ops += json_string(op) + ":{\"ms\":" + std::to_string(ms) +
                       ",\"nodes\":" + std::to_string(clock.count[op]) + "}";
            }
            emit("{\"ops\":{" + ops + "}}");
        }
    }
    if (!o.answers.empty() && !answers(m, o)) {
        fprintf(stderr, "benchlab-llama-runner: the reference run failed\n");
        return 1;
    }
    long peak = peak_rss_kib();
    if (peak >= 0) emit("{\"peak_rss_kib\":" + std::to_string(peak) + "}");
    llama_batch_free(m.batch);
    llama_free(m.ctx);
    llama_model_free(m.model);
    return 0;
}
