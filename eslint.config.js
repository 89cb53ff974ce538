import js from "@eslint/js";
import tseslint from "typescript-eslint";
import reactHooks from "eslint-plugin-react-hooks";

export default tseslint.config(
  { ignores: ["dist/", "target/", "node_modules/", "ui/src/bindings.ts", "src-tauri/"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["ui/src/**/*.{ts,tsx}"],
    plugins: { "react-hooks": reactHooks },
    rules: {
      ...reactHooks.configs.recommended.rules,
      "@typescript-eslint/no-unused-expressions": ["error", { allowShortCircuit: true, allowTernary: true }],
    },
  },
  {
    files: ["bench/**/*.mjs", "e2e/**/*.mjs", "scripts/**/*.mjs", "crates/run/src/code/*.mjs"],
    languageOptions: { globals: { window: "readonly", document: "readonly", performance: "readonly", requestAnimationFrame: "readonly", WheelEvent: "readonly", process: "readonly", console: "readonly", URL: "readonly", DOMMatrix: "readonly", DOMPoint: "readonly", getComputedStyle: "readonly", CSS: "readonly", fetch: "readonly", setTimeout: "readonly" } },
  },
);
