// Settings and preferences: the app's Settings (providers, MCP servers, limits) and the model a node naming none
// runs on, which they lead to; the theme and the recent files, kept between sessions. Knows nothing of the open
// workflow or of runs.
import { create } from "zustand";
import type { DefaultModel_Serialize } from "../bindings";
import type { Settings } from "../types";
import { commands } from "../api";
import { errorText, useMessages } from "./messages";

export type { CommandError, SettingsProblem } from "../bindings";
import type { CommandError } from "../bindings";

export type Theme = "light" | "dark";

const MAX_RECENT = 8;
const DEFAULT_SETTINGS = { providers: [], limits: { timeout_ms: 120000, retries: 2, max_tool_turns: 8 } } as unknown as Settings;

type PrefsState = {
  settings: Settings | null;
  /** Why the settings file could not be read (the app then runs on defaults). */
  settingsProblem: CommandError | null;
  /** The model a node naming none runs on, as found at start-up and after Settings change. */
  defaultModel: DefaultModel_Serialize | null;
  theme: Theme;
  /** Files opened, newest first. */
  recentFiles: string[];
  /** Your name: who the decisions and cancellations made in this app name (the OS user's when none is kept). */
  yourName: string;
  /** Reads the theme and recent files kept by the last session. */
  loadPrefs: () => Promise<void>;
  /** Reads Settings (on defaults, with a message, when they cannot be read) and finds the default model. */
  loadSettings: () => Promise<void>;
  /** Finds the model runs use by default: Settings' default, else a model server on this machine. */
  discoverModel: () => Promise<void>;
  setSettings: (settings: Settings) => void;
  setTheme: (theme: Theme) => void;
  /** Keeps your name; the refusal when it is not one (too long, a line break). */
  setYourName: (name: string) => Promise<CommandError | null>;
  /** Puts a file first among the recent files. */
  remember: (path: string) => void;
};

export const usePrefs = create<PrefsState>((set, get) => {
  /** Preferences are a convenience: failing to keep them never interrupts the person. */
  const savePrefs = () => {
    const { recentFiles, theme, yourName } = get();
    Promise.resolve()
      .then(() => commands.savePrefs({ recentFiles, theme, yourName: yourName || null }))
      .catch(() => undefined);
  };

  return {
    settings: null,
    settingsProblem: null,
    defaultModel: null,
    theme: "light",
    recentFiles: [],
    yourName: "",

    loadPrefs: async () => {
      try {
        const prefs = await commands.loadPrefs();
        set({ recentFiles: Array.isArray(prefs?.recentFiles) ? prefs.recentFiles : [], theme: prefs?.theme === "dark" ? "dark" : "light", yourName: typeof prefs?.yourName === "string" ? prefs.yourName : "" });
      } catch {
        /* defaults */
      }
    },

    loadSettings: async () => {
      const s = await commands.getSettings().catch((e) => ({ settings: null, problem: { code: "SETTINGS_UNREADABLE", message: errorText(e), problems: [] } }));
      set({ settings: s?.settings ?? DEFAULT_SETTINGS, settingsProblem: (s?.problem as CommandError | null) ?? null });
      if (s?.problem) useMessages.getState().error(`Settings: ${s.problem.message} — the app uses defaults until Settings are saved again.`);
      await get().discoverModel();
    },

    discoverModel: async () => {
      const found = await Promise.resolve()
        .then(() => commands.defaultModel())
        .catch((e) => ({ status: "error" as const, error: { message: errorText(e) } }));
      set({ defaultModel: found.status === "ok" ? found.data : { model: null, source: "none", detail: (found.error as { message: string }).message } });
    },

    setSettings: (settings) => {
      set({ settings, settingsProblem: null });
      void get().discoverModel();
    },

    setTheme: (theme) => {
      set({ theme });
      savePrefs();
    },

    setYourName: async (name) => {
      const { recentFiles, theme } = get();
      const r = await commands.savePrefs({ recentFiles, theme, yourName: name.trim() || null }).catch((e) => ({ status: "error" as const, error: { code: "PREFS_UNWRITABLE", message: errorText(e), problems: null } }));
      if (r.status === "error") return r.error as CommandError;
      // A name left empty is the OS user's again, as the next start reads it.
      const kept = name.trim() ? name.trim() : ((await commands.loadPrefs().catch(() => null))?.yourName ?? "");
      set({ yourName: kept });
      return null;
    },

    remember: (path) => {
      set((s) => ({ recentFiles: [path, ...s.recentFiles.filter((p) => p !== path)].slice(0, MAX_RECENT) }));
      savePrefs();
    },
  };
});
