/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The React front end lives in ui/; the built files go to dist/, which the Tauri shell embeds.
export default defineConfig({
  root: "ui",
  plugins: [react()],
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: {
    outDir: "../dist",
    emptyOutDir: true,
    target: "es2022",
    rollupOptions: { input: { main: "ui/index.html", bench: "ui/bench.html", benchBare: "ui/bench-bare.html" } },
  },
  test: {
    root: ".",
    include: ["ui/src/**/*.test.{ts,tsx}"],
    environment: "jsdom",
    setupFiles: ["ui/src/test-setup.ts"],
  },
});
