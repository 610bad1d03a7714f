// graphrw's ONNX Runtime harness, called by the C++ tests.
//
//   node ort.js batch REQUEST.json RESPONSE.json
//     REQUEST: [{"model": path, "inputs": [{"name", "type", "dims", "data": base64}]}]
//     RESPONSE: [{"ok": true, "outputs": [{"name", "type", "dims", "data"}]} | {"ok": false, "error": msg}]
//   node ort.js compare A.onnx B.onnx [--tol T] [--seed S] [--int-max N] [--runs R]
//     Runs both models on the same pseudo-random inputs (from A's input
//     metadata; R seeds from S, default 3) and compares every output's type,
//     shape and values; prints JSON, exits 0 when equal
//     within T (absolute, plus T relative), 1 when not, 2 on error.
'use strict';
const fs = require('fs');
const path = require('path');
const ort = require(path.join(__dirname, 'node_modules', 'onnxruntime-node'));

const ARRAYS = {
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array, int16: Int16Array,
  uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array, int64: BigInt64Array, uint64: BigUint64Array,
  bool: Uint8Array, float16: Uint16Array,
};

function decode(t) {
  if (t.type === 'string') return new ort.Tensor('string', t.strings, t.dims);
  const bytes = Buffer.from(t.data, 'base64');
  const Ctor = ARRAYS[t.type];
  if (!Ctor) throw new Error('unsupported tensor type ' + t.type);
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  const data = new Ctor(copy.buffer, 0, bytes.length / Ctor.BYTES_PER_ELEMENT);
  return new ort.Tensor(t.type, data, t.dims);
}

function encode(name, t) {
  if (t.type === 'string') return {name, type: t.type, dims: t.dims, strings: Array.from(t.data)};
  const raw = Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength);
  return {name, type: t.type, dims: t.dims, data: raw.toString('base64')};
}

async function batch(requestFile, responseFile) {
  const request = JSON.parse(fs.readFileSync(requestFile, 'utf8'));
  const response = [];
  for (const item of request) {
    try {
      const session = await ort.InferenceSession.create(item.model);
      const feeds = {};
      for (const t of item.inputs) feeds[t.name] = decode(t);
      const result = await session.run(feeds);
      response.push({ok: true, outputs: session.outputNames.map(n => encode(n, result[n]))});
    } catch (e) {
      response.push({ok: false, error: String(e.message || e).split('\n')[0]});
    }
  }
  fs.writeFileSync(responseFile, JSON.stringify(response));
}

// Inputs from `session`'s metadata; a symbolic dimension takes `other`'s
// static one (a model and its set-shapes version), else 1.
function randomFeeds(session, seed, intMax, other) {
  // xorshift32 from a mixed seed (murmur3's finaliser): small seeds would
  // otherwise start with small draws (a boolean input always false).
  let state = seed >>> 0;
  state = Math.imul(state ^ (state >>> 16), 0x85ebca6b) >>> 0;
  state = Math.imul(state ^ (state >>> 13), 0xc2b2ae35) >>> 0;
  state = (state ^ (state >>> 16)) >>> 0 || 1;
  const next = () => {  // xorshift32: the same inputs for both models
    state ^= state << 13; state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5; state >>>= 0;
    return state / 4294967296;
  };
  const feeds = {};
  for (const m of session.inputMetadata) {
    const twin = other ? other.inputMetadata.find(o => o.name === m.name) : undefined;
    const dims = m.shape.map((d, i) => {
      if (typeof d === 'number' && d >= 0) return d;
      const t = twin && twin.shape.length === m.shape.length ? twin.shape[i] : undefined;
      return typeof t === 'number' && t >= 0 ? t : 1;
    });
    const n = dims.reduce((a, b) => a * b, 1);
    const Ctor = ARRAYS[m.type];
    if (!Ctor) throw new Error('input ' + m.name + ': unsupported type ' + m.type);
    const data = new Ctor(n);
    for (let i = 0; i < n; i++) {
      if (m.type === 'int64' || m.type === 'uint64') data[i] = BigInt(Math.floor(next() * intMax));
      else if (m.type.startsWith('int') || m.type.startsWith('uint') || m.type === 'bool')
        data[i] = Math.floor(next() * (m.type === 'bool' ? 2 : intMax));
      else data[i] = next() * 2 - 1;
    }
    feeds[m.name] = new ort.Tensor(m.type, data, dims);
  }
  return feeds;
}

// Both models on the same inputs from several seeds (a boolean input takes
// both values across them); every output's type, shape and values compared.
async function compare(a, b, options) {
  const sa = await ort.InferenceSession.create(a);
  const sb = await ort.InferenceSession.create(b);
  const report = {ok: true, outputs: {}, seeds: []};
  const names = sa.outputNames;
  if (JSON.stringify([...names].sort()) !== JSON.stringify([...sb.outputNames].sort())) {
    report.ok = false;
    report.error = 'output names differ: ' + names + ' vs ' + sb.outputNames;
  }
  for (let k = 0; k < options.runs; k++) {
    const seed = options.seed + k;
    report.seeds.push(seed);
    const feeds = randomFeeds(sa, seed, options.intMax, sb);
    const ra = await sa.run(feeds);
    const rb = await sb.run(feeds);
    for (const name of names) {
      const x = ra[name], y = rb[name];
      if (!y || typeof report.outputs[name] === 'string') continue;
      if (x.type !== y.type) {
        report.ok = false;
        report.outputs[name] = 'types ' + x.type + ' vs ' + y.type;
        continue;
      }
      if (JSON.stringify(x.dims) !== JSON.stringify(y.dims)) {
        report.ok = false;
        report.outputs[name] = 'dims ' + x.dims + ' vs ' + y.dims + ' (seed ' + seed + ')';
        continue;
      }
      let worst = report.outputs[name] || 0;
      for (let i = 0; i < x.data.length; i++) {
        const p = Number(x.data[i]), q = Number(y.data[i]);
        if (Number.isNaN(p) && Number.isNaN(q)) continue;
        if (p === q) continue;
        const excess = Math.abs(p - q) - options.tol * Math.abs(p);
        worst = Math.max(worst, Number.isNaN(excess) ? Infinity : excess);
      }
      report.outputs[name] = worst;
      if (!(worst <= options.tol)) report.ok = false;
    }
  }
  console.log(JSON.stringify(report));
  return report.ok ? 0 : 1;
}

(async () => {
  const [command, ...args] = process.argv.slice(2);
  try {
    if (command === 'batch') {
      await batch(args[0], args[1]);
      process.exit(0);
    }
    if (command === 'compare') {
      const options = {tol: 1e-5, seed: 1, intMax: 2, runs: 3};
      const files = [];
      for (let i = 0; i < args.length; i++) {
        if (args[i] === '--tol') options.tol = Number(args[++i]);
        else if (args[i] === '--seed') options.seed = Number(args[++i]);
        else if (args[i] === '--int-max') options.intMax = Number(args[++i]);
        else if (args[i] === '--runs') options.runs = Number(args[++i]);
        else files.push(args[i]);
      }
      process.exit(await compare(files[0], files[1], options));
    }
    console.error('usage: node ort.js batch REQUEST RESPONSE | compare A B [--tol T] [--seed S] [--int-max N]');
    process.exit(2);
  } catch (e) {
    console.log(JSON.stringify({ok: false, error: String(e.message || e).split('\n')[0]}));
    process.exit(2);
  }
})();
