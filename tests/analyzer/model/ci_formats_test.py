#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The gate's CI formats, checked: every SARIF output against the published
SARIF 2.1.0 schema (tests/data/sarif/, with Debian's python3-jsonschema),
every JUnit output against the structure JUnit readers expect (testsuites >
testsuite > testcase, counts that match, a failure with type and message),
and GitHub workflow commands by their grammar.

Usage: ci_formats_test.py SCHEMA FILE...   (the format from each file's name:
*.sarif, *.junit.xml, *.github.txt). scripts/setup installs
python3-jsonschema: without it the test fails, unless
CROSSFREE_TEST_NO_JSONSCHEMA=1 says the machine has none (CONTRIBUTING.md;
.ci/run never sets it); then the schema check alone is left out, and the
test says so."""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET


def fail(path, why):
    print(f"FAIL: {path}: {why}")
    return 1


def schema_validator(schema):
    """The SARIF schema's validator, or None when CROSSFREE_TEST_NO_JSONSCHEMA=1
    says this machine has no python3-jsonschema; exits 1 naming the variable
    when the module is missing without it."""
    if os.environ.get("CROSSFREE_TEST_NO_JSONSCHEMA") == "1":
        print("SKIP: CROSSFREE_TEST_NO_JSONSCHEMA=1: SARIF outputs not validated against the schema")
        return None
    try:
        import jsonschema
    except ImportError as e:
        print(f"FAIL: {e} (scripts/setup installs python3-jsonschema; "
              "CROSSFREE_TEST_NO_JSONSCHEMA=1 accepts its absence)")
        sys.exit(1)
    return jsonschema.Draft4Validator(schema)


def check_sarif(validator, path):
    with open(path) as f:
        doc = json.load(f)
    if validator is not None:
        errors = sorted(validator.iter_errors(doc), key=str)
        if errors:
            return fail(path, "not SARIF 2.1.0: " + "; ".join(e.message for e in errors[:5]))
    bad = 0
    for run in doc["runs"]:
        rules = run["tool"]["driver"]["rules"]
        for r in run.get("results", []):
            if rules[r["ruleIndex"]]["id"] != r["ruleId"]:
                bad += fail(path, f"ruleIndex {r['ruleIndex']} is not {r['ruleId']}")
            for loc in r["locations"] + r.get("relatedLocations", []):
                phys = loc.get("physicalLocation")
                if phys and phys["region"]["startLine"] < 1:
                    bad += fail(path, "a region without a line")
    return bad


def check_junit(path):
    root = ET.parse(path).getroot()
    if root.tag != "testsuites":
        return fail(path, f"root is <{root.tag}>, not <testsuites>")
    bad = 0
    suites = root.findall("testsuite")
    if len(suites) != 1:
        bad += fail(path, f"{len(suites)} test suites, expected 1")
    total = failures = 0
    for suite in suites:
        cases = suite.findall("testcase")
        failed = [c for c in cases if c.find("failure") is not None]
        if int(suite.get("tests")) != len(cases) or int(suite.get("failures")) != len(failed):
            bad += fail(path, "the suite's tests/failures do not count its test cases")
        for c in cases:
            if not c.get("name") or not c.get("classname"):
                bad += fail(path, "a test case without name or classname")
            for f in c.findall("failure"):
                if not f.get("type") or not f.get("message") or "freed at" not in (f.text or ""):
                    bad += fail(path, "a failure without type, message or the pair's free site")
        total += len(cases)
        failures += len(failed)
    if int(root.get("tests")) != total or int(root.get("failures")) != failures:
        bad += fail(path, "<testsuites> counts differ from its suites'")
    return bad


COMMAND = re.compile(r"^::(error|warning|notice)( [a-z]+=[^,:]*(,[a-z]+=[^,:]*)*)?::[^\r]*$")


def check_github(path):
    bad = 0
    errors = 0
    with open(path) as f:
        for n, line in enumerate(f.read().splitlines(), 1):
            if not line.startswith("::"):
                continue
            if not COMMAND.match(line):
                bad += fail(path, f"line {n} is no workflow command: {line[:80]}")
            errors += line.startswith("::error ")
            props = line.split("::")[1]
            if "file=" in props and ",line=" not in props:
                bad += fail(path, f"line {n}: a file without a line")
    return bad


def main():
    with open(sys.argv[1]) as f:
        validator = schema_validator(json.load(f))
    bad = 0
    for path in sys.argv[2:]:
        if path.endswith(".sarif"):
            bad += check_sarif(validator, path)
        elif path.endswith(".junit.xml"):
            bad += check_junit(path)
        elif path.endswith(".github.txt"):
            bad += check_github(path)
        else:
            bad += fail(path, "unknown format")
        print(f"checked {path}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
