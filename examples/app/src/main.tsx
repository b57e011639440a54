import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.js";
import { connect } from "./connection.js";

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App dossier={connect()} />
  </StrictMode>,
);
