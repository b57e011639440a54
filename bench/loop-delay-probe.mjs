// Loaded into a Dossier process by a bench (NODE_OPTIONS=--import): on SIGUSR2, writes how late
// its event loop ran timers since the last SIGUSR2 (p50, p99, most) as one line, then starts over.
import { monitorEventLoopDelay } from "node:perf_hooks";

const delay = monitorEventLoopDelay({ resolution: 5 });
delay.enable();
process.on("SIGUSR2", () => {
  const ms = (ns) => (ns / 1e6).toFixed(1);
  process.stdout.write(`loop-delay p50=${ms(delay.percentile(50))} p99=${ms(delay.percentile(99))} max=${ms(delay.max)}\n`);
  delay.reset();
});
