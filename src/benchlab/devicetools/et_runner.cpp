// benchlab-et-runner: runs one method of an ExecuTorch program (.pte) and times it, over the
// runtime libraries ExecuTorch ships in its wheel (executorch/lib, from 1.5.0 on).
//
// It is benchlab's own program, not ExecuTorch's executor_runner, whose source is not on
// PyPI. It takes executor_runner's flags and prints its lines, so that benchlab's parser for
// executor_runner (frameworks/native/executor_runner.py) reads either program:
//
//   --model_path=PATH       the program
//   --method_name=NAME      the method (default forward)
//   --num_executions=N      timed executions (default 1)
//   --cpu_threads=N         the size of the threadpool XNNPACK runs on (default: the runtime's)
//   --etdump_path=PATH      write the event tracer's ETDump there (per-operator times)
//   --print_output=all|none print each output's sizes and first values (default all)
//
// and benchlab's additions:
//
//   --warmup=N              N executions before the timed ones, printed as the first N
//                           "Iteration i of N+M" lines (so iteration 1 is the cold one)
//   --input=PATH            one raw little-endian tensor file per method input, in order;
//                           each must hold the bytes the method's input takes (inputs not
//                           given are all ones, as executor_runner fills them)
//   --output_dir=DIR        write the outputs back to back as DIR/outputs.bin (C order, no
//                           header) and DIR/outputs.json, their manifest with offsets
//                           (benchlab.protocol.tensorfiles)
//
// Its first line names it and the ExecuTorch release it was built against (the build passes
// -DBENCHLAB_ET_VERSION), so a result says which runtime ran.
//
// Exit status: 0 when every execution succeeded; 1 for a program, method or input the
// runtime refuses (the reason on stderr); 2 for a bad command line.

#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

// The wheel ships the threadpool library without its header (include/ has only
// threadpool_guard.h). These two declarations name functions libexecutorch_threadpool.so
// exports; sizing the pool is what executor_runner's --cpu_threads does.
namespace executorch::extension::threadpool {
class ThreadPool {
 public:
  size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool

#ifndef BENCHLAB_ET_VERSION
#define BENCHLAB_ET_VERSION "unknown"
#endif

namespace {

using executorch::aten::ScalarType;
using executorch::extension::TensorPtr;
using executorch::extension::module::Module;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::Tag;

struct Options {
  std::string model_path, method = "forward", etdump_path, output_dir;
  std::string print_output = "all";
  long executions = 1, warmup = 0, threads = -1;
  std::vector<std::string> inputs;
};

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

bool flag(const char* arg, const char* name, std::string* value) {
  size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) != 0 || arg[n] != '=') return false;
  *value = arg + n + 1;
  return true;
}

bool count(const std::string& text, long lowest, long* out) {
  char* end = nullptr;
  long value = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || value < lowest) return false;
  *out = value;
  return true;
}

// The runtime's error codes by name (runtime/core/error.h), so a refusal says what it was.
std::string error_text(Error error) {
  const char* name = "";
  switch (error) {
    case Error::Internal: name = "Internal"; break;
    case Error::InvalidState: name = "InvalidState"; break;
    case Error::NotSupported: name = "NotSupported"; break;
    case Error::NotImplemented: name = "NotImplemented"; break;
    case Error::InvalidArgument: name = "InvalidArgument"; break;
    case Error::InvalidType: name = "InvalidType"; break;
    case Error::OperatorMissing: name = "OperatorMissing: a kernel the program needs is not in the libraries"; break;
    case Error::NotFound: name = "NotFound"; break;
    case Error::MemoryAllocationFailed: name = "MemoryAllocationFailed"; break;
    case Error::AccessFailed: name = "AccessFailed"; break;
    case Error::InvalidProgram: name = "InvalidProgram: not a whole, valid .pte"; break;
    case Error::OutOfResources: name = "OutOfResources"; break;
    case Error::DelegateInvalidCompatibility: name = "DelegateInvalidCompatibility: the delegate refused the program's blob"; break;
    default: break;
  }
  char code[16];
  std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(error));
  return *name ? std::string(name) + ", error " + code : std::string("error ") + code;
}

int usage(const char* why) {
  std::fprintf(stderr, "benchlab-et-runner: %s\n", why);
  return 2;
}

// numpy's name of an element type, for the manifest; empty for one the protocol lacks.
const char* dtype_name(ScalarType type) {
  switch (type) {
    case ScalarType::Float: return "float32";
    case ScalarType::Half: return "float16";
    case ScalarType::Double: return "float64";
    case ScalarType::Char: return "int8";
    case ScalarType::Byte: return "uint8";
    case ScalarType::Short: return "int16";
    case ScalarType::Int: return "int32";
    case ScalarType::Long: return "int64";
    case ScalarType::Bool: return "bool";
    default: return "";
  }
}

std::string sizes_text(executorch::aten::ArrayRef<executorch::aten::SizesType> sizes) {
  std::string text;
  for (size_t i = 0; i < sizes.size(); ++i) {
    text += (i ? ", " : "") + std::to_string(sizes[i]);
  }
  return text;
}

// The tensor's elements in C order (logical order), whatever its dim order: a channels-last
// output would otherwise reach the host permuted.
std::vector<uint8_t> c_order_bytes(const executorch::aten::Tensor& tensor) {
  const size_t item = executorch::runtime::elementSize(tensor.scalar_type());
  const size_t numel = tensor.numel(), rank = tensor.dim();
  const auto* data = static_cast<const uint8_t*>(tensor.const_data_ptr());
  std::vector<uint8_t> out(numel * item);
  std::vector<int64_t> index(rank, 0);
  for (size_t n = 0; n < numel; ++n) {
    int64_t offset = 0;
    for (size_t d = 0; d < rank; ++d) offset += index[d] * tensor.strides()[d];
    std::memcpy(out.data() + n * item, data + offset * item, item);
    for (size_t d = rank; d-- > 0;) {  // next index, last dimension fastest
      if (++index[d] < tensor.sizes()[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

void print_output(size_t index, const EValue& value) {
  if (!value.isTensor()) {
    std::printf("Output %zu: %s\n", index, value.isInt() ? std::to_string(value.toInt()).c_str()
                                                         : "(not a tensor)");
    return;
  }
  const auto& tensor = value.toTensor();
  std::printf("Output %zu: tensor(sizes=[%s], [", index, sizes_text(tensor.sizes()).c_str());
  if (tensor.scalar_type() == ScalarType::Float) {
    const float* data = tensor.const_data_ptr<float>();
    for (ssize_t i = 0; i < tensor.numel() && i < 8; ++i) std::printf("%s%g", i ? ", " : "", data[i]);
    if (tensor.numel() > 8) std::printf(", ...");
  }
  std::printf("])\n");
}

// Every tensor output, back to back in DIR/outputs.bin (C order, no header), and
// DIR/outputs.json, their manifest with each one's offset (benchlab.protocol.tensorfiles):
// two files to fetch, however many outputs the program has.
bool write_outputs(const std::string& dir, const std::vector<EValue>& outputs) {
  FILE* data = std::fopen((dir + "/outputs.bin").c_str(), "wb");
  if (!data) {
    std::fprintf(stderr, "cannot write %s/outputs.bin\n", dir.c_str());
    return false;
  }
  std::string manifest = "{\"tensors\": [";
  size_t offset = 0;
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].isTensor()) continue;
    const auto& tensor = outputs[i].toTensor();
    const char* dtype = dtype_name(tensor.scalar_type());
    if (!*dtype) {
      std::fprintf(stderr, "output %zu has an element type the tensor files do not carry\n", i);
      std::fclose(data);
      return false;
    }
    const std::vector<uint8_t> bytes = c_order_bytes(tensor);
    if (std::fwrite(bytes.data(), 1, bytes.size(), data) != bytes.size()) {
      std::fprintf(stderr, "cannot write %s/outputs.bin\n", dir.c_str());
      std::fclose(data);
      return false;
    }
    manifest += std::string(manifest.back() == '[' ? "" : ", ") + "{\"name\": \"output" +
                std::to_string(i) + "\", \"dtype\": \"" + dtype + "\", \"shape\": [" +
                sizes_text(tensor.sizes()) + "], \"file\": \"outputs.bin\", \"offset\": " +
                std::to_string(offset) + "}";
    offset += bytes.size();
  }
  manifest += "]}\n";
  if (std::fclose(data) != 0) return false;
  // The manifest last: a run cut short leaves data without one, never one without data.
  FILE* handle = std::fopen((dir + "/outputs.json").c_str(), "w");
  if (!handle) return false;
  std::fputs(manifest.c_str(), handle);
  return std::fclose(handle) == 0;
}

// One input per method input: the file given, else all ones, in the dim order and element
// type the method declares (a tensor made without its dim order reads wrong numbers).
bool make_inputs(Module& module, const Options& opts, std::vector<std::vector<uint8_t>>& data,
                 std::vector<TensorPtr>& tensors, std::vector<EValue>& values) {
  auto meta = module.method_meta(opts.method);
  if (!meta.ok()) {
    std::fprintf(stderr, "no method '%s' in the program (%s)\n", opts.method.c_str(),
                 error_text(meta.error()).c_str());
    return false;
  }
  if (opts.inputs.size() > meta->num_inputs()) {
    std::fprintf(stderr, "%zu input files given; method '%s' takes %zu inputs\n",
                 opts.inputs.size(), opts.method.c_str(), meta->num_inputs());
    return false;
  }
  data.resize(meta->num_inputs());
  for (size_t i = 0; i < meta->num_inputs(); ++i) {
    auto tag = meta->input_tag(i);
    auto info = meta->input_tensor_meta(i);
    if (!tag.ok() || *tag != Tag::Tensor || !info.ok()) {
      std::fprintf(stderr, "input %zu of '%s' is not a tensor; the runner feeds tensors only\n",
                   i, opts.method.c_str());
      return false;
    }
    data[i].assign(info->nbytes(), 0);
    if (i < opts.inputs.size()) {
      FILE* handle = std::fopen(opts.inputs[i].c_str(), "rb");
      if (!handle) {
        std::fprintf(stderr, "cannot read input file %s\n", opts.inputs[i].c_str());
        return false;
      }
      size_t got = std::fread(data[i].data(), 1, data[i].size(), handle);
      bool longer = std::fgetc(handle) != EOF;
      std::fclose(handle);
      if (got != data[i].size() || longer) {
        std::fprintf(stderr, "input %zu: %s does not hold the %zu bytes the method takes "
                     "(a %s tensor of sizes [%s])\n", i, opts.inputs[i].c_str(), data[i].size(),
                     executorch::runtime::toString(info->scalar_type()),
                     sizes_text({info->sizes().data(), info->sizes().size()}).c_str());
        return false;
      }
    } else if (info->scalar_type() == ScalarType::Float) {
      float* f = reinterpret_cast<float*>(data[i].data());
      for (size_t k = 0; k < data[i].size() / sizeof(float); ++k) f[k] = 1.0f;
    } else if (info->scalar_type() == ScalarType::Long) {
      int64_t* v = reinterpret_cast<int64_t*>(data[i].data());
      for (size_t k = 0; k < data[i].size() / sizeof(int64_t); ++k) v[k] = 1;
    }
    std::vector<executorch::aten::SizesType> sizes(info->sizes().begin(), info->sizes().end());
    std::vector<executorch::aten::DimOrderType> order(info->dim_order().begin(),
                                                      info->dim_order().end());
    tensors.push_back(executorch::extension::make_tensor_ptr(
        std::move(sizes), data[i].data(), std::move(order), {}, info->scalar_type()));
    values.emplace_back(*tensors.back());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string value;
    const char* arg = argv[i];
    if (flag(arg, "--model_path", &opts.model_path) || flag(arg, "--method_name", &opts.method) ||
        flag(arg, "--etdump_path", &opts.etdump_path) ||
        flag(arg, "--output_dir", &opts.output_dir) ||
        flag(arg, "--print_output", &opts.print_output)) {
      continue;
    }
    if (flag(arg, "--input", &value)) {
      opts.inputs.push_back(value);
    } else if (flag(arg, "--num_executions", &value)) {
      if (!count(value, 1, &opts.executions)) return usage("--num_executions takes a count >= 1");
    } else if (flag(arg, "--warmup", &value)) {
      if (!count(value, 0, &opts.warmup)) return usage("--warmup takes a count >= 0");
    } else if (flag(arg, "--cpu_threads", &value)) {
      if (!count(value, -1, &opts.threads)) return usage("--cpu_threads takes a count");
    } else {
      return usage((std::string("unknown argument ") + arg).c_str());
    }
  }
  if (opts.model_path.empty()) return usage("--model_path=PATH is required");
  std::printf("benchlab-et-runner: ExecuTorch %s libraries\n", BENCHLAB_ET_VERSION);

  if (opts.threads > 0) {
    executorch::extension::threadpool::get_threadpool()->_unsafe_reset_threadpool(
        static_cast<uint32_t>(opts.threads));
    std::printf("Resetting threadpool with num threads = %ld\n", opts.threads);
  }

  // The tracer records only when asked: its events cost time in every execution.
  executorch::etdump::ETDumpGen* tracer = nullptr;
  std::unique_ptr<executorch::runtime::EventTracer> owned;
  if (!opts.etdump_path.empty()) {
    owned = std::make_unique<executorch::etdump::ETDumpGen>();
    tracer = static_cast<executorch::etdump::ETDumpGen*>(owned.get());
  }
  auto started = std::chrono::steady_clock::now();
  Module module(opts.model_path, Module::LoadMode::File, std::move(owned));
  Error error = module.load();
  if (error != Error::Ok) {
    std::fprintf(stderr, "ExecuTorch refused the program %s (%s)\n", opts.model_path.c_str(),
                 error_text(error).c_str());
    return 1;
  }
  std::printf("Model file %s is loaded.\n", opts.model_path.c_str());
  std::printf("Using method %s\n", opts.method.c_str());
  error = module.load_method(opts.method);
  if (error != Error::Ok) {
    std::fprintf(stderr, "ExecuTorch could not load method '%s' of %s (%s)\n",
                 opts.method.c_str(), opts.model_path.c_str(), error_text(error).c_str());
    return 1;
  }
  std::printf("Method loaded.\n");
  std::printf("Model loaded in %.3f ms.\n", ms_since(started));

  std::vector<std::vector<uint8_t>> data;
  std::vector<TensorPtr> tensors;
  std::vector<EValue> inputs;
  if (!make_inputs(module, opts, data, tensors, inputs)) return 1;

  const long total = opts.warmup + opts.executions;
  double timed_ms = 0;
  std::vector<EValue> outputs;
  for (long i = 1; i <= total; ++i) {
    auto begin = std::chrono::steady_clock::now();
    auto result = module.execute(opts.method, inputs);
    double ms = ms_since(begin);
    if (!result.ok()) {
      std::fprintf(stderr, "execution %ld of '%s' failed (%s)\n", i, opts.method.c_str(),
                   error_text(result.error()).c_str());
      return 1;
    }
    std::printf("Iteration %ld of %ld: %.6f ms\n", i, total, ms);
    if (i > opts.warmup) timed_ms += ms;
    if (i == total) outputs = std::move(*result);
  }
  std::printf("Model executed successfully %ld time(s) in %.6f ms.\n", opts.executions, timed_ms);
  std::printf("%zu outputs:\n", outputs.size());
  if (opts.print_output != "none") {
    for (size_t i = 0; i < outputs.size(); ++i) print_output(i, outputs[i]);
  }
  if (!opts.output_dir.empty() && !write_outputs(opts.output_dir, outputs)) return 1;
  if (tracer != nullptr) {
    auto dump = tracer->get_etdump_data();
    FILE* handle = dump.buf ? std::fopen(opts.etdump_path.c_str(), "wb") : nullptr;
    if (!handle || std::fwrite(dump.buf, 1, dump.size, handle) != dump.size) {
      std::fprintf(stderr, "could not write the ETDump to %s\n", opts.etdump_path.c_str());
      if (handle) std::fclose(handle);
      std::free(dump.buf);
      return 1;
    }
    std::fclose(handle);
    std::free(dump.buf);
    std::printf("ETDump written to file '%s'.\n", opts.etdump_path.c_str());
  }
  struct rusage usage_now;
  if (getrusage(RUSAGE_SELF, &usage_now) == 0) {
    std::printf("Peak resident memory: %ld KiB\n", usage_now.ru_maxrss);
  }
  if (executorch::extension::threadpool::get_threadpool() != nullptr) {
    std::printf("Threadpool threads: %zu\n",
                executorch::extension::threadpool::get_threadpool()->get_thread_count());
  }
  return 0;
}
