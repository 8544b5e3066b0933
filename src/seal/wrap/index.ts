/**
 * The wrap dispatcher: parses the operator-facing wrap specs (`awskms:<key ARN>`,
 * `age:<recipient>`) and routes wrapping and unwrapping of one unseal share to the scheme.
 *
 * Reasons never echo what was given: a wrong value may be a secret pasted into the wrong place.
 * The caller names the position instead.
 */
import type { KMSClient } from "@aws-sdk/client-kms";
import { MAX_SHARES } from "../shares";
import { containsAgeSecretKey, isAgeRecipient, unwrapWithAge, wrapWithAge } from "./age";
import { unwrapWithKms, wrapWithKms } from "./awskms";
import { type ShareContext, WrapError, type WrapSpec } from "./types";

export type { ShareContext, WrapSpec } from "./types";
export { WrapError } from "./types";

export type WrapSpecResult = { ok: true; spec: WrapSpec } | { ok: false; reason: string };
export type WrapSpecListResult = { ok: true; specs: WrapSpec[] } | { ok: false; reason: string };

const AWSKMS_SCHEME = "awskms";
const AGE_SCHEME = "age";
const EXPECTED = "expected awskms:<KMS key ARN> or age:<age1… recipient>";
/** A scheme is short and plain; anything else is not echoed, as it may be pasted material. */
const ECHOABLE_SCHEME = /^[a-z0-9+.-]{1,16}$/i;

/** ARN fields, split on ":" (a KMS key resource has no further ":"). */
const ARN_FIELDS = 6;
const ARN_PARTITION = /^aws(-[a-z]+)*$/;
const ARN_REGION = /^[a-z]+(-[a-z]+)+-\d+$/;
const ARN_ACCOUNT = /^\d{12}$/;
/** KMS key ids: a UUID, or `mrk-` and 32 hex digits for a multi-Region key; AWS prints them lowercase. */
const KMS_KEY_ID =
  /^key\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|mrk-[0-9a-f]{32})$/;
const KMS_ALIAS = /^alias\/[A-Za-z0-9/_-]{1,250}$/;
/** AWS managed keys cannot be used in cryptographic operations directly, only by their service. */
const AWS_MANAGED_ALIAS_PREFIX = "alias/aws/";

/** Parses one wrap spec; the reason says what is wrong without echoing the input. */
export function parseWrapSpec(text: string): WrapSpecResult {
  if (typeof text !== "string" || text.trim() === "") {
    return { ok: false, reason: `it is empty; ${EXPECTED}` };
  }
  const trimmed = text.trim();
  if (containsAgeSecretKey(trimmed)) {
    return {
      ok: false,
      reason:
        "it is an age secret key (AGE-SECRET-KEY-…), which must stay with its operator; give age:<recipient>, the age1… public key that `age-keygen -y` prints",
    };
  }
  const colon = trimmed.indexOf(":");
  if (colon < 0) {
    if (trimmed.startsWith("age1")) {
      return { ok: false, reason: "an age recipient needs the scheme: write age:age1…" };
    }
    return { ok: false, reason: `it has no scheme; ${EXPECTED}` };
  }
  const scheme = trimmed.slice(0, colon);
  const value = trimmed.slice(colon + 1);
  switch (scheme) {
    case AWSKMS_SCHEME: {
      const problem = kmsKeyArnProblem(value);
      return problem === undefined
        ? { ok: true, spec: { kind: "awskms", keyArn: value } }
        : { ok: false, reason: problem };
    }
    case AGE_SCHEME: {
      const problem = ageRecipientProblem(value);
      return problem === undefined
        ? { ok: true, spec: { kind: "age", recipient: value } }
        : { ok: false, reason: problem };
    }
    case "arn":
      return { ok: false, reason: "a KMS key ARN needs the scheme: write awskms:arn:aws:kms:…" };
    default: {
      const named = ECHOABLE_SCHEME.test(scheme) ? ` "${scheme}"` : "";
      return { ok: false, reason: `unknown wrap scheme${named}; ${EXPECTED}` };
    }
  }
}

/** The text form of a spec, which `parseWrapSpec` reads back to the same spec. */
export function formatWrapSpec(spec: WrapSpec): string {
  switch (spec.kind) {
    case "awskms":
      return `${AWSKMS_SCHEME}:${spec.keyArn}`;
    case "age":
      return `${AGE_SCHEME}:${spec.recipient}`;
  }
}

/**
 * Parses the wrap specs of a seal, one per operator share. Refuses an empty list, more keys
 * than shares can exist, and a key given twice: its holder would hold two shares and so count
 * twice towards the threshold. (An alias and the key it names cannot be told apart offline.)
 */
export function parseWrapSpecList(texts: readonly string[]): WrapSpecListResult {
  if (!Array.isArray(texts) || texts.length === 0) {
    return { ok: false, reason: "no wrap keys given; each operator share needs one" };
  }
  if (texts.length > MAX_SHARES) {
    return {
      ok: false,
      reason: `${texts.length} wrap keys given; at most ${MAX_SHARES} shares can exist`,
    };
  }
  const specs: WrapSpec[] = [];
  const firstSeen = new Map<string, number>();
  for (const [i, text] of texts.entries()) {
    const parsed = parseWrapSpec(text);
    if (!parsed.ok) return { ok: false, reason: `wrap key ${i + 1}: ${parsed.reason}` };
    const canonical = formatWrapSpec(parsed.spec);
    const earlier = firstSeen.get(canonical);
    if (earlier !== undefined) {
      return {
        ok: false,
        reason: `wrap key ${i + 1} repeats wrap key ${earlier + 1} (${canonical}): its holder would hold two shares`,
      };
    }
    firstSeen.set(canonical, i);
    specs.push(parsed.spec);
  }
  return { ok: true, specs };
}

export interface WrapDeps {
  /** The KMS client for a key (its region comes from the ARN); injected for tests. */
  kmsClient(keyArn: string): KMSClient;
}

export interface UnwrapDeps extends WrapDeps {
  /** age identities (from `--identity FILE`), needed for age-wrapped shares. */
  readonly ageIdentities?: readonly string[];
  /** Where the identities were read from, to name it in a failure. */
  readonly ageIdentityPath?: string;
}

/** Wraps one share to the key in `spec`; KMS binds it to `ctx` as encryption context. */
export async function wrapShare(
  spec: WrapSpec,
  share: Uint8Array,
  ctx: ShareContext,
  deps: WrapDeps,
): Promise<Uint8Array> {
  switch (spec.kind) {
    case "awskms":
      return wrapWithKms(deps.kmsClient(spec.keyArn), spec.keyArn, share, ctx);
    case "age":
      // age has no associated data; the share digest checked on arrival binds seal and operator.
      return wrapWithAge(spec.recipient, share);
    default:
      throw unknownKind(spec);
  }
}

/** Unwraps one share with the key in `spec`. */
export async function unwrapShare(
  spec: WrapSpec,
  wrapped: Uint8Array,
  ctx: ShareContext,
  deps: UnwrapDeps,
): Promise<Uint8Array> {
  switch (spec.kind) {
    case "awskms":
      return unwrapWithKms(deps.kmsClient(spec.keyArn), spec.keyArn, wrapped, ctx);
    case "age": {
      const identities = deps.ageIdentities ?? [];
      if (identities.length === 0) {
        throw new WrapError(
          `this share is wrapped for age recipient ${spec.recipient}; pass --identity FILE with its age identity`,
        );
      }
      const hint =
        deps.ageIdentityPath === undefined
          ? { recipient: spec.recipient }
          : { recipient: spec.recipient, identityPath: deps.ageIdentityPath };
      return unwrapWithAge(identities, wrapped, hint);
    }
    default:
      throw unknownKind(spec);
  }
}

function kmsKeyArnProblem(arn: string): string | undefined {
  const shape =
    "a KMS key ARN is arn:aws:kms:<region>:<12-digit account>:key/<key id> or …:alias/<name>";
  const fields = arn.split(":");
  const [prefix, partition, service, region, account, resource] = fields;
  if (fields.length !== ARN_FIELDS || prefix !== "arn") return `not a KMS key ARN; ${shape}`;
  if (!partition || !ARN_PARTITION.test(partition)) {
    return `the ARN partition is not an AWS partition (aws, aws-cn, aws-us-gov, …); ${shape}`;
  }
  if (service !== "kms") return `the ARN is not for the kms service; ${shape}`;
  if (!region || !ARN_REGION.test(region)) {
    return `the ARN region is missing or malformed (like us-east-1); ${shape}`;
  }
  if (!account || !ARN_ACCOUNT.test(account)) return `the ARN account is not 12 digits; ${shape}`;
  if (resource?.startsWith(AWS_MANAGED_ALIAS_PREFIX)) {
    return "the alias names an AWS managed key (alias/aws/…), which only its AWS service may use; create a customer managed key";
  }
  if (!resource || !(KMS_KEY_ID.test(resource) || KMS_ALIAS.test(resource))) {
    return `the ARN resource is not key/<key id> (a lowercase UUID or mrk-<32 hex>) or alias/<name>; ${shape}`;
  }
  return undefined;
}

function ageRecipientProblem(recipient: string): string | undefined {
  if (isAgeRecipient(recipient)) return undefined;
  if (recipient.startsWith("age1pq1") || recipient.startsWith("age1tag")) {
    return "post-quantum and tag age recipients are not supported; give an X25519 age1… recipient";
  }
  return "not a valid age X25519 recipient: expected age1 and 58 lowercase bech32 characters with a valid checksum, as `age-keygen -y` prints";
}

function unknownKind(spec: never): WrapError {
  const kind = (spec as { kind?: unknown }).kind;
  return new WrapError(`unknown wrap kind ${JSON.stringify(kind)}`);
}
