// How long something took, written the same way everywhere it is shown (as `switchyard runs` writes it): milliseconds
// under a second, tenths of a second under a minute, then minutes and seconds.
export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms)) return "";
  const whole = Math.max(0, Math.round(ms));
  if (whole < 1000) return `${whole} ms`;
  if (whole < 60000) return `${(whole / 1000).toFixed(1)} s`;
  const seconds = Math.floor(whole / 1000);
  return `${Math.floor(seconds / 60)}m${String(seconds % 60).padStart(2, "0")}s`;
}
