#!/usr/bin/env python3
"""Reproduce crates/engine/tests/corpus/tea/expected.json.

Runs The Edge Agent's (TEA) own Python loader over every TEA workflow YAML in a
TEA source tree and records whether it accepts the file or refuses it, with
the exception class and the first line of its message.

The loader call is exactly what `tea run FILE` does before invoking the graph
(python/src/the_edge_agent/cli.py, `run` command, no overlays/flags):

    engine = YAMLEngine(actions_registry={})
    graph = engine.load_from_file(path)   # parses, validates, builds and compiles

Nothing is invoked (no LLM calls, no node code runs).

Usage
-----
    # 1. a work tree of TEA at the pinned commit
    git -C <mirror> archive f507cd9244b3d2321b6738cb91ea104f20eb542e | tar -x -C /tmp/tea-src
    #    (if the archive fails on absent LFS-like blobs, extract blob by blob;
    #     the three missing blobs are binaries irrelevant here)
    # 2. a venv with TEA installed from that tree (+ the optional libs listed
    #    in SOURCE.md; loading does not need them except where noted)
    python3 -m venv /tmp/tea-venv && /tmp/tea-venv/bin/pip install -e /tmp/tea-src/python
    # 3. run with the venv's python
    /tmp/tea-venv/bin/python scripts/corpus/tea_expected.py --src /tmp/tea-src \
        --out crates/engine/tests/corpus/tea/expected.json \
        [--copy-to crates/engine/tests/corpus/tea/files]

--copy-to also copies each workflow file, plus the small sibling files that
workflows reference by relative path (SIBLINGS below), into the corpus folder,
keeping repository paths.

Each file is loaded in its own subprocess, inside a throw-away copy of the
source tree (loading can create checkpoint dirs / sqlite files), with the
working directory set to the file's own directory. TEA itself resolves
`imports:` relative to the file (load_from_file passes yaml_dir).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml  # installed with TEA

# --------------------------------------------------------------------------
# Discovery rules
# --------------------------------------------------------------------------

# Top-level folders / path prefixes that never hold workflows (see SOURCE.md).
SKIP_PREFIXES = (
    ".git/",
    ".github/",  # GitHub Actions CI workflows, not TEA
    ".bmad-core/",  # BMAD agent/task/template definitions (not TEA graphs)
    "docs/qa/",  # QA gate/assessment documents
    "_bmad-output/",
    "docker",  # docker-compose etc.
    "data/",  # generated action inventory
    "python/src/",  # package source
    "rust/src/",
)
SKIP_FILES = {
    ".pre-commit-config.yaml",
    "docs/_toc.yml",
}

# Folders of test fixtures: here a YAML that fails to parse, or a fixture in a
# deliberately-broken folder, is included even without a `nodes:` key.
FIXTURE_DIR_MARKERS = ("/fixtures/", "tests/fixtures/")
BROKEN_DIR_MARKERS = ("/broken/", "/strict_known_bad/")

# Overlay fragments (tests/fixtures/overlay/overlay_*.yaml) are applied on top
# of a base with `tea run base.yaml -f overlay.yaml`. The ones with a
# top-level `nodes:` are loaded standalone like any workflow (and noted); the
# parse-error overlay fixture is included (noted); settings/edges/variables
# only fragments are skipped.
OVERLAY_DIR = "tests/fixtures/overlay/"

# Non-workflow files referenced by workflows via relative path; copied next
# to them so references resolve (workflow -> reference).
SIBLINGS = [
    # extract-invoice-external-schema.yaml: schema: {file: ./schemas/invoice-schema.yaml}
    "examples/llamaextract/schemas/invoice-schema.yaml",
    # extract-with-merged-schemas.yaml: uses ./schemas/base-document.yaml + invoice-overlay.yaml
    "examples/llamaextract/schemas/base-document.yaml",
    "examples/llamaextract/schemas/invoice-overlay.yaml",
    # negotiation_simulator/agent.yaml: run code opens ./scenarios.yaml
    "examples/negotiation_simulator/scenarios.yaml",
    # pinball-play.yaml: preload_file: examples/pinball/pinball_rules_v1.pl (repo-root relative)
    "examples/pinball/pinball_rules_v1.pl",
    # graph-orchestrated-pattern.yaml: prompt_template: examples/prompts/analyze-task-dependencies.md
    "examples/prompts/analyze-task-dependencies.md",
]


def rel(p: Path, root: Path) -> str:
    return p.relative_to(root).as_posix()


def classify(path: str, text: str):
    """Return (include: bool, why: str)."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        if re.search(r"^nodes:", text, re.M):
            return True, "YAML parse error (workflow with top-level nodes:)"
        if any(m in "/" + path for m in FIXTURE_DIR_MARKERS):
            return True, "parse-error fixture"
        return False, "unparseable, not a fixture"
    if isinstance(data, dict) and "nodes" in data:
        return True, "workflow"
    if any(m in path for m in BROKEN_DIR_MARKERS):
        return True, "broken fixture"
    return False, "no top-level nodes:"


def discover(root: Path):
    included, skipped = [], []
    for p in sorted(root.rglob("*")):
        if not p.is_file() or p.suffix not in (".yaml", ".yml"):
            continue
        r = rel(p, root)
        if r in SKIP_FILES or any(r.startswith(s) for s in SKIP_PREFIXES):
            skipped.append((r, "skipped folder/file"))
            continue
        ok, why = classify(r, p.read_text(encoding="utf-8", errors="replace"))
        (included if ok else skipped).append((r, why))
    return included, skipped


# --------------------------------------------------------------------------
# Loading (one subprocess per file)
# --------------------------------------------------------------------------

WORKER = r"""
import json, logging, os, sys, warnings
logging.disable(logging.CRITICAL)
warnings.simplefilter("ignore")
path = sys.argv[1]
out = {}
try:
    from the_edge_agent.yaml_validation import validate_workflow
    v = [e for e in validate_workflow(path) if e.is_error()]
    val = "; ".join("[%s] %s" % (e.code, (e.message.splitlines() or [""])[0]) for e in v)
except BaseException as e:
    val = "validate crashed: %s" % type(e).__name__
try:
    from the_edge_agent import YAMLEngine
    engine = YAMLEngine(actions_registry={})
    graph = engine.load_from_file(path)
    out = {"loader": "accepted"}
except BaseException as e:  # SystemExit etc. too
    msg = str(e).strip().splitlines()
    first = msg[0].strip() if msg else ""
    out = {"loader": "refused", "reason": f"{type(e).__name__}: {first}".rstrip(": ").rstrip()}
    if isinstance(e, ImportError):
        out["import_error"] = getattr(e, "name", None)
out["validate"] = val
sys.stdout.flush()
os.write(1, ("\n@@RESULT@@" + json.dumps(out) + "\n").encode())
os._exit(0)
"""


def load_one(work_root: Path, relpath: str, timeout: int = 180) -> dict:
    f = work_root / relpath
    env = dict(os.environ)
    # Don't let a developer's environment leak credentials / tracing into load.
    for k in list(env):
        if k.endswith("_API_KEY") or k.startswith("OPIK_"):
            env.pop(k)
    try:
        cp = subprocess.run(
            [sys.executable, "-c", WORKER, str(f)],
            cwd=str(f.parent),
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {"loader": "refused", "reason": "Timeout: loader did not return", "note": "harness timeout"}
    for line in cp.stdout.splitlines():
        if line.startswith("@@RESULT@@"):
            res = json.loads(line[len("@@RESULT@@"):])
            if "reason" in res:
                res["reason"] = res["reason"].replace(str(work_root) + "/", "")
            return res
    return {
        "loader": "refused",
        "reason": f"Crash: exit {cp.returncode}: {(cp.stderr.strip().splitlines() or [''])[-1]}",
        "note": "harness: worker died",
    }


# Notes attached to specific files after loading (explanations, not verdicts).
NOTES: dict[str, str] = {
    "python/tests/fixtures/validate/broken/invalid_jinja_condition.yaml":
        "edge condition is not valid Jinja; the loader does not compile conditions at load time",
    "examples/mem0/mem0-user-personalization.yaml":
        "goto written as a map {value: node, _default: node}; TEA accepts only a string or a list of {if, to}",
    "examples/yaml/stream_broadcast.yaml":
        "edge `to:` is a list (with parallel: true); networkx add_edge gets a list",
    "examples/web/test-scrapegraph-production.yaml":
        "edge `to:` is a list of {target, condition} maps; networkx add_edge gets a list",
    "python/tests/fixtures/validate/broken/missing_nodes.yaml":
        "no nodes: key; the loader only hard-fails on graph-reference errors, so it builds a graph with the single edge __start__ -> __end__",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", required=True, type=Path, help="TEA source tree (work tree)")
    ap.add_argument("--out", required=True, type=Path, help="expected.json to write")
    ap.add_argument("--copy-to", type=Path, help="corpus files/ dir to (re)populate")
    ap.add_argument("--list", action="store_true", help="only print discovery")
    args = ap.parse_args()
    src = args.src.resolve()

    included, skipped = discover(src)
    if args.list:
        for r, why in included:
            print("INCLUDE", r, "--", why)
        for r, why in skipped:
            print("SKIP   ", r, "--", why)
        return 0

    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="tea-corpus-") as tmp:
        work = Path(tmp) / "src"
        shutil.copytree(src, work, symlinks=True, ignore=shutil.ignore_patterns(".git"))
        for r, why in included:
            res = load_one(work, r)
            res.pop("import_error", None)
            val = res.pop("validate", "")
            notes = [n for n in (res.get("note"), NOTES.get(r)) if n]
            # `tea validate` (static checker) disagreeing with the loader is worth knowing.
            if res["loader"] == "accepted" and val:
                notes.append("loader accepts but `tea validate` reports: " + val)
            elif res["loader"] == "refused" and not val:
                notes.append("`tea validate` reports no error; only the loader refuses")
            if why != "workflow":
                notes.insert(0, why)
            if r.startswith(OVERLAY_DIR) and Path(r).name.startswith(("overlay_", "invalid")):
                notes.insert(0, "overlay fragment (meant for tea run -f), loaded standalone")
            res.pop("note", None)
            if notes:
                res["note"] = "; ".join(notes)
            results[r] = res
            print(f"{res['loader']:9} {r}  {res.get('reason', '')}", file=sys.stderr)

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(dict(sorted(results.items())), indent=2, ensure_ascii=False) + "\n")

    if args.copy_to:
        for r in [r for r, _ in included] + SIBLINGS:
            s, d = src / r, args.copy_to / r
            if s.stat().st_size > 200_000:
                print(f"skip copy (>200KB): {r}", file=sys.stderr)
                continue
            d.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(s, d)

    acc = sum(1 for v in results.values() if v["loader"] == "accepted")
    print(f"files={len(results)} accepted={acc} refused={len(results) - acc}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
