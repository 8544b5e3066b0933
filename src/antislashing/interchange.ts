/**
 * EIP-3076 interchange format v5: a streaming, validating reader and a streaming writer.
 *
 * Reading. `readInterchange` parses with @streamparser/json and emits one `data[i]` element at a
 * time (parsed elements are dropped from the parser's stack), so memory holds the metadata, the
 * validator currently being read and whatever the consumer has not pulled yet — never the file.
 * Input is pulled chunk by chunk only when the consumer asks for the next validator.
 *   - It resolves once `metadata` has been read and validated. Every real file puts `metadata`
 *     first; if `data` comes first, its elements are buffered in memory until `metadata` arrives
 *     (correct, just not streaming for such files).
 *   - Everything is validated as it is read: version "5"; genesis_validators_root 0x + 32 bytes;
 *     pubkeys 0x + 48 bytes; slots/epochs decimal strings in uint64 range (digits only: no sign,
 *     exponent, hex or JSON numbers); optional signing_root 0x + 32 bytes (`null` is read as
 *     absent). Hex may be any case and is normalised to lower case. Unknown keys are ignored (the
 *     schema allows them); duplicate `metadata`/`data` keys and trailing content are errors. Every
 *     violation is an `InterchangeFormatError` (a SlashingImportError) naming the JSON path, e.g.
 *     `$.data[3].signed_attestations[7].target_epoch: ...`.
 *   - Errors after the metadata (in `data`, a truncated file, trailing garbage) surface from the
 *     `validators()` iteration, possibly after some validators were yielded: an importer must
 *     treat a throwing iteration as a failed import and write nothing (sqlite: one transaction).
 *   - `validators()` of a source returned by `readInterchange` can be iterated ONCE (it consumes
 *     the stream); a second call throws. Sources built with `interchangeSource()` from arrays can
 *     be iterated again, but consumers of the `InterchangeSource` interface must not rely on that.
 *
 * Writing. `writeInterchange` streams a source out as JSON (integers as decimal strings, roots and
 * pubkeys as 0x lower-case hex, `signing_root` omitted when absent), one line per validator, in
 * chunks of about 64 KiB, awaiting the sink between chunks (backpressure).
 */

import { Type } from "@sinclair/typebox";
import { Tokenizer, TokenParser, TokenType } from "@streamparser/json";
import { type Checked, compileShape, joinPath } from "../wire/check";
import { bytesToHex, hexToBytes, PUBKEY_HEX, UINT64_MAX } from "./encoding";
import {
  type InterchangeAttestation,
  type InterchangeBlock,
  type InterchangeMetadata,
  type InterchangeSource,
  type InterchangeValidator,
  SlashingImportError,
} from "./store";

/** A malformed interchange document; `path` is the JSON path of the offending value. */
export class InterchangeFormatError extends SlashingImportError {
  constructor(
    readonly path: string,
    problem: string,
  ) {
    // "$" is the whole document: the problem says it alone.
    super(path === "$" ? problem : `${path}: ${problem}`);
  }
}

/**
 * The JSON parser's complaint in an operator's words: what is wrong and where, without its
 * internal states (`in state NULL1`).
 */
export function notJson(parserMessage: string): string {
  const what = "not JSON (an EIP-3076 interchange file is one JSON object)";
  const unexpected =
    /^Unexpected "(.*)" at chunk position "\d+" \(absolute position "(\d+)"\)/s.exec(parserMessage);
  if (unexpected)
    return `${what}: unexpected ${JSON.stringify(unexpected[1])} at byte ${Number(unexpected[2]) + 1}`;
  const token = /^Unexpected \w+ \("(.*)"\)/s.exec(parserMessage);
  if (token) return `${what}: unexpected ${JSON.stringify(token[1])}`;
  if (parserMessage.startsWith("Tokenizer ended in the middle of a token"))
    return `${what}: it ends in the middle of a value (truncated?)`;
  return `${what}: ${parserMessage}`;
}

/** Chunk size used when the input is a string already in memory. */
const STRING_SLICE = 1 << 20;

// ─── the wire shape ────────────────────────────────────────────────────────────────────────────

/** EIP-3076 writes every integer as a decimal string; 20 digits hold any uint64. */
const Uint64Text = Type.String({ pattern: "^[0-9]{1,20}$", expected: "a decimal string (uint64)" });
const RootText = Type.String({
  pattern: "^0x[0-9a-fA-F]{64}$",
  expected: "0x + 64 hex characters (32 bytes)",
});
/** `null` is read as absent (some clients write it). */
const OptionalRoot = Type.Optional(
  Type.Union([RootText, Type.Null()], { expected: "0x + 64 hex characters (32 bytes) or null" }),
);
const PubkeyText = Type.String({
  pattern: "^0x[0-9a-fA-F]{96}$",
  expected: "0x + 96 hex characters (48 bytes)",
});

/** The document's `metadata`. Unknown keys are allowed, as the EIP-3076 JSON schema allows them. */
export const InterchangeMetadataShape = Type.Object({
  interchange_format_version: Type.Literal("5", {
    expected: '"5" (the only supported version)',
  }),
  genesis_validators_root: RootText,
});

/** One element of the document's `data`: a validator and what it signed. */
export const InterchangeValidatorShape = Type.Object({
  pubkey: PubkeyText,
  signed_blocks: Type.Array(Type.Object({ slot: Uint64Text, signing_root: OptionalRoot }), {
    expected: "an array of {slot, signing_root?}",
  }),
  signed_attestations: Type.Array(
    Type.Object({ source_epoch: Uint64Text, target_epoch: Uint64Text, signing_root: OptionalRoot }),
    { expected: "an array of {source_epoch, target_epoch, signing_root?}" },
  ),
});

const checkMetadata = compileShape(InterchangeMetadataShape);
const checkValidator = compileShape(InterchangeValidatorShape);

function shaped<T>(checked: Checked<T>, path: string): T {
  if (checked.ok) return checked.value;
  throw new InterchangeFormatError(joinPath(path, checked.where), checked.problem);
}

/** A uint64 the shape has already seen as 1 to 20 digits. */
function uint64(text: string, path: string): bigint {
  const parsed = BigInt(text);
  if (parsed > UINT64_MAX)
    throw new InterchangeFormatError(path, `${text} is larger than 2^64 - 1`);
  return parsed;
}

function optionalRoot(text: string | null | undefined): Uint8Array | undefined {
  return text === undefined || text === null ? undefined : hexToBytes(text);
}

type Frame = { keys: Set<string>; expectKey: boolean; at: string } | { index: number; at: string };

export function parseMetadata(value: unknown, path = "$.metadata"): InterchangeMetadata {
  const metadata = shaped(checkMetadata(value), path);
  return {
    interchange_format_version: "5",
    genesis_validators_root: metadata.genesis_validators_root.toLowerCase(),
  };
}

export function parseValidator(value: unknown, path: string): InterchangeValidator {
  const record = shaped(checkValidator(value), path);
  const blocks = record.signed_blocks.map((block, j): InterchangeBlock => {
    const slot = uint64(block.slot, `${path}.signed_blocks[${j}].slot`);
    const signingRoot = optionalRoot(block.signing_root);
    return signingRoot === undefined ? { slot } : { slot, signingRoot };
  });
  const attestations = record.signed_attestations.map((attestation, j): InterchangeAttestation => {
    const at = `${path}.signed_attestations[${j}]`;
    const sourceEpoch = uint64(attestation.source_epoch, `${at}.source_epoch`);
    const targetEpoch = uint64(attestation.target_epoch, `${at}.target_epoch`);
    const signingRoot = optionalRoot(attestation.signing_root);
    return signingRoot === undefined
      ? { sourceEpoch, targetEpoch }
      : { sourceEpoch, targetEpoch, signingRoot };
  });
  return { pubkey: record.pubkey.toLowerCase(), blocks, attestations };
}

// ─── streaming reader ──────────────────────────────────────────────────────────────────────────

type ChunkSource = {
  read(): Promise<Uint8Array | string | undefined>;
  cancel(): Promise<void>;
};

function chunksOfString(text: string): ChunkSource {
  let offset = 0;
  return {
    async read() {
      if (offset >= text.length) return undefined;
      const chunk = text.slice(offset, offset + STRING_SLICE);
      offset += STRING_SLICE;
      return chunk;
    },
    async cancel() {
      offset = text.length;
    },
  };
}

function chunksOfStream(stream: ReadableStream<Uint8Array>): ChunkSource {
  const reader = stream.getReader();
  let done = false;
  return {
    async read() {
      if (done) return undefined;
      const next = await reader.read();
      if (next.done) {
        done = true;
        reader.releaseLock();
        return undefined;
      }
      return next.value;
    },
    async cancel() {
      if (done) return;
      done = true;
      await reader.cancel().catch(() => {});
    },
  };
}

/** Which top-level key the tokenizer is in, to check the document's shape before values complete. */
type TopState = "start" | "key" | "colon" | "value" | "after" | "closed";

class InterchangeReader {
  metadata: InterchangeMetadata | undefined;
  /** Parsed validators not yet pulled; consumed entries are cleared, then spliced off in bulk. */
  private queue: (InterchangeValidator | undefined)[] = [];
  private queueHead = 0;
  private readonly tokenizer = new Tokenizer();
  private readonly parser = new TokenParser({
    paths: ["$.metadata", "$.data.*"],
    keepStack: false,
  });
  private inputDone = false;
  // Shape tracking over raw tokens: depth, and the top-level key whose value is being read.
  private depth = 0;
  private top: TopState = "start";
  private topKey = "";
  private readonly seenKeys = new Set<string>();
  // Every object's keys, to refuse duplicates anywhere: a repeated "signed_attestations" would
  // otherwise silently replace the first one and drop history.
  private readonly frames: Frame[] = [];

  constructor(private readonly input: ChunkSource) {
    this.tokenizer.onToken = (info) => {
      this.track(info.token, info.value);
      this.parser.write(info);
    };
    this.parser.onValue = ({ value, key, stack }) => {
      if (stack.length === 1 && key === "metadata") {
        this.metadata = parseMetadata(value);
      } else if (stack.length === 2 && typeof key === "number") {
        this.queue.push(parseValidator(value, `$.data[${key}]`));
      }
    };
  }

  private trackKeys(token: TokenType, value: unknown): void {
    const frame = this.frames[this.frames.length - 1];
    if (token === TokenType.LEFT_BRACE)
      this.frames.push({ keys: new Set(), expectKey: true, at: "" });
    else if (token === TokenType.LEFT_BRACKET) this.frames.push({ index: 0, at: "" });
    else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET)
      this.frames.pop();
    else if (token === TokenType.COMMA && frame) {
      if ("keys" in frame) frame.expectKey = true;
      else frame.index += 1;
    } else if (token === TokenType.STRING && frame && "keys" in frame && frame.expectKey) {
      const key = String(value);
      if (frame.keys.has(key))
        throw new InterchangeFormatError(`${this.framePath()}.${key}`, "duplicate key");
      frame.keys.add(key);
      frame.at = key;
      frame.expectKey = false;
    }
  }

  /** The path of the object being read: each enclosing frame adds the key or index it is at. */
  private framePath(): string {
    return this.frames
      .slice(0, -1)
      .reduce((path, frame) => path + ("keys" in frame ? `.${frame.at}` : `[${frame.index}]`), "$");
  }

  private track(token: TokenType, value: unknown): void {
    this.trackKeys(token, value);
    if (this.depth === 0 && this.top === "start") {
      if (token !== TokenType.LEFT_BRACE) {
        throw new InterchangeFormatError("$", "expected an object with metadata and data");
      }
      this.top = "key";
    } else if (this.depth === 1) {
      if (this.top === "key" && token === TokenType.STRING) {
        this.topKey = String(value);
        if (
          this.seenKeys.has(this.topKey) &&
          (this.topKey === "metadata" || this.topKey === "data")
        ) {
          throw new InterchangeFormatError(`$.${this.topKey}`, "duplicate key");
        }
        this.seenKeys.add(this.topKey);
        this.top = "colon";
      } else if (this.top === "colon" && token === TokenType.COLON) {
        this.top = "value";
      } else if (this.top === "value") {
        if (this.topKey === "metadata" && token !== TokenType.LEFT_BRACE) {
          throw new InterchangeFormatError("$.metadata", "expected an object");
        }
        if (this.topKey === "data" && token !== TokenType.LEFT_BRACKET) {
          throw new InterchangeFormatError("$.data", "expected an array");
        }
        this.top = "after";
      } else if (this.top === "after" && token === TokenType.COMMA) {
        this.top = "key";
      } else if (token === TokenType.RIGHT_BRACE) {
        this.top = "closed";
      }
    }
    if (token === TokenType.LEFT_BRACE || token === TokenType.LEFT_BRACKET) this.depth += 1;
    else if (token === TokenType.RIGHT_BRACE || token === TokenType.RIGHT_BRACKET) this.depth -= 1;
  }

  private write(chunk: Uint8Array | string): void {
    try {
      this.tokenizer.write(chunk);
    } catch (error) {
      if (error instanceof SlashingImportError) throw error;
      throw new InterchangeFormatError("$", notJson((error as Error).message));
    }
  }

  private finish(): void {
    this.inputDone = true;
    try {
      this.tokenizer.end();
    } catch (error) {
      throw new InterchangeFormatError("$", notJson((error as Error).message));
    }
    if (!this.parser.isEnded) {
      throw new InterchangeFormatError(
        "$",
        "truncated document (the top-level object is not closed)",
      );
    }
    if (this.metadata === undefined) throw new InterchangeFormatError("$.metadata", "missing");
    if (!this.seenKeys.has("data")) throw new InterchangeFormatError("$.data", "missing");
  }

  /** Reads one more chunk; false once the input is exhausted (and the document checked). */
  async pump(): Promise<boolean> {
    if (this.inputDone) return false;
    let chunk: Uint8Array | string | undefined;
    try {
      chunk = await this.input.read();
    } catch (error) {
      this.inputDone = true;
      throw error;
    }
    try {
      if (chunk === undefined) {
        this.finish();
        return false;
      }
      this.write(chunk);
      return true;
    } catch (error) {
      this.inputDone = true;
      await this.input.cancel();
      throw error;
    }
  }

  async *validators(): AsyncGenerator<InterchangeValidator> {
    try {
      for (;;) {
        while (this.queueHead < this.queue.length) {
          const next = this.queue[this.queueHead];
          this.queue[this.queueHead] = undefined;
          this.queueHead += 1;
          if (next !== undefined) yield next;
        }
        this.queue = [];
        this.queueHead = 0;
        if (!(await this.pump())) return;
      }
    } finally {
      if (!this.inputDone) {
        this.inputDone = true;
        await this.input.cancel();
      }
    }
  }
}

/**
 * Reads an interchange from a byte stream (e.g. `Bun.file(f).stream()`) or a string. Resolves
 * once the metadata has been read and validated; see the module comment for what is validated
 * where, and for the single iteration of `validators()`.
 */
export async function readInterchange(
  input: ReadableStream<Uint8Array> | string,
): Promise<InterchangeSource> {
  const reader = new InterchangeReader(
    typeof input === "string" ? chunksOfString(input) : chunksOfStream(input),
  );
  while (reader.metadata === undefined) {
    if (!(await reader.pump())) break;
  }
  const metadata = reader.metadata;
  if (metadata === undefined) throw new InterchangeFormatError("$.metadata", "missing");
  let iterated = false;
  return {
    metadata,
    validators() {
      if (iterated) {
        throw new Error(
          "this interchange source was read from a stream: validators() can be iterated once",
        );
      }
      iterated = true;
      return reader.validators();
    },
  };
}

// ─── in-memory sources (tests, exports) ────────────────────────────────────────────────────────

/** A source over validators already in memory (or produced lazily); re-iterable for arrays. */
export function interchangeSource(
  metadata: InterchangeMetadata,
  validators: Iterable<InterchangeValidator> | (() => AsyncIterable<InterchangeValidator>),
): InterchangeSource {
  return {
    metadata,
    validators() {
      if (typeof validators === "function") return validators();
      return (async function* () {
        yield* validators;
      })();
    },
  };
}

export interface CollectedInterchange {
  readonly metadata: InterchangeMetadata;
  readonly validators: InterchangeValidator[];
}

/** Drains a source into memory (tests, small exports). */
export async function collectInterchange(source: InterchangeSource): Promise<CollectedInterchange> {
  const validators: InterchangeValidator[] = [];
  for await (const v of source.validators()) validators.push(v);
  return { metadata: source.metadata, validators };
}

/** The interchange as one JSON string (tests, small exports). */
export async function interchangeToString(source: InterchangeSource): Promise<string> {
  const parts: string[] = [];
  await writeInterchange(source, (chunk) => {
    parts.push(chunk);
  });
  return parts.join("");
}

// ─── streaming writer ──────────────────────────────────────────────────────────────────────────

/** A byte sink: a WHATWG WritableStream (e.g. from `Bun.file(f).writer()` wrappers or sockets). */
export type WritableStreamLike = WritableStream<Uint8Array>;

/** Where `writeInterchange` sends its output: a byte stream (closed at the end) or a string callback. */
export type InterchangeSink = WritableStreamLike | ((chunk: string) => void | Promise<void>);

const FLUSH_AT = 64 * 1024;

function blockJson(block: InterchangeBlock): string {
  const root =
    block.signingRoot === undefined ? "" : `,"signing_root":"${bytesToHex(block.signingRoot)}"`;
  return `{"slot":"${block.slot}"${root}}`;
}

function attestationJson(a: InterchangeAttestation): string {
  const root = a.signingRoot === undefined ? "" : `,"signing_root":"${bytesToHex(a.signingRoot)}"`;
  return `{"source_epoch":"${a.sourceEpoch}","target_epoch":"${a.targetEpoch}"${root}}`;
}

function checkValidatorForExport(v: InterchangeValidator): void {
  if (!PUBKEY_HEX.test(v.pubkey))
    throw new TypeError(`cannot export pubkey ${JSON.stringify(v.pubkey)}`);
  for (const b of v.blocks) {
    if (b.slot < 0n || b.slot > UINT64_MAX) throw new RangeError(`slot ${b.slot} is not a uint64`);
  }
  for (const a of v.attestations) {
    if (
      a.sourceEpoch < 0n ||
      a.sourceEpoch > UINT64_MAX ||
      a.targetEpoch < 0n ||
      a.targetEpoch > UINT64_MAX
    ) {
      throw new RangeError(`epochs ${a.sourceEpoch}/${a.targetEpoch} are not uint64`);
    }
  }
}

/**
 * Streams `source` as an interchange v5 document into `sink`. Consumes `source.validators()` once.
 * Resolves with the number of validators, blocks and attestations written.
 */
export async function writeInterchange(
  source: InterchangeSource,
  sink: InterchangeSink,
): Promise<{ validators: number; blocks: number; attestations: number }> {
  const gvr = source.metadata.genesis_validators_root;
  if (!/^0x[0-9a-fA-F]{64}$/.test(gvr))
    throw new TypeError(`cannot export genesis validators root ${JSON.stringify(gvr)}`);
  let emit: (chunk: string) => Promise<void>;
  let finish: () => Promise<void> = async () => {};
  let abort: (error: unknown) => Promise<void> = async () => {};
  if (typeof sink === "function") {
    emit = async (chunk) => {
      await sink(chunk);
    };
  } else {
    const writer = sink.getWriter();
    const encoder = new TextEncoder();
    emit = (chunk) => writer.write(encoder.encode(chunk));
    finish = () => writer.close();
    abort = (error) => writer.abort(error).catch(() => {});
  }
  const counts = { validators: 0, blocks: 0, attestations: 0 };
  try {
    let buffer = `{"metadata":{"interchange_format_version":"5","genesis_validators_root":"${gvr.toLowerCase()}"},"data":[`;
    for await (const v of source.validators()) {
      checkValidatorForExport(v);
      buffer += `${counts.validators === 0 ? "" : ","}\n{"pubkey":"${v.pubkey}","signed_blocks":[`;
      v.blocks.forEach((b, i) => {
        buffer += (i === 0 ? "" : ",") + blockJson(b);
      });
      buffer += `],"signed_attestations":[`;
      v.attestations.forEach((a, i) => {
        buffer += (i === 0 ? "" : ",") + attestationJson(a);
      });
      buffer += "]}";
      counts.validators += 1;
      counts.blocks += v.blocks.length;
      counts.attestations += v.attestations.length;
      if (buffer.length >= FLUSH_AT) {
        await emit(buffer);
        buffer = "";
      }
    }
    buffer += `${counts.validators === 0 ? "" : "\n"}]}\n`;
    await emit(buffer);
    await finish();
  } catch (error) {
    await abort(error);
    throw error;
  }
  return counts;
}
