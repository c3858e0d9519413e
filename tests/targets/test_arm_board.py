"""The ARM Linux board with Python, through a real sshd: an arm64 Debian root built from Debian's
packages with the runtimes' aarch64 wheels, its sessions on an emulated core (QEMU user mode),
one board per int8 path: Cortex-A53 (NEON only), Cortex-A76 (SDOT), QEMU's max without SME
(i8mm), and with it (SME).

The root is built once per machine into /var/cache/benchlab/boards (about 100 s on two cores,
docs/targets.md), before the tests start (tests/prebuild.py), and reused by every later run;
its key changes with the pinned wheels.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from prebuild import prepared
from benchlab_standin.armboard import ArmBoard, BoardRoot, build_root

import benchlab
from benchlab.errors import InfrastructureError
from benchlab.report.answers import answer_spread, device_instructions
from benchlab.report.matrix import cell_of
from benchlab.schema.result import EnvKey, Metric, Status, metric_key
from benchlab.targets.ssh import SshTarget

pytestmark = [pytest.mark.arm, pytest.mark.slow]

# A job's own timeout well inside the test's (600 s): an emulated process that never ends
# fails its job, named, and the test reports which one instead of pytest-timeout's stack.
JOB_TIMEOUT_S = 240
QUICK = benchlab.TestOverrides(repeat=1, iter=2, warmup=0, min_time=0.0, threads=2,
                               timeout=JOB_TIMEOUT_S)
CORES = ("cortex-a53", "cortex-a76", "max,sme=off", "max")
ET_INT8 = "executorch:runner=native,delegate=xnnpack,precision=int8"


@pytest.fixture(scope="module")
def board_root() -> BoardRoot:
    """The arm64 root, built once per machine before the tests (tests/prebuild.py)."""
    if shutil.which("sshd") is None:
        pytest.skip("the ARM board needs openssh-server (apt-get install)")
    prepared("board-root")
    return build_root()


@pytest.fixture(scope="module")
def arm_et_runner() -> None:
    """benchlab's ExecuTorch runner for aarch64, built before the tests (tests/prebuild.py)."""
    prepared("arm-et-runner")


@pytest.fixture(scope="module")
def arm_ort_runner() -> None:
    """benchlab's ONNX Runtime runner for aarch64, built before the tests (tests/prebuild.py)."""
    prepared("arm-ort-runner")


@pytest.fixture(scope="module")
def boards(board_root: BoardRoot, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[dict[str, ArmBoard]]:
    """One board per core, all serving the same root."""
    started: dict[str, ArmBoard] = {}
    try:
        for cpu in CORES:
            state = tmp_path_factory.mktemp("board-" + cpu.replace(",", "-").replace("=", "-"))
            started[cpu] = ArmBoard(state, cpu=cpu, root=board_root).start()
        yield started
    finally:
        for board in started.values():
            board.stop()


def _target(board: ArmBoard) -> SshTarget:
    return SshTarget(host=board.alias, config=str(board.server.client_config), python="python3")


def test_the_probe_reads_each_board_from_its_hwcaps_not_the_emulators_cpuinfo(
        boards: dict[str, ArmBoard]) -> None:
    expected = {"cortex-a53": ("Cortex-A53", "NEON without dot product"),
                "cortex-a76": ("Cortex-A76", "dot product (SDOT)"),
                "max,sme=off": ("a software-defined core", "i8mm (SMMLA)"),
                "max": ("a software-defined core", "i8mm (SMMLA)")}
    for cpu, (core, int8) in expected.items():
        target = _target(boards[cpu])
        try:
            available = target.availability()
            facts = target.describe()
        finally:
            target.close()
        assert available.ok and available.version.startswith("3.11"), available
        assert facts[EnvKey.MACHINE] == "aarch64"
        assert facts["os"].startswith("Debian GNU/Linux 12")
        assert facts["cpu_core"].startswith(core) and facts[EnvKey.CPU_MODEL] == facts["cpu_core"]
        assert facts[EnvKey.INT8_INSTRUCTIONS] == int8
        assert ("asimddp" in facts[EnvKey.CPU_FEATURES]) == (cpu != "cortex-a53")
        assert ("i8mm" in facts[EnvKey.CPU_FEATURES]) == cpu.startswith("max")
        # Said loudly: in the environment and in the device's name (so in every job key).
        assert "QEMU user mode" in facts[EnvKey.EMULATED]
        assert facts[EnvKey.HOSTNAME] == f"{boards[cpu].alias} (emulated)"


def test_mlp_and_a_users_model_on_every_runtime_the_board_has(
        boards: dict[str, ArmBoard], arm_ort_runner: None, entry_file: Path,
        zoo_cache_dir: Path, tmp_path: Path) -> None:
    board = boards["cortex-a53"]
    # ONNX Runtime's int8 on the boards is test_one_int8_answer_on_five_instruction_sets'.
    # Its fp32 also through benchlab's C runner over the aarch64 wheel's C library.
    frameworks = ["onnxruntime:precision=fp32", "tflite", "openvino",
                  "executorch:delegate=portable", "onnxruntime:runner=native"]
    common = dict(frameworks=frameworks, target=board.target_text, cache_dir=zoo_cache_dir,
                  overrides=benchlab.TestOverrides(repeat=1, iter=2, warmup=0, min_time=0.0,
                                                   threads=2, profile_ops=True,
                                                   timeout=JOB_TIMEOUT_S))
    # The user's model on the two runtimes that give it a forward pass and a delegate here;
    # OpenVINO's ARM plugin is shown on mlp (each emulated job costs about 10 s of CPU).
    mine = {**common, "frameworks": ["onnxruntime:precision=fp32", "tflite"]}
    results = [*benchlab.run(models=["mlp"], db=tmp_path / "zoo.db", **common),
               *benchlab.run(model=f"{entry_file}:tiny", db=tmp_path / "mine.db", **mine)]
    by_cell = {(r.identity.model_name, r.identity.framework): r for r in results
               if r.identity.framework_config.get("precision", "fp32") in ("fp32", "f32")
               and r.identity.framework_config.get("runner") != "native"}
    for model, framework in [("mlp", "onnxruntime"), ("mlp", "tflite"), ("mlp", "openvino"),
                             ("tiny_entry", "onnxruntime"), ("tiny_entry", "tflite")]:
        result = by_cell[(model, framework)]
        assert result.status is Status.OK, (model, framework, result.error)
        assert result.environment[EnvKey.MACHINE] == "aarch64"
        assert result.identity.device_label.endswith("(emulated)")
        # The answer, computed on the board against the host's fp32 reference.
        assert result.summaries[metric_key("NET", Metric.SQNR)].p50 > 60
    for model in ("mlp", "tiny_entry"):
        # Delegation coverage from the board: XNNPACK took the whole graph there.
        coverage = by_cell[(model, "tflite")].details["delegation"]
        assert coverage["delegated"] == coverage["nodes"] > 0
        # Per-operator times from the board's ONNX Runtime profiler.
        ops = [k for k in by_cell[(model, "onnxruntime")].summaries
               if k.endswith(Metric.LATENCY) and not k.startswith("NET")]
        assert ops
    # ONNX Runtime's C library on the board: the same answer, its own profile's rows.
    [native] = [r for r in results if r.identity.framework_config.get("runner") == "native"]
    assert native.status is Status.OK, native.error
    assert native.environment[EnvKey.MACHINE] == "aarch64"
    assert native.details["tool"].startswith("benchlab-ort-runner (ONNX Runtime ")
    assert native.summaries[metric_key("NET", Metric.SQNR)].p50 > 60
    assert native.details["op_profile_source"] == "ONNX Runtime profiler"
    # ExecuTorch is not on this board: its job fails alone, saying what to install.
    missing = by_cell[("mlp", "executorch")]
    assert missing.status is Status.FAILED
    assert "needs 'torch', not installed here" in missing.error
    assert "pip install torch" in missing.error


def test_compare_two_model_files_on_the_board(boards: dict[str, ArmBoard],
                                              tmp_path: Path) -> None:
    from benchlab.ab import CompareSettings, Side

    from tests.ab.test_fidelity import write_chain, write_spec

    one, eight = write_chain(tmp_path / "one.onnx", 1), write_chain(tmp_path / "eight.onnx", 8)
    comparison = benchlab.compare(
        [write_spec(tmp_path / "spec.json", one, iterations=4)],
        control=Side("one", model=one), treatment=Side("eight", model=eight),
        target=[boards["cortex-a76"].target_text], db=tmp_path / "r.db",
        cache_dir=tmp_path / "cache",
        settings=CompareSettings(looks=(2,), verify=False, min_effect=0.1,
                                 fidelity_tolerance=None))
    (latency,) = comparison.metrics
    # Eight times the MatMuls on the emulated core: slower, decided from the board's pairs.
    assert latency.estimate.change > 1.0
    assert comparison.exit_code == 0


def test_one_int8_answer_on_five_instruction_sets(boards: dict[str, ArmBoard],
                                                  arm_et_runner: None, zoo_cache_dir: Path,
                                                  tmp_path: Path) -> None:
    targets = ["host", *(boards[cpu].target_text for cpu in CORES)]
    # ExecuTorch through benchlab's runner (the boards' Python has no torch for its Python
    # runtime): XNNPACK's int8 kernels for each instruction set, from ExecuTorch 1.5.1's wheel.
    frameworks = ["onnxruntime:precision=int8", ET_INT8]
    results = benchlab.run(models=["mlp"], frameworks=frameworks, target=targets,
                           cache_dir=zoo_cache_dir, overrides=QUICK, db=tmp_path / "isa.db")
    assert [r.status for r in results] == [Status.OK] * 10, [r.error for r in results]
    instructions = device_instructions(results)
    arm = {device: text for device, text in instructions.items() if "board" in device}
    assert sorted(arm.values()) == ["NEON without dot product", "dot product (SDOT)",
                                    "i8mm (SMMLA)", "i8mm (SMMLA)"]
    rows = {row.framework: row for row in answer_spread([cell_of(r) for r in results],
                                                        instructions)}
    assert set(rows) == {"onnxruntime", "executorch"}
    for framework, row in rows.items():
        sqnr = {device: answer.sqnr for device, answer in row.answers.items() if answer}
        assert len(sqnr) == 5, (framework, sqnr)
        (sme,) = [device for device in sqnr if "arm-sme-board" in device]
        # x86-64 VNNI, NEON, SDOT and i8mm give one answer (the recipe's error: 37 dB for
        # ONNX Runtime's int8 here, 40 dB for ExecuTorch's)...
        agreeing = [value for device, value in sqnr.items() if device != sme]
        assert len(agreeing) == 4 and max(agreeing) - min(agreeing) < 0.01, (framework, sqnr)
        assert min(agreeing) > 30, (framework, sqnr)
        # ...and the SME core's is another, beyond any rounding floor: the row says so and
        # names it (for ExecuTorch's XNNPACK under QEMU 7.2's SME, no answer at all: 0.3 dB).
        assert sqnr[sme] < min(agreeing) - 10, (framework, sqnr)
        assert row.differs and sme in row.flag
    et = [r for r in results if r.identity.framework == "executorch"]
    assert {r.details["tool"] for r in et} == {"benchlab-et-runner (ExecuTorch 1.5.1 libs)"}
    assert {r.environment[EnvKey.MACHINE] for r in et} == {"x86_64", "aarch64"}


def test_a_board_that_cannot_serve_says_why_before_any_job(
        board_root: BoardRoot, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no ARM board for 'cortex-x9'"):
        ArmBoard(tmp_path / "x", cpu="cortex-x9", root=board_root).start()
    # sshd will not chroot below a folder others may write (/tmp): said before it starts.
    unsafe = BoardRoot(tmp_path / "copy", board_root.facts)
    (unsafe.folder / "root").mkdir(parents=True)
    with pytest.raises(RuntimeError, match="not owned and writable by root alone"):
        ArmBoard(tmp_path / "y", root=unsafe).start()
    # A board that is down fails the run before its first job, with the reason.
    down = ArmBoard(tmp_path / "z", cpu="cortex-a53", root=board_root).start()
    text = down.target_text
    down.stop()
    with pytest.raises(InfrastructureError, match="not usable: cannot reach"):
        benchlab.run(models=["mlp"], frameworks=["onnxruntime"], target=text,
                     overrides=QUICK, db=tmp_path / "down.db")


def test_the_root_is_built_once_and_found_again(board_root: BoardRoot) -> None:
    again = build_root()
    assert again.folder == board_root.folder and not again.built_now
    assert set(again.facts["left_off"]) == {"executorch", "torch"}
    wheels = " ".join(again.facts["wheels"])  # type: ignore[arg-type]
    assert "onnxruntime==" in wheels and "ai-edge-litert==" in wheels
    assert (board_root.system / "usr/bin/python3").exists()
