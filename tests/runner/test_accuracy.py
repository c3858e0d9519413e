"""Error statistics against a reference: values with known answers, output pairing, archives."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from benchlab.runner.accuracy import (
    SQNR_CEILING_DB,
    error_stats,
    load_reference,
    save_reference,
    to_arrays,
)


def test_identical_outputs_are_exact() -> None:
    ref = [np.linspace(-1, 1, 50, dtype=np.float32).reshape(5, 10)]
    stats = error_stats([ref[0].copy()], ref)
    assert stats["error_max_abs"] == 0 and stats["error_mean_abs"] == 0
    assert stats["sqnr"] == SQNR_CEILING_DB and stats["cosine_similarity"] == pytest.approx(1.0)


def test_known_noise_gives_known_sqnr_and_errors() -> None:
    ref = np.full((4, 25), 10.0)
    got = ref + np.where(np.arange(100).reshape(4, 25) % 2 == 0, 0.1, -0.1)
    stats = error_stats([got], [ref])
    # signal 100 per element, noise 0.01 per element: 10·log10(1e4) = 40 dB.
    assert stats["sqnr"] == pytest.approx(40.0)
    assert stats["error_max_abs"] == pytest.approx(0.1)
    assert stats["error_mean_abs"] == pytest.approx(0.1)
    assert stats["error_max_rel"] == pytest.approx(0.1 / (10 + 0.01))
    assert "top1_agreement" not in stats


def test_topk_agreement_for_classifiers() -> None:
    ref = np.array([[0.1, 0.9, 0.0, 0.0, 0.0, 0.0], [0.8, 0.1, 0.05, 0.0, 0.0, 0.0]])
    got = np.array([[0.9, 0.1, 0.0, 0.0, 0.0, 0.0], [0.8, 0.1, 0.05, 0.0, 0.0, 0.0]])
    stats = error_stats([got], [ref], task="classification")
    assert stats["top1_agreement"] == 0.5  # row 0's top class changed
    assert stats["top5_agreement"] == 1.0  # ...but is still among the top five


def test_l2_errors_follow_the_rfc() -> None:
    ref = np.full((4, 25), 10.0)
    got = ref + np.where(np.arange(100).reshape(4, 25) % 2 == 0, 0.1, -0.1)
    stats = error_stats([got], [ref])
    # ‖noise‖ = sqrt(100 · 0.01) = 1; ‖ref‖ = sqrt(100 · 100) = 100.
    assert stats["error_l2"] == pytest.approx(1.0)
    assert stats["error_l2_rel"] == pytest.approx(0.01)
    zeros = np.zeros((2, 3))
    assert "error_l2_rel" not in error_stats([zeros + 1], [zeros])  # nothing to be relative to
    assert error_stats([zeros], [zeros])["error_l2_rel"] == 0.0


def test_cross_entropy_and_kl_divergence_for_classifier_logits() -> None:
    ref = np.log(np.array([[0.5, 0.25, 0.25], [0.9, 0.05, 0.05]]))  # logits of p
    same = error_stats([ref.copy()], [ref], task="classification")
    entropy = -np.mean([0.5 * np.log(0.5) + 2 * 0.25 * np.log(0.25),
                        0.9 * np.log(0.9) + 2 * 0.05 * np.log(0.05)])
    assert same["kl_divergence"] == pytest.approx(0.0, abs=1e-9)
    assert same["cross_entropy"] == pytest.approx(entropy)
    # Outputs that are uniform over three classes: H(p, q) = log 3 for every row.
    flat = error_stats([np.zeros((2, 3))], [ref], task="classification")
    assert flat["cross_entropy"] == pytest.approx(np.log(3))
    assert flat["kl_divergence"] == pytest.approx(np.log(3) - entropy)
    # Rows that already are probabilities are taken as they are, not put through a softmax.
    probs = np.array([[0.5, 0.25, 0.25]])
    assert error_stats([probs], [probs], task="classification")["cross_entropy"] == \
        pytest.approx(-(0.5 * np.log(0.5) + 0.5 * np.log(0.25)))
    assert "kl_divergence" not in error_stats([ref], [ref])  # not a classifier


def test_outputs_are_paired_by_size_when_reordered_and_squeezed() -> None:
    boxes, scores = np.ones((1, 10, 4)), np.arange(30.0).reshape(1, 10, 3)
    stats = error_stats([scores.reshape(10, 3), boxes], [boxes, scores])
    assert stats["error_max_abs"] == 0


def test_mismatched_outputs_fail_clearly() -> None:
    with pytest.raises(ValueError, match="returned 1 outputs; the reference has 2"):
        error_stats([np.ones(3)], [np.ones(3), np.ones(2)])
    with pytest.raises(ValueError, match="cannot match"):
        error_stats([np.ones(4), np.ones(5)], [np.ones(3), np.ones(4)])


def test_reference_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "ref.npz"
    inputs = {"ids": np.arange(6, dtype=np.int64).reshape(1, 6), "x": np.ones((1, 3), np.float32)}
    save_reference(path, inputs, [np.zeros((1, 2)), np.ones(3)], task="embedding")
    ref = load_reference(path)
    assert list(ref.inputs) == ["ids", "x"] and ref.inputs["ids"].dtype == np.int64
    assert [o.shape for o in ref.outputs] == [(1, 2), (3,)] and ref.task == "embedding"


def test_to_arrays_flattens_nested_values() -> None:
    class Tensorish:  # what a torch tensor looks like to duck typing
        def __init__(self, value: np.ndarray) -> None:
            self.value = value

        def detach(self) -> Tensorish:
            return self

        def cpu(self) -> Tensorish:
            return self

        def numpy(self) -> np.ndarray:
            return self.value

    arrays = to_arrays({"a": Tensorish(np.ones(2)), "b": [np.zeros(1), (np.ones(3),)]})
    assert [a.shape for a in arrays] == [(2,), (1,), (3,)]


def test_several_input_sets_round_trip_and_stack_into_rows(tmp_path: Path) -> None:
    from benchlab.runner.accuracy import stack_sets

    path = tmp_path / "ref.npz"
    sets = [({"x": np.full((1, 4), float(k))}, [np.eye(1, 6, k)]) for k in range(3)]
    save_reference(path, sets[0][0], sets[0][1], "classification", more=sets[1:])
    ref = load_reference(path)
    assert len(ref.more) == 2 and ref.more[1][0]["x"][0, 0] == 2.0
    rows = stack_sets([ref.outputs, *[outs for _, outs in ref.more]])
    assert rows[0].shape == (3, 6)
    # Three samples: the classes 0, 1, 2 one each; a backend that always says 0 agrees once.
    always_zero = [np.tile(np.eye(1, 6, 0), (3, 1))]
    assert error_stats(always_zero, rows, "classification")["top1_agreement"] == pytest.approx(1 / 3)
