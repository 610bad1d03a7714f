#!/usr/bin/python3
"""Exports the torchvision architectures the real-export test legalizes (check.py).

  /usr/bin/python3 export.py OUT_DIR

Debian's python3-torchvision (0.14) and python3-torch (1.13), random weights.
The six models of onnxsim-reference.json are exported exactly as its "what"
says (seed 0, eval, input randn(1,3,224,224) named 'input', output 'output',
the opset in the name, dynamic batch where marked); ShuffleNet-v2,
DenseNet-121 and DeepLab-v3 (MobileNet-v3 backbone) the same way. A model
already in OUT_DIR is kept, so a rerun costs nothing.
"""
import json
import os
import sys

import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
EXTRA = {
    "shufflenet_v2_x1_0.op13": {"dynamic_batch": True},
    "densenet121.op13": {"dynamic_batch": False},
    "deeplabv3_mobilenet_v3_large.op13": {"dynamic_batch": False},
}


def build(name):
    if name.startswith("deeplabv3"):
        return torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                            aux_loss=False)
    return getattr(torchvision.models, name)(weights=None)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    models = dict(json.load(open(os.path.join(HERE, "onnxsim-reference.json")))["models"])
    models.update(EXTRA)
    for key, how in models.items():
        path = os.path.join(out, key + ".onnx")
        if os.path.exists(path):
            continue
        name, opset = key.split(".op")
        torch.manual_seed(0)
        model = build(name).eval()
        axes = {"dynamic_axes": {"input": {0: "batch"}, "output": {0: "batch"}}} if how["dynamic_batch"] else {}
        tmp = path + ".part"
        torch.onnx.export(model, torch.randn(1, 3, 224, 224), tmp, opset_version=int(opset), input_names=["input"],
                          output_names=["output"], **axes)
        os.replace(tmp, path)
        print(key, os.path.getsize(path), flush=True)


if __name__ == "__main__":
    main()
