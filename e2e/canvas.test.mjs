// The canvas as a person uses it, with real pointer and keyboard gestures on the real app: select, edit edges,
// box-select, delete and undo, add from the palette, connect, read why a connection is refused, follow a run.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chord, click, drag, edgeMidpoint, emptyCanvasNear, KEY, pointOf, rightClick, type, whatIsAt } from "./gestures.mjs";
import { appForFile, docsShotPath, frames, graph, nodeSel, openFile, problemsText, root, waitStatus, work } from "./harness.mjs";

let browser;
appForFile((b) => (browser = b));

const node = nodeSel;
const inspectorTitle = async () => (await browser.$(".inspector h2")).getText();
const blankPane = async () => {
  // A point of empty canvas: the top-left corner of the pane, clear of nodes and controls.
  const p = await pointOf(browser, ".react-flow__pane", 0.02, 0.04);
  assert.match(await whatIsAt(browser, p), /canvas|rf__wrapper|react-flow__pane/);
  return p;
};

/** Writes a workflow file for a test and opens it. */
async function openWorkflow(name, yaml) {
  const file = join(work, name);
  writeFileSync(file, yaml);
  await openFile(browser, file);
  await browser.$(node("start")).waitForExist({ timeout: 5000 });
  return file;
}

const LOOP = `switchyard: 1
name: Review loop
nodes:
  - {id: start, type: start, position: {x: 0, y: 100}}
  - {id: write, type: agent, position: {x: 320, y: 100}}
  - {id: review, type: agent, position: {x: 640, y: 100}}
  - {id: done, type: agent, position: {x: 960, y: 100}}
edges:
  - {from: start, to: write}
  - {from: write, to: review}
  - {from: review, to: write, when: the review found problems}
  - {from: review, to: done, when: the review passed}
`;

test("a workflow opens readable: titles at least 12 px on screen", async () => {
  await openWorkflow("loop.yaml", LOOP);
  const px = await browser.execute(() => {
    const title = document.querySelector('[data-testid="node-write"] .wf-title');
    const zoom = new DOMMatrix(getComputedStyle(document.querySelector(".react-flow__viewport")).transform).a;
    return parseFloat(getComputedStyle(title).fontSize) * zoom;
  });
  assert.ok(px >= 12, `titles are ${px.toFixed(1)} px on screen`);
});

test("clicking a node selects it and the inspector follows; clicking an edge selects the edge; Escape and the pane clear it", async () => {
  await chord(browser, [KEY.shift, "1"]); // fit the whole workflow in view
  await frames(browser);
  await click(browser, await pointOf(browser, `${node("write")} .wf-title`));
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.join() === "write", { timeout: 3000, timeoutMsg: "the click did not select write" });
  assert.match(await inspectorTitle(), /write/i);
  await click(browser, await pointOf(browser, `${node("review")} .wf-title`));
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.join() === "review", { timeout: 3000, timeoutMsg: "the second click did not move the selection" });
  assert.match(await inspectorTitle(), /review/i);
  await click(browser, await edgeMidpoint(browser, "start->write"));
  await browser.waitUntil(async () => (await graph(browser)).selectedEdges.join() === "start->write", { timeout: 3000, timeoutMsg: "clicking the edge did not select it" });
  assert.match(await inspectorTitle(), /Edge · start → write/i);
  assert.equal(await (await browser.$('[data-testid="edge-handle"]')).getText(), "output");
  await chord(browser, [KEY.escape]);
  await browser.waitUntil(async () => (await graph(browser)).selectedEdges.length === 0, { timeout: 3000, timeoutMsg: "Escape did not clear the selection" });
  await click(browser, await pointOf(browser, `${node("done")} .wf-title`));
  await click(browser, await blankPane());
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.length === 0, { timeout: 3000, timeoutMsg: "a click on the pane did not clear the selection" });
  // Shift-click adds to the selection (fitted again: the inspector that opened narrowed the canvas).
  await click(browser, await pointOf(browser, `${node("write")} .wf-title`));
  await chord(browser, [KEY.shift, "1"]);
  await frames(browser);
  // The fit may still be moving the view (or not have begun to): click where the node has come to rest, the same
  // point three samples in a row.
  let done = await pointOf(browser, `${node("done")} .wf-title`);
  let stillFor = 0;
  await browser.waitUntil(async () => {
    await frames(browser);
    const now = await pointOf(browser, `${node("done")} .wf-title`);
    stillFor = Math.abs(now.x - done.x) < 1 && Math.abs(now.y - done.y) < 1 ? stillFor + 1 : 0;
    done = now;
    return stillFor >= 3;
  }, { timeout: 5000, interval: 100, timeoutMsg: "the view did not come to rest after fitting" });
  await click(browser, done, { modifiers: [KEY.shift] });
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.sort().join() === "done,write", { timeout: 3000, timeoutMsg: "Shift-click did not add to the selection" });
});

test("an unbounded loop is fixed on the canvas by editing the edge's max_iterations", async () => {
  assert.match(await problemsText(browser), /UNBOUNDED_CYCLE/);
  await click(browser, await pointOf(browser, '[data-testid="edge-label-review->write"]'));
  await browser.waitUntil(async () => (await graph(browser)).selectedEdges.join() === "review->write", { timeout: 3000, timeoutMsg: "clicking the label chip did not select the back edge" });
  await click(browser, await pointOf(browser, '[data-testid="inspector-max-iterations"]'));
  await type(browser, "3");
  await chord(browser, [KEY.tab]);
  await browser.waitUntil(async () => !(await problemsText(browser)).includes("UNBOUNDED_CYCLE"), { timeout: 5000, timeoutMsg: "UNBOUNDED_CYCLE is still reported" });
  assert.match(await (await browser.$('[data-testid="edge-label-review->write"]')).getText(), /≤3×/);
});

test("Shift-drag selects a box of nodes and edges; Delete removes exactly them; one undo brings them all back", async () => {
  await chord(browser, [KEY.shift, "1"]); // fit the whole workflow in view
  await frames(browser);
  const before = await graph(browser);
  const a = await pointOf(browser, node("review"), -0.15, -0.3);
  const b = await pointOf(browser, node("done"), 1.1, 1.3);
  await drag(browser, a, b, { modifiers: [KEY.shift] });
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.sort().join() === "done,review", { timeout: 3000, timeoutMsg: `box selection selected ${JSON.stringify((await graph(browser)).selectedNodes)}` });
  assert.ok((await graph(browser)).selectedEdges.includes("review->done"), "the edge inside the box is selected");
  await chord(browser, [KEY.delete]);
  await browser.waitUntil(async () => !(await graph(browser)).nodes.includes("review"), { timeout: 3000, timeoutMsg: "Delete did not remove the selection" });
  const after = await graph(browser);
  assert.deepEqual(after.nodes.sort(), ["start", "write"]);
  assert.deepEqual(after.edges, ["start->write"]);
  await chord(browser, [KEY.control, "z"]);
  await browser.waitUntil(async () => (await graph(browser)).edges.length === before.edges.length, { timeout: 3000, timeoutMsg: "one undo did not restore the edges" });
  assert.deepEqual((await graph(browser)).nodes.sort(), before.nodes.sort());
  assert.deepEqual((await graph(browser)).edges.sort(), before.edges.sort());
});

test("the palette adds a node in view without covering another, selected with its inspector open; dragging puts it where it is dropped", async () => {
  await openWorkflow("empty.yaml", "switchyard: 1\nname: Empty\nnodes:\n  - {id: start, type: start, position: {x: 0, y: 0}}\n");
  for (let i = 0; i < 3; i++) await click(browser, await pointOf(browser, '[data-testid="add-agent"]'));
  await browser.$(node("agent_3")).waitForExist({ timeout: 3000 });
  const boxes = await browser.execute(() => [...document.querySelectorAll(".react-flow__node")].map((n) => n.getBoundingClientRect().toJSON()));
  const canvas = await browser.execute(() => document.querySelector(".react-flow").getBoundingClientRect().toJSON());
  for (let i = 0; i < boxes.length; i++) {
    const a = boxes[i];
    assert.ok(a.left >= canvas.left && a.right <= canvas.right && a.top >= canvas.top && a.bottom <= canvas.bottom, "every new node is in the visible canvas");
    for (const b of boxes.slice(i + 1)) assert.ok(a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top, "no two nodes overlap");
  }
  assert.deepEqual((await graph(browser)).selectedNodes, ["agent_3"]);
  assert.equal(await (await browser.$('[data-testid="inspector-id"]')).getValue(), "agent_3");
  // Drag an approval from the palette to a spot on the canvas.
  const target = await pointOf(browser, ".react-flow__pane", 0.2, 0.8); // clear of the agents just added in the middle
  await drag(browser, await pointOf(browser, '[data-testid="add-approval"]'), target);
  await browser.$(node("approval")).waitForExist({ timeout: 3000 });
  const dropped = await pointOf(browser, node("approval"));
  assert.ok(Math.abs(dropped.x - target.x) < 60 && Math.abs(dropped.y - target.y) < 60, `dropped at ${JSON.stringify(dropped)}, aimed at ${JSON.stringify(target)}`);
});

test("a connection released anywhere over a node connects to its input; a refused one says why next to the pointer", async () => {
  await drag(browser, await pointOf(browser, `${node("start")} .react-flow__handle[data-handleid="output"]`), await pointOf(browser, `${node("agent")} .wf-summary`));
  await browser.waitUntil(async () => (await graph(browser)).edges.includes("start->agent"), { timeout: 3000, timeoutMsg: "releasing over the node's body did not connect" });
  // Into the start node: refused, with the reason shown.
  await drag(browser, await pointOf(browser, `${node("agent")} .react-flow__handle[data-handleid="output"]`), await pointOf(browser, `${node("start")} .wf-title`));
  const hint = await browser.$('[data-testid="connect-problem"]');
  await hint.waitForDisplayed({ timeout: 3000 });
  assert.match(await hint.getText(), /nothing can lead into a start node/);
  assert.ok(!(await graph(browser)).edges.includes("agent->start"));
});

test("a connection dropped on empty canvas offers the node palette there and adds the chosen node already connected", async () => {
  const from = await pointOf(browser, `${node("agent")} .react-flow__handle[data-handleid="output"]`);
  await drag(browser, from, await emptyCanvasNear(browser, from));
  const menu = await browser.$('[data-testid="canvas-menu"]');
  await menu.waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="menu-add-if"]'));
  await browser.waitUntil(async () => (await graph(browser)).edges.includes("agent->check"), { timeout: 3000, timeoutMsg: "the picked node is not connected" });
  assert.deepEqual((await graph(browser)).selectedNodes, ["check"]);
});

test("the right-click menu offers what applies: duplicate and delete on a node, add here on the empty canvas", async () => {
  await rightClick(browser, await pointOf(browser, `${node("check")} .wf-title`));
  await (await browser.$('[data-testid="menu-duplicate"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="menu-duplicate"]'));
  await browser.$(node("check_2")).waitForExist({ timeout: 3000 });
  await chord(browser, [KEY.shift, "1"]); // the copy may sit outside the view: fit
  await frames(browser);
  await rightClick(browser, await pointOf(browser, `${node("check_2")} .wf-title`));
  await click(browser, await pointOf(browser, '[data-testid="menu-delete"]'));
  await browser.waitUntil(async () => !(await graph(browser)).nodes.includes("check_2"), { timeout: 3000, timeoutMsg: "Delete in the menu did not remove the node" });
  // On empty canvas: add a node right there.
  const empty = await blankPane();
  const before = (await graph(browser)).nodes.length;
  await rightClick(browser, empty);
  await (await browser.$('[data-testid="menu-add-agent"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="menu-add-agent"]'));
  await browser.waitUntil(async () => (await graph(browser)).nodes.length === before + 1, { timeout: 3000, timeoutMsg: "Add agent here added no node" });
});

test("the run list follows a run, one row per execution, and a click on a row selects its node", async () => {
  const example = join(root, "examples/review-fix-loop.yaml");
  await openFile(browser, example);
  assert.match(await (await browser.$('[data-testid="answers-path"]')).getText(), /review-fix-loop\.script\.yaml/, "the answers file beside the workflow is offered");
  await chord(browser, [KEY.shift, "1"]); // the whole loop in view, to watch it
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "done", "succeeded");
  const rows = await browser.execute(() => [...document.querySelectorAll('[data-testid="run-list"] tbody tr')].map((r) => r.getAttribute("data-testid")));
  assert.ok(rows.length >= 6, `rows: ${rows}`);
  assert.equal(new Set(rows).size, rows.length, "one row per execution");
  assert.ok(rows.includes("run-row-review-3"), "each iteration of the loop has its row");
  await click(browser, await pointOf(browser, '[data-testid="run-row-review-2"]'));
  await browser.waitUntil(async () => (await graph(browser)).selectedNodes.join() === "review", { timeout: 3000, timeoutMsg: "clicking a row did not select its node" });
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  await (await browser.$('[data-testid="run-details"]')).waitForDisplayed({ timeout: 3000 });
  // Opening another workflow with no answers file beside it runs it on the model, and the toolbar says so.
  await openWorkflow("no-script.yaml", "switchyard: 1\nname: Alone\nnodes:\n  - {id: start, type: start}\n");
  assert.equal(await (await browser.$('[data-testid="answers-path"]')).isExisting(), false, "no answers file is in use");
  assert.ok(await (await browser.$('[data-testid="run-model"]')).isDisplayed(), "the run source is the model");
});

test("Settings refuses a duplicate provider id with the reason on the field", async () => {
  await click(browser, await pointOf(browser, '[data-testid="settings-button"]'));
  await (await browser.$('[data-testid="settings"]')).waitForDisplayed({ timeout: 3000 });
  for (let i = 0; i < 2; i++) {
    await click(browser, await pointOf(browser, '[data-testid="add-provider"]'));
    await click(browser, await pointOf(browser, `[data-testid="provider-${i}-id"]`));
    await type(browser, "openai");
  }
  await click(browser, await pointOf(browser, '[data-testid="settings-save"]'));
  const problem = await browser.$('[data-testid="problem-providers[1].id"]');
  await problem.waitForDisplayed({ timeout: 3000 });
  assert.match(await problem.getText(), /openai/);
  assert.ok(await (await browser.$('[data-testid="settings"]')).isDisplayed(), "the dialog stays open");
  await chord(browser, [KEY.escape]);
});

test("a workflow with code asks before its first run, shows the code, runs it once allowed, and does not ask again", async () => {
  const file = join(work, "code-steps.yaml");
  writeFileSync(join(work, "code-steps.script.yaml"), "nodes: {}\n"); // answers nothing: the code itself runs
  await openWorkflow(
    "code-steps.yaml",
    `switchyard: 1
name: Code steps
nodes:
  - {id: start, type: start, position: {x: 0, y: 100}}
  - {id: calc, type: script, language: python, code: "return {'n': 6 * 7}", position: {x: 320, y: 100}}
  - {id: shell, type: script, language: bash, code: "echo '{\\"ok\\": true}'", position: {x: 640, y: 100}}
edges:
  - {from: start, to: calc}
  - {from: calc, to: shell}
`,
  );
  assert.ok(file);
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  const dialog = await browser.$('[data-testid="consent-dialog"]');
  await dialog.waitForDisplayed({ timeout: 5000 });
  const listed = await (await browser.$('[data-testid="consent-steps"]')).getText();
  await browser.saveScreenshot(docsShotPath("code-consent"));
  assert.match(listed, /calc[\s\S]*python[\s\S]*6 \* 7/);
  assert.match(listed, /shell[\s\S]*bash/);
  await click(browser, await pointOf(browser, '[data-testid="consent-cancel"]'));
  await dialog.waitForDisplayed({ reverse: true, timeout: 3000 });
  assert.notEqual(await browser.$(node("calc")).getAttribute("data-status"), "succeeded", "declined: nothing ran");

  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await dialog.waitForDisplayed({ timeout: 5000 });
  await click(browser, await pointOf(browser, '[data-testid="consent-allow"]'));
  await waitStatus(browser, "shell", "succeeded");
  assert.equal(await browser.$(node("calc")).getAttribute("data-status"), "succeeded");
  await browser.waitUntil(async () => /42/.test(await browser.$(node("calc")).getProperty("textContent")), { timeout: 3000, timeoutMsg: "calc's card does not show its output" });

  // Trusted now: the next run starts at once.
  await (await browser.$('[data-testid="run"]')).waitForClickable({ timeout: 10000 });
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await browser.waitUntil(async () => (await browser.$$('[data-testid="run-list"] tbody tr')).length > 0, { timeout: 5000 });
  assert.equal(await dialog.isExisting(), false, "a trusted version is not asked about again");
  await waitStatus(browser, "shell", "succeeded");
});

test("an MCP server added in Settings is tested, and an agent's scripted tool call reaches it with its result in Last run", async () => {
  const python = process.env.SWITCHYARD_TEST_MCP_PYTHON;
  assert.ok(python, "SWITCHYARD_TEST_MCP_PYTHON must name a python with the mcp package (npm test sets it)");
  const server = join(root, "crates/engine/tests/mcp/server.py");
  await click(browser, await pointOf(browser, '[data-testid="settings-button"]'));
  await (await browser.$('[data-testid="settings"]')).waitForDisplayed({ timeout: 3000 });
  await click(browser, await pointOf(browser, '[data-testid="mcp-servers"]'));
  await chord(browser, [KEY.control, "a"]);
  await type(browser, JSON.stringify({ test: { command: python, args: [server, "stdio"] } }));
  await click(browser, await pointOf(browser, '[data-testid="mcp-test"]'));
  const tested = await browser.$('[data-testid="mcp-test-results"]');
  await tested.waitForExist({ timeout: 5000 });
  await browser.waitUntil(async () => /test__add/.test(await tested.getProperty("textContent")), { timeout: 20000, timeoutMsg: `Test did not list the server's tools: ${await tested.getProperty("textContent")} (typed: ${await (await browser.$('[data-testid="mcp-servers"]')).getValue()})` });
  await browser.saveScreenshot(docsShotPath("mcp-settings"));
  await click(browser, await pointOf(browser, '[data-testid="settings-save"]'));
  await (await browser.$('[data-testid="settings"]')).waitForDisplayed({ reverse: true, timeout: 3000 });

  writeFileSync(join(work, "mcp-agent.script.yaml"), "nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/add, input: {a: 20, b: 22}}\n");
  await openWorkflow(
    "mcp-agent.yaml",
    "switchyard: 1\nname: MCP agent\nnodes:\n  - {id: start, type: start, position: {x: 0, y: 100}}\n  - {id: helper, type: agent, user_prompt: Add, position: {x: 320, y: 100}}\nedges:\n  - {from: start, to: helper}\n",
  );
  // Pick the tool on the agent from what the server lists.
  await click(browser, await pointOf(browser, node("helper")));
  await click(browser, await pointOf(browser, '[data-testid="tab-settings"]'));
  const listTools = await browser.$('[data-testid="mcp-list-tools"]');
  await listTools.waitForExist({ timeout: 3000 });
  await listTools.scrollIntoView({ block: "center" }); // the inspector scrolls, as a person would with the wheel
  await click(browser, await pointOf(browser, '[data-testid="mcp-list-tools"]'));
  const addTool = await browser.$('[data-testid="mcp-tool-test-add"]');
  await addTool.waitForExist({ timeout: 20000 });
  await click(browser, await pointOf(browser, '[data-testid="mcp-tool-test-add"]'));
  await browser.waitUntil(async () => await addTool.isSelected(), { timeout: 3000, timeoutMsg: "the tool was not picked" });
  await browser.saveScreenshot(docsShotPath("mcp-inspector"));
  await click(browser, await pointOf(browser, '[data-testid="run"]'));
  await waitStatus(browser, "helper", "succeeded");
  await click(browser, await pointOf(browser, node("helper")));
  await (await browser.$('[data-testid="tab-last-run"]')).scrollIntoView({ block: "center" }); // back up the inspector
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  const details = await browser.$('[data-testid="run-details"]');
  await details.waitForDisplayed({ timeout: 3000 });
  await browser.waitUntil(async () => /test\/add\(\{"a":20,"b":22\}\) → \{"result":42\}/.test(await details.getProperty("textContent")), { timeout: 3000, timeoutMsg: `the tool call is not in Last run: ${await details.getProperty("textContent")}` });
});

test("a destructive tool call waits in the approval dialog with its arguments: rejected it never runs, approved it does", async () => {
  // The server `test` is in the settings from the test above.
  const target = join(work, "note.txt");
  writeFileSync(
    join(work, "mcp-approval.script.yaml"),
    `nodes:\n  helper:\n    text: done\n    tool_calls:\n      - {tool: test/add, input: {a: 1, b: 2}}\n      - {tool: test/write_file, input: {path: ${JSON.stringify(target)}, text: hello}}\n`,
  );
  await openWorkflow(
    "mcp-approval.yaml",
    "switchyard: 1\nname: MCP approval\nnodes:\n  - {id: start, type: start, position: {x: 0, y: 100}}\n  - {id: helper, type: agent, user_prompt: Write, tools: {mcp: [test], approval: destructive}, position: {x: 320, y: 100}}\nedges:\n  - {from: start, to: helper}\n",
  );
  const dialog = await browser.$('[data-testid="approval-dialog"]');
  for (const decision of ["reject", "approve"]) {
    await click(browser, await pointOf(browser, '[data-testid="run"]'));
    await dialog.waitForDisplayed({ timeout: 20000 });
    assert.equal(await (await browser.$('[data-testid="approval-tool"]')).getText(), "test/write_file");
    assert.match(await (await browser.$('[data-testid="approval-previous"]')).getText(), /"text": "hello"/);
    await waitStatus(browser, "helper", "waiting");
    assert.equal(existsSync(target), false, "the call waits: nothing was written");
    if (decision === "reject") {
      await browser.saveScreenshot(docsShotPath("tool-approval"));
      await click(browser, await pointOf(browser, '[data-testid="approval-note"]'));
      await type(browser, "not now");
    }
    await click(browser, await pointOf(browser, `[data-testid="approval-${decision}"]`));
    await dialog.waitForExist({ reverse: true, timeout: 5000 });
    await waitStatus(browser, "helper", "succeeded");
  }
  assert.equal(readFileSync(target, "utf8"), "hello", "approved, the call ran");
  await click(browser, await pointOf(browser, node("helper")));
  await (await browser.$('[data-testid="tab-last-run"]')).scrollIntoView({ block: "center" });
  await click(browser, await pointOf(browser, '[data-testid="tab-last-run"]'));
  const details = await browser.$('[data-testid="run-details"]');
  await details.waitForDisplayed({ timeout: 3000 });
  await browser.waitUntil(async () => /test\/write_file.*→ \{"result":"written"\}/.test(await details.getProperty("textContent")), { timeout: 3000, timeoutMsg: `the approved call is not in Last run: ${await details.getProperty("textContent")}` });
});
