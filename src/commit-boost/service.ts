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
import { openProxySecret, sealProxySecret } from "./proxy-seal";
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

export interface CommitBoostServiceOptions {
  readonly keys: KeyStore;
  readonly bls: BlsBackend;
  readonly store: ProxyStore;
  /** The key-encryption key of proxy secrets; undefined while the signer is sealed. */
  readonly proxyKek: () => Uint8Array | undefined;
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

/** A proxy opened for signing, kept while its stored row stays the same. */
type OpenProxy =
  | { sealed: string; scheme: "bls"; key: BlsSecretKey }
  | { sealed: string; scheme: "ecdsa"; secret: Uint8Array };

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
  readonly #open = new Map<string, OpenProxy>();
  readonly #log: Logger;

  constructor(options: CommitBoostServiceOptions) {
    this.#options = options;
    this.#domain = commitBoostDomain(options.chain.genesisForkVersion);
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

  #kek(): Uint8Array {
    const kek = this.#options.proxyKek();
    if (!kek) throw new SigilError("sealed", "proxy keys are sealed until the signer is unsealed");
    return kek;
  }

  async getPubkeys(module: string): Promise<ConsensusProxies[]> {
    const { pubkeys: allowed } = this.#module(module);
    const byConsensus = new Map<string, ConsensusProxies>();
    for (const pubkey of this.#options.keys.pubkeys().sort()) {
      if (allowed && !allowed.has(pubkey)) continue;
      byConsensus.set(pubkey, { consensus: pubkey, proxyBls: [], proxyEcdsa: [] });
    }
    for (const record of await this.#options.store.listByModule(module)) {
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
    const record = await this.#options.store.get(command.key);
    // Another module's proxy reads as unknown: a module only ever sees its own.
    if (!record || record.scheme !== scheme || record.module !== command.module)
      throw unknownKey(`${scheme} proxy`);
    this.#consensusKey(moduleConfig, record.consensus);
    const proxy = this.#opened(record);
    const root = this.#root(command, signingId);
    const signature =
      proxy.scheme === "bls"
        ? await this.#options.bls.sign(proxy.key, root)
        : ecdsaSign(proxy.secret, root);
    return this.#signed(command, signingId, signature);
  }

  #opened(record: ProxyRecord): OpenProxy {
    const cached = this.#open.get(record.proxy);
    if (cached && cached.sealed === record.sealed) return cached;
    const secret = openProxySecret(this.#kek(), record, record.sealed);
    try {
      let opened: OpenProxy;
      if (record.scheme === "bls") {
        const key = this.#options.bls.importSecretKey(secret);
        if (key.pubkey !== record.proxy) throw new Error("stored BLS proxy does not match its id");
        opened = { sealed: record.sealed, scheme: "bls", key };
      } else {
        if (toHex(ecdsaAddress(secret)) !== record.proxy)
          throw new Error("stored ECDSA proxy does not match its address");
        opened = { sealed: record.sealed, scheme: "ecdsa", secret: secret.slice() };
      }
      this.#open.set(record.proxy, opened);
      return opened;
    } finally {
      secret.fill(0);
    }
  }

  async generateProxy(module: string, pubkey: string, scheme: ProxyScheme): Promise<Delegation> {
    const entry = this.#consensusKey(this.#module(module), pubkey);
    const kek = this.#kek();
    const held = (await this.#options.store.listByModule(module)).filter(
      (record) => record.consensus === pubkey,
    ).length;
    // A soft bound: instances generating at the same moment may each add one past it.
    if (held >= this.#options.maxProxiesPerKey)
      throw new SigilError(
        "invalid_request",
        `this module already holds ${held} proxies for ${pubkey} (commit_boost.max_proxies_per_key)`,
      );
    const secret = scheme === "bls" ? newBlsSecret() : newEcdsaSecret();
    try {
      let proxyBytes: Uint8Array;
      let blsKey: BlsSecretKey | undefined;
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
      const sealed = sealProxySecret(kek, identity, secret);
      await this.#options.store.put({
        ...identity,
        sealed,
        delegationSignature: signature,
        createdAt: Date.now(),
      });
      this.#open.set(
        proxy,
        blsKey
          ? { sealed, scheme: "bls", key: blsKey }
          : { sealed, scheme: "ecdsa", secret: secret.slice() },
      );
      return { delegator: pubkey, proxy, signature };
    } finally {
      secret.fill(0);
    }
  }

  /** Deletes the proxies of a consensus key that left the signer for good. */
  async deleteProxiesOf(consensus: string): Promise<number> {
    const deleted = await this.#options.store.deleteByConsensus(consensus);
    for (const [proxy, opened] of this.#open) {
      // The cache holds only proxies of keys still stored; drop those whose row is gone.
      if ((await this.#options.store.get(proxy)) !== undefined) continue;
      if (opened.scheme === "bls") this.#options.bls.forget?.(opened.key);
      else opened.secret.fill(0);
      this.#open.delete(proxy);
    }
    if (deleted > 0) this.#log.info("commit-boost proxies deleted", { consensus, deleted });
    return deleted;
  }

  /** Wipes the proxies opened in memory (seal, stop). */
  forgetOpened(): void {
    for (const opened of this.#open.values()) {
      if (opened.scheme === "bls") this.#options.bls.forget?.(opened.key);
      else opened.secret.fill(0);
    }
    this.#open.clear();
  }
}
