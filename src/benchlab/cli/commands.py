"""The ``benchlab`` command (typer + rich): each command maps its options to one library call.

Exit codes: 0 everything succeeded; 1 some job failed or a regression was found; 2 the user's
input is wrong (a bad spec, an unknown framework); 3 an infrastructure failure.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from benchlab.cli.ab import compare, track
from benchlab.cli.config import config_app, with_saved_defaults
from benchlab.cli.frameworks import frameworks
from benchlab.cli.helptext import (FAIPEP, GENERATORS, LAB, MEASURE, MEASURE_MORE, OUTPUT,
                                   SCENARIOS, WHAT_TO_RUN, WHERE, HelpGroup)
from benchlab.cli.lab import lab_app
from benchlab.cli.options import (
    CacheDirOption,
    DbOption,
    DetachOption,
    IterOption,
    LabDeviceOption,
    MinTimeOption,
    WarmupOption,
    flag_value,
    percent,
    refuse_with_lab,
    refuse_without_lab,
    setting_help,
    split_frameworks,
    split_models,
)
from benchlab.cli.labels import (HashPlatformMappingOption, MonsoonMapOption, PlatformSigOption,
                                 RegressedTypesOption, UserIdentifierOption, UserStringOption,
                                 energy_from_options, labels_of_run)
from benchlab.cli.workloads import generations_from_options, scenario_from_options
from benchlab.cli.zoo import zoo_app
from benchlab.errors import BenchlabError, UsageError
from benchlab.cli.output import console, err_console, print_results
from benchlab.cli.results import results_app
from benchlab.schema.labels import with_labels
from benchlab.schema.settings import DEFAULT_TIME_BUDGET_S

__all__ = ["app", "main"]

app = typer.Typer(
    name="benchlab",
    help="Benchmark ML inference across frameworks, backends and devices.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=HelpGroup,  # every command's help tidied: escaped, FAI-PEP's spellings hidden
)
app.add_typer(results_app, name="results")
app.add_typer(zoo_app, name="zoo")
app.add_typer(lab_app, name="lab")
app.add_typer(config_app, name="config")



@app.command()
def run(
    ctx: typer.Context,
    specs: Annotated[list[Path], typer.Argument(help="Spec or suite files (JSON/YAML).")] = [],  # noqa: B006
    models: Annotated[Optional[str], typer.Option(help="Zoo models, comma-separated, or 'all'.", rich_help_panel=WHAT_TO_RUN)] = None,  # noqa: UP007,E501
    model: Annotated[list[str], typer.Option("--model", "-m", help="Your own model, exported to every runtime: mynet.py:build, pkg.module:factory, model.onnx, or a .tflite/.pte/.xml/.pt/.pt2/.gguf file (repeatable).", rich_help_panel=WHAT_TO_RUN)] = [],  # noqa: B006,E501
    model_input: Annotated[list[str], typer.Option("--input", help="Your model's input: [name=]1x3x224x224[:dtype], once per input (default: what the model declares).", rich_help_panel=WHAT_TO_RUN)] = [],  # noqa: B006,E501
    data: Annotated[Optional[Path], typer.Option("--inputs", help="An .npz of your model's input sets (one array per input, sets along the first axis): int8 calibration and accuracy.", rich_help_panel=WHAT_TO_RUN)] = None,  # noqa: UP007,E501
    frameworks: Annotated[list[str], typer.Option("--frameworks", "-f", help="Frameworks, e.g. 'pytorch:mode=eager,onnxruntime' or 'all'.", rich_help_panel=WHAT_TO_RUN)] = [],  # noqa: B006,E501
    string_map: Annotated[Optional[str], typer.Option(help="Placeholders: JSON or K=v,K2=v2.", rich_help_panel=WHAT_TO_RUN)] = None,  # noqa: UP007,E501
    root_model_dir: Annotated[Optional[Path], typer.Option(help="Root for '//' file locations.", rich_help_panel=WHAT_TO_RUN)] = None,  # noqa: UP007,E501
    cache_dir: CacheDirOption = None,
    prompt_tokens: Annotated[Optional[str], typer.Option(help="Text generators: prompt lengths in tokens, comma-separated (one test each; default 128).", rich_help_panel=GENERATORS)] = None,  # noqa: UP007,E501
    new_tokens: Annotated[Optional[int], typer.Option(help="Text generators: tokens generated per generation (default 64).", rich_help_panel=GENERATORS)] = None,  # noqa: UP007,E501
    depth: Annotated[Optional[str], typer.Option(help="Text generators: KV cache depths filled before the prompt, comma-separated (default 0).", rich_help_panel=GENERATORS)] = None,  # noqa: UP007,E501
    scenario: Annotated[Optional[str], typer.Option(help="Run under an MLPerf LoadGen load scenario: single_stream, multi_stream, server, offline (docs/scenarios.md).", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    latency_bound: Annotated[Optional[str], typer.Option(help="Server scenario: the p99 latency bound, e.g. 15ms; without --target-qps the highest QPS meeting it is searched.", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    ttft_bound: Annotated[Optional[str], typer.Option(help="Generative server scenario: the p99 time-to-first-token bound, e.g. 200ms (MLPerf's LLM rule; with or instead of --tpot-bound).", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    tpot_bound: Annotated[Optional[str], typer.Option(help="Generative server scenario: the p99 time-per-output-token bound, e.g. 20ms.", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    target_qps: Annotated[Optional[float], typer.Option(help="Server: the arrival rate to run at; offline: the expected throughput.", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    duration: Annotated[Optional[float], typer.Option(help="Load scenarios: seconds each LoadGen run lasts at least (default 5).", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    query_count: Annotated[Optional[int], typer.Option(help="Load scenarios: queries each run issues at least (default: what early stopping needs).", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    samples_per_query: Annotated[Optional[int], typer.Option(help="Multi-stream: samples per query (default 8).", rich_help_panel=SCENARIOS)] = None,  # noqa: UP007,E501
    mlperf_durations: Annotated[bool, typer.Option("--mlperf-durations", help="Load scenarios: LoadGen's official minimum duration (600 s) and query counts.", rich_help_panel=SCENARIOS)] = False,  # noqa: E501
    scenario_accuracy: Annotated[bool, typer.Option("--scenario-accuracy", help="Load scenarios: LoadGen's accuracy mode, every sample once, its logged outputs checked against the reference.", rich_help_panel=SCENARIOS)] = False,  # noqa: E501
    target: Annotated[list[str], typer.Option("--target", help="Where to run: host, ssh:host=NAME, adb[:serial=X]. Repeat it to run on several devices; 'adb' alone is every attached phone.", rich_help_panel=WHERE)] = ["host"],  # noqa: B006,E501
    exclude_target: Annotated[list[str], typer.Option("--exclude-target", help="Leave out the devices this names, e.g. 'adb:serial=X' (repeatable).", rich_help_panel=WHERE)] = [],  # noqa: B006,E501
    reboot: Annotated[bool, typer.Option("--reboot", help="Reboot the device before the run (adb).", rich_help_panel=WHERE)] = False,  # noqa: E501
    reboot_after_failures: Annotated[Optional[int], typer.Option(help="Reboot the device after this many failed jobs in a row (adb).", rich_help_panel=WHERE)] = None,  # noqa: UP007,E501
    reboot_after_uptime: Annotated[Optional[float], typer.Option(help="Reboot the device before a job once it has been up this many hours (FAI-PEP: 8) (adb).", rich_help_panel=WHERE)] = None,  # noqa: UP007,E501
    warmup: WarmupOption = None,
    iterations: IterOption = None,
    repeat: Annotated[Optional[int], typer.Option(help=setting_help("repeat") + " Given, every cell gets exactly this many (no race).", rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    goal: Annotated[Optional[str], typer.Option(help="The interval half-width the race aims for in each cell, e.g. 5% (the default); cells get more processes until it, and a decided '× fastest', are reached.", rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    target_ci: Annotated[Optional[str], typer.Option(help=setting_help("target_ci") + " Also written 1%.", rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    time_budget: Annotated[Optional[float], typer.Option(help=f"Seconds per job for --target-ci (default {DEFAULT_TIME_BUDGET_S:g}).", rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    min_time: MinTimeOption = None,
    order: Annotated[str, typer.Option("--order", help="'rounds': every job's first process, then every job's second... (drift falls on every cell alike; ratios are paired); 'jobs': each job's processes back to back.", rich_help_panel=MEASURE)] = "rounds",  # noqa: E501
    threads: Annotated[Optional[int], typer.Option(help=setting_help("threads"), rich_help_panel=MEASURE)] = None,  # noqa: UP007
    cpu_list: Annotated[Optional[str], typer.Option(help=setting_help("cpu_list"), rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    shared_libs: Annotated[Optional[str], typer.Option("--shared-libs", "--shared_libs", metavar="PATHS", help=setting_help("shared_libs"), rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    timeout: Annotated[Optional[float], typer.Option(help=setting_help("timeout"), rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    cooldown: Annotated[Optional[float], typer.Option(help=setting_help("cooldown"), rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    temperature_gate: Annotated[Optional[float], typer.Option(help=setting_help("temperature_gate"), rich_help_panel=MEASURE)] = None,  # noqa: UP007,E501
    wipe_cache: Annotated[bool, typer.Option("--wipe-cache", help=setting_help("wipe_cache"), rich_help_panel=MEASURE)] = False,  # noqa: E501
    energy: Annotated[Optional[str], typer.Option(help="Measure energy per inference: auto, rapl, nvml, battery, monsoon.", rich_help_panel=MEASURE_MORE)] = None,  # noqa: UP007,E501
    monsoon_map: MonsoonMapOption = None,
    profile_ops: Annotated[bool, typer.Option("--profile-ops", help=setting_help("profile_ops"), rich_help_panel=MEASURE_MORE)] = False,  # noqa: E501
    layer_errors: Annotated[bool, typer.Option("--layer-errors", help=setting_help("layer_errors"), rich_help_panel=MEASURE_MORE)] = False,  # noqa: E501
    count: Annotated[Optional[str], typer.Option(help=setting_help("count"), rich_help_panel=MEASURE_MORE)] = None,  # noqa: UP007,E501
    resume: Annotated[bool, typer.Option("--resume", help="Finish the latest interrupted run of this sweep.", rich_help_panel=OUTPUT)] = False,  # noqa: E501
    resume_run: Annotated[Optional[str], typer.Option(help="Finish this interrupted run (id or UUID prefix).", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    json_dir: Annotated[Optional[Path], typer.Option(help="Also write one JSON file per result here.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    simple_json_dir: Annotated[Optional[Path], typer.Option("--simple-json-dir", "--simple_local_reporter", help="Also write each result here, flat: <model>.<test>.<framework>.<job key>.json, the latest run's replacing the last.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    html: Annotated[Optional[Path], typer.Option(help="Also write the matrix report (HTML, offline plots) here.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    report_to: Annotated[Optional[str], typer.Option("--report-to", metavar="URL", help="Post each finished result to a benchlab lab server; token from BENCHLAB_LAB_TOKEN or the config file.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    warnings: Annotated[bool, typer.Option("--warnings", help="Print every cell's noise warnings in full (one summary line is always printed).", rich_help_panel=OUTPUT)] = False,  # noqa: E501
    wide: Annotated[bool, typer.Option("--wide", help="Every column: one results table instead of latency, cost and accuracy tables, and the generation and scenario tables' other columns (in parts where the terminal is narrower).", rich_help_panel=OUTPUT)] = False,  # noqa: E501
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Run on a lab device instead of here: the lab's database URL (with --lab-device or --lab-pool).", rich_help_panel=LAB)] = None,  # noqa: UP007,E501
    lab_device: LabDeviceOption = None,
    lab_pool: Annotated[Optional[str], typer.Option(help="With --lab: every device matching this rule, e.g. 'abi=arm64-v8a'.", rich_help_panel=LAB)] = None,  # noqa: UP007,E501
    detach: DetachOption = False,
    user_identifier: UserIdentifierOption = None,
    user_string: UserStringOption = None,
    platform_sig: PlatformSigOption = None,
    hash_platform_mapping: HashPlatformMappingOption = None,
    regressed_types: RegressedTypesOption = None,
    faipep_wipe_cache: Annotated[Optional[str], typer.Option("--wipe_cache", metavar="BOOL", help="FAI-PEP's spelling of --wipe-cache, with a value: true or false.", rich_help_panel=FAIPEP)] = None,  # noqa: UP007,E501
    db: DbOption = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the planned jobs and exit; with --lab, the request the lab would be sent.")] = False,  # noqa: E501
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    reset_options: Annotated[bool, typer.Option("--reset-options", "--reset_options", help="Forget the saved defaults ('benchlab config') before running.")] = False,  # noqa: E501
) -> None:
    """Run benchmarks: the zoo's default models on every installed framework, or the specs given."""
    from benchlab.harness.overrides import TestOverrides
    from benchlab.spec import parse_string_map
    from benchlab.harness.sweep import Sweep

    given = with_saved_defaults(ctx, reset=reset_options)  # the command line over saved defaults
    overrides = TestOverrides(
        warmup=warmup, iter=iterations, repeat=repeat, min_time=min_time, threads=threads,
        target_ci=percent(target_ci), cpu_list=cpu_list, timeout=timeout, cooldown=cooldown,
        profile_ops=True if profile_ops else None, temperature_gate=temperature_gate,
        layer_errors=True if layer_errors else None, count=count, shared_libs=shared_libs,
        wipe_cache=True if wipe_cache or flag_value(faipep_wipe_cache, "--wipe_cache") else None)
    sweep = Sweep.of(
        list(specs), models=split_models(models), frameworks=split_frameworks(frameworks),
        target=given["target"], exclude_targets=exclude_target, overrides=overrides,
        string_map=parse_string_map(string_map) if string_map else None,
        time_budget=time_budget, root_model_dir=root_model_dir, cache_dir=cache_dir,
        generations=generations_from_options(prompt_tokens, new_tokens, depth),
        scenario=scenario_from_options(scenario, latency_bound, target_qps, duration, query_count,
                                       samples_per_query, mlperf_durations, scenario_accuracy,
                                       ttft_bound, tpot_bound),
        model=list(model), inputs=list(model_input), data=data, order=order,
        labels=labels_of_run(given),
        energy=energy_from_options(given["energy"], given["monsoon_map"]),
        reboot=_reboot_policy(reboot, reboot_after_failures, reboot_after_uptime),
        race=_race(goal, repeat))
    _run_or_send(sweep, given)


def _run_or_send(sweep: Any, given: dict[str, Any]) -> None:
    """``run``'s sweep sent to the lab (``--lab``), planned (``--dry-run``) or measured here,
    as its options (``given``, saved defaults included) ask."""
    shown = {key: given[key] for key in ("json_dir", "simple_json_dir", "html", "warnings",
                                         "wide")}
    db, report_to, resume = given["db"], given["report_to"], given["resume"]
    if given["lab"]:
        # What only this machine's store would hold: the lab keeps the run in its own.
        refuse_with_lab({"--db": db, "--resume": resume, "--resume-run": given["resume_run"],
                         "--report-to": report_to}, "the lab stores the run in its own database")
        _run_on_lab(given["lab"], sweep, given["lab_device"], given["lab_pool"],
                    dry_run=given["dry_run"], detach=given["detach"], **shown)
    refuse_without_lab(detach=given["detach"])
    if given["dry_run"]:
        from benchlab.api import plan_sweep
        from benchlab.harness.planner import describe_plan

        console.print_json(describe_plan(plan_sweep(sweep)))
        return
    _run_here(sweep, db=db, resume=given["resume_run"] or resume, quiet=given["quiet"],
              report_to=report_to, **shown)


def _reboot_policy(before_run: bool, after_failures: int | None,
                   uptime_h: float | None) -> Any:
    """The reboot options as a policy, or ``None`` when they ask for no reboot."""
    from benchlab.targets.reboot import RebootPolicy

    policy = RebootPolicy(before_run=before_run, after_failures=after_failures,
                          max_uptime_s=None if uptime_h is None else uptime_h * 3600.0)
    return policy if policy.active else None


def _race(goal: str | None, repeat: int | None) -> Any:
    """``--goal`` as a race policy (``None``: the default race, or none with ``--repeat``)."""
    from benchlab.stats.race import RacePolicy

    if goal is None:
        return None
    if repeat is not None:
        raise UsageError("--goal races the cells and --repeat fixes their processes: give one")
    try:
        return RacePolicy(goal=percent(goal, "--goal") or 0.0)
    except ValueError as exc:
        raise UsageError(f"--goal {goal!r}: {exc}") from None


def _run_on_lab(lab: str, sweep: Any, device: str | None, pool: str | None, *,
                dry_run: bool, detach: bool, json_dir: Path | None, html: Path | None,
                warnings: bool, wide: bool, simple_json_dir: Path | None = None) -> None:
    """``run --lab``: the sweep as lab jobs; their results shown and written here."""
    from benchlab.cli.lab import run_on_lab
    from benchlab.lab.queue import store_url

    found, ok = run_on_lab(lab, sweep, device, pool, dry_run=dry_run, detach=detach)
    if found:
        print_results(found, "benchlab run on the lab", warnings=warnings, wide=wide)
        _write_reports(found, json_dir, html, title="benchlab run on the lab", label="lab",
                       db=store_url(lab), simple_json_dir=simple_json_dir)
    raise typer.Exit(0 if ok else 1)


def _run_here(sweep: Any, *, db: str | None, resume: bool | str, quiet: bool,
              report_to: str | None, json_dir: Path | None, html: Path | None,
              warnings: bool, wide: bool, simple_json_dir: Path | None = None) -> None:
    """``run`` on this machine: measure, print, write the reports, exit with the verdict."""
    from benchlab.api import run as run_sweep

    reporter = None
    if report_to:
        from benchlab.lab.reporter import Reporter, store_run_info

        # Built before the sweep, so a missing token or a bad URL stops it before any job.
        reporter = Reporter(report_to, run_info=store_run_info(db))
    # The lab is told the run finished only if the sweep returns; anything else stopped it.
    ended = "interrupted"
    try:
        results = run_sweep(
            sweep, db=db, resume=resume, json_dir=json_dir, simple_json_dir=simple_json_dir,
            progress=not quiet, console=err_console,
            on_run=reporter.on_run if reporter else None,
            on_result=reporter.on_result if reporter else None,
        )
        ended = "finished"
    finally:
        if reporter is not None:
            for line in reporter.close(ended).lines():
                err_console.print(escape(line), highlight=False, soft_wrap=True)
    print_results(list(results), f"benchlab run {results.run_id}", warnings=warnings,
                   wide=wide)
    from benchlab.report.terminal import skipped_lines

    # Frameworks the user did not name that cannot run this kind of model: one line, not one
    # per model (Results.skipped still has them all).
    for line in skipped_lines(results.skipped_shown, results.skipped_summary):
        console.print(f"[dim]{escape(line)}[/]")
    _write_reports(results, None, html, title=f"benchlab run {results.run_id}",
                   label=results.run_uuid, db=db)
    if results.failed:
        err_console.print(f"[red]{len(results.failed)} of {len(results)} jobs failed[/]")
    raise typer.Exit(results.exit_code)


def _write_reports(results: Any, json_dir: Path | None, html: Path | None, *, title: str,
                   label: str, db: str | None, simple_json_dir: Path | None = None) -> None:
    """The files a run writes beside its tables: one JSON per result under ``label``
    (``--json-dir``, for results that came from a lab; a run here writes them as they are
    stored) and the matrix report (``--html``), with the earlier points of the same cells in
    the store ``db``."""
    if json_dir is not None:
        from benchlab.report.jsondir import write_result_json

        for result in results:
            write_result_json(json_dir, label, result)
    if simple_json_dir is not None:
        from benchlab.report.jsondir import write_simple_result_json

        for result in results:
            write_simple_result_json(simple_json_dir, result)
    if html is not None:
        from benchlab.report.matrix_html import write_matrix_html
        from benchlab.store import open_store

        with open_store(db) as store:
            previous = store.previous_points(results)
        # A lab run's results are a plain list, without the planner's skips.
        path = write_matrix_html(list(results), html, title=with_labels(title, results),
                                 skipped=getattr(results, "skipped_shown", ()),
                                 skipped_summary=getattr(results, "skipped_summary", ()),
                                 previous=previous)
        console.print(f"report: {path}")


# The A/B commands live in cli_ab.py; registered here so `benchlab --help` lists them after run.
app.command()(compare)
app.command()(track)
app.command()(frameworks)


@app.command()
def schema(
    suite: Annotated[bool, typer.Option("--suite", help="The suite file schema instead.")] = False,
) -> None:
    """Print the JSON Schema of spec files (or suite files)."""
    from benchlab.spec import spec_json_schema, suite_json_schema

    document = suite_json_schema() if suite else spec_json_schema()
    sys.stdout.write(json.dumps(document, indent=2) + "\n")


@app.command()
def doctor(
    db: DbOption = None,
    target: Annotated[list[str], typer.Option("--target", help="Also check this target, e.g. 'ssh:host=pi' or 'adb:serial=X' (repeatable).")] = [],  # noqa: B006,E501
) -> None:
    """What frameworks, targets and devices are available here, and why not where not."""
    from benchlab.harness.doctor import diagnose
    from benchlab.report.history import doctor_tables

    for table in doctor_tables(diagnose(db, target)):
        console.print(table)


@app.command()
def prepare(
    arch: Annotated[list[str], typer.Option("--arch", help="A device CPU architecture to build for, e.g. aarch64 (repeatable).")],  # noqa: E501
    cache_dir: Annotated[Optional[Path], typer.Option("--cache-dir", help="Artifact cache directory (default: benchlab's own).")] = None,  # noqa: E501,UP007
) -> None:
    """Build what benchlab pushes to devices without Python (llama.cpp's runner, ExecuTorch's
    and ONNX Runtime's runners), ahead of a run: each program, built or found in the cache,
    and how long it took."""
    from benchlab.devicetools.prepare import prepare_device_tools

    for architecture in arch:
        for tool in prepare_device_tools(architecture, cache_dir,
                                         progress=lambda text: err_console.print(
                                             escape(text), highlight=False)):
            console.print(escape(tool.describe()), highlight=False, soft_wrap=True)


def main() -> None:
    """Console entry point: user and infrastructure errors become one line and an exit code."""
    for stream in (sys.stdout, sys.stderr):
        # A stream whose encoding lacks ✓, ±, → (ASCII under PYTHONUTF8=0 LC_ALL=C) prints '?'
        # for them instead of ending the command in a UnicodeEncodeError.
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if not encoding.startswith("utf") and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")
    try:
        # Outside standalone mode click returns a command's typer.Exit code instead of exiting.
        code = app(standalone_mode=False)
    except BenchlabError as exc:
        # soft_wrap: an error stays one line (grep-able in CI logs) however long it is.
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False,
                          soft_wrap=True)
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted; finished jobs are saved: resume with 'benchlab run --resume'")
        sys.exit(130)
    except typer.Abort:
        err_console.print("aborted")
        sys.exit(130)
    except typer.TyperException as exc:
        # Bad options and arguments: typer raises its own click's exceptions (typer 0.29
        # vendors click), which know how to show themselves as one usage message.
        show = getattr(exc, "show", None)
        if not callable(show):
            raise
        show()
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
