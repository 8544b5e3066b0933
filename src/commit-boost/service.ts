/**
 * The Commit-Boost signer service: typed commands in, signatures out. It signs only
 * Commit-Boost roots (roots.ts): every signature is over SigningData with the Commit-Boost
 * domain, so none of them is a beacon chain message, and slashing protection is not consulted.
 * Proxy keys are generated here, stored sealed in the shared proxy store, and never leave.
 */
import { randomBytes } from "node:crypto";
import type { BlsBackend, BlsSecretKey } from "../bls/backend";
import { SigilError } from "../errors";
import type { KeyStore } from "../keys/key-store";
import type { Logger } from "../observability/log";
import { toHex } from "../wire/hex";
import { ecdsaAddress, ecdsaSign, newEcdsaSecret } from "./ecdsa";
import {
  consensusSealKey,
  masterSealKey,
  openProxySecret,
  type ProxyIdentity,
  type ProxySealKey,
  proxySealRoot,
  sealProxySecret,
} from "./proxy-seal";
import type { ProxyRecord, ProxyScheme, ProxyStore } from "./proxy-store";
import { commitBoostDomain, delegationSigningRoot, requestSigningRoot } from "./roots";

export interface CommitBoostChain {
  /** EIP-155 chain id, signed into every request (PropCommitSigningInfo.chain_id). */
  readonly chainId: bigint;
  readonly genesisForkVersion: Uint8Array;
}

export interface CommitBoostModule {
  /** 32 bytes, signed into every request of the module. */
  readonly signingId: Uint8Array;
  /** The consensus keys the module may see and use (lower-case pubkeys); every key when unset. */
  readonly pubkeys?: ReadonlySet<string>;
}

/**
 * What seals proxy secrets (proxy-seal.ts): the seal's master key on a stateful signer (its
 * key-encryption key, undefined while sealed), else each proxy's own consensus key.
 */
export type ProxySealing =
  | { readonly by: "master-key"; readonly kek: () => Uint8Array | undefined }
  | { readonly by: "consensus-key" };

export interface CommitBoostServiceOptions {
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  readonly store: ProxyStore;
  readonly sealing: ProxySealing;
  readonly chain: CommitBoostChain;
  readonly modules: ReadonlyMap<string, CommitBoostModule>;
  /** Proxies one module may hold per consensus key (both schemes): a runaway module stops here. */
  readonly maxProxiesPerKey: number;
  readonly logger: Logger;
  /** Told of every signature a consensus key makes here (canary keys are watched through it). */
  readonly onConsensusSignature?: (pubkey: string, what: "request" | "delegation") => void;
}

export interface SignCommand {
  readonly module: string;
  /** Consensus pubkey, BLS proxy pubkey or ECDSA proxy address, 0x + lower-case hex. */
  readonly key: string;
  readonly objectRoot: Uint8Array;
  readonly nonce: bigint;
}

export interface Signed {
  readonly key: string;
  readonly objectRoot: Uint8Array;
  readonly moduleSigningId: Uint8Array;
  readonly nonce: bigint;
  readonly chainId: bigint;
  readonly signature: Uint8Array;
}

export interface Delegation {
  readonly delegator: string;
  readonly proxy: string;
  readonly signature: string;
}

export interface ConsensusProxies {
  readonly consensus: string;
  readonly proxyBls: string[];
  readonly proxyEcdsa: string[];
}

/** A proxy opened for signing, kept while its stored row (`row`, rowKey) stays the same. */
type OpenProxy =
  | { row: string; scheme: "bls"; key: BlsSecretKey }
  | { row: string; scheme: "ecdsa"; secret: Uint8Array };

/** Everything a sealed secret is bound to: a row moved to another key or module is opened anew. */
const rowKey = (record: ProxyIdentity & { sealed: string }) =>
  JSON.stringify([record.scheme, record.consensus, record.module, record.sealed]);

/** BLS12-381 group order r: a secret key is in [1, r). */
const BLS_ORDER = 0x73eda753299d7d483339d80809a1d80553bda402fffe5bfeffffffff00000001n;

/** A fresh BLS secret: 48 random bytes reduced mod r (bias below 2^-128), never zero. */
function newBlsSecret(): Uint8Array {
  for (;;) {
    const wide = randomBytes(48);
    const scalar = BigInt(`0x${wide.toString("hex")}`) % BLS_ORDER;
    wide.fill(0);
    if (scalar === 0n) continue;
    return Uint8Array.fromHex(scalar.toString(16).padStart(64, "0"));
  }
}

const unknownKey = (what: string) => new SigilError("unknown_pubkey", `unknown ${what}`);

export class CommitBoostService {
  readonly #options: CommitBoostServiceOptions;
  readonly #domain: Uint8Array;
  readonly #sealRoot: Uint8Array;
  readonly #open = new Map<string, OpenProxy>();
  readonly #log: Logger;

  constructor(options: CommitBoostServiceOptions) {
    this.#options = options;
    this.#domain = commitBoostDomain(options.chain.genesisForkVersion);
    this.#sealRoot = proxySealRoot(options.chain.genesisForkVersion);
    this.#log = options.logger;
  }

  get domain(): Uint8Array {
    return this.#domain.slice();
  }

  #module(module: string): CommitBoostModule {
    const found = this.#options.modules.get(module);
    // Authentication already named a configured module; this guards a reconfigured one.
    if (!found) throw new SigilError("unauthorized", "unknown module");
    return found;
  }

  /** The key, if loaded and the module's to use; else unknown, whichever it is. */
  #consensusKey(module: CommitBoostModule, pubkey: string) {
    const entry = this.#options.keys.get(pubkey);
    if (!entry || (module.pubkeys && !module.pubkeys.has(pubkey)))
      throw unknownKey("consensus pubkey");
    return entry;
  }

  #masterKek(sealing: ProxySealing & { by: "master-key" }): Uint8Array {
    const kek = sealing.kek();
    if (!kek) throw new SigilError("sealed", "proxy keys are sealed until the signer is unsealed");
    return kek;
  }

  /**
   * The key sealing `identity`'s secret, a copy the caller wipes. Without signer_state it comes
   * from the consensus key's signature of the seal root, made by the same backend (worker pool)
   * as every other signature and wiped here: it is never returned, logged or counted as a
   * signature anyone received (canary keys are told of the delegation, which always comes first).
   * Not cached: each proxy opens once per process (#open), and generating one already costs a
   * signature, so keeping it would only add a long-lived secret to memory.
   */
  async #sealKey(consensus: BlsSecretKey, identity: ProxyIdentity): Promise<ProxySealKey> {
    const { sealing } = this.#options;
    if (sealing.by === "master-key") return masterSealKey(this.#masterKek(sealing).slice());
    const signature = await this.#options.bls.sign(consensus, this.#sealRoot);
    try {
      return consensusSealKey(signature, identity);
    } finally {
      signature.fill(0);
    }
  }

  async getPubkeys(module: string): Promise<ConsensusProxies[]> {
    const { pubkeys: allowed } = this.#module(module);
    const byConsensus = new Map<string, ConsensusProxies>();
    for (const pubkey of this.#options.keys.pubkeys().sort()) {
      if (allowed && !allowed.has(pubkey)) continue;
      byConsensus.set(pubkey, { consensus: pubkey, proxyBls: [], proxyEcdsa: [] });
    }
    for (const record of await this.#read({ module }, () =>
      this.#options.store.listByModule(module),
    )) {
      const entry = byConsensus.get(record.consensus);
      if (!entry) continue; // its consensus key is not loaded here: not usable either
      (record.scheme === "bls" ? entry.proxyBls : entry.proxyEcdsa).push(record.proxy);
    }
    return [...byConsensus.values()];
  }

  #root(command: SignCommand, signingId: Uint8Array): Uint8Array {
    return requestSigningRoot(
      {
        data: command.objectRoot,
        moduleSigningId: signingId,
        nonce: command.nonce,
        chainId: this.#options.chain.chainId,
      },
      this.#domain,
    );
  }

  #signed(command: SignCommand, signingId: Uint8Array, signature: Uint8Array): Signed {
    return {
      key: command.key,
      objectRoot: command.objectRoot,
      moduleSigningId: signingId,
      nonce: command.nonce,
      chainId: this.#options.chain.chainId,
      signature,
    };
  }

  async signConsensus(command: SignCommand): Promise<Signed> {
    const moduleConfig = this.#module(command.module);
    const { signingId } = moduleConfig;
    const entry = this.#consensusKey(moduleConfig, command.key);
    const root = this.#root(command, signingId);
    const signature = await this.#options.bls.sign(entry.key, root);
    this.#options.onConsensusSignature?.(command.key, "request");
    return this.#signed(command, signingId, signature);
  }

  async signProxy(scheme: ProxyScheme, command: SignCommand): Promise<Signed> {
    const moduleConfig = this.#module(command.module);
    const { signingId } = moduleConfig;
    const record = await this.#read({ module: command.module, proxy: command.key }, () =>
      this.#options.store.get(command.key),
    );
    // Another module's proxy reads as unknown: a module only ever sees its own.
    if (!record || record.scheme !== scheme || record.module !== command.module)
      throw unknownKey(`${scheme} proxy`);
    const consensus = this.#consensusKey(moduleConfig, record.consensus);
    const proxy = await this.#opened(record, consensus.key);
    const root = this.#root(command, signingId);
    const signature =
      proxy.scheme === "bls"
        ? await this.#options.bls.sign(proxy.key, root)
        : ecdsaSign(proxy.secret, root);
    return this.#signed(command, signingId, signature);
  }

  async #opened(record: ProxyRecord, consensus: BlsSecretKey): Promise<OpenProxy> {
    const row = rowKey(record);
    const cached = this.#open.get(record.proxy);
    if (cached?.row === row) return cached;
    // Its row changed (another key, module or secret): what was opened from the old one goes.
    if (cached) this.#forget(record.proxy, cached);
    const sealKey = await this.#sealKey(consensus, record);
    let opened: OpenProxy;
    try {
      opened = this.#openRow(record, row, sealKey);
    } catch (error) {
      throw this.#unusable(record, error);
    } finally {
      sealKey.key.fill(0);
    }
    // Another request opened it meanwhile: keep one copy, of this row.
    const current = this.#open.get(record.proxy);
    if (current?.row === row) {
      this.#wipe(opened);
      return current;
    }
    if (current) this.#forget(record.proxy, current);
    this.#open.set(record.proxy, opened);
    return opened;
  }

  /** The stored secret, opened and checked against the proxy's id; throws if it is not that. */
  #openRow(record: ProxyRecord, row: string, sealKey: ProxySealKey): OpenProxy {
    const secret = openProxySecret(sealKey, record, record.sealed);
    try {
      if (record.scheme === "bls") {
        const key = this.#options.bls.importSecretKey(secret);
        if (key.pubkey !== record.proxy) {
          this.#options.bls.forget?.(key);
          throw new Error("stored BLS proxy does not match its id");
        }
        return { row, scheme: "bls", key };
      }
      if (toHex(ecdsaAddress(secret)) !== record.proxy)
        throw new Error("stored ECDSA proxy does not match its address");
      return { row, scheme: "ecdsa", secret: secret.slice() };
    } finally {
      secret.fill(0);
    }
  }

  /**
   * A stored proxy that does not open here (a damaged or edited row, or sealed the other way:
   * signer_state added or removed) is not a bug and not the module's mistake, and no retry
   * helps: its own code, with the cause in the log. The causes name no secret (proxy-seal.ts).
   */
  #unusable(record: ProxyRecord, cause: unknown): SigilError {
    this.#log.error("commit-boost proxy cannot be opened", {
      proxy: record.proxy,
      scheme: record.scheme,
      consensus: record.consensus,
      module: record.module,
      error: cause instanceof Error ? cause.message : String(cause),
    });
    return new SigilError(
      "proxy_key_unusable",
      `proxy ${record.proxy} is stored but cannot be opened on this signer; the signer's log says why`,
    );
  }

  async generateProxy(module: string, pubkey: string, scheme: ProxyScheme): Promise<Delegation> {
    const entry = this.#consensusKey(this.#module(module), pubkey);
    const { sealing } = this.#options;
    // While sealed, refuse before anything is generated or signed.
    if (sealing.by === "master-key") this.#masterKek(sealing);
    const held = (
      await this.#read({ module, consensus: pubkey }, () =>
        this.#options.store.listByModule(module),
      )
    ).filter((record) => record.consensus === pubkey).length;
    // A soft bound: instances generating at the same moment may each add one past it.
    if (held >= this.#options.maxProxiesPerKey)
      throw new SigilError(
        "invalid_request",
        `this module already holds ${held} proxies for ${pubkey} (commit_boost.max_proxies_per_key)`,
      );
    const secret = scheme === "bls" ? newBlsSecret() : newEcdsaSecret();
    let blsKey: BlsSecretKey | undefined;
    // Set once the proxy is stored and cached: until then a failure forgets the imported key, so
    // no worker keeps a secret that no row records and nothing can sign with it.
    let kept = false;
    try {
      let proxyBytes: Uint8Array;
      if (scheme === "bls") {
        blsKey = this.#options.bls.importSecretKey(secret);
        proxyBytes = blsKey.publicKey;
      } else {
        proxyBytes = ecdsaAddress(secret);
      }
      const proxy = toHex(proxyBytes);
      const root = delegationSigningRoot(entry.key.publicKey, proxyBytes, this.#domain);
      const signature = toHex(await this.#options.bls.sign(entry.key, root));
      this.#options.onConsensusSignature?.(pubkey, "delegation");
      const identity = { scheme, proxy, consensus: pubkey, module };
      const sealKey = await this.#sealKey(entry.key, identity);
      let sealed: string;
      try {
        sealed = sealProxySecret(sealKey, identity, secret);
      } finally {
        sealKey.key.fill(0);
      }
      await this.#store({
        ...identity,
        sealed,
        delegationSignature: signature,
        createdAt: Date.now(),
      });
      const row = rowKey({ ...identity, sealed });
      this.#open.set(
        proxy,
        blsKey
          ? { row, scheme: "bls", key: blsKey }
          : { row, scheme: "ecdsa", secret: secret.slice() },
      );
      kept = true;
      return { delegator: pubkey, proxy, signature };
    } finally {
      secret.fill(0);
      if (!kept && blsKey) this.#options.bls.forget?.(blsKey);
    }
  }

  /**
   * Writes a new proxy's row. A failed write (database down, read-only or full) is a clear 503:
   * the delegation is not returned, nothing is kept, and the module may ask again.
   */
  #store(record: ProxyRecord): Promise<void> {
    const { proxy, scheme, consensus, module } = record;
    return this.#storeCall(
      {
        log: "commit-boost proxy not stored",
        answer: "did not record the new proxy: nothing was kept; retry once the store is writable",
      },
      { proxy, scheme, consensus, module },
      () => this.#options.store.put(record),
    );
  }

  /**
   * Reads the proxy store. Only the read is guarded: a proxy the store does not hold is still
   * unknown (404), decided by the caller from the answer.
   */
  #read<T>(context: Record<string, string>, read: () => Promise<T>): Promise<T> {
    return this.#storeCall(
      {
        log: "commit-boost proxy store not read",
        answer: "could not be read; retry once it is readable",
      },
      context,
      read,
    );
  }

  /**
   * A proxy store call that fails (database down, file unreadable or read-only, table gone) is
   * the store's fault, not the module's and not a bug: a clear 503 the module may retry, with the
   * cause (the store's error, which carries no secret) in the log.
   */
  async #storeCall<T>(
    failure: { log: string; answer: string },
    context: Record<string, string>,
    call: () => Promise<T>,
  ): Promise<T> {
    const backend = this.#options.store.backend;
    try {
      return await call();
    } catch (error) {
      this.#log.error(failure.log, { ...context, store: backend, error: String(error) });
      throw new SigilError(
        "proxy_store_unavailable",
        `the ${backend} proxy store ${failure.answer}`,
      );
    }
  }

  /** Deletes the proxies of a consensus key that left the signer for good. */
  async deleteProxiesOf(consensus: string): Promise<number> {
    const deleted = await this.#options.store.deleteByConsensus(consensus);
    for (const [proxy, opened] of this.#open) {
      // The cache holds only proxies of keys still stored; drop those whose row is gone.
      const stored = await this.#read({ consensus, proxy }, () => this.#options.store.get(proxy));
      if (stored !== undefined) continue;
      this.#forget(proxy, opened);
    }
    if (deleted > 0) this.#log.info("commit-boost proxies deleted", { consensus, deleted });
    return deleted;
  }

  /** Wipes the proxies opened in memory (seal, stop). */
  forgetOpened(): void {
    for (const [proxy, opened] of this.#open) this.#forget(proxy, opened);
  }

  #forget(proxy: string, opened: OpenProxy): void {
    this.#wipe(opened);
    this.#open.delete(proxy);
  }

  #wipe(opened: OpenProxy): void {
    if (opened.scheme === "bls") this.#options.bls.forget?.(opened.key);
    else opened.secret.fill(0);
  }
}
