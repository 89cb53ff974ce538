import { afterEach } from "vitest";
import { cleanup } from "@testing-library/react";
import { clearMocks } from "@tauri-apps/api/mocks";

// The order matters: unmount, let pending IPC replies settle (one macrotask), then clear the mocks; cleared first, a
// late reply to an unmounted component throws into the next test.
afterEach(async () => {
  cleanup();
  await new Promise((r) => setTimeout(r, 0));
  clearMocks();
});
