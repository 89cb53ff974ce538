import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import "@xyflow/react/dist/style.css";
import "./styles.css";
import { App } from "./App";
import { SignInGate } from "./components/SignIn";
import { installServerTransport, tokenFromAddress } from "./transport";

// Tauri puts its IPC in the page before any script runs; without it, the page was served by `switchyard serve`.
const desktop = "__TAURI_INTERNALS__" in window;

// Served by `switchyard serve`, the app reaches the server over HTTP; in the desktop app, through Tauri's IPC.
if (!desktop) {
  tokenFromAddress();
  installServerTransport();
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    {desktop ? <App /> : <SignInGate><App /></SignInGate>}
  </StrictMode>,
);
