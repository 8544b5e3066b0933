/** Route scopes. Every route declares exactly one; policies grant or deny them. */
export const SCOPES = [
  "sign",
  "public_keys",
  "list_keys",
  "import_keystores",
  "delete_keys",
  "signer_keys_generate",
  "signer_keys_write",
  "signer_keys_list",
  "signer_keys_delete",
  "signer_status",
] as const;

export type Scope = (typeof SCOPES)[number];

/** The legacy `auth_policies` file format predates `signer_status` and does not accept it. */
export const LEGACY_SCOPES: readonly Scope[] = SCOPES.filter((scope) => scope !== "signer_status");

export function isScope(name: string): name is Scope {
  return (SCOPES as readonly string[]).includes(name);
}
