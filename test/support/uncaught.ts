// Uncaught exceptions raised while an action runs, counted instead of ending the test process
// (a server process ends on one).
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The uncaught exceptions (`name: message`) raised during `action` and the `afterMs` after it. */
export async function countUncaughtWhile(action: () => Promise<void>, afterMs = 300): Promise<string[]> {
  const saved = process.listeners("uncaughtException");
  process.removeAllListeners("uncaughtException");
  const caught: string[] = [];
  process.on("uncaughtException", (error) => caught.push(`${error.name}: ${error.message}`));
  try {
    await action();
    await settle(afterMs);
  } finally {
    process.removeAllListeners("uncaughtException");
    for (const listener of saved) process.on("uncaughtException", listener);
  }
  return caught;
}
