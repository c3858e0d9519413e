"""A Hugging Face model folder (``save_pretrained``), read offline.

:func:`read_folder` (standard library only) says what the folder holds from its
``config.json``: an encoder or classifier runs as a forward pass on token ids, as the zoo's
MiniLM; a Llama causal language model takes the generative path (decoder ONNX, ExecuTorch
decoder, GGUF) with TTFT/TPOT and token agreement against its eager self. :func:`build`
(imports torch and transformers) makes the module the export pipeline freezes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlab.errors import UsageError

__all__ = ["FolderModel", "build", "read_folder"]

_WEIGHTS = ("model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
            "pytorch_model.bin.index.json")
#: Tokens a forward-pass text model is timed on (the zoo's MiniLM takes 128 too).
SEQUENCE = 128


@dataclass(frozen=True, slots=True)
class FolderModel:
    """What a folder holds: ``generative`` for a Llama causal LM, else a forward pass whose
    ``task`` is ``classification`` (a sequence classifier) or empty (hidden states)."""

    folder: Path
    architecture: str
    model_type: str
    generative: bool
    task: str
    sequence: int


def read_folder(folder: Path) -> FolderModel:
    """Read ``config.json``; a folder without one or without weights is a
    :class:`~benchlab.errors.UsageError` naming it."""
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise UsageError(f"model {folder}: a folder, but no config.json (save a Hugging Face "
                         "model with save_pretrained, or give a model file)")
    try:
        config = json.loads(config_path.read_text())
    except (OSError, ValueError) as error:
        raise UsageError(f"model {folder}: config.json is not JSON ({error})") from None
    if not any((folder / name).is_file() for name in _WEIGHTS):
        raise UsageError(f"model {folder}: no weights ({' or '.join(_WEIGHTS[:2])}) beside "
                         "config.json")
    architectures = config.get("architectures") or []
    architecture = str(architectures[0]) if architectures else ""
    model_type = str(config.get("model_type", ""))
    generative = architecture.endswith("ForCausalLM") and model_type == "llama"
    task = "classification" if architecture.endswith("ForSequenceClassification") else ""
    positions = int(config.get("max_position_embeddings") or SEQUENCE)
    return FolderModel(folder=folder, architecture=architecture, model_type=model_type,
                       generative=generative, task=task, sequence=min(SEQUENCE, positions))


def _forward_module(found: FolderModel) -> Any:
    """The folder's model as ``forward(input_ids) → its first output`` (logits or hidden
    states), on random token ids of the model's vocabulary."""
    import torch
    from torch import nn
    from transformers import AutoModel, AutoModelForSequenceClassification

    loader = AutoModelForSequenceClassification if found.task else AutoModel
    # Eager attention: the SDPA path's masking exports less reliably (as the zoo's MiniLM).
    model = loader.from_pretrained(str(found.folder), local_files_only=True,
                                   attn_implementation="eager").eval()
    vocab = int(model.config.vocab_size)

    class TokenIdsModel(nn.Module):
        """A Hugging Face model on token ids alone (an attention mask of ones)."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model
            self.example_shapes = [[1, found.sequence]]
            self.example_dtypes = ["int64"]

        def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
            output = self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
            return output[0]

        def make_example_inputs(self, seed: int) -> tuple[torch.Tensor]:
            generator = torch.Generator().manual_seed(seed)
            return (torch.randint(0, vocab, (1, found.sequence), generator=generator),)

    return TokenIdsModel()


def _causal_lm(found: FolderModel) -> Any:
    """The folder's Llama with the shape the zoo's decoder exporters read."""
    from transformers import LlamaForCausalLM

    from benchlab.exporting.decoder import LlamaShape

    model = LlamaForCausalLM.from_pretrained(str(found.folder), local_files_only=True,
                                             attn_implementation="eager").eval()
    config = model.config
    model.llama_shape = LlamaShape(
        dim=config.hidden_size, layers=config.num_hidden_layers,
        heads=config.num_attention_heads,
        kv_heads=config.num_key_value_heads or config.num_attention_heads,
        hidden=config.intermediate_size, vocab=config.vocab_size,
        max_positions=config.max_position_embeddings,
        rope_theta=float(getattr(config, "rope_theta", None) or
                         (getattr(config, "rope_parameters", None) or {}).get("rope_theta",
                                                                              10000.0)),
        norm_eps=config.rms_norm_eps)
    tokenizer = found.folder / "tokenizer.json"
    if tokenizer.is_file():  # the decoder exporters use it instead of training one
        model.tokenizer_json = str(tokenizer)
    model.example_shapes, model.example_dtypes = [[1, 8]], ["int64"]
    return model


def build(folder: str | Path) -> Any:
    """The module the export pipeline freezes for ``folder``."""
    found = read_folder(Path(folder))
    return _causal_lm(found) if found.generative else _forward_module(found)
