"""FAI-PEP's accuracy flow: commands run on the host around a job, output files pulled back.

A FAI-PEP accuracy spec measures more than the target's commands print. Around them, on the
machine that runs benchlab:

1. the model's ``preprocess.commands`` run once, before the job's first repetition (they
   fetch or unpack a data set into ``{HOSTDIR}``);
2. before each repetition the test's ``preprocess.commands`` run (they cut that repetition's
   slice of the data set, ``{INDEX}`` being the repetition's 0-based index, and write its
   input file, an ``input_files`` entry located under ``{HOSTDIR}``, which is then pushed);
3. the test's commands run on the target as usual and write ``output_files`` there;
4. each output file is pulled into ``{HOSTDIR}/output/`` (and deleted on the target when it
   lies in the job's work directory, so a later repetition never reads a stale one), then the
   test's ``postprocess.commands`` run, comparing it with a golden file;
5. after the last repetition the model's ``postprocess.commands`` run once (they aggregate).

Host commands run through ``sh`` in ``{HOSTDIR}`` with the test's timeout; the metric lines they
print (on stdout or stderr, as for the ``generic`` framework) join the job's samples. One that
fails, or names a placeholder nothing defines (``{FAIPEPROOT}`` without ``--string-map``), ends
the job with the command and its output's tail. ``{HOSTDIR}`` is a fresh directory per job,
deleted when the job ends.

In host commands ``{files.X}``, ``{input_files.X}`` and ``{output_files.X}`` are host paths and
``{PYTHON}`` is benchlab's interpreter; in the target's commands they are the target's paths.
"""

from __future__ import annotations

import posixpath
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchlab.spec.artifacts import ArtifactCache
from benchlab.errors import BenchlabError, InfrastructureError, UsageError, UserError
from benchlab.protocol.lines import ParsedOutput, parse_output
from benchlab.schema.result import Sample, Status
from benchlab.spec.placeholders import placeholder_map, substitute, unresolved
from benchlab.spec.types import BenchmarkSpec, FileRef, TestCase
from benchlab.targets.base import CommandResult, RunRequest, Target
from benchlab.targets.host import HostTarget

__all__ = [
    "HOSTDIR",
    "INDEX",
    "HostSteps",
    "Repetition",
    "StepFailure",
    "merge_parsed",
    "renumbered",
]

#: The placeholder of the job's host directory.
HOSTDIR = "HOSTDIR"
#: The placeholder of the repetition's 0-based index.
INDEX = "INDEX"
_OUTPUT_DIR = "output"
_TAIL_LINES = 40
_TAIL_CHARS = 4000


class StepFailure(BenchlabError):
    """A host step ended the job: ``status`` and ``reason`` for its result, ``tail`` the end of
    the output of the command that failed (None when no command ran)."""

    def __init__(self, status: Status, reason: str, tail: str | None = None) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.tail = tail


@dataclass(frozen=True, slots=True)
class Repetition:
    """What the target's commands of one repetition see: file paths and placeholders there."""

    files: Mapping[str, str]
    placeholders: Mapping[str, str]


def _tail(result: CommandResult) -> str:
    text = (result.stderr or result.stdout).rstrip()
    return "\n".join(text.splitlines()[-_TAIL_LINES:])[-_TAIL_CHARS:]


def _why(result: CommandResult, timeout: float) -> tuple[Status, str] | None:
    """The status and a few words for a host command that did not end cleanly."""
    if result.timed_out:
        return Status.TIMEOUT, f"timed out after {timeout:g} s"
    if result.returncode == 0:
        return None
    last = next((ln.strip() for ln in reversed(result.stderr.splitlines()) if ln.strip()), "")
    why = f"exited with status {result.returncode}"
    return Status.FAILED, f"{why}: {last[:300]}" if last else why


def _made_at_run_time(ref: FileRef) -> bool:
    return f"{{{HOSTDIR}}}" in ref.location


def merge_parsed(first: ParsedOutput, second: ParsedOutput) -> ParsedOutput:
    """One repetition's output from two parses: ``second``'s samples are numbered after
    ``first``'s of the same metric, and its details win."""
    counts: dict[str, int] = {}
    for sample in first.samples:
        counts[sample.key] = counts.get(sample.key, 0) + 1
    shifted = tuple(replace(s, index=s.index + counts.get(s.key, 0)) for s in second.samples)
    return ParsedOutput(
        samples=first.samples + shifted,
        summaries=first.summaries + second.summaries,
        details={**first.details, **second.details},
        infos=tuple(dict.fromkeys(first.infos + second.infos)),
        malformed=first.malformed + second.malformed,
        metric_lines=first.metric_lines + second.metric_lines,
    )


def renumbered(samples: Sequence[Sample], parsed: ParsedOutput, repetition: int) -> list[Sample]:
    """``parsed``'s samples as samples of ``repetition``, numbered after those of ``samples``
    with the same metric and repetition (the model postprocess's lines join the last one)."""
    counts: dict[str, int] = {}
    for sample in samples:
        if sample.repetition == repetition:
            counts[sample.key] = counts.get(sample.key, 0) + 1
    return [Sample(s.metric, s.value, s.unit, s.type, repetition,
                   s.index + counts.get(s.key, 0)) for s in parsed.samples]


class HostSteps:
    """One job's host side of FAI-PEP's accuracy flow (see the module's documentation).

    Call :meth:`fetch`, then :meth:`start` once the target's work directory holds the fetched
    files, :meth:`before` and :meth:`after` around each repetition's target commands,
    :meth:`finish` after the last one, and :meth:`close` at the end, whatever happened. Every
    method but :meth:`fetch` raises :class:`StepFailure` when a step ends the job.
    """

    def __init__(
        self,
        spec: BenchmarkSpec,
        test: TestCase,
        cache: ArtifactCache,
        string_map: Mapping[str, str] | None = None,
    ) -> None:
        self._spec = spec
        self._test = test
        self._cache = cache
        self._string_map = dict(string_map or {})
        self._host = HostTarget()
        self._host_dir: Path | None = None
        self._target: Target | None = None
        self._workdir = ""
        self._python = ""
        self._local: dict[str, Path] = {}  # files.X / input_files.X → host path
        self._remote: dict[str, str] = {}  # the same keys (and native.*) → target path
        self._pending: list[str] = []  # host output of this repetition, parsed in after()
        files = [*spec.model.files.values(), *test.input_files.values()]
        # A job without any of the flow makes no host directory.
        self._active = bool(
            spec.model.preprocess or spec.model.postprocess or test.preprocess
            or test.postprocess or test.output_files or any(map(_made_at_run_time, files))
            or any(f"{{{HOSTDIR}}}" in command for command in test.commands)
        )

    @property
    def host_dir(self) -> Path:
        """The job's host directory (``{HOSTDIR}``), made on first use."""
        if self._host_dir is None:
            self._host_dir = Path(tempfile.mkdtemp(prefix="benchlab-host-"))
        return self._host_dir

    @property
    def active(self) -> bool:
        """True when the job has any of the host flow (pre/postprocess, host-made files)."""
        return self._active

    @property
    def reports_at_end(self) -> bool:
        """True when the model's postprocess runs after the last repetition: a repetition that
        prints no metric line may still get its metrics from it."""
        return bool(self._spec.model.postprocess)

    def close(self) -> None:
        """Delete the host directory and everything in it."""
        if self._host_dir is not None:
            shutil.rmtree(self._host_dir, ignore_errors=True)
            self._host_dir = None

    # -- files ---------------------------------------------------------------------------------

    def _location(self, ref: FileRef) -> FileRef:
        """``ref`` with the placeholders of its location substituted (UsageError naming any
        that nothing defines)."""
        if "{" not in ref.location:
            return ref
        # Only a file made at run time needs {HOSTDIR}, so fetch() makes no directory.
        own = {HOSTDIR: str(self.host_dir)} if _made_at_run_time(ref) else {}
        values = placeholder_map(self._spec, self._test, files={}, target_dir="",
                                 extra={**own, **self._string_map})
        del values["TGTDIR"]  # a file's source is never on the target
        location = substitute(ref.location, values)
        missing = unresolved(location, every=True)
        if missing:
            names = ", ".join(f"{{{n}}}" for n in missing)
            raise UsageError(f"file {ref.key!r}: its location {ref.location} names {names}, "
                             f"which nothing defines; give it with --string-map "
                             f"{missing[0]}=VALUE")
        return replace(ref, location=location)

    def fetch(self) -> dict[str, Path]:
        """Every model and input file that exists before the job starts, fetched and verified,
        keyed ``files.KEY`` / ``input_files.KEY``; placeholders in their locations are
        substituted first. Files located in ``{HOSTDIR}`` are made by the preprocess commands
        and come later. Raises UserError or DownloadError as the artifact cache does."""
        refs = {f"files.{k}": r for k, r in self._spec.model.files.items()}
        refs.update({f"input_files.{k}": r for k, r in self._test.input_files.items()})
        for key, ref in refs.items():
            if not _made_at_run_time(ref):
                self._local[key] = self._cache.fetch(self._location(ref))
        return dict(self._local)

    def _planned(self, ref: FileRef) -> FileRef:
        """Where the host steps make a file located in ``{HOSTDIR}``."""
        try:
            return self._location(ref)
        except UsageError as exc:
            raise StepFailure(Status.USER_ERROR, str(exc)) from None

    def _stage(self, prefix: str, refs: Mapping[str, FileRef]) -> None:
        """Fetch and push the files of ``refs`` made at run time (in ``{HOSTDIR}``)."""
        assert self._target is not None
        for name, ref in refs.items():
            if not _made_at_run_time(ref):
                continue
            key = f"{prefix}.{name}"
            located = self._planned(ref)
            path = Path(located.location)
            if not path.is_file():
                raise StepFailure(Status.FAILED, f"file {name!r} ({ref.location}) should have "
                                  f"been made by the preprocess commands, but {path} is not "
                                  "there")
            try:
                self._local[key] = self._cache.fetch(located)
            except UserError as exc:
                raise StepFailure(Status.USER_ERROR, str(exc)) from None
            local = self._local[key]
            self._remote[key] = self._target.push(
                local, self._workdir, local.name if prefix == "input_files" else None)

    # -- placeholders --------------------------------------------------------------------------

    def _values(self, *, host: bool, index: int | None,
                outputs: Mapping[str, str] | None = None) -> dict[str, str]:
        files: dict[str, str | Path] = {}
        if host:  # a file the host steps make is named by where they make it
            for prefix, refs in (("files", self._spec.model.files),
                                 ("input_files", self._test.input_files)):
                for name, ref in refs.items():
                    if _made_at_run_time(ref):
                        files[f"{prefix}.{name}"] = self._planned(ref).location
        files.update({k: v for k, v in (self._local if host else self._remote).items()
                      if k.startswith(("files.", "input_files."))})
        files.update({f"output_files.{k}": v for k, v in (outputs or {}).items()})
        extra = {"PYTHON": sys.executable if host else self._python}
        if self._active:
            extra[HOSTDIR] = str(self.host_dir)
        if index is not None:
            extra[INDEX] = str(index)
        try:
            return placeholder_map(self._spec, self._test, files=files,
                                   target_dir=self._workdir,
                                   extra={**extra, **self._string_map})
        except UsageError as exc:
            raise StepFailure(Status.USER_ERROR, str(exc)) from None

    def _outputs_on_target(self, index: int) -> dict[str, str]:
        """Where each output file lies on the target in repetition ``index``."""
        values = self._values(host=False, index=index)
        where: dict[str, str] = {}
        for key, output in self._test.output_files.items():
            location = substitute(output.location, values)
            missing = unresolved(location, every=True)
            if missing:
                names = ", ".join(f"{{{n}}}" for n in missing)
                raise StepFailure(Status.USER_ERROR, f"output file {key!r}: its location "
                                  f"{output.location} names {names}, which nothing defines")
            where[key] = posixpath.join(self._workdir, location)
        return where

    def _outputs_on_host(self) -> dict[str, str]:
        folder = self.host_dir / _OUTPUT_DIR
        return {k: str(folder / o.filename) for k, o in self._test.output_files.items()}

    # -- running -------------------------------------------------------------------------------

    def _run(self, where: str, commands: Sequence[str], values: Mapping[str, str]) -> None:
        """Run host commands one after another; their output joins this repetition's."""
        for number, raw in enumerate(commands, 1):
            command = substitute(raw, values)
            which = f"{where} command" + (f" {number} of {len(commands)}"
                                          if len(commands) > 1 else "")
            missing = unresolved(command)
            if missing:
                names = ", ".join(f"{{{n}}}" for n in missing)
                raise StepFailure(Status.USER_ERROR, f"{which} names {names}, which nothing "
                                  f"defines; give it with --string-map {missing[0]}=VALUE "
                                  f"(the command: {raw[:300]})")
            result = self._host.run(RunRequest(argv=command, cwd=str(self.host_dir),
                                               timeout=self._test.timeout))
            self._pending += [result.stdout, result.stderr]
            failure = _why(result, self._test.timeout)
            if failure is not None:
                raise StepFailure(failure[0], f"{which} {failure[1]} (the command: "
                                  f"{command[:500]})", _tail(result))

    def _take_pending(self) -> ParsedOutput:
        text = "\n".join(self._pending)
        self._pending = []
        return parse_output(text)

    def start(self, target: Target, workdir: str, pushed: Mapping[str, str]) -> None:
        """Run the model's preprocess, then fetch and push the model files it made.

        ``pushed`` maps the keys of :meth:`fetch`'s files (and any other staged file) to their
        paths on the target. The preprocess's metric lines join the first repetition's.
        """
        self._target = target
        self._workdir = workdir
        self._python = target.python_executable()
        self._remote.update(pushed)
        if self._test.output_files:
            (self.host_dir / _OUTPUT_DIR).mkdir(exist_ok=True)
        if self._spec.model.preprocess:
            self._run("model preprocess", self._spec.model.preprocess,
                      self._values(host=True, index=None))
        self._stage("files", self._spec.model.files)

    def before(self, index: int) -> Repetition:
        """Run the test's preprocess for repetition ``index``, push the input files it made,
        and return the target's files and placeholders for the repetition."""
        if self._test.preprocess:
            self._run("test preprocess", self._test.preprocess,
                      self._values(host=True, index=index))
        self._stage("input_files", self._test.input_files)
        outputs = self._outputs_on_target(index) if self._test.output_files else {}
        return Repetition(files=dict(self._remote),
                          placeholders=self._values(host=False, index=index, outputs=outputs))

    def after(self, index: int) -> ParsedOutput:
        """Pull repetition ``index``'s output files, run the test's postprocess, and return the
        metric lines the host printed for this repetition (preprocess included)."""
        assert self._target is not None
        if self._test.output_files:
            self._pull(index)
        if self._test.postprocess:
            outputs = self._outputs_on_host() if self._test.output_files else {}
            self._run("test postprocess", self._test.postprocess,
                      self._values(host=True, index=index, outputs=outputs))
        return self._take_pending()

    def _pull(self, index: int) -> None:
        assert self._target is not None
        remote = self._outputs_on_target(index)
        local = self._outputs_on_host()
        for key, path in remote.items():
            copy = Path(local[key])
            copy.unlink(missing_ok=True)
            try:
                self._target.pull(path, copy)
            except (OSError, InfrastructureError) as exc:
                raise StepFailure(Status.FAILED, f"output file {key!r} could not be pulled "
                                  f"from {path} after repetition {index} (did the commands "
                                  f"write it?): {exc}") from None
        inside = [p for p in remote.values() if p.startswith(self._workdir.rstrip("/") + "/")]
        if inside:  # moved, not copied: a later repetition must write its own
            self._target.run(RunRequest(argv=["rm", "-f", *inside], timeout=60.0))

    def finish(self, last: int) -> ParsedOutput:
        """Run the model's postprocess after the last repetition (``{INDEX}`` is ``last``) and
        return the metric lines it printed."""
        if self._spec.model.postprocess:
            self._run("model postprocess", self._spec.model.postprocess,
                      self._values(host=True, index=last))
        return self._take_pending()
