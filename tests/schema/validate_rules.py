#!/usr/bin/env python3
"""Validates graphrw's rule files with a real JSON Schema validator
(python3-jsonschema, draft 2020-12): every example rule file, every rule file
in docs/*.md (```json blocks holding "passes"), the schema `graphrw schema`
prints, and the bad rule files the C++ tests reject (which must fail here too).
Prints "N passed, N failed" and exits non-zero on any failure."""
import copy, json, pathlib, re, subprocess, sys
from jsonschema import Draft202012Validator, RefResolver

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

store = {}
for p in (root / "schemas").rglob("*.schema.json"):
    s = json.loads(p.read_text())
    Draft202012Validator.check_schema(s)
    store[s["$id"]] = s
# The rule-file schema as graphrw assembles it: the file's frame, with every
# pass schema below schemas/passes/ as the alternatives for one pass entry.
rules_schema = copy.deepcopy(store["https://graphrw.invalid/schemas/rules.schema.json"])
pass_files = sorted((root / "schemas" / "passes").glob("*.schema.json"))
rules_schema["$defs"]["pass"] = {"oneOf": [{"$ref": f"passes/{p.name}"} for p in pass_files]}
validator = Draft202012Validator(rules_schema, resolver=RefResolver.from_schema(rules_schema, store=store))

# The bundled schema graphrw prints is a valid schema that agrees with the files.
bundled = json.loads(subprocess.run([graphrw, "schema"], check=True, capture_output=True, text=True).stdout)
Draft202012Validator.check_schema(bundled)
bundled_validator = Draft202012Validator(bundled)
# Every pass schema file is a registered pass and the other way round.
bundled_passes = sorted(r["$ref"].rsplit("/", 1)[1] for r in bundled["$defs"]["pass"]["oneOf"])
result(bundled_passes == sorted(p.name.split(".")[0] for p in pass_files),
       f"`graphrw schema` lists the passes {bundled_passes}, schemas/passes/ has {[p.name for p in pass_files]}")

examples = sorted((root / "examples").glob("*.json")) + sorted((root / "bench" / "rules").glob("*.json"))
result(len(examples) > 0, "examples/ has rule files")
for p in examples:
    doc = json.loads(p.read_text())
    errors = [e.message for e in validator.iter_errors(doc)]
    result(not errors, f"{p.relative_to(root)}: {errors}")
    result(not list(bundled_validator.iter_errors(doc)), f"{p.relative_to(root)} against `graphrw schema`")

docs = 0
for md in sorted((root / "docs").glob("*.md")):
    for block in re.findall(r"```json\n(.*?)```", md.read_text(), re.S):
        doc = json.loads(block)
        if not isinstance(doc, dict) or "passes" not in doc:
            continue
        docs += 1
        errors = [e.message for e in validator.iter_errors(doc)]
        result(not errors, f"{md.relative_to(root)} block {docs}: {errors}")
result(docs > 0, "docs/ has rule files in ```json blocks")

for case in json.loads((root / "tests" / "schema" / "bad_rules.json").read_text()):
    result(bool(list(validator.iter_errors(case["rules"]))), f"schema accepts a bad rule file: {case['why']}")
    result(bool(list(bundled_validator.iter_errors(case["rules"]))), f"`graphrw schema` accepts a bad rule file: {case['why']}")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
