// One graphql-ws subscription on a socket of its own, spoken by hand (the `ws` client, no SDK), so
// that a test can pause the socket as a client that stops reading does: acknowledged, subscribed,
// and every message after the acknowledgement kept in order.
import { once } from "node:events";
import { WebSocket } from "ws";

/** Opens the socket (added to `sockets`, for the test to close), subscribes `query` as operation "1". */
export async function subscribeRawWs<Message extends { type: string }>(
  sockets: WebSocket[],
  wsUrl: string,
  query: string,
  variables: Record<string, unknown>,
): Promise<{ socket: WebSocket; received: Message[] }> {
  const socket = new WebSocket(wsUrl, "graphql-transport-ws");
  sockets.push(socket);
  const received: Message[] = [];
  await once(socket, "open");
  const acked = new Promise<void>((resolve) =>
    socket.on("message", (data) => {
      const message = JSON.parse(String(data)) as Message;
      if (message.type === "connection_ack") resolve();
      else received.push(message);
    }),
  );
  socket.send(JSON.stringify({ type: "connection_init", payload: {} }));
  await acked;
  socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query, variables } }));
  return { socket, received };
}
