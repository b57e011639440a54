// Which Dossier the page talks to, and as whom. The server is fixed when the app is built:
// VITE_DOSSIER_URL (default http://127.0.0.1:4000/graphql), and it must list this page's origin in
// CORS_ORIGINS. Nothing in the address chooses it — a link with `?server=` could otherwise send the
// page's token to a server of its own. A page holds no API key: on the embedded default no key is
// needed, and otherwise your backend mints an access token (createAccessToken) the page gets as `#token=…`.
import { createClient, type DossierClient } from "@dossier/sdk";

export function serverUrl(): string {
  return import.meta.env.VITE_DOSSIER_URL || "http://127.0.0.1:4000/graphql";
}

export function connect(): DossierClient {
  const token = new URLSearchParams(location.hash.slice(1)).get("token");
  return createClient({ url: serverUrl(), headers: token ? { authorization: `Bearer ${token}` } : {} });
}

/** The run shown, kept in the address (?run=…) so that a reload shows it again. */
export function shownRun(): string | null {
  return new URLSearchParams(location.search).get("run");
}

export function showRun(runId: string | null): void {
  const url = new URL(location.href);
  if (runId) url.searchParams.set("run", runId);
  else url.searchParams.delete("run");
  history.replaceState(null, "", url);
}
