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

from benchlab.cli_lab import lab_app
from benchlab.cli_workloads import generations_from_options, scenario_from_options
from benchlab.cli_zoo import zoo_app
from benchlab.errors import BenchlabError, UsageError
from benchlab.cli_output import console, err_console
from benchlab.schema import LATENCY_KEY
from benchlab.settings import DEFAULT_TIME_BUDGET_S, setting_info

__all__ = ["app", "main"]

app = typer.Typer(
    name="benchlab",
    help="Benchmark ML inference across frameworks, backends and devices.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)
results_app = typer.Typer(help="List, show and export past runs.", no_args_is_help=True)
app.add_typer(results_app, name="results")
app.add_typer(zoo_app, name="zoo")
app.add_typer(lab_app, name="lab")



DbOption = Annotated[
    Optional[str],  # noqa: UP007 - typer needs Optional here
    typer.Option("--db", help="SQLite file or database URL (default: per-user SQLite file)."),
]


def _help(setting: str) -> str:
    """An override option's help: the setting's one description (benchlab.settings)."""
    return setting_info(setting).help


def _percent(text: str | None, option: str = "--target-ci") -> float | None:
    if text is None:
        return None
    raw = text.strip()
    try:
        value = float(raw.rstrip("%")) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise UsageError(f"{option} {text!r}: expected a fraction like 0.01 or 1%") from None
    if value <= 0:
        raise UsageError(f"{option} must be positive")
    return value


def split_frameworks(values: list[str]) -> list[str]:
    """``pytorch:mode=eager,threads=2,onnxruntime`` → ``["pytorch:mode=eager,threads=2",
    "onnxruntime"]``: a token with ``=`` but no ``:`` continues the previous framework."""
    out: list[str] = []
    for value in values:
        for token in filter(None, (t.strip() for t in value.split(","))):
            if "=" in token and ":" not in token and out:
                out[-1] += ("," if ":" in out[-1] else ":") + token
            else:
                out.append(token)
    return out


@app.command()
def run(
    specs: Annotated[list[Path], typer.Argument(help="Spec or suite files (JSON/YAML).")] = [],  # noqa: B006
    models: Annotated[Optional[str], typer.Option(help="Zoo models, comma-separated, or 'all'.")] = None,  # noqa: UP007,E501
    model: Annotated[list[str], typer.Option("--model", "-m", help="Your own model, exported to every runtime: mynet.py:build, pkg.module:factory, model.onnx, or a .tflite/.pte/.xml/.pt/.pt2/.gguf file (repeatable).")] = [],  # noqa: B006,E501
    model_input: Annotated[list[str], typer.Option("--input", help="Your model's input: [name=]1x3x224x224[:dtype], once per input (default: what the model declares).")] = [],  # noqa: B006,E501
    data: Annotated[Optional[Path], typer.Option("--inputs", help="An .npz of your model's input sets (one array per input, sets along the first axis): int8 calibration and accuracy.")] = None,  # noqa: UP007,E501
    frameworks: Annotated[list[str], typer.Option("--frameworks", "-f", help="Frameworks, e.g. 'pytorch:mode=eager,onnxruntime' or 'all'.")] = [],  # noqa: B006,E501
    target: Annotated[list[str], typer.Option("--target", help="Where to run: host, ssh:host=NAME, adb[:serial=X]. Repeat it to run on several devices; 'adb' alone is every attached phone.")] = ["host"],  # noqa: B006,E501
    exclude_target: Annotated[list[str], typer.Option("--exclude-target", help="Leave out the devices this names, e.g. 'adb:serial=X' (repeatable).")] = [],  # noqa: B006,E501
    energy: Annotated[Optional[str], typer.Option(help="Measure energy per inference: auto, rapl, nvml, battery, monsoon.")] = None,  # noqa: UP007,E501
    temperature_gate: Annotated[Optional[float], typer.Option(help=_help("temperature_gate"))] = None,  # noqa: UP007,E501
    db: DbOption = None,
    resume: Annotated[bool, typer.Option("--resume", help="Finish the latest interrupted run of this sweep.")] = False,  # noqa: E501
    resume_run: Annotated[Optional[str], typer.Option(help="Finish this interrupted run (id or UUID prefix).")] = None,  # noqa: UP007,E501
    target_ci: Annotated[Optional[str], typer.Option(help=_help("target_ci") + " Also written 1%.")] = None,  # noqa: UP007,E501
    time_budget: Annotated[Optional[float], typer.Option(help=f"Seconds per job for --target-ci (default {DEFAULT_TIME_BUDGET_S:g}).")] = None,  # noqa: UP007,E501
    warmup: Annotated[Optional[int], typer.Option(help=_help("warmup"))] = None,  # noqa: UP007
    iterations: Annotated[Optional[int], typer.Option("--iter", help=_help("iter"))] = None,  # noqa: UP007,E501
    repeat: Annotated[Optional[int], typer.Option(help=_help("repeat") + " Given, every cell gets exactly this many (no race).")] = None,  # noqa: UP007,E501
    goal: Annotated[Optional[str], typer.Option(help="The interval half-width the race aims for in each cell, e.g. 5% (the default); cells get more processes until it, and a decided '× fastest', are reached.")] = None,  # noqa: UP007,E501
    min_time: Annotated[Optional[float], typer.Option(help=_help("min_time"))] = None,  # noqa: UP007,E501
    threads: Annotated[Optional[int], typer.Option(help=_help("threads"))] = None,  # noqa: UP007
    cpu_list: Annotated[Optional[str], typer.Option(help=_help("cpu_list"))] = None,  # noqa: UP007,E501
    profile_ops: Annotated[bool, typer.Option("--profile-ops", help=_help("profile_ops"))] = False,  # noqa: E501
    layer_errors: Annotated[bool, typer.Option("--layer-errors", help=_help("layer_errors"))] = False,  # noqa: E501
    timeout: Annotated[Optional[float], typer.Option(help=_help("timeout"))] = None,  # noqa: UP007,E501
    cooldown: Annotated[Optional[float], typer.Option(help=_help("cooldown"))] = None,  # noqa: UP007,E501
    string_map: Annotated[Optional[str], typer.Option(help="Placeholders: JSON or K=v,K2=v2.")] = None,  # noqa: UP007,E501
    json_dir: Annotated[Optional[Path], typer.Option(help="Also write one JSON file per result here.")] = None,  # noqa: UP007,E501
    html: Annotated[Optional[Path], typer.Option(help="Also write the matrix report (HTML, offline plots) here.")] = None,  # noqa: UP007,E501
    root_model_dir: Annotated[Optional[Path], typer.Option(help="Root for '//' file locations.")] = None,  # noqa: UP007,E501
    cache_dir: Annotated[Optional[Path], typer.Option(help="Artifact cache directory.")] = None,  # noqa: UP007,E501
    prompt_tokens: Annotated[Optional[str], typer.Option(help="Text generators: prompt lengths in tokens, comma-separated (one test each; default 128).")] = None,  # noqa: UP007,E501
    new_tokens: Annotated[Optional[int], typer.Option(help="Text generators: tokens generated per generation (default 64).")] = None,  # noqa: UP007,E501
    depth: Annotated[Optional[str], typer.Option(help="Text generators: KV cache depths filled before the prompt, comma-separated (default 0).")] = None,  # noqa: UP007,E501
    scenario: Annotated[Optional[str], typer.Option(help="Run under an MLPerf LoadGen load scenario: single_stream, multi_stream, server, offline (docs/scenarios.md).")] = None,  # noqa: UP007,E501
    latency_bound: Annotated[Optional[str], typer.Option(help="Server scenario: the p99 latency bound, e.g. 15ms; without --target-qps the highest QPS meeting it is searched.")] = None,  # noqa: UP007,E501
    target_qps: Annotated[Optional[float], typer.Option(help="Server: the arrival rate to run at; offline: the expected throughput.")] = None,  # noqa: UP007,E501
    duration: Annotated[Optional[float], typer.Option(help="Load scenarios: seconds each LoadGen run lasts at least (default 5).")] = None,  # noqa: UP007,E501
    query_count: Annotated[Optional[int], typer.Option(help="Load scenarios: queries each run issues at least (default: what early stopping needs).")] = None,  # noqa: UP007,E501
    samples_per_query: Annotated[Optional[int], typer.Option(help="Multi-stream: samples per query (default 8).")] = None,  # noqa: UP007,E501
    mlperf_durations: Annotated[bool, typer.Option("--mlperf-durations", help="Load scenarios: LoadGen's official minimum duration (600 s) and query counts.")] = False,  # noqa: E501
    scenario_accuracy: Annotated[bool, typer.Option("--scenario-accuracy", help="Load scenarios: LoadGen's accuracy mode, every sample once, its logged outputs checked against the reference.")] = False,  # noqa: E501
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the planned jobs and exit; with --lab, the request the lab would be sent.")] = False,  # noqa: E501
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress bar.")] = False,
    warnings: Annotated[bool, typer.Option("--warnings", help="Print every cell's noise warnings in full (one summary line is always printed).")] = False,  # noqa: E501
    wide: Annotated[bool, typer.Option("--wide", help="One table with every column (about 250 columns wide) instead of latency, cost and accuracy tables.")] = False,  # noqa: E501
    order: Annotated[str, typer.Option("--order", help="'rounds': every job's first process, then every job's second... (drift falls on every cell alike; ratios are paired); 'jobs': each job's processes back to back.")] = "rounds",  # noqa: E501
    reboot: Annotated[bool, typer.Option("--reboot", help="Reboot the device before the run (adb).")] = False,  # noqa: E501
    reboot_after_failures: Annotated[Optional[int], typer.Option(help="Reboot the device after this many failed jobs in a row (adb).")] = None,  # noqa: UP007,E501
    reboot_after_uptime: Annotated[Optional[float], typer.Option(help="Reboot the device before a job once it has been up this many hours (FAI-PEP: 8) (adb).")] = None,  # noqa: UP007,E501
    report_to: Annotated[Optional[str], typer.Option("--report-to", metavar="URL", help="Post each finished result to a benchlab lab server; token from BENCHLAB_LAB_TOKEN or the config file.")] = None,  # noqa: UP007,E501
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Run on a lab device instead of here: the lab's database URL (with --lab-device or --lab-pool).")] = None,  # noqa: UP007,E501
    lab_device: Annotated[Optional[str], typer.Option(help="With --lab: the device (its lab id).")] = None,  # noqa: UP007,E501
    lab_pool: Annotated[Optional[str], typer.Option(help="With --lab: every device matching this rule, e.g. 'abi=arm64-v8a'.")] = None,  # noqa: UP007,E501
    detach: Annotated[bool, typer.Option("--detach", help="With --lab: queue the jobs, print their ids and return without waiting ('benchlab lab status' follows them).")] = False,  # noqa: E501
) -> None:
    """Run benchmarks: the zoo's default models on every installed framework, or the specs given."""
    from benchlab.api import plan_sweep, run as run_sweep
    from benchlab.harness import describe_plan
    from benchlab.overrides import TestOverrides
    from benchlab.race import RacePolicy
    from benchlab.spec import parse_string_map
    from benchlab.sweep import Sweep
    from benchlab.targets.reboot import RebootPolicy

    overrides = TestOverrides(
        warmup=warmup, iter=iterations, repeat=repeat, min_time=min_time,
        target_ci=_percent(target_ci), threads=threads, cpu_list=cpu_list,
        profile_ops=True if profile_ops else None, timeout=timeout, cooldown=cooldown,
        temperature_gate=temperature_gate, layer_errors=True if layer_errors else None,
    )
    policy = RebootPolicy(
        before_run=reboot, after_failures=reboot_after_failures,
        max_uptime_s=None if reboot_after_uptime is None else reboot_after_uptime * 3600.0,
    )
    if goal is not None and repeat is not None:
        raise UsageError("--goal races the cells and --repeat fixes their processes: give one")
    race = None
    if goal is not None:
        try:
            race = RacePolicy(goal=_percent(goal, "--goal") or 0.0)
        except ValueError as exc:
            raise UsageError(f"--goal {goal!r}: {exc}") from None
    model_names = [m.strip() for m in models.split(",") if m.strip()] if models else None
    sweep = Sweep.of(
        list(specs), models=model_names, frameworks=split_frameworks(frameworks), target=target,
        exclude_targets=exclude_target, overrides=overrides,
        string_map=parse_string_map(string_map) if string_map else None,
        time_budget=time_budget, root_model_dir=root_model_dir, cache_dir=cache_dir,
        generations=generations_from_options(prompt_tokens, new_tokens, depth),
        scenario=scenario_from_options(scenario, latency_bound, target_qps, duration, query_count,
                           samples_per_query, mlperf_durations, scenario_accuracy),
        model=list(model), inputs=list(model_input), data=data, energy=energy,
        reboot=policy if policy.active else None, order=order, race=race,
    )
    if lab:
        from benchlab.cli_lab import run_on_lab

        # What only this machine's store would hold: the lab keeps the run in its own.
        _refuse_with_lab({"--db": db, "--resume": resume, "--resume-run": resume_run,
                          "--report-to": report_to},
                         "the lab stores the run in its own database")
        found, ok = run_on_lab(lab, sweep, lab_device, lab_pool, dry_run=dry_run,
                               detach=detach)
        if found:
            _print_results(found, "benchlab run on the lab", warnings=warnings, wide=wide)
            from benchlab.lab.queue import store_url

            _write_reports(found, json_dir, html, title="benchlab run on the lab",
                           label="lab", db=store_url(lab))
        raise typer.Exit(0 if ok else 1)
    _refuse_without_lab(detach=detach)
    if dry_run:
        console.print_json(describe_plan(plan_sweep(sweep)))
        return
    reporter = None
    if report_to:
        from benchlab.lab.reporter import Reporter, store_run_info

        # Built before the sweep, so a missing token or a bad URL stops it before any job.
        reporter = Reporter(report_to, run_info=store_run_info(db))
    # The lab is told the run finished only if the sweep returns; anything else stopped it.
    ended = "interrupted"
    try:
        results = run_sweep(
            sweep, db=db, resume=resume_run or resume, json_dir=json_dir,
            progress=not quiet, console=err_console,
            on_run=reporter.on_run if reporter else None,
            on_result=reporter.on_result if reporter else None,
        )
        ended = "finished"
    finally:
        if reporter is not None:
            for line in reporter.close(ended).lines():
                err_console.print(escape(line), highlight=False, soft_wrap=True)
    _print_results(list(results), f"benchlab run {results.run_id}", warnings=warnings,
                   wide=wide)
    for label, reason in results.skipped:
        console.print(f"[dim]skipped {escape(label)}: {escape(reason)}[/]")
    _write_reports(results, None, html, title=f"benchlab run {results.run_id}",
                   label=results.run_uuid, db=db)
    if results.failed:
        err_console.print(f"[red]{len(results.failed)} of {len(results)} jobs failed[/]")
    raise typer.Exit(results.exit_code)


def _refuse_with_lab(given: dict[str, Any], why: str) -> None:
    """A usage error naming the options given that a lab job cannot honour, and why."""
    named = [option for option, value in given.items() if value]
    if named:
        raise UsageError(f"{', '.join(named)} with --lab: {why}")


def _refuse_without_lab(**given: bool) -> None:
    """``--detach`` and a compare's or a track's ``--dry-run`` only mean something with --lab."""
    named = ["--" + name.replace("_", "-") for name, value in given.items() if value]
    if named:
        raise UsageError(f"{', '.join(named)} goes with --lab")


def _write_reports(results: Any, json_dir: Path | None, html: Path | None, *, title: str,
                   label: str, db: str | None) -> None:
    """The files a run writes beside its tables: one JSON per result under ``label``
    (``--json-dir``, for results that came from a lab; a run here writes them as they are
    stored) and the matrix report (``--html``), with the earlier points of the same cells in
    the store ``db``."""
    if json_dir is not None:
        from benchlab.report.jsondir import write_result_json

        for result in results:
            write_result_json(json_dir, label, result)
    if html is not None:
        from benchlab.report.matrix_html import write_matrix_html
        from benchlab.store import open_store

        with open_store(db) as store:
            previous = store.previous_points(results)
        path = write_matrix_html(list(results), html, title=title,
                                 skipped=getattr(results, "skipped", ()), previous=previous)
        console.print(f"report: {path}")


def _print_results(results: list[Any], title: str, *, warnings: bool = True,
                   wide: bool = False) -> None:
    from benchlab.report.tables import TABLE_PARTS
    from benchlab.report.terminal import (
        device_spread_table,
        noise_line,
        result_notes,
        results_table,
    )

    from benchlab.report.generation import generation_table
    from benchlab.report.scenario import scenario_table

    # Latency first and never cut; the rest in tables of their own (all at once with --wide).
    for part in ("all",) if wide else TABLE_PARTS:
        table = results_table(results, title=title if part in ("all", "latency") else part,
                              part=part)
        if table is not None:
            console.print(table)
    for table in (generation_table(results), scenario_table(results)):
        if table is not None:
            console.print(table)
    spread = device_spread_table(results)
    if spread is not None:
        console.print(spread)
    for note in result_notes(results, warnings=warnings):
        console.print(f"[dim]· {escape(note)}[/]", highlight=False)
    noise = noise_line(results)
    if noise:
        more = "" if warnings else " (every warning: --warnings)"
        console.print(f"{escape(noise)}{more}", highlight=False, soft_wrap=True)


def _side(
    label: str, program: str | None, config: str | None, python: str | None,
    commit: str | None = None, build: tuple[Path | None, str | None, str | None] = (None, None,
                                                                                   None),
    model: Path | None = None,
) -> Any:
    from benchlab.ab.pairs import Side, make_side

    if commit:
        if program or config or python or model:
            raise UsageError(f"give the {label} side one of --{label}-program, "
                             f"--{label}-config, --{label}-python, --{label}-model or "
                             f"--{label}-commit")
        from benchlab.artifacts import default_cache_dir
        from benchlab.tracking.gitrepo import commit_program

        repo, command, template = build
        if repo is None or template is None:
            raise UsageError(f"--{label}-commit needs --repo and --commit-program")
        sha, built = commit_program(repo, commit, template,
                                    default_cache_dir().parent / "builds", command)
        return Side(f"{label}:{sha[:12]}", string_map={"program": built})
    return make_side(label, program=program, config=config, python=python, model=model)


@app.command()
def compare(
    specs: Annotated[list[Path], typer.Argument(help="Spec or suite files (JSON/YAML).")] = [],  # noqa: B006
    models: Annotated[Optional[str], typer.Option(help="Zoo models, comma-separated.")] = None,  # noqa: UP007
    frameworks: Annotated[list[str], typer.Option("--frameworks", "-f", help="Frameworks of the jobs.")] = [],  # noqa: B006,E501
    control_program: Annotated[Optional[str], typer.Option(help="Control binary, as {program}.")] = None,  # noqa: UP007,E501
    treatment_program: Annotated[Optional[str], typer.Option(help="Treatment binary, as {program}.")] = None,  # noqa: UP007,E501
    control_config: Annotated[Optional[str], typer.Option(help="Control framework variant, e.g. pytorch:mode=eager.")] = None,  # noqa: UP007,E501
    treatment_config: Annotated[Optional[str], typer.Option(help="Treatment framework variant.")] = None,  # noqa: UP007,E501
    control_python: Annotated[Optional[str], typer.Option(help="Python of the control environment.")] = None,  # noqa: UP007,E501
    control_model: Annotated[Optional[Path], typer.Option(help="Control model file: replaces the spec's file of its format.")] = None,  # noqa: UP007,E501
    treatment_model: Annotated[Optional[Path], typer.Option(help="Treatment model file.")] = None,  # noqa: UP007,E501
    control_commit: Annotated[Optional[str], typer.Option(help="Control: this commit of --repo, built.")] = None,  # noqa: UP007,E501
    treatment_commit: Annotated[Optional[str], typer.Option(help="Treatment: this commit of --repo.")] = None,  # noqa: UP007,E501
    repo: Annotated[Optional[Path], typer.Option(help="Repository of the --*-commit sides.")] = None,  # noqa: UP007,E501
    build: Annotated[Optional[str], typer.Option(help="Build command run in each commit's worktree.")] = None,  # noqa: UP007,E501
    commit_program: Annotated[Optional[str], typer.Option(help="The build's command, e.g. '{WORKTREE}/bench'.")] = None,  # noqa: UP007,E501
    treatment_python: Annotated[Optional[str], typer.Option(help="Python of the treatment environment.")] = None,  # noqa: UP007,E501
    min_effect: Annotated[str, typer.Option(help="Smallest change that matters, e.g. 1%.")] = "1%",
    alpha: Annotated[float, typer.Option(help="False-discovery rate across metrics.")] = 0.05,
    pairs: Annotated[str, typer.Option(help="Looks: pairs after which to decide, e.g. 20,40,80.")] = "20,40,80",  # noqa: E501
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Re-measure regressions before declaring them.")] = True,  # noqa: E501
    mode: Annotated[str, typer.Option(help="How to pair the sides: auto (the strongest they allow), in-process, lockstep or process-pairs.")] = "auto",  # noqa: E501
    fidelity_tolerance: Annotated[str, typer.Option(help="How far an interleaved mode may move a side from its solo latency before the job goes to process pairs, e.g. 5%; 'off' to report only.")] = "5%",  # noqa: E501
    iterations: Annotated[Optional[int], typer.Option("--iter", help=_help("iter"))] = None,  # noqa: UP007,E501
    warmup: Annotated[Optional[int], typer.Option(help=_help("warmup"))] = None,  # noqa: UP007
    min_time: Annotated[Optional[float], typer.Option(help=_help("min_time"))] = None,  # noqa: UP007,E501
    markdown: Annotated[Optional[Path], typer.Option(help="Also write a Markdown report here.")] = None,  # noqa: UP007,E501
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the JSON report here.")] = None,  # noqa: UP007,E501
    html: Annotated[Optional[Path], typer.Option(help="Also write an HTML report with plots here.")] = None,  # noqa: UP007,E501
    db: DbOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Compare on a lab device (both sides there): the lab's database URL, with --lab-device.")] = None,  # noqa: UP007,E501
    lab_device: Annotated[Optional[str], typer.Option(help="With --lab: the device (its lab id).")] = None,  # noqa: UP007,E501
    target: Annotated[str, typer.Option("--target", help="The one device both sides run on: host, ssh:host=NAME, adb:serial=X.")] = "host",  # noqa: E501
    detach: Annotated[bool, typer.Option("--detach", help="With --lab: queue the job, print its id and return without waiting.")] = False,  # noqa: E501
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --lab: print the request the lab would be sent, and exit.")] = False,  # noqa: E501
) -> None:
    """A/B: is the treatment slower or faster than the control? Exit code 1 on a regression."""
    from benchlab.api import compare as run_compare
    from benchlab.ab.pairs import CompareSettings
    from benchlab.report.ab import (
        comparison_json,
        comparison_markdown,
        comparison_table,
        fidelity_lines,
    )
    from benchlab.overrides import TestOverrides
    from benchlab.sweep import Sweep

    try:
        looks = tuple(int(p) for p in pairs.split(",") if p.strip())
    except ValueError:
        raise UsageError(f"--pairs {pairs!r}: expected numbers like 20,40,80") from None
    if not looks or looks != tuple(sorted(looks)) or looks[0] < 2:
        raise UsageError("--pairs must increase and start at 2 or more")
    from benchlab.ab.interleave import parse_mode

    parse_mode(mode)  # an unknown name is a usage error before anything runs
    settings = CompareSettings(
        min_effect=_percent(min_effect, "--min-effect") or 0.01, alpha=alpha, looks=looks,
        verify=verify, mode=mode,
        fidelity_tolerance=(None if fidelity_tolerance == "off"
                            else _percent(fidelity_tolerance, "--fidelity-tolerance")),
    )
    sweep = Sweep.of(
        list(specs), models=[m.strip() for m in models.split(",") if m.strip()] if models
        else None, frameworks=split_frameworks(frameworks) or None, target=target,
        overrides=TestOverrides(iter=iterations, warmup=warmup, min_time=min_time),
    )
    if lab:
        from benchlab.cli_lab import ab_on_lab
        from benchlab.lab.ab_options import SideSpec, compare_options

        _refuse_with_lab({"--control-model": control_model,
                          "--treatment-model": treatment_model},
                         "the lab takes programs, configs or Pythons as sides: put each model "
                         "file in a spec")
        _refuse_with_lab({"--control-commit": control_commit,
                          "--treatment-commit": treatment_commit, "--repo": repo,
                          "--build": build, "--commit-program": commit_program},
                         "commits are built on the device by 'benchlab track --lab'")
        _refuse_with_lab({"--db": db}, "the lab stores the comparison in its own database")
        ab_on_lab(lab, lab_device, "compare", sweep, compare_options(
            SideSpec(control_program, control_config, control_python),
            SideSpec(treatment_program, treatment_config, treatment_python), settings),
            dry_run=dry_run, detach=detach)
    _refuse_without_lab(detach=detach, dry_run=dry_run)
    comparison = run_compare(
        sweep,
        control=_side("control", control_program, control_config, control_python,
                      control_commit, (repo, build, commit_program), control_model),
        treatment=_side("treatment", treatment_program, treatment_config, treatment_python,
                        treatment_commit, (repo, build, commit_program), treatment_model),
        db=db, settings=settings,
        progress=None if quiet else (lambda text: err_console.print(f"[dim]{escape(text)}[/]")),
    )
    console.print(comparison_table(comparison))
    for line in fidelity_lines(comparison):
        console.print(f"[dim]fidelity: {escape(line)}[/]")
    for note in (*comparison.failed, *comparison.skipped, *comparison.notes):
        err_console.print(f"[yellow]{escape(note)}[/]")
    if markdown:
        markdown.write_text(comparison_markdown(comparison))
    if json_out:
        json_out.write_text(comparison_json(comparison))
    if html:
        from benchlab.report.ab_html import comparison_html

        html.write_text(comparison_html(comparison))
    raise typer.Exit(comparison.exit_code)


@app.command()
def track(
    specs: Annotated[list[Path], typer.Argument(help="Spec files whose commands run {program}.")],
    repo: Annotated[Path, typer.Option(help="The git repository to walk.")],
    program: Annotated[str, typer.Option(help="The build's command, e.g. '{WORKTREE}/bin/bench'.")],  # noqa: E501
    revisions: Annotated[str, typer.Option(help="Commits: 'A..B' or a branch.")] = "HEAD",
    build: Annotated[Optional[str], typer.Option(help="Build command run in each worktree.")] = None,  # noqa: UP007,E501
    reference: Annotated[Optional[str], typer.Option(help="Pinned reference (default: first commit).")] = None,  # noqa: UP007,E501
    step: Annotated[int, typer.Option(help="Measure every N-th commit; bisect the gaps.")] = 1,
    pairs: Annotated[int, typer.Option(help="A/B pairs per commit.")] = 20,
    min_effect: Annotated[str, typer.Option(help="Smallest step that matters.")] = "1%",
    builds_dir: Annotated[Optional[Path], typer.Option(help="Where worktrees and builds live.")] = None,  # noqa: UP007,E501
    status_file: Annotated[Optional[Path], typer.Option(help="Write 'stop' here to stop.")] = None,  # noqa: UP007,E501
    follow: Annotated[bool, typer.Option("--follow", help="Keep following the branch.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between passes with --follow.")] = 600.0,  # noqa: E501
    remote: Annotated[Optional[str], typer.Option(help="Fetch --branch from this remote before each pass.")] = None,  # noqa: UP007,E501
    branch: Annotated[Optional[str], typer.Option(help="The branch to fetch (with --remote).")] = None,  # noqa: UP007,E501
    db: DbOption = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Track on a lab device: the lab's database URL, with --lab-device; --repo is a path on that device's host.")] = None,  # noqa: UP007,E501
    lab_device: Annotated[Optional[str], typer.Option(help="With --lab: the device (its lab id).")] = None,  # noqa: UP007,E501
    target: Annotated[str, typer.Option("--target", help="The one device the track runs on: host, ssh:host=NAME, adb:serial=X.")] = "host",  # noqa: E501
    detach: Annotated[bool, typer.Option("--detach", help="With --lab: queue the job, print its id and return without waiting.")] = False,  # noqa: E501
    dry_run: Annotated[bool, typer.Option("--dry-run", help="With --lab: print the request the lab would be sent, and exit.")] = False,  # noqa: E501
) -> None:
    """Benchmark a commit history against a pinned reference; find and bisect steps."""
    from benchlab.api import track as run_track
    from benchlab.artifacts import default_cache_dir
    from benchlab.report.history import track_table
    from benchlab.sweep import Sweep
    from benchlab.tracking import TrackSettings

    if step < 1 or pairs < 2:
        raise UsageError("--step must be at least 1 and --pairs at least 2")
    if (remote is None) != (branch is None):
        raise UsageError("give --remote and --branch together")
    if remote is not None and revisions == "HEAD":
        revisions = f"{remote}/{branch}"
    settings = TrackSettings(
        repo=repo, revisions=revisions, program=program, build_command=build,
        builds_dir=builds_dir or default_cache_dir().parent / "builds", reference=reference,
        step=step, pairs=pairs, min_effect=_percent(min_effect, "--min-effect") or 0.01,
        status_file=status_file, remote=remote, branch=branch,
    )
    sweep = Sweep.of(list(specs), target=target)
    if lab:
        from benchlab.cli_lab import ab_on_lab
        from benchlab.lab.ab_options import track_options

        _refuse_with_lab({"--follow": follow, "--builds-dir": builds_dir},
                         "a lab track walks a fixed range and builds on the device's host")
        _refuse_with_lab({"--db": db}, "the lab stores the track in its own database")
        ab_on_lab(lab, lab_device, "track", sweep, track_options(settings), dry_run=dry_run,
                  detach=detach)
    _refuse_without_lab(detach=detach, dry_run=dry_run)
    report = run_track(
        sweep, settings=settings, follow=follow, interval=interval, db=db,
        progress=None if quiet else (lambda text: err_console.print(f"[dim]{escape(text)}[/]")),
    )
    console.print(track_table(report))
    for note in report.notes:
        console.print(escape(note))
    if report.stopped:
        err_console.print("stopped by the status file; run again to resume")
    raise typer.Exit(1 if report.culprits else 0)


@results_app.command("list")
def results_list(
    db: DbOption = None,
    limit: Annotated[int, typer.Option(help="How many runs.")] = 20,
) -> None:
    """List recent runs."""
    from benchlab.report.history import runs_table
    from benchlab.store import open_store

    with open_store(db) as store:
        console.print(runs_table(store.list_runs(limit)))


@results_app.command("show")
def results_show(
    run_ref: Annotated[str, typer.Argument(help="Run id, UUID prefix or 'latest'.")] = "latest",
    db: DbOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the results as JSON.")] = False,
    warnings: Annotated[bool, typer.Option("--warnings", help="Print every cell's noise warnings in full.")] = False,  # noqa: E501
    wide: Annotated[bool, typer.Option("--wide", help="One table with every column instead of latency, cost and accuracy tables.")] = False,  # noqa: E501
) -> None:
    """Show the results of one run."""
    from benchlab.store import open_store

    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, with_samples=as_json)
    if as_json:
        sys.stdout.write(json.dumps([r.to_dict() for r in results], indent=1, default=str) + "\n")
        return
    _print_results(results, f"run {record.id} ({record.status.value}, {record.created_at[:19]})",
                   warnings=warnings, wide=wide)


@results_app.command("export")
def results_export(
    output: Annotated[Path, typer.Argument(help="File to write: .csv or .parquet.")],
    run_ref: Annotated[str, typer.Option("--run", help="Run id, UUID prefix or 'latest'.")] = "latest",  # noqa: E501
    db: DbOption = None,
    samples: Annotated[bool, typer.Option("--samples", help="Raw samples instead of summaries.")] = False,  # noqa: E501
) -> None:
    """Export one run's summaries (or raw samples) to CSV or Parquet."""
    from benchlab.report.export import export_results
    from benchlab.store import open_store

    with open_store(db) as store:
        results = store.results(store.get_run(run_ref).id, with_samples=samples)
    path = export_results(results, output, samples=samples)
    console.print(f"wrote {len(results)} results to {path}")


@results_app.command("html")
def results_html(
    output: Annotated[Path, typer.Argument(help="HTML file to write.")],
    run_ref: Annotated[str, typer.Option("--run", help="Run id, UUID prefix or 'latest'.")] = "latest",  # noqa: E501
    db: DbOption = None,
) -> None:
    """Write one run's matrix report: tables, latency distributions, latency vs error, ops."""
    from benchlab.report.matrix_html import write_matrix_html
    from benchlab.store import open_store

    with open_store(db) as store:
        record = store.get_run(run_ref)
        results = store.results(record.id, with_samples=True)
        previous = store.previous_points(results)
    path = write_matrix_html(results, output, title=f"benchlab run {record.id}",
                             previous=previous)
    console.print(f"wrote {path}")


@results_app.command("history")
def results_history(
    model: Annotated[str, typer.Argument(help="Model name.")],
    framework: Annotated[str, typer.Argument(help="Framework name.")],
    db: DbOption = None,
    metric: Annotated[str, typer.Option(help="Metric key.")] = LATENCY_KEY,
    limit: Annotated[int, typer.Option(help="How many points.")] = 50,
    html: Annotated[Optional[Path], typer.Option(help="Also write the history as an HTML plot here.")] = None,  # noqa: UP007,E501
) -> None:
    """The history of one model × framework: the median over time, with its CI, and where the
    runtime's version changed."""
    from benchlab.report.history import history_table
    from benchlab.store import open_store

    with open_store(db) as store:
        points = store.history(model, framework, metric_key=metric, limit=limit)
    title = f"{model} @ {framework}: {metric}"
    console.print(history_table(points, title=title))
    if html is not None:
        from benchlab.report.history_html import write_history_html

        console.print(f"report: {write_history_html(points, html, title=title)}")


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
    from benchlab.doctor import diagnose
    from benchlab.report.history import doctor_tables

    for table in doctor_tables(diagnose(db, target)):
        console.print(table)


def main() -> None:
    """Console entry point: user and infrastructure errors become one line and an exit code."""
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
