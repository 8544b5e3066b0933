/**
 * A listener that could not be opened, named by its options: the signing listener
 * (`server.listen_address`, `server.listen_port`) or the metrics one (`metrics.…`), so that the
 * start-up error points at the setting to change, and only a listener's own failure reads as one.
 */
export class ListenerError extends Error {
  override readonly name = "ListenerError";

  constructor(
    readonly section: "server" | "metrics" | "commit_boost",
    readonly address: string,
    readonly port: number,
    cause: unknown,
  ) {
    super(describe(section, address, port, cause), { cause });
  }
}

function describe(section: string, address: string, port: number, cause: unknown): string {
  const code = (cause as { code?: string }).code;
  const at = `${address}:${port}`;
  if (code === "EADDRINUSE") return `${at} is already in use (${section}.listen_port)`;
  if (code === "EADDRNOTAVAIL")
    return `${address} is not an address of this machine (${section}.listen_address)`;
  if (code === "EACCES") {
    return `no permission to listen on ${at} (${section}.listen_port: a port below 1024 needs CAP_NET_BIND_SERVICE)`;
  }
  const reason = cause instanceof Error ? cause.message : String(cause);
  return `cannot listen on ${at} (${section}.listen_address, ${section}.listen_port): ${reason}`;
}

/** Runs `open` (a listener's start), turning its failure into a ListenerError for `section`. */
export function openListener<T>(
  section: "server" | "metrics" | "commit_boost",
  address: string,
  port: number,
  open: () => T,
): T {
  try {
    return open();
  } catch (error) {
    throw new ListenerError(section, address, port, error);
  }
}

/**
 * Binds `address:port` and lets it go at once: a port in use, an address not of this machine or a
 * privileged port stops start-up in a second, before the slow part (the database, the BLS
 * workers, every key) rather than after it. Port 0 (any free port) needs no check.
 */
export function probeListener(
  section: "server" | "metrics" | "commit_boost",
  address: string,
  port: number,
): void {
  if (port === 0) return;
  openListener(section, address, port, () => {
    Bun.listen({ hostname: address, port, socket: { data() {} } }).stop(true);
  });
}
