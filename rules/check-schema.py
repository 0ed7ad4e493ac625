#!/usr/bin/env python3
"""Checks rules/rules.schema.json: it is a valid JSON Schema 2020-12, it accepts every rule file in rules/,
and it rejects typical mistakes. Needs the jsonschema package (pip install jsonschema).
Run: python3 rules/check-schema.py"""
import json
import pathlib
import sys

from jsonschema import Draft202012Validator

rules_dir = pathlib.Path(__file__).resolve().parent
schema = json.loads((rules_dir / "rules.schema.json").read_text())
Draft202012Validator.check_schema(schema)
validator = Draft202012Validator(schema)

failures = []
for path in sorted(rules_dir.glob("**/*.json")):
    if path.name.endswith(".schema.json"):
        continue
    for error in validator.iter_errors(json.loads(path.read_text())):
        failures.append(f"{path.name}: {error.json_path}: {error.message}")


def rule(**fields):
    return {"rules": [{"name": "r", "valueType": "t", "condition": True, **fields}]}


must_reject = {
    "unknown top-level member": {"rules": [], "rule": []},
    "no rules member": {},
    "unknown rule member": rule(valueTyp="t"),
    "empty name": rule(name=""),
    "empty value type": rule(valueType=""),
    "value type with trailing space": rule(valueType="t "),
    "missing condition": {"rules": [{"name": "r", "valueType": "t"}]},
    "unknown operator": rule(condition={"equals": [1, 1]}),
    "two operator keys": rule(condition={"==": [1, 1], "var": "x"}),
    "empty object": rule(condition={}),
    "too many operands": rule(condition={"==": [1, 1, 1]}),
    "too few operands": rule(condition={"and": []}),
    "nested unknown operator": rule(condition={"and": [{"!": {"nope": 1}}]}),
    "boolean variable path": rule(condition={"var": True}),
}
must_accept = {
    "any value type": rule(valueType="*"),
    "unary without array": rule(condition={"!": {"var": "context.paused"}}),
    "between": rule(condition={"<": [0, {"var": "source.updateRate"}, 1000]}),
    "variable with default": rule(condition={"var": ["context.enabled", True]}),
    "array literal": rule(condition={"in": [{"var": "actor.name"}, ["Fan", "Relay"]]}),
}
for name, document in must_reject.items():
    if validator.is_valid(document):
        failures.append(f"accepted: {name}")
for name, document in must_accept.items():
    for error in validator.iter_errors(document):
        failures.append(f"rejected: {name}: {error.json_path}: {error.message}")

print("\n".join(failures) or "rules schema: ok")
sys.exit(1 if failures else 0)
