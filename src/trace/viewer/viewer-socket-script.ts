// The trace viewer's browser script, second part: following the trace over graphql-ws (spoken
// directly, no client library), resuming with afterSeq after a dropped connection.
export const SOCKET_SCRIPT = `
// ---- graphql-transport-ws, spoken directly --------------------------------------------------
let socket = null;
let attempt = 0;

function setConnection(text) {
  $("connection").textContent = text;
  document.body.dataset.connection = text;
}

/** Closes the page's socket, if any, without reconnecting. */
function closeSocket() {
  if (!socket) return;
  socket.onclose = null;
  socket.onmessage = null;
  socket.close(1000);
  socket = null;
}

function subscribe() {
  const gen = generation;
  if (state.ended) return finish();
  setConnection(attempt === 0 ? "connecting" : "reconnecting");
  const ws = new WebSocket(wsEndpoint, "graphql-transport-ws");
  socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: "connection_init", payload: { headers: authHeaders() } }));
  ws.onmessage = async (message) => {
    if (gen !== generation) return;
    const data = JSON.parse(message.data);
    if (data.type === "ping") return ws.send(JSON.stringify({ type: "pong" }));
    if (typeof data.id === "string" && data.id.startsWith("output-")) return applyOutput(data);
    if (data.type === "connection_ack") {
      attempt = 0;
      setConnection("live");
      const variables = { runId, afterSeq: state.lastSeq > 0 ? String(state.lastSeq) : null };
      ws.send(JSON.stringify({ id: "trace", type: "subscribe", payload: { query: UPDATES, variables } }));
      return subscribeOutput(ws);
    }
    if (data.type === "next") {
      if (data.payload.errors && data.payload.errors.length) return showMessage(data.payload.errors.map((e) => e.message).join("; "));
      const outcome = applyUpdate(data.payload.data.traceUpdates);
      if (outcome === "resync") {
        ws.onclose = null;
        ws.close(1000);
        await retrying(loadSnapshot);
        if (gen !== generation) return;
        return subscribe();
      }
      if (outcome === "ended") {
        ws.onclose = null;
        ws.close(1000);
        return finish();
      }
      return;
    }
    if (data.type === "error") {
      showMessage(data.payload.map((e) => e.message).join("; "));
      ws.onclose = null;
      ws.close(1000);
      return setConnection("refused");
    }
    if (data.type === "complete") {
      // The stream ended without TRACE_ENDED in view (e.g. we resumed after it): settle from the run.
      ws.onclose = null;
      ws.close(1000);
      await retrying(refreshRun);
      if (gen !== generation) return;
      if (state.run && TERMINAL.includes(state.run.status)) return finish();
      return subscribe();
    }
  };
  ws.onclose = (event) => {
    if (gen !== generation) return;
    if (event.code === 4401 || event.code === 4403) return refuse(event.reason || "The API key or access token was refused.");
    attempt += 1;
    setConnection("reconnecting");
    setTimeout(() => gen === generation && subscribe(), Math.min(250 * 2 ** (attempt - 1), 5000));
  };
}

async function finish() {
  closeSocket();
  setConnection("ended");
  await retrying(refreshRun);
  scheduleRender();
}

async function retrying(task) {
  const gen = generation;
  for (let n = 0; ; n += 1) {
    if (gen !== generation) throw stale();
    try {
      return await task();
    } catch (error) {
      if (gen !== generation) throw stale();
      if (error.final || (error.status && error.status < 500)) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** n, 5000)));
    }
  }
}
`;
