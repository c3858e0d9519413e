"""``benchlab compare`` and ``benchlab track``: the A/B commands (:mod:`benchlab.cli.commands` registers
them), each one call of :func:`benchlab.compare` or :func:`benchlab.track`, here or as a lab job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.markup import escape

from benchlab.cli.options import (
    CacheDirOption,
    DbOption,
    DetachOption,
    IterOption,
    LabDeviceOption,
    LabDryRunOption,
    MinTimeOption,
    OneTargetOption,
    QuietOption,
    WarmupOption,
    percent,
    refuse_with_lab,
    refuse_without_lab,
    split_frameworks,
    split_models,
)
from benchlab.cli.helptext import DECIDE, LAB, OUTPUT, WHERE
from benchlab.cli.labels import (RegressedTypesOption, UserIdentifierOption, UserStringOption,
                                 labels_from_options)
from benchlab.cli.output import console, err_console, progress_printer
from benchlab.errors import UsageError

__all__ = ["compare", "track"]

# The panels of compare's and track's own options in their --help (helptext.py: the shared ones).
WHAT_TO_COMPARE = "What to compare"
SIDES = "The two sides"
WHAT_TO_TRACK = "What to track"
REFERENCE = "The reference"
FOLLOWING = "Following a branch, stopping"


def _side(
    label: str, program: str | None, config: str | None, python: str | None,
    commit: str | None = None, build: tuple[Path | None, str | None, str | None] = (None, None,
                                                                                   None),
    model: Path | None = None,
) -> Any:
    from benchlab.ab.sides import Side, make_side

    if commit:
        if program or config or python or model:
            raise UsageError(f"give the {label} side one of --{label}-program, "
                             f"--{label}-config, --{label}-python, --{label}-model or "
                             f"--{label}-commit")
        from benchlab.spec.artifacts import default_cache_dir
        from benchlab.tracking.gitrepo import commit_program

        repo, command, template = build
        if repo is None or template is None:
            raise UsageError(f"--{label}-commit needs --repo and --commit-program")
        sha, built = commit_program(repo, commit, template,
                                    default_cache_dir().parent / "builds", command)
        return Side(f"{label}:{sha[:12]}", string_map={"program": built})
    return make_side(label, program=program, config=config, python=python, model=model)


def compare(
    specs: Annotated[list[Path], typer.Argument(help="Spec or suite files (JSON/YAML).")] = [],  # noqa: B006
    models: Annotated[Optional[str], typer.Option(help="Zoo models, comma-separated.", rich_help_panel=WHAT_TO_COMPARE)] = None,  # noqa: UP007
    frameworks: Annotated[list[str], typer.Option("--frameworks", "-f", help="Frameworks of the jobs.", rich_help_panel=WHAT_TO_COMPARE)] = [],  # noqa: B006,E501
    control_program: Annotated[Optional[str], typer.Option(help="Control binary, as {program}.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    treatment_program: Annotated[Optional[str], typer.Option(help="Treatment binary, as {program}.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    control_config: Annotated[Optional[str], typer.Option(help="Control framework variant, e.g. pytorch:mode=eager.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    treatment_config: Annotated[Optional[str], typer.Option(help="Treatment framework variant.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    control_python: Annotated[Optional[str], typer.Option(help="Python of the control environment.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    treatment_python: Annotated[Optional[str], typer.Option(help="Python of the treatment environment.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    control_model: Annotated[Optional[Path], typer.Option(help="Control model file: replaces the spec's file of its format.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    treatment_model: Annotated[Optional[Path], typer.Option(help="Treatment model file.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    control_commit: Annotated[Optional[str], typer.Option(help="Control: this commit of --repo, built.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    treatment_commit: Annotated[Optional[str], typer.Option(help="Treatment: this commit of --repo.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    repo: Annotated[Optional[Path], typer.Option(help="Repository of the --*-commit sides.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    build: Annotated[Optional[str], typer.Option(help="Build command run in each commit's worktree.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    commit_program: Annotated[Optional[str], typer.Option(help="The build's command, e.g. '{WORKTREE}/bench'.", rich_help_panel=SIDES)] = None,  # noqa: UP007,E501
    min_effect: Annotated[str, typer.Option(help="Smallest change that matters, e.g. 1%.", rich_help_panel=DECIDE)] = "1%",
    alpha: Annotated[float, typer.Option(help="False-discovery rate across metrics.", rich_help_panel=DECIDE)] = 0.05,
    pairs: Annotated[str, typer.Option(help="Looks: pairs after which to decide, e.g. 20,40,80.", rich_help_panel=DECIDE)] = "20,40,80",  # noqa: E501
    verify: Annotated[bool, typer.Option("--verify/--no-verify", help="Re-measure regressions before declaring them.", rich_help_panel=DECIDE)] = True,  # noqa: E501
    mode: Annotated[str, typer.Option(help="How to pair the sides: auto (the strongest they allow), in-process, lockstep or process-pairs.", rich_help_panel=DECIDE)] = "auto",  # noqa: E501
    fidelity_tolerance: Annotated[str, typer.Option(help="How far an interleaved mode may move a side from its solo latency before the job goes to process pairs, e.g. 5%; 'off' to report only.", rich_help_panel=DECIDE)] = "5%",  # noqa: E501
    measure: Annotated[str, typer.Option(help="What decides: time (wall time, the modes above), instructions (each call's instructions, counted under valgrind in process pairs: exact, slow, one thread) or both.", rich_help_panel=DECIDE)] = "time",  # noqa: E501
    iterations: IterOption = None,
    warmup: WarmupOption = None,
    min_time: MinTimeOption = None,
    target: OneTargetOption = "host",
    cache_dir: CacheDirOption = None,
    markdown: Annotated[Optional[Path], typer.Option(help="Also write a Markdown report here.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    json_out: Annotated[Optional[Path], typer.Option("--json", help="Also write the JSON report here.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    html: Annotated[Optional[Path], typer.Option(help="Also write an HTML report with plots here.", rich_help_panel=OUTPUT)] = None,  # noqa: UP007,E501
    wide: Annotated[bool, typer.Option("--wide", help="Every column of the verdict table: also each job's mode, pairs or sessions, fidelity and q.", rich_help_panel=OUTPUT)] = False,  # noqa: E501
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Compare on a lab device (both sides there): the lab's database URL, with --lab-device.", rich_help_panel=LAB)] = None,  # noqa: UP007,E501
    lab_device: LabDeviceOption = None,
    detach: DetachOption = False,
    dry_run: LabDryRunOption = False,
    user_identifier: UserIdentifierOption = None,
    user_string: UserStringOption = None,
    regressed_types: RegressedTypesOption = None,
    db: DbOption = None,
    quiet: QuietOption = False,
) -> None:
    """A/B: is the treatment slower or faster than the control? Exit code 1 on a regression."""
    from benchlab.api import compare as run_compare
    from benchlab.harness.overrides import TestOverrides
    from benchlab.harness.sweep import Sweep

    settings = _compare_settings(min_effect, alpha, pairs, verify, mode, fidelity_tolerance,
                                 measure)
    sweep = Sweep.of(
        list(specs), models=split_models(models),
        frameworks=split_frameworks(frameworks) or None, target=target, cache_dir=cache_dir,
        overrides=TestOverrides(iter=iterations, warmup=warmup, min_time=min_time),
        labels=labels_from_options(user_identifier, user_string,
                                   regressed_types=regressed_types),
    )
    if lab:
        from benchlab.cli.lab import ab_on_lab
        from benchlab.lab.ab_options import SideSpec, compare_options

        refuse_with_lab({"--control-model": control_model,
                         "--treatment-model": treatment_model},
                         "the lab takes programs, configs or Pythons as sides: put each model "
                         "file in a spec")
        refuse_with_lab({"--control-commit": control_commit,
                         "--treatment-commit": treatment_commit, "--repo": repo,
                         "--build": build, "--commit-program": commit_program},
                         "commits are built on the device by 'benchlab track --lab'")
        refuse_with_lab({"--db": db}, "the lab stores the comparison in its own database")
        ab_on_lab(lab, lab_device, "compare", sweep, compare_options(
            SideSpec(control_program, control_config, control_python),
            SideSpec(treatment_program, treatment_config, treatment_python), settings),
            dry_run=dry_run, detach=detach)
    refuse_without_lab(detach=detach, dry_run=dry_run)
    comparison = run_compare(
        sweep,
        control=_side("control", control_program, control_config, control_python,
                      control_commit, (repo, build, commit_program), control_model),
        treatment=_side("treatment", treatment_program, treatment_config, treatment_python,
                        treatment_commit, (repo, build, commit_program), treatment_model),
        db=db, settings=settings,
        progress=progress_printer(quiet),
    )
    _print_comparison(comparison, markdown=markdown, json_out=json_out, html=html, wide=wide)
    raise typer.Exit(comparison.exit_code)


def _compare_settings(min_effect: str, alpha: float, pairs: str, verify: bool, mode: str,
                      fidelity_tolerance: str, measure: str = "time") -> Any:
    """The compare options as :class:`CompareSettings`, each bad value a usage error."""
    from benchlab.ab.interleave import parse_mode
    from benchlab.ab.sides import CompareSettings

    try:
        looks = tuple(int(p) for p in pairs.split(",") if p.strip())
    except ValueError:
        raise UsageError(f"--pairs {pairs!r}: expected numbers like 20,40,80") from None
    if not looks or looks != tuple(sorted(looks)) or looks[0] < 2:
        raise UsageError("--pairs must increase and start at 2 or more")
    parse_mode(mode)  # an unknown name is a usage error before anything runs
    return CompareSettings(
        min_effect=percent(min_effect, "--min-effect") or 0.01, alpha=alpha, looks=looks,
        verify=verify, mode=mode, measure=measure,
        fidelity_tolerance=(None if fidelity_tolerance == "off"
                            else percent(fidelity_tolerance, "--fidelity-tolerance")),
    )


def _print_comparison(comparison: Any, *, markdown: Path | None, json_out: Path | None,
                      html: Path | None, wide: bool = False) -> None:
    """The verdict table and notes here; the Markdown, JSON and HTML reports where asked."""
    from benchlab.report.ab import (
        comparison_json,
        comparison_markdown,
        comparison_table,
        fidelity_lines,
    )

    console.print(comparison_table(comparison, wide=wide))
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


def track(
    specs: Annotated[list[Path], typer.Argument(help="Spec files whose commands run {program}.")],
    repo: Annotated[Path, typer.Option(help="The git or Mercurial repository to walk.", rich_help_panel=WHAT_TO_TRACK)],
    program: Annotated[str, typer.Option(help="The build's command, e.g. '{WORKTREE}/bin/bench'.", rich_help_panel=WHAT_TO_TRACK)],  # noqa: E501
    revisions: Annotated[str, typer.Option(help="Commits: 'A..B' or a branch.", rich_help_panel=WHAT_TO_TRACK)] = "HEAD",
    build: Annotated[Optional[str], typer.Option(help="Build command run in each worktree.", rich_help_panel=WHAT_TO_TRACK)] = None,  # noqa: UP007,E501
    vcs: Annotated[Optional[str], typer.Option("--vcs", help="git or hg (FAI-PEP's --repo git|hg); default: detected from the repository's .git or .hg.", rich_help_panel=WHAT_TO_TRACK)] = None,  # noqa: UP007,E501
    builds_dir: Annotated[Optional[Path], typer.Option(help="Where worktrees and builds live.", rich_help_panel=WHAT_TO_TRACK)] = None,  # noqa: UP007,E501
    reference: Annotated[Optional[str], typer.Option(help="Pinned reference (default: first commit).", rich_help_panel=REFERENCE)] = None,  # noqa: UP007,E501
    weekly_reference: Annotated[bool, typer.Option("--weekly-reference", help="FAI-PEP's control: the reference is the first commit of the newest commit's week (Monday 00:00 UTC).", rich_help_panel=REFERENCE)] = False,  # noqa: E501
    base_commit: Annotated[Optional[str], typer.Option("--base-commit", "--base_commit", help="FAI-PEP's --base_commit: the reference is the later of this commit and the week's first (implies --weekly-reference).", rich_help_panel=REFERENCE)] = None,  # noqa: UP007,E501
    step: Annotated[int, typer.Option(help="Measure every N-th commit; bisect the gaps.", rich_help_panel=DECIDE)] = 1,
    pairs: Annotated[Optional[int], typer.Option(help="A/B pairs per commit (default 20; 1 with --measure instructions).", rich_help_panel=DECIDE)] = None,  # noqa: UP007,E501
    measure: Annotated[str, typer.Option(help="What each commit is judged on: time, or instructions (counted under valgrind: exact, slow, one thread).", rich_help_panel=DECIDE)] = "time",  # noqa: E501
    min_effect: Annotated[str, typer.Option(help="Smallest step that matters.", rich_help_panel=DECIDE)] = "1%",
    target: OneTargetOption = "host",
    same_host: Annotated[Optional[bool], typer.Option("--same-host/--other-host", "--same_host", help="Whether the device is the build host: then builds never overlap measurements (FAI-PEP's --same_host). Default: same host when --target is host; else the next commit is built while the current one is measured.", rich_help_panel=WHERE)] = None,  # noqa: UP007,E501
    follow: Annotated[bool, typer.Option("--follow", help="Keep following the branch.", rich_help_panel=FOLLOWING)] = False,
    interval: Annotated[float, typer.Option(help="Seconds between passes with --follow.", rich_help_panel=FOLLOWING)] = 600.0,  # noqa: E501
    remote: Annotated[Optional[str], typer.Option(help="Fetch --branch from this remote before each pass.", rich_help_panel=FOLLOWING)] = None,  # noqa: UP007,E501
    branch: Annotated[Optional[str], typer.Option(help="The branch to fetch (with --remote).", rich_help_panel=FOLLOWING)] = None,  # noqa: UP007,E501
    status_file: Annotated[Optional[Path], typer.Option(help="Write 'stop' here to stop.", rich_help_panel=FOLLOWING)] = None,  # noqa: UP007,E501
    lab: Annotated[Optional[str], typer.Option("--lab", metavar="DB", help="Track on a lab device: the lab's database URL, with --lab-device; --repo is a path on that device's host.", rich_help_panel=LAB)] = None,  # noqa: UP007,E501
    lab_device: LabDeviceOption = None,
    detach: DetachOption = False,
    dry_run: LabDryRunOption = False,
    db: DbOption = None,
    quiet: QuietOption = False,
) -> None:
    """Benchmark a commit history against a pinned reference; find and bisect steps."""
    from benchlab.api import track as run_track
    from benchlab.spec.artifacts import default_cache_dir
    from benchlab.report.history import track_table
    from benchlab.harness.sweep import Sweep
    from benchlab.tracking import TrackSettings

    if measure not in ("time", "instructions"):
        raise UsageError(f"--measure {measure!r}: a track judges commits on time or instructions")
    pairs = pairs or (1 if measure == "instructions" else 20)
    if step < 1 or pairs < (1 if measure == "instructions" else 2):
        raise UsageError("--step must be at least 1 and --pairs at least 2 (1 when counting)")
    if (remote is None) != (branch is None):
        raise UsageError("give --remote and --branch together")
    if base_commit is not None and reference is not None:
        raise UsageError("give --reference (pinned) or --base-commit (FAI-PEP's weekly rule), "
                         "not both")
    if remote is not None and branch is not None and revisions == "HEAD" and not lab:
        # (A lab's repository is on its device: the lab refuses --remote there.)
        from benchlab.tracking.vcs import open_repository

        revisions = open_repository(repo, vcs).followed_revisions(remote, branch)
    settings = TrackSettings(
        repo=repo, revisions=revisions, program=program, build_command=build,
        builds_dir=builds_dir or default_cache_dir().parent / "builds",
        reference=reference or base_commit,
        step=step, pairs=pairs, min_effect=percent(min_effect, "--min-effect") or 0.01,
        status_file=status_file, remote=remote, branch=branch, measure=measure, vcs=vcs,
        reference_rule="week" if weekly_reference or base_commit else "first",
        same_host=same_host,
    )
    sweep = Sweep.of(list(specs), target=target)
    if lab:
        from benchlab.cli.lab import ab_on_lab
        from benchlab.lab.ab_options import track_options

        refuse_with_lab({"--follow": follow, "--builds-dir": builds_dir},
                         "a lab track walks a fixed range and builds on the device's host")
        refuse_with_lab({"--db": db}, "the lab stores the track in its own database")
        ab_on_lab(lab, lab_device, "track", sweep, track_options(settings), dry_run=dry_run,
                  detach=detach)
    refuse_without_lab(detach=detach, dry_run=dry_run)
    report = run_track(
        sweep, settings=settings, follow=follow, interval=interval, db=db,
        progress=progress_printer(quiet),
    )
    console.print(track_table(report))
    for note in report.notes:
        console.print(escape(note))
    if report.stopped:
        err_console.print("stopped by the status file; run again to resume")
    raise typer.Exit(1 if report.culprits else 0)
