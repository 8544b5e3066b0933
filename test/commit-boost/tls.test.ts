// commit_boost.tls: the Commit-Boost listener speaks https with its own certificate (the signing
// API stays plain http here), and a mistake in its files is a start-up error naming the option.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ConfigProblemsError } from "../../src/config/problems";
import { TempDir } from "../support/cli";
import { cbCall, startCommitBoostSigner } from "../support/commit-boost";
import type { InProcessSigner } from "../support/signer";
import { createTestCa, type TestCa } from "../support/tls";

const dir = new TempDir();
let ca: TestCa;
let signer: InProcessSigner | undefined;

beforeAll(async () => {
  ca = await createTestCa();
});

afterAll(async () => {
  await signer?.stop();
  dir.remove();
});

test("https on the Commit-Boost listener only", async () => {
  const server = await ca.server();
  const cert = dir.file("cb-cert.pem", server.cert);
  const key = dir.file("cb-key.pem", server.key);
  signer = await startCommitBoostSigner(dir, "cb-tls", {
    extra: `, tls: {cert_file: "${cert}", key_file: "${key}"}`,
  });
  const base = signer.signer.commitBoostUrl ?? "";
  expect(base).toMatch(/^https:\/\//);
  expect(signer.url).toMatch(/^http:\/\//);
  const port = new URL(base).port;
  const trusted = await fetch(`https://localhost:${port}/status`, { tls: { ca: ca.cert } });
  expect(await trusted.text()).toBe("OK");
  await expect(fetch(`https://localhost:${port}/status`)).rejects.toThrow();
  const pubkeys = await cbCall(`https://localhost:${port}`, "/signer/v1/get_pubkeys", undefined, {
    tls: { ca: ca.cert },
  });
  expect(pubkeys.status).toBe(200);
});

test("an unreadable key file stops start-up with commit_boost.tls.key_file", async () => {
  const server = await ca.server();
  const cert = dir.file("cb-cert2.pem", server.cert);
  const error = await startCommitBoostSigner(dir, "cb-tls-bad", {
    extra: `, tls: {cert_file: "${cert}", key_file: "${dir.path}/missing.pem"}`,
  }).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ConfigProblemsError);
  expect(JSON.stringify((error as ConfigProblemsError).problems)).toContain(
    "commit_boost.tls.key_file",
  );
});
