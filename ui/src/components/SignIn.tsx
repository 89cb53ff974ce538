// In a browser against `switchyard serve`: the token the server asks for, asked once and kept in this browser. Shown
// before the app when there is none, and over it when the server refuses the one kept (revoked).
import { useEffect, useState, type ReactNode } from "react";
import { keepToken, onSignInNeeded, storedToken } from "../transport";

export function SignInGate({ children }: { children: ReactNode }) {
  // null: signed in; "": no token yet; else why the server refused the one kept. undefined: checking the kept one.
  const [why, setWhy] = useState<string | null | undefined>(storedToken() ? undefined : "");
  const [started, setStarted] = useState(false);
  useEffect(() => onSignInNeeded((message) => setWhy(message)), []);
  useEffect(() => {
    // The kept token is checked before the app starts: one revoked since shows this form, not the app's errors.
    if (why !== undefined) return;
    void fetch("/api/runs?limit=1", { headers: { authorization: `Bearer ${storedToken()}` } })
      .then((r) => setWhy(r.status === 401 ? "The server no longer knows the token this browser kept: it was revoked. Paste a new one." : null))
      .catch(() => setWhy(null));
  }, [why]);
  useEffect(() => {
    if (why === null) setStarted(true);
  }, [why]);
  return (
    <>
      {started && children}
      {why != null && <SignIn why={why} onSignedIn={() => (started ? location.reload() : setWhy(null))} />}
    </>
  );
}

function SignIn({ why, onSignedIn }: { why: string; onSignedIn: () => void }) {
  const [token, setToken] = useState("");
  const [problem, setProblem] = useState(why);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    const r = await fetch("/api/runs?limit=1", { headers: { authorization: `Bearer ${token.trim()}` } }).catch(() => null);
    setBusy(false);
    if (!r) return setProblem("The server does not answer: is switchyard serve running?");
    if (r.status === 401) return setProblem("The server does not know this token: make one with switchyard token create NAME on the server.");
    if (!r.ok) return setProblem(`The server could not check the token now (it answered ${r.status}): try again in a moment.`);
    keepToken(token.trim());
    onSignedIn();
  };
  return (
    <div className="sign-in" role="dialog" aria-labelledby="sign-in-title" data-testid="sign-in">
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <h1 id="sign-in-title">Sign in to this Switchyard server</h1>
        <p>
          Paste a token. Whoever runs the server makes one with <code>switchyard token create YOUR-NAME</code>.
        </p>
        <input type="password" autoFocus aria-label="Token" placeholder="Token" value={token} onChange={(e) => setToken(e.target.value)} data-testid="sign-in-token" />
        {problem && <p className="error" data-testid="sign-in-problem">{problem}</p>}
        <button type="submit" className="primary" disabled={!token.trim() || busy}>
          Sign in
        </button>
      </form>
    </div>
  );
}
