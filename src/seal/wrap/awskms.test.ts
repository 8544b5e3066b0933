import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { randomBytes } from "node:crypto";
import { DecryptCommand, DescribeKeyCommand, EncryptCommand, KMSClient } from "@aws-sdk/client-kms";
import { SignatureV4 } from "@smithy/signature-v4";
import {
  type KmsTestCredentials,
  NodeSha256,
  type RunningKms,
  startKmsServer,
} from "../../../test/support/kms";
import {
  KMS_TIMEOUT_MS,
  kmsClientFor,
  kmsEncryptionContext,
  regionOfKeyArn,
  unwrapWithKms,
  wrapWithKms,
} from "./awskms";
import { type ShareContext, WrapError } from "./types";

const SIGNER: KmsTestCredentials = { accessKeyId: "AKIASIGNER", secretAccessKey: "signer-secret" };
const ALICE: KmsTestCredentials = { accessKeyId: "AKIAALICE", secretAccessKey: "alice-secret" };
const BOB: KmsTestCredentials = { accessKeyId: "AKIABOB", secretAccessKey: "bob-secret" };
const ALICE_CTX: ShareContext = { sealId: "seal-0001", operator: "alice" };

/** The signer may Encrypt with every operator key; each operator may Decrypt only with theirs. */
async function startOperatorKms(region?: string): Promise<RunningKms> {
  return startKmsServer({
    region,
    credentials: [SIGNER, ALICE, BOB],
    keys: [
      {
        id: "alice-key",
        allow: {
          encrypt: [SIGNER.accessKeyId],
          decrypt: [ALICE.accessKeyId],
          describe: [ALICE.accessKeyId],
        },
      },
      { id: "bob-key", allow: { encrypt: [SIGNER.accessKeyId], decrypt: [BOB.accessKeyId] } },
    ],
  });
}

function clientAs(
  kms: RunningKms,
  credentials: KmsTestCredentials,
  region = kms.region,
): KMSClient {
  // One attempt: the failure tests want the first answer, not the SDK's retries.
  return new KMSClient({ region, endpoint: kms.url, credentials, maxAttempts: 1 });
}

/** A fresh share-sized secret (a Shamir share of a 32-byte key is 33 bytes). */
function newShare(): Uint8Array {
  return new Uint8Array(randomBytes(33));
}

/** The WrapError a promise rejects with; fails the test if it resolves or rejects otherwise. */
async function wrapErrorOf(promise: Promise<unknown>): Promise<WrapError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(WrapError);
    return error as WrapError;
  }
  throw new Error("expected a rejection");
}

/** Every encoding of the share a careless message might carry. */
function expectNoShareIn(text: string, share: Uint8Array): void {
  const buffer = Buffer.from(share);
  for (const encoded of [
    buffer.toString("hex"),
    buffer.toString("base64"),
    buffer.toString("base64url"),
    [...share].join(","),
  ]) {
    expect(text).not.toContain(encoded);
  }
}

describe("kmsEncryptionContext", () => {
  test("binds the share to its purpose, seal and operator", () => {
    expect(kmsEncryptionContext(ALICE_CTX)).toEqual({
      "sigil:purpose": "seal-share",
      "sigil:seal_id": "seal-0001",
      "sigil:operator": "alice",
    });
  });
});

describe("regionOfKeyArn", () => {
  test("reads the region of key and alias ARNs in any partition", () => {
    expect(
      regionOfKeyArn("arn:aws:kms:eu-west-2:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"),
    ).toBe("eu-west-2");
    expect(regionOfKeyArn("arn:aws:kms:us-east-1:111122223333:alias/sigil/alice")).toBe(
      "us-east-1",
    );
    expect(regionOfKeyArn("arn:aws-us-gov:kms:us-gov-west-1:111122223333:key/mrk-1a2b")).toBe(
      "us-gov-west-1",
    );
    expect(regionOfKeyArn("arn:aws-cn:kms:cn-north-1:111122223333:key/abc")).toBe("cn-north-1");
  });

  test("rejects what is not a KMS key ARN", () => {
    for (const notAnArn of [
      "",
      "1234abcd-12ab-34cd-56ef-1234567890ab",
      "alias/sigil",
      "arn:aws:s3:us-east-1:111122223333:key/abc",
      "arn:aws:kms::111122223333:key/abc",
      "arn:aws:kms:us-east-1:1111:key/abc",
      "arn:aws:kms:us-east-1:111122223333:grant/abc",
      "arn:aws:kms:us-east-1:111122223333:key/abc extra",
    ]) {
      expect(regionOfKeyArn(notAnArn)).toBeUndefined();
    }
  });
});

describe("kmsClientFor", () => {
  test("makes a client for the key's own region", async () => {
    const client = kmsClientFor("arn:aws:kms:ap-southeast-2:111122223333:key/abc");
    expect(await client.config.region()).toBe("ap-southeast-2");
    client.destroy();
  });

  test("refuses a value that is not a key ARN", () => {
    expect(() => kmsClientFor("alias/sigil")).toThrow(WrapError);
  });

  test("takes the endpoint from AWS_ENDPOINT_URL_KMS and credentials from the environment", async () => {
    // A server in a region other than the default proves the client signs for the ARN's region.
    const kms = await startOperatorKms("eu-west-2");
    const names = [
      "AWS_ENDPOINT_URL_KMS",
      "AWS_ACCESS_KEY_ID",
      "AWS_SECRET_ACCESS_KEY",
      "AWS_SESSION_TOKEN",
      "AWS_PROFILE",
      "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
    ];
    const saved = new Map(names.map((name) => [name, process.env[name]]));
    try {
      for (const name of names) delete process.env[name];
      process.env.AWS_ENDPOINT_URL_KMS = kms.url;
      process.env.AWS_ACCESS_KEY_ID = ALICE.accessKeyId;
      process.env.AWS_SECRET_ACCESS_KEY = ALICE.secretAccessKey;
      const keyArn = kms.keyArn("alice-key");
      const share = newShare();
      const wrapped = await wrapWithKms(clientAs(kms, SIGNER), keyArn, share, ALICE_CTX);
      const client = kmsClientFor(keyArn);
      expect(await unwrapWithKms(client, keyArn, wrapped, ALICE_CTX)).toEqual(share);
      client.destroy();
      expect(kms.calls.at(-1)).toEqual({
        operation: "Decrypt",
        accessKeyId: ALICE.accessKeyId,
        keyArn,
        outcome: "ok",
      });
    } finally {
      for (const [name, value] of saved) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      await kms.stop();
    }
  });
});

describe("wrapWithKms / unwrapWithKms", () => {
  let kms: RunningKms;
  let aliceKey: string;
  let bobKey: string;
  beforeAll(async () => {
    kms = await startOperatorKms();
    aliceKey = kms.keyArn("alice-key");
    bobKey = kms.keyArn("bob-key");
  });
  afterAll(() => kms.stop());

  test("the signer wraps, the operator unwraps the same share", async () => {
    const share = newShare();
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, share, ALICE_CTX);
    expectNoShareIn(Buffer.from(wrapped).toString("hex"), share);
    expect(await unwrapWithKms(clientAs(kms, ALICE), aliceKey, wrapped, ALICE_CTX)).toEqual(share);
    expect(kms.calls.slice(-2)).toEqual([
      { operation: "Encrypt", accessKeyId: SIGNER.accessKeyId, keyArn: aliceKey, outcome: "ok" },
      { operation: "Decrypt", accessKeyId: ALICE.accessKeyId, keyArn: aliceKey, outcome: "ok" },
    ]);
  });

  test("another operator's credentials cannot unwrap the share", async () => {
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, newShare(), ALICE_CTX);
    const error = await wrapErrorOf(
      unwrapWithKms(clientAs(kms, BOB), aliceKey, wrapped, ALICE_CTX),
    );
    expect(error.message).toBe(
      `KMS Decrypt with ${aliceKey} was refused: AccessDeniedException: User: arn:aws:iam::111122223333:user/${BOB.accessKeyId} is not authorized to perform: kms:Decrypt on resource: ${aliceKey} because no identity-based policy allows the kms:Decrypt action`,
    );
  });

  test("the share is bound to its seal and operator by the encryption context", async () => {
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, newShare(), ALICE_CTX);
    for (const ctx of [
      { sealId: "seal-0002", operator: "alice" },
      { sealId: "seal-0001", operator: "bob" },
    ]) {
      const error = await wrapErrorOf(unwrapWithKms(clientAs(kms, ALICE), aliceKey, wrapped, ctx));
      expect(error.message).toStartWith(
        `KMS Decrypt with ${aliceKey} was refused: InvalidCiphertextException:`,
      );
    }
  });

  test("unwrapping names the key, so a share wrapped under another key is refused", async () => {
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, newShare(), ALICE_CTX);
    const error = await wrapErrorOf(
      unwrapWithKms(clientAs(kms, ALICE), bobKey, wrapped, ALICE_CTX),
    );
    expect(error.message).toStartWith(
      `KMS Decrypt with ${bobKey} was refused: IncorrectKeyException:`,
    );
  });

  test("the signer may wrap but not unwrap; an operator may unwrap but not wrap", async () => {
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, newShare(), ALICE_CTX);
    const unwrap = await wrapErrorOf(
      unwrapWithKms(clientAs(kms, SIGNER), aliceKey, wrapped, ALICE_CTX),
    );
    expect(unwrap.message).toContain(
      `AccessDeniedException: User: arn:aws:iam::111122223333:user/${SIGNER.accessKeyId} is not authorized to perform: kms:Decrypt`,
    );
    const wrap = await wrapErrorOf(
      wrapWithKms(clientAs(kms, ALICE), aliceKey, newShare(), ALICE_CTX),
    );
    expect(wrap.message).toStartWith(
      `KMS Encrypt with ${aliceKey} was refused: AccessDeniedException:`,
    );
    expect(wrap.message).toContain(`kms:Encrypt on resource: ${aliceKey}`);
  });

  test("a wrong secret key fails the signature check", async () => {
    const forged = { accessKeyId: ALICE.accessKeyId, secretAccessKey: "not-alice-secret" };
    const error = await wrapErrorOf(
      wrapWithKms(clientAs(kms, forged), aliceKey, newShare(), ALICE_CTX),
    );
    expect(error.message).toStartWith(
      `KMS Encrypt with ${aliceKey} was refused: InvalidSignatureException: The request signature we calculated does not match`,
    );
  });

  test("an unknown access key is not recognised", async () => {
    const stranger = { accessKeyId: "AKIASTRANGER", secretAccessKey: "whatever" };
    const error = await wrapErrorOf(
      wrapWithKms(clientAs(kms, stranger), aliceKey, newShare(), ALICE_CTX),
    );
    expect(error.message).toContain("was refused: UnrecognizedClientException:");
  });

  test("an unknown key is reported as not found", async () => {
    const missing = kms.keyArn("no-such-key");
    const error = await wrapErrorOf(
      wrapWithKms(clientAs(kms, SIGNER), missing, newShare(), ALICE_CTX),
    );
    expect(error.message).toStartWith(
      `KMS Encrypt with ${missing} was refused: NotFoundException:`,
    );
  });

  test("a stopped KMS is reported as unreachable, naming the endpoint", async () => {
    const down = await startOperatorKms();
    const url = down.url;
    await down.stop();
    const keyArn = down.keyArn("alice-key");
    const error = await wrapErrorOf(
      unwrapWithKms(clientAs(down, ALICE), keyArn, new Uint8Array(64), ALICE_CTX),
    );
    expect(error.message).toBe(
      `KMS Decrypt with ${keyArn} failed: cannot reach KMS at ${url}: ECONNREFUSED`,
    );
  });

  test("a KMS that never answers times out instead of hanging the unseal", async () => {
    const silent = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => new Promise(() => {}),
    });
    const url = `http://127.0.0.1:${silent.port}`;
    try {
      const client = new KMSClient({ region: "us-east-1", endpoint: url, credentials: ALICE });
      const started = Date.now();
      const error = await wrapErrorOf(
        unwrapWithKms(client, aliceKey, new Uint8Array(64), ALICE_CTX, { timeoutMs: 300 }),
      );
      expect(error.message).toBe(
        `KMS Decrypt with ${aliceKey} timed out after 300 ms (KMS at ${url})`,
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await silent.stop(true);
    }
    expect(KMS_TIMEOUT_MS).toBeGreaterThanOrEqual(5_000);
    expect(KMS_TIMEOUT_MS).toBeLessThanOrEqual(60_000);
  });

  test("failure messages never carry the share", async () => {
    const share = newShare();
    const wrapped = await wrapWithKms(clientAs(kms, SIGNER), aliceKey, share, ALICE_CTX);
    const forged = { accessKeyId: SIGNER.accessKeyId, secretAccessKey: "wrong" };
    const errors = [
      await wrapErrorOf(wrapWithKms(clientAs(kms, forged), aliceKey, share, ALICE_CTX)),
      await wrapErrorOf(wrapWithKms(clientAs(kms, ALICE), aliceKey, share, ALICE_CTX)),
      await wrapErrorOf(wrapWithKms(clientAs(kms, SIGNER), kms.keyArn("gone"), share, ALICE_CTX)),
      await wrapErrorOf(unwrapWithKms(clientAs(kms, BOB), aliceKey, wrapped, ALICE_CTX)),
      await wrapErrorOf(
        unwrapWithKms(clientAs(kms, ALICE), aliceKey, wrapped, { ...ALICE_CTX, operator: "x" }),
      ),
    ];
    for (const error of errors) {
      expect(error.cause).toBeUndefined();
      expectNoShareIn(`${error.message}\n${error.stack}\n${JSON.stringify(error)}`, share);
    }
  });
});

describe("the KMS test server", () => {
  let kms: RunningKms;
  beforeAll(async () => {
    kms = await startOperatorKms();
  });
  afterAll(() => kms.stop());

  /** A SigV4-signed raw request, optionally altered after signing. */
  async function rawCall(
    target: string,
    body: string,
    alter: (request: { headers: Record<string, string>; body: string }) => void = () => {},
    signPayloadHashHeader = true,
  ): Promise<{ status: number; contentType: string | null; json: Record<string, unknown> }> {
    const url = new URL(kms.url);
    const signer = new SignatureV4({
      service: "kms",
      region: kms.region,
      credentials: ALICE,
      sha256: NodeSha256,
      applyChecksum: signPayloadHashHeader,
    });
    const signed = await signer.sign({
      method: "POST",
      protocol: url.protocol,
      hostname: url.hostname,
      port: Number(url.port),
      path: "/",
      query: {},
      headers: {
        host: url.host,
        "content-type": "application/x-amz-json-1.1",
        "x-amz-target": target,
      },
      body,
    });
    const request = { headers: { ...signed.headers }, body };
    alter(request);
    const response = await fetch(kms.url, { method: "POST", ...request });
    return {
      status: response.status,
      contentType: response.headers.get("content-type"),
      json: (await response.json()) as Record<string, unknown>,
    };
  }

  test("a correctly signed raw request is served with the AWS JSON 1.1 content type", async () => {
    const reply = await rawCall("TrentService.DescribeKey", JSON.stringify({ KeyId: "alice-key" }));
    expect(reply.status).toBe(200);
    expect(reply.contentType).toBe("application/x-amz-json-1.1");
    expect(reply.json.KeyMetadata).toMatchObject({ Arn: kms.keyArn("alice-key") });
  });

  test("the signature covers the body, with or without a signed payload hash header", async () => {
    const body = JSON.stringify({ KeyId: "alice-key" });
    for (const signPayloadHashHeader of [true, false]) {
      const replaceBody = (request: { body: string }) => {
        request.body = JSON.stringify({ KeyId: "bob-key" });
      };
      const tampered = await rawCall(
        "TrentService.DescribeKey",
        body,
        replaceBody,
        signPayloadHashHeader,
      );
      expect(tampered.status).toBe(400);
      expect(tampered.json.__type).toBe("InvalidSignatureException");
    }
  });

  test("the signature covers the target", async () => {
    const body = JSON.stringify({ KeyId: "alice-key" });
    const tamperedTarget = await rawCall("TrentService.DescribeKey", body, (request) => {
      request.headers["x-amz-target"] = "TrentService.Decrypt";
    });
    expect(tamperedTarget.json.__type).toBe("InvalidSignatureException");
  });

  test("an unsigned request and an unknown operation are refused", async () => {
    const unsigned = await rawCall("TrentService.DescribeKey", "{}", (request) => {
      delete request.headers.authorization;
    });
    expect(unsigned.json.__type).toBe("MissingAuthenticationTokenException");
    const unknown = await rawCall("TrentService.ScheduleKeyDeletion", "{}");
    expect(unknown.status).toBe(400);
    expect(unknown.json.__type).toBe("UnknownOperationException");
  });

  test("a request signed for another region is refused", async () => {
    const error = await clientAs(kms, ALICE, "eu-west-1")
      .send(new DescribeKeyCommand({ KeyId: "alice-key" }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toMatchObject({
      name: "InvalidSignatureException",
      message: expect.stringContaining("Credential should be scoped to a valid region"),
    });
  });

  test("DescribeKey reports key metadata and honours the describe allow list", async () => {
    const arn = kms.keyArn("alice-key");
    for (const keyId of ["alice-key", arn]) {
      const { KeyMetadata } = await clientAs(kms, ALICE).send(
        new DescribeKeyCommand({ KeyId: keyId }),
      );
      expect(KeyMetadata).toMatchObject({
        KeyId: "alice-key",
        Arn: arn,
        AWSAccountId: "111122223333",
        KeyState: "Enabled",
        KeyUsage: "ENCRYPT_DECRYPT",
        KeySpec: "SYMMETRIC_DEFAULT",
        Enabled: true,
      });
      expect(KeyMetadata?.CreationDate).toBeInstanceOf(Date);
    }
    const denied = await clientAs(kms, BOB)
      .send(new DescribeKeyCommand({ KeyId: arn }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(denied).toMatchObject({ name: "AccessDeniedException" });
  });

  test("ciphertext names its key, is randomised, and is bound to the context in any key order", async () => {
    const signer = clientAs(kms, SIGNER);
    const alice = clientAs(kms, ALICE);
    const plaintext = newShare();
    const context = { a: "1", b: "2" };
    const first = await signer.send(
      new EncryptCommand({ KeyId: "alice-key", Plaintext: plaintext, EncryptionContext: context }),
    );
    const second = await signer.send(
      new EncryptCommand({ KeyId: "alice-key", Plaintext: plaintext, EncryptionContext: context }),
    );
    expect(first.KeyId).toBe(kms.keyArn("alice-key"));
    expect(first.EncryptionAlgorithm).toBe("SYMMETRIC_DEFAULT");
    expect(first.CiphertextBlob).not.toEqual(second.CiphertextBlob);
    const decrypted = await alice.send(
      new DecryptCommand({
        CiphertextBlob: first.CiphertextBlob,
        EncryptionContext: { b: "2", a: "1" },
      }),
    );
    expect(decrypted.Plaintext).toEqual(plaintext);
    expect(decrypted.KeyId).toBe(kms.keyArn("alice-key"));
    const withoutContext = await alice
      .send(new DecryptCommand({ CiphertextBlob: first.CiphertextBlob }))
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(withoutContext).toMatchObject({ name: "InvalidCiphertextException" });
  });

  test("garbage and tampered ciphertexts are invalid", async () => {
    const alice = clientAs(kms, ALICE);
    const { CiphertextBlob } = await clientAs(kms, SIGNER).send(
      new EncryptCommand({ KeyId: "alice-key", Plaintext: newShare() }),
    );
    const tampered = new Uint8Array(CiphertextBlob ?? []);
    tampered[tampered.length - 20] = (tampered[tampered.length - 20] ?? 0) ^ 1;
    for (const blob of [new Uint8Array(randomBytes(64)), tampered]) {
      const error = await alice.send(new DecryptCommand({ CiphertextBlob: blob })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toMatchObject({ name: "InvalidCiphertextException" });
    }
  });
});
