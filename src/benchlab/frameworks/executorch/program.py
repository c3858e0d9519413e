"""What an ExecuTorch program file delegates: its execution plan, read without ExecuTorch.

A ``.pte`` program's execution plan lists one ``DelegateCall`` instruction per delegated
partition and one ``KernelCall`` per operator left to the portable (or optimized) kernels;
:func:`pte_coverage` turns them into a :class:`~benchlab.schema.diagnosis.Coverage`. Standard library
only, so it costs the runner process nothing to import.
"""

from __future__ import annotations

import os
import struct
from collections import Counter
from dataclasses import dataclass

from benchlab.schema.diagnosis import Coverage

__all__ = ["DELEGATE_IDS", "PlanCalls", "plan_calls", "pte_coverage"]

#: The adapter's delegate names → the backend id that a program lowered to it records.
DELEGATE_IDS = {"xnnpack": "XnnpackBackend"}
_PORTABLE = "portable"
_COVERAGE_METHOD = ("the .pte's execution plan: one DelegateCall per delegated partition, "
                    "one KernelCall per operator left to the portable kernels")

# A program is a flatbuffer (executorch/exir/_serialize/program.fbs, file identifier "ET12"),
# read here by the format's own rules rather than with ExecuTorch's
# ``deserialize_pte_binary``: anything under ``executorch.exir`` runs that package's
# __init__, which loads the whole export stack and torchao (9-14 s per runner process on this
# machine), where reading the plan takes a few milliseconds. A table's n-th field sits at
# vtable slot 4 + 2n; these are the fields read.
_PROGRAM_PLANS = 1  # Program.execution_plan
_PLAN_NAME, _PLAN_CHAINS, _PLAN_OPERATORS, _PLAN_DELEGATES = 0, 5, 6, 7
_CHAIN_INSTRUCTIONS = 2
_INSTR_TYPE, _INSTR_ARGS = 0, 1  # a union field is stored as its type tag, then its table
_KERNEL_CALL, _DELEGATE_CALL = 1, 2  # InstructionArguments tags
_CALL_INDEX = 0  # KernelCall.op_index, DelegateCall.delegate_index
_OP_NAME, _OP_OVERLOAD = 0, 1
_DELEGATE_ID = 0
# A program with segments has an extended header ("eh00") after the root offset and the file
# identifier; its program_size bounds the flatbuffer, so the segments (weights and delegate
# blobs: nearly all of a 14 MB file) are never read.
_HEADER_AT, _HEADER_MAGIC, _HEAD_BYTES = 8, b"eh00", 64


def _unpack(fmt: str, buf: bytes, at: int) -> int:
    if at < 0:  # struct would count a negative offset from the end
        raise ValueError(f"corrupt flatbuffer: offset {at}")
    return int(struct.unpack_from(fmt, buf, at)[0])


class _Table:
    """One flatbuffer table: the buffer and the table's position in it."""

    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf, self.pos = buf, pos

    def _field(self, index: int) -> int:
        """Where field ``index`` is stored, or 0 when it is absent (left at its default)."""
        vtable = self.pos - _unpack("<i", self.buf, self.pos)
        slot = 4 + 2 * index
        if slot >= _unpack("<H", self.buf, vtable):
            return 0
        offset = _unpack("<H", self.buf, vtable + slot)
        return self.pos + offset if offset else 0

    def _target(self, index: int) -> int:
        """Where the table, vector or string that field ``index`` refers to starts (0: none)."""
        at = self._field(index)
        return at + _unpack("<I", self.buf, at) if at else 0

    def scalar(self, index: int, fmt: str = "<i") -> int:
        at = self._field(index)
        return _unpack(fmt, self.buf, at) if at else 0

    def table(self, index: int) -> _Table | None:
        at = self._target(index)
        return _Table(self.buf, at) if at else None

    def tables(self, index: int) -> list[_Table]:
        vector = self._target(index)
        if not vector:
            return []
        first = vector + 4
        return [_Table(self.buf, at + _unpack("<I", self.buf, at))
                for at in range(first, first + 4 * _unpack("<I", self.buf, vector), 4)]

    def string(self, index: int) -> str:
        at = self._target(index)
        if not at:
            return ""
        return self.buf[at + 4:at + 4 + _unpack("<I", self.buf, at)].decode()


@dataclass(frozen=True)
class PlanCalls:
    """The calls of one method's execution plan, in order.

    ``delegates`` holds the backend id of each delegated partition (``XnnpackBackend``),
    ``kernels`` the operator of each kernel call (``aten::mean.out``).
    """

    method: str
    delegates: tuple[str, ...]
    kernels: tuple[str, ...]


def plan_calls(path: str, method: str = "forward") -> PlanCalls:
    """The delegate and kernel calls of ``method`` in the ``.pte`` program at ``path``.

    Reads the flatbuffer only, not the segments after it. Raises ``ValueError`` for a file
    that is not an ExecuTorch program or has no such method, ``struct.error`` for a cut one.
    """
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
        if head[4:6] != b"ET":
            raise ValueError(f"{os.path.basename(path)} is not an ExecuTorch program "
                             f"(file identifier {head[4:8]!r})")
        size = None
        if head[_HEADER_AT:_HEADER_AT + 4] == _HEADER_MAGIC:
            size = _unpack("<Q", head, _HEADER_AT + 8)
        handle.seek(0)
        buf = handle.read(size) if size else handle.read()
    plans = {plan.string(_PLAN_NAME): plan
             for plan in _Table(buf, _unpack("<I", buf, 0)).tables(_PROGRAM_PLANS)}
    plan = plans.get(method)
    if plan is None:
        raise ValueError(f"the program has no method {method!r} (methods: "
                         f"{', '.join(sorted(plans))})")
    operators = plan.tables(_PLAN_OPERATORS)
    backends = plan.tables(_PLAN_DELEGATES)
    delegates: list[str] = []
    kernels: list[str] = []
    for chain in plan.tables(_PLAN_CHAINS):
        for instruction in chain.tables(_CHAIN_INSTRUCTIONS):
            tag = instruction.scalar(_INSTR_TYPE, "<B")
            args = instruction.table(_INSTR_ARGS) if tag in (_KERNEL_CALL, _DELEGATE_CALL) \
                else None
            if args is None:
                continue  # moves, frees, jumps: no operator runs
            index = args.scalar(_CALL_INDEX)
            if tag == _DELEGATE_CALL:
                delegates.append(backends[index].string(_DELEGATE_ID))
            else:
                op = operators[index]
                overload = op.string(_OP_OVERLOAD)
                kernels.append(op.string(_OP_NAME) + (f".{overload}" if overload else ""))
    return PlanCalls(method, tuple(delegates), tuple(kernels))


def pte_coverage(path: str, delegate: str | None, method: str = "forward") -> Coverage:
    """What the delegate took of ``method``: its partitions, and the operators outside them.

    ``delegate`` is the adapter's name of the delegate asked for (``xnnpack``), ``portable``
    (no delegate: not an engine that was asked for) or ``None`` (a file of the user's own,
    run as it was lowered: the engine is then what the file delegates to, if anything).
    ``nodes`` and ``delegated`` stay ``None``: a partition is a blob only its backend reads,
    and XNNPACK's holds XNNPACK nodes rather than the exported graph's operators, so the
    file does not say how many operators a partition took. A file that cannot be read gives
    a coverage whose note says why: the diagnosis never fails the measured job.
    """
    asked = bool(delegate) and delegate != _PORTABLE
    engine = DELEGATE_IDS.get(str(delegate), str(delegate)) if asked else _PORTABLE
    try:
        calls = plan_calls(path, method)
    except Exception as error:  # noqa: BLE001 - any unreadable file: say so, measure on
        return Coverage(engine=engine, method=_COVERAGE_METHOD, asked=asked,
                        note=f"could not read the program's execution plan: {error}")
    by_engine = Counter(calls.delegates)
    if not delegate and by_engine:
        engine = "+".join(sorted(by_engine))
    partitions = by_engine.get(engine, 0) if delegate else sum(by_engine.values())
    return Coverage(engine=engine, method=_COVERAGE_METHOD, asked=asked, partitions=partitions,
                    fallback=dict(Counter(calls.kernels)), by_engine=dict(by_engine))
