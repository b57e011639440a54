// The example app (npm run example:app): React over @dossier/sdk, served by Vite on
// http://127.0.0.1:5173. The SDK is taken from this repository's sources.
import { fileURLToPath } from "node:url";
import react from "@vitejs/plugin-react";
import { defineConfig } from "vite";

/** The header every host of the app sends with it. */
const FRAMING = { "content-security-policy": "frame-ancestors 'none'" };

const here = (file: string) => fileURLToPath(new URL(file, import.meta.url));

export default defineConfig({
  root: here("."),
  plugins: [react()],
  resolve: {
    alias: [
      { find: /^@dossier\/sdk\/react$/, replacement: here("../../sdk/react.ts") },
      { find: /^@dossier\/sdk$/, replacement: here("../../sdk/index.ts") },
    ],
  },
  // No other site's page may frame the app (a framed page could be clicked through unseen): serve
  // it with this header wherever it is hosted.
  server: { host: "127.0.0.1", port: 5173, strictPort: true, headers: FRAMING },
  preview: { host: "127.0.0.1", port: 5173, strictPort: true, headers: FRAMING },
  build: { outDir: here("dist"), emptyOutDir: true },
});
