"""What the user says about a run, carried into every result it stores: :class:`RunLabels`.

FAI-PEP's harness takes these as options and passes them to its reporters; benchlab keeps them
in each result, so a stored, exported, JSON-written or lab-reported result says them itself:

* ``user_identifier`` (``--user-identifier``, FAI-PEP's ``--user_identifier``): a name the user
  finds the results by, in ``details.user_identifier``;
* ``user_string`` (``--user-string``, FAI-PEP's ``--user_string``, the user its remote reporter
  names), in ``details.user_string``;
* ``platform`` (``--platform-sig``, FAI-PEP's ``--platform_sig``) and ``platform_names``
  (``--hash-platform-mapping FILE``: device hash → platform name): the device's platform name,
  in ``environment.platform``. As in FAI-PEP's ``PlatformBase.setPlatformHash``, a device the
  mapping names gets the mapped name, over the signature;
* ``regressed_types`` (``--regressed-types``, FAI-PEP's ``--regressed_types``): the metric keys a
  verify run re-measures as regressed, in ``details.regressed_types``.

A label is never part of a job's identity: labelling a run does not make its jobs new ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from benchlab.errors import UsageError
from benchlab.schema.result import DetailKey, EnvKey, Result, metric_key

__all__ = ["RunLabels", "labels_line", "parse_regressed_types", "read_platform_mapping",
           "with_labels"]


@dataclass(frozen=True)
class RunLabels:
    """The user's labels of a run (see the module docstring); empty fields add nothing."""

    user_identifier: str | None = None
    user_string: str | None = None
    platform: str | None = None
    platform_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    regressed_types: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        """True when the labels would add nothing to a result."""
        return self == RunLabels()

    def platform_of(self, result: Result) -> str | None:
        """The platform name of the device ``result`` ran on: the mapping's name for its hash
        (an adb serial, the hostname, or the device label), else :attr:`platform`."""
        env = result.environment
        for key in (env.get("serial"), env.get(EnvKey.HOSTNAME), result.identity.device_label):
            if key is not None and str(key) in self.platform_names:
                return self.platform_names[str(key)]
        return self.platform

    def stamp(self, result: Result) -> Result:
        """``result`` with these labels in its details and environment."""
        details: dict[str, Any] = {}
        if self.user_identifier is not None:
            details[DetailKey.USER_IDENTIFIER] = self.user_identifier
        if self.user_string is not None:
            details[DetailKey.USER_STRING] = self.user_string
        if self.regressed_types:
            details[DetailKey.REGRESSED_TYPES] = list(self.regressed_types)
        platform = self.platform_of(result)
        environment = {EnvKey.PLATFORM: platform} if platform is not None else {}
        if not details and not environment:
            return result
        return replace(result, details={**result.details, **details},
                       environment={**result.environment, **environment})

    def to_wire(self) -> dict[str, Any]:
        """JSON-ready form (a lab job carries the labels of the run it belongs to)."""
        return {"user_identifier": self.user_identifier, "user_string": self.user_string,
                "platform": self.platform, "platform_names": dict(self.platform_names),
                "regressed_types": list(self.regressed_types)}

    @classmethod
    def from_wire(cls, wire: Mapping[str, Any]) -> RunLabels:
        """Inverse of :meth:`to_wire`."""
        return cls(user_identifier=wire.get("user_identifier"),
                   user_string=wire.get("user_string"), platform=wire.get("platform"),
                   platform_names=MappingProxyType(dict(wire.get("platform_names") or {})),
                   regressed_types=tuple(wire.get("regressed_types") or ()))


def read_platform_mapping(path: Path) -> Mapping[str, str]:
    """FAI-PEP's ``--hash_platform_mapping`` file: a JSON object of device hash → platform name.

    FAI-PEP logs and ignores a file it cannot read; here a bad file is a :class:`UsageError`
    naming the file and what is wrong with it."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the platform mapping: "
                         f"{exc.strerror or exc}") from None
    except ValueError as exc:
        raise UsageError(f"{path}: the platform mapping is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path}: the platform mapping must be a JSON object of device hash → "
                         f"platform name, not a {type(data).__name__}")
    for key, value in data.items():
        if not isinstance(value, str) or not value:
            raise UsageError(f"{path}: device {key!r}: the platform name must be a non-empty "
                             f"string, not {value!r}")
    return MappingProxyType(dict(data))


def parse_regressed_types(text: str | None) -> tuple[str, ...]:
    """FAI-PEP's ``--regressed_types``: a JSON list of metric types (``["latency"]``), or the
    names comma-separated. A bare metric is the whole model's (``latency`` → ``NET latency``)."""
    if text is None or not text.strip():
        return ()
    raw = text.strip()
    if raw.startswith("["):
        try:
            names = json.loads(raw)
        except ValueError as exc:
            raise UsageError(f"--regressed-types {text!r}: not a JSON list: {exc}") from None
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise UsageError(f"--regressed-types {text!r}: expected a list of metric names")
    else:
        names = raw.split(",")
    keys = [n.strip() if " " in n.strip() else metric_key("NET", n.strip())
            for n in names if n.strip()]
    return tuple(dict.fromkeys(keys))


def labels_line(results: Iterable[Result]) -> str:
    """The labels the results carry, as one line for a report's header (``""``: none)."""
    found: dict[str, list[str]] = {}
    for result in results:
        for name, value in (("user", result.details.get(DetailKey.USER_IDENTIFIER)),
                            ("user string", result.details.get(DetailKey.USER_STRING)),
                            ("platform", result.environment.get(EnvKey.PLATFORM))):
            if value is not None and str(value) not in found.setdefault(name, []):
                found[name].append(str(value))
        for key in result.details.get(DetailKey.REGRESSED_TYPES) or ():
            if key not in found.setdefault("regressed", []):
                found["regressed"].append(key)
    return " · ".join(f"{name}: {', '.join(values)}" for name, values in found.items() if values)


def with_labels(title: str, results: Iterable[Result]) -> str:
    """A report's title with the labels its results carry (user identifier, platform...)."""
    line = labels_line(results)
    return f"{title} · {line}" if line else title
