import { afterEach } from "vitest";
import { cleanup } from "@testing-library/react";
import { clearMocks } from "@tauri-apps/api/mocks";

// The order matters (see ../shared/notes/desktop-toolchain.md): unmount, let pending IPC settle, then clear mocks.
afterEach(async () => {
  cleanup();
  await new Promise((r) => setTimeout(r, 0));
  clearMocks();
});
