"""Pydantic models of the spec and suite file formats.

These models exist only at the file boundary: they describe what a file may contain (FAI-PEP's
legacy keys included) and produce the JSON Schema. The loader validates a file with them, then
builds the frozen dataclasses of :mod:`benchlab.spec.types`, which is all the rest of benchlab sees.
"""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import (
    AfterValidator,
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    WithJsonSchema,
    create_model,
    model_validator,
)

from benchlab.schema.scenario import Scenario
from benchlab.schema.settings import setting_info, settings_info
from benchlab.spec.faipep import normalise_dtype, unwrap_file_list
from benchlab.spec.fields import (
    IGNORED,
    CpuList,
    Env,
    OrOneElementList,
    Statistic,
    TargetFraction,
    check_taskset,
    empty_hash_is_none,
    is_remote,
    number_to_str,
    one_command_to_list,
    one_to_list,
    scalar_to_str,
    scenario_by_name,
)

__all__ = [
    "DefaultsModel",
    "FileModel",
    "FrameworkModel",
    "HostStepsModel",
    "InputModel",
    "ModelModel",
    "MonsoonModel",
    "OutputFileModel",
    "PlatformArgsModel",
    "SpecModel",
    "SuiteModel",
    "TestDefaultsModel",
    "TestModel",
    "is_remote",
    "spec_json_schema",
    "suite_json_schema",
]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# How the spec files write some settings beyond their plain type (benchlab.schema.settings holds the rest).
_EDGE_TYPES: dict[str, Any] = {"cpu_list": CpuList, "target_ci": TargetFraction}
_EDGE_FIELD_ARGS: dict[str, dict[str, Any]] = {
    "cpu_list": {"validation_alias": AliasChoices("cpu_list", "cpu-list"),
                 "description": "CPUs to pin to, e.g. '0-3,6' (FAI-PEP: 'cpu-list')."},
}


def _setting_fields() -> dict[str, Any]:
    """The fields of every test setting, built from its one definition in benchlab.schema.settings."""
    built: dict[str, Any] = {}
    for info in settings_info():
        annotation: Any = Annotated[_EDGE_TYPES.get(info.name, info.kind), Field(**info.bounds)]
        if info.default is None:
            annotation = Optional[annotation]  # noqa: UP007 (a runtime expression, not a hint)
        args = {"description": info.described, **_EDGE_FIELD_ARGS.get(info.name, {})}
        built[info.name] = (annotation, Field(info.default, **args))
    return built


def _layer_default(name: str, description: str) -> Any:
    """A field that, where given, sets the setting ``name`` for the tests below it."""
    return Field(None, description=description, **setting_info(name).bounds)


_TestSettingsModel: type[BaseModel] = create_model("TestSettingsModel", **_setting_fields())


class _Closed(BaseModel):
    """Base of the models whose unknown keys are errors."""

    model_config = ConfigDict(extra="forbid")


class FileModel(_Closed):
    """One file a spec needs, with the hash its content must have.

    At least one of ``sha256`` and ``md5`` is required. Writing one of them explicitly as
    ``null`` opts out of verification, which is allowed only for a local location (a path, a
    ``//root-relative`` path or ``file://``): a downloaded file must always be verifiable.
    """

    location: str = Field(
        min_length=1,
        description="https:// URL, file:// URL, //path relative to the root dir, or a path "
        "relative to the spec file.",
    )
    sha256: Annotated[str | None, BeforeValidator(empty_hash_is_none)] = Field(
        None, pattern=r"^[0-9a-fA-F]{64}$", description="SHA-256, hex.")
    md5: Annotated[str | None, BeforeValidator(empty_hash_is_none)] = Field(
        None, pattern=r"^[0-9a-fA-F]{32}$", description="MD5, hex (FAI-PEP); \"\" is none.")
    filename: str | None = Field(None, description="Name to store the file under.")

    @model_validator(mode="after")
    def _needs_hash(self) -> FileModel:
        if self.sha256 or self.md5:
            return self
        made_at_run_time = "{" in self.location  # {HOSTDIR}/x.pb: made by a preprocess step
        if not {"sha256", "md5"} & self.model_fields_set and not made_at_run_time:
            raise ValueError('needs "sha256" or "md5" (write "md5": null to skip the check '
                             "of a local file)")
        if is_remote(self.location):
            raise ValueError("a downloaded file needs a sha256 or md5 hash; only a local "
                             "file may set its hash to null")
        return self


FileEntry = Annotated[FileModel, BeforeValidator(unwrap_file_list), OrOneElementList()]


class InputModel(_Closed):
    """One model input: the shapes to test (one test case per shape) and its element type."""

    shapes: list[list[Annotated[int, Field(ge=0)]]] = Field(
        min_length=1, description="One shape per test case, e.g. [[1, 3, 224, 224]]."
    )
    dtype: Annotated[str, AfterValidator(normalise_dtype)] = Field(
        "float32", alias="type", description="numpy dtype name (FAI-PEP's 'float' is accepted)."
    )


class GenerateModel(_Closed):
    """A generative test: prompt length(s), new tokens and context depth(s), greedy, batch 1.

    One test case per (prompt length, depth) pair when lists are given: the curves of TTFT
    against prompt length and of decode speed against depth.
    """

    prompt_tokens: Annotated[list[Annotated[int, Field(ge=1)]],
                             BeforeValidator(one_to_list)] = Field(
        min_length=1, description="Prompt length P in tokens (one or a list).")
    new_tokens: int = Field(ge=2, description="Tokens generated per generation, G (>= 2).")
    depth: Annotated[list[Annotated[int, Field(ge=0)]], BeforeValidator(one_to_list)] = Field(
        default_factory=lambda: [0], min_length=1,
        description="KV cache filled to D tokens first, untimed (one or a list).")
    compare_tokens: int = Field(32, ge=1, description="Greedy tokens compared with the "
                                "reference's for token agreement.")


class HostStepsModel(BaseModel):
    """FAI-PEP's ``preprocess``/``postprocess`` block: shell commands run on the host.

    Only the commands run; FAI-PEP's other keys (``files``, ``platform_args``) load and are
    listed as not acted on.
    """

    model_config = ConfigDict(extra="allow")

    commands: Annotated[list[str], BeforeValidator(one_command_to_list)] | None = Field(
        None, description="Shell commands run on the host, one after another.")
    command: str | None = Field(None, description="FAI-PEP's single-command form.")

    @model_validator(mode="after")
    def _one_form(self) -> HostStepsModel:
        if self.commands is not None and self.command is not None:
            raise ValueError("give only one of commands, command")
        return self

    def command_list(self) -> tuple[str, ...]:
        """The commands to run, in order (none when the block names none)."""
        if self.command is not None:
            return (self.command,)
        return tuple(self.commands or ())


class OutputFileModel(BaseModel):
    """A file the test's commands write on the target (FAI-PEP's ``output_files`` entry)."""

    model_config = ConfigDict(extra="allow")

    location: str = Field(min_length=1, description="Where the commands write it on the "
                          "target, e.g. {TGTDIR}/softmax.txt; relative to {TGTDIR}.")
    filename: str | None = Field(
        None, description="Name of the copy pulled to the host (default: the location's).")

    @property
    def host_name(self) -> str:
        """The name of the pulled copy on the host."""
        return self.filename or self.location.rsplit("/", 1)[-1]

    @model_validator(mode="after")
    def _plain_name(self) -> OutputFileModel:
        if "/" in self.host_name or self.host_name in ("", ".", ".."):
            raise ValueError(f"the host copy needs a plain file name, not {self.host_name!r}")
        return self


OutputFileEntry = Annotated[OutputFileModel, BeforeValidator(unwrap_file_list),
                            OrOneElementList()]
_STEPS_HELP = "FAI-PEP accuracy flow: commands run on the host {when}."


_COLLECTION_HELP = ("FAI-PEP power (metric: power): the job's measured windows add up to at "
                    "least this (s).")
_VOLTAGE_HELP = "FAI-PEP power (metric: power): the Monsoon's output voltage (V)."


class MonsoonModel(BaseModel):
    """FAI-PEP's ``monsoon`` block of a power test; its keys win over the test's own.

    Other keys (``disable_usb``) load and are listed as not acted on.
    """

    model_config = ConfigDict(extra="allow")

    collection_time: float | None = Field(None, ge=0, description=_COLLECTION_HELP)
    voltage: float | None = Field(None, gt=0, description=_VOLTAGE_HELP)


class PlatformArgsModel(BaseModel):
    """FAI-PEP's per-platform settings; benchlab maps the ones it understands."""

    model_config = ConfigDict(extra="allow")

    taskset: Annotated[
        str,
        BeforeValidator(scalar_to_str),
        AfterValidator(check_taskset),
        WithJsonSchema({"type": ["string", "integer"]}),
    ] | None = Field(
        None, description="Hexadecimal CPU mask; becomes cpu_list."
    )
    sleep_before_run: float | None = _layer_default("cooldown", "Becomes cooldown (seconds).")
    timeout: float | None = _layer_default("timeout", "Becomes timeout (seconds).")
    env: Env = Field(default_factory=dict, description="Merged into env.")


class TestDefaultsModel(_TestSettingsModel):  # type: ignore[misc,valid-type]
    """The settings of a test; also the shape of a suite's test defaults (no identifier).

    The measuring settings (warmup, iter, timeout...) come from :mod:`benchlab.schema.settings`.
    """

    model_config = ConfigDict(extra="allow")
    # Unknown keys with string values are placeholders (FAI-PEP); any other value is a typo.
    __pydantic_extra__: dict[str, str] = Field(init=False)

    metric: str = Field("delay", description="delay, accuracy, power, generic, or free text.")
    inputs: dict[str, InputModel] = Field(default_factory=dict, description="Model inputs.")
    input_files: dict[str, FileEntry] = Field(default_factory=dict, description="Input data.")
    commands: Annotated[list[str], BeforeValidator(one_command_to_list)] | None = Field(
        None, description="Shell commands (generic framework); one string is one command.")
    command: str | None = Field(None, description="FAI-PEP legacy single command.")
    arguments: str | None = Field(None, description="FAI-PEP legacy: '{program} <arguments>'.")
    env: Env = Field(default_factory=dict, description="Environment variables for the run.")
    statistics: list[Statistic] = Field(
        default_factory=list, description="Extra statistics: mean, stdev, p95, ..."
    )
    platform_args: PlatformArgsModel | None = Field(None, description="FAI-PEP platform args.")
    output_files: dict[str, OutputFileEntry] | None = Field(
        None, description="Files the commands write on the target, pulled to the host after "
        "each repetition for the postprocess commands ({output_files.KEY}).")
    files: Any = Field(None, description=IGNORED)
    preprocess: HostStepsModel | None = Field(
        None, description=_STEPS_HELP.format(when="before each repetition"))
    postprocess: HostStepsModel | None = Field(
        None, description=_STEPS_HELP.format(when="after each repetition"))
    profiler: Any = Field(None, description=IGNORED)
    degrade: Any = Field(None, description=IGNORED)
    method: Any = Field(None, description=IGNORED)
    monsoon: MonsoonModel | None = Field(
        None, description="FAI-PEP power: measure with a Monsoon (its collection_time, voltage).")
    collection_time: float | None = Field(None, ge=0, description=_COLLECTION_HELP)
    voltage: float | None = Field(None, gt=0, description=_VOLTAGE_HELP)
    commands_mapping: Any = Field(None, exclude=True, description=IGNORED)
    generate: GenerateModel | None = Field(
        None, description="Measure text generation (a generative model): see docs/generative.md.")
    scenario: Annotated[Scenario | None, BeforeValidator(scenario_by_name)] = Field(
        None, description="Run under a load scenario with MLPerf LoadGen: a name "
        "(single_stream, multi_stream, server, offline) or {name, duration_s, query_count, "
        "latency_bound_ms, target_qps, samples_per_query, mlperf_durations, accuracy}; see "
        "docs/scenarios.md.")

    @model_validator(mode="before")
    @classmethod
    def _commands_mapping(cls, data: Any) -> Any:
        # A FAI-PEP file with two "commands" keys keeps the last, a mapping; set it aside.
        if isinstance(data, dict) and isinstance(data.get("commands"), dict):
            data = {**data, "commands_mapping": data["commands"]}
            del data["commands"]
        return data

    @model_validator(mode="after")
    def _consistent(self) -> TestDefaultsModel:
        given = [k for k in ("commands", "command", "arguments") if getattr(self, k) is not None]
        if len(given) > 1:
            raise ValueError(f"give only one of {', '.join(given)}")
        if self.max_time is not None and self.max_time < self.min_time:
            raise ValueError(f"max_time {self.max_time} is below min_time {self.min_time}")
        return self


class TestModel(TestDefaultsModel):
    """One entry of ``tests``; ``{ID}`` in its identifier becomes its index in the file."""

    identifier: str = Field(min_length=1, description="Test name; {ID} is its index.")


class ModelModel(BaseModel):
    """The ``model`` block: what is benchmarked and the files it needs.

    Unknown keys with string values become placeholders (FAI-PEP).
    """

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, Annotated[str, BeforeValidator(number_to_str)]] = Field(
        init=False)

    name: str = Field(min_length=1, description="Model name.")
    format: str = Field(min_length=1, description="onnx, torchscript, pytorch, generic, ...")
    framework: str | None = Field(None, description="Framework to run it with by default.")
    entry: str | None = Field(
        None,
        pattern=r"^[^:\s]+:[A-Za-z_][A-Za-z0-9_.]*$",
        description="Code building the model: 'pkg.mod:factory' or 'file.py:factory'.",
    )
    description: str = Field("", description="Free text.")
    files: dict[str, FileEntry] = Field(default_factory=dict, description="Model files by key.")
    kind: str | None = Field(None, description="FAI-PEP metadata; usable as a placeholder.")
    category: str | None = Field(None, description="FAI-PEP metadata; usable as a placeholder.")
    group: str | None = Field(None, description="FAI-PEP metadata; usable as a placeholder.")
    cooldown: float | None = _layer_default("cooldown", "Default cooldown of the tests.")
    timeout: float | None = _layer_default("timeout", "Default timeout of the tests.")
    repeat: int | None = _layer_default("repeat", "Default repeat of the tests.")
    libraries: list[FileEntry] | dict[str, FileEntry] | None = Field(
        None, description="Shared libraries the program loads (FAI-PEP): pushed beside it, "
        "found through LD_LIBRARY_PATH.")
    converter: Any = Field(None, description=IGNORED)
    preprocess: HostStepsModel | None = Field(
        None, description=_STEPS_HELP.format(when="once before a job's first repetition"))
    postprocess: HostStepsModel | None = Field(
        None, description=_STEPS_HELP.format(when="once after a job's last repetition"))
    command_args: str | None = Field(
        None, description="FAI-PEP: appended to every test command that runs {program}.")
    platform_args: Any = Field(None, description=IGNORED)
    app: Any = Field(None, description=IGNORED)


class FrameworkModel(BaseModel):
    """A framework to run the spec with; every key but ``name`` is an option for it."""

    model_config = ConfigDict(extra="allow")

    name: str = Field(min_length=1, description="Registered framework name, e.g. onnxruntime.")


class SpecModel(_Closed):
    """A spec file: one model and its tests."""

    model_config = ConfigDict(title="benchlab spec")

    schema_uri: str | None = Field(None, alias="$schema", description="Editor schema hint.")
    model: ModelModel
    tests: list[TestModel] = Field(min_length=1, description="What to measure.")
    frameworks: list[FrameworkModel] = Field(
        default_factory=list, description="Frameworks to run with (default: the CLI's choice)."
    )


class DefaultsModel(_Closed):
    """Suite-level defaults; a spec's own values always win."""

    model: dict[str, Any] = Field(
        default_factory=dict, description="Deep-merged under every spec's model block."
    )
    test: TestDefaultsModel | None = Field(None, description="Defaults for every test.")
    frameworks: list[FrameworkModel] | None = Field(
        None, description="Used by specs that list no frameworks."
    )


class SuiteModel(_Closed):
    """A suite file: benchlab's ``specs`` + ``defaults``, or FAI-PEP's ``benchmarks`` + ``meta``."""

    model_config = ConfigDict(title="benchlab suite")

    schema_uri: str | None = Field(None, alias="$schema", description="Editor schema hint.")
    specs: list[str] | None = Field(
        None, description="Spec paths relative to this file; glob patterns allowed."
    )
    benchmarks: list[str] | None = Field(None, description="FAI-PEP name for specs.")
    meta: dict[str, Any] = Field(
        default_factory=dict, description="FAI-PEP: merged into every model."
    )
    defaults: DefaultsModel = Field(default_factory=DefaultsModel)

    @model_validator(mode="after")
    def _one_list(self) -> SuiteModel:
        if (self.specs is None) == (self.benchmarks is None):
            raise ValueError('give exactly one of "specs" and "benchmarks"')
        if not (self.specs or self.benchmarks):
            raise ValueError("the suite lists no spec")
        return self


def _schema(model: type[BaseModel], description: str) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="validation")
    return {"$schema": JSON_SCHEMA_DIALECT, **schema, "description": description}


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec file, for editors and external validators."""
    return _schema(SpecModel, "A benchlab (or FAI-PEP) benchmark spec: one model and its tests.")


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a suite file."""
    return _schema(SuiteModel, "A list of benchlab specs with shared defaults.")
