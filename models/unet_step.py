"""The U-Net training step that models/ keeps: `python -m resample_grad.models.unet_step` (needs torch) exports
it with converters.export_training_step into models/unet_training_step.onnx, which `resample-grad demo` loads
(without torch).

    UNet: conv-BatchNorm-ReLU blocks, max pooling, a nearest (x2) and a bilinear (x2, align_corners=False)
        upsampling with skip connections; step: MSE loss, the gradient of every parameter, BatchNorm's
        updated running statistics. The backward holds UpsampleNearest2dGrad and ResizeBilinearV2Grad.
"""
from __future__ import annotations

import pathlib

STORED = pathlib.Path(__file__).with_name("unet_training_step.onnx")
INPUT_SHAPE = (2, 1, 16, 16)
SEED = 0


def unet(channels: int = 4):
    """The module (torch.nn), its parameters initialised from SEED."""
    import torch
    from torch import nn

    def block(cin, cout):  # no bias: BatchNorm cancels it
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())

    class UNet(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.enc1, self.enc2, self.mid = block(1, c), block(c, 2 * c), block(2 * c, 2 * c)
            self.dec2, self.dec1 = block(4 * c, c), block(2 * c, c)
            self.head = nn.Conv2d(c, 1, 1)

        def forward(self, x):
            f = nn.functional
            a = self.enc1(x)
            b = self.enc2(f.max_pool2d(a, 2))
            up = f.interpolate(self.mid(f.max_pool2d(b, 2)), scale_factor=2, mode="nearest")
            y = self.dec2(torch.cat([up, b], 1))
            up = f.interpolate(y, scale_factor=2, mode="bilinear", align_corners=False)
            return self.head(self.dec1(torch.cat([up, a], 1)))

    torch.manual_seed(SEED)
    return UNet(channels).train()


def mse(output, target):
    return (output - target).square().mean()


def export(path=STORED):
    """converters.export_training_step of unet() on inputs of INPUT_SHAPE; saved to path."""
    import torch

    from resample_grad import converters

    generator = torch.Generator().manual_seed(SEED)
    x, target = (torch.randn(INPUT_SHAPE, generator=generator) for _ in range(2))
    model = converters.export_training_step(unet(), mse, x, target)
    for node in model.graph.node:  # the exporter's stack traces and scopes: half the file
        del node.metadata_props[:]
    model.doc_string = ("A U-Net training step (models/unet_step.py): inputs input_0, target_0 and the parameters and "
                        "buffers by name; outputs loss, grad_<parameter>, <buffer>_updated.")
    import onnx
    onnx.save(model, str(path))
    return model


if __name__ == "__main__":
    export()
    print(STORED)
