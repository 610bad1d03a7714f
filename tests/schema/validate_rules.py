#!/usr/bin/env python3
"""Validates graphrw's rule files with a real JSON Schema validator
(python3-jsonschema, draft 2020-12) against the schema `graphrw schema`
prints (each pass's made from its declaration): every example rule file,
every rule file in docs/**/*.md (```json blocks holding "passes"), and the bad
rule files the C++ tests reject (which must fail here too).
Prints "N passed, N failed" and exits non-zero on any failure."""
import json, pathlib, re, subprocess, sys
from jsonschema import Draft202012Validator

root = pathlib.Path(__file__).resolve().parents[2]
graphrw = sys.argv[1]
passed = failed = 0

def result(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print("FAILED:", what)

# The frame's file is a valid schema; the whole rule-file schema is what
# `graphrw schema` prints: the frame with every registered pass's schema, made
# from its declaration, as the alternatives for one pass entry.
frame = json.loads((root / "schemas" / "rules.schema.json").read_text())
Draft202012Validator.check_schema(frame)
result(not (root / "schemas" / "passes").exists(), "schemas/passes/ is gone: pass schemas are made from their declarations")
bundled = json.loads(subprocess.run([graphrw, "schema"], check=True, capture_output=True, text=True).stdout)
Draft202012Validator.check_schema(bundled)
validator = Draft202012Validator(bundled)
bundled_validator = validator
# Every pass the docs describe (a page docs/passes/NAME.md) has a schema, and the other way round.
bundled_passes = sorted(r["$ref"].rsplit("/", 1)[1] for r in bundled["$defs"]["pass"]["oneOf"])
documented = sorted(p.stem for p in (root / "docs" / "passes").glob("*.md"))
result(bundled_passes == documented, f"`graphrw schema` lists the passes {bundled_passes}, docs/passes/ {documented}")
for name in bundled_passes:
    s = bundled["$defs"][name]
    result(s["properties"]["pass"] == {"const": name}, f"{name}: its schema's pass is {s['properties']['pass']}")
    for key, prop in s["properties"].items():
        if "default" in prop:
            errors = list(Draft202012Validator(prop).iter_errors(prop["default"])) if "$ref" not in prop else []
            result(not errors, f"{name}.{key}: default {prop['default']} against its own schema: {errors}")

examples = sorted((root / "examples").glob("*.json")) + sorted((root / "bench" / "rules").glob("*.json"))
result(len(examples) > 0, "examples/ has rule files")
for p in examples:
    doc = json.loads(p.read_text())
    errors = [e.message for e in validator.iter_errors(doc)]
    result(not errors, f"{p.relative_to(root)}: {errors}")

docs = 0
for md in sorted((root / "docs").rglob("*.md")):
    for block in re.findall(r"```json\n(.*?)```", md.read_text(), re.S):
        doc = json.loads(block)
        if not isinstance(doc, dict) or "passes" not in doc:
            continue
        docs += 1
        errors = [e.message for e in validator.iter_errors(doc)]
        result(not errors, f"{md.relative_to(root)} block {docs}: {errors}")
result(docs > 0, "docs/ has rule files in ```json blocks")

for case in json.loads((root / "tests" / "schema" / "bad_rules.json").read_text()):
    result(bool(list(validator.iter_errors(case["rules"]))), f"`graphrw schema` accepts a bad rule file: {case['why']}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
