// The floor of any ONNX Runtime comparison (polygraphy run --onnxrt included):
// each model's session made, run once on the same inputs and released, one
// after the other, then every output compared element by element. graphrw
// compare's time and memory are measured against this (bench/run.py).
//   NODE_PATH=tests/ort/node_modules node bench/ort_floor.js A.onnx B.onnx
'use strict';
const ort = require('onnxruntime-node');
const ARRAYS = {float32: Float32Array, int64: BigInt64Array, int32: Int32Array, bool: Uint8Array};

(async () => {
  const [fileA, fileB] = process.argv.slice(2);
  let feeds = null;
  const results = [];
  for (const file of [fileA, fileB]) {
    const s = await ort.InferenceSession.create(file);
    if (!feeds) {
      feeds = {};
      for (const m of s.inputMetadata) {
        const dims = m.shape.map(d => (typeof d === 'number' && d >= 0 ? d : 1));
        const n = dims.reduce((a, b) => a * b, 1);
        const data = new ARRAYS[m.type](n);
        for (let i = 0; i < n; i++) data[i] = m.type === 'int64' ? 1n : m.type === 'float32' ? Math.random() * 2 - 1 : 1;
        feeds[m.name] = new ort.Tensor(m.type, data, dims);
      }
    }
    results.push(await s.run(feeds));
    await s.release();
  }
  let worst = 0;
  for (const name of Object.keys(results[0])) {
    const a = results[0][name].data, b = results[1][name].data;
    for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(Number(a[i]) - Number(b[i])));
  }
  process.stdout.write(JSON.stringify({max_abs: worst}) + '\n');
})().catch(e => { console.error(e.message); process.exit(3); });
