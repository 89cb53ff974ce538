// The browser headless tests and benchmarks drive: $CHROMIUM, else Debian's chromium, installed here (apt, with sudo
// when not root) when it is missing. Progress goes to stderr, so callers' stdout stays theirs.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

export function chromiumPath() {
  const path = process.env.CHROMIUM ?? "/usr/bin/chromium";
  if (existsSync(path)) return path;
  if (process.env.CHROMIUM) throw new Error(`CHROMIUM=${path} does not exist`);
  console.error("/usr/bin/chromium is missing; installing the chromium package");
  const asRoot = (cmd) => (process.getuid?.() === 0 ? ["env", ...cmd] : ["sudo", "env", ...cmd]);
  for (const cmd of [["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"]]) {
    const [bin, ...args] = asRoot(["DEBIAN_FRONTEND=noninteractive", ...cmd]);
    execFileSync(bin, args, { stdio: ["ignore", 2, 2] });
  }
  if (!existsSync(path)) throw new Error(`installing chromium did not provide ${path}`);
  return path;
}

/** Flags for a headless Chromium on a CI machine. */
export const HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"];
