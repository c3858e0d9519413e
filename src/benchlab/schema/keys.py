"""The names of a result's shared facts: the keys of ``Result.details`` (:class:`DetailKey`)
and of ``Result.environment`` (:class:`EnvKey`) that one layer writes and another reads."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DetailKey", "EnvKey"]


class DetailKey(StrEnum):
    """The keys of ``Result.details`` that one layer writes and another reads.

    A framework may add facts of its own (a native tool's settings, say); these are the shared
    ones, and :class:`Result` reads them back typed (:attr:`Result.stop_reason`...).
    """

    REPETITIONS = "repetitions"  #: int, fresh processes that finished
    JOB_STOP_REASON = "job_stop_reason"  #: a StopReason, over the job's processes
    RACE = "race"  #: str, why a raced job stopped, in words (benchlab.stats.race)
    STOP_REASON = "stop_reason"  #: a StopReason, inside the last process
    MODEL_INFO = "model_info"  #: mapping, what the zoo knew about the model before running
    RUNTIME_VERSION = "runtime_version"  #: str, the runtime's version as the runner saw it
    PRECISION = "precision"  #: str, the precision the runtime reported using
    INPUTS = "inputs"  #: mapping, input name -> [shape, dtype]
    #: mapping, a generative test's workload: prompt_tokens, new_tokens, depth, compare_tokens
    GENERATION = "generation"
    #: mapping, a load scenario's settings, LoadGen's verdict (valid, why_invalid, early
    #: stopping) and each LoadGen run's figures (a server search has several)
    SCENARIO = "scenario"
    LOADGEN_SUMMARY = "loadgen_summary"  #: str, LoadGen's mlperf_log_summary.txt of the run
    LOADGEN_DETAIL = "loadgen_detail"  #: str, LoadGen's mlperf_log_detail.txt of the run
    REQUESTS_PER_CALL = "requests_per_call"  #: int, inferences per timed call (batching runtimes)
    #: int, seconds the runner allowed its teardown after printing (benchlab.runner.shutdown)
    SHUTDOWN_LIMIT = "shutdown_limit"
    #: str, set when a process hung in its teardown after printing its results, kept
    SHUTDOWN_HUNG = "shutdown_hung"
    OP_PROFILE_UNAVAILABLE = "op_profile_unavailable"  #: str, why no per-operator times
    MEASURE_WINDOW = "measure_window"  #: [start, end] of the timed loop, on the runner's clock
    ENERGY = "energy"  #: mapping, the power meter's account of the job
    DEVICE_FLAGS = "device_flags"  #: list of {flag, detail}: conditions that make numbers doubtful
    TEMPERATURE_GATE = "temperature_gate"  #: list of the gate waits before each process
    TRACK_ESTIMATE = "track_estimate"  #: mapping, the tracker's change estimate
    COMMIT = "commit"  #: str, the commit a tracked result measured
    REBOOT = "reboot"  #: mapping, the device reboot just before this job (targets/reboot.py)
    DELEGATION = "delegation"  #: mapping, what the delegate or provider took (diagnosis.Coverage)
    LAYER_ERRORS = "layer_errors"  #: mapping, per-layer error table (diagnosis.LayerTable)
    # How a side uses the machine's threads: the in-process A/B runner reads these back from
    # each backend to show both sides' regime (runner/pair.py's REGIME_KEYS).
    THREADS = "threads"  #: int, the runtime's (or a native tool's) thread count in effect
    INTRA_OP_THREADS = "intra_op_threads"  #: int, ONNX Runtime's intra-op threads
    INTER_OP_THREADS = "inter_op_threads"  #: int, ONNX Runtime's inter-op threads
    THREAD_POOL = "thread_pool"  #: str, ONNX Runtime's pool: "global" or "session"
    SPINNING = "spinning"  #: bool, whether ONNX Runtime's idle threads spin
    NSTREAMS = "nstreams"  #: int, OpenVINO's streams in effect
    HINT = "hint"  #: str, OpenVINO's performance hint in effect
    EXECUTION_MODE = "mode"  #: str, the PyTorch mode (eager, torchscript, export, aoti, compile)
    # What every native tool's parser says, whichever tool it was (frameworks/native).
    TOOL = "tool"  #: str, the native tool that measured the job instead of the runner
    LATENCY_SAMPLES = "latency_samples"  #: str, "process_mean" or "per_iteration"
    # A/B comparisons (benchlab.ab).
    INTERLEAVED = "interleaved"  #: mapping, the in-process A/B runner's blocks and regime
    AB_MODE = "ab_mode"  #: str, the ab.Mode of an interleaved side's stored result
    AB_SESSIONS = "ab_sessions"  #: int, the interleaved sessions that result pools
    AB_PAIRS = "ab_pairs"  #: True on a side's result pooled over process pairs
    #: mapping, how counting mode counted (runner/count.py): tool, version, what, calls,
    #: hardware counters, threads
    COUNTING = "counting"
    #: mapping, the runtime's code behind Metric.CODE_SIZE: distribution, bytes, files
    CODE_SIZE = "code_size"
    #: mapping, a native program's own files pushed for the job: binary (bytes, None when it
    #: was a path on the target) and libs (name -> bytes) (harness/nativefiles.py)
    NATIVE_FILES = "native_files"
    #: mapping, what the device keeps between jobs for this one (a phone's runner bundle):
    #: folder, pushed_now (False: found there), what, bytes (harness/keptfiles.py)
    KEPT_FILES = "kept_files"
    #: mapping, what wipe_cache did before the processes: cpu_bytes written, cpu_source,
    #: llc_bytes, file_cache ("dropped" or "not dropped: why"), processes (harness/cachewipe.py)
    CACHE_WIPE = "cache_wipe"
    # What the user said about the run (schema/labels.py, RunLabels).
    USER_IDENTIFIER = "user_identifier"  #: str, the name the user finds the run's results by
    USER_STRING = "user_string"  #: str, who ran it (FAI-PEP's remote reporter's user)
    REGRESSED_TYPES = "regressed_types"  #: list of metric keys a verify run re-measured


class EnvKey(StrEnum):
    """The keys of ``Result.environment`` (a target's ``describe()`` plus the device state
    around the job) that one module writes and another reads.

    A target may add facts of its own; these are the shared ones.
    """

    # The machine's identity (environment.capture_host_environment; the ssh target's script
    # prints the same names).
    TARGET = "target"  #: str, the target plugin that described the device (adb, ssh)
    HOSTNAME = "hostname"
    OS = "os"  #: str, the operating system, as the platform names it
    KERNEL = "kernel"  #: str, the Linux kernel release
    MACHINE = "machine"  #: str, the CPU architecture (uname -m)
    CPU_MODEL = "cpu_model"
    CPU_COUNT = "cpu_count"  #: int, the CPUs the system has
    CPUS_ALLOWED = "cpus_allowed"  #: list of the CPUs this process may run on
    PACKAGES = "packages"  #: mapping, distribution -> installed version (None: absent)
    #: mapping, what decides where memory lands: aslr (randomize_va_space), transparent_hugepages
    MEMORY_LAYOUT = "memory_layout"
    # A phone's identity, from getprop (targets/adb.py).
    MODEL = "model"  #: str, the product model
    MANUFACTURER = "manufacturer"
    SOC_MANUFACTURER = "soc_manufacturer"
    SOC_MODEL = "soc_model"
    BOARD = "board"  #: str, the board platform (a SoC name on most phones)
    HARDWARE = "hardware"
    ABI = "abi"  #: str, the primary CPU ABI (arm64-v8a...)
    #: str, how the device's CPU is emulated (QEMU), where it says so: its latencies say
    #: nothing about any hardware, and no trend or flag mixes them with a real device's
    EMULATED = "emulated"
    #: list of str, the CPU features that decide which kernels a runtime picks (as
    #: /proc/cpuinfo spells them; on ARM read from the hwcaps): environment.INFERENCE_CPU_FEATURES
    CPU_FEATURES = "cpu_features"
    #: str, the instructions an int8 kernel can use on this CPU, strongest first (VNNI, SDOT,
    #: SMMLA...): what decides whether two devices' int8 answers can differ
    INT8_INSTRUCTIONS = "int8_instructions"
    ANDROID = "android"  #: str, the Android release
    SDK = "sdk"  #: str, the Android SDK level
    # Device state (targets/probe.py): what changes while benchmarks run.
    STATE = "state"  #: device state read when the target was described
    CLUSTERS = "clusters"  #: list of CPU clusters with their frequencies
    TEMPERATURES_C = "temperatures_c"  #: mapping, thermal zone -> °C
    BATTERY = "battery"  #: mapping, level and status, where the device has one
    STATE_BEFORE = "state_before"  #: device state read before the job
    STATE_AFTER = "state_after"  #: device state read after the job
    #: str, the device's platform name the user gave (--platform-sig, a hash → name mapping)
    PLATFORM = "platform"
