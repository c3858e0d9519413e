"""FAI-PEP's accuracy flow end to end (``benchlab.harness.hoststeps``), with real processes.

The spec is written in FAI-PEP's form, as its ``*_accuracy_imagenet.json`` specs are: the
model's preprocess makes a data set in ``{HOSTDIR}``, each repetition's preprocess cuts its
slice (``{INDEX}`` × ``{images_per_iter}``, that being ``{total_images}/{repeat}``) into an
input file, the target's command "classifies" it into an output file in ``{TGTDIR}``, which is
pulled back and compared with a golden file by the test's postprocess, and the model's
postprocess aggregates the per-repetition results. The golden labels of repetition 1's slice
are wrong on purpose, so its accuracy is 0 % and the total is 2/3.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

import benchlab
from benchlab import Status
from benchlab.schema.result import Result
from benchlab.targets.ssh import SshTarget
from benchlab_standin.board import LoopbackBoard

TOTAL_IMAGES = 12
REPEAT = 3
PER_ITER = TOTAL_IMAGES // REPEAT
WRONG_INDEX = 1  # the golden labels of this repetition's slice are wrong on purpose

SCRIPTS = {
    # Model preprocess: the "data set", one image number a line.
    "make_dataset": """
        import sys
        path, count = sys.argv[1], int(sys.argv[2])
        with open(path, "w") as out:
            out.writelines(f"{n}\\n" for n in range(count))
        print('Caffe2Observer {"type": "NET", "metric": "dataset_size", "unit": "images", '
              '"value": %d}' % count)
    """,
    # The target's program: "classifies" image n as n % 3 into an output file.
    "classify": """
        import json, sys
        src, dst = sys.argv[1], sys.argv[2]
        images = [int(line) for line in open(src) if line.strip()]
        with open(dst, "w") as out:
            out.writelines(f"{n % 3}\\n" for n in images)
        print("Caffe2Observer " + json.dumps({"type": "NET", "metric": "latency", "unit": "ms",
                                              "value": 1.0 + len(images)}))
    """,
    # Test postprocess: the pulled predictions against the golden labels of the same images.
    "compare": """
        import json, sys
        images_file, predictions, golden_file, result = sys.argv[1:5]
        images = [int(line) for line in open(images_file) if line.strip()]
        predicted = [line.strip() for line in open(predictions) if line.strip()]
        golden = dict(line.split() for line in open(golden_file) if line.strip())
        if len(predicted) != len(images):
            sys.exit(f"{len(predicted)} predictions for {len(images)} images")
        correct = sum(golden[str(n)] == p for n, p in zip(images, predicted))
        with open(result, "w") as out:
            json.dump({"correct": correct, "total": len(images)}, out)
        print("Caffe2Observer " + json.dumps({"type": "NET", "metric": "accuracy",
              "unit": "percent", "value": 100.0 * correct / len(images)}))
    """,
    # Model postprocess: every repetition's result into one accuracy.
    "aggregate": """
        import json, os, sys
        folder, limit = sys.argv[1], int(sys.argv[2])
        parts = [json.load(open(os.path.join(folder, f"accuracy_{i}.txt"))) for i in range(limit)]
        total = sum(p["correct"] for p in parts) / sum(p["total"] for p in parts)
        print("Caffe2Observer " + json.dumps({"type": "NET", "metric": "total_accuracy",
              "unit": "percent", "value": 100.0 * total}))
    """,
}


def _golden() -> str:
    lines = []
    for n in range(TOTAL_IMAGES):
        label = n % 3
        if n // PER_ITER == WRONG_INDEX:
            label = (label + 1) % 3
        lines.append(f"{n} {label}\n")
    return "".join(lines)


def write_spec(folder: Path, *, keep: Path, postprocess: list[str] | None = None,
               **test: Any) -> Path:
    """The accuracy spec in FAI-PEP's form; its host steps copy their evidence into ``keep``."""
    files: dict[str, Any] = {}
    for key, body in SCRIPTS.items():
        (folder / f"{key}.py").write_text(textwrap.dedent(body))
        files[key] = {"location": f"{key}.py", "md5": None}
    (folder / "labels.txt").write_text(_golden())
    files["golden_output"] = {"filename": "labels.txt", "location": "labels.txt", "md5": None}
    spec = {
        "model": {
            "name": "tiny_classifier",
            "format": "generic",
            "kind": "deployment",
            "files": files,
            "total_images": TOTAL_IMAGES,
            "repeat": REPEAT,
            "images_per_iter": "{total_images}/{repeat}",
            "preprocess": {"commands": [
                "mkdir -p {HOSTDIR}/inputs {HOSTDIR}/outputs",
                "{PYTHON} {files.make_dataset} {HOSTDIR}/dataset.txt {total_images}",
            ]},
            "postprocess": {"commands": [
                "{PYTHON} {files.aggregate} {HOSTDIR}/outputs {repeat}",
                "cp -r {HOSTDIR}/inputs {HOSTDIR}/outputs {KEEP}/ && echo {HOSTDIR} > "
                "{KEEP}/hostdir.txt",
            ]},
        },
        "tests": [{
            "identifier": "{ID}",
            "metric": "accuracy",
            "warmup": 0,
            "iter": 1,
            "commands": ["{PYTHON} {files.classify} {input_files.batch} {TGTDIR}/pred.txt"],
            "input_files": {"batch": {"filename": "batch.txt", "location": "{HOSTDIR}/batch.txt"}},
            "output_files": {"pred": {"filename": "pred.txt", "location": "{TGTDIR}/pred.txt"}},
            "preprocess": {"commands": [
                "awk '(NR>{INDEX}*{images_per_iter})&&(NR<=({INDEX}+1)*{images_per_iter}) "
                "{print}' {HOSTDIR}/dataset.txt > {input_files.batch}",
                "cp {input_files.batch} {HOSTDIR}/inputs/batch_{INDEX}.txt",
            ]},
            "postprocess": {"commands": postprocess if postprocess is not None else [
                "{PYTHON} {files.compare} {HOSTDIR}/inputs/batch_{INDEX}.txt "
                "{output_files.pred} {files.golden_output} {HOSTDIR}/outputs/accuracy_{INDEX}.txt",
                "cp {output_files.pred} {HOSTDIR}/outputs/pred_{INDEX}.txt",
            ]},
            **test,
        }],
    }
    path = folder / "tiny_classifier_accuracy.json"
    path.write_text(json.dumps(spec, indent=2))
    keep.mkdir(exist_ok=True)
    return path


def run(spec: Path, tmp_path: Path, keep: Path, **kwargs: Any) -> Result:
    string_map = {"KEEP": str(keep), **kwargs.pop("string_map", {})}
    (result,) = benchlab.run([spec], db=tmp_path / "results.db", cache_dir=tmp_path / "cache",
                             string_map=string_map, **kwargs)
    return result


def by_repetition(result: Result, metric: str) -> list[tuple[int, float]]:
    return [(s.repetition, s.value) for s in result.samples if s.metric == metric]


def assert_the_flow_ran(result: Result, keep: Path) -> None:
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.repetitions == REPEAT
    # Test postprocess: one accuracy per repetition, repetition 1 wrong on purpose.
    assert by_repetition(result, "accuracy") == [(0, 100.0), (1, 0.0), (2, 100.0)]
    # Model postprocess: the aggregate, 2/3, joined to the last repetition.
    ((rep, total),) = by_repetition(result, "total_accuracy")
    assert rep == REPEAT - 1 and total == pytest.approx(200 / 3)
    # Model preprocess: its line joins the first repetition; the target's lines are there too.
    assert by_repetition(result, "dataset_size") == [(0, TOTAL_IMAGES)]
    assert by_repetition(result, "latency") == [(i, 1.0 + PER_ITER) for i in range(REPEAT)]
    assert result.summaries["NET accuracy"].mean == pytest.approx(200 / 3)
    # Each repetition's input slice, from {INDEX} and images_per_iter = 12/3 = 4.
    for index in range(REPEAT):
        images = range(index * PER_ITER, (index + 1) * PER_ITER)
        batch = (keep / "inputs" / f"batch_{index}.txt").read_text()
        assert batch == "".join(f"{n}\n" for n in images)
        pulled = (keep / "outputs" / f"pred_{index}.txt").read_text()
        assert pulled == "".join(f"{n % 3}\n" for n in images)
        summary = json.loads((keep / "outputs" / f"accuracy_{index}.txt").read_text())
        assert summary == {"correct": 0 if index == WRONG_INDEX else PER_ITER,
                           "total": PER_ITER}
    # {HOSTDIR} lived until the job ended, not longer.
    host_dir = Path((keep / "hostdir.txt").read_text().strip())
    assert host_dir.name.startswith("benchlab-host-") and not host_dir.exists()


def test_the_accuracy_flow_runs_on_the_host(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    result = run(write_spec(tmp_path, keep=keep), tmp_path, keep)
    assert_the_flow_ran(result, keep)


def test_output_files_are_pulled_from_a_remote_work_directory(
    tmp_path: Path, board: LoopbackBoard
) -> None:
    keep = tmp_path / "keep"
    spec = write_spec(tmp_path, keep=keep,
                      commands=["{PYTHON} {files.classify} {input_files.batch} "
                                "{TGTDIR}/pred.txt && pwd > {TGTDIR}/where.txt"],
                      output_files={"pred": {"filename": "pred.txt",
                                             "location": "{TGTDIR}/pred.txt"},
                                    "where": {"location": "where.txt"}},
                      postprocess=[
                          "{PYTHON} {files.compare} {HOSTDIR}/inputs/batch_{INDEX}.txt "
                          "{output_files.pred} {files.golden_output} "
                          "{HOSTDIR}/outputs/accuracy_{INDEX}.txt",
                          "cp {output_files.pred} {HOSTDIR}/outputs/pred_{INDEX}.txt",
                          "cp {output_files.where} {HOSTDIR}/outputs/where_{INDEX}.txt",
                      ])
    target = SshTarget(host=board.alias, config=str(board.client_config), python=sys.executable)
    try:
        result = run(spec, tmp_path, keep, target=target)
    finally:
        target.close()
    assert_the_flow_ran(result, keep)
    # The target's commands ran in the board's work directory, not in {HOSTDIR}.
    where = {(keep / "outputs" / f"where_{i}.txt").read_text().strip() for i in range(REPEAT)}
    (workdir,) = where
    assert "benchlab-" in workdir and not workdir.startswith(str(tmp_path / "keep"))
    assert not Path(workdir).exists()  # removed with the job


def test_a_failing_postprocess_fails_the_job_naming_the_command(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    script = tmp_path / "strict_compare.py"
    script.write_text("import sys\nprint('comparing')\n"
                      "sys.exit('golden file has 12 labels, predictions have 4')\n")
    spec = write_spec(tmp_path, keep=keep, postprocess=[
        f"{{PYTHON}} {script} {{output_files.pred}} {{files.golden_output}}"])
    result = run(spec, tmp_path, keep)
    assert result.status is Status.FAILED
    error = result.error or ""
    assert error.startswith("test postprocess command exited with status 1: golden file has")
    assert f"{script} " in error and "/output/pred.txt" in error  # the host copy's path
    assert "predictions have 4" in (result.stderr_tail or "")
    assert result.repetitions == 0


def test_an_output_file_the_commands_did_not_write_fails_the_job(tmp_path: Path) -> None:
    keep = tmp_path / "keep"
    spec = write_spec(tmp_path, keep=keep, commands=["{PYTHON} -c 'print(1)'"])
    result = run(spec, tmp_path, keep)
    assert result.status is Status.FAILED
    assert "output file 'pred' could not be pulled" in (result.error or "")
    assert "after repetition 0" in (result.error or "")


def test_faipeproot_comes_from_the_string_map_and_without_it_is_named(tmp_path: Path) -> None:
    # FAI-PEP's own command form; its scripts live in a FAI-PEP checkout given by the user.
    keep = tmp_path / "keep"
    root = tmp_path / "FAI-PEP"
    (root / "libraries" / "python").mkdir(parents=True)
    compare = root / "libraries" / "python" / "classification_compare.py"
    compare.write_text(textwrap.dedent(SCRIPTS["compare"]))
    spec = write_spec(tmp_path, keep=keep, postprocess=[
        "{PYTHON} {FAIPEPROOT}/libraries/python/classification_compare.py "
        "{HOSTDIR}/inputs/batch_{INDEX}.txt {output_files.pred} {files.golden_output} "
        "{HOSTDIR}/outputs/accuracy_{INDEX}.txt",
        "cp {output_files.pred} {HOSTDIR}/outputs/pred_{INDEX}.txt",
    ])
    missing = run(spec, tmp_path, keep)
    assert missing.status is Status.USER_ERROR
    assert "names {FAIPEPROOT}, which nothing defines" in (missing.error or "")
    assert "--string-map FAIPEPROOT=" in (missing.error or "")

    given = run(spec, tmp_path, keep, string_map={"FAIPEPROOT": str(root)})
    assert_the_flow_ran(given, keep)


def test_a_model_file_location_from_the_string_map(tmp_path: Path) -> None:
    # FAI-PEP's "{MODEL_DIR}/model.pb": the location's placeholder comes from --string-map.
    keep = tmp_path / "keep"
    spec = write_spec(tmp_path, keep=keep)
    data = json.loads(spec.read_text())
    models = tmp_path / "models"
    models.mkdir()
    (tmp_path / "classify.py").rename(models / "classify.py")
    data["model"]["files"]["classify"] = {"location": "{MODEL_DIR}/classify.py", "md5": ""}
    spec.write_text(json.dumps(data))

    missing = run(spec, tmp_path, keep)
    assert missing.status is Status.USER_ERROR
    assert "file 'classify'" in (missing.error or "")
    assert "names {MODEL_DIR}, which nothing defines" in (missing.error or "")

    given = run(spec, tmp_path, keep, string_map={"MODEL_DIR": str(models)})
    assert_the_flow_ran(given, keep)


def test_the_dry_run_no_longer_lists_the_accuracy_fields(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, keep=tmp_path / "keep")
    proc = subprocess.run([sys.executable, "-m", "benchlab", "run", str(spec), "--dry-run"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout[proc.stdout.index("{"):])
    assert len(plan["jobs"]) == 1
    assert plan["ignored"] == []


def test_a_pulled_output_file_is_moved_so_a_repetition_cannot_reuse_a_stale_one(
    tmp_path: Path
) -> None:
    # Only repetition 0 writes the output file ({INDEX} reaches the target's commands too).
    keep = tmp_path / "keep"
    latency = 'Caffe2Observer {"type": "NET", "metric": "latency", "unit": "ms", "value": 1}'
    spec = write_spec(tmp_path, keep=keep, commands=[
        "if [ {INDEX} = 0 ]; then {PYTHON} {files.classify} {input_files.batch} "
        f"{{TGTDIR}}/pred.txt; else echo '{latency}'; fi"])
    result = run(spec, tmp_path, keep)
    assert result.status is Status.FAILED
    assert "output file 'pred' could not be pulled" in (result.error or "")
    assert "after repetition 1" in (result.error or "")
    assert by_repetition(result, "accuracy") == [(0, 100.0)]


def test_the_documented_example_runs_unchanged(tmp_path: Path) -> None:
    # docs/accuracy.md shows these numbers.
    example = Path(__file__).parents[1] / "examples" / "faipep" / "accuracy" / "mod4_accuracy.json"
    (result,) = benchlab.run([example], db=tmp_path / "r.db", cache_dir=tmp_path / "cache")
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.samples_of("NET top1_accuracy") == [80.0, 90.0, 80.0, 90.0]
    assert result.samples_of("NET total_top1_accuracy") == [85.0]
    assert len(result.samples_of("NET latency")) == 4


def test_metrics_may_come_from_the_model_postprocess_alone(tmp_path: Path) -> None:
    # FAI-PEP's shufflenet form: the per-repetition compare only writes its result file, and
    # the model's postprocess prints the one metric line of the job.
    keep = tmp_path / "keep"
    spec = write_spec(
        tmp_path, keep=keep,
        commands=["{PYTHON} {files.classify} {input_files.batch} {TGTDIR}/pred.txt >/dev/null"],
        postprocess=["{PYTHON} {files.compare} {HOSTDIR}/inputs/batch_{INDEX}.txt "
                     "{output_files.pred} {files.golden_output} "
                     "{HOSTDIR}/outputs/accuracy_{INDEX}.txt >/dev/null"])
    data = json.loads(spec.read_text())
    data["model"]["preprocess"]["commands"][1] += " >/dev/null"
    spec.write_text(json.dumps(data))
    result = run(spec, tmp_path, keep)
    assert result.status is Status.OK, (result.error, result.stderr_tail)
    assert result.repetitions == REPEAT
    assert [(s.metric, s.repetition) for s in result.samples] == [("total_accuracy", REPEAT - 1)]
    assert result.samples[0].value == pytest.approx(200 / 3)

    # When the model's postprocess prints nothing either, the job has nothing to report.
    data["model"]["postprocess"]["commands"][0] += " >/dev/null"
    spec.write_text(json.dumps(data))
    silent = run(spec, tmp_path, keep)
    assert silent.status is Status.FAILED
    assert "printed a metric line" in (silent.error or "")
