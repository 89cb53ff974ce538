import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/react";
import { mockIPC } from "@tauri-apps/api/mocks";
import type { Settings } from "../types";
import { SettingsDialog } from "./SettingsDialog";

const initial = { providers: [], limits: { connect_timeout_ms: 5000, timeout_ms: 300000, read_timeout_ms: 60000, retries: 3, backoff_ms: 500, max_tool_turns: 8 } } as unknown as Settings;

describe("settings", () => {
  it("saves providers without blank fields, naming key variables only", async () => {
    const saved: unknown[] = [];
    mockIPC((cmd, args) => {
      if (cmd === "save_settings") saved.push((args as { settings: unknown }).settings);
      return null;
    });
    const onSaved = vi.fn();
    render(<SettingsDialog initial={initial} onClose={() => {}} onSaved={onSaved} />);
    fireEvent.click(screen.getByText("+ provider"));
    const [id, , keyVar, model] = screen.getAllByRole("textbox");
    fireEvent.change(id, { target: { value: " openai " } });
    fireEvent.change(keyVar, { target: { value: "OPENAI_API_KEY" } });
    fireEvent.change(model, { target: { value: "gpt-4.1-mini" } });
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(onSaved).toHaveBeenCalled());
    expect(saved[0]).toMatchObject({ providers: [{ id: "openai", kind: "openai", api_key_env: "OPENAI_API_KEY", default_model: "gpt-4.1-mini" }] });
    expect((saved[0] as Settings).providers[0]).not.toHaveProperty("base_url", "");
  });

  it("shows why the engine refused the settings", async () => {
    mockIPC(() => {
      throw "provider `openai` is configured twice";
    });
    render(<SettingsDialog initial={initial} onClose={() => {}} onSaved={() => {}} />);
    fireEvent.click(screen.getByText("Save"));
    await waitFor(() => expect(screen.getByText(/configured twice/)).toBeTruthy());
  });
});
