// GraphiQL shows one result per operation, each update of a subscription replacing the one
// before: a `traceUpdates` subscription would show its last frame only (TRACE_ENDED). This
// browser script, run before GraphiQL's own, gives GraphiQL's graphql-ws client a WebSocket that
// hands it every `traceUpdates` frame so far instead: the result pane shows
// `{ "data": { "traceUpdates": [first, …, latest] }, "extensions": { "frames": n } }`, oldest first.
// GraphiQL has no hook for a subscription's results (its client takes the WebSocket class when
// its script loads, and a custom fetcher would replace its whole transport), hence the socket.
// Other subscriptions, and the server, see nothing of it.

/** The most frames one result shows: a trace longer than this shows its latest ones. */
export const GRAPHIQL_TRACE_FRAMES = 1_000;

export const FRAMES_SCRIPT = `
(() => {
  const NativeWebSocket = window.WebSocket;
  const LIMIT = ${GRAPHIQL_TRACE_FRAMES};
  class AccumulatingWebSocket extends NativeWebSocket {
    #frames = new Map();
    set onmessage(listener) {
      super.onmessage = typeof listener === "function" ? (event) => listener(this.#accumulated(event)) : listener;
    }
    get onmessage() {
      return super.onmessage;
    }
    /** A "next" message of traceUpdates carries every frame of its subscription so far. */
    #accumulated(event) {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch {
        return event;
      }
      if (message.type === "complete" || message.type === "error") this.#frames.delete(message.id);
      const data = message.type === "next" && message.payload && message.payload.data;
      if (!data || !Object.hasOwn(data, "traceUpdates") || Object.keys(data).length !== 1) return event;
      const frames = this.#frames.get(message.id) || { list: [], count: 0 };
      this.#frames.set(message.id, frames);
      frames.list.push(data.traceUpdates);
      frames.count += 1;
      if (frames.list.length > LIMIT) frames.list.shift();
      const extensions = { ...message.payload.extensions, frames: frames.count };
      if (frames.count > frames.list.length) extensions.framesShown = "the latest " + frames.list.length;
      const payload = { ...message.payload, data: { traceUpdates: frames.list.slice() }, extensions };
      return new MessageEvent("message", { data: JSON.stringify({ ...message, payload }) });
    }
  }
  window.WebSocket = AccumulatingWebSocket;
})();
`;
