#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Validates an OpenAPI 3.1 document (JSON) against the OpenAPI Initiative's document schema
(tests/gateway/data/openapi-3.1-schema.yaml) with jsonschema's Draft 2020-12 validator, and checks
that every local $ref resolves. Exit 0: valid; 1: invalid (each error printed); 2: usage."""
import json
import pathlib
import sys

import jsonschema
import yaml

SCHEMA = pathlib.Path(__file__).resolve().parent / "data" / "openapi-3.1-schema.yaml"


def local_refs(node, path="#"):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield path, value
            else:
                yield from local_refs(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from local_refs(value, f"{path}/{i}")


def resolve(doc, ref):
    node = doc
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def main():
    if len(sys.argv) != 2:
        print("usage: check_openapi.py <document.json>", file=sys.stderr)
        return 2
    doc = json.loads(pathlib.Path(sys.argv[1]).read_text())
    schema = yaml.safe_load(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for error in errors:
        where = "/".join(str(p) for p in error.absolute_path) or "(document)"
        print(f"{where}: {error.message}")
    bad_refs = [(p, r) for p, r in local_refs(doc) if r.startswith("#/") and not resolve(doc, r)]
    for path, ref in bad_refs:
        print(f"{path}: $ref {ref} does not resolve")
    return 1 if errors or bad_refs else 0


if __name__ == "__main__":
    sys.exit(main())
