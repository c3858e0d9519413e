"""The JSON Schemas of the spec and suite formats."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from benchlab.spec import spec_json_schema, suite_json_schema

DATA = Path(__file__).parent / "data"


def test_spec_schema_describes_the_format() -> None:
    schema = spec_json_schema()
    json.dumps(schema)  # must be plain JSON
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert schema["title"] == "benchlab spec"
    assert {"model", "tests", "frameworks"} <= set(schema["properties"])
    assert set(schema["required"]) == {"model", "tests"}
    test = schema["$defs"]["TestModel"]
    assert test["properties"]["warmup"]["minimum"] == 0
    assert "cpu_list" in test["properties"]
    assert test["additionalProperties"] == {"type": "string"}
    assert all("description" in p for p in test["properties"].values())
    files = test["properties"]["input_files"]["additionalProperties"]["anyOf"]
    assert files[1]["type"] == "array"  # FAI-PEP's one-element list form


def test_suite_schema() -> None:
    schema = suite_json_schema()
    assert {"specs", "benchmarks", "meta", "defaults"} <= set(schema["properties"])


def test_fixtures_validate_against_the_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    spec_schema, suite_schema = spec_json_schema(), suite_json_schema()
    jsonschema.Draft202012Validator.check_schema(spec_schema)
    jsonschema.validate(yaml.safe_load((DATA / "resnet.yaml").read_text()), spec_schema)
    faipep = DATA / "faipep" / "models" / "squeezenet" / "squeezenet.json"
    jsonschema.validate(json.loads(faipep.read_text()), spec_schema)
    suite = yaml.safe_load((DATA / "suite" / "suite.yaml").read_text())
    jsonschema.validate(suite, suite_schema)
    bad = json.loads((DATA / "bad" / "negative_warmup.json").read_text())
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, spec_schema)
