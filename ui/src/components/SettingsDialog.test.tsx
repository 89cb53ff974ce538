import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Settings } from "../types";
import { usePrefs } from "../store/prefs";
import { implausibleLimits, SettingsDialog } from "./SettingsDialog";

const initial = { providers: [], limits: { connect_timeout_ms: 5000, timeout_ms: 300000, read_timeout_ms: 60000, retries: 3, backoff_ms: 500, max_tool_turns: 8 } } as unknown as Settings;

describe("settings", () => {
  it("saves providers without blank fields, naming key variables only", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") saved.push((args as { settings: unknown }).settings);
      return null;
    });
    usePrefs.setState({ settings: initial, settingsProblem: null });
    let closed = false;
    render(<SettingsDialog onClose={() => (closed = true)} />);
    fireEvent.click(screen.getByText("+ provider"));
    const [id, , keyVar, model] = screen.getAllByRole("textbox");
    fireEvent.change(id, { target: { value: " openai " } });
    fireEvent.change(keyVar, { target: { value: "OPENAI_API_KEY" } });
    fireEvent.change(model, { target: { value: "gpt-4.1-mini" } });
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(closed).toBe(true));
    expect(saved[0]).toMatchObject({ providers: [{ id: "openai", kind: "openai", api_key_env: "OPENAI_API_KEY", default_model: "gpt-4.1-mini" }] });
    expect((saved[0] as Settings).providers[0]).not.toHaveProperty("base_url", "");
    expect(usePrefs.getState().settings?.providers[0].id).toBe("openai");
  });

  it("shows each problem the engine found on its field and stays open", async () => {
    mockIPC(() => {
      throw { code: "INVALID_SETTINGS", message: "2 problems", problems: [{ field: "providers[1].id", code: "DUPLICATE_PROVIDER_ID", message: "`openai` is used twice" }, { field: "providers[0].base_url", code: "INVALID_URL", message: "not an http(s) URL" }] };
    });
    usePrefs.setState({ settings: { ...initial, providers: [{ id: "openai", kind: "openai", base_url: "not a url" }, { id: "openai", kind: "openai" }] } as unknown as Settings });
    let closed = false;
    render(<SettingsDialog onClose={() => (closed = true)} />);
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(screen.getByTestId("problem-providers[1].id").textContent).toMatch(/used twice/));
    expect(screen.getByTestId("problem-providers[0].base_url").textContent).toMatch(/URL/);
    expect(screen.getByTestId("provider-1-id").getAttribute("aria-invalid")).toBe("true");
    expect(screen.getByTestId("settings-error").textContent).toMatch(/Not saved: 2 problems/);
    expect(closed).toBe(false);
  });

  it("shows your name as kept, saves a new one with the window's preferences, and marks a refused one, saving nothing", async () => {
    const prefs: unknown[] = [];
    const settings: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_prefs") {
        const p = (args as { prefs: { yourName: string | null } }).prefs;
        if (p.yourName?.includes("\t")) throw { code: "INVALID_YOUR_NAME", message: "your name: no control characters (tabs, line breaks)", problems: null };
        prefs.push(p);
      }
      if (cmd === "save_settings") settings.push(args);
      return null;
    });
    usePrefs.setState({ settings: initial, settingsProblem: null, yourName: "alice" });
    let closed = false;
    const { unmount } = render(<SettingsDialog onClose={() => (closed = true)} />);
    const field = screen.getByTestId("settings-your-name") as HTMLInputElement;
    expect(field.value).toBe("alice");
    fireEvent.change(field, { target: { value: "a\tb" } });
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(screen.getByTestId("problem-your-name").textContent).toMatch(/line breaks/));
    expect(field.getAttribute("aria-invalid")).toBe("true");
    expect([prefs, settings, closed]).toEqual([[], [], false]);
    fireEvent.change(field, { target: { value: " Alice Martin " } });
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(closed).toBe(true));
    expect(prefs).toMatchObject([{ yourName: "Alice Martin" }]);
    expect(usePrefs.getState().yourName).toBe("Alice Martin");
    expect(settings).toHaveLength(1);
    unmount();
  });

  it("says why the settings file could not be read, and still lets the person fix it", () => {
    usePrefs.setState({ settings: initial, settingsProblem: { code: "SETTINGS_UNREADABLE", message: "/home/u/.config/switchyard/settings.yaml line 3: duplicate provider id", problems: [] } });
    render(<SettingsDialog onClose={() => {}} />);
    expect(screen.getByTestId("settings-load-problem").textContent).toMatch(/settings.yaml line 3/);
    expect((screen.getByTestId("settings-save") as HTMLButtonElement).disabled).toBe(false);
  });
});

describe("limits", () => {
  it("warns of limits that are allowed but almost certainly not meant, and stays quiet on usual ones", () => {
    expect(implausibleLimits({ timeout_ms: 120000, retries: 2, max_tool_turns: 8 })).toEqual([]);
    const warned = implausibleLimits({ timeout_ms: 5, retries: 999999, max_tool_turns: 8 });
    expect(warned).toHaveLength(2);
    expect(warned[0]).toMatch(/5 ms/);
    expect(warned[1]).toMatch(/999999 retries/);
  });
});
