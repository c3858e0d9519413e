/* What benchlab's C runners over a wheel's library share (ort_runner.c, litert_runner.c):
 * the clock, the command line's common flags and their errors, and the outputs' files
 * (benchlab.protocol.tensorfiles: DIR/outputs.bin and its manifest DIR/outputs.json).
 *
 * A runner defines RUNNER_NAME (its program's name, the prefix of its usage errors) before
 * including this file. Everything here is static: each runner is one translation unit. The
 * build's cache key hashes this file with the runner's source
 * (benchlab/devicetools/compile.py). */

#ifndef BENCHLAB_RUNNER_COMMON_H
#define BENCHLAB_RUNNER_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#ifndef RUNNER_NAME
#error "define RUNNER_NAME before including runner_common.h"
#endif

#define MAX_INPUT_FILES 64

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A bad command line: the reason on stderr and exit status 2. */
static int usage(const char* why, const char* arg) {
  fprintf(stderr, RUNNER_NAME ": %s%s\n", why, arg ? arg : "");
  return 2;
}

/* The value of `--name=value`, or NULL when `arg` is another flag. */
static const char* flag(const char* arg, const char* name) {
  size_t n = strlen(name);
  return strncmp(arg, name, n) == 0 && arg[n] == '=' ? arg + n + 1 : NULL;
}

static int count(const char* text, long lowest, long* out) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < lowest) return 0;
  *out = value;
  return 1;
}

/* The flags every runner takes, with executor_runner's meanings (each runner's header
 * comment says them). */
typedef struct {
  const char* model_path;
  const char* output_dir;
  const char* profile_path;
  long executions, warmup, threads, sets;
  char* inputs[MAX_INPUT_FILES];
  size_t n_inputs;
} CommonOptions;

static CommonOptions common_defaults(void) {
  CommonOptions opts = {.executions = 1, .sets = 1};
  return opts;
}

/* 1: `arg` was a common flag, taken into `opts`; 0: it is not one; 2: its value is bad (the
 * usage error already said why). */
static int common_flag(const char* arg, CommonOptions* opts) {
  const char* value;
  if ((value = flag(arg, "--model_path"))) {
    opts->model_path = value;
  } else if ((value = flag(arg, "--output_dir"))) {
    opts->output_dir = value;
  } else if ((value = flag(arg, "--profile_path"))) {
    opts->profile_path = value;
  } else if ((value = flag(arg, "--input"))) {
    if (opts->n_inputs == MAX_INPUT_FILES) return usage("too many --input files", NULL);
    opts->inputs[opts->n_inputs++] = (char*)value;
  } else if ((value = flag(arg, "--num_executions"))) {
    if (!count(value, 1, &opts->executions)) return usage("--num_executions takes a count >= 1", NULL);
  } else if ((value = flag(arg, "--input_sets"))) {
    if (!count(value, 1, &opts->sets)) return usage("--input_sets takes a count >= 1", NULL);
  } else if ((value = flag(arg, "--warmup"))) {
    if (!count(value, 0, &opts->warmup)) return usage("--warmup takes a count >= 0", NULL);
  } else if ((value = flag(arg, "--cpu_threads"))) {
    if (!count(value, 0, &opts->threads)) return usage("--cpu_threads takes a count", NULL);
  } else {
    return 0;
  }
  return 1;
}

/* The command line: the common flags into `common`, every other one through `own`, which
 * answers as common_flag does for the runner's own flags. 0 when it is well formed, else 2
 * (the usage error said why). */
static int parse_command_line(int argc, char** argv, CommonOptions* common,
                              int (*own)(const char* arg, void* opts), void* opts) {
  for (int i = 1; i < argc; ++i) {
    int taken = common_flag(argv[i], common);
    if (!taken) taken = own(argv[i], opts);
    if (taken == 2) return 2;
    if (!taken) return usage("unknown argument ", argv[i]);
  }
  if (!common->model_path) return usage("--model_path=PATH is required", NULL);
  return 0;
}

/* The outputs' manifest, built entry by entry while their bytes go to DIR/outputs.bin. */
typedef struct {
  char* text;
  size_t room, used, offset;
} Manifest;

static FILE* open_outputs(const char* dir, Manifest* manifest, size_t entries) {
  char path[4096];
  snprintf(path, sizeof path, "%s/outputs.bin", dir);
  FILE* data = fopen(path, "wb");
  if (!data) {
    fprintf(stderr, "cannot write %s\n", path);
    return NULL;
  }
  manifest->room = 256 + entries * 512, manifest->offset = 0;
  manifest->text = malloc(manifest->room);
  manifest->used = (size_t)snprintf(manifest->text, manifest->room, "{\"tensors\": [");
  return data;
}

/* Output `i` of input set `set`, `bytes` long, just written: named output<i> (set<k>.output<i>
 * for a further set), as the ExecuTorch runner names them, since a runtime's own output names
 * may hold any character. */
static void manifest_add(Manifest* m, long set, size_t i, const char* dtype, const char* sizes,
                         size_t bytes) {
  char prefix[32] = "";
  if (set) snprintf(prefix, sizeof prefix, "set%ld.", set);
  m->used += (size_t)snprintf(m->text + m->used, m->room - m->used,
                              "%s{\"name\": \"%soutput%zu\", \"dtype\": \"%s\", \"shape\": [%s], "
                              "\"file\": \"outputs.bin\", \"offset\": %zu}",
                              m->text[m->used - 1] == '[' ? "" : ", ", prefix, i, dtype, sizes,
                              m->offset);
  m->offset += bytes;
}

/* Closes the data and, when every output was written (`ok`), writes the manifest: last, so a
 * run cut short leaves data without a manifest, never a manifest without data. */
static int close_outputs(const char* dir, FILE* data, Manifest* m, int ok) {
  snprintf(m->text + m->used, m->room - m->used, "]}\n");
  if (fclose(data) != 0) ok = 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/outputs.json", dir);
  FILE* handle = ok ? fopen(path, "w") : NULL;
  ok = handle && fputs(m->text, handle) >= 0;
  if (handle && fclose(handle) != 0) ok = 0;
  free(m->text);
  if (!ok) fprintf(stderr, "could not write the outputs to %s\n", dir);
  return ok;
}

static void print_peak_memory(void) {
  struct rusage usage_now;
  if (getrusage(RUSAGE_SELF, &usage_now) == 0) {
    printf("Peak resident memory: %ld KiB\n", usage_now.ru_maxrss);
  }
}

#endif
