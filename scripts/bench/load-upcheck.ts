// Load generator process for http-baseline: N keep-alive loops for a fixed time.
export {};

const [url = "", connections = "32", durationMs = "5000"] = process.argv.slice(2);
const end = performance.now() + Number(durationMs);
const latenciesMs: number[] = [];
let requests = 0;
let errors = 0;

async function loop(): Promise<void> {
  while (performance.now() < end) {
    const started = performance.now();
    try {
      const response = await fetch(`${url}/upcheck`);
      await response.arrayBuffer();
      if (response.status === 200) {
        requests++;
        latenciesMs.push(performance.now() - started);
      } else errors++;
    } catch {
      errors++;
    }
  }
}

await Promise.all(Array.from({ length: Number(connections) }, loop));
process.stdout.write(JSON.stringify({ requests, latenciesMs, errors }));
