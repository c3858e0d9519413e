"""Why an export failed, in one line: the error's first line and, where the traceback or the
message passes through the user's own code, the file and line there (standard library only).

A converter's error usually starts deep in the converter; what the user can act on is the
line of *their* model it tripped on (torch.export names it in the message, "from user code:
File ..., line N"; a Python error has it in the traceback)."""

from __future__ import annotations

import re
import sysconfig
import traceback
from pathlib import Path

__all__ = ["failure_reason", "users_code"]

# Code under these directories comes from installed packages, not from the user.
_INSTALLED = tuple(sorted({sysconfig.get_paths()[k] for k in ("purelib", "platlib", "stdlib")}))
_BENCHLAB = str(Path(__file__).resolve().parents[1])
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def users_code(path: str | None) -> bool:
    """Whether a source file is the user's own code: not an installed package's, not
    benchlab's, not a generated one (``<string>``, ``<eval_with_key>``)."""
    if not path or path.startswith("<"):
        return False
    resolved = str(Path(path).resolve())
    return not resolved.startswith((*_INSTALLED, _BENCHLAB))


def _users_line(error: BaseException) -> str | None:
    """``file.py:N`` of the last place the error passed through the user's code."""
    found = [f"{Path(path).name}:{line}" for path, line in _FILE_LINE.findall(str(error))
             if users_code(path)]
    found += [f"{Path(frame.filename).name}:{frame.lineno}"
              for frame in traceback.extract_tb(error.__traceback__)
              if users_code(frame.filename)]
    return found[-1] if found else None


def _root_cause(error: BaseException) -> BaseException:
    """The error a converter wrapped (the ONNX exporter wraps torch.export's): it names the
    operator or the guard, the wrapper only the step."""
    seen = {id(error)}
    while error.__cause__ is not None and id(error.__cause__) not in seen:
        error = error.__cause__
        seen.add(id(error))
    return error


def failure_reason(error: BaseException, limit: int = 300) -> str:
    """``ExcType: first non-empty line of the message`` of the error at the root of
    ``error``'s causes (``(at file.py:N)`` added when the user's code is in it), at most
    ``limit`` characters, without terminal colours."""
    error = _root_cause(error)
    lines = [line.strip() for line in _ANSI.sub("", str(error)).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
    where = _users_line(error)
    suffix = f" (at {where})" if where and where not in text else ""
    if len(text) + len(suffix) > limit:
        text = text[: limit - len(suffix) - 3] + "..."
    return text + suffix
