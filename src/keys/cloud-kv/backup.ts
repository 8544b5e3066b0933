/**
 * The off-site backup of a generated mnemonic: the mnemonic encrypted with age
 * (https://age-encryption.org/v1) to the operators' backup recipients, ASCII-armored so it can
 * travel in a JSON response or an email. `age -d -i key.txt backup.age` gives the mnemonic back.
 *
 * The plaintext is exactly the mnemonic's words (no trailing newline). Messages never contain the
 * mnemonic, an identity pasted by mistake, or an unvalidated recipient.
 */
import { armor, Encrypter } from "age-encryption";
import { containsAgeSecretKey, isAgeRecipient } from "../../seal/wrap/age";
import { assertMnemonic } from "./derive";

/**
 * A bound on recipients per backup: each adds a header stanza; a handful of operators is the use,
 * and the bound keeps a request from making an arbitrarily large header.
 */
export const MAX_BACKUP_RECIPIENTS = 32;

/** A refused backup recipient list; `position` is 1-based, or undefined for the list itself. */
export class BackupRecipientError extends Error {
  override readonly name = "BackupRecipientError";
  constructor(
    message: string,
    readonly position?: number,
  ) {
    super(message);
  }
}

/** Throws a BackupRecipientError unless `recipients` is 1..MAX distinct age X25519 recipients. */
export function checkBackupRecipients(recipients: readonly string[]): void {
  if (!Array.isArray(recipients) || recipients.length === 0) {
    throw new BackupRecipientError("at least one age backup recipient (age1…) is needed");
  }
  if (recipients.length > MAX_BACKUP_RECIPIENTS) {
    throw new BackupRecipientError(
      `at most ${MAX_BACKUP_RECIPIENTS} age backup recipients are allowed, got ${recipients.length}`,
    );
  }
  const seen = new Map<string, number>();
  for (const [i, recipient] of recipients.entries()) {
    const position = i + 1;
    if (typeof recipient === "string" && containsAgeSecretKey(recipient)) {
      throw new BackupRecipientError(
        `backup recipient ${position} is an age secret key; give its public age1… recipient instead (and treat that key as exposed)`,
        position,
      );
    }
    if (!isAgeRecipient(recipient)) {
      throw new BackupRecipientError(
        `backup recipient ${position} is not a valid age X25519 recipient (age1…)`,
        position,
      );
    }
    const first = seen.get(recipient);
    if (first !== undefined) {
      throw new BackupRecipientError(
        `backup recipient ${position} repeats recipient ${first}`,
        position,
      );
    }
    seen.set(recipient, position);
  }
}

/**
 * Encrypts `mnemonic` (checked to be a valid BIP-39 mnemonic first, so no unusable backup is
 * handed out) to every recipient; any one recipient's identity decrypts it. Returns the armored
 * age file (`-----BEGIN AGE ENCRYPTED FILE-----`, final newline).
 */
export async function encryptMnemonicBackup(
  mnemonic: string,
  recipients: readonly string[],
): Promise<string> {
  checkBackupRecipients(recipients);
  assertMnemonic(mnemonic);
  const encrypter = new Encrypter();
  for (const recipient of recipients) encrypter.addRecipient(recipient);
  const plaintext = new TextEncoder().encode(mnemonic);
  try {
    return armor.encode(await encrypter.encrypt(plaintext));
  } finally {
    plaintext.fill(0);
  }
}
