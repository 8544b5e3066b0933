import type { Metric, Registry } from "prom-client";

/**
 * A Prometheus histogram for the signing hot path. prom-client's `observe(labels, value)` checks
 * the label names, hashes the label set and looks the series up on every call, and the signed
 * path observes twice a request. Here the caller looks its series up once (`series(labels)`)
 * and keeps it; an observation is a bucket search and three additions. At scrape time the
 * series are handed to prom-client's registry in the shape its own histogram gives, so the
 * exposition is prom-client's, byte for byte (tallied-histogram.test.ts compares them).
 */
export class TalliedHistogram {
  readonly type = "histogram";
  readonly aggregator = "sum";
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly string[];
  readonly upperBounds: readonly number[];
  readonly #series = new Map<string, HistogramSeries>();

  constructor(config: {
    name: string;
    help: string;
    labelNames: readonly string[];
    buckets: readonly number[];
    registers: readonly Registry[];
  }) {
    this.name = config.name;
    this.help = config.help;
    this.labelNames = config.labelNames;
    this.upperBounds = [...config.buckets].sort((a, b) => a - b);
    // The registry reads name, type, help, aggregator and get(); it needs no more of a Metric.
    for (const registry of config.registers) registry.registerMetric(this as unknown as Metric);
  }

  /** The series of one label set, made on first use and kept: look it up once, observe often. */
  series(labels: Readonly<Record<string, string>>): HistogramSeries {
    const key = this.labelNames.map((name) => labels[name] ?? "").join("\u0000");
    let series = this.#series.get(key);
    if (series === undefined) {
      for (const name of Object.keys(labels)) {
        if (!this.labelNames.includes(name)) {
          throw new Error(`Added label "${name}" is not included in initial labelset`);
        }
      }
      series = new HistogramSeries({ ...labels }, this.upperBounds);
      this.#series.set(key, series);
    }
    return series;
  }

  observe(labels: Readonly<Record<string, string>>, value: number): void {
    this.series(labels).observe(value);
  }

  /** Zeroes every series (kept: callers hold them). */
  reset(): void {
    for (const series of this.#series.values()) series.zero();
  }

  /** What prom-client's Histogram gives its registry for the text exposition. */
  async getForPromString(): Promise<{
    name: string;
    help: string;
    type: string;
    values: ExportedValue[];
    aggregator: string;
  }> {
    const bucket = `${this.name}_bucket`;
    const values: ExportedValue[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        cumulative += series.counts[i] as number;
        values.push(value({ le: this.upperBounds[i] as number }, cumulative, bucket, null, series));
      }
      values.push(value({ le: "+Inf" }, series.count, bucket, null, series));
      values.push(value({}, series.sum, `${this.name}_sum`, undefined, series));
      values.push(value({}, series.count, `${this.name}_count`, undefined, series));
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      values,
      aggregator: this.aggregator,
    };
  }

  /** The JSON form (`registry.getMetricsAsJSON`): each value's labels with its series' own. */
  async get() {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...rest }) => ({
        ...rest,
        labels: { ...labels, ...sharedLabels },
      })),
    };
  }
}

export class HistogramSeries {
  /** Observations per bucket (not cumulative); those above every bound are only in `count`. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(
    readonly labels: Readonly<Record<string, string>>,
    private readonly bounds: readonly number[],
  ) {
    this.counts = new Float64Array(bounds.length);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) throw new TypeError(`Value is not a valid number: ${value}`);
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    if (i < bounds.length) this.counts[i] = (this.counts[i] as number) + 1;
    this.sum += value;
    this.count++;
  }

  zero(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

interface ExportedValue {
  labels: Record<string, string | number>;
  sharedLabels: Readonly<Record<string, string>>;
  value: number;
  metricName: string;
  exemplar: null | undefined;
}

function value(
  labels: Record<string, string | number>,
  count: number,
  metricName: string,
  exemplar: null | undefined,
  series: HistogramSeries,
): ExportedValue {
  return { labels, sharedLabels: series.labels, value: count, metricName, exemplar };
}
