/**
 * No slashing protection at all (`antislashing.backend: noop`): every message is "new", nothing
 * is recorded. For tests and throwaway networks only; the application warns loudly at start-up.
 *
 * - importInterchange drains (and so validates) the source, stores nothing, and reports zeros.
 * - exportInterchange yields no validators, under the first genesis validators root this process
 *   has seen (in memory only); with none seen yet it throws, like the real backends on an empty
 *   database, rather than invent a root.
 * - It has no watermarks (`GET /api/v1/eth2/highWatermark` answers {}), and refuses to set any
 *   (NoWatermarksError): a bound it would keep nowhere and never apply would be a lie.
 */
import {
  assertAttestationVote,
  assertBlockProposal,
  assertPubkey,
  bytesToHex,
} from "../../encoding";
import { interchangeSource } from "../../interchange";
import { NEW } from "../../rules";
import type {
  AttestationVote,
  BlockProposal,
  Decision,
  ImportReport,
  InterchangeSource,
  PubkeyHex,
  SlashingStore,
} from "../../store";
import { NothingToExportError } from "../../store";
import { type DatabaseWatermarks, NO_WATERMARKS } from "../../watermarks";

/** watermark-repair on the noop backend: there is nowhere to keep a watermark. */
export class NoWatermarksError extends Error {
  override readonly name = "NoWatermarksError";
}

class NoopSlashingStore implements SlashingStore {
  readonly backend = "noop" as const;
  readonly strategy = "none" as const;
  readonly location = "noop (nothing is kept)";
  private gvr: string | undefined;
  private closed = false;

  /** Nothing is recorded: no chain either (the application binds no noop store). */
  async storedGenesisValidatorsRoot(): Promise<Uint8Array | null> {
    this.assertOpen();
    return null;
  }

  async bindGenesisValidatorsRoot(root: Uint8Array): Promise<Uint8Array> {
    this.assertOpen();
    return root;
  }

  async probeWrite(): Promise<void> {
    this.assertOpen();
  }

  private assertOpen(): void {
    if (this.closed) throw new Error("noop slashing protection store is closed");
  }

  async checkAndInsertBlock(
    genesisValidatorsRoot: Uint8Array,
    proposal: BlockProposal,
  ): Promise<Decision> {
    this.assertOpen();
    assertBlockProposal(genesisValidatorsRoot, proposal);
    this.gvr ??= bytesToHex(genesisValidatorsRoot);
    return NEW;
  }

  async checkAndInsertAttestation(
    genesisValidatorsRoot: Uint8Array,
    vote: AttestationVote,
  ): Promise<Decision> {
    this.assertOpen();
    assertAttestationVote(genesisValidatorsRoot, vote);
    this.gvr ??= bytesToHex(genesisValidatorsRoot);
    return NEW;
  }

  async importInterchange(source: InterchangeSource): Promise<ImportReport> {
    this.assertOpen();
    for await (const _ of source.validators()) {
      // drained for validation only
    }
    this.gvr ??= source.metadata.genesis_validators_root.toLowerCase();
    return { validators: 0, blocks: 0, attestations: 0 };
  }

  async exportInterchange(pubkeys?: readonly PubkeyHex[]): Promise<InterchangeSource> {
    this.assertOpen();
    for (const pubkey of pubkeys ?? []) assertPubkey(pubkey);
    if (this.gvr === undefined) {
      throw new NothingToExportError(
        "the noop slashing protection store has seen no genesis validators root: nothing to export",
      );
    }
    return interchangeSource(
      { interchange_format_version: "5", genesis_validators_root: this.gvr },
      [],
    );
  }

  async databaseWatermarks(): Promise<DatabaseWatermarks> {
    this.assertOpen();
    return NO_WATERMARKS;
  }

  async changeWatermarks(): Promise<DatabaseWatermarks> {
    this.assertOpen();
    throw new NoWatermarksError(
      "antislashing.backend is noop: it keeps no watermarks and applies none (nothing was changed)",
    );
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export function createNoopStore(): SlashingStore {
  return new NoopSlashingStore();
}
