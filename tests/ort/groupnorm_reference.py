#!/usr/bin/env python3
"""PopART's GroupNormalization computed with numpy, as an oracle that shares
no code with graphrw: reads {"x": [...], "shape": [N, C, ...], "scale": [C],
"bias": [C], "num_groups": G, "epsilon": E} as JSON on stdin and prints the
normalised output, flattened, as JSON. Statistics are over each group of C/G
channels of each sample (all spatial positions); scale and bias per channel."""
import json, sys
import numpy as np

a = json.load(sys.stdin)
shape = a["shape"]
n, c, g = shape[0], shape[1], a["num_groups"]
x = np.asarray(a["x"], dtype=np.float64).reshape(shape)
grouped = x.reshape(n, g, -1)
mean = grouped.mean(axis=2, keepdims=True)
var = ((grouped - mean) ** 2).mean(axis=2, keepdims=True)
y = ((grouped - mean) / np.sqrt(var + a["epsilon"])).reshape(shape)
per_channel = [1, c] + [1] * (len(shape) - 2)
y = y * np.asarray(a["scale"]).reshape(per_channel) + np.asarray(a["bias"]).reshape(per_channel)
json.dump([float(v) for v in y.astype(np.float32).ravel()], sys.stdout)
