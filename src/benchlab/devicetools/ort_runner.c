/* benchlab-ort-runner: runs an ONNX model in ONNX Runtime and times it, over the C library
 * the onnxruntime wheel ships (onnxruntime/capi/libonnxruntime.so.<version>), through ORT's
 * C API (onnxruntime_c_api.h, from Debian's libonnxruntime-dev: no wheel has the header).
 *
 * It is benchlab's own program, not onnxruntime_perf_test, which cannot be built from the
 * library (it links ORT's internal test libraries). It prints the lines of benchlab's
 * ExecuTorch runner (executor_runner's: "Model loaded in X ms", "Iteration i of N: X ms"),
 * read by the same parser (frameworks/native/executor_runner.py): perf_test prints a mean
 * and percentiles only, and benchlab's statistics want every iteration. Flags:
 *
 *   --model_path=PATH          the .onnx model
 *   --num_executions=N         timed runs (default 1)
 *   --warmup=N                 runs before the timed ones, printed as the first N
 *                              "Iteration i of N+M" lines (iteration 1 is the cold one)
 *   --cpu_threads=N            the intra-op pool's threads (default: ORT's choice)
 *   --graph_optimization_level=disable|basic|extended|all   (default all)
 *   --input=PATH               one raw little-endian tensor file per model input, in the
 *                              session's input order; each must hold exactly the bytes the
 *                              input takes (symbolic dimensions are 1); inputs not given are
 *                              ones
 *   --input_sets=K             each input file holds K input sets back to back (default 1):
 *                              the timed runs use the first; after them each further set
 *                              runs once, so outputs come back for all K (the reference's
 *                              sets, all of which the Python runner scores)
 *   --output_dir=DIR           every output back to back in DIR/outputs.bin (C order, no
 *                              header) and DIR/outputs.json, their manifest with offsets
 *                              (benchlab.protocol.tensorfiles): output<i> of the first set,
 *                              set<k>.output<i> of set k
 *   --profile_path=PATH        after the timed runs, a second session with ORT's profiler on
 *                              runs warmup + N times and its profile JSON is moved to PATH
 *                              (the timed runs stay unprofiled, as the Python runner's)
 *
 * Its first line names it, the library's version (OrtGetApiBase()->GetVersionString()) and
 * the API version it asked for (the header's ORT_API_VERSION; the C API is ABI-stable and
 * a newer library serves an older API).
 *
 * Exit status: 0 when every run succeeded; 1 for a model, input or run the runtime refuses
 * (the reason on stderr); 2 for a bad command line. */

#include <onnxruntime_c_api.h>

#define RUNNER_NAME "benchlab-ort-runner"
#include "runner_common.h"

#include <stdint.h>

#define MAX_INPUTS 64

static const OrtApi* ort;

/* The status's message on stderr after `what`; true when there was an error. */
static int failed(OrtStatus* status, const char* what) {
  if (status == NULL) return 0;
  fprintf(stderr, "%s: %s\n", what, ort->GetErrorMessage(status));
  ort->ReleaseStatus(status);
  return 1;
}

static const char* dtype_name(ONNXTensorElementDataType type, size_t* size) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT: *size = 4; return "float32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE: *size = 8; return "float64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16: *size = 2; return "float16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8: *size = 1; return "int8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8: *size = 1; return "uint8";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16: *size = 2; return "int16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16: *size = 2; return "uint16";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32: *size = 4; return "int32";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64: *size = 8; return "int64";
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL: *size = 1; return "bool";
    default: *size = 0; return NULL;
  }
}

static void dims_text(const int64_t* dims, size_t n, char* out, size_t room) {
  size_t used = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && used < room; ++i) {
    used += (size_t)snprintf(out + used, room - used, "%s%lld", i ? ", " : "", (long long)dims[i]);
  }
}

typedef struct {
  char* name;
  ONNXTensorElementDataType type;
  int64_t dims[16];
  size_t rank, bytes;
  void* data;  /* what the tensor wraps: the set being run */
  char* sets;  /* every set from the file, back to back */
  OrtValue* value;
} Input;

/* One tensor per model input: the file given, else ones. */
static int make_inputs(OrtSession* session, OrtAllocator* alloc, OrtMemoryInfo* memory,
                       char** files, size_t n_files, long n_sets, Input* in, size_t* n_in) {
  if (failed(ort->SessionGetInputCount(session, n_in), "cannot count the model's inputs")) return 0;
  if (*n_in > MAX_INPUTS || n_files > *n_in) {
    fprintf(stderr, "%zu input files given; the model takes %zu inputs\n", n_files, *n_in);
    return 0;
  }
  for (size_t i = 0; i < *n_in; ++i) {
    OrtTypeInfo* info = NULL;
    const OrtTensorTypeAndShapeInfo* tensor = NULL;
    enum ONNXType kind;
    size_t item = 0;
    if (failed(ort->SessionGetInputName(session, i, alloc, &in[i].name), "input name") ||
        failed(ort->SessionGetInputTypeInfo(session, i, &info), "input type") ||
        failed(ort->GetOnnxTypeFromTypeInfo(info, &kind), "input kind")) return 0;
    if (kind != ONNX_TYPE_TENSOR ||
        failed(ort->CastTypeInfoToTensorInfo(info, &tensor), "input tensor") || !tensor ||
        failed(ort->GetTensorElementType(tensor, &in[i].type), "input element type") ||
        failed(ort->GetDimensionsCount(tensor, &in[i].rank), "input rank") || in[i].rank > 16 ||
        failed(ort->GetDimensions(tensor, in[i].dims, in[i].rank), "input sizes") ||
        !dtype_name(in[i].type, &item)) {
      fprintf(stderr, "input %zu (%s) is not a tensor the runner feeds\n", i, in[i].name);
      return 0;
    }
    ort->ReleaseTypeInfo(info);
    size_t numel = 1;
    for (size_t d = 0; d < in[i].rank; ++d) {
      if (in[i].dims[d] < 1) in[i].dims[d] = 1; /* symbolic: 1, as the Python runner does */
      numel *= (size_t)in[i].dims[d];
    }
    in[i].bytes = numel * item;
    in[i].data = calloc(in[i].bytes ? in[i].bytes : 1, 1);
    char sizes[256];
    dims_text(in[i].dims, in[i].rank, sizes, sizeof sizes);
    if (i < n_files) {
      FILE* handle = fopen(files[i], "rb");
      if (!handle) {
        fprintf(stderr, "cannot read input file %s\n", files[i]);
        return 0;
      }
      size_t want = in[i].bytes * (size_t)n_sets;
      in[i].sets = malloc(want ? want : 1);
      size_t got = fread(in[i].sets, 1, want, handle);
      int longer = fgetc(handle) != EOF;
      fclose(handle);
      if (got != want || longer) {
        size_t unused;
        fprintf(stderr, "input %zu (%s): %s does not hold the %zu bytes the model takes (a %s "
                "tensor of sizes [%s]%s)\n", i, in[i].name, files[i], want,
                dtype_name(in[i].type, &unused), sizes, n_sets > 1 ? ", once per set" : "");
        return 0;
      }
      memcpy(in[i].data, in[i].sets, in[i].bytes);
    } else if (in[i].type == ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT) {
      for (size_t k = 0; k < numel; ++k) ((float*)in[i].data)[k] = 1.0f;
    } else if (in[i].type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64) {
      for (size_t k = 0; k < numel; ++k) ((int64_t*)in[i].data)[k] = 1;
    }
    printf("Input %zu: %s [%s]\n", i, in[i].name, sizes);
    if (failed(ort->CreateTensorWithDataAsOrtValue(memory, in[i].data, in[i].bytes, in[i].dims,
                                                   in[i].rank, in[i].type, &in[i].value),
               "cannot make an input tensor")) return 0;
  }
  return 1;
}

/* Every output back to back in DIR/outputs.bin and its manifest DIR/outputs.json. */
static int write_outputs(const char* dir, char** names, OrtValue** outputs, size_t n_sets,
                         size_t n) {
  Manifest manifest;
  FILE* data = open_outputs(dir, &manifest, n_sets * n);
  if (!data) return 0;
  int ok = 1;
  for (size_t j = 0; ok && j < n_sets * n; ++j) {
    size_t set = j / n, i = j % n;
    OrtTensorTypeAndShapeInfo* info = NULL;
    ONNXTensorElementDataType type;
    size_t rank = 0, numel = 0, item = 0;
    int64_t dims[16];
    void* values = NULL;
    if (failed(ort->GetTensorTypeAndShape(outputs[j], &info), "output type") ||
        failed(ort->GetTensorElementType(info, &type), "output element type") ||
        failed(ort->GetDimensionsCount(info, &rank), "output rank") || rank > 16 ||
        failed(ort->GetDimensions(info, dims, rank), "output sizes") ||
        failed(ort->GetTensorShapeElementCount(info, &numel), "output size") ||
        failed(ort->GetTensorMutableData(outputs[j], &values), "output data")) {
      ok = 0;
      break;
    }
    ort->ReleaseTensorTypeAndShapeInfo(info);
    const char* dtype = dtype_name(type, &item);
    if (!dtype) {
      fprintf(stderr, "output %zu (%s) has an element type the tensor files do not carry\n", i,
              names[i]);
      ok = 0;
    } else if (fwrite(values, item, numel, data) != numel) {
      ok = 0;
    } else {
      char sizes[256];
      dims_text(dims, rank, sizes, sizeof sizes);
      manifest_add(&manifest, (long)set, i, dtype, sizes, numel * item);
    }
  }
  return close_outputs(dir, data, &manifest, ok);
}

typedef struct {
  CommonOptions c;
  GraphOptimizationLevel level;
} Options;

static OrtSession* open_session(OrtEnv* env, const Options* opts, const char* profile_prefix) {
  OrtSessionOptions* so = NULL;
  OrtSession* session = NULL;
  if (failed(ort->CreateSessionOptions(&so), "session options") ||
      failed(ort->SetSessionGraphOptimizationLevel(so, opts->level), "optimization level") ||
      (opts->c.threads > 0 &&
       failed(ort->SetIntraOpNumThreads(so, (int)opts->c.threads), "intra-op threads")) ||
      failed(ort->SetInterOpNumThreads(so, 1), "inter-op threads") ||
      (profile_prefix && failed(ort->EnableProfiling(so, profile_prefix), "profiling"))) {
    return NULL;
  }
  char what[4200];
  snprintf(what, sizeof what, "ONNX Runtime refused the model %s", opts->c.model_path);
  OrtStatus* status = ort->CreateSession(env, opts->c.model_path, so, &session);
  ort->ReleaseSessionOptions(so);
  return failed(status, what) ? NULL : session;
}

/* `total` runs; prints each one's time when `say` and keeps the last run's outputs. */
static int run(OrtSession* session, const Options* opts, Input* in, size_t n_in, char** out_names,
               size_t n_out, OrtValue** outputs, int say) {
  const char* in_names[MAX_INPUTS];
  const OrtValue* in_values[MAX_INPUTS];
  for (size_t i = 0; i < n_in; ++i) {
    in_names[i] = in[i].name;
    in_values[i] = in[i].value;
  }
  const long total = opts->c.warmup + opts->c.executions;
  double timed = 0;
  for (long i = 1; i <= total; ++i) {
    for (size_t k = 0; k < n_out; ++k) {
      if (outputs[k]) ort->ReleaseValue(outputs[k]);
      outputs[k] = NULL;
    }
    double begin = now_ms();
    OrtStatus* status = ort->Run(session, NULL, in_names, in_values, n_in,
                                 (const char* const*)out_names, n_out, outputs);
    double ms = now_ms() - begin;
    char what[64];
    snprintf(what, sizeof what, "run %ld of the model failed", i);
    if (failed(status, what)) return 0;
    if (say) printf("Iteration %ld of %ld: %.6f ms\n", i, total, ms);
    if (i > opts->c.warmup) timed += ms;
  }
  if (say) printf("Model executed successfully %ld time(s) in %.6f ms.\n", opts->c.executions, timed);
  return 1;
}

/* The flags of this runner alone (parse_command_line's `own`). */
static int own_flag(const char* arg, void* data) {
  static const char* names[] = {"disable", "basic", "extended", "all"};
  static const GraphOptimizationLevel levels[] = {ORT_DISABLE_ALL, ORT_ENABLE_BASIC,
                                                  ORT_ENABLE_EXTENDED, ORT_ENABLE_ALL};
  Options* opts = data;
  const char* value = flag(arg, "--graph_optimization_level");
  if (!value) return 0;
  for (int k = 0; k < 4; ++k) {
    if (strcmp(value, names[k]) == 0) {
      opts->level = levels[k];
      return 1;
    }
  }
  return usage("--graph_optimization_level takes disable, basic, extended or all", NULL);
}

int main(int argc, char** argv) {
  Options opts = {.c = common_defaults(), .level = ORT_ENABLE_ALL};
  int bad = parse_command_line(argc, argv, &opts.c, own_flag, &opts);
  if (bad) return bad;
  const OrtApiBase* base = OrtGetApiBase();
  ort = base->GetApi(ORT_API_VERSION);
  if (!ort) {
    fprintf(stderr, "ONNX Runtime %s serves no C API version %d\n", base->GetVersionString(),
            ORT_API_VERSION);
    return 1;
  }
  printf("benchlab-ort-runner: ONNX Runtime %s C library, API %d header\n",
         base->GetVersionString(), ORT_API_VERSION);
  OrtEnv* env = NULL;
  OrtAllocator* alloc = NULL;
  OrtMemoryInfo* memory = NULL;
  if (failed(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "benchlab", &env), "environment") ||
      failed(ort->GetAllocatorWithDefaultOptions(&alloc), "allocator") ||
      failed(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "memory")) {
    return 1;
  }
  double started = now_ms();
  OrtSession* session = open_session(env, &opts, NULL);
  if (!session) return 1;
  printf("Model file %s is loaded.\n", opts.c.model_path);
  printf("Model loaded in %.3f ms.\n", now_ms() - started);
  if (opts.c.threads > 0) printf("Setting intra_op_num_threads to %ld\n", opts.c.threads);

  Input in[MAX_INPUTS] = {{0}};
  size_t n_in = 0, n_out = 0;
  if (!make_inputs(session, alloc, memory, opts.c.inputs, opts.c.n_inputs, opts.c.sets, in, &n_in)) {
    return 1;
  }
  if (failed(ort->SessionGetOutputCount(session, &n_out), "cannot count the model's outputs")) return 1;
  char** out_names = calloc(n_out + 1, sizeof(char*));
  /* Every set's outputs, set after set: the timed runs fill the first set's. */
  OrtValue** outputs = calloc((size_t)opts.c.sets * n_out + 1, sizeof(OrtValue*));
  for (size_t i = 0; i < n_out; ++i) {
    if (failed(ort->SessionGetOutputName(session, i, alloc, &out_names[i]), "output name")) return 1;
  }
  if (!run(session, &opts, in, n_in, out_names, n_out, outputs, 1)) return 1;
  printf("%zu outputs:\n", n_out);
  if (opts.c.output_dir) {
    Options once = opts;
    once.c.warmup = 0, once.c.executions = 1;
    for (long k = 1; k < opts.c.sets; ++k) {  /* after timing: the timed runs see set 0 only */
      for (size_t i = 0; i < n_in; ++i) {
        if (in[i].sets) memcpy(in[i].data, in[i].sets + (size_t)k * in[i].bytes, in[i].bytes);
      }
      if (!run(session, &once, in, n_in, out_names, n_out, outputs + (size_t)k * n_out, 0)) {
        return 1;
      }
    }
    for (size_t i = 0; i < n_in; ++i) {  /* the profiled session runs set 0, as timed */
      if (in[i].sets) memcpy(in[i].data, in[i].sets, in[i].bytes);
    }
    if (!write_outputs(opts.c.output_dir, out_names, outputs, (size_t)opts.c.sets, n_out)) return 1;
  }

  if (opts.c.profile_path) {
    /* ORT appends a timestamp to the prefix; the file is moved to the path asked for. */
    OrtSession* profiled = open_session(env, &opts, opts.c.profile_path);
    char* written = NULL;
    if (!profiled || !run(profiled, &opts, in, n_in, out_names, n_out, outputs, 0) ||
        failed(ort->SessionEndProfiling(profiled, alloc, &written), "ending the profile") ||
        rename(written, opts.c.profile_path) != 0) {
      fprintf(stderr, "could not write ONNX Runtime's profile to %s\n", opts.c.profile_path);
      return 1;
    }
    alloc->Free(alloc, written);
    ort->ReleaseSession(profiled);
    printf("Profile written to file '%s'.\n", opts.c.profile_path);
  }
  print_peak_memory();
  for (size_t i = 0; i < (size_t)opts.c.sets * n_out; ++i) {
    if (outputs[i]) ort->ReleaseValue(outputs[i]);
  }
  for (size_t i = 0; i < n_out; ++i) alloc->Free(alloc, out_names[i]);
  for (size_t i = 0; i < n_in; ++i) {
    ort->ReleaseValue(in[i].value);
    alloc->Free(alloc, in[i].name);
    free(in[i].data);
    free(in[i].sets);
  }
  ort->ReleaseSession(session);
  ort->ReleaseMemoryInfo(memory);
  ort->ReleaseEnv(env);
  return 0;
}
