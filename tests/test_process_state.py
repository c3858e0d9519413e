"""The guard that stops one test's torch settings from reaching the tests after it."""

from __future__ import annotations

import pytest
from process_state import TorchSettings

torch = pytest.importorskip("torch")


def test_read_sees_and_restore_undoes_what_a_backend_changes() -> None:
    before = TorchSettings.read()
    assert before is not None and before.num_threads == torch.get_num_threads()
    other = 1 if before.num_threads != 1 else 2
    try:
        torch.set_num_threads(other)
        torch.set_float32_matmul_precision("medium")
        torch.set_grad_enabled(not before.grad_enabled)
        changes = before.changed(TorchSettings.read())  # type: ignore[arg-type]
        assert changes == [
            f"num_threads: {before.num_threads} -> {other}",
            f"matmul_precision: {before.matmul_precision} -> medium",
            f"grad_enabled: {before.grad_enabled} -> {not before.grad_enabled}",
        ]
    finally:
        before.restore()
    assert TorchSettings.read() == before
    assert before.changed(before) == []

