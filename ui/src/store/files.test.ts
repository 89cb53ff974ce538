// Opening a file, or starting a new workflow, sets what the other stores hold for it: where runs take their answers
// from, the approvals put off, the recent files and the view.
import { beforeEach, describe, expect, it } from "vitest";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Workflow } from "../types";
import { useDialogs } from "./dialogs";
import { useDocument } from "./document";
import * as files from "./files";
import { usePrefs } from "./prefs";
import { useRunControl } from "./runControl";
import { useMessages } from "./messages";
import { useView } from "./view";

const workflow = { switchyard: 1, name: "Pets", nodes: [{ id: "start", type: "start", position: { x: 0, y: 0 } }, { id: "vet", type: "agent", position: { x: 300, y: 0 } }], edges: [{ from: "start", to: "vet" }] } as unknown as Workflow;

function engine(answersBeside: string | null) {
  const asked: string[] = [];
  mockIPC((cmd) => {
    asked.push(cmd);
    if (cmd === "open_file") return { workflow, format: "switchyard", notes: [], path: "/w/pets.yaml" };
    if (cmd === "script_beside") return answersBeside;
    return null;
  });
  return asked;
}

beforeEach(() => {
  useDocument.getState().load(workflow, null);
  useRunControl.setState({ mode: "model", answersPath: null });
  useDialogs.setState({ dismissed: ["review"], reviewing: "review", approvalNotes: { review: "check clause 4" } });
  usePrefs.setState({ recentFiles: ["/w/other.yaml"] });
});

describe("opening a file", () => {
  it("runs offline with the answers file beside it, forgets the approvals of the last document, and comes first among recent files", async () => {
    const asked = engine("/w/pets.script.yaml");
    const nonce = useView.getState().request.nonce;
    await files.open("/w/pets.yaml");
    expect(useDocument.getState().path).toBe("/w/pets.yaml");
    expect(useRunControl.getState()).toMatchObject({ mode: "answers", answersPath: "/w/pets.script.yaml" });
    expect(useDialogs.getState()).toMatchObject({ dismissed: [], reviewing: null, approvalNotes: {} });
    expect(usePrefs.getState().recentFiles).toEqual(["/w/pets.yaml", "/w/other.yaml"]);
    expect(asked, "and the recent files are kept").toContain("save_prefs");
    expect(useView.getState().request, "the canvas is asked to show it").toEqual({ kind: "open", nonce: nonce + 1 });
  });

  it("runs on a model when no answers file lies beside it", async () => {
    engine(null);
    useRunControl.setState({ mode: "answers", answersPath: "/w/earlier.script.yaml" });
    await files.open("/w/pets.yaml");
    expect(useRunControl.getState()).toMatchObject({ mode: "model", answersPath: null });
  });
});

describe("a new workflow", () => {
  it("runs on a model and has no approvals put off", async () => {
    engine(null);
    useRunControl.setState({ mode: "answers", answersPath: "/w/pets.script.yaml" });
    await files.newWorkflow();
    expect(useDocument.getState().workflow.name).toBe("Untitled workflow");
    expect(useRunControl.getState()).toMatchObject({ mode: "model", answersPath: null });
    expect(useDialogs.getState()).toMatchObject({ dismissed: [], reviewing: null, approvalNotes: {} });
  });
});

describe("unsaved changes before New", () => {
  it("are asked about as closing asks (Save / Don't save / Cancel): Cancel keeps them, Don't save lets them go", async () => {
    engine(null);
    useDocument.getState().updateNode("vet", { user_prompt: "check the cat" });
    const first = files.newWorkflow();
    await Promise.resolve();
    expect(useDialogs.getState().unsaved?.doing).toBe("starting a new workflow");
    useDialogs.getState().answerUnsaved("cancel");
    await first;
    expect(useDocument.getState().workflow.nodes[1].user_prompt, "Cancel kept the document").toBe("check the cat");
    const second = files.newWorkflow();
    await Promise.resolve();
    useDialogs.getState().answerUnsaved("discard");
    await second;
    expect(useDocument.getState().workflow.name).toBe("Untitled workflow");
    expect(useDialogs.getState().unsaved).toBeNull();
  });
});

describe("Save As of a workflow never saved", () => {
  function savingEngine(picked: string | null) {
    const proposed: string[] = [];
    const saved: Workflow[] = [];
    mockIPC((cmd, args) => {
      const a = args as { options?: { defaultPath?: string }; directory?: number; workflow?: Workflow };
      if (cmd === "plugin:dialog|save") {
        proposed.push(a.options?.defaultPath ?? "");
        return picked;
      }
      if (cmd === "plugin:path|resolve_directory") return "/home/ann/Documents";
      if (cmd === "save_file" && a.workflow) saved.push(a.workflow);
      return null;
    });
    return { proposed, saved };
  }

  it("proposes the person's Documents folder and a file named after the workflow, not the process's working folder", async () => {
    usePrefs.setState({ recentFiles: [] });
    const { proposed } = savingEngine(null);
    await files.saveAs();
    expect(proposed).toEqual(["/home/ann/Documents/pets.yaml"]);
  });

  it("proposes the folder of the file opened last when there is one", async () => {
    usePrefs.setState({ recentFiles: ["/w/flows/other.yaml"] });
    const { proposed } = savingEngine(null);
    await files.saveAs();
    expect(proposed).toEqual(["/w/flows/pets.yaml"]);
  });

  it("gives an Untitled workflow the name of the file it is saved as, in the file too", async () => {
    usePrefs.setState({ recentFiles: [] });
    useDocument.getState().load({ ...workflow, name: "Untitled workflow" }, null);
    const { proposed, saved } = savingEngine("/home/ann/Documents/pet-care.yaml");
    await files.saveAs();
    expect(proposed).toEqual(["/home/ann/Documents/untitled-workflow.yaml"]);
    expect(saved.map((w) => w.name)).toEqual(["pet-care"]);
    expect(useDocument.getState()).toMatchObject({ path: "/home/ann/Documents/pet-care.yaml", dirty: false });
    expect(useDocument.getState().workflow.name).toBe("pet-care");
  });

  it("keeps a name the person gave", async () => {
    const { saved } = savingEngine("/w/elsewhere.yaml");
    await files.saveAs();
    expect(saved.map((w) => w.name)).toEqual(["Pets"]);
  });
});

describe("the file the window was started with", () => {
  it("does not replace changes made on the empty canvas while it was read, and says so", async () => {
    engine("/w/pets.script.yaml");
    useDocument.getState().load({ switchyard: 1, name: "Untitled workflow", nodes: [{ id: "start", type: "start", position: { x: 0, y: 0 } }], edges: [] } as unknown as Workflow, null);
    useDocument.getState().updateNode("start", { label: "my start" } as never);
    const shown = await files.open("/w/pets.yaml", { keepEdits: true });
    expect(shown).toBe(false);
    expect(useDocument.getState().workflow.nodes.map((n) => n.id), "the edited document stays").toEqual(["start"]);
    expect(useRunControl.getState().answersPath, "and runs with no other file's answers").toBeNull();
    const said = useMessages.getState().messages.at(-1);
    expect(said).toMatchObject({ kind: "error", code: "EDITED_BEFORE_OPEN" });
    expect(said?.text).toContain("pets.yaml was not opened");
  });

  it("is shown when nothing was changed before it was read", async () => {
    engine(null);
    expect(await files.open("/w/pets.yaml", { keepEdits: true })).toBe(true);
    expect(useDocument.getState().workflow.name).toBe("Pets");
  });
});
