#!/usr/bin/env python3
"""Validates custom resources (cert-manager's Certificate, ClusterIssuer) against the
openAPIV3Schema of their CustomResourceDefinitions, as the API server would, plus what
`kubernetes-validate --strict` adds for built-in kinds: a field the schema does not define is an
error (the API server would drop it silently, so it is a typo).

usage: validate-custom-resources.py --crd CRD.yaml [--crd ...] MANIFEST.yaml...

Exit 0 when every document of every manifest is a kind one of the CRDs defines and is valid;
1 otherwise, with one line per problem. Needs the PyPI packages PyYAML and jsonschema.
"""
import argparse
import sys

import jsonschema
import yaml


def load_crds(paths):
    """(apiVersion, kind) -> openAPIV3Schema, for every served version of every CRD."""
    schemas = {}
    for path in paths:
        with open(path) as f:
            for crd in yaml.safe_load_all(f):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                spec = crd["spec"]
                for version in spec["versions"]:
                    if version.get("served"):
                        key = (f"{spec['group']}/{version['name']}", spec["names"]["kind"])
                        schemas[key] = version["schema"]["openAPIV3Schema"]
    return schemas


def unknown_fields(value, schema, where):
    """Fields the structural schema does not list (the API server prunes them)."""
    if not isinstance(schema, dict):
        return
    if isinstance(value, dict):
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return
        properties = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if properties is not None and key in properties:
                yield from unknown_fields(item, properties[key], f"{where}.{key}")
            elif isinstance(extra, dict):
                yield from unknown_fields(item, extra, f"{where}.{key}")
            elif properties is not None and not (where == "" and key in ("apiVersion", "kind", "metadata")):
                yield f"{where}.{key}: unknown field"
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            yield from unknown_fields(item, schema["items"], f"{where}[{i}]")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crd", action="append", required=True)
    parser.add_argument("manifests", nargs="+")
    args = parser.parse_args()
    schemas = load_crds(args.crd)
    problems = 0
    for path in args.manifests:
        with open(path) as f:
            documents = [d for d in yaml.safe_load_all(f) if d]
        for doc in documents:
            key = (doc.get("apiVersion"), doc.get("kind"))
            name = f"{path}: {key[1]} {doc.get('metadata', {}).get('name', '?')}"
            schema = schemas.get(key)
            if schema is None:
                print(f"{name}: no CustomResourceDefinition for {key[0]} {key[1]}")
                problems += 1
                continue
            validator = jsonschema.Draft7Validator(schema)
            errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
            for error in errors:
                location = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
                print(f"{name}: {location or '.'}: {error.message}")
            extra = list(unknown_fields(doc, schema, ""))
            for problem in extra:
                print(f"{name}: {problem}")
            problems += len(errors) + len(extra)
            if not errors and not extra:
                print(f"{name}: valid")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
