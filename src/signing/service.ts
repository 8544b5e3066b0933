import type { SlashingGuard } from "../antislashing/guard";
import { authorize, type Principal } from "../auth/authenticator";
import type { BlsBackend } from "../bls/backend";
import { SigilError } from "../errors";
import type { KeyStore } from "../keys/key-store";
import type { Logger } from "../observability/log";
import { NOOP_TRACER, type Tracer } from "../observability/tracing";
import type { JsonValue } from "../wire/json";
import type { SigningOperation } from "../wire/operations";
import { isPubkeyHex } from "../wire/pubkey";
import type { CanaryMonitor } from "./canary";
import type { JobLimiter } from "./limiter";
import type { NetworkConstants } from "./network";
import { parseSigningRequest } from "./parse";
import type { SigningRequest } from "./request";

export interface SigningServiceDeps {
  keys: KeyStore;
  bls: BlsBackend;
  limiter: JobLimiter;
  guard: SlashingGuard;
  network: NetworkConstants;
  canaries: CanaryMonitor;
  logger: Logger;
  observer?: SigningObserver;
  /** Spans `prepare`, `slashing_check` and `bls_sign` under the request's span; none when absent. */
  tracer?: Tracer;
}

/** Where signing outcomes go (the metrics module); the service knows nothing of Prometheus. */
export interface SigningObserver {
  signed(operation: SigningOperation, queueSeconds: number, signSeconds: number): void;
  failed(operation: SigningOperation | undefined, code: string, reason: string | undefined): void;
}

export interface PreparedSignature {
  readonly pubkey: string;
  readonly request: SigningRequest;
}

export interface SignContext {
  requestId: string;
  deadline: AbortSignal;
}

/**
 * The signing pipeline: parse, policy, then — inside the job limiter — the slashing guard and
 * the signature. The guard runs immediately before the signature so that nothing is signed
 * unrecorded, and the signature is returned only once the guard's record is durable.
 */
export class SigningService {
  constructor(private readonly deps: SigningServiceDeps) {}

  /**
   * One sign request, from the caller to the signature, and the one place its outcome is
   * recorded: metrics, the log line, and the attributes of the request's span. The caller is
   * resolved here (`principal`), so that a refused token counts like any other refusal; only then
   * is the body read (`body`, within the route's limit), so a refused caller's body never is. The
   * body is the signing wire shape, which its own parser (parse.ts) checks field by field. This is
   * the only way in: nothing signs without the caller being authorized for the key and message.
   */
  async handle(
    principal: () => Promise<Principal>,
    identifier: string,
    body: () => Promise<JsonValue | undefined>,
    context: SignContext,
  ): Promise<Uint8Array> {
    const tracer = this.deps.tracer ?? NOOP_TRACER;
    let prepared: PreparedSignature | undefined;
    try {
      let ready: PreparedSignature;
      // Without tracing, no span closures: this is every request (docs/performance.md).
      if (tracer.enabled) {
        ready = await tracer.span("prepare", {}, async () => {
          const caller = await principal();
          prepared = this.#prepare(identifier, await body());
          authorizeSigning(caller, prepared);
          return prepared;
        });
      } else {
        const caller = await principal();
        ready = prepared = this.#prepare(identifier, await body());
        authorizeSigning(caller, prepared);
      }
      const signature = await this.#sign(ready, context);
      if (tracer.enabled) tracer.annotate({ ...describe(ready), "sigil.outcome": "signed" });
      return signature;
    } catch (error) {
      const code = this.recordFailure(error, {
        requestId: context.requestId,
        pubkey: prepared?.pubkey,
        operation: prepared?.request.operation,
        timedOut: context.deadline.aborted,
      });
      if (tracer.enabled) tracer.annotate({ ...describe(prepared), "sigil.outcome": code });
      throw error;
    }
  }

  /** Validates the path and body; no key lookup yet, so that authorization can come first. */
  #prepare(identifier: string, body: JsonValue | undefined): PreparedSignature {
    return {
      pubkey: pubkeyFromIdentifier(identifier),
      request: parseSigningRequest(body, this.deps.network),
    };
  }

  /** Not async: it throws at once or returns the limiter's promise, with no tick of its own. */
  #sign(prepared: PreparedSignature, context: SignContext): Promise<Uint8Array> {
    const { pubkey, request } = prepared;
    if (!this.deps.keys.get(pubkey)) throw unknownKey(pubkey);
    const log = this.deps.logger;
    const tracer = this.deps.tracer ?? NOOP_TRACER;
    const received = performance.now();
    // bind: a queued job is started by whichever job finishes first, so it must carry its own span.
    const job = tracer.bind(async () => {
      const started = performance.now();
      if (context.deadline.aborted) {
        throw new SigilError("request_timeout", "request timed out before signing started");
      }
      const approval = tracer.enabled
        ? await tracer.span("slashing_check", {}, () => this.deps.guard.approve(pubkey, request))
        : await this.deps.guard.approve(pubkey, request);
      // The client has had its 503 while the check ran: the record stays (a repeat of this
      // message is "same data"), but nothing is signed for an answer that was already given.
      if (context.deadline.aborted) throw answeredBeforeSigning();
      // The key may have been removed while the job waited in the queue. Held from here to the
      // release of the signature: a delete answers only once no signature with the key is in flight.
      const entry = this.deps.keys.acquire(pubkey);
      if (!entry) throw unknownKey(pubkey);
      try {
        // Signed while the record's sync runs (sqlite), and released only once it is on disk: a
        // failed sync drops the signature and answers 503. With a worker pool the span also covers
        // the wait for the key's worker.
        const signing = tracer.enabled
          ? tracer.span(
              "bls_sign",
              {},
              async () =>
                await this.deps.bls.sign(entry.key, request.signingRoot, context.deadline),
            )
          : this.deps.bls.sign(entry.key, request.signingRoot, context.deadline);
        const [signature] = await Promise.all([signing, approval.durable]);
        if (context.deadline.aborted) throw answeredBeforeSigning();
        this.deps.canaries.observe(pubkey, request.operation, context.requestId);
        if (log.enabled("debug")) {
          log.debug("signed", {
            request_id: context.requestId,
            pubkey: shortKey(pubkey),
            operation: request.operation,
          });
        }
        this.deps.observer?.signed(
          request.operation,
          (started - received) / 1000,
          (performance.now() - started) / 1000,
        );
        return signature;
      } finally {
        this.deps.keys.release(entry);
      }
    });
    return this.deps.limiter.run(job, context.deadline);
  }

  /**
   * Records a sign request that ended in an error (at any stage, parsing included). Refusals are
   * logged at warn, other client errors at debug; never with a secret. A request whose deadline
   * passed was answered 503 `request_timeout` whatever happened after, and is counted so; the
   * log still says what ended it (`cause`).
   */
  private recordFailure(
    error: unknown,
    context: {
      requestId: string;
      pubkey?: string | undefined;
      operation?: SigningOperation | undefined;
      timedOut: boolean;
    },
  ): string {
    const cause = error instanceof SigilError ? error.code : "internal_error";
    const code = context.timedOut ? "request_timeout" : cause;
    const reason = error instanceof SigilError && code === cause ? error.reason : undefined;
    this.deps.observer?.failed(context.operation, code, reason);
    const fields = {
      request_id: context.requestId,
      pubkey: context.pubkey ? shortKey(context.pubkey) : undefined,
      operation: context.operation,
      code,
      reason,
      cause: cause === code ? undefined : cause,
    };
    if (code === "slashing_protection")
      this.deps.logger.warn("signing refused by slashing protection", fields);
    else if (
      code === "queue_full" ||
      code === "request_timeout" ||
      code === "slashing_db_unavailable"
    ) {
      this.deps.logger.warn("signing request not served", fields);
    } else this.deps.logger.debug("signing request failed", fields);
    return code;
  }

  /** Lower-case 0x pubkeys, as Web3Signer lists them. */
  publicKeys(): string[] {
    return this.deps.keys.pubkeys();
  }
}

function authorizeSigning(caller: Principal, prepared: PreparedSignature): void {
  authorize(caller, {
    scope: "sign",
    pubkey: prepared.pubkey,
    operation: prepared.request.operation,
  });
}

/** The path identifier: 0x optional, any case. */
export function pubkeyFromIdentifier(identifier: string): string {
  const withPrefix =
    identifier.startsWith("0x") || identifier.startsWith("0X") ? identifier : `0x${identifier}`;
  const pubkey = `0x${withPrefix.slice(2).toLowerCase()}`;
  if (!isPubkeyHex(pubkey)) {
    throw new SigilError(
      "invalid_request",
      "public key in the path must be 48 bytes of hex (0x + 96 hex characters)",
    );
  }
  return pubkey;
}

const answeredBeforeSigning = () =>
  new SigilError(
    "request_timeout",
    "request timed out after its slashing check; the message is recorded, nothing was released",
  );

function unknownKey(pubkey: string): SigilError {
  return new SigilError("unknown_pubkey", `no key loaded for public key ${pubkey}`);
}

/** The span attributes that say which key and operation a request was for (never the whole key). */
function describe(prepared: PreparedSignature | undefined) {
  return {
    "sigil.operation": prepared?.request.operation,
    "sigil.pubkey": prepared ? shortKey(prepared.pubkey) : undefined,
  };
}

export function shortKey(pubkey: string): string {
  return `${pubkey.slice(0, 10)}…${pubkey.slice(-4)}`;
}
