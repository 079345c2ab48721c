#!/usr/bin/env python3
"""Keeps a manifest's expected times current from a measured run.

usage: scripts/manifest_times.py REPORT_DIR [--manifest FILE]

Reads REPORT_DIR/results/timings.json (the wall time of each experiment, written by `dsgd reproduce`) and sets
each of those experiments' "expected_s" in the manifest (default: reports/manifests/default.json) to it, rounded to
whole seconds (tenths below 10 s). Experiments the run did not time keep theirs. Only the expected_s lines change,
so the file's hand-kept layout stays as it is: the new text is checked to parse to the old manifest with just those
values changed before it is written. docs/manifest-schema.md describes both files.
"""

import argparse
import json
import pathlib
import re
import sys


def rounded(wall_s):
    return round(wall_s, 1) if wall_s < 10 else int(round(wall_s))


def experiment_indent(lines):
    """The indentation of an experiment's own members: three levels of the file's unit (root, list, object)."""
    for line in lines[1:]:
        if line.strip():
            unit = len(line) - len(line.lstrip(" "))
            return " " * (3 * unit)
    raise SystemExit("manifest_times.py: the manifest is empty")


def update(text, walls):
    """`text` with each timed experiment's expected_s line set, or added after its command line where absent."""
    lines = text.splitlines(keepends=True)
    indent = experiment_indent(lines)
    id_line = re.compile("^" + indent + r'"id": "([^"]+)",\s*$')
    expected_line = re.compile("^" + indent + r'"expected_s": [^,\n]+(,?\s*)$')
    command_line = re.compile("^" + indent + r'"command": \[')
    command_end = re.compile("^" + indent + r'(("command": \[.*)?\]),\s*$')  # on one line or on its own
    starts = [i for i, line in enumerate(lines) if id_line.match(line)] + [len(lines)]
    insertions = []  # (index, line), applied from the end so the indices stay valid
    for begin, end in zip(starts, starts[1:]):
        key = id_line.match(lines[begin]).group(1)
        if key not in walls:
            continue
        value = rounded(walls[key])
        block = range(begin, end)
        found = [i for i in block if expected_line.match(lines[i])]
        if found:
            lines[found[0]] = f'{indent}"expected_s": {value}{expected_line.match(lines[found[0]]).group(1)}'
            continue
        commands = [i for i in block if command_line.match(lines[i])]
        ends = [i for i in block if commands and i >= commands[0] and command_end.match(lines[i])]
        if ends:
            insertions.append((ends[0] + 1, f'{indent}"expected_s": {value},\n'))
    for index, line in reversed(insertions):
        lines.insert(index, line)
    return "".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report_dir", type=pathlib.Path, help="a report folder written by `dsgd reproduce`")
    parser.add_argument("--manifest", type=pathlib.Path,
                        default=pathlib.Path(__file__).resolve().parent.parent / "reports" / "manifests" /
                        "default.json")
    args = parser.parse_args()

    timings_path = args.report_dir / "results" / "timings.json"
    try:
        timings = json.loads(timings_path.read_text())["experiments"]
        walls = {t["id"]: float(t["wall_s"]) for t in timings}
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"manifest_times.py: {timings_path}: {error}")

    text = args.manifest.read_text()
    manifest = json.loads(text)
    ids = [e["id"] for e in manifest["experiments"]]
    unknown = sorted(set(walls) - set(ids))
    if unknown:
        print(f"manifest_times.py: not in {args.manifest}, left out: {', '.join(unknown)}", file=sys.stderr)
        for key in unknown:
            del walls[key]

    new_text = update(text, walls)
    expected = json.loads(text)
    for experiment in expected["experiments"]:
        if experiment["id"] in walls:
            experiment["expected_s"] = rounded(walls[experiment["id"]])
    if json.loads(new_text) != expected:
        sys.exit(f"manifest_times.py: {args.manifest}: could not place every expected_s line; nothing written")
    args.manifest.write_text(new_text)
    for experiment in manifest["experiments"]:
        if experiment["id"] in walls:
            before = experiment.get("expected_s", "?")
            print(f"{experiment['id']}: {before} -> {rounded(walls[experiment['id']])} s")


if __name__ == "__main__":
    main()
