// A small Prometheus registry (S4): counters, gauges and histograms with labels, plus collectors
// read at scrape time, rendered in the text exposition format (version 0.0.4). Small on purpose:
// Dossier needs a handful of instruments, not a client library.
export type Labels = Record<string, string>;

/** A value read at scrape time (runs by state, open subscriptions). Equal series are summed. */
export type Sample = { name: string; help: string; type: "gauge" | "counter"; labels?: Labels; value: number };
export type Collector = () => Sample[] | Promise<Sample[]>;

type Family = { name: string; help: string; type: "counter" | "gauge" | "histogram"; lines(): string[] };

/** Label names are ASCII identifiers: ordered by code unit (localeCompare cost more than the rest of an observation). */
const byName = ([a]: [string, string], [b]: [string, string]) => (a < b ? -1 : a > b ? 1 : 0);

const key = (labels: Labels): string => JSON.stringify(Object.entries(labels).sort(byName));

function escapeLabel(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

function formatLabels(labels: Labels): string {
  const entries = Object.entries(labels).sort(byName);
  return entries.length === 0 ? "" : `{${entries.map(([name, value]) => `${name}="${escapeLabel(value)}"`).join(",")}}`;
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  if (value === Infinity) return "+Inf";
  if (value === -Infinity) return "-Inf";
  return String(value);
}

class Series<T> {
  protected readonly series = new Map<string, { labels: Labels; value: T }>();
  protected entry(labels: Labels, initial: () => T): { labels: Labels; value: T } {
    const id = key(labels);
    let found = this.series.get(id);
    if (!found) {
      found = { labels, value: initial() };
      this.series.set(id, found);
    }
    return found;
  }
}

export class Counter extends Series<number> {
  constructor(readonly name: string, readonly help: string) {
    super();
  }
  inc(labels: Labels = {}, by = 1): void {
    if (by < 0) throw new Error(`counter ${this.name} cannot decrease`);
    this.entry(labels, () => 0).value += by;
  }
  get(labels: Labels = {}): number {
    return this.series.get(key(labels))?.value ?? 0;
  }
  lines(): string[] {
    return [...this.series.values()].map(({ labels, value }) => `${this.name}${formatLabels(labels)} ${formatValue(value)}`);
  }
}

export class Gauge extends Series<number> {
  constructor(readonly name: string, readonly help: string) {
    super();
  }
  set(labels: Labels, value: number): void {
    this.entry(labels, () => 0).value = value;
  }
  inc(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value += by;
  }
  dec(labels: Labels = {}, by = 1): void {
    this.entry(labels, () => 0).value -= by;
  }
  lines(): string[] {
    return [...this.series.values()].map(({ labels, value }) => `${this.name}${formatLabels(labels)} ${formatValue(value)}`);
  }
}

type Buckets = { counts: number[]; sum: number; count: number };

export class Histogram extends Series<Buckets> {
  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: number[],
  ) {
    super();
  }
  observe(labels: Labels, value: number): void {
    const entry = this.entry(labels, () => ({ counts: this.buckets.map(() => 0), sum: 0, count: 0 })).value;
    this.buckets.forEach((bound, index) => {
      if (value <= bound) entry.counts[index]! += 1;
    });
    entry.sum += value;
    entry.count += 1;
  }
  lines(): string[] {
    return [...this.series.values()].flatMap(({ labels, value }) => [
      ...this.buckets.map((bound, index) => `${this.name}_bucket${formatLabels({ ...labels, le: formatValue(bound) })} ${value.counts[index]}`),
      `${this.name}_bucket${formatLabels({ ...labels, le: "+Inf" })} ${value.count}`,
      `${this.name}_sum${formatLabels(labels)} ${formatValue(value.sum)}`,
      `${this.name}_count${formatLabels(labels)} ${value.count}`,
    ]);
  }
}

export class MetricsRegistry {
  private readonly families: Family[] = [];
  private readonly collectors = new Set<Collector>();

  counter(name: string, help: string): Counter {
    return this.add(new Counter(name, help), "counter");
  }
  gauge(name: string, help: string): Gauge {
    return this.add(new Gauge(name, help), "gauge");
  }
  histogram(name: string, help: string, buckets: number[]): Histogram {
    return this.add(new Histogram(name, help, [...buckets].sort((a, b) => a - b)), "histogram");
  }

  /** Adds a collector read at every scrape; returns the function that removes it. */
  collect(collector: Collector): () => void {
    this.collectors.add(collector);
    return () => this.collectors.delete(collector);
  }

  /** The exposition text: instruments, registered collectors and `extra` collectors of this scrape. */
  async render(extra: Collector[] = []): Promise<string> {
    const out: string[] = [];
    const collected = new Map<string, { help: string; type: string; values: Map<string, { labels: Labels; value: number }> }>();
    for (const collector of [...this.collectors, ...extra]) {
      for (const sample of await collector()) {
        let family = collected.get(sample.name);
        if (!family) {
          family = { help: sample.help, type: sample.type, values: new Map() };
          collected.set(sample.name, family);
        }
        const labels = sample.labels ?? {};
        const existing = family.values.get(key(labels));
        if (existing) existing.value += sample.value;
        else family.values.set(key(labels), { labels, value: sample.value });
      }
    }
    const samples = (name: string) =>
      [...(collected.get(name)?.values.values() ?? [])].map(({ labels, value }) => `${name}${formatLabels(labels)} ${formatValue(value)}`);
    // A collected sample of an instrument's name joins that family: one HELP and TYPE per name.
    for (const family of this.families) {
      out.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`, ...family.lines(), ...samples(family.name));
      collected.delete(family.name);
    }
    for (const [name, family] of collected) out.push(`# HELP ${name} ${family.help}`, `# TYPE ${name} ${family.type}`, ...samples(name));
    return `${out.join("\n")}\n`;
  }

  private add<T extends { name: string; help: string; lines(): string[] }>(instrument: T, type: Family["type"]): T {
    this.families.push({ name: instrument.name, help: instrument.help, type, lines: () => instrument.lines() });
    return instrument;
  }
}

export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";
