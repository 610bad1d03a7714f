#!/usr/bin/python3
"""Writes the PyTorch exports the opset tests convert (tests/passes/test_opset_pytorch.cpp).

Run once with Debian's python3-torch (1.13): /usr/bin/python3 export.py
The .onnx files are checked in; the tests need no PyTorch.

  bert-opsetN.onnx    BERT-style encoder: word + position embeddings (arange),
                      2 layers of self-attention with a padding mask, erf GELU,
                      LayerNorm (LayerNormalization at 17, decomposed below).
  gpt-opsetN.onnx     GPT-style decoder: positions from arange, a causal mask
                      from triu over the dynamic sequence length (opset 14
                      and up: PyTorch exports triu from 14 on).
  resnet-opsetN.onnx  small ResNet-style conv net: conv, batch norm, residual,
                      global average pool, linear.
  bert3-opset15.onnx  the BERT-style encoder with 3 layers (the pattern
                      library's match counts).
  bert-functions-opsetN.onnx  the same BERT-style encoder (same weights) with
                      each encoder layer a local function
                      (export_modules_as_functions), opsets 15 and 17.
All with a dynamic batch (and sequence) dimension, exported in eval mode.
"""
import math
import os

import torch
from torch import nn

torch.manual_seed(0)
HERE = os.path.dirname(os.path.abspath(__file__))


class Attention(nn.Module):
    def __init__(self, hidden, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.q, self.k, self.v, self.o = (nn.Linear(hidden, hidden) for _ in range(4))

    def forward(self, x, mask=None):
        b, s, h = x.shape
        d = h // self.heads
        split = lambda t: t.view(b, s, self.heads, d).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        scores = q @ k.transpose(-1, -2) / math.sqrt(d)
        if self.causal:
            future = torch.triu(torch.ones(s, s, dtype=torch.bool, device=x.device), diagonal=1)
            scores = scores.masked_fill(future, -1e4)
        if mask is not None:
            scores = scores + (1.0 - mask[:, None, None, :].to(scores.dtype)) * -1e4
        p = torch.softmax(scores, dim=-1)
        ctx = (p @ v).transpose(1, 2).reshape(b, s, h)
        return self.o(ctx)


class Layer(nn.Module):
    def __init__(self, hidden, heads, causal):
        super().__init__()
        self.attn = Attention(hidden, heads, causal)
        self.ln1, self.ln2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.up, self.down = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, mask=None):
        x = self.ln1(x + self.drop(self.attn(x, mask)))
        return self.ln2(x + self.drop(self.down(nn.functional.gelu(self.up(x)))))


class Encoder(nn.Module):
    def __init__(self, vocab=50, hidden=16, heads=2, layers=2, causal=False):
        super().__init__()
        self.words, self.positions = nn.Embedding(vocab, hidden), nn.Embedding(64, hidden)
        self.ln = nn.LayerNorm(hidden)
        self.layers = nn.ModuleList(Layer(hidden, heads, causal) for _ in range(layers))
        self.causal = causal

    def forward(self, ids, mask=None):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.ln(self.words(ids) + self.positions(pos))
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Bert(Encoder):
    def forward(self, ids, mask):
        return super().forward(ids, mask)


class Gpt(Encoder):
    def __init__(self):
        super().__init__(causal=True)

    def forward(self, ids):
        return super().forward(ids)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.c2, self.b2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(x + self.b2(self.c2(torch.relu(self.b1(self.c1(x))))))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.bn = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(8)
        self.blocks = nn.Sequential(Block(8), Block(8))
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = self.blocks(torch.relu(self.bn(self.stem(x))))
        return self.fc(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def randomize_bn(m):
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 1.5)


def main():
    ids = torch.randint(0, 50, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    image = torch.randn(2, 3, 16, 16)
    models = {
        "bert": (Bert(), (ids, mask), ["input_ids", "attention_mask"],
                 {"input_ids": {0: "batch", 1: "sequence"}, "attention_mask": {0: "batch", 1: "sequence"}}),
        "gpt": (Gpt(), (ids,), ["input_ids"], {"input_ids": {0: "batch", 1: "sequence"}}),
        "resnet": (ResNet(), (image,), ["pixels"], {"pixels": {0: "batch"}}),
    }
    for name, (model, args, inputs, axes) in models.items():
        randomize_bn(model)
        model.eval()
        for opset in (13, 14, 15, 17):
            if name == "gpt" and opset < 14:
                continue  # torch.triu exports from opset 14 on
            path = os.path.join(HERE, f"{name}-opset{opset}.onnx")
            torch.onnx.export(model, args, path, opset_version=opset, input_names=inputs, output_names=["output"],
                              dynamic_axes={**axes, "output": {0: "batch"}}, do_constant_folding=False)
            print(path, os.path.getsize(path))
    args, inputs, axes = models["bert"][1:4]
    bert3 = Bert(layers=3)
    bert3.eval()
    path = os.path.join(HERE, "bert3-opset15.onnx")
    torch.onnx.export(bert3, args, path, opset_version=15, input_names=inputs, output_names=["output"],
                      dynamic_axes={**axes, "output": {0: "batch"}}, do_constant_folding=False)
    print(path, os.path.getsize(path))
    for opset in (15, 17):
        # A fresh module with the same weights: PyTorch 1.13 fails an internal
        # assert exporting functions from a module it has exported before.
        bert = Bert()
        bert.load_state_dict(models["bert"][0].state_dict())
        bert.eval()
        path = os.path.join(HERE, f"bert-functions-opset{opset}.onnx")
        torch.onnx.export(bert, args, path, opset_version=opset, input_names=inputs, output_names=["output"],
                          dynamic_axes={**axes, "output": {0: "batch"}}, do_constant_folding=False,
                          export_modules_as_functions={Layer})
        print(path, os.path.getsize(path))


if __name__ == "__main__":
    main()
