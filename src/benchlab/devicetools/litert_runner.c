/* benchlab-litert-runner: runs a .tflite model in TensorFlow Lite's interpreter and times it,
 * over the TFLite C API that LiteRT-LM's library exports (litert_lm/liblitert-lm.so in the
 * litert-lm-api wheel, for x86-64 and aarch64; ai-edge-litert's own library exports the
 * LiteRT C API only), or, for an ARMv8.0 CPU (LiteRT-LM's aarch64 library runs ARMv8.3's
 * LDAPR), over Debian's libtensorflow-lite2.14.1, which has no XNNPACK delegate. The headers
 * are TFLite's C API headers from Debian's libtensorflow-lite-dev; the few functions they
 * lack (the XNNPACK delegate, signatures) are declared below: their C signatures are
 * TFLite's stable C ABI. The build names the library in LITERT_LIBRARY (the first line says
 * it, so a result names what ran).
 *
 * It is benchlab's own program, not TFLite's benchmark_model (which needs the TensorFlow
 * sources and Bazel to build). It prints the lines of benchlab's other runners
 * (executor_runner's: "Model loaded in X ms", "Iteration i of N: X ms"), read by the same
 * parser (frameworks/native/executor_runner.py). Flags:
 *
 *   --model_path=PATH          the .tflite model
 *   --num_executions=N         timed runs (default 1)
 *   --warmup=N                 runs before the timed ones, printed as the first N
 *                              "Iteration i of N+M" lines
 *   --cpu_threads=N            the interpreter's threads and XNNPACK's (default: TFLite's
 *                              own, under which XNNPACK runs on the calling thread)
 *   --xnnpack=true|false|auto  apply the XNNPACK delegate, or not (the built-in kernels
 *                              run: neither library applies a delegate itself); auto (the
 *                              default): where the library has it; true on a library
 *                              without it is a refused command line
 *   --input=PATH               one raw little-endian tensor file per model input, in the
 *                              model's input order (its one signature's inputs sorted by
 *                              name, args_2 before args_10, as benchlab's Python runner
 *                              orders them; else the subgraph's order); a file holds the
 *                              input's own bytes, or float32 values for a quantized integer
 *                              input, quantized here with its scale and zero point; inputs
 *                              not given are ones
 *   --input_sets=K             each input file holds K sets back to back (default 1): the
 *                              timed runs use the first; each further set runs once after
 *                              them, so outputs come back for all K
 *   --output_dir=DIR           every output in DIR/outputs.bin and its manifest
 *                              DIR/outputs.json (benchlab.protocol.tensorfiles): output<i>
 *                              of the first set, set<k>.output<i> of set k; quantized
 *                              outputs dequantized to float32
 *   --profile_path=PATH        after the timed runs, a second interpreter with a telemetry
 *                              profiler runs warmup + N times; PATH gets one line per
 *                              operator run: run, kind ("node": an interpreter node;
 *                              "delegate": an operator a delegate ran and timed itself, as
 *                              XNNPACK reports its own), operator name, node, subgraph and
 *                              microseconds (the timed runs stay unprofiled)
 *
 * Exit status: 0 when every run succeeded; 1 for a model, input or run the runtime refuses
 * (the reason on stderr); 2 for a bad command line (XNNPACK asked of a library without it). */

#include <tensorflow/lite/core/c/c_api.h>
#include <tensorflow/lite/core/c/c_api_experimental.h>
#include <tensorflow/lite/profiling/telemetry/c/profiler.h>

#define RUNNER_NAME "benchlab-litert-runner"
#include "runner_common.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>

#define MAX_TENSORS 64
#define MAX_EVENTS 65536

#ifndef LITERT_LIBRARY
#define LITERT_LIBRARY "a TensorFlow Lite library its build did not name"
#endif

/* Not in Debian's 2.14 headers (the XNNPACK delegate's header is packaged nowhere). Weak:
 * Debian's library has no XNNPACK delegate, and the runner still loads there (the three are
 * then NULL, and XNNPACK is off). */
TfLiteDelegate* TfLiteXNNPackDelegateCreate(const void* options) __attribute__((weak));
void TfLiteXNNPackDelegateDelete(TfLiteDelegate* delegate) __attribute__((weak));
typedef struct TfLiteSignatureRunner TfLiteSignatureRunner;
int32_t TfLiteInterpreterGetSignatureCount(const TfLiteInterpreter* interpreter);
const char* TfLiteInterpreterGetSignatureKey(const TfLiteInterpreter* interpreter, int32_t i);
TfLiteSignatureRunner* TfLiteInterpreterGetSignatureRunner(const TfLiteInterpreter* interpreter,
                                                           const char* key);
size_t TfLiteSignatureRunnerGetInputCount(const TfLiteSignatureRunner* runner);
const char* TfLiteSignatureRunnerGetInputName(const TfLiteSignatureRunner* runner, int32_t i);
TfLiteTensor* TfLiteSignatureRunnerGetInputTensor(TfLiteSignatureRunner* runner,
                                                  const char* name);
size_t TfLiteSignatureRunnerGetOutputCount(const TfLiteSignatureRunner* runner);
const char* TfLiteSignatureRunnerGetOutputName(const TfLiteSignatureRunner* runner, int32_t i);
const TfLiteTensor* TfLiteSignatureRunnerGetOutputTensor(const TfLiteSignatureRunner* runner,
                                                         const char* name);
void TfLiteSignatureRunnerDelete(TfLiteSignatureRunner* runner);

/* TfLiteXNNPackDelegateOptions, whose first field has been `int32_t num_threads` in every
 * release; the rest is filled by TfLiteXNNPackDelegateOptionsDefault. The struct is returned
 * by value through memory the caller gives (it is larger than two registers on x86-64 and
 * aarch64), so room larger than any release's struct is enough. */
typedef struct {
  int32_t num_threads;
  unsigned char rest[1020];
} XnnpackOptions;
XnnpackOptions TfLiteXNNPackDelegateOptionsDefault(void) __attribute__((weak));

/* numpy's name of an element type; NULL for one the tensor files do not carry. */
static const char* dtype_name(TfLiteType type) {
  switch (type) {
    case kTfLiteFloat32: return "float32";
    case kTfLiteFloat64: return "float64";
    case kTfLiteFloat16: return "float16";
    case kTfLiteInt8: return "int8";
    case kTfLiteUInt8: return "uint8";
    case kTfLiteInt16: return "int16";
    case kTfLiteUInt16: return "uint16";
    case kTfLiteInt32: return "int32";
    case kTfLiteInt64: return "int64";
    case kTfLiteBool: return "bool";
    default: return NULL;
  }
}

static size_t numel_of(const TfLiteTensor* t) {
  size_t n = 1;
  for (int32_t d = 0; d < TfLiteTensorNumDims(t); ++d) n *= (size_t)TfLiteTensorDim(t, d);
  return n;
}

static void dims_text(const TfLiteTensor* t, char* out, size_t room) {
  size_t used = 0;
  out[0] = '\0';
  for (int32_t d = 0; d < TfLiteTensorNumDims(t) && used < room; ++d) {
    used += (size_t)snprintf(out + used, room - used, "%s%d", d ? ", " : "",
                             (int)TfLiteTensorDim(t, d));
  }
}

/* A quantized integer tensor: its values are scale * (q - zero_point). */
static int quantized(const TfLiteTensor* t) {
  TfLiteType type = TfLiteTensorType(t);
  return (type == kTfLiteInt8 || type == kTfLiteUInt8 || type == kTfLiteInt16) &&
         TfLiteTensorQuantizationParams(t).scale != 0.0f;
}

/* "args_2" before "args_10": digit runs compare as numbers. */
static int natural_less(const char* a, const char* b) {
  while (*a && *b) {
    if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
      char *ea, *eb;
      unsigned long long na = strtoull(a, &ea, 10), nb = strtoull(b, &eb, 10);
      if (na != nb) return na < nb;
      a = ea, b = eb;
    } else {
      if (*a != *b) return (unsigned char)*a < (unsigned char)*b;
      ++a, ++b;
    }
  }
  return *a == '\0' && *b != '\0';
}

typedef struct {
  TfLiteTensor* in[MAX_TENSORS];
  const TfLiteTensor* out[MAX_TENSORS];
  size_t n_in, n_out;
} Tensors;

/* The interpreter's tensors in the model's order: its one signature's, sorted by name, when
 * that signature names exactly the interpreter's inputs and outputs; else the subgraph's. */
static int order_tensors(TfLiteInterpreter* interp, Tensors* t) {
  t->n_in = (size_t)TfLiteInterpreterGetInputTensorCount(interp);
  t->n_out = (size_t)TfLiteInterpreterGetOutputTensorCount(interp);
  if (t->n_in > MAX_TENSORS || t->n_out > MAX_TENSORS) {
    fprintf(stderr, "the model has more than %d inputs or outputs\n", MAX_TENSORS);
    return 0;
  }
  for (size_t i = 0; i < t->n_in; ++i) t->in[i] = TfLiteInterpreterGetInputTensor(interp, (int32_t)i);
  for (size_t i = 0; i < t->n_out; ++i) {
    t->out[i] = TfLiteInterpreterGetOutputTensor(interp, (int32_t)i);
  }
  if (TfLiteInterpreterGetSignatureCount(interp) != 1) return 1;
  TfLiteSignatureRunner* sig = TfLiteInterpreterGetSignatureRunner(
      interp, TfLiteInterpreterGetSignatureKey(interp, 0));
  if (!sig) return 1;
  const char* in_names[MAX_TENSORS];
  const char* out_names[MAX_TENSORS];
  int same = TfLiteSignatureRunnerGetInputCount(sig) == t->n_in &&
             TfLiteSignatureRunnerGetOutputCount(sig) == t->n_out;
  for (size_t i = 0; same && i < t->n_in; ++i) in_names[i] = TfLiteSignatureRunnerGetInputName(sig, (int32_t)i);
  for (size_t i = 0; same && i < t->n_out; ++i) out_names[i] = TfLiteSignatureRunnerGetOutputName(sig, (int32_t)i);
  for (int pass = 0; same && pass < 2; ++pass) {  /* sort the names: few, insertion sort */
    const char** names = pass ? out_names : in_names;
    size_t n = pass ? t->n_out : t->n_in;
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = i; j > 0 && natural_less(names[j], names[j - 1]); --j) {
        const char* swap = names[j];
        names[j] = names[j - 1], names[j - 1] = swap;
      }
    }
  }
  Tensors sorted = {.n_in = t->n_in, .n_out = t->n_out};
  for (size_t i = 0; same && i < t->n_in; ++i) {
    sorted.in[i] = TfLiteSignatureRunnerGetInputTensor(sig, in_names[i]);
    int found = 0;
    for (size_t k = 0; k < t->n_in; ++k) found |= sorted.in[i] == t->in[k];
    same = found;
  }
  for (size_t i = 0; same && i < t->n_out; ++i) {
    sorted.out[i] = TfLiteSignatureRunnerGetOutputTensor(sig, out_names[i]);
    int found = 0;
    for (size_t k = 0; k < t->n_out; ++k) found |= sorted.out[i] == t->out[k];
    same = found;
  }
  TfLiteSignatureRunnerDelete(sig);
  if (same) *t = sorted;
  return 1;
}

typedef struct {
  size_t bytes;  /* the tensor's */
  char* sets;    /* every set, as the tensor takes it, back to back */
} Input;

/* Each input's sets read from its file (quantized from float32 where the tensor is a
 * quantized integer and the file holds floats), else ones. */
static int read_inputs(const Tensors* t, char** files, size_t n_files, long n_sets, Input* in) {
  if (n_files > t->n_in) {
    fprintf(stderr, "%zu input files given; the model takes %zu inputs\n", n_files, t->n_in);
    return 0;
  }
  for (size_t i = 0; i < t->n_in; ++i) {
    const TfLiteTensor* tensor = t->in[i];
    const char* dtype = dtype_name(TfLiteTensorType(tensor));
    char sizes[256];
    dims_text(tensor, sizes, sizeof sizes);
    if (!dtype) {
      fprintf(stderr, "input %zu (%s) is not a tensor the runner feeds\n", i, TfLiteTensorName(tensor));
      return 0;
    }
    size_t numel = numel_of(tensor), item = TfLiteTensorByteSize(tensor) / (numel ? numel : 1);
    in[i].bytes = TfLiteTensorByteSize(tensor);
    in[i].sets = calloc((size_t)n_sets * in[i].bytes + 1, 1);
    if (i < n_files) {
      FILE* handle = fopen(files[i], "rb");
      if (!handle) {
        fprintf(stderr, "cannot read input file %s\n", files[i]);
        return 0;
      }
      fseek(handle, 0, SEEK_END);
      size_t size = (size_t)ftell(handle);
      rewind(handle);
      int floats = quantized(tensor) && size == (size_t)n_sets * numel * sizeof(float);
      if (size != (size_t)n_sets * in[i].bytes && !floats) {
        fprintf(stderr, "input %zu (%s): %s does not hold the %zu bytes the model takes (a %s "
                "tensor of sizes [%s]%s)\n", i, TfLiteTensorName(tensor), files[i],
                (size_t)n_sets * in[i].bytes, dtype, sizes, n_sets > 1 ? ", once per set" : "");
        fclose(handle);
        return 0;
      }
      char* raw = malloc(size + 1);
      size_t got = fread(raw, 1, size, handle);
      fclose(handle);
      if (got != size) {
        fprintf(stderr, "cannot read input file %s\n", files[i]);
        return 0;
      }
      if (floats) {
        TfLiteQuantizationParams q = TfLiteTensorQuantizationParams(tensor);
        TfLiteType type = TfLiteTensorType(tensor);
        double lo = type == kTfLiteInt8 ? -128 : type == kTfLiteUInt8 ? 0 : -32768;
        double hi = type == kTfLiteInt8 ? 127 : type == kTfLiteUInt8 ? 255 : 32767;
        for (size_t k = 0; k < (size_t)n_sets * numel; ++k) {
          float value;
          memcpy(&value, raw + k * sizeof(float), sizeof value);
          double v = nearbyint(value / q.scale + q.zero_point);
          v = v < lo ? lo : v > hi ? hi : v;
          if (type == kTfLiteInt8) ((int8_t*)in[i].sets)[k] = (int8_t)v;
          else if (type == kTfLiteUInt8) ((uint8_t*)in[i].sets)[k] = (uint8_t)v;
          else ((int16_t*)in[i].sets)[k] = (int16_t)v;
        }
      } else {
        memcpy(in[i].sets, raw, size);
      }
      free(raw);
    } else {
      TfLiteType type = TfLiteTensorType(tensor);
      for (size_t k = 0; k < numel; ++k) {
        if (type == kTfLiteFloat32) ((float*)in[i].sets)[k] = 1.0f;
        else if (type == kTfLiteInt64) ((int64_t*)in[i].sets)[k] = 1;
        else if (type == kTfLiteInt32) ((int32_t*)in[i].sets)[k] = 1;
        else if (item == 1) in[i].sets[k] = 1;
      }
    }
    printf("Input %zu: %s [%s]\n", i, TfLiteTensorName(tensor), sizes);
  }
  return 1;
}

static int load_set(const Tensors* t, const Input* in, long set) {
  for (size_t i = 0; i < t->n_in; ++i) {
    if (TfLiteTensorCopyFromBuffer(t->in[i], in[i].sets + (size_t)set * in[i].bytes,
                                   in[i].bytes) != kTfLiteOk) {
      fprintf(stderr, "cannot set input %zu\n", i);
      return 0;
    }
  }
  return 1;
}

/* One set's outputs appended to `data` (dequantized where quantized) and to the manifest. */
static int append_outputs(const Tensors* t, long set, FILE* data, Manifest* manifest) {
  for (size_t i = 0; i < t->n_out; ++i) {
    const TfLiteTensor* tensor = t->out[i];
    size_t numel = numel_of(tensor), bytes = TfLiteTensorByteSize(tensor);
    const char* dtype = dtype_name(TfLiteTensorType(tensor));
    const void* values = TfLiteTensorData(tensor);
    float* dequantized = NULL;
    if (quantized(tensor)) {
      TfLiteQuantizationParams q = TfLiteTensorQuantizationParams(tensor);
      TfLiteType type = TfLiteTensorType(tensor);
      dequantized = malloc(numel * sizeof(float) + 1);
      for (size_t k = 0; k < numel; ++k) {
        double v = type == kTfLiteInt8 ? ((const int8_t*)values)[k]
                   : type == kTfLiteUInt8 ? ((const uint8_t*)values)[k]
                                          : ((const int16_t*)values)[k];
        dequantized[k] = (float)((v - q.zero_point) * q.scale);
      }
      values = dequantized, bytes = numel * sizeof(float), dtype = "float32";
    }
    if (!dtype || !values) {
      fprintf(stderr, "output %zu (%s) has an element type the tensor files do not carry\n", i,
              TfLiteTensorName(tensor));
      return 0;
    }
    int ok = fwrite(values, 1, bytes, data) == bytes;
    free(dequantized);
    if (!ok) return 0;
    char sizes[256];
    dims_text(tensor, sizes, sizeof sizes);
    manifest_add(manifest, set, i, dtype, sizes, bytes);
  }
  return 1;
}

/* The telemetry profiler's operator events: begun, ended, and the run each belongs to. */
typedef struct {
  double begin_ms[MAX_EVENTS], end_ms[MAX_EVENTS];
  const char* name[MAX_EVENTS];
  int64_t node[MAX_EVENTS], subgraph[MAX_EVENTS];
  long run[MAX_EVENTS];
  char delegated[MAX_EVENTS];  /* reported whole by a delegate (XNNPACK's own operators) */
  uint32_t n;
  long current_run;
} OpEvents;

static void ignore_event(struct TfLiteTelemetryProfilerStruct* p, const char* name, uint64_t s) {
  (void)p, (void)name, (void)s;
}
static void ignore_op_event(struct TfLiteTelemetryProfilerStruct* p, const char* name,
                            int64_t op, int64_t subgraph, uint64_t s) {
  (void)p, (void)name, (void)op, (void)subgraph, (void)s;
}
static void ignore_settings(struct TfLiteTelemetryProfilerStruct* p, const char* name,
                            const TfLiteTelemetrySettings* settings) {
  (void)p, (void)name, (void)settings;
}
static uint32_t begin_op(struct TfLiteTelemetryProfilerStruct* p, const char* name, int64_t op,
                         int64_t subgraph) {
  OpEvents* events = p->data;
  if (events->n == MAX_EVENTS) return UINT32_MAX;
  uint32_t at = events->n++;
  /* Copied: a delegate's name is not always alive once its event ends. */
  events->name[at] = strdup(name ? name : "?");
  events->node[at] = op, events->subgraph[at] = subgraph;
  events->run[at] = events->current_run;
  events->delegated[at] = 0;
  events->end_ms[at] = -1;
  events->begin_ms[at] = now_ms();
  return at;
}
static void end_op(struct TfLiteTelemetryProfilerStruct* p, uint32_t at) {
  OpEvents* events = p->data;
  if (at < events->n) events->end_ms[at] = now_ms();
}
static void timed_op(struct TfLiteTelemetryProfilerStruct* p, const char* name, uint64_t us,
                     int64_t op, int64_t subgraph) {
  uint32_t at = begin_op(p, name, op, subgraph);
  OpEvents* events = p->data;
  if (at < events->n) {
    events->end_ms[at] = events->begin_ms[at] + us / 1e3;
    events->delegated[at] = 1;
  }
}

typedef struct {
  CommonOptions c;
  int xnnpack;
} Options;

typedef struct {
  TfLiteModel* model;
  TfLiteInterpreterOptions* options;
  TfLiteDelegate* delegate;
  TfLiteInterpreter* interp;
} Session;

static int open_session(const Options* opts, TfLiteTelemetryProfilerStruct* profiler,
                        Session* s) {
  s->model = TfLiteModelCreateFromFile(opts->c.model_path);
  if (!s->model) {
    fprintf(stderr, "TensorFlow Lite refused the model %s (not a .tflite flatbuffer it reads)\n",
            opts->c.model_path);
    return 0;
  }
  s->options = TfLiteInterpreterOptionsCreate();
  if (opts->c.threads > 0) TfLiteInterpreterOptionsSetNumThreads(s->options, (int32_t)opts->c.threads);
  if (opts->xnnpack) {
    XnnpackOptions xnn = TfLiteXNNPackDelegateOptionsDefault();
    if (opts->c.threads > 0) xnn.num_threads = (int32_t)opts->c.threads;
    s->delegate = TfLiteXNNPackDelegateCreate(&xnn);
    if (!s->delegate) {
      fprintf(stderr, "TensorFlow Lite could not create the XNNPACK delegate\n");
      return 0;
    }
    TfLiteInterpreterOptionsAddDelegate(s->options, s->delegate);
  }
  if (profiler) TfLiteInterpreterOptionsSetTelemetryProfiler(s->options, profiler);
  s->interp = TfLiteInterpreterCreate(s->model, s->options);
  if (!s->interp || TfLiteInterpreterAllocateTensors(s->interp) != kTfLiteOk) {
    fprintf(stderr, "TensorFlow Lite refused the model %s (its operators or delegate did not "
            "prepare)\n", opts->c.model_path);
    return 0;
  }
  return 1;
}

static void close_session(Session* s) {
  if (s->interp) TfLiteInterpreterDelete(s->interp);
  if (s->delegate) TfLiteXNNPackDelegateDelete(s->delegate);
  if (s->options) TfLiteInterpreterOptionsDelete(s->options);
  if (s->model) TfLiteModelDelete(s->model);
}

/* warmup + executions runs of set 0; each one's time printed when `say`. */
static int run(TfLiteInterpreter* interp, const Options* opts, const Tensors* t,
               const Input* in, int say, OpEvents* events) {
  const long total = opts->c.warmup + opts->c.executions;
  double timed = 0;
  for (long i = 1; i <= total; ++i) {
    if (events) events->current_run = i;
    double begin = now_ms();
    int ok = load_set(t, in, 0) && TfLiteInterpreterInvoke(interp) == kTfLiteOk;
    double ms = now_ms() - begin;
    if (!ok) {
      fprintf(stderr, "run %ld of the model failed\n", i);
      return 0;
    }
    if (say) printf("Iteration %ld of %ld: %.6f ms\n", i, total, ms);
    if (i > opts->c.warmup) timed += ms;
  }
  if (say) printf("Model executed successfully %ld time(s) in %.6f ms.\n", opts->c.executions, timed);
  return 1;
}

static int write_outputs(TfLiteInterpreter* interp, const Options* opts, const Tensors* t,
                         const Input* in) {
  Manifest manifest;
  FILE* data = open_outputs(opts->c.output_dir, &manifest, (size_t)opts->c.sets * t->n_out);
  if (!data) return 0;
  int ok = append_outputs(t, 0, data, &manifest);  /* the timed runs' */
  for (long k = 1; ok && k < opts->c.sets; ++k) {  /* after timing: the timed runs see set 0 */
    ok = load_set(t, in, k) && TfLiteInterpreterInvoke(interp) == kTfLiteOk &&
         append_outputs(t, k, data, &manifest);
  }
  return close_outputs(opts->c.output_dir, data, &manifest, ok);
}

static int write_profile(const Options* opts, const Tensors* timed, const Input* in) {
  static OpEvents events;
  TfLiteTelemetryProfilerStruct profiler = {
      .data = &events, .ReportTelemetryEvent = ignore_event,
      .ReportTelemetryOpEvent = ignore_op_event, .ReportSettings = ignore_settings,
      .ReportBeginOpInvokeEvent = begin_op, .ReportEndOpInvokeEvent = end_op,
      .ReportOpInvokeEvent = timed_op};
  Session s = {0};
  Tensors t;
  if (!open_session(opts, &profiler, &s) || !order_tensors(s.interp, &t) ||
      t.n_in != timed->n_in) {
    close_session(&s);
    return 0;
  }
  events.n = 0;  /* what preparing the interpreter reported is not a run */
  int ok = run(s.interp, opts, &t, in, 0, &events);
  FILE* out = ok ? fopen(opts->c.profile_path, "w") : NULL;
  if (out) {
    fprintf(out, "# run\tkind\toperator\tnode\tsubgraph\tus\n");
    for (uint32_t i = 0; i < events.n; ++i) {
      if (events.end_ms[i] < 0) continue;
      fprintf(out, "%ld\t%s\t%s\t%lld\t%lld\t%.3f\n", events.run[i],
              events.delegated[i] ? "delegate" : "node", events.name[i],
              (long long)events.node[i],
              (long long)events.subgraph[i], (events.end_ms[i] - events.begin_ms[i]) * 1e3);
    }
    ok = fclose(out) == 0;
  } else {
    ok = 0;
  }
  close_session(&s);
  if (ok) printf("Profile written to file '%s'.\n", opts->c.profile_path);
  else fprintf(stderr, "could not write TensorFlow Lite's profile to %s\n", opts->c.profile_path);
  return ok;
}

/* The flags of this runner alone (parse_command_line's `own`). */
static int own_flag(const char* arg, void* data) {
  Options* opts = data;
  const char* value = flag(arg, "--xnnpack");
  if (!value) return 0;
  if (strcmp(value, "true") && strcmp(value, "false") && strcmp(value, "auto")) {
    return usage("--xnnpack takes true, false or auto", NULL);
  }
  opts->xnnpack = strcmp(value, "auto") == 0 ? -1 : strcmp(value, "true") == 0;
  return 1;
}

int main(int argc, char** argv) {
  Options opts = {.c = common_defaults(), .xnnpack = -1};
  int bad = parse_command_line(argc, argv, &opts.c, own_flag, &opts);
  if (bad) return bad;
  const int has_xnnpack = TfLiteXNNPackDelegateCreate != NULL;
  if (opts.xnnpack == 1 && !has_xnnpack) {
    return usage("--xnnpack=true: this TensorFlow Lite library (" LITERT_LIBRARY ") has no "
                 "XNNPACK delegate (run with --xnnpack=false or auto)", NULL);
  }
  if (opts.xnnpack < 0) opts.xnnpack = has_xnnpack;
  printf("benchlab-litert-runner: TensorFlow Lite %s C API of %s\n", TfLiteVersion(),
         LITERT_LIBRARY);
  double started = now_ms();
  Session s = {0};
  if (!open_session(&opts, NULL, &s)) return 1;
  printf("Model file %s is loaded.\n", opts.c.model_path);
  printf("Model loaded in %.3f ms.\n", now_ms() - started);
  printf("XNNPACK delegate: %s\n", opts.xnnpack ? "applied"
         : has_xnnpack ? "off" : "off (this library has none)");
  if (opts.c.threads > 0) printf("Setting num_threads to %ld\n", opts.c.threads);
  Tensors t;
  Input in[MAX_TENSORS] = {{0}};
  if (!order_tensors(s.interp, &t) ||
      !read_inputs(&t, opts.c.inputs, opts.c.n_inputs, opts.c.sets, in) ||
      !run(s.interp, &opts, &t, in, 1, NULL)) {
    return 1;
  }
  printf("%zu outputs:\n", t.n_out);
  if (opts.c.output_dir && !write_outputs(s.interp, &opts, &t, in)) return 1;
  if (opts.c.profile_path && !write_profile(&opts, &t, in)) return 1;
  print_peak_memory();
  for (size_t i = 0; i < t.n_in; ++i) free(in[i].sets);
  close_session(&s);
  return 0;
}
