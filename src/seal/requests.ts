import { type Static, Type } from "@sinclair/typebox";
import { MAX_SHARES } from "./shares";

/**
 * The seal routes' request bodies (docs/architecture.md, "Seal lifecycle"), one schema each: the
 * routes declare them, so the service gets checked commands. What a shape cannot say (each wrap
 * spec parses, the threshold is at most the number of operators, a share is 33 bytes) the service
 * checks, naming the field. Tokens and shares are never quoted back.
 */

const REQUEST = { problem: "request body must be a JSON object" } as const;

/** One wrapping key per operator share: `awskms:<key ARN>` or `age:<recipient>`. */
const ShareWrap = Type.Array(Type.String(), {
  expected: "a list of awskms:<key ARN> or age:<recipient>",
});

const Threshold = Type.Integer({
  minimum: 1,
  maximum: MAX_SHARES,
  expected: "an integer from 1 to the number of share_wrap entries",
});

/** POST /api/v1/signer/sys/init; share_wrap and threshold default to the config's cloud_kv keys. */
export const InitRequest = Type.Object(
  {
    setup_token: Type.String({
      minLength: 1,
      expected: "the setup token, logged once at the first start-up",
    }),
    share_wrap: Type.Optional(ShareWrap),
    threshold: Type.Optional(Threshold),
  },
  REQUEST,
);

/** POST /api/v1/signer/sys/register. */
export const RegisterRequest = Type.Object(
  {
    registration_token: Type.String({
      minLength: 1,
      expected: "the registration token init or a quorum rotation gave this operator",
    }),
  },
  REQUEST,
);

/** POST /api/v1/signer/sys/{unseal,generate-root,rotate-quorum/share}: one operator's share. */
export const ShareRequest = Type.Object(
  {
    share: Type.String({
      pattern: "^[A-Za-z0-9+/]+={0,2}$",
      expected: "the base64 of the unwrapped share",
    }),
  },
  REQUEST,
);

/** POST /api/v1/signer/sys/rotate-quorum: the new split. */
export const RotationRequest = Type.Object(
  { share_wrap: ShareWrap, threshold: Threshold },
  REQUEST,
);

export type InitCommand = Static<typeof InitRequest>;
export type RegisterCommand = Static<typeof RegisterRequest>;
export type ShareCommand = Static<typeof ShareRequest>;
export type RotationCommand = Static<typeof RotationRequest>;
