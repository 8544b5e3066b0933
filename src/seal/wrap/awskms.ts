// Wraps unseal shares with AWS KMS (docs/architecture.md, "Seal lifecycle"). The signer Encrypts
// every operator's share at init; each operator's CLI Decrypts only its own share at unseal, with
// its own AWS credentials. The encryption context binds a wrapped share to its seal and operator,
// so KMS itself refuses to decrypt a share presented for another seal or operator.
import {
  DecryptCommand,
  EncryptCommand,
  KMSClient,
  KMSServiceException,
} from "@aws-sdk/client-kms";
import { type ShareContext, WrapError } from "./types";

/** Upper bound for one Encrypt or Decrypt, retries included: a hung KMS fails the unseal. */
export const KMS_TIMEOUT_MS = 15_000;

export interface KmsCallOptions {
  /** Overrides KMS_TIMEOUT_MS. */
  readonly timeoutMs?: number;
}

type KmsOperation = "Encrypt" | "Decrypt";

const KMS_KEY_ARN =
  /^arn:aws(?:-[a-z0-9-]+)?:kms:([a-z0-9-]+):\d{12}:(?:key\/[A-Za-z0-9-]+|alias\/[A-Za-z0-9/_-]+)$/;

export function kmsEncryptionContext(ctx: ShareContext): Record<string, string> {
  return {
    "sigil:purpose": "seal-share",
    "sigil:seal_id": ctx.sealId,
    "sigil:operator": ctx.operator,
  };
}

/** The region of `arn:aws[-partition]:kms:<region>:<account>:key/<id>` (or `alias/<name>`). */
export function regionOfKeyArn(arn: string): string | undefined {
  return KMS_KEY_ARN.exec(arn)?.[1];
}

/**
 * A client for the key's own region. Endpoint and credentials come from the SDK's standard
 * chain (AWS_ENDPOINT_URL_KMS / AWS_ENDPOINT_URL, AWS_PROFILE, environment keys, SSO, IMDS...),
 * so each operator uses whatever AWS identity their shell already has.
 */
export function kmsClientFor(keyArn: string): KMSClient {
  const region = regionOfKeyArn(keyArn);
  if (region === undefined) throw new WrapError(`not an AWS KMS key ARN: ${keyArn}`);
  return new KMSClient({ region });
}

export async function wrapWithKms(
  client: KMSClient,
  keyArn: string,
  share: Uint8Array,
  ctx: ShareContext,
  options: KmsCallOptions = {},
): Promise<Uint8Array> {
  const command = new EncryptCommand({
    KeyId: keyArn,
    Plaintext: share,
    EncryptionContext: kmsEncryptionContext(ctx),
  });
  const output = await callKms("Encrypt", keyArn, options, (destination, abortSignal) => {
    command.middlewareStack.add(recordDestination(destination), destinationStep);
    return client.send(command, { abortSignal });
  });
  if (!output.CiphertextBlob?.length) {
    throw new WrapError(`KMS Encrypt with ${keyArn} returned no ciphertext`);
  }
  return output.CiphertextBlob;
}

export async function unwrapWithKms(
  client: KMSClient,
  keyArn: string,
  wrapped: Uint8Array,
  ctx: ShareContext,
  options: KmsCallOptions = {},
): Promise<Uint8Array> {
  // KeyId is optional for symmetric Decrypt, but naming it makes KMS refuse a ciphertext made
  // under any other key instead of silently using whichever key the blob names.
  const command = new DecryptCommand({
    KeyId: keyArn,
    CiphertextBlob: wrapped,
    EncryptionContext: kmsEncryptionContext(ctx),
  });
  const output = await callKms("Decrypt", keyArn, options, (destination, abortSignal) => {
    command.middlewareStack.add(recordDestination(destination), destinationStep);
    return client.send(command, { abortSignal });
  });
  if (!output.Plaintext?.length) {
    throw new WrapError(`KMS Decrypt with ${keyArn} returned no plaintext`);
  }
  return output.Plaintext;
}

/** Where the request went, for "cannot reach KMS at ..." (the endpoint may come from env). */
interface Destination {
  url?: string;
}

const destinationStep = { step: "finalizeRequest", name: "sigilKmsDestination" } as const;

function recordDestination(destination: Destination) {
  return <Args extends { request: unknown }, Result>(next: (args: Args) => Result) =>
    (args: Args): Result => {
      destination.url = urlOf(args.request) ?? destination.url;
      return next(args);
    };
}

function urlOf(request: unknown): string | undefined {
  if (typeof request !== "object" || request === null) return undefined;
  const { protocol, hostname, port } = request as Record<string, unknown>;
  if (typeof protocol !== "string" || typeof hostname !== "string") return undefined;
  return `${protocol}//${hostname}${typeof port === "number" ? `:${port}` : ""}`;
}

async function callKms<T>(
  operation: KmsOperation,
  keyArn: string,
  options: KmsCallOptions,
  send: (destination: Destination, abortSignal: AbortSignal) => Promise<T>,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? KMS_TIMEOUT_MS;
  const abortSignal = AbortSignal.timeout(timeoutMs);
  const destination: Destination = {};
  try {
    return await send(destination, abortSignal);
  } catch (err) {
    const what = `KMS ${operation} with ${keyArn}`;
    const where = destination.url ?? "its endpoint";
    if (abortSignal.aborted) {
      throw new WrapError(`${what} timed out after ${timeoutMs} ms (KMS at ${where})`);
    }
    // No `cause`: the message already says everything safe to say, and SDK errors are large.
    throw new WrapError(`${what} ${describeFailure(err, where)}`);
  }
}

function describeFailure(err: unknown, where: string): string {
  if (err instanceof KMSServiceException) {
    const verdict = err.$fault === "server" ? "failed" : "was refused";
    return `${verdict}: ${err.name}: ${err.message}`;
  }
  if (!(err instanceof Error)) return `failed: ${String(err)}`;
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" && /^E[A-Z_]+$/.test(code)) {
    return `failed: cannot reach KMS at ${where}: ${code}`;
  }
  if (err.name === "CredentialsProviderError") {
    return `failed: no usable AWS credentials: ${err.message}`;
  }
  return `failed: ${err.name}: ${err.message}`;
}
