#!/usr/bin/env bash
# Runs every example against the real local model at $SWITCHYARD_TEST_LLM_URL through the CLI, checks each ends as
# documented (approval-flow pauses, the others complete), and prints the latency of each node.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SWITCHYARD_TEST_LLM_URL:?point it at an OpenAI-compatible server}"
home=$(mktemp -d)
trap 'rm -rf "$home"' EXIT
cat > "$home/settings.yaml" <<YAML
providers:
  - {id: local, kind: openai, base_url: "$SWITCHYARD_TEST_LLM_URL", max_tokens: 64}
YAML
# The CLI that `cargo test` built (npm test runs this after it): building it here with -p would build the engine
# again with other features.
[ -x target/debug/switchyard ] || cargo build -q -p switchyard-cli
mkdir -p target/local-runs
passed=0
failed=0
for example in alert-triage review-fix-loop research-fanout approval-flow; do
  expected=completed
  [ "$example" = approval-flow ] && expected=paused
  events="target/local-runs/$example.events.jsonl"
  status=$(SWITCHYARD_HOME="$home" target/debug/switchyard run "examples/$example.yaml" --model local/smollm2-135m \
    --json --events "$events" | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])') || true
  python3 - "$events" "$example" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
ms = [f'{e["node"]} {e["durationMs"]} ms' for e in events if e["type"] == "node:exit" and e["node"] != "start"]
print(f"  {sys.argv[2]}: " + ", ".join(ms))
PY
  if [ "$status" = "$expected" ]; then
    echo "ok: $example ended $status"
    passed=$((passed + 1))
  else
    echo "FAILED: $example ended ${status:-with an error}, expected $expected"
    failed=$((failed + 1))
  fi
done
echo "examples: $passed passed, $failed failed"

# An evaluation against the real model: the model answers the case and judges it. The model is tiny, so the rubric's
# threshold is 0: this checks that a case runs and the judge answers with a score, not the quality of either.
cat > "$home/cats.yaml" <<'YAML'
switchyard: 1
name: cats
nodes:
  - {id: start, type: start, initial_input: cats}
  - {id: write, type: agent, user_prompt: "Write one sentence about {{ input }}."}
edges:
  - {from: start, to: write}
YAML
cat > "$home/cats.evals.yaml" <<'YAML'
workflow: cats.yaml
judge: local/smollm2-135m
cases:
  - id: a-sentence-is-written-and-judged
    expect:
      - {status: completed}
      - {node: write, judge: {rubric: "One English sentence about cats.", threshold: 0}}
YAML
# The model samples (llama-server's default temperature), and a 135M model now and then answers the judge with a score
# outside 0..1 even after the repair turn: the case then fails, as it should. What this checks is that a case runs
# and a judge can score it, so it is given eight tries (about half fail), each asking the model afresh; each failure
# is shown.
for try in 1 2 3 4 5 6 7 8; do
  if report=$(SWITCHYARD_HOME="$home" target/debug/switchyard eval "$home/cats.evals.yaml" --model local/smollm2-135m --json); then
    break
  fi
  echo "try $try: the evaluation against the local model failed: $(echo "$report" | python3 -c 'import json, sys; r = json.load(sys.stdin); print([f["actual"] for c in r["cases"] for a in c["attempts"] for f in a["failures"]])' 2>/dev/null || echo "$report")"
  [ "$try" -lt 8 ] || { echo "FAILED: the evaluation against the local model: $report"; exit 1; }
  # Its calls were recorded: the next try would replay the same answers. It asks again.
  rm -f "$home/cats.evals.calls.json"
done
echo "$report" | python3 -c '
import json, sys
r = json.load(sys.stdin)
a = r["cases"][0]["attempts"][0]
judged = a["judgements"][0]
assert r["passed"] == 1 and 0 <= judged["score"] <= 1, r
score = judged["score"]
print(f"ok: evaluation against the local model: the case ran and the judge scored it {score:.2f}")'
# Again: every call (the agent's and the judge's) is answered from the calls recorded the first time; none is made.
again=$(SWITCHYARD_HOME="$home" target/debug/switchyard eval "$home/cats.evals.yaml" --model local/smollm2-135m --json --offline) \
  || { echo "FAILED: the evaluation replayed offline: $again"; exit 1; }
echo "$again" | python3 -c '
import json, sys
r = json.load(sys.stdin)
c = r["calls"]
assert r["passed"] == 1 and c["modelCalls"] == 0 and c["reused"] == 2, r
reused = c["reused"]
print(f"ok: the same evaluation offline: 0 model calls, {reused} recorded answers reused")'
[ "$failed" -eq 0 ]
