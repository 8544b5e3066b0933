// A test double of AWS KMS's wire protocol (AWS JSON 1.1 over HTTP, SigV4-signed), not of any
// sigil code: the real @aws-sdk/client-kms talks to it through an endpoint override. It keeps the
// properties sigil's seal relies on: real AES-256-GCM ciphertext that names its key (so Decrypt
// needs no KeyId) and is bound to the encryption context, real signature checks, and per-key
// allow lists so one operator's credentials cannot decrypt another operator's share.
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  type Hash,
  type Hmac,
  randomBytes,
  randomUUID,
  timingSafeEqual,
} from "node:crypto";
import { SignatureV4 } from "@smithy/signature-v4";

export const KMS_TEST_ACCOUNT = "111122223333";

export interface KmsTestKey {
  readonly id: string;
  /** Access key ids allowed to call each operation on this key. */
  readonly allow: {
    readonly encrypt?: readonly string[];
    readonly decrypt?: readonly string[];
    readonly describe?: readonly string[];
  };
}

export interface KmsTestCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
}

export interface KmsServerOptions {
  readonly keys: readonly KmsTestKey[];
  readonly credentials: readonly KmsTestCredentials[];
  readonly region?: string;
}

export interface KmsCall {
  /** The X-Amz-Target operation, e.g. "Decrypt". */
  readonly operation: string;
  /** "" when the request carried no parseable credential. */
  readonly accessKeyId: string;
  readonly keyArn?: string;
  /** "ok" or the error name returned. */
  readonly outcome: string;
}

export interface RunningKms {
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly region: string;
  readonly calls: readonly KmsCall[];
  keyArn(id: string): string;
  stop(): Promise<void>;
}

/** An error KMS returns as HTTP 400 `{"__type": type, "message": ...}`; the SDK maps it to `name`. */
class KmsFault extends Error {
  constructor(
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

interface KeyState {
  readonly arn: string;
  readonly id: string;
  readonly secret: Buffer;
  readonly allow: KmsTestKey["allow"];
}

type Operation = "Encrypt" | "Decrypt" | "DescribeKey";
type Json = Record<string, unknown>;

const TARGET_PREFIX = "TrentService.";
const BLOB_VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const MAX_PLAINTEXT_BYTES = 4096;
const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;

/** The SHA-256 (or HMAC-SHA-256 when keyed) constructor SignatureV4 wants, from node:crypto. */
export class NodeSha256 {
  private readonly hash: Hash | Hmac;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash("sha256") : createHmac("sha256", bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
}

function bytes(data: string | ArrayBuffer | ArrayBufferView): Uint8Array {
  if (typeof data === "string") return new TextEncoder().encode(data);
  if (ArrayBuffer.isView(data))
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return new Uint8Array(data);
}

export async function startKmsServer(options: KmsServerOptions): Promise<RunningKms> {
  const region = options.region ?? "us-east-1";
  const arnPrefix = `arn:aws:kms:${region}:${KMS_TEST_ACCOUNT}:key/`;
  const createdAt = Math.floor(Date.now() / 1000);
  const secrets = new Map(options.credentials.map((c) => [c.accessKeyId, c.secretAccessKey]));
  const keys = new Map<string, KeyState>(
    options.keys.map((k) => [
      k.id,
      { id: k.id, arn: arnPrefix + k.id, secret: randomBytes(32), allow: k.allow },
    ]),
  );
  const calls: KmsCall[] = [];

  function findKey(keyId: unknown): KeyState {
    if (typeof keyId !== "string" || keyId === "") {
      throw new KmsFault("ValidationException", "1 validation error detected: KeyId is required");
    }
    const id = keyId.startsWith(arnPrefix) ? keyId.slice(arnPrefix.length) : keyId;
    const key = keys.get(id);
    if (!key) throw new KmsFault("NotFoundException", `Key '${keyId}' does not exist`);
    return key;
  }

  function authorize(key: KeyState, operation: Operation, accessKeyId: string): void {
    const allowed = {
      Encrypt: key.allow.encrypt,
      Decrypt: key.allow.decrypt,
      DescribeKey: key.allow.describe,
    }[operation];
    if (allowed?.includes(accessKeyId)) return;
    throw new KmsFault(
      "AccessDeniedException",
      `User: arn:aws:iam::${KMS_TEST_ACCOUNT}:user/${accessKeyId} is not authorized to perform: ` +
        `kms:${operation} on resource: ${key.arn} because no identity-based policy allows the kms:${operation} action`,
    );
  }

  /** Checks the SigV4 Authorization header by recomputing it; notes the caller in `call`. */
  async function authenticate(request: Request, body: Uint8Array, call: { accessKeyId: string }) {
    const header = request.headers.get("authorization");
    if (!header) {
      throw new KmsFault("MissingAuthenticationTokenException", "Missing Authentication Token");
    }
    const match = AUTHORIZATION.exec(header);
    if (!match)
      throw new KmsFault("IncompleteSignatureException", "Malformed Authorization header");
    const [, accessKeyId = "", day, scopeRegion, service, signedHeaders = "", signature = ""] =
      match;
    call.accessKeyId = accessKeyId;
    const secretAccessKey = secrets.get(accessKeyId);
    if (secretAccessKey === undefined) {
      throw new KmsFault(
        "UnrecognizedClientException",
        "The security token included in the request is invalid.",
      );
    }
    if (service !== "kms" || scopeRegion !== region) {
      throw new KmsFault(
        "InvalidSignatureException",
        `Credential should be scoped to a valid region and service, not '${scopeRegion}/${service}'.`,
      );
    }
    const amzDate = request.headers.get("x-amz-date") ?? "";
    const signingDate = parseAmzDate(amzDate);
    const names = signedHeaders.split(";");
    if (!signingDate || !amzDate.startsWith(day ?? "?") || !names.includes("host")) {
      throw new KmsFault("IncompleteSignatureException", "Bad X-Amz-Date or SignedHeaders");
    }
    // Re-sign exactly the headers the client says it signed; any change to them, to the body, or
    // a different secret yields a different signature.
    const headers: Record<string, string> = {};
    for (const name of names) headers[name] = request.headers.get(name) ?? "";
    // A signed payload hash is only a claim: sign the body's real hash, as AWS checks it.
    if (names.includes("x-amz-content-sha256")) {
      headers["x-amz-content-sha256"] = createHash("sha256").update(body).digest("hex");
    }
    const url = new URL(request.url);
    const signer = new SignatureV4({
      service: "kms",
      region,
      credentials: { accessKeyId, secretAccessKey },
      sha256: NodeSha256,
      applyChecksum: false,
    });
    const resigned = await signer.sign(
      {
        method: request.method,
        protocol: url.protocol,
        hostname: url.hostname,
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        body,
      },
      { signingDate, signingRegion: region, signingService: "kms" },
    );
    const expected = /Signature=([0-9a-f]{64})$/.exec(resigned.headers.authorization ?? "")?.[1];
    if (!expected || !timingSafeEqual(Buffer.from(expected), Buffer.from(signature))) {
      throw new KmsFault(
        "InvalidSignatureException",
        "The request signature we calculated does not match the signature you provided. " +
          "Check your AWS Secret Access Key and signing method.",
      );
    }
  }

  function encrypt(input: Json, accessKeyId: string, call: { keyArn?: string }): Json {
    const key = findKey(input.KeyId);
    call.keyArn = key.arn;
    authorize(key, "Encrypt", accessKeyId);
    const plaintext = base64Field(input.Plaintext, "Plaintext");
    if (plaintext.length === 0 || plaintext.length > MAX_PLAINTEXT_BYTES) {
      throw new KmsFault("ValidationException", "Plaintext must be 1 to 4096 bytes");
    }
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", key.secret, iv);
    cipher.setAAD(contextAad(input.EncryptionContext));
    const sealed = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    const id = Buffer.from(key.id, "utf8");
    const blob = Buffer.concat([Buffer.from([BLOB_VERSION, id.length]), id, iv, sealed]);
    return {
      CiphertextBlob: blob.toString("base64"),
      KeyId: key.arn,
      EncryptionAlgorithm: "SYMMETRIC_DEFAULT",
    };
  }

  function decrypt(input: Json, accessKeyId: string, call: { keyArn?: string }): Json {
    const blob = base64Field(input.CiphertextBlob, "CiphertextBlob");
    const invalid = new KmsFault(
      "InvalidCiphertextException",
      "The ciphertext is invalid or was not encrypted under this encryption context.",
    );
    // Like real KMS, the ciphertext names its key; the optional KeyId only has to agree with it.
    const idLength = blob[1] ?? 0;
    const ivStart = 2 + idLength;
    const sealedStart = ivStart + IV_BYTES;
    if (blob[0] !== BLOB_VERSION || blob.length < sealedStart + TAG_BYTES + 1) throw invalid;
    const key = keys.get(blob.subarray(2, ivStart).toString("utf8"));
    if (!key) throw invalid;
    call.keyArn = key.arn;
    authorize(key, "Decrypt", accessKeyId);
    if (input.KeyId !== undefined && findKey(input.KeyId) !== key) {
      throw new KmsFault(
        "IncorrectKeyException",
        "The key ID in the request does not identify a CMK that can perform this operation.",
      );
    }
    const tagStart = blob.length - TAG_BYTES;
    const decipher = createDecipheriv(
      "aes-256-gcm",
      key.secret,
      blob.subarray(ivStart, sealedStart),
    );
    decipher.setAAD(contextAad(input.EncryptionContext));
    decipher.setAuthTag(blob.subarray(tagStart));
    let plaintext: Buffer;
    try {
      plaintext = Buffer.concat([
        decipher.update(blob.subarray(sealedStart, tagStart)),
        decipher.final(),
      ]);
    } catch {
      throw invalid; // wrong encryption context or a tampered blob: AWS says no more than this
    }
    return {
      KeyId: key.arn,
      Plaintext: plaintext.toString("base64"),
      EncryptionAlgorithm: "SYMMETRIC_DEFAULT",
    };
  }

  function describeKey(input: Json, accessKeyId: string, call: { keyArn?: string }): Json {
    const key = findKey(input.KeyId);
    call.keyArn = key.arn;
    authorize(key, "DescribeKey", accessKeyId);
    return {
      KeyMetadata: {
        KeyId: key.id,
        Arn: key.arn,
        AWSAccountId: KMS_TEST_ACCOUNT,
        KeyState: "Enabled",
        KeyUsage: "ENCRYPT_DECRYPT",
        KeySpec: "SYMMETRIC_DEFAULT",
        Enabled: true,
        CreationDate: createdAt,
      },
    };
  }

  const operations = { Encrypt: encrypt, Decrypt: decrypt, DescribeKey: describeKey };

  async function handle(request: Request): Promise<Response> {
    const target = request.headers.get("x-amz-target") ?? "";
    const operation = target.startsWith(TARGET_PREFIX)
      ? target.slice(TARGET_PREFIX.length)
      : target;
    const call: { accessKeyId: string; keyArn?: string } = { accessKeyId: "" };
    let response: Json;
    try {
      const body = new Uint8Array(await request.arrayBuffer());
      await authenticate(request, body, call);
      if (
        request.method !== "POST" ||
        !target.startsWith(TARGET_PREFIX) ||
        !Object.hasOwn(operations, operation)
      ) {
        throw new KmsFault("UnknownOperationException", `Unknown operation ${target}`);
      }
      response = operations[operation as Operation](parseBody(body), call.accessKeyId, call);
    } catch (err) {
      if (!(err instanceof KmsFault)) throw err;
      calls.push({ operation, ...call, outcome: err.type });
      return reply(400, { __type: err.type, message: err.message });
    }
    calls.push({ operation, ...call, outcome: "ok" });
    return reply(200, response);
  }

  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle });
  let stopped: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${server.port}`,
    region,
    calls,
    keyArn: (id) => arnPrefix + id,
    stop: () => {
      stopped ??= server.stop(true);
      return stopped;
    },
  };
}

function reply(status: number, body: Json): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/x-amz-json-1.1", "x-amzn-requestid": randomUUID() },
  });
}

function parseBody(body: Uint8Array): Json {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    throw new KmsFault("SerializationException", "Request body is not JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new KmsFault("SerializationException", "Request body is not a JSON object");
  }
  return parsed as Json;
}

function base64Field(value: unknown, field: string): Buffer {
  if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
    throw new KmsFault("SerializationException", `${field} must be a base64 string`);
  }
  return Buffer.from(value, "base64");
}

/** The encryption context as AES-GCM associated data: sorted, so key order does not matter. */
function contextAad(context: unknown): Buffer {
  if (context === undefined) return Buffer.from("[]");
  if (typeof context !== "object" || context === null || Array.isArray(context)) {
    throw new KmsFault("SerializationException", "EncryptionContext must be a map");
  }
  const entries = Object.entries(context).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  if (entries.some(([, value]) => typeof value !== "string")) {
    throw new KmsFault("SerializationException", "EncryptionContext values must be strings");
  }
  return Buffer.from(JSON.stringify(entries));
}

/** "20240102T030405Z" → Date, or undefined if malformed. */
function parseAmzDate(value: string): Date | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  return new Date(Date.UTC(y ?? 0, (mo ?? 1) - 1, d ?? 0, h ?? 0, mi ?? 0, s ?? 0));
}
