import { randomBytes } from "node:crypto";
import type { KMSClient } from "@aws-sdk/client-kms";
import { newToken, REGISTRATION_TOKEN_PREFIX } from "../auth/tokens";
import { SigilError } from "../errors";
import { invalid } from "./errors";
import type { RotationPlan } from "./quorum";
import { type OperatorRecord, SEAL_RECORD_FORMAT, type SealRecord } from "./record";
import { checkValue, shareDigest, splitSecret, wipe } from "./shares";
import { parseWrapSpec, parseWrapSpecList, wrapShare } from "./wrap/index";
import { WrapError } from "./wrap/types";

/** What init and a completed rotation hand out: one registration token per new operator. */
export interface RegistrationView {
  readonly operator: string;
  readonly share_wrap: string;
  readonly registration_token: string;
}

const SEAL_ID_BYTES = 16;

/**
 * A new split of the master key (init, rotate quorum): a fresh seal id, one share per wrapping
 * key, each wrapped for its operator, digested for the arrival check, and paired with a one-use
 * registration token. Shares are wiped before returning.
 */
export async function splitAndWrap(
  masterKey: Uint8Array,
  plan: RotationPlan,
  now: number,
  kmsClient: (keyArn: string) => KMSClient,
): Promise<{ record: SealRecord; registrations: RegistrationView[] }> {
  const sealId = randomBytes(SEAL_ID_BYTES).toString("hex");
  const shares = await splitSecret(masterKey, plan.shareWrap.length, plan.threshold);
  try {
    const operators = await Promise.all(
      plan.shareWrap.map(async (wrap, i) => {
        const id = `operator-${i + 1}`;
        const spec = parseWrapSpec(wrap);
        if (!spec.ok) throw invalid(spec.reason);
        const share = shares[i] as Uint8Array;
        const wrapped = await wrapShare(
          spec.spec,
          share,
          { sealId, operator: id },
          {
            kmsClient,
          },
        ).catch((error: unknown) => {
          if (error instanceof WrapError)
            throw new SigilError("share_wrap_failed", `${id} (${wrap}): ${error.message}`);
          throw error;
        });
        const registration = newToken(REGISTRATION_TOKEN_PREFIX);
        const record: OperatorRecord = {
          id,
          wrap,
          wrappedShare: Buffer.from(wrapped).toString("base64"),
          shareDigest: shareDigest(sealId, id, share),
          registrationHash: registration.hash,
        };
        return { record, registration: registration.token };
      }),
    );
    return {
      record: {
        format: SEAL_RECORD_FORMAT,
        sealId,
        threshold: plan.threshold,
        checkValue: checkValue(masterKey),
        initializedAt: now,
        splitAt: now,
        operators: operators.map((o) => o.record),
      },
      registrations: operators.map((o) => ({
        operator: o.record.id,
        share_wrap: o.record.wrap,
        registration_token: o.registration,
      })),
    };
  } finally {
    for (const share of shares) wipe(share);
  }
}

/**
 * What the shape of init's and rotate-quorum's body cannot say (seal/requests.ts): each wrap spec
 * parses, no key is given twice, and the threshold is at most the number of operators. init's
 * share_wrap and threshold may come from the config (`defaultsFrom` names it).
 */
export function parsePlan(
  shareWrap: readonly string[] | undefined,
  threshold: number | undefined,
  defaultsFrom?: string,
): RotationPlan {
  if (shareWrap === undefined) {
    throw invalid(
      `share_wrap is required${defaultsFrom ? ` (or configure ${defaultsFrom})` : ""}: a list of awskms:<key ARN> or age:<recipient>`,
    );
  }
  const parsed = parseWrapSpecList(shareWrap);
  if (!parsed.ok) throw invalid(`share_wrap: ${parsed.reason}`);
  if (threshold === undefined) {
    throw invalid(
      `threshold is required${defaultsFrom ? " (or configure key_sources.cloud_kv.kms_threshold)" : ""}: how many of the ${shareWrap.length} shares unseal the signer`,
    );
  }
  if (threshold < 1 || threshold > shareWrap.length) {
    throw invalid(
      `threshold: must be an integer from 1 to the number of share_wrap entries (${shareWrap.length})`,
    );
  }
  return { shareWrap: [...shareWrap], threshold };
}
