import { type Static, Type } from "@sinclair/typebox";
import { SigilError } from "../errors";
import { normalizePubkey, PubkeyText } from "../wire/pubkey";

/**
 * The bodies of a keystore import and delete (Key Manager API and cloud_kv alike) and of a
 * cloud_kv keygen, one schema each. The item limit is a config option, so each schema is built
 * for its limit and names the option in its refusal; the service that owns the limit builds them
 * and its routes declare them. What is per keystore (its JSON, its password) is judged per item,
 * in the answer's `data`, never here.
 */

const REQUEST = { problem: "request body must be a JSON object" } as const;

/** `limitName` is the config option that bounds the item count, named in the refusal. */
export function importRequest(maxItems: number, limitName: string) {
  const items = (what: string) =>
    Type.Array(Type.String(), {
      maxItems,
      expected: `a list of ${what}, at most ${limitName} (${maxItems})`,
    });
  return Type.Object(
    {
      keystores: items("keystore JSON strings"),
      passwords: items("password strings, one per keystore"),
      slashing_protection: Type.Optional(
        Type.Union([Type.String(), Type.Null()], {
          expected: "an EIP-3076 interchange as a JSON string",
        }),
      ),
    },
    REQUEST,
  );
}

export function deleteRequest(maxItems: number, limitName: string) {
  return Type.Object(
    {
      pubkeys: Type.Array(PubkeyText, {
        maxItems,
        expected: `a list of public keys, at most ${limitName} (${maxItems})`,
      }),
    },
    REQUEST,
  );
}

export function keygenRequest(maxItems: number, limitName: string) {
  return Type.Object(
    {
      count: Type.Integer({
        minimum: 1,
        maximum: maxItems,
        expected: `an integer from 1 to ${limitName} (${maxItems})`,
      }),
    },
    REQUEST,
  );
}

export type ImportCommand = Static<ReturnType<typeof importRequest>>;
export type DeleteCommand = Static<ReturnType<typeof deleteRequest>>;
export type KeygenCommand = Static<ReturnType<typeof keygenRequest>>;

/** What a shape cannot say: one password per keystore. */
export function checkPasswords(command: ImportCommand): void {
  const { keystores, passwords } = command;
  if (passwords.length !== keystores.length) {
    throw new SigilError(
      "invalid_request",
      `passwords: must hold one password per keystore (${keystores.length}), not ${passwords.length}`,
    );
  }
}

/** The public keys of a delete, in lower case (clients may send either). */
export function deletedPubkeys(command: DeleteCommand): string[] {
  return command.pubkeys.map(normalizePubkey);
}

export type ImportStatus = "imported" | "duplicate" | "error";
export type DeleteStatus = "deleted" | "not_active" | "not_found" | "error";
export interface ItemResult<S> {
  status: S;
  message?: string;
}
