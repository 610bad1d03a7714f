#!/usr/bin/python3
"""Writes the PyTorch training exports the training tests use (tests/passes/test_legalize_training.cpp).

Run once with Debian's python3-torch (1.13): /usr/bin/python3 export_training.py
The .onnx files are checked in; the tests need no PyTorch. Exported with
training=TrainingMode.TRAINING: parameters keep their state_dict names,
Dropout is in training mode, BatchNormalization computes batch statistics.

  bert-mlm-train-opset15.onnx   BERT-style MLM model, 12 layers of export.py's
                                encoder layer, with Hugging Face's module names;
                                the MLM decoder's weight is the word embedding (tied).
  bert-mlm-train-opset17.onnx   the same at opset 17 (LayerNormalization ops).
  bert-mlm-train-functions-opset17.onnx  the same (same weights), each encoder
                                layer a local function.
  gpt-train-opset15.onnx        GPT-style decoder with position embeddings and an
                                LM head tied to the word embedding (no bias).
  resnet-train-opset15.onnx     export.py's small ResNet, batch norm in training mode.
  gpt2-lm-train-opset15.onnx    GPT-2-style LM with Hugging Face's module names
                                (transformer.wte, transformer.h.N, lm_head tied to
                                wte), 12 pre-LayerNorm decoder layers; seeds itself,
                                so `export_training.py gpt2-lm-train-opset15.onnx`
                                writes only it, the same bytes.
Static shapes (batch 2, sequence 8), as IPU training uses.
"""
import os
import sys

import torch
from torch import nn

import export as base

torch.manual_seed(1)
HERE = os.path.dirname(os.path.abspath(__file__))


class Embeddings(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.word_embeddings, self.position_embeddings = nn.Embedding(vocab, hidden), nn.Embedding(64, hidden)
        self.LayerNorm, self.dropout = nn.LayerNorm(hidden), nn.Dropout(0.1)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        return self.dropout(self.LayerNorm(self.word_embeddings(ids) + self.position_embeddings(pos)))


class Encoder(nn.Module):
    def __init__(self, hidden, layers):
        super().__init__()
        self.layer = nn.ModuleList(base.Layer(hidden, 2, False) for _ in range(layers))

    def forward(self, x, mask):
        for layer in self.layer:
            x = layer(x, mask)
        return x


class BertModel(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.embeddings, self.encoder = Embeddings(vocab, hidden), Encoder(hidden, layers)

    def forward(self, ids, mask):
        return self.encoder(self.embeddings(ids), mask)


class Transform(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.dense, self.LayerNorm = nn.Linear(hidden, hidden), nn.LayerNorm(hidden)

    def forward(self, x):
        return self.LayerNorm(nn.functional.gelu(self.dense(x)))


class Predictions(nn.Module):
    def __init__(self, embedding):
        super().__init__()
        vocab, hidden = embedding.weight.shape
        self.transform = Transform(hidden)
        self.decoder = nn.Linear(hidden, vocab, bias=False)
        self.decoder.weight = embedding.weight  # tied
        self.bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, x):
        return self.decoder(self.transform(x)) + self.bias


class Cls(nn.Module):
    def __init__(self, embedding):
        super().__init__()
        self.predictions = Predictions(embedding)

    def forward(self, x):
        return self.predictions(x)


class BertMlm(nn.Module):
    """Hugging Face BertForMaskedLM's module names (bert.embeddings, bert.encoder.layer.N, cls.predictions)."""

    def __init__(self, vocab=50, hidden=16, layers=12):
        super().__init__()
        self.bert = BertModel(vocab, hidden, layers)
        self.cls = Cls(self.bert.embeddings.word_embeddings)

    def forward(self, ids, mask):
        return self.cls(self.bert(ids, mask))


class GptLm(nn.Module):
    def __init__(self):
        super().__init__()
        self.gpt = base.Gpt()
        self.lm_head = nn.Linear(16, 50, bias=False)
        self.lm_head.weight = self.gpt.words.weight  # tied

    def forward(self, ids):
        return self.lm_head(self.gpt(ids))


class Gpt2Block(nn.Module):
    """Hugging Face GPT2Block's names and order: pre-LayerNorm attention and MLP."""

    def __init__(self, hidden):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.attn = base.Attention(hidden, 2, True)
        self.mlp = nn.Sequential(nn.Linear(hidden, 4 * hidden), nn.GELU(approximate="tanh"), nn.Linear(4 * hidden, hidden))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Gpt2Model(nn.Module):
    def __init__(self, vocab, hidden, layers):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, hidden), nn.Embedding(64, hidden)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList(Gpt2Block(hidden) for _ in range(layers))
        self.ln_f = nn.LayerNorm(hidden)

    def forward(self, ids):
        pos = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class Gpt2Lm(nn.Module):
    """Hugging Face GPT2LMHeadModel's names: transformer.*, lm_head tied to transformer.wte."""

    def __init__(self, vocab=50, hidden=16, layers=12):
        super().__init__()
        self.transformer = Gpt2Model(vocab, hidden, layers)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))


def export(model, args, inputs, name, opset=15, **extra):
    path = os.path.join(HERE, name)
    model.train()
    torch.onnx.export(model, args, path, opset_version=opset, input_names=inputs, output_names=["output"],
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False, **extra)
    print(path, os.path.getsize(path))


def gpt2():
    torch.manual_seed(2)
    ids = torch.randint(0, 50, (2, 8))
    export(Gpt2Lm(), (ids,), ["input_ids"], "gpt2-lm-train-opset15.onnx")


def main():
    if sys.argv[1:] == ["gpt2-lm-train-opset15.onnx"]:
        return gpt2()
    ids = torch.randint(0, 50, (2, 8))
    mask = torch.ones(2, 8, dtype=torch.int64)
    image = torch.randn(2, 3, 16, 16)
    bert = BertMlm()
    export(bert, (ids, mask), ["input_ids", "attention_mask"], "bert-mlm-train-opset15.onnx")
    export(bert, (ids, mask), ["input_ids", "attention_mask"], "bert-mlm-train-opset17.onnx", opset=17)
    again = BertMlm()  # a fresh module: PyTorch 1.13 cannot export functions from a module exported before
    again.load_state_dict(bert.state_dict())
    export(again, (ids, mask), ["input_ids", "attention_mask"], "bert-mlm-train-functions-opset17.onnx", opset=17,
           export_modules_as_functions={base.Layer})
    export(GptLm(), (ids,), ["input_ids"], "gpt-train-opset15.onnx")
    resnet = base.ResNet()
    base.randomize_bn(resnet)
    export(resnet, (image,), ["pixels"], "resnet-train-opset15.onnx")
    gpt2()


if __name__ == "__main__":
    main()
