"""FAI-PEP's spec shapes load and plan as ``benchlab run --dry-run`` plans them.

``tests/spec/faipep_sample/`` holds small specs written for these tests in the shapes FAI-PEP's
``specifications/`` folder uses (its layout too: ``models/<format>/<name>/``, ``benchmarks/``).
The models, names, hashes and addresses are invented; nothing is copied from FAI-PEP. Each file
is planned through the library call the dry run makes (``benchlab.plan_sweep``, then
``describe_plan``), so nothing is fetched and nothing runs.

The whole of FAI-PEP's own folder (66 JSON files at the commit docs/specs.md names) is checked
only where it is on this machine: unpack it at ``/tmp/faipep/specifications`` or name it with
``BENCHLAB_FAIPEP_SPECS=/path/to/FAI-PEP/specifications``; without it that test skips.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import benchlab
from benchlab.harness.planner import describe_plan
from benchlab.schema.settings import EnergySettings
from benchlab.spec import load, load_spec, load_suite

SAMPLE = Path(__file__).parent / "faipep_sample"

#: Every file of the sample and the shape it stands for (docs/specs.md counts these).
SHAPES: dict[str, str] = {
    "models/caffe2/pelicannet/pelicannet.json":
        "a caffe2 delay spec: two model files by URL and md5, {program} commands with "
        "{files.X}, {warmup}, {iter}; platform_args taskset and sleep_before_run; {ID}",
    "models/caffe2/pelicannet/pelicannet_power.json":
        "a *_power.json spec: metric power with collection_time and voltage",
    "models/caffe2/pelicannet/pelicannet_monsoon.json":
        "power as a monsoon block (disable_usb, no voltage) and as method software",
    "models/caffe2/heronnet/heronnet_accuracy.json":
        "the accuracy flow: model and test pre/postprocess, {HOSTDIR}, {INDEX}, {TGTDIR}, "
        "{FAIPEPROOT}, an input file made at run time, output_files, numeric model keys",
    "models/caffe2/wrennet/wrennet_2018.json":
        "the older forms: inputs with shapes, command, arguments, a one-element input file "
        "list, statistics, cpu-list, libraries, converter, app, profiler, degrade",
    "models/tflite/kestrel/kestrel.json":
        "a tflite spec whose {program} is benchmark_model (--graph={files.graph})",
    "models/tflite/kestrel/kestrel_twice.json":
        "a test that writes the key commands twice (JSON keeps the last, a mapping)",
    "benchmarks/caffe2/birds.json":
        "a benchmark list: meta (group, command_args) and the spec files it names",
    "benchmarks/tflite/kestrel_all.json":
        "a benchmark list with meta group only",
}

FAIPEP_SPECS = Path(os.environ.get("BENCHLAB_FAIPEP_SPECS", "/tmp/faipep/specifications"))


def _dry_run(path: Path, tmp_path: Path) -> dict:
    """What ``benchlab run PATH --dry-run`` prints, as data."""
    return json.loads(describe_plan(benchlab.plan_sweep([path], cache_dir=tmp_path / "cache")))


def test_the_sample_is_the_files_listed_here() -> None:
    found = {p.relative_to(SAMPLE).as_posix() for p in SAMPLE.rglob("*.json")}
    assert found == set(SHAPES)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_sample_file_loads_and_plans_in_a_dry_run(name: str, tmp_path: Path) -> None:
    path = SAMPLE / name
    specs = load(path)
    assert specs and all(spec.tests for spec in specs)
    plan = _dry_run(path, tmp_path)
    tests = {(spec.model.name, test.identifier) for spec in specs for test in spec.tests}
    planned = {job["label"].split(" @ ")[0] for job in plan["jobs"]}
    # Every test of every spec the file holds (or names) becomes at least one job.
    assert planned == {f"{model}/{test}" for model, test in tests}


def test_taskset_sleep_and_id_become_benchlabs_settings() -> None:
    spec = load_spec(SAMPLE / "models/caffe2/pelicannet/pelicannet.json")
    first, second = spec.tests
    assert (first.identifier, first.cpu_list, first.cooldown) == ("pelicannet-cpu", "0-3", 30.0)
    assert (second.identifier, second.cpu_list, second.cooldown) == ("1", "4-7", 5.0)
    assert spec.model.files["predict"].md5 == "1a2b3c4d5e6f708192a3b4c5d6e7f809"


def test_the_power_forms_become_energy_requests() -> None:
    (power,) = load_spec(SAMPLE / "models/caffe2/pelicannet/pelicannet_power.json").tests
    assert power.energy == EnergySettings("monsoon", voltage=3.9, collection_time=120.0)
    monsoon_spec = load_spec(SAMPLE / "models/caffe2/pelicannet/pelicannet_monsoon.json")
    block, software = monsoon_spec.tests
    assert block.energy == EnergySettings("monsoon", voltage=4.0, collection_time=90.0)
    assert software.energy == EnergySettings("auto")
    assert [field for field, _ in monsoon_spec.ignored] == ["tests[0].monsoon.disable_usb"]


def test_the_accuracy_flow_loads_its_steps_and_files_made_at_run_time() -> None:
    spec = load_spec(SAMPLE / "models/caffe2/heronnet/heronnet_accuracy.json")
    (test,) = spec.tests
    assert spec.model.preprocess == ("mkdir -p {HOSTDIR}/slices",)
    assert "{INDEX}" in test.preprocess[0] and "{output_files.softmax}" in test.postprocess[0]
    assert test.input_files["images_tensor"].md5 is None  # made by the preprocess: no hash
    assert test.output_files["softmax"].location == "{TGTDIR}/softmax.txt"
    assert (test.repeat, test.timeout) == (5, 1800.0)
    assert spec.model.placeholders["total_images"] == "500"


def test_the_older_forms_load() -> None:
    spec = load_spec(SAMPLE / "models/caffe2/wrennet/wrennet_2018.json")
    shaped = [t for t in spec.tests if t.identifier.startswith("0[")]
    assert [t.identifier for t in shaped] == ["0[1x3x96x96,1]", "0[2x3x96x96,1]"]
    assert shaped[0].cpu_list == "0-1" and shaped[0].statistics == ("mad", "p10", "p95")
    by_name = {t.identifier: t for t in spec.tests}
    assert by_name["1"].commands[0].startswith("{program} --net {files.predict} --iter")
    assert by_name["1"].input_files["data"].filename == "wren_input.txt"
    assert by_name["wrennet-arguments"].commands[0].startswith("{program} --net")
    # The model's command_args reach every command that runs {program}.
    assert all(t.commands[0].endswith("--caffe2_log_level=0") for t in spec.tests)
    assert {field for field, _ in spec.ignored} == {
        "model.converter", "model.platform_args", "model.app",
        "tests[0].profiler", "tests[0].degrade", "tests[1].files"}
    # Its libraries are pushed beside the program, under the name the loader looks for.
    assert spec.model.libraries["libextra_ops.so"].md5 == "6f708192a3b4c5d6e7f8091021324354"


def test_tflite_specs_become_tflite_jobs_and_a_doubled_key_is_listed(tmp_path: Path) -> None:
    plan = benchlab.plan_sweep([SAMPLE / "models/tflite/kestrel/kestrel.json"],
                               cache_dir=tmp_path / "cache")
    assert {job.config.name for job in plan.jobs} == {"tflite"}
    twice = load_spec(SAMPLE / "models/tflite/kestrel/kestrel_twice.json")
    assert twice.tests[0].commands == ()
    assert [field for field, _ in twice.ignored] == ["tests[0].commands"]


def test_a_benchmark_list_merges_its_meta_into_the_specs_it_names() -> None:
    suite = load_suite(SAMPLE / "benchmarks/caffe2/birds.json")
    pelican, wren = suite.specs
    assert (pelican.model.name, wren.model.name) == ("pelicannet", "wrennet")
    assert pelican.model.placeholders["group"] == "birds_delay"
    assert all(t.commands[0].endswith("--caffe2_threads=2") for t in pelican.tests)
    # A model's own keys win over the list's meta.
    assert wren.model.placeholders["group"] == "birds"
    assert all(t.commands[0].endswith("--caffe2_log_level=0") for t in wren.tests)


@pytest.mark.skipif(not FAIPEP_SPECS.is_dir(),
                    reason=f"FAI-PEP's specifications folder is not at {FAIPEP_SPECS} "
                           "(set BENCHLAB_FAIPEP_SPECS to it)")
def test_every_file_of_faipeps_own_folder_plans_in_a_dry_run(tmp_path: Path) -> None:
    paths = sorted(FAIPEP_SPECS.rglob("*.json"))
    assert paths
    failed = {}
    for path in paths:
        try:
            if not _dry_run(path, tmp_path)["jobs"]:
                failed[path] = "no jobs"
        except Exception as exc:  # noqa: BLE001 - every file's problem is reported
            failed[path] = repr(exc)
    assert not failed, "\n".join(f"{p}: {why}" for p, why in failed.items())
